"""The plan server records each tool call in the W3C trace context its request's ``_meta`` carries (MCP's
convention for OpenTelemetry's propagation), over a real stdio session; an invalid one is refused."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

# The SDK comes with the test extra; without it these tests skip, except on CI, where they must run.
if os.environ.get("CI") != "true":
    pytest.importorskip("mcp")

import anyio
from mcp import Client, StdioServerParameters

from plantrail.ledger.stores.jsonl.log import LogReader
from tests.helpers.mcp_calls import refused, result

STEPS = [{"id": "reproduce", "title": "Reproduce the failure", "completion_evidence": "failing output"}]
CRITERIA = [{"id": "tests-pass", "description": "the test suite passes"}]
PARENT = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
CHILD = "00-4bf92f3577b34da6a3ce929d0e0e4736-b7ad6b7169203331-01"


def test_a_tool_call_is_recorded_in_its_requests_trace_context(tmp_path: Path) -> None:
    """plan_set and step_start with ``_meta.traceparent`` (and tracestate) record it on their events; a call
    without one records none; an invalid one is INVALID_TRACE_CONTEXT and the log keeps its bytes."""

    async def main() -> None:
        params = StdioServerParameters(
            command=sys.executable,
            args=["-m", "plantrail", "mcp", "--dir", str(tmp_path)],
            env={k: v for k, v in os.environ.items() if k not in ("TRACEPARENT", "TRACESTATE")},
            cwd=tmp_path,
        )
        async with Client(params) as client:
            plan = {"run": "t1", "goal": "g", "steps": STEPS, "criteria": CRITERIA}
            result(await client.call_tool("plan_set", plan, meta={"traceparent": PARENT, "tracestate": "k=v"}))
            start = {"run": "t1", "step": "reproduce"}
            result(await client.call_tool("step_start", start, meta={"traceparent": CHILD}))
            before = (tmp_path / "t1.jsonl").read_bytes()
            bad = await client.call_tool(
                "step_update",
                {"run": "t1", "step": "reproduce", "action": "complete", "evidence": ["out"]},
                meta={"traceparent": PARENT.upper()},
            )
            assert refused(bad, "INVALID_TRACE_CONTEXT")
            assert (tmp_path / "t1.jsonl").read_bytes() == before
            untraced = {"run": "t1", "step": "reproduce", "action": "complete", "evidence": ["out"]}
            result(await client.call_tool("step_update", untraced))

    anyio.run(main)
    with LogReader(tmp_path / "t1.jsonl") as reader:
        traces = {r.type: r.trace for r in reader.records()}
    assert traces["plan.created"] is not None and traces["plan.created"].as_json() == {
        "traceparent": PARENT,
        "tracestate": "k=v",
    }
    assert traces["step.started"] is not None and traces["step.started"].as_json() == {
        "traceparent": CHILD,
        "tracestate": None,
    }
    assert traces["step.completed"] is None
