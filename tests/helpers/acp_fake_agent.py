"""A fake ACP agent written with the agent-client-protocol SDK: each prompt sends the plan updates of a script.

    python acp_fake_agent.py [v1|v2] AGENT_LOG

It keeps every byte it reads from the editor in ``AGENT_LOG.in`` and every byte it writes in ``AGENT_LOG.out``
(the test compares them with what the editor wrote and read). ``v1`` sends the session's plan three times
(``sessionUpdate: plan``); ``v2`` sends two plans by ``planId`` (``plan_update`` of type ``items``) and a
Markdown plan for a third.
"""

from __future__ import annotations

import asyncio
import sys
from typing import Any

import acp
from acp.schema import (
    AgentPlanContentUpdate,
    Implementation,
    InitializeResponse,
    NewSessionResponse,
    PlanEntry,
    PromptResponse,
)

V1 = [
    [("Read the failing test", "pending"), ("Fix the parser", "pending")],
    [("Read the failing test", "in_progress"), ("Fix the parser", "pending")],
    [("Read the failing test", "completed"), ("Fix the parser", "in_progress"), ("Run the suite", "pending")],
]
V2 = [
    ("backend", [("Add the endpoint", "in_progress"), ("Write its test", "pending")]),
    ("docs", [("Describe the endpoint", "pending")]),
    ("backend", [("Add the endpoint", "completed"), ("Write its test", "completed")]),
    ("docs", [("Describe the endpoint", "completed")]),
]


def _entries(items: list[tuple[str, str]]) -> list[PlanEntry]:
    return [
        PlanEntry(content=text, priority="high" if n == 0 else "medium", status=status)
        for n, (text, status) in enumerate(items)
    ]  # type: ignore[arg-type]


class FakeAgent:
    """Answers initialize, session/new and session/prompt; a prompt sends the script's plan updates."""

    def __init__(self, mode: str) -> None:
        self.mode = mode
        self.conn: Any = None
        self.sessions = 0

    def on_connect(self, conn: Any) -> None:
        self.conn = conn

    async def initialize(self, protocol_version: int, **kwargs: Any) -> InitializeResponse:
        return InitializeResponse(
            protocol_version=protocol_version, agent_info=Implementation(name="fake-agent", version="1.0")
        )

    async def new_session(self, cwd: str, **kwargs: Any) -> NewSessionResponse:
        self.sessions += 1
        return NewSessionResponse(session_id=f"session-{self.sessions}")

    async def prompt(self, session_id: str, prompt: list[Any], **kwargs: Any) -> PromptResponse:
        if self.mode == "v1":
            for items in V1:
                await self.conn.session_update(session_id, acp.update_plan(_entries(items)))
        else:
            for plan_id, items in V2:
                update = {"type": "items", "planId": plan_id, "entries": _entries(items)}
                await self.conn.session_update(
                    session_id, AgentPlanContentUpdate(session_update="plan_update", plan=update)
                )
            markdown = {"type": "markdown", "planId": "notes", "content": "# Later\n\n- [ ] tidy the logs"}
            await self.conn.session_update(
                session_id, AgentPlanContentUpdate(session_update="plan_update", plan=markdown)
            )
        await self.conn.session_update(session_id, acp.update_agent_message_text("done"))
        return PromptResponse(stop_reason="end_turn")


class _Tee(asyncio.StreamWriter):
    """A stream writer that keeps a copy of every byte written."""

    def __init__(self, writer: asyncio.StreamWriter, log: Any) -> None:
        super().__init__(writer.transport, writer._protocol, writer._reader, writer._loop)  # type: ignore[attr-defined]
        self._log = log

    def write(self, data: bytes | bytearray | memoryview) -> None:
        self._log.write(bytes(data))
        self._log.flush()
        super().write(data)


async def _copy(source: asyncio.StreamReader, target: asyncio.StreamReader, log: Any) -> None:
    while chunk := await source.read(65536):
        log.write(chunk)
        log.flush()
        target.feed_data(chunk)
    target.feed_eof()


async def main(mode: str, log: str) -> None:
    from acp.stdio import stdio_streams

    reader, writer = await stdio_streams()
    with open(log + ".in", "wb") as seen, open(log + ".out", "wb") as written:
        fed = asyncio.StreamReader(limit=50 * 1024 * 1024)
        copying = asyncio.create_task(_copy(reader, fed, seen))
        await acp.run_agent(FakeAgent(mode), _Tee(writer, written), fed, use_unstable_protocol=True)
        await copying


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2]))
