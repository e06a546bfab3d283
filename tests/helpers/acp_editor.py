"""A fake editor written with the agent-client-protocol SDK: starts a command as its agent and runs one prompt.

    python acp_editor.py CWD EDITOR_LOG -- COMMAND [ARGS...]

Keeps every byte it writes to the agent in ``EDITOR_LOG.out`` and every byte it reads in ``EDITOR_LOG.in``,
and prints the plan updates it received, one JSON line each.
"""

from __future__ import annotations

import asyncio
import json
import sys
from typing import Any

import acp
from acp.schema import ClientCapabilities, Implementation


class Editor:
    """Receives session updates; keeps the plan ones."""

    def __init__(self) -> None:
        self.plans: list[dict[str, Any]] = []

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        if update.session_update in ("plan", "plan_update"):
            self.plans.append(update.model_dump(mode="json", by_alias=True, exclude_none=True))

    async def request_permission(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError


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


async def main(cwd: str, log: str, command: list[str]) -> int:
    process = await asyncio.create_subprocess_exec(
        *command, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE
    )
    assert process.stdin is not None and process.stdout is not None
    editor = Editor()
    with open(log + ".in", "wb") as seen, open(log + ".out", "wb") as written:
        fed = asyncio.StreamReader(limit=50 * 1024 * 1024)
        copying = asyncio.create_task(_copy(process.stdout, fed, seen))
        conn = acp.connect_to_agent(editor, _Tee(process.stdin, written), fed, use_unstable_protocol=True)
        await conn.initialize(
            protocol_version=acp.PROTOCOL_VERSION,
            client_capabilities=ClientCapabilities(),
            client_info=Implementation(name="fake-editor", version="1.0"),
        )
        session = await conn.new_session(cwd=cwd, mcp_servers=[])
        await conn.prompt(
            session_id=session.session_id,
            prompt=[acp.text_block("Fix the failing parser test and run the whole suite")],
        )
        process.stdin.close()
        code = await process.wait()
        await copying
        await conn.close()
    for plan in editor.plans:
        print(json.dumps(plan, sort_keys=True))
    return code


if __name__ == "__main__":
    split = sys.argv.index("--")
    sys.exit(asyncio.run(main(sys.argv[1], sys.argv[2], sys.argv[split + 1 :])))
