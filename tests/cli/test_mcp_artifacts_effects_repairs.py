"""`plantrail mcp` with artifacts, side effects and repair edges: a completion's artifacts, side effects, and the
stale steps, cancel marks, effects in doubt and repairs an agent sees in plan_status and run_resume (the MCP SDK's
client, in process)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

if os.environ.get("CI") != "true":
    pytest.importorskip("mcp")

import anyio
from mcp import Client

from plantrail.cli.mcp_server import build_server
from plantrail.ledger.stores.jsonl.log import LogReader
from tests.helpers.mcp_calls import call as _call
from tests.helpers.mcp_calls import refused as _refused
from tests.helpers.mcp_calls import result as _result

A = "sha256:" + "a" * 64
B = "sha256:" + "b" * 64
CRITERIA = [{"id": "serving", "description": "the release serves"}]
STEPS = [
    {"id": "build", "title": "Build", "completion_evidence": "binary", "outputs": ["bin"], "on_failure": "fix"},
    {"id": "fix", "title": "Fix the build", "completion_evidence": "patch"},
    {
        "id": "deploy",
        "title": "Deploy",
        "depends_on": ["build"],
        "completion_evidence": "serving",
        "inputs": [{"step": "build", "output": "bin"}],
    },
]


async def _planned(client: Client) -> None:
    await _call(client, "plan_set", run="r", goal="ship", steps=STEPS, criteria=CRITERIA)


def test_a_completion_records_its_artifacts_and_a_missing_one_is_refused(tmp_path: Path) -> None:
    """step_update complete takes artifacts (NAME=DIGEST); a step that declares outputs is refused without
    them (ARTIFACT_MISSING) and the log is unchanged; status shows the artifact."""

    async def main() -> None:
        async with Client(build_server(tmp_path)) as client:
            await _planned(client)
            await _call(client, "step_start", run="r", step="build")
            before = (tmp_path / "r.jsonl").read_bytes()
            missing = await _call(client, "step_update", run="r", step="build", action="complete", evidence="ok")
            assert _refused(missing, "ARTIFACT_MISSING")
            assert (tmp_path / "r.jsonl").read_bytes() == before
            done = _result(
                await _call(
                    client,
                    "step_update",
                    run="r",
                    step="build",
                    action="complete",
                    evidence="ok",
                    artifacts=[f"bin={A}"],
                )
            )
            assert done["can_start"] == ["deploy"]
            status = _result(await _call(client, "plan_status", run="r"))
            build = next(s for s in status["steps"] if s["id"] == "build")
            assert build["artifacts"] == [{"name": "bin", "digest": A}]

    anyio.run(main)


def test_a_side_effect_is_requested_then_committed_and_in_doubt_between(tmp_path: Path) -> None:
    """step_effect records effect.requested then effect.committed; between them plan_status and run_resume
    list the effect in doubt, and a commit without a request is refused (EFFECT_NOT_REQUESTED)."""

    async def main() -> None:
        async with Client(build_server(tmp_path)) as client:
            await _planned(client)
            await _call(client, "step_start", run="r", step="build")
            await _call(
                client, "step_update", run="r", step="build", action="complete", evidence="ok", artifacts=[f"bin={A}"]
            )
            await _call(client, "step_start", run="r", step="deploy")
            unknown = await _call(client, "step_effect", run="r", step="deploy", key="k0", phase="committed")
            assert _refused(unknown, "EFFECT_NOT_REQUESTED")
            no_target = await _call(client, "step_effect", run="r", step="deploy", key="k1", phase="requested")
            assert _refused(no_target, "USAGE")
            asked = await _call(
                client,
                "step_effect",
                run="r",
                step="deploy",
                key="dep-1",
                phase="requested",
                target="prod",
                summary="1.3 serving",
            )
            assert _result(asked)["seq"] == 5
            status = _result(await _call(client, "plan_status", run="r"))
            assert [e["key"] for e in status["effects"]["in_doubt"]] == ["dep-1"]
            receipt = _result(await _call(client, "run_resume", run="r"))
            assert [e["key"] for e in receipt["effects"]["in_doubt"]] == ["dep-1"]
            assert "dep-1 on 'prod'" in receipt["next"]
            await _call(client, "step_effect", run="r", step="deploy", key="dep-1", phase="committed", summary="1.4")
            status = _result(await _call(client, "plan_status", run="r"))
            assert [e["key"] for e in status["effects"]["committed"]] == ["dep-1"]
            assert status["effects"]["committed"][0]["result"] == "1.4"

    anyio.run(main)
    with LogReader(tmp_path / "r.jsonl") as reader:
        types = [r.type for r in reader.records()]
    assert types[-2:] == ["effect.requested", "effect.committed"]


def test_status_shows_repairs_and_next_the_check_before_a_restart(tmp_path: Path) -> None:
    """After a failure, plan_status's next offers the repair step and run_resume lists it; an effect of an
    abandoned attempt appears in next's check_first once its step is ready again."""

    async def main() -> None:
        async with Client(build_server(tmp_path)) as client:
            await _planned(client)
            await _call(client, "step_start", run="r", step="build")
            await _call(
                client, "step_effect", run="r", step="build", key="push-1", phase="requested", target="registry"
            )
            await _call(client, "step_update", run="r", step="build", action="fail", reason="compile error")
            status = _result(await _call(client, "plan_status", run="r"))
            assert status["next"]["can_start"] == ["fix"]
            assert status["next"]["repairs"][0] == {
                "step": "fix",
                "repairs": ["build"],
                "status": "pending",
                "waiting": ["build"],
                "needed": True,
            }
            assert status["next"]["check_first"] == []
            receipt = _result(await _call(client, "run_resume", run="r"))
            assert receipt["repairs"][0]["waiting"] == ["build"]
            await _call(client, "step_start", run="r", step="fix")
            await _call(client, "step_update", run="r", step="fix", action="complete", evidence="patched")
            status = _result(await _call(client, "plan_status", run="r"))
            assert [c["step"] for c in status["next"]["check_first"]] == ["build"]
            assert "push-1 on 'registry'" in status["next"]["check_first"][0]["check"]

    anyio.run(main)


def test_stale_steps_and_cancel_marks_show_in_status_and_resume(tmp_path: Path) -> None:
    """A consumer in progress whose input changed is marked for cancellation in plan_status and run_resume;
    once abandoned it is stale there."""
    steps = [
        {"id": "scan", "title": "Scan", "completion_evidence": "report", "outputs": ["report"]},
        {
            "id": "apply",
            "title": "Apply",
            "depends_on": ["scan"],
            "completion_evidence": "applied",
            "inputs": [{"step": "scan", "output": "report"}, {"observation": "repo"}],
        },
    ]

    async def main() -> None:
        async with Client(build_server(tmp_path)) as client:
            await _call(client, "plan_set", run="s", goal="apply", steps=steps, criteria=CRITERIA)
            await _call(client, "step_start", run="s", step="scan")
            await _call(
                client, "step_update", run="s", step="scan", action="complete", evidence="ok", artifacts=[f"report={B}"]
            )
            await _call(client, "step_start", run="s", step="apply")

    anyio.run(main)
    from plantrail.ledger.api import Ledger

    with Ledger.open(tmp_path / "s.jsonl") as ledger:
        ledger.observe("repo", "moved")

    async def check() -> None:
        async with Client(build_server(tmp_path)) as client:
            status = _result(await _call(client, "plan_status", run="s"))
            assert status["cancel"] == ["apply"] and status["next"]["cancel"] == ["apply"]
            receipt = _result(await _call(client, "run_resume", run="s"))
            assert receipt["cancel"][0]["step"] == "apply"
            assert "abandon it" in receipt["next"]
            heartbeat_free = await _call(client, "step_update", run="s", step="apply", action="complete", evidence="x")
            assert _result(heartbeat_free)["orphan"] is not None

    anyio.run(check)
