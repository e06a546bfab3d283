"""One acknowledgement document for every front door: each command the MCP server's tools record, run the same
way through the CLI (``--json``, in process), the library (a Ledger method and :meth:`Ledger.acknowledgement`)
and the MCP server (the SDK's in-process client), each on a fresh log with the same frozen clock and header
nonce, answers the same document, and leaves the same bytes in the log.

But for one thing, which the comparison leaves aside: the plan server names itself on the plan records it
writes (a ``source`` naming the agent ``mcp`` and its client, :mod:`plantrail.cli.mcp_origin`), as the hooks
name theirs, so that a run says which door recorded it. The MCP log is compared with that source taken off and
its chain computed again, and its acknowledgements' hashes are the recomputed ones: every other byte, and every
other member of every answer, is the same.
"""

from __future__ import annotations

import os
import secrets
from datetime import UTC, datetime, tzinfo
from pathlib import Path
from typing import Any, NamedTuple

import msgspec
import orjson
import pytest

# The SDK comes with the test extra; without it these tests skip, except on CI, where they must run.
if os.environ.get("CI") != "true":
    pytest.importorskip("mcp")

import anyio
from click.testing import CliRunner
from mcp import Client
from mcp.types import Implementation

import plantrail.ledger.stores.jsonl.log
import plantrail.ledger.vocabulary.clock
from plantrail.cli.main import plantrail as cli_group
from plantrail.cli.mcp_origin import called_by, plan_source
from plantrail.cli.mcp_server import build_server
from plantrail.ledger.acknowledgement import acknowledgement
from plantrail.ledger.api import Ledger
from plantrail.ledger.rules.decide import Start
from plantrail.ledger.vocabulary.codec import decode, encode_checked, log_format
from plantrail.ledger.vocabulary.errors import PlantrailError
from plantrail.ledger.vocabulary.events import LogOpened, Source
from tests.helpers.mcp_calls import call as call_tool
from tests.helpers.mcp_calls import refused, result

RUN = "r1"
GOAL = "fix the login"
CRITERIA = [
    {"id": "reproduced", "description": "the failure is reproduced"},
    {"id": "tests-pass", "description": "the test suite passes"},
]
#: The first step covers a criterion, so the plan declares coverage and the other criterion is a warning.
STEPS = [
    {"id": "reproduce", "title": "Reproduce", "completion_evidence": "failing output", "covers": ["reproduced"]},
    {
        "id": "fix",
        "title": "Fix it",
        "depends_on": ["reproduce"],
        "completion_evidence": "the diff",
        "outputs": ["patch"],
        "writes": ["src/**"],
    },
]
MORE_STEPS = [*STEPS, {"id": "docs", "title": "Note it", "depends_on": ["fix"], "completion_evidence": "a line"}]
PATCH = "patch=sha256:" + "ab" * 32 + "@out/fix.diff"


class Call(NamedTuple):
    """One MCP tool call; the CLI and the library run the same command."""

    tool: str
    args: dict[str, Any]


def plan_set(**args: Any) -> Call:
    """A plan_set call on the run."""
    return Call("plan_set", {"run": RUN, **args})


def tool(name: str, **args: Any) -> Call:
    """A call of tool ``name`` on the run."""
    return Call(name, {"run": RUN, **args})


CREATE = plan_set(goal=GOAL, steps=STEPS, criteria=CRITERIA)
START = tool("step_start", step="reproduce")
DONE = tool("step_update", step="reproduce", action="complete", evidence=["401 seen", "in the log"])
START_FIX = tool("step_start", step="fix")
REQUESTED = tool("step_effect", step="reproduce", key="deploy-1", phase="requested", target="prod", summary="v1")
COMMITTED = tool("step_effect", step="reproduce", key="deploy-1", phase="committed", summary="v2", idempotency_key="c")
REPLAN = plan_set(
    goal=GOAL, steps=MORE_STEPS, criteria=CRITERIA, reason="new_constraint", why="the changelog must say so"
)

#: Each case: the calls that lead up to it, then the call under test (every call's answer is compared).
CASES: dict[str, list[Call]] = {
    "plan_set creates": [CREATE],
    "plan_set replans": [CREATE, START, DONE, REPLAN],
    "plan_set replans with its criteria and a focus limit": [
        CREATE,
        plan_set(
            goal=GOAL, steps=MORE_STEPS, criteria=CRITERIA[:1], max_in_progress=2, reason="user_request", why="one goal"
        ),
    ],
    "step_start": [CREATE, tool("step_start", step="reproduce", expected_seq=1)],
    "step_start retried (duplicate)": [
        CREATE,
        tool("step_start", step="reproduce", idempotency_key="s1"),
        tool("step_start", step="reproduce", idempotency_key="s1"),
    ],
    "step_update complete": [CREATE, START, DONE],
    "step_update complete with an artifact": [
        CREATE,
        START,
        DONE,
        START_FIX,
        tool("step_update", step="fix", action="complete", evidence="patched", artifacts=[PATCH], attempt=1),
    ],
    "step_update complete, late (orphan)": [
        CREATE,
        START,
        DONE,
        START_FIX,
        REPLAN,
        tool("step_update", step="fix", action="complete", evidence="late", artifacts=[PATCH], plan_version=1),
    ],
    "step_update fail": [CREATE, START, tool("step_update", step="reproduce", action="fail", reason="no 401")],
    "step_update fail, evidence as the reason": [
        CREATE,
        START,
        tool("step_update", step="reproduce", action="fail", evidence="pytest exited 1"),
    ],
    "step_update block": [
        CREATE,
        START,
        tool("step_update", step="reproduce", action="block", evidence=["needs access", "to the staging db"]),
    ],
    "step_effect requested": [CREATE, START, REQUESTED],
    "step_effect committed": [CREATE, START, REQUESTED, COMMITTED],
    "step_effect retried (duplicate)": [CREATE, START, REQUESTED, COMMITTED, COMMITTED],
    "criterion_verdict": [
        CREATE,
        tool("criterion_verdict", criterion="reproduced", passed=True, evidence="401 in the log"),
        tool("criterion_verdict", criterion="tests-pass", passed=False, evidence="2 failed", idempotency_key="v"),
    ],
    "run_finish": [
        CREATE,
        tool("run_finish", outcome="paused", reason="lunch"),
        tool("run_finish", outcome="cancelled", reason="not needed"),
    ],
}


# --------------------------------------------------------------------------- the frozen clock and nonce


class _Frozen(datetime):
    """``datetime`` whose ``now`` is always the same instant: every record's ``ts`` is the same."""

    @classmethod
    def now(cls, tz: tzinfo | None = None) -> _Frozen:
        return cls(2026, 1, 1, 12, 0, 0, 123456, tzinfo=UTC)


class _FixedNonce:
    """``secrets`` for the log store: the header's nonce (16 bytes) is all zeros; other tokens stay random."""

    @staticmethod
    def token_hex(nbytes: int = 32) -> str:
        return "00" * nbytes if nbytes == 16 else secrets.token_hex(nbytes)


@pytest.fixture(autouse=True)
def frozen(monkeypatch: pytest.MonkeyPatch) -> None:
    """The one clock plantrail reads (:func:`ledger.clock.utc_now`) frozen, and the header's nonce fixed, in
    process: the CLI and the MCP server have no clock option, so all three front doors read these."""
    monkeypatch.setattr(plantrail.ledger.vocabulary.clock, "datetime", _Frozen)
    monkeypatch.setattr(plantrail.ledger.stores.jsonl.log, "secrets", _FixedNonce)


# --------------------------------------------------------------------------- the three front doors


def _texts(args: dict[str, Any]) -> str:
    """A fail or block's text as the MCP tool makes it: the reason, else the evidence (a list joined)."""
    evidence = args.get("evidence")
    return args.get("reason") or (evidence if isinstance(evidence, str) else "; ".join(evidence or []))


def _evidence(args: dict[str, Any]) -> list[str]:
    """A completion's evidence items (one string is one item)."""
    evidence = args.get("evidence") or []
    return [evidence] if isinstance(evidence, str) else list(evidence)


def _draft(args: dict[str, Any]) -> dict[str, Any]:
    """The whole draft a plan_set call amounts to (a replan keeps the goal and the criteria)."""
    draft = {
        "goal": args.get("goal", GOAL),
        "steps": args["steps"],
        "acceptance_criteria": args.get("criteria", CRITERIA),
    }
    if "max_in_progress" in args:
        draft["policy"] = {"max_in_progress": args["max_in_progress"]}
    return draft


_OPTIONS = {
    "idempotency_key": "--idempotency-key",
    "expected_seq": "--expected-seq",
    "plan_version": "--plan-version",
    "attempt": "--attempt",
}


def _cli_args(log: Path, call: Call) -> list[str]:
    """The CLI command line of ``call``."""
    args = call.args
    options = [str(item) for name, flag in _OPTIONS.items() if name in args for item in (flag, args[name])]
    match call.tool, args.get("action") or args.get("phase"):
        case "plan_set", _:
            draft = log.with_suffix(".draft.json")
            draft.write_bytes(orjson.dumps(_draft(args)))
            replan = ["--reason", args["reason"], "--why", args["why"]] if "reason" in args else []
            line = ["replan" if replan else "create", str(log), "--plan", str(draft), "--actor", "agent", *replan]
        case "step_start", _:
            line = ["start", str(log), args["step"]]
        case "step_update", "complete":
            line = ["complete", str(log), args["step"], *(f"--evidence={e}" for e in _evidence(args))]
            line += [f"--artifact={a}" for a in args.get("artifacts", [])]
        case "step_update", "fail":
            line = ["fail", str(log), args["step"], "--error", _texts(args)]
        case "step_update", "block":
            line = ["block", str(log), args["step"], "--reason", _texts(args)]
        case "step_effect", "requested":
            line = ["effect", str(log), args["step"], "--requested", args["key"], "--target", args["target"]]
            line += ["--before", args["summary"], "--actor", "agent"]
        case "step_effect", "committed":
            line = ["effect", str(log), args["step"], "--committed", args["key"], "--result", args["summary"]]
            line += ["--actor", "agent"]
        case "criterion_verdict", _:
            verdict = "--passed" if args["passed"] else "--failed"
            line = ["criterion", str(log), args["criterion"], verdict, "--evidence", args["evidence"]]
        case "run_finish", _:
            line = ["finish", str(log), "--outcome", args["outcome"], "--reason", args["reason"]]
        case _:
            raise AssertionError(f"no CLI command for {call}")
    return line + options


def through_the_cli(folder: Path, calls: list[Call]) -> list[Any]:
    """Each call as a CLI command with --json, in process; what each printed on stdout, parsed."""
    runner = CliRunner()
    log = folder / f"{RUN}.jsonl"
    answers = []
    for call in calls:
        args = _cli_args(log, call)
        outcome = runner.invoke(cli_group, [*args, "--json"], catch_exceptions=False)
        assert outcome.exit_code == 0, (args, outcome.output)
        answers.append(orjson.loads(outcome.stdout))
    return answers


def _record(ledger: Ledger, call: Call) -> Any:
    """Record ``call`` through the Ledger method its tool uses; its ack."""
    args = call.args
    keys = {name: args[name] for name in ("idempotency_key", "expected_seq", "plan_version") if name in args}
    attempt = {"attempt": args["attempt"]} if "attempt" in args else {}
    match call.tool, args.get("action") or args.get("phase"):
        case "plan_set", _:
            return ledger.replan(args["reason"], args["why"], plan=_draft(args), actor="agent", **keys)
        case "step_start", _:
            return ledger.start(args["step"], **keys)
        case "step_update", "complete":
            evidence, artifacts = _evidence(args), args.get("artifacts", ())
            return ledger.complete(args["step"], evidence, artifacts=artifacts, **keys, **attempt)
        case "step_update", "fail":
            return ledger.fail(args["step"], _texts(args), **keys, **attempt)
        case "step_update", "block":
            return ledger.block(args["step"], _texts(args), **keys, **attempt)
        case "step_effect", "requested":
            step, key, target = args["step"], args["key"], args["target"]
            return ledger.request_effect(step, key, target, before=args["summary"], actor="agent", **keys, **attempt)
        case "step_effect", "committed":
            step, key = args["step"], args["key"]
            return ledger.commit_effect(step, key, result=args["summary"], actor="agent", **keys, **attempt)
        case "criterion_verdict", _:
            return ledger.verify_criterion(args["criterion"], args["passed"], args["evidence"], **keys)
        case "run_finish", _:
            return ledger.finish(args["outcome"], args["reason"], **keys)
    raise AssertionError(f"no Ledger method for {call}")


def through_the_library(folder: Path, calls: list[Call]) -> list[Any]:
    """Each call as a Ledger method on the log, opened for that call as the other doors open it; the
    acknowledgement the ledger gives for its ack."""
    log = folder / f"{RUN}.jsonl"
    answers = []
    for call in calls:
        if call.tool == "plan_set" and "reason" not in call.args:
            with Ledger.create(log, _draft(call.args), actor="agent") as ledger:
                answers.append(ledger.acknowledgement())
            continue
        with Ledger.open(log) as ledger:
            ack = _record(ledger, call)
            answers.append(ledger.acknowledgement(ack))
    return answers


def through_mcp(folder: Path, calls: list[Call]) -> list[Any]:
    """Each call to the MCP server's tool, through the SDK's in-process client; each structured result."""
    answers: list[Any] = []

    async def main() -> None:
        async with Client(build_server(folder), client_info=CLIENT) as client:
            for each in calls:
                answers.append(result(await call_tool(client, each.tool, **each.args)))

    anyio.run(main)
    return answers


# --------------------------------------------------------------------------- the same document

#: What the MCP server adds to the library's document: the run it used (every answer names it), and, for a
#: result that went to the orphan path, what the model should do next.
MCP_ADDS = frozenset({"run", "next"})


def _as_library(mcp: list[Any], library: list[Any]) -> list[Any]:
    """The MCP answers less what the server adds to each (checked: the run is the run called)."""
    made = []
    for answer, known in zip(mcp, library, strict=True):
        assert answer["run"] == RUN
        made.append({k: v for k, v in answer.items() if k in known or k not in MCP_ADDS})
    return made


#: What the MCP door's client says of itself in its ``initialize`` (the plan server keeps it on its plan records).
CLIENT = Implementation(name="acknowledgement-test", version="1.0")


def _own_source(tool: str) -> Source:
    """The source the plan server writes on a plan record of ``tool`` called by :data:`CLIENT` at the frozen
    time."""
    with called_by((CLIENT.name, CLIENT.version)):
        return plan_source(tool, plantrail.ledger.vocabulary.clock.utc_now())


def _without_own_source(log: bytes) -> tuple[bytes, dict[str, str]]:
    """The MCP door's log with the plan server's own source taken off its plan records (each checked to be
    that source) and the chain computed again, the header's format included (the format a log is created in
    is the lowest its first record needs); and each old hash's new hash."""
    lines = log.splitlines()
    records = [decode(line, number) for number, line in enumerate(lines, 1)]
    rehashed: dict[str, str] = {}
    written: list[bytes] = []
    prev = "0" * 64
    for record in records:
        data, source = record.data, record.source
        if record.type.startswith("plan."):
            tool = "plan_extend" if record.type == "plan.extended" else "plan_set"
            assert source == _own_source(tool), record
            assert source.file == "plantrail mcp" and source.meta["agent"] == "mcp"
            source = None
        else:
            assert source is None, record
        if isinstance(data, LogOpened) and len(records) > 1:
            data = msgspec.structs.replace(data, format=log_format([records[1].data]))
        line, again = encode_checked(
            seq=record.seq,
            ts=record.ts,
            run=record.run,
            plan_version=record.plan_version,
            actor=record.actor,
            data=data,
            prev=prev,
            source=source,
            key=record.key,
            trace=record.trace,
        )
        written.append(line)
        rehashed[record.h] = prev = again.h
    return b"".join(written), rehashed


def _rehashed(answer: dict[str, Any], rehashed: dict[str, str]) -> dict[str, Any]:
    """An MCP answer with its head hash, and the hash in its anchor (``seq:hash``), the recomputed ones."""
    again = dict(answer)
    if "hash" in answer:
        again["hash"] = rehashed[answer["hash"]]
    if "anchor" in answer:
        seq, _, head = answer["anchor"].partition(":")
        again["anchor"] = f"{seq}:{rehashed[head]}"
    return again


def _three_ways(tmp_path: Path, calls: list[Call]) -> list[Any]:
    """The answers of the three front doors, each on a fresh log, asserted equal (and the logs byte-equal), the
    plan server's own source on its plan records left aside (see the module)."""
    folders = [tmp_path / door for door in ("cli", "library", "mcp")]
    for folder in folders:
        folder.mkdir()
    cli = through_the_cli(folders[0], calls)
    library = through_the_library(folders[1], calls)
    mcp = through_mcp(folders[2], calls)
    assert cli == library
    logs = [(folder / f"{RUN}.jsonl").read_bytes() for folder in folders]
    mcp_log, rehashed = _without_own_source(logs[2])
    assert logs[0] == logs[1] == mcp_log
    mcp = [_rehashed(answer, rehashed) for answer in mcp]
    assert _as_library(mcp, library) == library
    return library


@pytest.mark.parametrize("case", list(CASES))
def test_every_front_door_answers_the_same_acknowledgement(case: str, tmp_path: Path) -> None:
    """Every call of the case answers the same document through the CLI, the library and the MCP server."""
    answers = _three_ways(tmp_path, CASES[case])
    assert all(a["ok"] for a in answers)
    written = [a["seq"] for a in answers if not a.get("duplicate")]
    assert written == list(range(1, len(written) + 1))  # each call but a retried one wrote the next record


def test_a_create_answers_the_created_plan_with_its_coverage_warnings(tmp_path: Path) -> None:
    """plan_set's first call answers what every recorded command answers, with the run, the steps and the
    coverage gaps of the created plan."""
    [created] = _three_ways(tmp_path, [CREATE])
    assert (created["run"], created["plan_version"], created["steps"]) == (RUN, 1, ["reproduce", "fix"])
    assert [(w["code"], w["criterion"]) for w in created["warnings"]] == [("COVERAGE_GAP", "tests-pass")]
    assert (created["duplicate"], created["orphan"], created["durable"], created["outcome"]) == (
        False,
        None,
        True,
        None,
    )


def test_an_effect_answers_the_effect_as_it_stands(tmp_path: Path) -> None:
    """step_effect's acknowledgement carries the effect: in doubt once requested, committed, and a retried
    commit (duplicate) the same effect."""
    *_, requested, committed, again = _three_ways(tmp_path, CASES["step_effect retried (duplicate)"])
    assert requested["effect"]["status"] == "in_doubt" and requested["effect"]["target"] == "prod"
    assert (committed["effect"]["status"], committed["effect"]["result"]) == ("committed", "v2")
    assert (again["duplicate"], again["seq"], again["effect"]) == (True, committed["seq"], committed["effect"])


def test_a_retried_start_answers_the_original_seq_as_a_duplicate(tmp_path: Path) -> None:
    """A start retried under its idempotency key: the original's seq and hash, duplicate, nothing written."""
    *_, first, again = _three_ways(tmp_path, CASES["step_start retried (duplicate)"])
    assert (again["seq"], again["hash"], again["duplicate"], first["duplicate"]) == (
        first["seq"],
        first["hash"],
        True,
        False,
    )


def test_a_late_result_answers_its_orphan_reason(tmp_path: Path) -> None:
    """A completion for a superseded version is recorded on the orphan path; every door says why."""
    *_, late = _three_ways(tmp_path, CASES["step_update complete, late (orphan)"])
    assert (late["orphan"], late["plan_version"]) == ("SUPERSEDED_VERSION", 2)


# --------------------------------------------------------------------------- what only the CLI records

#: A plan for the commands the MCP server does not offer: a lease, an approval gate, a scope.
SCOPED = {
    "goal": GOAL,
    "acceptance_criteria": CRITERIA,
    "steps": [
        {**STEPS[0], "timeout_s": 60},
        STEPS[1],
        {"id": "deploy", "title": "Deploy", "completion_evidence": "it serves", "requires_approval": True},
    ],
}
EXTRA = {"steps": [{"id": "notes", "title": "Notes", "completion_evidence": "written"}]}
OUTSIDE = {"changed_paths": ["package.json"]}


class Command(NamedTuple):
    """A CLI command line after its log (the files it reads are written first) and the Ledger call it is."""

    cli: list[str]
    library: Any  # Ledger -> Ack


def _cli_only(folder: Path) -> list[Command]:
    """The recording commands the three-way cases leave out, a scope violation among them, in one run."""
    (folder / "extra.json").write_bytes(orjson.dumps(EXTRA))
    (folder / "outside.json").write_bytes(orjson.dumps(OUTSIDE))
    return [
        Command(["extend", str(folder / "extra.json")], lambda ledger: ledger.extend(EXTRA)),
        Command(["start", "reproduce"], lambda ledger: ledger.start("reproduce")),
        Command(["heartbeat", "reproduce", "--lease", "30"], lambda ledger: ledger.heartbeat("reproduce", lease_s=30)),
        Command(
            ["abandon", "reproduce", "--reason", "worker gone"],
            lambda ledger: ledger.abandon("reproduce", "worker gone"),
        ),
        Command(["start", "reproduce"], lambda ledger: ledger.start("reproduce")),
        Command(["complete", "reproduce", "-e", "401"], lambda ledger: ledger.complete("reproduce", "401")),
        Command(["observe", "repo", "abc123"], lambda ledger: ledger.observe("repo", "abc123")),
        Command(["start", "fix"], lambda ledger: ledger.start("fix")),
        Command(
            ["complete", "fix", "-e", "patched", "--artifact", PATCH, "--report", str(folder / "outside.json")],
            lambda ledger: ledger.complete("fix", "patched", artifacts=[PATCH], report=OUTSIDE),
        ),
        Command(
            ["request-approval", "widen", "--steps", "fix", "--writes", "package.json", "--question", "May fix?"],
            lambda ledger: ledger.request_approval("widen", "May fix?", "fix", writes="package.json"),
        ),
        Command(["approve", "widen", "--by", "ana"], lambda ledger: ledger.approve("widen", by="ana")),
        Command(
            ["request-approval", "ship", "--steps", "deploy", "--question", "Deploy today?"],
            lambda ledger: ledger.request_approval("ship", "Deploy today?", "deploy"),
        ),
        Command(["deny", "ship", "--why", "freeze"], lambda ledger: ledger.deny("ship", why="freeze")),
    ]


def test_the_cli_only_commands_and_a_scope_violation_answer_the_library_document(tmp_path: Path) -> None:
    """extend, heartbeat, abandon, observe, request-approval, approve, deny, and a completion whose report leaves
    the step's scope: the CLI's --json is the library's acknowledgement."""
    cli, library = tmp_path / "cli", tmp_path / "library"
    runner = CliRunner()
    cli.mkdir()
    (cli / "draft.json").write_bytes(orjson.dumps(SCOPED))
    log = cli / f"{RUN}.jsonl"
    created = runner.invoke(cli_group, ["create", str(log), "--plan", str(cli / "draft.json"), "--json"])
    said = [orjson.loads(created.stdout)]
    for command in _cli_only(cli):
        outcome = runner.invoke(cli_group, [command.cli[0], str(log), *command.cli[1:], "--json"])
        assert outcome.exit_code == 0, (command.cli, outcome.output)
        said.append(orjson.loads(outcome.stdout))
    library.mkdir()
    with Ledger.create(library / f"{RUN}.jsonl", SCOPED) as ledger:
        answers = [ledger.acknowledgement()]
    for command in _cli_only(library):
        with Ledger.open(library / f"{RUN}.jsonl") as ledger:
            answers.append(ledger.acknowledgement(command.library(ledger)))
    assert said == answers
    assert log.read_bytes() == (library / f"{RUN}.jsonl").read_bytes()
    held = [a for a in answers if "scope_violation" in a]
    assert [a["scope_violation"] for a in held] == [{"step": "fix", "paths": ["package.json"], "tools": []}]


def test_an_mcp_completion_whose_report_leaves_the_scope_answers_the_violation(tmp_path: Path) -> None:
    """step_update complete with an evidence record outside the step's scope is recorded as the blocked attempt
    scope_violation, and its answer says so as the library's document does."""
    library = tmp_path / "library" / f"{RUN}.jsonl"
    scoped = {"goal": GOAL, "steps": STEPS, "criteria": CRITERIA, "terms": {"scope": {"writes": ["src/**"]}}}
    with Ledger.set_plan(library, run=RUN, **scoped) as ledger:
        pass
    with Ledger.open(library) as ledger:
        ledger.start("reproduce")
        expected = ledger.acknowledgement(ledger.complete("reproduce", "seen", report=OUTSIDE))
    answers: list[Any] = []

    async def main() -> None:
        async with Client(build_server(tmp_path / "mcp"), client_info=CLIENT) as client:
            answers.append(result(await call_tool(client, "plan_set", run=RUN, **scoped)))
            await call_tool(client, "step_start", run=RUN, step="reproduce")
            done = await call_tool(
                client, "step_update", run=RUN, step="reproduce", action="complete", evidence="seen", report=OUTSIDE
            )
            answers.append(result(done))

    anyio.run(main)
    assert answers[1]["scope_violation"] == {"step": "reproduce", "paths": ["package.json"], "tools": []}
    mcp_log, rehashed = _without_own_source((tmp_path / "mcp" / f"{RUN}.jsonl").read_bytes())
    assert mcp_log == library.read_bytes()
    assert _as_library([_rehashed(answers[1], rehashed)], [expected]) == [expected]


# --------------------------------------------------------------------------- create or replan, in the library


def test_set_plan_is_plan_set(tmp_path: Path) -> None:
    """Ledger.set_plan answers what plan_set answers: a create, its retry under the same key (the original's
    ack, duplicate, nothing written), a replan keeping the goal and criteria; a replan without a reason is
    USAGE with the message the MCP tool gives, and writes nothing."""
    first = {"goal": GOAL, "steps": STEPS, "criteria": CRITERIA, "idempotency_key": "plan-1"}
    replan = {**first, "steps": MORE_STEPS, "reason": "new_constraint", "why": "the changelog must say so"}
    replan.pop("idempotency_key")
    library: list[Any] = []
    for args in (first, first, replan):
        with Ledger.set_plan(tmp_path / "library" / f"{RUN}.jsonl", run=RUN, **args) as ledger:
            library.append(ledger.acknowledgement())
    with pytest.raises(PlantrailError) as caught:
        Ledger.set_plan(tmp_path / "library" / f"{RUN}.jsonl", STEPS, goal=GOAL)
    mcp: list[Any] = []

    async def main() -> None:
        async with Client(build_server(tmp_path / "mcp"), client_info=CLIENT) as client:
            for args in (first, first, replan):
                mcp.append(result(await call_tool(client, "plan_set", run=RUN, **args)))
            again = await call_tool(client, "plan_set", run=RUN, goal=GOAL, steps=STEPS, criteria=CRITERIA)
            assert refused(again, "USAGE")
            assert f"error[USAGE]: {caught.value.message}" in again.content[0].text

    anyio.run(main)
    mcp_log, rehashed = _without_own_source((tmp_path / "mcp" / f"{RUN}.jsonl").read_bytes())
    assert mcp_log == (tmp_path / "library" / f"{RUN}.jsonl").read_bytes()
    assert _as_library([_rehashed(answer, rehashed) for answer in mcp], library) == library
    assert (library[1]["duplicate"], library[1]["seq"]) == (True, library[0]["seq"])
    assert library[2]["plan_version"] == 2
    assert (caught.value.code, caught.value.message) == ("USAGE", "a replan needs reason (a reason code) and why")


# --------------------------------------------------------------------------- the ledger's own turn


def test_the_acknowledgement_is_of_the_ledgers_last_turn(tmp_path: Path) -> None:
    """Ledger.acknowledgement is the function's document for the last turn's command; with nothing recorded in
    the last turn (just opened, a refusal, a checkpoint) or an ack of another turn, it is USAGE."""
    log = tmp_path / f"{RUN}.jsonl"
    with Ledger.create(log, {"goal": GOAL, "steps": STEPS, "acceptance_criteria": CRITERIA}) as ledger:
        created = ledger.acknowledgement()
        started = ledger.start("reproduce")
        assert ledger.acknowledgement(started) == ledger.acknowledgement()
        assert ledger.acknowledgement() == acknowledgement(ledger.unread_state, started, Start(step="reproduce"))
        with pytest.raises(PlantrailError) as other:
            ledger.acknowledgement(started._replace(seq=created["seq"]))  # no ack of this turn
        assert other.value.code == "USAGE"
        with pytest.raises(PlantrailError):
            ledger.start("fix")  # not ready: refused
        with pytest.raises(PlantrailError) as refused_turn:
            ledger.acknowledgement()
        assert refused_turn.value.code == "USAGE"
    with Ledger.open(log) as ledger, pytest.raises(PlantrailError) as opened:
        ledger.acknowledgement()
    assert opened.value.code == "USAGE"
    with Ledger.open(log) as ledger:
        ledger.complete("reproduce", "401")
        ledger.checkpoint(b"k" * 16)
        with pytest.raises(PlantrailError) as checkpointed:
            ledger.acknowledgement()
    assert checkpointed.value.code == "USAGE"
