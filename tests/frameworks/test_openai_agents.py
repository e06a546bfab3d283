"""An OpenAI Agents SDK agent keeps its plan through the plan server: `plantrail mcp` started over real stdio as
the agent's MCP server, the model one this test writes against the SDK's public `Model` interface (the SDK ships
no fake model), answering each turn with the script's next tool call given the server's last answer. Offline:
the SDK's tracing is off, so nothing is sent anywhere. The run verifies and `why` names the agent's cause."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

if os.environ.get("CI") != "true":
    pytest.importorskip("agents")

import anyio
from agents import Agent, Model, ModelResponse, RunConfig, Runner, Usage
from agents.mcp import MCPServerStdio
from openai.types.responses import ResponseFunctionToolCall, ResponseOutputMessage, ResponseOutputText

from plantrail.ledger.api import Ledger
from plantrail.ledger.verify import verify_log
from tests.frameworks.script import FINAL, OBSERVATION, RUN, TURNS, answer_of


class ScriptedModel(Model):
    """The script's next call for every request; the final words once the script is done."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, dict[str, Any]]] = []

    async def get_response(
        self,
        system_instructions: str | None,
        input: Any,
        model_settings: Any,
        tools: Any,
        output_schema: Any,
        handoffs: Any,
        tracing: Any,
        *,
        previous_response_id: str | None = None,
        conversation_id: str | None = None,
        prompt: Any = None,
    ) -> ModelResponse:
        names = {tool.name for tool in tools}
        assert {"plan_set", "step_start", "step_update", "run_finish"} <= names, names
        outputs = [item for item in input if isinstance(item, dict) and item.get("type") == "function_call_output"]
        turn = len(outputs)
        if turn == len(TURNS):
            text = ResponseOutputText(type="output_text", text=FINAL, annotations=[])
            said = ResponseOutputMessage(
                id="msg-final", type="message", role="assistant", status="completed", content=[text]
            )
            return ModelResponse(output=[said], usage=Usage(), response_id=None)
        last = answer_of(outputs[-1]["output"]) if outputs else {}
        tool, arguments = TURNS[turn](last, self.calls[-1][1] if self.calls else {})
        self.calls.append((tool, arguments))
        call = ResponseFunctionToolCall(
            type="function_call", id=f"fc-{turn}", call_id=f"call-{turn}", name=tool, arguments=json.dumps(arguments)
        )
        return ModelResponse(output=[call], usage=Usage(), response_id=None)

    def stream_response(self, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:
        raise NotImplementedError("the test runs the agent without streaming")


def test_an_openai_agents_sdk_agent_keeps_its_plan_through_the_plan_server(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("PLANTRAIL_HOME", "PLANTRAIL_STORE")}
    model = ScriptedModel()
    answers: list[Any] = []

    async def main() -> None:
        params = {"command": sys.executable, "args": ["-m", "plantrail", "mcp"], "env": env, "cwd": str(tmp_path)}
        async with MCPServerStdio(params=params, name="plantrail") as server:  # type: ignore[arg-type]
            agent = Agent(
                name="fixer", instructions="Keep your plan with the plan tools.", model=model, mcp_servers=[server]
            )
            offline = RunConfig(tracing_disabled=True)
            outcome = await Runner.run(agent, "Fix the login redirect.", max_turns=len(TURNS) + 2, run_config=offline)
            answers.append(outcome.final_output)

    anyio.run(main)

    assert answers == [FINAL]
    assert len(model.calls) == len(TURNS)
    log = tmp_path / ".plantrail" / "runs" / f"{RUN}.jsonl"
    assert verify_log(log).records > 0
    with Ledger.open(log) as ledger:
        state = ledger.state
    assert (state.version, state.outcome) == (2, "complete")
    assert {step: s.status for step, s in state.steps.items()} == {"reproduce": "completed", "fix": "completed"}
    failed_seq = model.calls[3][1]["causes"][0]
    why = subprocess.run(
        [sys.executable, "-m", "plantrail", "why", str(log), "--json"], capture_output=True, check=True, cwd=tmp_path
    )
    said = json.loads(why.stdout)
    assert [(c["seq"], c["type"]) for c in said["causes"]] == [(failed_seq, "step.failed")]
    assert said["observations"] == [OBSERVATION]
