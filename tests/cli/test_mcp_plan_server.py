"""The plan server as an agent meets it: `plantrail mcp` started as a process and driven over real stdio by the MCP
SDK's own client (the schemas, the run fallback, every kind of update, approvals, the refusal texts)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

if os.environ.get("CI") != "true":
    pytest.importorskip("mcp")

import anyio
from mcp import Client, StdioServerParameters

from plantrail._version import __version__
from plantrail.cli.mcp_hints import GENERAL, HINTED, late_note, next_step
from plantrail.cli.mcp_server import TOOL_COMMANDS
from plantrail.ledger.api import Ledger
from plantrail.ledger.vocabulary.errors import error
from tests.helpers.mcp_calls import refused, result

STEPS = [
    {"id": "reproduce", "title": "Reproduce the failure", "completion_evidence": "failing output"},
    {"id": "fix", "title": "Fix it", "depends_on": ["reproduce"], "completion_evidence": "the diff"},
]
CRITERIA = [{"id": "tests-pass", "description": "the test suite passes"}]
PLAN = {"goal": "fix the login", "criteria": CRITERIA, "steps": STEPS}


@asynccontextmanager
async def served(project: Path, *, home: Path | None = None) -> AsyncIterator[Client]:
    """`plantrail mcp` started in ``project`` (its runs in ``project/.plantrail/runs``), over stdio."""
    env = {k: v for k, v in os.environ.items() if k not in ("PLANTRAIL_HOME", "PLANTRAIL_STORE")}
    if home is not None:
        env["PLANTRAIL_HOME"] = str(home)
    params = StdioServerParameters(command=sys.executable, args=["-m", "plantrail", "mcp"], env=env, cwd=project)
    async with Client(params) as client:
        yield client


def serve(project: Path, session: Callable[[Client], Any]) -> None:
    """Run ``session`` (an async function of the client) against a server started in ``project``."""

    async def main() -> None:
        async with served(project) as client:
            await session(client)

    anyio.run(main)


async def call(client: Client, tool: str, **arguments: Any) -> Any:
    return await client.call_tool(tool, arguments)


def text(outcome: Any) -> str:
    """A tool error's text, without the SDK's prefix."""
    assert outcome.is_error, outcome.structured_content
    said = " ".join(part.text for part in outcome.content)
    return said.split(": ", 1)[1] if said.startswith("Error executing tool") else said


def _log(project: Path, run: str) -> Path:
    return project / ".plantrail" / "runs" / f"{run}.jsonl"


# --------------------------------------------------------------------------- the definitions


def _minimal(schema: dict[str, Any]) -> Any:
    """A value holding exactly what ``schema`` requires (one item in a list that needs one)."""
    if schema.get("type") == "object":
        return {name: _minimal(schema["properties"][name]) for name in schema.get("required", [])}
    if schema.get("type") == "array":
        return [_minimal(schema["items"])] * schema.get("minItems", 0)
    if "pattern" in schema:
        return "s1"
    return "a text"


def test_the_definitions_are_small_versioned_and_ask_for_no_shell(tmp_path: Path) -> None:
    """The fourteen tools' definitions stay under 3,000 tokens (their JSON's characters / 4, as listed on the
    wire), the server names the package's version, and no description tells the model to run a command."""
    seen: dict[str, Any] = {}

    async def session(client: Client) -> None:
        listed = (await client.list_tools()).tools
        seen["wire"] = json.dumps([t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in listed])
        seen["tools"] = listed
        seen["info"] = client.server_info
        seen["instructions"] = client.instructions

    serve(tmp_path, session)
    assert len(seen["wire"]) / 4 < 3000, len(seen["wire"])
    assert len(seen["tools"]) == 14
    assert seen["info"].version == __version__ and __version__
    for said in [seen["instructions"], *(t.description for t in seen["tools"])]:
        assert "`plantrail" not in said and "plantrail schema" not in said and "--" not in said, said


def test_a_plan_with_exactly_the_required_fields_is_accepted(tmp_path: Path) -> None:
    """plan_set called with only what its schema marks required (built from the schema itself) creates the plan."""
    answers: list[Any] = []

    async def session(client: Client) -> None:
        [plan_set] = [t for t in (await client.list_tools()).tools if t.name == "plan_set"]
        arguments = _minimal(plan_set.input_schema)
        assert set(arguments) == {"goal", "criteria", "steps"}
        assert set(arguments["steps"][0]) == {"id", "title", "completion_evidence"}
        answers.append(result(await client.call_tool("plan_set", {**arguments, "run": "r1"})))

    serve(tmp_path, session)
    assert (answers[0]["run"], answers[0]["plan_version"], answers[0]["steps"]) == ("r1", 1, ["s1"])


# --------------------------------------------------------------------------- the run fallback


def test_a_call_without_a_run_uses_the_announced_run_and_says_so(tmp_path: Path) -> None:
    """With no run, or a run id that names no run, the server uses the run the session-start hook announced for
    its project; without an announcement a call without a run is refused, telling the model to pass one."""
    from plantrail.ledger.capture.announcement import Announcement, announce

    answers: list[Any] = []

    async def session(client: Client) -> None:
        answers.append(await call(client, "plan_status"))
        announce(tmp_path / ".plantrail", Announcement(run="sess-1", session="sess-1", agent="claude-code", at="now"))
        answers.append(result(await call(client, "plan_set", **PLAN)))
        answers.append(result(await call(client, "plan_status", run="no-such-run")))
        answers.append(result(await call(client, "step_start", run="sess-1", step="reproduce")))

    serve(tmp_path, session)
    assert text(answers[0]) == (
        "error[USAGE]: no run given, and no session announced one for this project. "
        "Next: pass run: any id you choose (letters, digits, ._:-), the same on every call."
    )
    assert [a["run"] for a in answers[1:]] == ["sess-1", "sess-1", "sess-1"]
    assert _log(tmp_path, "sess-1").is_file() and not _log(tmp_path, "no-such-run").exists()


# --------------------------------------------------------------------------- replans, updates, approvals


def test_a_replan_with_causes_gives_why_those_causes(tmp_path: Path) -> None:
    """A failed attempt's seq given as a replan's cause, with an observation: plan_why and `plantrail why` both
    quote that event and the observation."""
    seen: dict[str, Any] = {}

    async def session(client: Client) -> None:
        await call(client, "plan_set", run="r1", **PLAN)
        await call(client, "step_start", run="r1", step="reproduce")
        failed = result(await call(client, "step_update", run="r1", step="reproduce", action="fail", reason="no 401"))
        replan = {**PLAN, "reason": "failed_assumption", "why": "the service answers 500", "causes": [failed["seq"]]}
        result(await call(client, "plan_set", run="r1", observations=["500 in the server log"], **replan))
        seen["why"] = result(await call(client, "plan_why", run="r1"))
        seen["cause"] = failed["seq"]

    serve(tmp_path, session)
    why = seen["why"]
    assert [c["seq"] for c in why["causes"]] == [seen["cause"]]
    assert why["causes"][0]["type"] == "step.failed"
    assert why["observations"] == ["500 in the server log"]
    cli = subprocess.run(
        [sys.executable, "-m", "plantrail", "why", str(_log(tmp_path, "r1")), "--json"],
        capture_output=True,
        check=True,
    )
    assert [c["seq"] for c in json.loads(cli.stdout)["causes"]] == [seen["cause"]]


def test_extend_heartbeat_abandon_and_a_partial_finish(tmp_path: Path) -> None:
    """plan_extend adds a step in place; step_update renews the lease, abandons the attempt (the step is pending
    again, the attempt not charged), completes the next one; run_finish partial, which the plan's terms allow."""
    seen: dict[str, Any] = {}

    async def session(client: Client) -> None:
        terms = {"policy": {"allowed_partial": True}, "steps": {"reproduce": {"timeout_s": 60}}}
        await call(client, "plan_set", run="r1", terms=terms, **PLAN)
        docs = {"id": "docs", "title": "Note it", "completion_evidence": "changelog"}
        seen["extended"] = result(await call(client, "plan_extend", run="r1", steps=[docs]))
        await call(client, "step_start", run="r1", step="reproduce")
        alive = {"step": "reproduce", "action": "heartbeat", "lease_s": 120}
        seen["heartbeat"] = result(await call(client, "step_update", run="r1", **alive))
        gone = {"step": "reproduce", "action": "abandon", "reason": "the worker was killed"}
        seen["abandoned"] = result(await call(client, "step_update", run="r1", **gone))
        await call(client, "step_start", run="r1", step="reproduce")
        done = {"step": "reproduce", "action": "complete", "evidence": ["401 seen"]}
        seen["done"] = result(await call(client, "step_update", run="r1", **done))
        finish = {"outcome": "partial", "reason": "fix and docs left for tomorrow"}
        seen["finished"] = result(await call(client, "run_finish", run="r1", **finish))

    serve(tmp_path, session)
    assert (seen["extended"]["plan_version"], seen["extended"]["can_start"]) == (1, ["docs", "reproduce"])
    assert seen["abandoned"]["can_start"] == ["docs", "reproduce"]
    assert seen["finished"]["outcome"] == "partial"
    with Ledger.open(_log(tmp_path, "r1")) as ledger:
        state = ledger.state
    assert state.steps["reproduce"].attempt == 2 and state.steps["reproduce"].abandoned == (1,)
    assert [s.id for s in state.plan.steps] == ["reproduce", "fix", "docs"]  # type: ignore[union-attr]


def test_an_approval_is_requested_at_once_and_waited_for(tmp_path: Path) -> None:
    """approval_request answers at once with its id; approval_wait says pending when nobody decided within its
    timeout, granted when `plantrail approve` (another process) grants it while it waits, denied after a deny."""
    seen: dict[str, Any] = {}
    log = _log(tmp_path, "r1")

    async def session(client: Client) -> None:
        terms = {"steps": {"fix": {"requires_approval": True}}}
        await call(client, "plan_set", run="r1", terms=terms, **PLAN)
        ask = {"request": "fix-ok", "question": "May I patch auth?", "steps": ["fix"]}
        seen["asked"] = result(await call(client, "approval_request", run="r1", **ask))
        seen["pending"] = result(await call(client, "approval_wait", run="r1", request="fix-ok", timeout_s=0.2))
        approve = [sys.executable, "-m", "plantrail", "approve", str(log), "fix-ok", "--by", "ana", "--why", "ok"]
        async with anyio.create_task_group() as group:

            async def wait() -> None:
                seen["granted"] = result(await call(client, "approval_wait", run="r1", request="fix-ok"))

            group.start_soon(wait)
            await anyio.run_process(approve)
        ask = {"request": "more", "question": "And the schema?", "steps": ["fix"]}
        await call(client, "approval_request", run="r1", **ask)
        with Ledger.open(log) as ledger:
            ledger.deny("more", by="ana", why="not now")
        seen["denied"] = result(await call(client, "approval_wait", run="r1", request="more", timeout_s=5))

    serve(tmp_path, session)
    assert (seen["asked"]["request"], seen["asked"]["ok"]) == ("fix-ok", True)
    assert seen["pending"]["status"] == "pending"
    assert (seen["granted"]["status"], seen["granted"]["by"], seen["granted"]["why"]) == ("granted", "ana", "ok")
    assert (seen["denied"]["status"], seen["denied"]["why"]) == ("denied", "not now")


# --------------------------------------------------------------------------- what a refusal says


def test_each_refusal_says_what_to_do_next(tmp_path: Path) -> None:
    """The texts a model reads: which steps can start for a start that is not ready or over the focus limit,
    which field is missing, which version is current, and where a late result went; the log is unchanged by
    each refusal."""
    said: dict[str, Any] = {}

    async def session(client: Client) -> None:
        said["no criteria"] = await call(client, "plan_set", run="r1", goal="g", steps=STEPS)
        await call(client, "plan_set", run="r1", **PLAN)
        said["not ready"] = await call(client, "step_start", run="r1", step="fix")
        started = result(await call(client, "step_start", run="r1", step="reproduce"))
        said["unknown"] = await call(client, "step_start", run="r1", step="reproduce2")
        before = _log(tmp_path, "r1").read_bytes()
        said["blank"] = await call(client, "step_update", run="r1", step="reproduce", action="complete", evidence=" ")
        said["unchanged"] = _log(tmp_path, "r1").read_bytes() == before
        extra = {"id": "probe", "title": "Probe", "completion_evidence": "numbers"}
        replan = {**PLAN, "steps": [*STEPS, extra], "reason": "new_constraint", "why": "probe first"}
        await call(client, "plan_set", run="r1", max_in_progress=1, **replan)
        said["stale"] = await call(client, "step_start", run="r1", step="probe", plan_version=1)
        late = {"step": "reproduce", "action": "complete", "evidence": "401", "started_seq": started["started_seq"]}
        await call(client, "step_start", run="r1", step="probe")
        said["late"] = result(await call(client, "step_update", run="r1", **late))
        said["focus"] = await call(client, "step_start", run="r1", step="reproduce")

    serve(tmp_path, session)
    assert text(said["no criteria"]) == (
        "error[INVALID_ARGUMENT]: plan_set needs criteria. "
        "Next: pass criteria as a list of a mapping of a text (str) to anything."
    )
    assert text(said["not ready"]) == (
        "error[STEP_NOT_READY]: step fix waits for unfinished dependencies: reproduce. "
        "Next: fix waits for reproduce; steps that can start now: reproduce."
    )
    assert refused(said["unknown"], "STEP_NOT_FOUND")
    assert text(said["unknown"]).endswith("Next: the steps of version 1 are: reproduce, fix.")
    assert text(said["blank"]) == (
        "error[EVIDENCE_REQUIRED]: completing reproduce needs non-empty evidence. "
        "Next: pass evidence: what shows the step is done (not blank)."
    )
    assert said["unchanged"]
    assert text(said["stale"]) == (
        "error[STALE_PLAN_VERSION]: start probe was issued against plan version 1; version 2 superseded it. "
        "Next: the current plan version is 2: pass plan_version 2, or leave it out."
    )
    assert said["late"]["orphan"] == "SUPERSEDED_VERSION"
    assert said["late"]["next"] == (
        "this result went to the orphan path (SUPERSEDED_VERSION): it is kept but changed nothing in the current "
        "plan version 2. No step can start now; finish a step in progress first (probe) with step_update; "
        "step_adopt takes a late completion into the current version when its step is unchanged"
    )
    assert text(said["focus"]) == (
        "error[STEP_ALREADY_ACTIVE]: 1 step(s) already in progress (probe); the plan allows 1. "
        "Next: finish a step in progress (probe) with step_update before starting another, or raise "
        "max_in_progress with plan_set."
    )


def _tool_codes() -> set[str]:
    """Every code a tool can raise: the refusals of the commands the tools record, and the server's own."""
    from plantrail.ledger.rules.commands import declarations

    by_name = {d.command.__name__: d for d in declarations()}
    codes = {code for names in TOOL_COMMANDS.values() for name in names for code in by_name[name].refusals}
    server = {"INVALID_ARGUMENT", "INVALID_ID", "LOG_NOT_FOUND", "STALE_EXPECTED_SEQ", "IDEMPOTENCY_CONFLICT"}
    return codes | server | {"APPROVAL_NOT_FOUND", "BLANK_FIELD", "NOT_A_FILE", "FORMAT_TOO_NEW"}


def test_every_code_a_tool_can_raise_has_its_own_next_step(tmp_path: Path) -> None:
    """Each code the tools can raise has a text of its own, computed from the run, naming no command line flag,
    exit code or shell command."""
    with Ledger.set_plan(tmp_path / "r.jsonl", STEPS, run="r", goal="g", criteria=CRITERIA) as ledger:
        ledger.start("reproduce")
        state = ledger.state
    fields = {"step": "fix", "waiting": ["reproduce"], "active": ["reproduce"], "parameter": "goal", "path": "goal"}
    assert _tool_codes() <= HINTED, sorted(_tool_codes() - HINTED)
    for code in sorted(_tool_codes()):
        for run in (state, None):
            said = next_step(error(code, "refused", **fields), run)
            assert said and said != GENERAL, code
            assert "--" not in said and "exit" not in said and "plantrail" not in said, (code, said)


def test_a_late_note_is_only_for_a_late_result(tmp_path: Path) -> None:
    """An acknowledgement that is no orphan gets no note."""
    with Ledger.set_plan(tmp_path / "r.jsonl", STEPS, run="r", goal="g", criteria=CRITERIA) as ledger:
        state = ledger.state
    assert late_note({"orphan": None}, state) is None
