"""Repair edges: the ``on_failure`` field, its validation, readiness around a failure, the repair loop through the
CLI, and a property against a small model."""

from __future__ import annotations

import copy
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from plantrail.ledger.api import Ledger
from plantrail.ledger.verify import verify_log
from plantrail.ledger.vocabulary.errors import PlantrailError
from plantrail.ledger.vocabulary.plan import build_plan, parse_draft
from plantrail.projections.canonical import state_hash
from plantrail.projections.history import resume_receipt
from plantrail.projections.state import fold
from plantrail.projections.state_json import decode_state, encode_state
from plantrail.projections.stop import stop_decision
from plantrail.projections.views import ready_steps, startable_steps, wait_reasons
from tests.conftest import CliResult
from tests.logs import read_records

MakeLedger = Callable[..., Ledger]


def _log(ledger: Ledger) -> Path:
    """The file a test ledger writes (make_ledger's ledgers are JSONL files)."""
    return Path(ledger.location)


REPAIRED: dict[str, Any] = {
    "goal": "Ship the release",
    "acceptance_criteria": [{"id": "green", "description": "the suite passes"}],
    "steps": [
        {"id": "build", "title": "Build", "completion_evidence": "artefact"},
        {
            "id": "test",
            "title": "Run the suite",
            "depends_on": ["build"],
            "completion_evidence": "green run",
            "on_failure": "fix",
        },
        {"id": "fix", "title": "Fix what failed", "completion_evidence": "patch"},
    ],
}


def _draft(steps: list[dict[str, Any]] | None = None, **changes: Any) -> dict[str, Any]:
    draft = copy.deepcopy(REPAIRED)
    if steps is not None:
        draft["steps"] = steps
    draft.update(changes)
    return draft


def _step(step_id: str, **fields: Any) -> dict[str, Any]:
    return {"id": step_id, "title": step_id.title(), "completion_evidence": "done", **fields}


def _problems(draft: dict[str, Any]) -> list[tuple[str, str, list[str]]]:
    with pytest.raises(PlantrailError) as caught:
        build_plan(parse_draft(draft))
    errors = getattr(caught.value, "errors", (caught.value,))
    return [(e.code, e.fields.get("step", ""), list(e.fields.get("ids", ()))) for e in errors]


def _codes(draft: dict[str, Any]) -> list[str]:
    return [code for code, _, _ in _problems(draft)]


# --------------------------------------------------------------------------- the field


def test_on_failure_is_a_format_v2_term_left_out_at_its_default(make_ledger: MakeLedger) -> None:
    """A step's on_failure is written inside its terms (a v2 plan line); a plan without one stays a v1 line."""
    with_edge = make_ledger(REPAIRED, name="edge.jsonl")
    without = make_ledger(_draft([_step("build"), _step("test", depends_on=["build"])]), name="plain.jsonl")
    edge_line = orjson.loads(_log(with_edge).read_bytes().splitlines()[1])
    plain_line = orjson.loads(_log(without).read_bytes().splitlines()[1])
    assert edge_line["v"] == 2
    test_step = next(s for s in edge_line["data"]["plan"]["steps"] if s["id"] == "test")
    assert test_step["terms"] == {"on_failure": "fix"}
    assert plain_line["v"] == 1
    assert all("terms" not in s for s in plain_line["data"]["plan"]["steps"])


def test_on_failure_accepts_the_camel_case_key_and_must_be_an_id() -> None:
    """``onFailure`` is accepted like the seed's other camelCase keys; a value that is no id is INVALID_ID."""
    steps = [_step("a", onFailure="r"), _step("r")]
    plan = build_plan(parse_draft(_draft(steps)))
    assert plan.steps[0].on_failure == "r"
    assert _codes(_draft([_step("a", on_failure="not an id"), _step("r")])) == ["INVALID_ID"]


def test_the_schema_documents_on_failure(run_cli: Callable[..., CliResult]) -> None:
    """``plantrail schema`` lists on_failure among a step's terms."""
    result = run_cli("schema", "--json")
    assert result.code == 0
    assert '"on_failure"' in result.out


# --------------------------------------------------------------------------- validation


def test_step_ids_are_unique() -> None:
    """Step ids are unique: two steps with one id are DUPLICATE_STEP_ID, repair edges or not."""
    steps = [_step("a", on_failure="r"), _step("r"), _step("r")]
    assert "DUPLICATE_STEP_ID" in _codes(_draft(steps))


def test_a_repair_step_is_no_entry_step(make_ledger: MakeLedger) -> None:
    """A repair step is no entry step: a repair step without dependencies is not ready at the start,
    and starting it is REPAIR_NOT_NEEDED with the log unchanged."""
    ledger = make_ledger(REPAIRED)
    state = ledger.state
    assert ready_steps(state) == ["build"]
    assert {"code": "repair_not_needed", "repairs": ["test"]} in wait_reasons(state)["fix"]
    before = _log(ledger).read_bytes()
    with pytest.raises(PlantrailError) as caught:
        ledger.start("fix")
    assert caught.value.code == "REPAIR_NOT_NEEDED"
    assert _log(ledger).read_bytes() == before


def test_on_failure_must_name_a_step_of_the_plan() -> None:
    """References resolve: an on_failure naming an unknown step is UNKNOWN_REPAIR_STEP, naming step and target."""
    steps = [_step("a", on_failure="fixx"), _step("fix")]
    assert _problems(_draft(steps)) == [("UNKNOWN_REPAIR_STEP", "a", ["fixx"])]


def test_a_repair_step_needs_its_text() -> None:
    """No blank text: a repair step's title is required like any step's (BLANK_FIELD)."""
    steps = [_step("a", on_failure="r"), {**_step("r"), "title": "  "}]
    assert "BLANK_FIELD" in _codes(_draft(steps))


def test_dependency_cycles_are_refused_beside_repair_edges() -> None:
    """No dependency loop: depends_on may not loop, whatever the repair edges say."""
    steps = [_step("a", depends_on=["b"], on_failure="r"), _step("b", depends_on=["a"]), _step("r")]
    assert "DEPENDENCY_CYCLE" in _codes(_draft(steps))


def test_failure_chains_may_not_loop() -> None:
    """No failure loop: A repaired by B and B by A is REPAIR_CYCLE naming both; a longer loop too."""
    two = [_step("a", on_failure="b"), _step("b", on_failure="a")]
    assert _problems(_draft(two)) == [("REPAIR_CYCLE", "a", ["a", "b"])]
    three = [_step("x", on_failure="y"), _step("y", on_failure="z"), _step("z", on_failure="x"), _step("w")]
    assert _problems(_draft(three)) == [("REPAIR_CYCLE", "x", ["x", "y", "z"])]


def test_a_step_may_repair_itself(make_ledger: MakeLedger) -> None:
    """The one failure loop allowed, a step that repairs itself: a step naming itself is retried directly."""
    ledger = make_ledger(_draft([_step("a", on_failure="a")]))
    ledger.start("a")
    ledger.fail("a", "flaky")
    assert ready_steps(ledger.state) == ["a"]
    ledger.start("a")
    assert ledger.state.steps["a"].attempt == 2


def test_a_repair_chain_is_allowed(make_ledger: MakeLedger) -> None:
    """A repair step may itself be repaired (a chain that ends): the chain validates and runs in order."""
    steps = [_step("a", on_failure="r1"), _step("r1", on_failure="r2"), _step("r2")]
    ledger = make_ledger(_draft(steps))
    ledger.start("a")
    ledger.fail("a", "first")
    assert ready_steps(ledger.state) == ["r1"]
    ledger.start("r1")
    ledger.fail("r1", "the fix failed")
    assert ready_steps(ledger.state) == ["r2"]
    assert [r["code"] for r in wait_reasons(ledger.state)["r1"]] == ["awaiting_repair"]


def test_a_repair_step_no_failure_can_call_is_unreachable() -> None:
    """Every repair step is reachable: a repair step whose every repaired step has one attempt can never run
    (REPAIR_STEP_UNREACHABLE), and so can a repair step that repairs only such a step."""
    steps = [_step("a", max_attempts=1, on_failure="r"), _step("r", max_attempts=1, on_failure="r2"), _step("r2")]
    assert _problems(_draft(steps)) == [
        ("REPAIR_STEP_UNREACHABLE", "r", ["r"]),
        ("REPAIR_STEP_UNREACHABLE", "r2", ["r2"]),
    ]
    reachable = [_step("a", max_attempts=1, on_failure="r"), _step("b", on_failure="r"), _step("r")]
    build_plan(parse_draft(_draft(reachable)))


def test_the_success_path_may_not_wait_on_a_repair_step() -> None:
    """Reachability: a step depending on a repair step could only run after a failure: DEPENDS_ON_REPAIR_STEP."""
    steps = [_step("a", on_failure="r"), _step("r"), _step("report", depends_on=["a", "r"])]
    assert _problems(_draft(steps)) == [("DEPENDS_ON_REPAIR_STEP", "report", ["r"])]


def test_a_repair_step_takes_no_dependencies() -> None:
    """A repair step has no dependencies: a repair step with depends_on is REPAIR_STEP_HAS_DEPENDENCIES."""
    steps = [_step("setup"), _step("a", depends_on=["setup"], on_failure="r"), _step("r", depends_on=["setup"])]
    assert _problems(_draft(steps)) == [("REPAIR_STEP_HAS_DEPENDENCIES", "r", ["setup"])]


def test_every_repair_problem_is_listed_at_once() -> None:
    """A draft with several repair problems names each, in a fixed order (unknown, loops, dependencies,
    unreachable)."""
    steps = [
        _step("a", on_failure="nope"),
        _step("b", on_failure="c"),
        _step("c", on_failure="b"),
        _step("d", max_attempts=1, on_failure="r"),
        _step("r"),
        _step("e", depends_on=["r"]),
    ]
    assert _codes(_draft(steps)) == [
        "UNKNOWN_REPAIR_STEP",
        "REPAIR_CYCLE",
        "DEPENDS_ON_REPAIR_STEP",
        "REPAIR_STEP_UNREACHABLE",
    ]


def test_a_draft_that_does_not_parse_still_names_its_repair_problems() -> None:
    """A draft with a malformed step also names the repair problems of the steps that parsed (an edge to the
    malformed step is no unknown step)."""
    steps = [
        _step("a", on_failure="b"),
        _step("b", on_failure="a"),
        _step("c", on_failure="broken"),
        {"id": "broken", "title": 7},
    ]
    codes = _codes(_draft(steps))
    assert "DRAFT_INVALID" in codes and "REPAIR_CYCLE" in codes
    assert "UNKNOWN_REPAIR_STEP" not in codes


# --------------------------------------------------------------------------- readiness


def _failed_once(ledger: Ledger) -> None:
    ledger.start("build")
    ledger.complete("build", "built")
    ledger.start("test")
    ledger.fail("test", "two tests fail")


def test_a_failed_step_waits_for_its_repair_step(make_ledger: MakeLedger) -> None:
    """After a failure with attempts left the step is pending, not ready, waiting (awaiting_repair) for its
    repair step, which is what next offers; starting the failed step is AWAITING_REPAIR, the log unchanged."""
    ledger = make_ledger(REPAIRED)
    _failed_once(ledger)
    state = ledger.state
    assert state.steps["test"].status == "pending"
    assert ready_steps(state) == ["fix"]
    assert startable_steps(state) == ["fix"]
    assert wait_reasons(state)["test"] == [{"code": "awaiting_repair", "repair": "fix", "status": "pending"}]
    before = _log(ledger).read_bytes()
    with pytest.raises(PlantrailError) as caught:
        ledger.start("test")
    assert caught.value.code == "AWAITING_REPAIR"
    assert caught.value.fields["repair"] == "fix"
    assert _log(ledger).read_bytes() == before


def test_the_repair_loop_runs_the_repair_again_after_each_failure(make_ledger: MakeLedger) -> None:
    """The repair's completion releases the failed step; a second failure returns the repair step from
    completed to pending for a new attempt, whose earlier run is not charged to it."""
    ledger = make_ledger(REPAIRED)
    _failed_once(ledger)
    ledger.start("fix")
    ledger.complete("fix", "patched the parser")
    assert ready_steps(ledger.state) == ["test"]
    assert "fix" not in ready_steps(ledger.state)
    ledger.start("test")
    ledger.fail("test", "one test fails")
    fix = ledger.state.steps["fix"]
    assert (fix.status, fix.attempt, fix.charged, fix.evidence) == ("pending", 1, 0, ())
    assert ready_steps(ledger.state) == ["fix"]
    assert ledger.start("fix").seq == ledger.state.last_seq
    assert ledger.state.steps["fix"].attempt == 2


def test_the_loop_is_bounded_by_the_failed_steps_attempts(make_ledger: MakeLedger) -> None:
    """When the failed step's attempts run out it is blocked (exhausted) as today and calls no repair."""
    ledger = make_ledger(REPAIRED)
    _failed_once(ledger)
    for attempt in (2, 3):
        ledger.start("fix")
        ledger.complete("fix", f"patch {attempt}")
        ledger.start("test")
        ledger.fail("test", f"still failing, try {'ab'[attempt - 2]}")
    state = ledger.state
    assert state.steps["test"].status == "blocked" and state.steps["test"].exhausted
    assert state.steps["fix"].status == "completed"
    assert ready_steps(state) == []


def test_a_repair_step_nothing_needs_does_not_hold_up_completion(make_ledger: MakeLedger) -> None:
    """A run whose repair step never ran is complete once the other steps and criteria are: the stop policy
    says complete, finish complete is accepted, resume says finish."""
    ledger = make_ledger(REPAIRED)
    ledger.start("build")
    ledger.complete("build", "built")
    ledger.start("test")
    ledger.complete("test", "green")
    ledger.verify_criterion("green", True, "suite green")
    state = ledger.state
    assert stop_decision(state).outcome == "complete"
    assert resume_receipt(state)["verdict"] == "continue"
    assert resume_receipt(state)["next"] == "every step and criterion is done: finish --outcome complete"
    ledger.finish("complete", "done")
    assert ledger.state.outcome == "complete"


def test_a_repair_completion_does_not_hide_a_repeated_failure(make_ledger: MakeLedger) -> None:
    """The no-progress rule sees through a repair cycle: the same failure twice, with a repair between, is
    failed (rule 6), because the repair is part of the failed step's retry."""
    ledger = make_ledger(REPAIRED)
    _failed_once(ledger)
    ledger.start("fix")
    ledger.complete("fix", "patch")
    ledger.start("test")
    ledger.fail("test", "two tests fail")
    decision = stop_decision(ledger.state)
    assert (decision.outcome, decision.rule) == ("failed", "no_progress")


def test_resume_proposes_the_repair_step_and_says_why(make_ledger: MakeLedger) -> None:
    """resume's next action names the repair step and the step waiting for it; its JSON lists the repairs."""
    ledger = make_ledger(REPAIRED)
    _failed_once(ledger)
    receipt = resume_receipt(ledger.state)
    assert receipt["next"] == "start fix: it repairs test, which failed and waits for it"
    assert receipt["repairs"] == [
        {"step": "fix", "repairs": ["test"], "status": "pending", "waiting": ["test"], "needed": True}
    ]


def test_a_replan_that_removes_the_repair_step_releases_the_failed_step(make_ledger: MakeLedger) -> None:
    """A replan starts pending steps that had attempts again (as always): with the repair step removed the
    failed step is ready, and the new version has no repair edge."""
    ledger = make_ledger(REPAIRED)
    _failed_once(ledger)
    steps = [_step("build"), _step("test", depends_on=["build"])]
    steps[0]["completion_evidence"] = "artefact"
    steps[0]["title"] = "Build"
    ledger.replan("failed_assumption", "the fix step is manual", plan=_draft(steps))
    assert ready_steps(ledger.state) == ["test"]


def test_a_replan_that_changes_on_failure_judges_the_new_edge(make_ledger: MakeLedger) -> None:
    """A replan that names another repair step releases the failed step (it starts again at attempt 0); the
    new repair step is idle until the next failure, which calls it; the old one, named by nobody now, is an
    ordinary step of the new version."""
    ledger = make_ledger(REPAIRED)
    _failed_once(ledger)
    draft = _draft()
    draft["steps"][1]["on_failure"] = "bisect"
    draft["steps"].append(_step("bisect"))
    ledger.replan("failed_assumption", "bisect before fixing", plan=draft)
    state = ledger.state
    assert ready_steps(state) == ["fix", "test"]
    assert wait_reasons(state)["bisect"] == [{"code": "repair_not_needed", "repairs": ["test"]}]
    ledger.start("test")
    ledger.fail("test", "still red")
    assert ready_steps(ledger.state) == ["bisect", "fix"]


def test_a_refused_replan_or_extension_leaves_the_log_unchanged(make_ledger: MakeLedger) -> None:
    """Replan and extend validate repair edges like create: a loop or an unknown repair step is refused with
    its code and the log byte for byte unchanged."""
    ledger = make_ledger(REPAIRED)
    before = _log(ledger).read_bytes()
    looping = _draft()
    looping["steps"][2]["on_failure"] = "test"
    with pytest.raises(PlantrailError) as caught:
        ledger.replan("agent_revision", "loop", plan=looping)
    assert caught.value.code == "REPAIR_CYCLE"
    with pytest.raises(PlantrailError) as caught:
        ledger.extend({"steps": [_step("docs", on_failure="nobody")]})
    assert caught.value.code == "UNKNOWN_REPAIR_STEP"
    assert _log(ledger).read_bytes() == before


def test_a_repair_step_may_serve_several_failed_steps(make_ledger: MakeLedger) -> None:
    """Two steps repaired by one step: each failure joins the repair's run, and its completion releases both."""
    steps = [_step("a", on_failure="r"), _step("b", on_failure="r"), _step("r")]
    ledger = make_ledger(_draft(steps, policy={"max_in_progress": "unlimited"}))
    ledger.start("a")
    ledger.start("b")
    ledger.fail("a", "a broke")
    ledger.fail("b", "b broke")
    assert ready_steps(ledger.state) == ["r"]
    ledger.start("r")
    ledger.complete("r", "fixed both")
    assert ready_steps(ledger.state) == ["a", "b"]


# --------------------------------------------------------------------------- round trips


def _mid_loop(make_ledger: MakeLedger) -> Ledger:
    ledger = make_ledger(REPAIRED)
    _failed_once(ledger)
    ledger.start("fix")
    ledger.complete("fix", "patch")
    ledger.start("test")
    ledger.fail("test", "other failure")
    return ledger


def test_snapshots_round_trip_a_repair_run(make_ledger: MakeLedger) -> None:
    """A state whose repair step is mid-run encodes and decodes to the same state and state hash."""
    state = _mid_loop(make_ledger).state
    assert state.steps["fix"].repair is not None
    decoded = decode_state(encode_state(state))
    assert decoded == state
    assert state_hash(decoded) == state_hash(state)


def test_a_reopened_ledger_and_a_fresh_fold_agree_on_a_repair_loop(make_ledger: MakeLedger) -> None:
    """Opening the log through its cache (snapshot, version index) gives the state a fold of every record
    gives, and verify replays the repair rules on the log without a finding."""
    ledger = _mid_loop(make_ledger)
    expected = state_hash(ledger.state)
    ledger.close()
    with Ledger.open(_log(ledger), fsync="none") as reopened:
        assert state_hash(reopened.state) == expected
        assert ready_steps(reopened.state) == ["fix"]
    with Ledger.open(_log(ledger), fsync="none", cache=False) as uncached:
        assert state_hash(uncached.state) == expected
    assert verify_log(_log(ledger)).state_hash == expected


def test_a_fork_carries_the_repair_run(make_ledger: MakeLedger, tmp_path: Path) -> None:
    """A fork taken while a failed step waits for its repair carries the wait: the fork offers the repair."""
    ledger = _mid_loop(make_ledger)
    seq = ledger.state.last_seq
    ledger.close()
    with Ledger.fork(_log(ledger), tmp_path / "fork.jsonl", at_seq=seq, reason="try another fix") as fork:
        assert fork.state.steps["fix"].repair == ledger.state.steps["fix"].repair
        assert ready_steps(fork.state) == ["fix"]
        fork.start("fix")
        fork.complete("fix", "another patch")
        assert ready_steps(fork.state) == ["test"]


def test_fold_of_the_records_equals_the_live_state(make_ledger: MakeLedger) -> None:
    """The reducer is deterministic: folding the log's records again gives the live state's hash."""
    ledger = _mid_loop(make_ledger)
    assert state_hash(fold(read_records(_log(ledger)))) == state_hash(ledger.state)


# --------------------------------------------------------------------------- the CLI, end to end


def test_the_repair_loop_end_to_end_through_the_cli(
    tmp_path: Path, write_json: Callable[[str, Any], Path], run_cli: Callable[..., CliResult]
) -> None:
    """Create, fail, see the repair offered, refuse the failed step (log unchanged), repair, retry, finish."""
    log = tmp_path / "run.jsonl"
    assert run_cli("create", log, "--plan", write_json("draft.json", REPAIRED)).code == 0
    assert run_cli("next", log, "--json").json()["can_start"] == ["build"]
    refused = run_cli("start", log, "fix")
    assert refused.code == 1 and refused.err.startswith("error[REPAIR_NOT_NEEDED]")
    for args in (("start", log, "build"), ("complete", log, "build", "-e", "built"), ("start", log, "test")):
        assert run_cli(*args).code == 0
    assert run_cli("fail", log, "test", "--error", "two tests fail").code == 0
    nxt = run_cli("next", log, "--json").json()
    assert nxt["can_start"] == ["fix"]
    status = run_cli("status", log, "--json").json()
    test_view = next(s for s in status["steps"] if s["id"] == "test")
    assert test_view["on_failure"] == "fix" and test_view["ready"] is False
    assert test_view["wait_reasons"] == [{"code": "awaiting_repair", "repair": "fix", "status": "pending"}]
    before = log.read_bytes()
    blocked = run_cli("start", log, "test")
    assert blocked.code == 1 and blocked.err.startswith("error[AWAITING_REPAIR]: step test failed")
    assert "Traceback" not in blocked.err
    assert log.read_bytes() == before
    resume = run_cli("resume", log)
    assert "next: start fix: it repairs test, which failed and waits for it" in resume.out
    for args in (
        ("start", log, "fix"),
        ("complete", log, "fix", "-e", "patched"),
        ("start", log, "test"),
        ("complete", log, "test", "-e", "green"),
        ("criterion", log, "green", "--passed", "-e", "suite green"),
    ):
        result = run_cli(*args)
        assert result.code == 0, result.err
    assert run_cli("finish", log, "--outcome", "complete", "--reason", "shipped").code == 0
    assert run_cli("verify", log).code == 0


def test_plantrail_check_reports_repair_problems(
    write_json: Callable[[str, Any], Path], run_cli: Callable[..., CliResult]
) -> None:
    """``plantrail check DRAFT`` names every repair problem with its code, as create would."""
    draft = _draft([_step("a", on_failure="b"), _step("b", on_failure="a")])
    result = run_cli("check", write_json("loop.json", draft))
    assert result.code == 1
    assert "REPAIR_CYCLE" in result.err


def test_create_with_a_bad_repair_edge_writes_nothing(
    tmp_path: Path, write_json: Callable[[str, Any], Path], run_cli: Callable[..., CliResult]
) -> None:
    """A create refused for a repair edge leaves no log behind."""
    log = tmp_path / "run.jsonl"
    result = run_cli("create", log, "--plan", write_json("bad.json", _draft([_step("a", on_failure="zz")])))
    assert result.code == 1 and "UNKNOWN_REPAIR_STEP" in result.err
    assert not log.exists()


def test_the_graph_draws_an_on_failure_edge_distinctly(make_ledger: MakeLedger) -> None:
    """The plan graph has an on_failure edge from the step to its repair step, drawn dashed in another colour."""
    from plantrail.projections.graph import ON_FAILURE, plan_graph
    from plantrail.projections.graph_render import EDGE_STYLES, render_dot

    graph = plan_graph(make_ledger(REPAIRED).state)
    kinds = {(e.source, e.target): e.kind for e in graph.edges}
    assert kinds == {("build", "test"): "depends_on", ("test", "fix"): ON_FAILURE}
    assert EDGE_STYLES[ON_FAILURE].dash and EDGE_STYLES[ON_FAILURE].stroke != EDGE_STYLES["depends_on"].stroke
    assert 'data-kind"="on_failure", style="dashed"' in render_dot(graph)


# --------------------------------------------------------------------------- a property against a model


class _Model:
    """An independent model of readiness with repair edges: which steps a start would accept."""

    def __init__(self, specs: list[dict[str, Any]]) -> None:
        self.specs = {s["id"]: s for s in specs}
        self.repairs = {s.get("on_failure") for s in specs if s.get("on_failure") not in (None, s["id"])}
        self.status = {i: "pending" for i in self.specs}
        self.attempt = dict.fromkeys(self.specs, 0)
        self.spent = dict.fromkeys(self.specs, 0)
        self.waiting: dict[str, set[str]] = {i: set() for i in self.specs}
        self.awaiting: dict[str, str | None] = dict.fromkeys(self.specs)

    def ready(self) -> list[str]:
        result = []
        for i, spec in self.specs.items():
            if self.status[i] != "pending" or self.awaiting[i] is not None:
                continue
            if any(self.status[d] != "completed" for d in spec.get("depends_on", ())):
                continue
            if i in self.repairs and not self.waiting[i]:
                continue
            result.append(i)
        return result

    def start(self, i: str) -> None:
        self.status[i] = "in_progress"
        self.attempt[i] += 1

    def complete(self, i: str) -> None:
        self.status[i] = "completed"
        for failed in self.waiting[i]:
            self.awaiting[failed] = None
        self.waiting[i] = set()

    def fail(self, i: str) -> None:
        charged = self.attempt[i] - self.spent[i]
        if charged >= self.specs[i].get("max_attempts", 3):
            self.status[i] = "blocked"
            return
        self.status[i] = "pending"
        repair = self.specs[i].get("on_failure")
        if repair is None or repair == i:
            return
        self.awaiting[i] = repair
        self.waiting[repair].add(i)
        if self.status[repair] == "completed":
            self.status[repair] = "pending"
            self.spent[repair] = self.attempt[repair]


@st.composite
def _plans(draw: st.DrawFn) -> list[dict[str, Any]]:
    ordinary = draw(st.integers(min_value=1, max_value=4))
    repairs = draw(st.integers(min_value=1, max_value=2))
    specs: list[dict[str, Any]] = []
    for n in range(ordinary):
        step = _step(f"s{n}", max_attempts=draw(st.integers(min_value=2, max_value=4)))
        deps = [f"s{d}" for d in range(n) if draw(st.booleans())]
        if deps:
            step["depends_on"] = deps
        target = draw(st.sampled_from([None, f"s{n}", *(f"r{k}" for k in range(repairs))]))
        if target is not None:
            step["on_failure"] = target
        specs.append(step)
    named = {s.get("on_failure") for s in specs}
    for k in range(repairs):
        if f"r{k}" in named:
            specs.append(_step(f"r{k}", max_attempts=draw(st.integers(min_value=1, max_value=3))))
    return specs


_ACTIONS = st.sampled_from(["start_ready", "start_ready", "start_any", "complete", "fail", "fail"])


@settings(max_examples=150, deadline=None)
@given(_plans(), st.lists(st.tuples(_ACTIONS, st.integers(0, 10)), max_size=40))
def test_readiness_with_repair_edges_matches_an_independent_model(
    specs: list[dict[str, Any]], actions: list[tuple[str, int]]
) -> None:
    """Whatever happens, the ledger offers exactly the steps the model says are ready: never a failed step
    before its repair completed, never a repair step nothing needs; a start it refuses leaves the log as it was."""
    policy = {"max_in_progress": "unlimited", "max_repeated_failures": 1000}
    model = _Model(specs)
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "run.jsonl"
        ledger = Ledger.create(path, _draft(specs, policy=policy), fsync="none")
        try:
            for n, (action, pick) in enumerate(actions):
                ready = model.ready()
                running = [i for i, status in model.status.items() if status == "in_progress"]
                if action == "start_ready" and ready:
                    step = ready[pick % len(ready)]
                elif action in ("complete", "fail") and running:
                    step = running[pick % len(running)]
                else:
                    step = list(model.specs)[pick % len(model.specs)]
                    action = "start_any"
                if action.startswith("start"):
                    before = path.read_bytes()
                    allowed = step in ready
                    try:
                        ledger.start(step)
                    except PlantrailError:
                        assert not allowed, step
                        assert path.read_bytes() == before
                    else:
                        assert allowed, step
                        model.start(step)
                elif action == "complete":
                    ledger.complete(step, "done")
                    model.complete(step)
                else:
                    ledger.fail(step, f"failure {'xyzw'[n % 4]}{n}")
                    model.fail(step)
                state = ledger.state
                assert sorted(ready_steps(state)) == sorted(model.ready())
                for failed, repair in model.awaiting.items():
                    if repair is not None:
                        assert failed not in ready_steps(state)
                        assert any(r["code"] == "awaiting_repair" for r in wait_reasons(state)[failed])
                assert {i: s.status for i, s in state.steps.items()} == model.status
                assert {i: s.charged for i, s in state.steps.items()} == {
                    i: model.attempt[i] - model.spent[i] for i in model.specs
                }
        finally:
            ledger.close()


@pytest.mark.parametrize(("step", "rule"), [("test", "AWAITING_REPAIR"), ("build", "INVALID_TRANSITION")])
def test_verify_replays_the_repair_rules_on_a_hand_made_log(
    make_ledger: MakeLedger, tmp_path: Path, step: str, rule: str
) -> None:
    """A start of a failed step whose repair has not completed (or of a completed step), written past
    plantrail's decision step, is ILLEGAL_EVENT naming the rule it breaks."""
    from plantrail.ledger.stores.jsonl.log import JsonlStore
    from plantrail.ledger.stores.protocol import PendingRecord
    from plantrail.ledger.vocabulary.events import StepStarted

    ledger = make_ledger(REPAIRED)
    _failed_once(ledger)
    attempt = ledger.state.steps[step].attempt + 1
    ledger.close()
    path = tmp_path / "run.jsonl"
    store = JsonlStore.open(path)
    try:
        with store.session() as session:
            list(session.new_records())
            record = PendingRecord(
                ts="2026-01-01T00:00:01Z", plan_version=1, actor="agent", data=StepStarted(step=step, attempt=attempt)
            )
            session.stage(record)
            session.commit()
    finally:
        store.close()
    with pytest.raises(PlantrailError) as caught:
        verify_log(path)
    assert caught.value.code == "ILLEGAL_EVENT" and rule in str(caught.value)


def test_verify_refuses_a_hand_made_start_of_an_idle_repair_step(make_ledger: MakeLedger, tmp_path: Path) -> None:
    """A start of a repair step nothing waits for, written past plantrail's decision step, is ILLEGAL_EVENT
    (rule REPAIR_NOT_NEEDED)."""
    from plantrail.ledger.stores.jsonl.log import JsonlStore
    from plantrail.ledger.stores.protocol import PendingRecord
    from plantrail.ledger.vocabulary.events import StepStarted

    make_ledger(REPAIRED).close()
    path = tmp_path / "run.jsonl"
    store = JsonlStore.open(path)
    try:
        with store.session() as session:
            list(session.new_records())
            data = StepStarted(step="fix", attempt=1)
            session.stage(PendingRecord(ts="2026-01-01T00:00:01Z", plan_version=1, actor="agent", data=data))
            session.commit()
    finally:
        store.close()
    with pytest.raises(PlantrailError) as caught:
        verify_log(path)
    assert caught.value.code == "ILLEGAL_EVENT" and "REPAIR_NOT_NEEDED" in str(caught.value)


def test_replay_by_version_and_by_seq_agrees_with_a_fold_of_a_repair_loop(
    make_ledger: MakeLedger, run_cli: Callable[..., CliResult]
) -> None:
    """replay --version (the version index) and --at-seq rebuild a repair loop's state as a fold of the records
    up to that point does, twice in a row (the second read goes through the index the first one wrote)."""
    ledger = _mid_loop(make_ledger)
    superseded_at = ledger.state.last_seq + 1
    ledger.replan("failed_assumption", "the fix needs a bisect", plan=_draft())
    ledger.close()
    path = _log(ledger)
    records = read_records(path)
    expected = state_hash(fold(records[:superseded_at]))
    for _ in range(2):
        by_version = run_cli("replay", path, "--version", "1", "--json")
        assert by_version.code == 0, by_version.err
        assert by_version.json()["state_hash"] == expected
    by_seq = run_cli("replay", path, "--at-seq", str(superseded_at - 1), "--json").json()
    assert by_seq["state_hash"] == expected
    fix = next(s for s in by_seq["steps"] if s["id"] == "fix")
    assert fix["ready"] is True
