"""`plantrail mcp`: the plan tools through the MCP SDK's own client, in process and over a real stdio session."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

# The SDK comes with the test extra; without it these tests skip, except on CI, where they must run.
if os.environ.get("CI") != "true":
    pytest.importorskip("mcp")

import anyio
from click.testing import CliRunner
from mcp import Client

from plantrail.cli.mcp_server import build_server
from plantrail.ledger.api import Ledger
from plantrail.ledger.stores.jsonl.log import LogReader
from tests.helpers.mcp_calls import call as _call
from tests.helpers.mcp_calls import refused as _refused
from tests.helpers.mcp_calls import result as _result

STEPS = [
    {"id": "reproduce", "title": "Reproduce the failure", "completion_evidence": "failing output"},
    {"id": "fix", "title": "Fix it", "depends_on": ["reproduce"], "completion_evidence": "the diff"},
]
CRITERIA = [{"id": "tests-pass", "description": "the test suite passes"}]


def _lines(folder: Path, run: str) -> bytes:
    return (folder / f"{run}.jsonl").read_bytes()


def test_the_tools_are_few_small_and_marked(tmp_path: Path) -> None:
    """Fourteen tools, the read tools marked read-only, all definitions under 3,000 tokens (characters / 4)."""

    async def main() -> None:
        async with Client(build_server(tmp_path)) as client:
            listed = await client.list_tools()
            tools = {t.name: t for t in listed.tools}
            assert list(tools) == [
                "plan_set",
                "plan_extend",
                "step_start",
                "step_update",
                "approval_request",
                "approval_wait",
                "step_effect",
                "criterion_verdict",
                "run_finish",
                "step_adopt",
                "plan_status",
                "plan_why",
                "run_resume",
                "plan_brief",
            ]
            read_only = {n for n, t in tools.items() if t.annotations and t.annotations.read_only_hint}
            assert read_only == {"approval_wait", "plan_status", "plan_why", "run_resume", "plan_brief"}
            size = len(json.dumps([t.model_dump(mode="json", exclude_none=True) for t in listed.tools]))
            assert size / 4 < 3000, size
            templates = await client.list_resource_templates()
            assert {t.uri_template for t in templates.resource_templates} == {
                "plantrail://runs/{run}/plan",
                "plantrail://runs/{run}/receipt",
            }

    anyio.run(main)


def test_an_agent_keeps_its_plan_through_the_tools(tmp_path: Path) -> None:
    """Create, start, complete, replan, verdict, finish: every call lands in the log the CLI reads."""

    async def main() -> None:
        async with Client(build_server(tmp_path)) as client:
            created = _result(
                await _call(client, "plan_set", run="r1", goal="fix the login", steps=STEPS, criteria=CRITERIA)
            )
            assert created["can_start"] == ["reproduce"] and created["plan_version"] == 1
            started = _result(await _call(client, "step_start", run="r1", step="reproduce"))
            assert started["seq"] == 2 and len(started["hash"]) == 64
            done = _result(
                await _call(client, "step_update", run="r1", step="reproduce", action="complete", evidence="401 seen")
            )
            assert done["can_start"] == ["fix"]
            replanned = _result(
                await _call(
                    client,
                    "plan_set",
                    run="r1",
                    goal="fix the login",
                    criteria=CRITERIA,
                    steps=[*STEPS, {"id": "docs", "title": "Note it", "completion_evidence": "changelog"}],
                    reason="new_constraint",
                    why="the changelog must say so",
                )
            )
            assert replanned["plan_version"] == 2
            status = _result(await _call(client, "plan_status", run="r1"))
            assert {s["id"]: s["status"] for s in status["steps"]}["reproduce"] == "completed"
            assert status["next"]["can_start"] == ["docs", "fix"]  # the stable order: ready steps, ties by id
            why = _result(await _call(client, "plan_why", run="r1"))
            assert (why["version"], why["reason"]) == (2, "new_constraint")
            receipt = _result(await _call(client, "run_resume", run="r1"))
            assert receipt["exit_code"] == 0
            resource = await client.read_resource("plantrail://runs/r1/plan")
            assert json.loads(resource.contents[0].text)["plan_version"] == 2

    anyio.run(main)
    with LogReader(tmp_path / "r1.jsonl") as reader:
        types = [r.type for r in reader.records()]
    assert types == ["log.opened", "plan.created", "step.started", "step.completed", "plan.replanned"]


def test_a_refused_call_is_a_tool_error_with_its_code_and_changes_nothing(tmp_path: Path) -> None:
    """A start of a step that is not ready, empty evidence, a bad run id: tool errors with the stable code."""

    async def main() -> None:
        async with Client(build_server(tmp_path)) as client:
            first = {"run": "r1", "goal": "g", "steps": STEPS, "criteria": CRITERIA, "idempotency_key": "plan-1"}
            created = _result(await _call(client, "plan_set", **first))
            retried = _result(await _call(client, "plan_set", **first))  # a retried first call writes nothing
            assert (retried["seq"], retried["duplicate"]) == (created["seq"], True)
            before = _lines(tmp_path, "r1")
            replan = await _call(client, "plan_set", run="r1", goal="g", steps=STEPS, criteria=CRITERIA)
            assert _refused(replan, "USAGE")
            assert _refused(await _call(client, "step_start", run="r1", step="fix"), "STEP_NOT_READY")
            await _call(client, "step_start", run="r1", step="reproduce")
            middle = _lines(tmp_path, "r1")
            assert middle != before
            empty = await _call(client, "step_update", run="r1", step="reproduce", action="complete", evidence=[" "])
            assert _refused(empty, "EVIDENCE_REQUIRED")
            assert _lines(tmp_path, "r1") == middle
            escape = await _call(client, "plan_status", run="../outside")
            assert _refused(escape, "INVALID_ID")
            missing = await _call(client, "plan_status", run="nobody")
            assert _refused(missing, "LOG_NOT_FOUND")

    anyio.run(main)
    assert sorted(p.name for p in tmp_path.iterdir() if p.suffix == ".jsonl") == ["r1.jsonl"]


def test_two_concurrent_calls_with_the_same_expected_seq_let_exactly_one_win(tmp_path: Path) -> None:
    """Parallel agents: two calls expecting the same head at once; one lands, the other is STALE_EXPECTED_SEQ."""

    async def main() -> None:
        async with Client(build_server(tmp_path)) as client:
            steps = [{"id": s, "title": s, "completion_evidence": "done"} for s in ("a", "b")]
            plan = {"max_in_progress": 2, "steps": steps}
            created = _result(await _call(client, "plan_set", run="r1", goal="g", criteria=CRITERIA, **plan))
            head = created["seq"]
            outcomes: dict[str, Any] = {}

            async def start(step: str) -> None:
                outcomes[step] = await _call(client, "step_start", run="r1", step=step, expected_seq=head)

            async with anyio.create_task_group() as group:
                group.start_soon(start, "a")
                group.start_soon(start, "b")
            assert sorted(o.is_error for o in outcomes.values()) == [False, True]
            [loser] = [step for step, o in outcomes.items() if o.is_error]
            assert _refused(outcomes[loser], "STALE_EXPECTED_SEQ")
            first = _result(await _call(client, "step_start", run="r1", step=loser, idempotency_key="k"))
            retried = _result(await _call(client, "step_start", run="r1", step=loser, idempotency_key="k"))
            assert (retried["seq"], retried["duplicate"], first["duplicate"]) == (first["seq"], True, False)

    anyio.run(main)


def test_a_real_stdio_session(tmp_path: Path) -> None:
    """`plantrail mcp --dir DIR` as a subprocess: list the tools, create a plan, read the status."""
    from mcp import StdioServerParameters

    async def main() -> None:
        params = StdioServerParameters(
            command=sys.executable,
            args=["-m", "plantrail", "mcp", "--dir", str(tmp_path)],
            env=dict(os.environ),
            cwd=tmp_path,  # a project's announced run in the checkout must not redirect the test's calls
        )
        async with Client(params) as client:
            names = {t.name for t in (await client.list_tools()).tools}
            assert "plan_set" in names
            _result(await _call(client, "plan_set", run="s1", goal="g", steps=STEPS, criteria=CRITERIA))
            status = _result(await _call(client, "plan_status", run="s1"))
            assert status["run"] == "s1" and status["next"]["can_start"] == ["reproduce"]

    anyio.run(main)
    assert (tmp_path / "s1.jsonl").is_file()


def test_a_run_the_plan_server_recorded_names_its_agent_and_client(tmp_path: Path) -> None:
    """Over a real stdio session whose client names itself in its initialize, the plan server's plan records
    carry the source that names the agent ``mcp`` and that client; ``plantrail runs --agent mcp`` finds the
    run and says its agent, and the step records carry no source."""
    from mcp import StdioServerParameters
    from mcp.types import Implementation

    from plantrail.cli.main import plantrail as cli_group

    async def main() -> None:
        params = StdioServerParameters(
            command=sys.executable,
            args=["-m", "plantrail", "mcp", "--dir", str(tmp_path)],
            env=dict(os.environ),
            cwd=tmp_path,
        )
        async with Client(params, client_info=Implementation(name="claude-code", version="2.1.0")) as client:
            _result(await _call(client, "plan_set", run="s1", goal="g", steps=STEPS, criteria=CRITERIA))
            docs = {"id": "docs", "title": "Docs", "completion_evidence": "a line"}
            _result(await _call(client, "plan_extend", run="s1", steps=[docs]))
            _result(await _call(client, "step_start", run="s1", step="reproduce"))

    anyio.run(main)
    with Ledger.create(tmp_path / "direct.jsonl", {"goal": "g", "acceptance_criteria": CRITERIA, "steps": STEPS}):
        pass  # a plan given directly names no agent
    records = list(LogReader(tmp_path / "s1.jsonl").records())
    sources = {r.type: r.source for r in records}
    meta = {"agent": "mcp", "client": "claude-code", "client_version": "2.1.0"}
    for tool, kind in (("plan_set", "plan.created"), ("plan_extend", "plan.extended")):
        source = sources[kind]
        assert source is not None and (source.file, source.tool, source.meta) == ("plantrail mcp", tool, meta)
        assert source.timestamp is not None and source.timestamp <= records[-1].ts
    assert sources["step.started"] is None and sources["log.opened"] is None
    runner = CliRunner()
    found = runner.invoke(cli_group, ["runs", str(tmp_path), "--agent", "mcp", "--json"], catch_exceptions=False)
    assert found.exit_code == 0, found.output
    assert [(row["run"], row["agent"]) for row in json.loads(found.stdout)] == [("s1", "mcp")]
    every = runner.invoke(cli_group, ["runs", str(tmp_path), "--search", "g", "--json"], catch_exceptions=False)
    assert sorted((row["run"], row["agent"]) for row in json.loads(every.stdout)) == [("direct", None), ("s1", "mcp")]
    named = runner.invoke(cli_group, ["runs", str(tmp_path), "--agent", "claude-code", "--json"])
    assert json.loads(named.stdout) == []  # the client's name is kept beside the agent, never made the agent


def test_a_replan_keeps_the_criteria_checks_and_the_budgets_it_does_not_give(tmp_path: Path) -> None:
    """plan_set as a replan that restates the criteria by their id and description keeps their typed checks
    (terms it does not give are carried); with max_in_progress it changes the focus limit and keeps the rest of
    the policy (the budgets)."""
    from plantrail.ledger.api import Ledger

    checked = [
        {
            "id": "tests-pass",
            "description": "the test suite passes",
            "checks": [{"id": "t", "kind": "command_exit", "command": "pytest -q", "expected_exit_code": 0}],
        }
    ]
    path = tmp_path / "r1.jsonl"
    with Ledger.create(
        path, {"goal": "g", "steps": STEPS, "acceptance_criteria": checked, "policy": {"max_turns": 40}}, run="r1"
    ) as ledger:
        first = ledger.state.plan
    assert first is not None

    async def main() -> None:
        async with Client(build_server(tmp_path)) as client:
            steps = [*STEPS, {"id": "review", "title": "Review", "depends_on": ["fix"], "completion_evidence": "ok"}]
            replan = {"run": "r1", "goal": "g", "steps": steps, "reason": "new_constraint", "why": "a review is needed"}
            replan["criteria"] = [{"id": "tests-pass", "description": "the test suite passes"}]
            _result(await _call(client, "plan_set", **replan, max_in_progress=2))

    anyio.run(main)
    with Ledger.open(path) as ledger:
        plan = ledger.state.plan
    assert plan is not None and [s.id for s in plan.steps] == ["reproduce", "fix", "review"]
    assert plan.acceptance_criteria == first.acceptance_criteria
    assert plan.acceptance_criteria[0].checks
    assert (plan.policy.max_in_progress, plan.policy.max_turns) == (2, 40)


def test_a_wrong_type_is_refused_with_its_code_never_coerced(tmp_path: Path) -> None:
    """`passed: "yes"`, a number for a step or a run, a text for a number: INVALID_ARGUMENT naming the argument,
    and nothing is written (the SDK's lax validation used to take "yes" for true)."""

    async def main() -> None:
        async with Client(build_server(tmp_path)) as client:
            _result(await _call(client, "plan_set", run="r1", goal="g", steps=STEPS, criteria=CRITERIA))
            before = _lines(tmp_path, "r1")
            for tool, arguments, name in [
                ("criterion_verdict", {"criterion": "tests-pass", "passed": "yes", "evidence": "green"}, "passed"),
                ("criterion_verdict", {"criterion": "tests-pass", "passed": 1, "evidence": "green"}, "passed"),
                ("step_start", {"step": 3}, "step"),
                ("step_start", {"step": "reproduce", "expected_seq": "1"}, "expected_seq"),
                ("step_update", {"step": "reproduce", "action": "complete", "attempt": 1.0}, "attempt"),
                ("plan_set", {"goal": "g", "criteria": CRITERIA, "steps": "reproduce"}, "steps"),
            ]:
                refused = await _call(client, tool, run="r1", **arguments)
                assert _refused(refused, "INVALID_ARGUMENT"), (tool, arguments)
                assert f"argument {name} of {tool}" in refused.content[0].text
            assert _refused(await _call(client, "step_start", run=5, step="reproduce"), "INVALID_ARGUMENT")
            assert _lines(tmp_path, "r1") == before

    anyio.run(main)


def test_a_first_plan_under_an_invalid_run_id_is_refused_with_its_code(tmp_path: Path) -> None:
    """plan_set for a run id that is no id (a path out of the folder, a space, a control character) answers
    INVALID_ID as a tool error (it answered a bare "Error executing tool"), and creates nothing."""

    async def main() -> None:
        async with Client(build_server(tmp_path)) as client:
            for run in ("../outside", "bad id", "tab\there", ""):
                answer = await _call(client, "plan_set", run=run, goal="g", steps=STEPS, criteria=CRITERIA)
                assert _refused(answer, "INVALID_ID"), run

    anyio.run(main)
    assert not list(tmp_path.rglob("*.jsonl")) and not (tmp_path.parent / "outside.jsonl").exists()


def test_a_worker_names_its_attempt_and_a_late_completion_is_adopted(tmp_path: Path) -> None:
    """step_start answers the started_seq a step_update names its attempt by; after a replan cut that attempt
    off, its completion lands on the orphan path, and step_adopt takes it into the new version."""

    async def main() -> None:
        async with Client(build_server(tmp_path)) as client:
            _result(await _call(client, "plan_set", run="r1", goal="fix the login", steps=STEPS, criteria=CRITERIA))
            started = _result(await _call(client, "step_start", run="r1", step="reproduce"))
            assert (started["attempt"], started["started_seq"]) == (1, started["seq"])
            _result(
                await _call(
                    client,
                    "plan_set",
                    run="r1",
                    goal="fix the login",
                    steps=STEPS,
                    criteria=[{"id": "tests-pass", "description": "the whole suite passes"}],
                    reason="new_constraint",
                    why="the whole suite",
                )
            )
            late = _result(
                await _call(
                    client,
                    "step_update",
                    run="r1",
                    step="reproduce",
                    action="complete",
                    evidence="401 seen",
                    started_seq=started["started_seq"],
                )
            )
            assert late["orphan"] == "SUPERSEDED_VERSION"
            adopted = _result(await _call(client, "step_adopt", run="r1", orphan_seq=late["seq"]))
            assert adopted["can_start"] == ["fix"]
            again = await _call(client, "step_adopt", run="r1", orphan_seq=late["seq"])
            assert _refused(again, "ADOPT_REFUSED")
            unknown = await _call(
                client, "step_update", run="r1", step="fix", action="complete", evidence="x", started_seq=2
            )
            assert _refused(unknown, "UNKNOWN_ATTEMPT")

    anyio.run(main)
    with LogReader(tmp_path / "r1.jsonl") as reader:
        types = [r.type for r in reader.records()]
    assert types[-2:] == ["step.completed", "step.adopted"]


def test_the_plan_servers_source_keeps_what_the_client_said_of_itself_within_bounds() -> None:
    """The client's name and version are kept with their whitespace made single spaces and cut at NAME_LIMIT;
    a client that gave none (or no request at all) leaves them out, and the agent is mcp either way."""
    from types import SimpleNamespace

    from plantrail.cli.mcp_origin import NAME_LIMIT, called_by, client_of, plan_source

    def context(info: object) -> object:
        return SimpleNamespace(request_context=SimpleNamespace(session=SimpleNamespace(client_params=info)))

    long = "x" * (NAME_LIMIT + 5)
    said = context(SimpleNamespace(client_info=SimpleNamespace(name="  Claude\n  Code ", version=long)))
    assert client_of(said) == ("Claude Code", "x" * (NAME_LIMIT - 1) + "…")
    for silent in (context(None), context(SimpleNamespace(client_info=SimpleNamespace(name=" ", version=7))), None):
        assert client_of(silent) == (None, None)
    with called_by(client_of(said)):
        source = plan_source("plan_set", "2026-01-01T00:00:00.000000Z")
    assert source.meta == {"agent": "mcp", "client": "Claude Code", "client_version": "x" * (NAME_LIMIT - 1) + "…"}
    assert (source.file, source.tool, source.timestamp) == ("plantrail mcp", "plan_set", "2026-01-01T00:00:00.000000Z")
    assert plan_source("plan_extend", "t").meta == {"agent": "mcp"}  # outside a call: no client
