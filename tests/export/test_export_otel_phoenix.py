"""`plantrail export otel` into Arize Phoenix, a receiver users run: the suite starts Phoenix's server, sends the
replans sample to its OTLP/HTTP endpoint, and reads the spans, their parents and attributes back through its REST
API (Phoenix keeps no links: those are read from the in-process receiver in test_export_otel.py)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from plantrail.cli.main import main

SAMPLE = Path(__file__).resolve().parents[2] / "samples" / "login-fix-replans.jsonl"
TRACE = "94402fc3530f2277efd6c2fa283787be"  # sha256("plantrail/login-fix-replans")[:16]

if os.environ.get("CI") != "true":
    pytest.importorskip("phoenix", reason="Arize Phoenix is not installed (pip install -e '.[test]')")


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def _get(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=10) as answer:
        return json.loads(answer.read())


@pytest.fixture(scope="module")
def phoenix(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A Phoenix server of its own (its working folder in tmp, free ports); its base URL once it answers."""
    folder = tmp_path_factory.mktemp("phoenix")
    port = _free_port()
    env = {
        **os.environ,
        "PHOENIX_WORKING_DIR": str(folder),
        "PHOENIX_PORT": str(port),
        "PHOENIX_GRPC_PORT": str(_free_port()),
        "PHOENIX_HOST": "127.0.0.1",
        "PHOENIX_TELEMETRY_ENABLED": "false",
    }
    with (folder / "server.log").open("wb") as log:
        server = subprocess.Popen(
            [sys.executable, "-m", "phoenix.server.main", "serve"], stdout=log, stderr=subprocess.STDOUT, env=env
        )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 180
        while True:
            assert server.poll() is None, (folder / "server.log").read_text()
            try:
                with urllib.request.urlopen(f"{base}/healthz", timeout=2) as answer:
                    if answer.status == 200:
                        break
            except (urllib.error.URLError, OSError):
                pass
            assert time.monotonic() < deadline, "Phoenix did not start:\n" + (folder / "server.log").read_text()
            time.sleep(0.5)
        yield base
    finally:
        server.terminate()
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


def _trace_spans(base: str, count: int) -> list[dict[str, Any]]:
    """The sample trace's spans as Phoenix's REST API gives them, once it holds ``count`` of them."""
    deadline = time.monotonic() + 60
    while True:
        spans = _get(f"{base}/v1/projects/default/spans?limit=1000")["data"]
        ours = [s for s in spans if s["context"]["trace_id"] == TRACE]
        if len(ours) >= count:
            return ours
        assert time.monotonic() < deadline, f"Phoenix holds {len(ours)} of the {count} spans"
        time.sleep(0.5)


def test_phoenix_reads_back_the_run_its_versions_and_its_attempts(phoenix: str) -> None:
    """Phoenix holds one trace of 17 spans: the run with no parent, three `plan` spans under it, each attempt
    under the version it started in, with their GenAI and plantrail attributes; a second export leaves the
    same 17 span ids."""
    assert main(["export", "otel", str(SAMPLE), "--endpoint", f"{phoenix}/v1/traces"]) == 0
    spans = _trace_spans(phoenix, 17)
    assert len(spans) == 17
    by_name: dict[str, list[dict[str, Any]]] = {}
    for span in spans:
        by_name.setdefault(span["name"], []).append(span)
    (root,) = by_name["invoke_agent"]
    assert root["parent_id"] is None and root["status_code"] == "OK"
    assert root["attributes"]["gen_ai.conversation.id"] == "login-fix-replans"
    assert root["attributes"]["plantrail.run.outcome"] == "complete"
    plans = {p["attributes"]["plantrail.plan.version"]: p for p in by_name["plan"]}
    assert sorted(plans) == [1, 2, 3]
    assert all(p["parent_id"] == root["context"]["span_id"] for p in plans.values())
    assert all(p["attributes"]["gen_ai.operation.name"] == "plan" for p in plans.values())
    assert plans[2]["attributes"]["plantrail.replan.reason"] == "failed_assumption"
    attempts = [s for s in spans if s["name"].startswith("step ")]
    assert len(attempts) == 12
    for attempt in attempts:
        version = attempt["attributes"]["plantrail.plan.version"]
        assert attempt["parent_id"] == plans[version]["context"]["span_id"]
        assert attempt["attributes"]["plantrail.step.id"] == attempt["name"].removeprefix("step ")
    fix = next(a for a in attempts if a["name"] == "step fix")
    assert fix["attributes"]["plantrail.attempt.outcome"] == "completed"
    assert [e["name"] for e in fix["events"]] == ["step.started", "step.completed"]
    (late,) = by_name["late check-config"]
    assert late["parent_id"] == plans[2]["context"]["span_id"]
    cut = next(a for a in attempts if a["name"] == "step check-config")
    assert late["attributes"]["plantrail.link.attempt"] == [cut["context"]["span_id"]]  # the link, as an attribute
    ids = sorted(s["context"]["span_id"] for s in spans)

    assert main(["export", "otel", str(SAMPLE), "--endpoint", f"{phoenix}/v1/traces"]) == 0
    time.sleep(2)  # Phoenix inserts in the background
    again = _trace_spans(phoenix, 17)
    assert sorted(s["context"]["span_id"] for s in again) == ids
