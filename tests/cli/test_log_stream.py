"""The record timeline: log streams, filters, tails from the end, follows a growing log; show prints one event."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from plantrail.ledger.stores.jsonl.log import LogReader
from plantrail.ledger.timeline import Filter, follow, full_entry, timeline, timeline_entry
from plantrail.projections.state import evolve, initial
from tests.conftest import CliResult
from tests.stores.test_history_index import _recorded

Cli = Callable[..., CliResult]


@pytest.fixture
def log(tmp_path: Path) -> Path:
    """A recorded run with completions, failures, verdicts, replans and late results."""
    path = tmp_path / "run.jsonl"
    path.write_bytes(b"".join(_recorded(path, seed=11, moves=90)))
    return path


def _folded_entries(path: Path) -> list[dict[str, Any]]:
    """Every record's log --json item, each orphan flag found by evolving the state record by record."""
    entries = []
    state = initial()
    with LogReader(path) as reader:
        for record in reader.records():
            before = len(state.orphans)
            state = evolve(state, record)
            entry = timeline_entry(record, None)
            entries.append(entry | {"orphan": len(state.orphans) > before})
    return entries


def test_log_json_is_the_whole_document_written_as_it_goes(log: Path, run_cli: Cli) -> None:
    """log --json prints exactly the indented array of every entry, with the fold's orphan flags."""
    expected = _folded_entries(log)
    assert any(e["orphan"] for e in expected)
    result = run_cli("log", log, "--json")
    assert result.code == 0
    assert result.out == orjson.dumps(expected, option=orjson.OPT_INDENT_2).decode() + "\n"


def test_an_empty_selection_is_an_empty_array(log: Path, run_cli: Cli) -> None:
    """A filter that keeps nothing prints []."""
    assert run_cli("log", log, "--json", "--type", "run.finished").out == "[]\n"


@pytest.mark.parametrize(
    ("options", "keep"),
    [
        (["--type", "step.completed"], lambda e: e["type"] == "step.completed"),
        (["--type", "plan.replanned", "--type", "plan.created"], lambda e: e["type"].startswith("plan.")),
        (["--step", "b"], lambda e: e["summary"].startswith("b ")),
        (["--version", "2"], lambda e: e["plan_version"] == 2),
        (["--from-seq", "10", "--to-seq", "30"], lambda e: 10 <= e["seq"] <= 30),
    ],
)
def test_filters_keep_what_they_name(log: Path, run_cli: Cli, options: list[str], keep: Callable[..., bool]) -> None:
    """--type, --step, --version and a seq range select the same entries as filtering the full list."""
    expected = [e for e in _folded_entries(log) if keep(e)]
    assert expected
    assert run_cli("log", log, "--json", *options).json() == expected


@pytest.mark.parametrize("options", [[], ["--type", "step.started"], ["--from-seq", "50"], ["--version", "1"]])
def test_tail_gives_the_last_entries_a_filter_keeps(log: Path, run_cli: Cli, options: list[str]) -> None:
    """--tail N is the last N of what the other filters keep, read from the end of the log."""
    full = run_cli("log", log, "--json", *options).json()
    assert run_cli("log", log, "--json", "--tail", "7", *options).json() == full[-7:]


def test_jsonl_holds_the_full_record_one_per_line(log: Path, run_cli: Cli) -> None:
    """--jsonl prints one object per line: the entry plus the event's data and hash."""
    lines = run_cli("log", log, "--jsonl").out.splitlines()
    stored = [orjson.loads(line) for line in log.read_bytes().splitlines()]
    assert len(lines) == len(stored)
    for line, record in zip(lines, stored, strict=True):
        item = orjson.loads(line)
        assert (item["seq"], item["h"], item["data"]) == (record["seq"], record["h"], record["data"])
    expected = [orjson.loads(orjson.dumps(full_entry(r, o))) for r, o in timeline(str(log)).items]
    assert [orjson.loads(line) for line in lines] == expected


def test_human_log_prints_a_row_per_event(log: Path, run_cli: Cli) -> None:
    """The human timeline has a header and one row per event, late results marked."""
    out = run_cli("log", log).out.splitlines()
    assert out[0].split()[:3] == ["SEQ", "TIME", "(UTC)"]
    events = len(_folded_entries(log))
    assert len(out) == 2 + events + 1 and out[-1] == f"  {events} events"
    assert any("(late)" in line for line in out)


def test_a_group_commit_stays_out_of_the_human_timeline_and_log_records_show_no_plan(
    tmp_path: Path, run_cli: Cli
) -> None:
    """A group commit's bounds (log.batch) are left out of the human timeline unless --all, and out of its
    count; --json keeps every record. log.opened and log.repaired show no plan version (there is none), in the
    timeline and in show."""
    import copy

    from plantrail import Ledger
    from plantrail.ledger.rules.decide import Complete, Start
    from tests.conftest import LOGIN_DRAFT

    path = tmp_path / "batched.jsonl"
    with Ledger.create(path, copy.deepcopy(LOGIN_DRAFT), fsync="none") as ledger:
        ledger.execute_many([Start(step="reproduce"), Complete(step="reproduce", evidence=["it fails"])])
    with open(path, "ab") as f:
        f.write(b'{"v":1,"seq":')
    assert run_cli("repair", path).code == 0
    human = run_cli("log", path).out
    assert "log.batch" not in human and human.splitlines()[-1] == "  5 events"
    rows = {line.split()[4]: line.split()[5] for line in human.splitlines()[2:-1]}
    assert rows["log.opened"] == rows["log.repaired"] == "-" and rows["plan.created"] == "v1"
    every = run_cli("log", path, "--all").out
    assert every.count("log.batch") == 2 and every.splitlines()[-1] == "  7 events"
    assert [e["type"] for e in run_cli("log", path, "--json").json()].count("log.batch") == 2
    repaired = next(e["seq"] for e in run_cli("log", path, "--json").json() if e["type"] == "log.repaired")
    assert "plan v" not in run_cli("show", path, str(repaired)).out.splitlines()[0]
    assert "(plan v1)" in run_cli("show", path, "1").out.splitlines()[0]


def test_wrap_keeps_a_long_summary_whole(log: Path, run_cli: Cli) -> None:
    """--wrap puts a summary too long for the row on more lines under SUMMARY; without it the row is cut."""
    cut = run_cli("log", log, "--width", "100").out
    wrapped = run_cli("log", log, "--width", "100", "--wrap").out
    assert "…" in cut and "…" not in wrapped
    assert max(len(line) for line in wrapped.splitlines()) <= 100
    assert len(wrapped.splitlines()) > len(cut.splitlines())


def test_a_torn_tail_is_reported_after_the_valid_part(log: Path, run_cli: Cli) -> None:
    """log and log --tail print the valid part, then TORN_TAIL with exit 3."""
    with open(log, "ab") as f:
        f.write(b'{"v":1,"seq":')
    for options in ([], ["--tail", "3"]):
        result = run_cli("log", log, "--json", *options)
        assert result.code == 3
        assert "error[TORN_TAIL]" in result.err
        assert orjson.loads(result.out)


def test_show_prints_one_event_in_full(log: Path, run_cli: Cli) -> None:
    """show SEQ --json is the record with its data, hash and link; an unknown seq is UNKNOWN_SEQ."""
    records = [orjson.loads(line) for line in log.read_bytes().splitlines()]
    for record in (records[0], records[1], records[len(records) // 2], records[-1]):
        view = run_cli("show", log, str(record["seq"]), "--json").json()
        assert {k: view[k] for k in ("seq", "type", "h", "prev", "data")} == {
            k: record[k] for k in ("seq", "type", "h", "prev", "data")
        }
    assert "data:" in run_cli("show", log, "3").out
    missing = run_cli("show", log, str(len(records) + 5))
    assert missing.code == 1
    assert "error[UNKNOWN_SEQ]" in missing.err


def test_show_marks_a_late_result(log: Path, run_cli: Cli) -> None:
    """show names the late result an orphaned event became."""
    late = next(e for e in _folded_entries(log) if e["orphan"])
    view = run_cli("show", log, str(late["seq"]), "--json").json()
    assert view["orphan"]["seq"] == late["seq"]


def test_follow_yields_appended_records_and_waits_for_a_line_being_written(log: Path) -> None:
    """follow yields the records after a seq, then each new one once its line is complete."""
    lines = log.read_bytes().splitlines(keepends=True)
    log.write_bytes(b"".join(lines[:-2]))
    last = len(lines) - 3
    stream = follow(str(log), after=last - 1, poll=0.01)
    assert next(stream).seq == last

    def append() -> None:
        time.sleep(0.05)
        with open(log, "ab") as f:
            f.write(lines[-2][:10])
            f.flush()
            time.sleep(0.05)
            f.write(lines[-2][10:] + lines[-1])

    writer = threading.Thread(target=append)
    writer.start()
    assert [next(stream).seq, next(stream).seq] == [last + 1, last + 2]
    writer.join()


def test_the_library_timeline_filters_and_limits(log: Path) -> None:
    """timeline() yields the kept records in order, at most ``limit`` of them."""
    read = timeline(str(log), Filter(types={"step.started"}), limit=3)
    records = [record for record, _ in read.items]
    assert [r.type for r in records] == ["step.started"] * 3
    assert [r.seq for r in records] == sorted(r.seq for r in records)


def test_follow_on_the_command_line_stops_cleanly_on_ctrl_c(log: Path) -> None:
    """log --follow prints the log, waits, prints what is appended, and exits 0 on SIGINT."""
    lines = log.read_bytes().splitlines(keepends=True)
    log.write_bytes(b"".join(lines[:-1]))
    process = subprocess.Popen(
        [sys.executable, "-m", "plantrail", "log", str(log), "--follow", "--jsonl"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ, "COLUMNS": "120"},
    )
    try:
        assert process.stdout is not None
        for _ in range(len(lines) - 1):
            process.stdout.readline()
        with open(log, "ab") as f:
            f.write(lines[-1])
        appended = process.stdout.readline()
        if not appended:  # the follower ended: say why
            _, err = process.communicate(timeout=20)
            pytest.fail(f"log --follow exited {process.returncode} before the append: {err.decode()}")
        assert orjson.loads(appended)["seq"] == len(lines) - 1
        process.send_signal(signal.SIGINT)
        _, err = process.communicate(timeout=20)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 0, err
    assert b"Traceback" not in err


def _lines_within(stream: Any, wanted: int, seconds: float = 20.0) -> list[bytes]:
    """Up to ``wanted`` lines read from ``stream`` (a pipe) within ``seconds`` (a bound, not a timing)."""
    import select

    got: list[bytes] = []
    buffer = b""
    deadline = time.monotonic() + seconds
    fd = stream.fileno()
    while len(got) < wanted and time.monotonic() < deadline:
        ready, _, _ = select.select([fd], [], [], 0.2)
        if not ready:
            continue
        chunk = os.read(fd, 65536)
        if not chunk:
            break
        buffer += chunk
        *complete, buffer = buffer.split(b"\n")
        got += complete
    return got


def test_follow_on_the_command_line_goes_on_after_a_cut_and_a_repair(
    make_ledger: Callable[..., Any], tmp_path: Path
) -> None:
    """log --follow: a record it printed is cut into and the log repaired; it says on stderr that the record is
    gone, prints the records after the last one still there (the repair, then the appends) and keeps running."""
    from plantrail.ledger.api import Ledger
    from plantrail.ledger.stores.jsonl.log import repair

    ledger = make_ledger()
    ledger.start("reproduce")
    ledger.close()
    log = tmp_path / "run.jsonl"
    process = subprocess.Popen(
        [sys.executable, "-m", "plantrail", "log", str(log), "--follow", "--jsonl"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        assert [orjson.loads(line)["seq"] for line in _lines_within(process.stdout, 3)] == [0, 1, 2]
        os.truncate(log, log.stat().st_size - 20)  # the start it printed is torn
        repair(log)
        with Ledger.open(log, fsync="none") as again:
            again.start("reproduce")
        after: list[tuple[int, str]] = []
        while (3, "step.started") not in after and (more := _lines_within(process.stdout, 1)):
            after += [(e["seq"], e["type"]) for e in map(orjson.loads, more)]
        assert process.poll() is None
        process.send_signal(signal.SIGINT)
        _, err = process.communicate(timeout=20)
    finally:
        if process.poll() is None:
            process.kill()
    # What follows the note: the records after the last one the log still holds as printed (seq 1), or, when
    # the cut came before the follower first looked, the log again from its start.
    assert after[-2:] == [(2, "log.repaired"), (3, "step.started")]
    assert after[:-2] in ([], [(0, "log.opened"), (1, "plan.created")])
    said = b"seq 2 is no longer in it as shown" if after[:-2] == [] else b"the records shown are not all in it"
    assert b"note: " in err and said in err
    assert process.returncode == 0 and b"Traceback" not in err


def test_follow_refuses_a_json_array(log: Path, run_cli: Cli) -> None:
    """--follow with --json is a usage error (the array would never end)."""
    result = run_cli("log", log, "--follow", "--json")
    assert result.code == 2
    assert "error[USAGE]" in result.err


@pytest.mark.parametrize("batch", [1, 2, 3, 1000])
def test_the_streamed_array_is_the_same_document_at_any_batch_size(log: Path, batch: int) -> None:
    """The JSON array written a batch at a time is byte for byte orjson's indented dump of all the entries."""
    from plantrail.cli.timeline import _json_array

    read = timeline(str(log))
    entries = [timeline_entry(r, o) for r, o in timeline(str(log)).items]
    assert "".join(_json_array(read.items, batch)) == orjson.dumps(entries, option=orjson.OPT_INDENT_2).decode() + "\n"


_CUT_CASES = ["", "short", "x" * 200, "tab\there", "wide 漢字 " * 20, "e\u0301" * 90, "x" * 12 + "\u0301" * 9]


@pytest.mark.parametrize("text", [*_CUT_CASES, "x" * 60 + "\n" + "y" * 2000, "x" * 2000])
def test_the_row_cut_is_the_table_cut(text: str) -> None:
    """The timeline's fast cut of a summary gives what the shared truncate gives, for any text: one that fits,
    one cut inside printable ASCII, one whose control, wide or combining characters lie past the cut or at it."""
    from plantrail.cli.tables import CELL_MOST, truncate
    from plantrail.cli.timeline import _cut

    for width in (0, 1, 12, 13, 60, 61, CELL_MOST - 1, CELL_MOST, CELL_MOST + 5):
        assert _cut(text, width) == truncate(text, width)


@settings(max_examples=400, deadline=None)
@given(
    st.text(st.sampled_from("ab ;:\t\n\x1b\u0301\u200b漢é…"), max_size=80)
    | st.builds(lambda a, b: a + b, st.text(st.sampled_from("xy "), max_size=70), st.text(max_size=20)),
    st.integers(min_value=0, max_value=80),
)
def test_the_row_cut_is_the_table_cut_for_generated_texts(text: str, width: int) -> None:
    """The same, for texts mixing printable ASCII with what truncate escapes or measures otherwise, at any width."""
    from plantrail.cli.tables import truncate
    from plantrail.cli.timeline import _cut

    assert _cut(text, width) == truncate(text, width)


def test_a_human_row_is_its_six_fixed_columns_right_stripped(log: Path) -> None:
    """Each row of the human timeline is the six columns in their widths, right-stripped, whatever the summary
    (empty, ending in spaces, late) and past the table of formatted middle columns being emptied; a log record's
    plan column is "-"."""
    from plantrail.cli import timeline as cli_timeline
    from plantrail.ledger.timeline import summary

    rows = cli_timeline._Rows(10_000, 500)
    with LogReader(log) as reader:
        records = list(reader.records())
    for i in range(cli_timeline._MIDDLES + 40):
        record = records[i % len(records)]
        record = record.__class__(**{f: getattr(record, f) for f in record.__struct_fields__} | {"plan_version": i})
        for text, late in (("", False), ("ends in spaces  ", True), (summary(record), False)):
            kind = record.type + (" (late)" if late else "")
            plan = "-" if kind.startswith("log.") else f"v{i}"  # a log record shows no plan version
            want = rows._format.format(record.seq, record.ts[:19].replace("T", " "), record.actor, kind, plan, text)
            cut = cli_timeline._cut
            try:
                cli_timeline._cut = lambda _summary, _width, text=text: text  # type: ignore[assignment]
                got = rows.row(record, object() if late else None)  # type: ignore[arg-type]
            finally:
                cli_timeline._cut = cut
            assert got == want.rstrip() + "\n"
