"""Forking a run (ledger/fork.py, the run.forked event, verify --parent): LangGraph's fork, Temporal's reset."""

from __future__ import annotations

import copy
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from plantrail.ledger import audit
from plantrail.ledger.api import Ledger
from plantrail.ledger.fork import fork_run
from plantrail.ledger.stores.jsonl.log import JsonlStore
from plantrail.ledger.stores.protocol import PendingRecord
from plantrail.ledger.verify import verify_log
from plantrail.ledger.vocabulary.codec import GENESIS_PREV, decode, encode
from plantrail.ledger.vocabulary.errors import PlantrailError
from plantrail.ledger.vocabulary.events import LogOpened, PlanReplanned, Record, RunForked
from plantrail.projections.canonical import canonical_bytes, state_hash
from plantrail.projections.lineage import carry
from plantrail.projections.model import PlanState
from plantrail.projections.state import evolve, fold, initial
from plantrail.projections.table import Table
from tests.conftest import LOGIN_DRAFT, SAMPLES, CliResult
from tests.logs import read_records
from tests.strategies import commands, plans, simulate

REPLANS = SAMPLES / "login-fix-replans.jsonl"


@pytest.fixture
def parent(tmp_path: Path) -> Path:
    """A copy of the replans sample (three plan versions, a late result)."""
    target = tmp_path / "parent.jsonl"
    shutil.copyfile(REPLANS, target)
    return target


def test_a_fork_names_its_parent_and_carries_its_state_there(parent: Path, tmp_path: Path) -> None:
    """The fork's record after its header names the parent's run, seq and hash there, and carries that state."""
    result = fork_run(parent, tmp_path / "retry.jsonl", at_seq=5, reason="try the other fix")
    header, forked = read_records(tmp_path / "retry.jsonl")
    assert isinstance(header.data, LogOpened) and header.data.format == "plantrail/2" and header.run == "retry"
    assert isinstance(forked.data, RunForked) and forked.seq == 1
    at_five = audit.read_replay(parent, at_seq=5).state
    assert (forked.data.parent, forked.data.seq, forked.data.head) == ("login-fix-replans", 5, at_five.head)
    assert forked.data.state_hash == state_hash(at_five) == result.state_hash
    assert forked.data.reason == "try the other fix"
    assert forked.plan_version == at_five.version


def test_a_fork_is_small_and_verifies_on_its_own(parent: Path, tmp_path: Path) -> None:
    """A fork holds two records, its own chain from its own header, and verify passes without the parent."""
    fork_run(parent, tmp_path / "f.jsonl", at_seq=20)
    report = verify_log(tmp_path / "f.jsonl")
    assert report.records == 2 and report.last_seq == 1
    assert (tmp_path / "f.jsonl").stat().st_size < parent.stat().st_size


def test_the_parent_never_changes(parent: Path, tmp_path: Path) -> None:
    """Forking, recording on the fork and verifying it against the parent leave the parent's bytes as they were."""
    before = parent.read_bytes()
    with Ledger.fork(parent, tmp_path / "f.jsonl", at_seq=5, fsync="none") as ledger:
        ledger.start("check-config")
        ledger.complete("check-config", "config is fine")
    verify_log(tmp_path / "f.jsonl", parent=parent)
    assert parent.read_bytes() == before


def test_the_forked_state_is_the_parents_state_with_its_own_run_and_lineage(parent: Path, tmp_path: Path) -> None:
    """The fork's state is the parent's at the seq, but for the run id, the head and one lineage link."""
    with Ledger.fork(parent, tmp_path / "f.jsonl", at_seq=12, reason="again", fsync="none") as ledger:
        state = ledger.state
    at = audit.read_replay(parent, at_seq=12).state
    assert state.run == "f" and state.last_seq == 1
    assert state_hash(state._replace(run=at.run, last_seq=at.last_seq, head=at.head, lineage=())) == state_hash(at)
    # what only locates records in the parent's log does not: the fork's starts and adoptions are its own
    assert not any(s.started for s in state.steps.values()) and state.adoptions == (1,) * at.version
    assert state._replace(
        run=at.run, last_seq=at.last_seq, head=at.head, lineage=(), steps=at.steps, adoptions=at.adoptions
    ) == at._replace(cut_off=())
    [link] = state.lineage
    assert (link.run, link.seq, link.head, link.reason) == ("login-fix-replans", 12, at.head, "again")


def test_a_fork_by_version_starts_where_replay_of_that_version_stands(parent: Path, tmp_path: Path) -> None:
    """--version V forks from the state `replay --version V` rebuilds (V as it stood when superseded)."""
    result = fork_run(parent, tmp_path / "v2.jsonl", version=2)
    replayed = audit.replay(parent, version=2)
    assert result.state_hash == replayed["state_hash"]
    assert result.seq == replayed["last_seq"] and result.plan_version == 2


def test_a_fork_of_a_fork_keeps_the_whole_lineage(parent: Path, tmp_path: Path) -> None:
    """Forking a fork adds a link: the lineage lists every ancestor, the oldest first."""
    with Ledger.fork(parent, tmp_path / "one.jsonl", at_seq=5, fsync="none") as ledger:
        ledger.start("check-config")
    fork_run(tmp_path / "one.jsonl", tmp_path / "two.jsonl", at_seq=2, reason="second")
    lineage = audit.replay(tmp_path / "two.jsonl")["lineage"]
    assert [(link["run"], link["seq"], link["reason"]) for link in lineage] == [
        ("login-fix-replans", 5, ""),
        ("one", 2, "second"),
    ]
    verify_log(tmp_path / "two.jsonl", parent=tmp_path / "one.jsonl")


@pytest.mark.parametrize(
    ("options", "code"),
    [
        ({}, "USAGE"),
        ({"at_seq": 5, "version": 2}, "USAGE"),
        ({"at_seq": 999}, "UNKNOWN_SEQ"),
        ({"version": 9}, "UNKNOWN_PLAN_VERSION"),
        ({"at_seq": 0}, "PLAN_NOT_CREATED"),
        ({"at_seq": 5, "run": "login-fix-replans"}, "USAGE"),
    ],
)
def test_a_fork_that_cannot_be_made_is_refused_and_writes_nothing(
    parent: Path, tmp_path: Path, options: dict[str, Any], code: str
) -> None:
    """No point, two points, a point the parent does not reach, one before its plan, or the parent's run id."""
    with pytest.raises(PlantrailError) as caught:
        fork_run(parent, tmp_path / "f.jsonl", **options)
    assert caught.value.code == code
    assert not (tmp_path / "f.jsonl").exists()


def test_a_fork_never_overwrites_a_file(parent: Path, tmp_path: Path) -> None:
    """LOG_EXISTS when the new log's path is taken; the file keeps its bytes."""
    taken = tmp_path / "taken.jsonl"
    taken.write_bytes(b"mine\n")
    with pytest.raises(PlantrailError) as caught:
        fork_run(parent, taken, at_seq=5)
    assert caught.value.code == "LOG_EXISTS" and taken.read_bytes() == b"mine\n"


def test_verify_parent_refuses_a_parent_whose_history_differs(parent: Path, tmp_path: Path, clock: Any) -> None:
    """A log with the parent's run id but another history at the seq is FORK_MISMATCH, a damaged-log error."""
    fork_run(parent, tmp_path / "f.jsonl", at_seq=5)
    impostor = tmp_path / "impostor.jsonl"
    records = read_records(parent)
    with Ledger.create(impostor, records[1].data.plan, run="login-fix-replans", fsync="none", clock=clock) as ledger:  # type: ignore[union-attr]
        for _ in range(4):
            ledger.verify_criterion(records[1].data.plan.acceptance_criteria[0].id, passed=False, evidence="no")  # type: ignore[union-attr]
    with pytest.raises(PlantrailError) as caught:
        verify_log(tmp_path / "f.jsonl", parent=impostor)
    assert caught.value.code == "FORK_MISMATCH" and caught.value.exit_code == 3


def test_verify_parent_refuses_another_run_and_a_parent_that_ends_too_soon(parent: Path, tmp_path: Path) -> None:
    """Another run's log, or a parent cut short before the fork's seq, is FORK_MISMATCH."""
    fork_run(parent, tmp_path / "f.jsonl", at_seq=20)
    with pytest.raises(PlantrailError) as other:
        verify_log(tmp_path / "f.jsonl", parent=SAMPLES / "login-fix.jsonl")
    short = tmp_path / "short.jsonl"
    short.write_bytes(b"".join(parent.read_bytes().splitlines(keepends=True)[:10]))
    with pytest.raises(PlantrailError) as cut:
        verify_log(tmp_path / "f.jsonl", parent=short)
    assert other.value.code == cut.value.code == "FORK_MISMATCH"


def test_verify_parent_of_a_run_that_is_no_fork_is_a_usage_error(parent: Path) -> None:
    """--parent names a fork's parent; on a log that was never forked it is USAGE."""
    with pytest.raises(PlantrailError) as caught:
        verify_log(parent, parent=parent)
    assert caught.value.code == "USAGE"


def _hand_made_fork(path: Path, point: PlanState, **changes: Any) -> None:
    event = RunForked(
        parent=point.run or "p",
        seq=point.last_seq,
        head=point.head or "0" * 64,
        state_hash=state_hash(point),
        reason="",
        state=carry(point),
    )
    fields = {f: getattr(event, f) for f in event.__struct_fields__} | changes
    pending = PendingRecord("2026-01-01T00:00:00.000001Z", point.version, "user", RunForked(**fields))
    JsonlStore.create(path, run="hand", first=[pending], fsync="none")[0].close()


def test_a_fork_whose_carried_state_does_not_hash_as_named_fails_verify(parent: Path, tmp_path: Path) -> None:
    """verify replays the fork's rule: a carried state that does not hash to its named hash is ILLEGAL_EVENT."""
    state = audit.read_replay(parent, at_seq=5).state
    _hand_made_fork(tmp_path / "bad.jsonl", state, state_hash="f" * 64)
    with pytest.raises(PlantrailError) as caught:
        verify_log(tmp_path / "bad.jsonl")
    assert caught.value.code == "ILLEGAL_EVENT" and caught.value.fields["rule"] == "FORK_INVALID"


def test_a_fork_whose_carried_state_is_not_a_state_fails_verify(parent: Path, tmp_path: Path) -> None:
    """A run.forked event whose state text is no plan state is ILLEGAL_EVENT (FORK_INVALID), and folds to nothing."""
    state = audit.read_replay(parent, at_seq=5).state
    _hand_made_fork(tmp_path / "bad.jsonl", state, state='{"not": "a state"}')
    with pytest.raises(PlantrailError) as caught:
        verify_log(tmp_path / "bad.jsonl")
    assert caught.value.fields["rule"] == "FORK_INVALID"
    assert fold(read_records(tmp_path / "bad.jsonl")).plan is None


def test_a_run_never_forked_has_no_lineage_in_its_canonical_state() -> None:
    """A run never forked has no lineage, which the canonical state leaves out (so its hash is unchanged)."""
    state = fold(read_records(SAMPLES / "login-fix.jsonl"))
    assert state.lineage == ()
    assert b"lineage" not in canonical_bytes(state)


# --------------------------------------------------------------------------- the property


def _moved(seq: int, at: int) -> int:
    """Where the parent's seq ``seq`` lands in a fork made at seq ``at`` (its own records from seq 2 on)."""
    return seq if seq <= at else seq - at + 1


def _as_in_fork(state: PlanState, at: int, fork: PlanState) -> PlanState:
    """The parent's state with its seqs after ``at`` (steps, leases, criteria, orphans, observations, the outcome,
    the adopted version and its extensions, approvals and a violation) renumbered as the fork numbers them, and
    the fork's run, last seq, head and lineage (where the state lives): what the fork must equal, byte for byte."""
    steps = [
        s._replace(
            last_seq=_moved(s.last_seq, at),
            lease=None if s.lease is None else s.lease._replace(seq=_moved(s.lease.seq, at)),
        )
        for s in state.steps.values_in_order()
    ]
    criteria = [c._replace(last_seq=_moved(c.last_seq, at)) for c in state.criteria.values_in_order()]
    adopted = state.adopted
    if adopted is not None:
        adopted = adopted._replace(
            seq=_moved(adopted.seq, at),
            causes=tuple(_moved(c, at) for c in adopted.causes),
            extended=tuple(_moved(e, at) for e in adopted.extended),
        )
    authority = state.authority
    if authority is not None:
        approvals = tuple(
            a._replace(seq=_moved(a.seq, at), decided_seq=None if a.decided_seq is None else _moved(a.decided_seq, at))
            for a in authority.approvals
        )
        held = authority.violation
        violation = None if held is None else held._replace(seq=_moved(held.seq, at))
        authority = authority._replace(approvals=approvals, violation=violation)
    return state._replace(
        authority=authority,
        run=fork.run,
        steps=Table(tuple(state.steps), steps),
        criteria=Table(tuple(state.criteria), criteria),
        orphans=tuple(o._replace(seq=_moved(o.seq, at)) for o in state.orphans),
        observations=tuple(o._replace(seq=_moved(o.seq, at)) for o in state.observations),
        outcome_seq=None if state.outcome_seq is None else _moved(state.outcome_seq, at),
        adopted=adopted,
        last_seq=fork.last_seq,
        head=fork.head,
        lineage=fork.lineage,
    )


def _forked_records(parent: list[Record], states: list[PlanState], at: int) -> list[Record]:
    """A fork of the simulated ``parent`` at seq ``at``, followed by the parent's events after ``at`` (their
    causes renumbered as the fork numbers the records), all through the real codec."""
    out: list[Record] = []
    prev = GENESIS_PREV
    point = states[at]
    forked = RunForked(
        parent="r", seq=at, head=point.head or "", state_hash=state_hash(point), reason="", state=carry(point)
    )
    header = LogOpened(format="plantrail/2", run="f", nonce="1" * 32, fsync="none", created_by="tests")
    events: list[tuple[Any, int, str, str]] = [(header, 0, "runtime", "t0"), (forked, point.version, "user", "t1")]
    for record in parent[at + 1 :]:
        data = record.data
        if isinstance(data, PlanReplanned):
            data = _recaused(data, at)
        events.append((data, record.plan_version, record.actor, record.ts))
    for seq, (data, version, actor, ts) in enumerate(events):
        line, prev = encode(seq=seq, ts=ts, run="f", plan_version=version, actor=actor, data=data, prev=prev)
        out.append(decode(line[:-1], seq + 1))
    return out


def _recaused(data: PlanReplanned, at: int) -> PlanReplanned:
    return PlanReplanned(
        data.new_version,
        data.reason,
        data.why,
        tuple(_moved(c, at) for c in data.causes),
        data.observations,
        data.plan,
        data.patch,
    )


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(plan=plans(), cmds=st.lists(commands(), max_size=25), data=st.data())
def test_events_after_a_fork_fold_as_if_appended_to_the_parent(plan: Any, cmds: list[Any], data: Any) -> None:
    """Fork at N then append E gives, after every record, the parent's state up to N then E (renumbered, with
    the fork's run id and lineage): the same state hash."""
    sim = simulate(plan, cmds)
    at = data.draw(st.integers(min_value=1, max_value=len(sim.records) - 1), label="fork at seq")
    forked = _forked_records(sim.records, sim.states, at)
    state = initial()
    for record in forked:
        state = evolve(state, record)
        if record.seq >= 1:
            expected = _as_in_fork(sim.states[at + record.seq - 1], at, state)
            assert state_hash(state) == state_hash(expected)
    assert state_hash(fold(forked)) == state_hash(state)


def test_the_cli_forks_and_verifies_against_the_parent(
    parent: Path, tmp_path: Path, run_cli: Callable[..., CliResult]
) -> None:
    """`plantrail fork` writes the fork; `verify --parent` checks it; `status` and `why` show the lineage."""
    new = tmp_path / "retry.jsonl"
    made = run_cli("fork", parent, "--at-seq", "5", "-o", new, "--reason", "try again", "--json")
    assert made.code == 0 and made.json()["parent"] == "login-fix-replans" and made.json()["seq"] == 5
    checked = run_cli("verify", new, "--parent", parent, "--json")
    assert checked.code == 0 and checked.json()["parent"] == {"run": "login-fix-replans", "seq": 5}
    shown = run_cli("status", new)
    assert "forked from run login-fix-replans at seq 5: try again" in shown.out
    status = run_cli("status", new, "--json").json()
    assert [(x["run"], x["seq"], x["reason"]) for x in status["lineage"]] == [("login-fix-replans", 5, "try again")]
    wrong = run_cli("verify", new, "--parent", SAMPLES / "login-fix.jsonl")
    assert wrong.code == 3 and wrong.err.startswith("error[FORK_MISMATCH]")


def test_why_on_a_fork_shows_its_lineage_and_its_own_replans(parent: Path, tmp_path: Path) -> None:
    """A replan made on a fork is explained by why, with the lineage; the parent's replans are the parent's."""
    with Ledger.fork(parent, tmp_path / "f.jsonl", version=2, reason="v2 again", fsync="none") as ledger:
        plan = ledger.state.plan
        assert plan is not None
        ledger.replan(
            "agent_revision",
            "drop the last step",
            patch={"base_version": 2, "operations": [{"op": "remove_step", "step_id": plan.steps[-1].id}]},
        )
    explained = audit.why(tmp_path / "f.jsonl")
    assert explained["version"] == 3 and explained["lineage"][0]["reason"] == "v2 again"
    assert [v["version"] for v in audit.versions(tmp_path / "f.jsonl")["versions"]] == [2, 3]
    with pytest.raises(PlantrailError) as caught:
        audit.why(tmp_path / "f.jsonl", 2)
    assert caught.value.code == "UNKNOWN_PLAN_VERSION" and "parent" in caught.value.message


def test_the_snapshot_a_fork_leaves_answers_as_its_fold(parent: Path, tmp_path: Path) -> None:
    """A fork's cache (the snapshot its writer leaves) gives the state its fold gives, lineage included."""
    from plantrail.ledger.stores.jsonl.current import read_state

    with Ledger.fork(parent, tmp_path / "f.jsonl", at_seq=12, reason="again", fsync="none") as ledger:
        ledger.start("check-timeout")
    cached = read_state(str(tmp_path / "f.jsonl"))
    assert cached.snapshot_seq == 2
    assert state_hash(cached.state) == state_hash(fold(read_records(tmp_path / "f.jsonl")))
    assert cached.state.lineage[0].reason == "again"


def test_the_timeline_says_where_a_fork_came_from(parent: Path, tmp_path: Path) -> None:
    """The fork's run.forked record reads, in the timeline, as the parent run, seq, version and reason."""
    from plantrail.ledger.timeline import summary

    fork_run(parent, tmp_path / "f.jsonl", at_seq=12, reason="again")
    forked = read_records(tmp_path / "f.jsonl")[1]
    assert summary(forked) == "forked from run login-fix-replans at seq 12 (plan v2): again"


def test_a_forks_replan_cites_the_parents_events_up_to_the_fork(parent: Path, tmp_path: Path) -> None:
    """A fork's replan names events of its parent as parent causes, by the parent's seqs up to the fork (its own
    events stay causes); a seq past the fork, seq 0, or a parent cause in a run never forked is UNKNOWN_CAUSE,
    and a cause the fork's own log does not hold says that a parent cause is the way; verify replays the rule."""
    fork = tmp_path / "f.jsonl"
    with Ledger.fork(parent, fork, at_seq=10, reason="again", fsync="none") as ledger:
        plan = ledger.state.plan
        assert plan is not None
        patch = {"base_version": 1, "operations": [{"op": "remove_step", "step_id": plan.steps[-1].id}]}
        for bad in ({"parent_causes": [11]}, {"parent_causes": [0]}, {"causes": [10]}):
            with pytest.raises(PlantrailError) as caught:
                ledger.replan("failed_assumption", "the config was never read", patch=patch, **bad)
            assert caught.value.code == "UNKNOWN_CAUSE"
        assert "parent cause" in caught.value.message
        ack = ledger.replan(
            "failed_assumption", "the config was never read", patch=patch, causes=1, parent_causes=[10, 3]
        )
    [line] = [line for line in fork.read_bytes().splitlines() if b'"plan.replanned"' in line]
    assert line.startswith(b'{"v":2,') and b'"parent_causes":[10,3]' in line
    assert verify_log(fork).last_seq == ack.seq
    drop = {"base_version": 1, "operations": [{"op": "remove_step", "step_id": "diagnose"}]}
    never_forked = Ledger.create(tmp_path / "plain.jsonl", copy.deepcopy(LOGIN_DRAFT), fsync="none")
    with never_forked, pytest.raises(PlantrailError) as caught:
        never_forked.replan("failed_assumption", "w", patch=drop, parent_causes=1)
    assert caught.value.code == "UNKNOWN_CAUSE" and "never forked" in caught.value.message


def test_why_on_a_fork_says_each_cause_in_one_line(
    parent: Path, tmp_path: Path, run_cli: Callable[..., CliResult]
) -> None:
    """why quotes a fork's run.forked cause without the parent's state it carries (a one-line summary instead),
    and each parent cause as the parent's event, with the parent run, told from the carried state."""
    fork = tmp_path / "f.jsonl"
    with Ledger.fork(parent, fork, at_seq=10, reason="again", fsync="none") as ledger:
        plan = ledger.state.plan
        assert plan is not None
        patch = {"base_version": 1, "operations": [{"op": "remove_step", "step_id": plan.steps[-1].id}]}
    (tmp_path / "patch.json").write_text(orjson.dumps(patch).decode())
    replanned = run_cli(
        "replan", fork, "--patch", tmp_path / "patch.json", "--reason", "failed_assumption", "--why", "w",
        "--caused-by", "1", "--caused-by-parent", "10", "--caused-by-parent", "9",
    )  # fmt: skip
    assert replanned.code == 0, replanned.err
    why = audit.why(fork)
    [forked] = why["causes"]
    assert forked["type"] == "run.forked" and "state" not in forked["data"]
    assert forked["summary"].startswith("forked from run login-fix-replans at seq 10 (state ")
    assert [(c["run"], c["seq"]) for c in why["parent_causes"]] == [("login-fix-replans", 10), ("login-fix-replans", 9)]
    told = why["parent_causes"][0]["summary"]
    assert told.startswith("seq 10 of run login-fix-replans (the parent, forked at seq 10): step diagnose completed")
    text = run_cli("why", fork).out
    assert '\\"' not in text and '"steps"' not in text  # no JSON of the carried state, escaped or not
    assert told in text and "seq 9 of run login-fix-replans" in text
