"""A Pydantic AI agent keeps its plan through the plan server: `plantrail mcp` started over real stdio as the
agent's MCP toolset, the model a scripted `FunctionModel` (offline) whose every call depends on the server's
previous answer. The run it leaves verifies, and `why` names the cause the agent gave."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

if os.environ.get("CI") != "true":
    pytest.importorskip("pydantic_ai")

from fastmcp.client.transports import StdioTransport
from pydantic_ai import Agent
from pydantic_ai.mcp import MCPToolset
from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from plantrail.ledger.api import Ledger
from plantrail.ledger.verify import verify_log
from tests.frameworks.script import FINAL, OBSERVATION, RUN, TURNS, answer_of


def _server_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k not in ("PLANTRAIL_HOME", "PLANTRAIL_STORE")}


def _scripted(calls: list[tuple[str, dict[str, Any]]]) -> FunctionModel:
    """A model that answers each request with the script's next tool call, given the last tool's answer."""

    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        names = {tool.name for tool in info.function_tools}
        assert {"plan_set", "step_start", "step_update", "run_finish"} <= names, names
        returns = [
            part
            for message in messages
            if isinstance(message, ModelRequest)
            for part in message.parts
            if isinstance(part, ToolReturnPart)
        ]
        turn = len(returns)
        if turn == len(TURNS):
            return ModelResponse(parts=[TextPart(FINAL)])
        last = answer_of(returns[-1].content) if returns else {}
        tool, arguments = TURNS[turn](last, calls[-1][1] if calls else {})
        calls.append((tool, arguments))
        return ModelResponse(parts=[ToolCallPart(tool, arguments, tool_call_id=f"call-{turn}")])

    return FunctionModel(respond)


def test_a_pydantic_ai_agent_keeps_its_plan_through_the_plan_server(tmp_path: Path) -> None:
    transport = StdioTransport(
        command=sys.executable, args=["-m", "plantrail", "mcp"], env=_server_env(), cwd=str(tmp_path)
    )
    calls: list[tuple[str, dict[str, Any]]] = []
    agent = Agent(_scripted(calls), toolsets=[MCPToolset(transport, tool_error_behavior="error")])

    outcome = agent.run_sync("Fix the login redirect, keeping your plan with the plan tools.")

    assert outcome.output == FINAL
    assert len(calls) == len(TURNS)
    log = tmp_path / ".plantrail" / "runs" / f"{RUN}.jsonl"
    report = verify_log(log)
    assert report.records > 0
    with Ledger.open(log) as ledger:
        state = ledger.state
    assert (state.version, state.outcome) == (2, "complete")
    assert {step: s.status for step, s in state.steps.items()} == {"reproduce": "completed", "fix": "completed"}
    failed_seq = calls[3][1]["causes"][0]
    why = subprocess.run(
        [sys.executable, "-m", "plantrail", "why", str(log), "--json"], capture_output=True, check=True, cwd=tmp_path
    )
    said = json.loads(why.stdout)
    assert [(c["seq"], c["type"]) for c in said["causes"]] == [(failed_seq, "step.failed")]
    assert said["observations"] == [OBSERVATION]
