"""A run as OpenTelemetry span descriptions: the shape, the derived ids, the links, and when each span ends."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from plantrail.ledger.api import Ledger
from plantrail.ledger.stores.opener import as_run
from plantrail.ledger.vocabulary.events import Record
from plantrail.projections.otel_spans import Span, SpanProjector, parse_traceparent, span_id, spans, trace_id

SAMPLE = Path(__file__).resolve().parents[2] / "samples" / "login-fix-replans.jsonl"


def _records(path: Path | str) -> list[Record]:
    with as_run(str(path)) as run:
        return list(run.records())


def _attrs(span: Span) -> dict[str, Any]:
    return dict(span.attributes)


def _by(found: list[Span], kind: str) -> list[Span]:
    return [span for span in found if span.kind == kind]


def _attempt(found: list[Span], step: str, version: int) -> Span:
    (span,) = [
        s
        for s in _by(found, "attempt")
        if _attrs(s)["plantrail.step.id"] == step and _attrs(s)["plantrail.plan.version"] == version
    ]
    return span


def _draft(steps: int = 2) -> dict[str, Any]:
    return {
        "goal": "g",
        "acceptance_criteria": [{"id": "c", "description": "d"}],
        "steps": [
            {"id": f"s{i}", "title": f"step {i}", "depends_on": [], "completion_evidence": "output"}
            for i in range(steps)
        ],
    }


def test_the_replans_sample_is_one_trace_of_the_run_its_versions_and_its_attempts() -> None:
    """The sample gives one trace: the run as the root, three `plan` spans under it, each of the twelve attempts
    under the version it started in, and the late result under the version it landed in."""
    found = spans(_records(SAMPLE))
    (root,) = _by(found, "run")
    assert {span.trace_id for span in found} == {hashlib.sha256(b"plantrail/login-fix-replans").digest()[:16]}
    assert root.parent_id is None and root.name == "invoke_agent" and root.status == "ok"
    assert _attrs(root)["gen_ai.conversation.id"] == "login-fix-replans"
    versions = _by(found, "version")
    assert [_attrs(v)["plantrail.plan.version"] for v in versions] == [1, 2, 3]
    assert all(v.parent_id == root.span_id and v.name == "plan" for v in versions)
    assert all(_attrs(v)["gen_ai.operation.name"] == "plan" for v in versions)
    by_version = {_attrs(v)["plantrail.plan.version"]: v.span_id for v in versions}
    attempts = _by(found, "attempt")
    assert len(attempts) == 12
    assert all(a.parent_id == by_version[_attrs(a)["plantrail.plan.version"]] for a in attempts)
    (late,) = _by(found, "late")
    assert late.parent_id == by_version[2] and _attrs(late)["plantrail.late.why"] == "SUPERSEDED_VERSION"
    assert len(found) == 17 and all(span.end_seq is not None for span in found)


def test_the_ids_are_derived_from_the_run_and_the_seq_that_opened_each_span() -> None:
    """A span's id is SHA-256 over the run, its kind and its opening seq, so two projections are equal."""
    records = _records(SAMPLE)
    first, second = spans(records), spans(records)
    assert first == second
    diagnose = _attempt(first, "diagnose", 1)
    expected = hashlib.sha256(b"login-fix-replans\0attempt\x008").digest()[:8]
    assert diagnose.span_id == expected == span_id("login-fix-replans", "attempt", 8)
    assert len({span.span_id for span in first}) == len(first)


def test_a_replan_links_to_the_spans_holding_its_causes_and_says_so_in_an_attribute() -> None:
    """Version 2 links to the diagnose attempt (cause seq 10), version 3 to the fix attempt (cause seq 20), each
    link also written as `plantrail.link.cause`."""
    found = spans(_records(SAMPLE))
    versions = {_attrs(v)["plantrail.plan.version"]: v for v in _by(found, "version")}
    for version, step, cause in ((2, "diagnose", 10), (3, "fix", 20)):
        target = _attempt(found, step, version - 1)
        (link,) = versions[version].links
        assert (link.span_id, link.relation) == (target.span_id, "cause")
        assert dict(link.attributes) == {"plantrail.seq": cause}
        assert _attrs(versions[version])["plantrail.link.cause"] == (target.span_id.hex(),)
    assert versions[1].links == () and _attrs(versions[1])["plantrail.plan.replaced_by"] == 2


def test_a_late_result_links_to_the_attempt_it_belonged_to() -> None:
    """check-config's attempt ends superseded at the replan; its late completion is a span linked to it."""
    found = spans(_records(SAMPLE))
    cut = _attempt(found, "check-config", 1)
    assert _attrs(cut)["plantrail.attempt.outcome"] == "superseded" and cut.end_seq == 11
    (late,) = _by(found, "late")
    assert [(link.span_id, link.relation) for link in late.links] == [(cut.span_id, "attempt")]
    assert _attrs(late)["plantrail.link.attempt"] == (cut.span_id.hex(),)
    assert late.start_seq == late.end_seq == 12 and [e.name for e in late.events] == ["step.completed"]


def test_evidence_leaves_as_a_digest_and_a_size_unless_payloads_are_asked_for() -> None:
    """By default no evidence text is in any attribute; with payloads it is there as it was recorded."""
    records = _records(SAMPLE)
    text = records[3].data.evidence[0]  # type: ignore[union-attr]
    digested = _attempt(spans(records), "reproduce", 1)
    assert _attrs(digested)["plantrail.evidence.sha256"] == ("sha256:" + hashlib.sha256(text.encode()).hexdigest(),)
    assert _attrs(digested)["plantrail.evidence.size"] == (len(text.encode()),)
    everything = repr(spans(records))
    assert text not in everything
    plain = _attempt(spans(records, payloads=True), "reproduce", 1)
    assert _attrs(plain)["plantrail.evidence"] == (text,)


def test_each_record_is_an_event_of_the_span_it_concerns() -> None:
    """Every record of the sample is exactly one span event, on its attempt, its version or the run."""
    records = _records(SAMPLE)
    found = spans(records)
    seqs = sorted(dict(e.attributes)["plantrail.seq"] for span in found for e in span.events)
    assert seqs == [r.seq for r in records]
    fix = _attempt(found, "fix", 2)
    assert [e.name for e in fix.events] == ["step.started", "step.completed"]
    (root,) = _by(found, "run")
    assert [e.name for e in root.events] == ["log.opened", "run.finished"]


def test_spans_end_when_the_log_says_and_an_unfinished_run_stays_open(tmp_path: Path) -> None:
    """An attempt's span is handed back by the record that ends it; the run and its version stay open, marked
    `plantrail.open`, until a final finish ends them in one step."""
    log = tmp_path / "run.jsonl"
    with Ledger.create(log, _draft()) as ledger:
        ledger.start("s0")
        ledger.complete("s0", "done")
        ledger.start("s1")
    projector = SpanProjector()
    ended = [[s.kind for s in projector.add(record)] for record in _records(log)]
    assert ended == [[], [], [], ["attempt"], []]
    still = projector.still_open()
    assert sorted(s.kind for s in still) == ["attempt", "run", "version"]
    assert all(s.end_seq is None and _attrs(s)["plantrail.open"] is True for s in still)
    with Ledger.open(log) as ledger:
        ledger.finish("failed", "gave up")
    last = _records(log)[-1]
    finished = projector.add(last)
    assert [s.kind for s in finished] == ["attempt", "version", "run"]
    assert _attrs(finished[0])["plantrail.attempt.outcome"] == "unfinished"
    assert finished[-1].status == "error" and finished[-1].status_message == "gave up"
    assert projector.still_open() == []


def test_a_retry_links_to_the_attempt_it_replaced_and_a_failure_is_an_error(tmp_path: Path) -> None:
    """A step failed and started again: the second attempt links to the first (`previous_attempt`), whose span
    has status error with the failure's text."""
    log = tmp_path / "run.jsonl"
    with Ledger.create(log, _draft(1)) as ledger:
        ledger.start("s0")
        ledger.fail("s0", "tests did not build")
        ledger.start("s0")
        ledger.abandon("s0", "the worker went away")
        ledger.start("s0")
    found = spans(_records(log))
    first, second, third = sorted(_by(found, "attempt"), key=lambda s: s.start_seq)
    assert first.status == "error" and first.status_message == "tests did not build"
    assert [(link.span_id, link.relation) for link in second.links] == [(first.span_id, "previous_attempt")]
    assert dict(second.links[0].attributes) == {"plantrail.attempt.outcome": "failed"}
    assert _attrs(second)["plantrail.attempt.outcome"] == "abandoned" and second.end_seq == 5
    assert [(link.span_id, link.relation) for link in third.links] == [(second.span_id, "previous_attempt")]


def test_a_fork_links_to_its_parent_run_at_the_fork_point(tmp_path: Path) -> None:
    """A forked run's first version links to the parent run's root span (in the parent's trace), naming the
    fork's seq, and it is a trace of its own."""
    child = tmp_path / "retry.jsonl"
    Ledger.fork(SAMPLE, child, at_seq=5, reason="try the other fix", run="retry").close()
    found = spans(_records(child))
    assert {s.trace_id for s in found} == {trace_id("retry")}
    (version,) = _by(found, "version")
    (link,) = version.links
    assert (link.trace_id, link.span_id, link.relation) == (
        trace_id("login-fix-replans"),
        span_id("login-fix-replans", "run", 0),
        "fork_parent",
    )
    assert dict(link.attributes)["plantrail.fork.seq"] == 5
    assert _attrs(version)["plantrail.link.fork_parent"] == (
        f"{trace_id('login-fix-replans').hex()}-{span_id('login-fix-replans', 'run', 0).hex()}",
    )


class _Traced:
    """A record with the optional ``trace`` member a command's trace context adds (read as a dict)."""

    def __init__(self, record: Record, trace: dict[str, str]) -> None:
        self._record = record
        self.trace = trace

    def __getattr__(self, name: str) -> Any:
        return getattr(self._record, name)


def test_a_record_carrying_a_trace_context_links_its_span_to_the_callers_span() -> None:
    """The attempt whose start carried a W3C traceparent links to that span (relation `caller`), with the
    tracestate, and names it in `plantrail.link.caller`."""
    caller_trace, caller_span = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
    context = {"traceparent": f"00-{caller_trace}-{caller_span}-01", "tracestate": "vendor=1"}
    records: list[Any] = _records(SAMPLE)
    records[2] = _Traced(records[2], context)
    found = spans(records)
    reproduce = _attempt(found, "reproduce", 1)
    (link,) = reproduce.links
    assert (link.trace_id.hex(), link.span_id.hex(), link.relation) == (caller_trace, caller_span, "caller")
    assert dict(link.attributes) == {"plantrail.seq": 2, "w3c.tracestate": "vendor=1"}
    assert _attrs(reproduce)["plantrail.link.caller"] == (f"{caller_trace}-{caller_span}",)
    assert sum(len(s.links) for s in found) == sum(len(s.links) for s in spans(_records(SAMPLE))) + 1


def test_only_a_well_formed_traceparent_is_read() -> None:
    """A traceparent of the wrong shape, version ff or an all-zero id names no span."""
    good = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
    assert parse_traceparent(good) == (bytes.fromhex(good[3:35]), bytes.fromhex(good[36:52]))
    for bad in (good.upper(), "ff" + good[2:], f"00-{'0' * 32}-00f067aa0ba902b7-01", good[:-1], 7, None):
        assert parse_traceparent(bad) is None


def test_a_result_after_the_final_finish_is_a_late_span_under_the_ended_run(tmp_path: Path) -> None:
    """A completion that lands after the run finished is a late span whose parent is the run's span, linked to
    its attempt; the run is not opened again."""
    log = tmp_path / "run.jsonl"
    with Ledger.create(log, _draft(1)) as ledger:
        ledger.start("s0")
        ledger.finish("cancelled", "stopped")
        ledger.complete("s0", "it finished anyway")
    found = spans(_records(log))
    assert [s.kind for s in found] == ["attempt", "version", "run", "late"]
    attempt, _, root, late = found
    assert _attrs(attempt)["plantrail.attempt.outcome"] == "unfinished"
    assert late.parent_id == root.span_id and _attrs(late)["plantrail.late.why"] == "RUN_FINISHED"
    assert [(link.span_id, link.relation) for link in late.links] == [(attempt.span_id, "attempt")]


def test_every_sample_projects_and_a_restart_at_any_seq_sends_each_ended_span_once() -> None:
    """For every sample log and every seq a follower could have stopped at, the spans ended up to it plus those a
    restarted projector hands back ending after it are exactly the spans of the whole log, each once."""
    logs = [p for p in sorted(SAMPLE.parent.glob("*.jsonl")) if p.name != "claude-session.jsonl"]  # a transcript
    assert len(logs) >= 9
    for sample in logs:
        records = _records(sample)
        whole = [s for s in spans(records) if s.end_seq is not None]
        assert len({s.span_id for s in spans(records)}) == len(spans(records)), sample.name
        for stop in range(len(records)):
            first = SpanProjector()
            sent = [s for r in records[: stop + 1] for s in first.add(r)]
            again = SpanProjector()
            resumed = [s for r in records for s in again.add(r) if s.end_seq is not None and s.end_seq > stop]
            assert sent + resumed == whole, (sample.name, stop)


def test_a_trace_context_held_as_an_object_links_as_a_mapping_does() -> None:
    """The envelope's trace member read as an object with `traceparent` and `tracestate` (no tracestate here)
    gives the same caller link as the mapping form, without the tracestate attribute."""
    from types import SimpleNamespace

    parent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
    records: list[Any] = _records(SAMPLE)
    records[11] = _Traced(records[11], {})
    records[11].trace = SimpleNamespace(traceparent=parent, tracestate=None)  # the replan to version 2
    found = spans(records)
    version = next(s for s in _by(found, "version") if _attrs(s)["plantrail.plan.version"] == 2)
    assert [(link.relation, link.span_id.hex(), dict(link.attributes)) for link in version.links] == [
        ("cause", _attempt(found, "diagnose", 1).span_id.hex(), {"plantrail.seq": 10}),
        ("caller", "00f067aa0ba902b7", {"plantrail.seq": 11}),
    ]
