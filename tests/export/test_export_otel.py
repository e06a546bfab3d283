"""`plantrail export otel` against an OTLP/HTTP receiver in the test process: the exact protobuf it sends (spans,
parents, attributes, links), the same spans a second time, a store's runs, --follow as a run grows and again
after a restart, and the refusals."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from plantrail.cli.main import plantrail
from plantrail.ledger.api import Ledger
from tests.helpers.otlp import Collector

SAMPLE = Path(__file__).resolve().parents[2] / "samples" / "login-fix-replans.jsonl"


@pytest.fixture
def collector() -> Iterator[Collector]:
    receiver = Collector()
    yield receiver
    receiver.close()


def _export(*args: str) -> Any:
    result = CliRunner().invoke(plantrail, ["export", "otel", *args, "--json"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


def _attrs(span: Any) -> dict[str, Any]:
    def value(v: Any) -> Any:
        kind = v.WhichOneof("value")
        if kind == "array_value":
            return tuple(value(x) for x in v.array_value.values)
        return getattr(v, kind)

    return {a.key: value(a.value) for a in span.attributes}


def _by_name(spans: list[Any]) -> dict[str, list[Any]]:
    found: dict[str, list[Any]] = {}
    for span in spans:
        found.setdefault(span.name, []).append(span)
    return found


def test_the_replans_sample_arrives_as_one_trace_with_its_links(collector: Collector) -> None:
    """The sample is one trace of 17 spans: the run, three `plan` spans under it, twelve attempts under their
    versions and the late result; the protobuf carries the replans' links to their causes and the late
    result's link to its attempt, each also an attribute."""
    summary = _export(str(SAMPLE), "--endpoint", collector.endpoint)
    spans = collector.spans()
    assert summary["runs"] == [{"run": "login-fix-replans", "trace_id": spans[0].trace_id.hex(), "spans": 17}]
    assert len(spans) == 17 and len({s.trace_id for s in spans}) == 1
    names = _by_name(spans)
    (root,) = names["invoke_agent"]
    assert root.parent_span_id == b"" and root.status.code == 1  # STATUS_CODE_OK
    assert _attrs(root)["gen_ai.operation.name"] == "invoke_agent"
    plans = sorted(names["plan"], key=lambda s: _attrs(s)["plantrail.plan.version"])
    assert [_attrs(p)["plantrail.plan.version"] for p in plans] == [1, 2, 3]
    assert all(p.parent_span_id == root.span_id for p in plans)
    by_id = {s.span_id: s for s in spans}
    attempts = [s for s in spans if s.name.startswith("step ")]
    assert len(attempts) == 12
    assert all(
        _attrs(by_id[a.parent_span_id])["plantrail.plan.version"] == _attrs(a)["plantrail.plan.version"]
        for a in attempts
    )
    for plan, cause_step, cause_seq in ((plans[1], "diagnose", 10), (plans[2], "fix", 20)):
        (link,) = plan.links
        target = by_id[link.span_id]
        assert target.name == f"step {cause_step}" and link.trace_id == root.trace_id
        assert _attrs(link) == {"plantrail.seq": cause_seq}
        assert _attrs(plan)["plantrail.link.cause"] == (link.span_id.hex(),)
    (late,) = names["late check-config"]
    (link,) = late.links
    attempt = by_id[link.span_id]
    assert attempt.name == "step check-config" and _attrs(attempt)["plantrail.attempt.outcome"] == "superseded"
    assert _attrs(late)["plantrail.link.attempt"] == (link.span_id.hex(),)
    assert [e.name for e in late.events] == ["step.completed"]
    evidence = [a for a in _attrs(attempts[0]) if a.startswith("plantrail.evidence")]
    assert sorted(evidence) == ["plantrail.evidence.count", "plantrail.evidence.sha256", "plantrail.evidence.size"]


def test_a_second_export_sends_the_same_spans(collector: Collector) -> None:
    """Exporting twice sends the same span ids, parents, times, attributes, events and links."""
    _export(str(SAMPLE), "--endpoint", collector.endpoint)
    first = [s.SerializeToString(deterministic=True) for s in collector.spans()]
    _export(str(SAMPLE), "--endpoint", collector.endpoint)
    second = [s.SerializeToString(deterministic=True) for s in collector.spans()[len(first) :]]
    assert first == second


def test_payloads_leave_only_when_asked_for(collector: Collector) -> None:
    """No evidence text is in the protobuf by default; with --with-payloads it is."""
    text = b"npm test -- tests/login.test.ts: 6 passed at 3f9c2e1"
    _export(str(SAMPLE), "--endpoint", collector.endpoint)
    assert not any(text in r.SerializeToString() for r in collector.requests)
    _export(str(SAMPLE), "--endpoint", collector.endpoint, "--with-payloads")
    assert text in collector.requests[-1].SerializeToString()


def _draft(steps: int) -> dict[str, Any]:
    return {
        "goal": "g",
        "acceptance_criteria": [{"id": "c", "description": "d"}],
        "steps": [
            {"id": f"s{i}", "title": f"step {i}", "depends_on": [], "completion_evidence": "out"} for i in range(steps)
        ],
    }


def test_a_store_without_a_log_sends_each_run_as_its_trace(tmp_path: Path, collector: Collector) -> None:
    """With --store and no LOG every run of the runs folder is sent, each as a trace of its own."""
    for name in ("a", "b"):
        with Ledger.create(tmp_path / f"{name}.jsonl", _draft(1), run=name) as ledger:
            ledger.start("s0")
    summary = _export("--store", str(tmp_path), "--endpoint", collector.endpoint)
    assert [r["run"] for r in summary["runs"]] == ["a", "b"]
    assert len({s.trace_id for s in collector.spans()}) == 2
    opened = [s for s in collector.spans() if _attrs(s).get("plantrail.open")]
    assert sorted(s.name for s in opened) == ["invoke_agent", "invoke_agent", "plan", "plan", "step s0", "step s0"]


def test_refusals_are_coded_and_send_nothing(tmp_path: Path, collector: Collector) -> None:
    """No LOG and no store is a usage error; a receiver that cannot be reached is EXPORT_FAILED (exit 4)."""
    from plantrail.cli.main import main

    env = {k: v for k, v in os.environ.items() if k != "PLANTRAIL_STORE"}
    done = subprocess.run(
        [sys.executable, "-m", "plantrail", "export", "otel"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    assert done.returncode == 2 and "error[USAGE]: export otel needs a LOG or --store URL" in done.stderr
    code = main(["export", "otel", str(SAMPLE), "--endpoint", "http://127.0.0.1:1/v1/traces", "--timeout", "1"])
    assert code == 4 and collector.spans() == []


def _wait(until: Callable[[], bool], what: str, seconds: float = 60) -> None:
    deadline = time.monotonic() + seconds
    while not until():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def _follower(log: Path, endpoint: str) -> subprocess.Popen[str]:
    argv = [
        sys.executable,
        "-m",
        "plantrail",
        "export",
        "otel",
        str(log),
        "--follow",
        "--endpoint",
        endpoint,
        "--interval",
        "0.05",
        "--json",
    ]
    return subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _stop(process: subprocess.Popen[str]) -> str:
    process.send_signal(signal.SIGINT)
    out, err = process.communicate(timeout=60)
    assert process.returncode == 0, err
    return out


def test_follow_sends_each_span_as_it_ends_and_resumes_without_duplicates(tmp_path: Path, collector: Collector) -> None:
    """A follower sends an attempt's span when its result lands and nothing still open; stopped and started
    again, it sends only what ended since its mark (beside the log), ending with the run's span: every span
    exactly once, the same as a one-shot export of the whole run."""
    log = tmp_path / "run.jsonl"
    ledger = Ledger.create(log, _draft(3), run="live")
    follower = _follower(log, collector.endpoint)
    try:
        ledger.start("s0")
        ledger.complete("s0", "first")
        _wait(lambda: len(collector.spans()) == 1, "the first attempt's span")
        assert collector.spans()[0].name == "step s0"
        ledger.start("s1")
        ledger.fail("s1", "broke")
        _wait(lambda: len(collector.spans()) == 2, "the failed attempt's span")
        time.sleep(0.3)  # a few more reads: nothing open is sent
        assert [s.name for s in collector.spans()] == ["step s0", "step s1"]
    finally:
        out = _stop(follower)
    assert [json.loads(line)["spans"] for line in out.splitlines()] == [1, 1]
    mark = json.loads((tmp_path / "run.otel.json").read_text())
    assert mark == {"run": "live", "seq": 5}  # the failure, seq 5, ended the last span sent
    ledger.start("s2")  # appended while nobody follows
    ledger.complete("s2", "third")
    follower = _follower(log, collector.endpoint)
    try:
        _wait(lambda: len(collector.spans()) == 3, "the span that ended while stopped")
        ledger.finish("failed", "s1 stays broken")
        _wait(lambda: len(collector.spans()) == 5, "the version's and the run's spans")
        time.sleep(0.3)
    finally:
        _stop(follower)
        ledger.close()
    followed = collector.spans()
    assert [s.name for s in followed] == ["step s0", "step s1", "step s2", "plan", "invoke_agent"]
    assert len({s.span_id for s in followed}) == len(followed)
    one_shot = Collector()
    try:
        _export(str(log), "--endpoint", one_shot.endpoint)
        assert sorted(s.SerializeToString(deterministic=True) for s in one_shot.spans()) == sorted(
            s.SerializeToString(deterministic=True) for s in followed
        )
    finally:
        one_shot.close()


def test_a_torn_tail_is_reported_after_the_valid_part_is_sent(tmp_path: Path, collector: Collector) -> None:
    """A log whose last line was cut short sends the spans of its valid part (the run still open) and then
    reports TORN_TAIL (exit 3); a bad --endpoint is a usage error that sends nothing."""
    from plantrail.cli.main import main

    log = tmp_path / "torn.jsonl"
    log.write_bytes(SAMPLE.read_bytes()[:-30])
    assert main(["export", "otel", str(log), "--endpoint", collector.endpoint]) == 3
    spans = collector.spans()
    assert len(spans) == 17
    root = next(s for s in spans if s.name == "invoke_agent")
    assert _attrs(root)["plantrail.open"] is True and "plantrail.run.outcome" not in _attrs(root)
    assert main(["export", "otel", str(SAMPLE), "--endpoint", "localhost:4318"]) == 2
    assert len(collector.spans()) == 17


def test_following_a_store_picks_up_new_runs_and_keeps_marks_in_the_marks_folder(
    tmp_path: Path, collector: Collector
) -> None:
    """`--store FOLDER --follow --marks M` sends the spans of every run, a run created while it follows
    included, and keeps one mark per run in M."""
    runs, marks = tmp_path / "runs", tmp_path / "marks"
    runs.mkdir()
    with Ledger.create(runs / "a.jsonl", _draft(1), run="a") as ledger:
        ledger.start("s0")
        ledger.complete("s0", "done")
    argv = [
        sys.executable,
        "-m",
        "plantrail",
        "export",
        "otel",
        "--store",
        str(runs),
        "--follow",
        "--marks",
        str(marks),
        "--endpoint",
        collector.endpoint,
        "--interval",
        "0.05",
    ]
    follower = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        _wait(lambda: len(collector.spans()) == 1, "run a's attempt")
        with Ledger.create(runs / "b.jsonl", _draft(1), run="b") as ledger:
            ledger.start("s0")
            ledger.fail("s0", "no")
        _wait(lambda: len(collector.spans()) == 2, "run b's attempt")
    finally:
        _stop(follower)
    traces = [s.trace_id for s in collector.spans()]
    assert len(set(traces)) == 2
    assert json.loads((marks / "a.otel.json").read_text()) == {"run": "a", "seq": 3}
    assert json.loads((marks / "b.otel.json").read_text()) == {"run": "b", "seq": 3}
    assert not list(runs.glob("*.otel.json"))  # nothing written beside the runs


def test_a_database_run_is_exported_and_followed_with_its_marks_in_a_folder(
    tmp_path: Path, collector: Collector
) -> None:
    """A PostgreSQL run exports as a file run does; following it needs --marks (USAGE without, nothing sent),
    and with it the spans arrive and the mark is kept in that folder."""
    from tests.helpers.stores import postgres_url, unique_run

    run = unique_run("otel")
    target = f"{postgres_url()}#{run}"
    ledger = Ledger.create(target, _draft(2), run=run)
    try:
        ledger.start("s0")
        ledger.complete("s0", "done")
        summary = _export(target, "--endpoint", collector.endpoint)
        assert summary["runs"] == [{"run": run, "trace_id": collector.spans()[0].trace_id.hex(), "spans": 3}]
        refused = subprocess.run(
            [sys.executable, "-m", "plantrail", "export", "otel", target, "--follow", "--endpoint", collector.endpoint],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert refused.returncode == 2 and "needs --marks FOLDER" in refused.stderr
        assert len(collector.spans()) == 3
        argv = [
            sys.executable,
            "-m",
            "plantrail",
            "export",
            "otel",
            target,
            "--follow",
            "--marks",
            str(tmp_path / "marks"),
            "--endpoint",
            collector.endpoint,
            "--interval",
            "0.05",
        ]
        follower = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            _wait(lambda: len(collector.spans()) == 4, "the completed attempt, followed")
            ledger.start("s1")
            ledger.block("s1", "waiting")
            _wait(lambda: len(collector.spans()) == 5, "the blocked attempt")
        finally:
            _stop(follower)
    finally:
        ledger.close()
    once, followed = collector.spans()[:3], collector.spans()[3:]
    assert [s.name for s in followed] == ["step s0", "step s1"]
    assert followed[0].span_id in {s.span_id for s in once}  # the same span as the one-shot export's
    assert json.loads((tmp_path / "marks" / f"{run}.otel.json").read_text()) == {"run": run, "seq": 5}


#: The W3C trace contexts a traced run's commands were issued in: (trace id, span id) of each caller's span.
_CALLERS = {
    "create": ("4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"),
    "start": ("4bf92f3577b34da6a3ce929d0e0e4736", "53995c3f42cd8ad8"),
    "complete": ("0af7651916cd43dd8448eb211c80319c", "b7ad6b7169203331"),
    "replan": ("4bf92f3577b34da6a3ce929d0e0e4736", "a2fb4a1d1a96d312"),
}


def _traceparent(command: str, flags: str = "01") -> str:
    trace, span = _CALLERS[command]
    return f"00-{trace}-{span}-{flags}"


def test_a_run_recorded_in_trace_contexts_links_each_span_to_its_callers(tmp_path: Path, collector: Collector) -> None:
    """A run recorded through the CLI, some commands with --traceparent (one with --tracestate), one with
    $TRACEPARENT and $TRACESTATE, the rest in none, exported with `export otel`: each span holding a traced record
    links to the caller's span, with its trace id, span id and tracestate as given, its flags, the seq of the
    record that carried it; the spans whose records carried none have no caller link."""
    log = tmp_path / "traced.jsonl"
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps(_draft(2)))
    untraced = {"TRACEPARENT": None, "TRACESTATE": None}  # the test's own environment names no caller
    runner = CliRunner()

    def run(*args: str, env: dict[str, str | None] = untraced) -> None:
        result = runner.invoke(plantrail, list(args), env=env)
        assert result.exit_code == 0, (args, result.output)

    run("create", str(log), "--plan", str(plan), "--traceparent", _traceparent("create"), "--tracestate", "vendor=1")
    run("start", str(log), "s0", "--traceparent", _traceparent("start", "00"))
    complete_env = {"TRACEPARENT": _traceparent("complete"), "TRACESTATE": "rojo=00f067aa0ba902b7,congo=t61rcWkgMzE"}
    run("complete", str(log), "s0", "--evidence", "out", env=complete_env)
    run("start", str(log), "s1")
    replan = ["replan", str(log), "--plan", str(plan), "--reason", "new_constraint", "--why", "again"]
    run(*replan, "--caused-by", "3", "--traceparent", _traceparent("replan"))
    run("finish", str(log), "--outcome", "cancelled", "--reason", "stopped")
    traced = {r["seq"]: r.get("trace") for r in map(json.loads, log.read_text().splitlines())}
    assert [seq for seq, trace in traced.items() if trace] == [1, 2, 3, 5]

    summary = _export(str(log), "--endpoint", collector.endpoint)
    spans = collector.spans()
    assert summary["runs"][0]["spans"] == len(spans) == 5  # the run, two versions, two attempts
    names = _by_name(spans)
    plans = sorted(names["plan"], key=lambda s: _attrs(s)["plantrail.plan.version"])
    (s0,), (s1,), (root,) = names["step s0"], names["step s1"], names["invoke_agent"]

    def callers(span: Any) -> list[tuple[str, str, bool, dict[str, Any]]]:
        """The span's links to spans of other traces: ids, whether the linked span is remote, attributes."""
        return [
            (link.trace_id.hex(), link.span_id.hex(), _remote(link), _attrs(link))
            for link in span.links
            if link.trace_id != root.trace_id
        ]

    create, start, complete, again = (_CALLERS[c] for c in ("create", "start", "complete", "replan"))
    assert callers(plans[0]) == [(*create, True, {"plantrail.seq": 1, "w3c.tracestate": "vendor=1"})]
    assert callers(s0) == [
        (*start, True, {"plantrail.seq": 2}),
        (*complete, True, {"plantrail.seq": 3, "w3c.tracestate": complete_env["TRACESTATE"]}),
    ]
    assert callers(plans[1]) == [(*again, True, {"plantrail.seq": 5})]
    assert callers(s1) == callers(root) == []
    assert _attrs(s0)["plantrail.link.caller"] == tuple(f"{t}-{s}" for t, s in (start, complete))
    assert _attrs(plans[1])["plantrail.link.caller"] == (f"{again[0]}-{again[1]}",)
    (cause,) = [link for span in spans for link in span.links if link.trace_id == root.trace_id]
    assert (cause.span_id, _remote(cause)) == (s0.span_id, False)  # the replan's cause: a span of this export


def _remote(link: Any) -> bool:
    """Whether an OTLP link says its span is remote (SPAN_FLAGS_CONTEXT_IS_REMOTE_MASK, its HAS_IS_REMOTE set)."""
    assert link.flags & 0x100, "the link says whether its span is remote"
    return bool(link.flags & 0x200)
