"""A hook process started in a distributed trace (``$TRACEPARENT``, ``$TRACESTATE``) records the events it
appends in that trace context; an invalid one never fails the agent."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest

from plantrail.ledger.stores.jsonl.log import LogReader
from tests.helpers.hook_payloads import post_tool_use

PARENT = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"


def _hook(project: Path, payload: dict[str, Any], **env: str) -> subprocess.CompletedProcess[bytes]:
    """One `plantrail hook claude` process, its environment without a trace context but ``env``'s."""
    base = {k: v for k, v in os.environ.items() if k not in ("TRACEPARENT", "TRACESTATE", "PLANTRAIL_HOME")}
    command = [sys.executable, "-m", "plantrail.cli.main", "hook", "claude"]
    return subprocess.run(
        command, input=orjson.dumps(payload), capture_output=True, check=False, env=base | env, cwd=project
    )


def _todo(project: Path, call: str, status: str) -> dict[str, Any]:
    todos = [{"content": "Reproduce the crash", "status": status, "activeForm": "Reproducing"}]
    return post_tool_use("s1", project, "TodoWrite", call, {"todos": todos}, {"oldTodos": [], "newTodos": todos})


@pytest.mark.parametrize("tracestate", [None, "congo=t61rcWkgMzE"])
def test_the_hooks_events_carry_the_processs_trace_context(tmp_path: Path, tracestate: str | None) -> None:
    """Every event a hook process started with $TRACEPARENT (and $TRACESTATE) appends carries it; a hook process
    without one appends events without it."""
    env = {"TRACEPARENT": PARENT} | ({"TRACESTATE": tracestate} if tracestate else {})
    assert _hook(tmp_path, _todo(tmp_path, "toolu_1", "pending"), **env).returncode == 0
    log = tmp_path / ".plantrail" / "runs" / "s1.jsonl"
    with LogReader(log) as reader:
        seen = len(list(reader.records()))
    assert _hook(tmp_path, _todo(tmp_path, "toolu_2", "in_progress")).returncode == 0
    with LogReader(log) as reader:
        records = list(reader.records())
    traced = [r for r in records[1:seen]]
    assert traced and all(
        r.trace is not None and r.trace.as_json() == {"traceparent": PARENT, "tracestate": tracestate} for r in traced
    )
    assert records[seen:] and all(r.trace is None for r in records[seen:])


def test_an_invalid_trace_context_never_fails_the_hook(tmp_path: Path) -> None:
    """A hook process with an invalid $TRACEPARENT exits 0 and records its events without a trace context."""
    result = _hook(tmp_path, _todo(tmp_path, "toolu_1", "pending"), TRACEPARENT="00-not-a-trace-01")
    assert (result.returncode, result.stdout) == (0, b"")
    with LogReader(tmp_path / ".plantrail" / "runs" / "s1.jsonl") as reader:
        records = list(reader.records())
    assert len(records) > 1 and all(r.trace is None for r in records)
