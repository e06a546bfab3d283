"""A file's follower: it gives a record only once it is complete and checked, reads on across a repair, and
says so (a Rewound notice) when the log is cut back below what it gave or another file is put at the path."""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from plantrail.ledger.api import Ledger
from plantrail.ledger.rules.attempts import Complete, Start
from plantrail.ledger.stores.jsonl.log import repair
from plantrail.ledger.stores.jsonl.run import FileRun
from plantrail.ledger.stores.values import Rewound
from plantrail.ledger.vocabulary.events import Record
from tests.conftest import Clock

Step = Callable[[], object]


def _followed(path: Path, after: int, steps: list[Step], given: list[list[Record]] | None = None) -> list[list[Record]]:
    """Every batch the follower gives after seq ``after`` (into ``given``, which a step may look at) while
    ``steps`` are done, one before each of its waits (the follower stops at the wait after the last)."""
    todo: Iterator[Step] = iter(steps)
    given = [] if given is None else given

    def stop() -> bool:
        step = next(todo, None)
        if step is None:
            return True
        step()
        return False

    with FileRun(path) as run:
        given.extend(run.follow(after=after, poll=0.0, stop=stop))
    return given


def _seqs(batches: list[list[Record]]) -> list[object]:
    """The batches as seqs, a notice as ("rewound", kind, shown, kept, from_seq)."""
    out: list[object] = []
    for batch in batches:
        if isinstance(batch, Rewound):
            out.append(("rewound", batch.kind, batch.shown, batch.kept, batch.from_seq))
        else:
            out += [r.seq for r in batch]
    return out


def _append(path: Path, data: bytes) -> None:
    with path.open("ab") as f:
        f.write(data)


def _recorded(path: Path, clock: Clock, draft: dict[str, object]) -> Ledger:
    ledger = Ledger.create(path, draft, clock=clock, fsync="none", nonce="0" * 32)
    ledger.start("reproduce")
    return ledger


def _last_line(path: Path) -> bytes:
    return path.read_bytes().splitlines(keepends=True)[-1]


def _writer(path: Path, clock: Clock) -> Ledger:
    return Ledger.open(path, clock=clock, fsync="none", repair=True)


def test_a_line_without_its_newline_is_given_only_once_complete(
    tmp_path: Path, clock: Clock, draft: dict[str, object]
) -> None:
    """A whole record's bytes without the newline are not given; the newline makes it a record, given once."""
    log = tmp_path / "run.jsonl"
    _recorded(log, clock, draft).close()
    with _writer(log, clock) as ledger:
        ledger.complete("reproduce", ["the 401 reproduces"])
    line = _last_line(log)
    os.truncate(log, log.stat().st_size - len(line))
    given: list[list[Record]] = []
    before_newline: list[object] = []
    _followed(
        log,
        2,
        [
            lambda: _append(log, line[:-1]),
            lambda: before_newline.extend(_seqs(given)),
            lambda: _append(log, b"\n"),
        ],
        given,
    )
    assert before_newline == []
    assert _seqs(given) == [3]


def test_a_group_commit_is_given_once_its_end_is_read(tmp_path: Path, clock: Clock, draft: dict[str, object]) -> None:
    """The records of a group commit written without its end are not given; with the end they are, together."""
    log = tmp_path / "run.jsonl"
    _recorded(log, clock, draft).close()
    with _writer(log, clock) as ledger:
        ledger.execute_many([Complete(step="reproduce", evidence=["it fails"]), Start(step="diagnose")])
    lines = log.read_bytes().splitlines(keepends=True)
    group = lines[3:]
    assert b'"part":"begin"' in group[0] and b'"part":"end"' in group[-1]
    os.truncate(log, log.stat().st_size - sum(map(len, group)))
    given: list[list[Record]] = []
    before_end: list[object] = []
    _followed(
        log,
        2,
        [
            lambda: _append(log, b"".join(group[:-1])),
            lambda: before_end.extend(_seqs(given)),
            lambda: _append(log, group[-1]),
        ],
        given,
    )
    assert before_end == []
    assert _seqs(given) == [3, 4, 5, 6]
    assert len([b for b in given if b]) == 1  # the group came as one batch, after its end


def test_a_repair_is_read_on_from_where_the_follower_stands(
    tmp_path: Path, clock: Clock, draft: dict[str, object]
) -> None:
    """A torn fragment is never given; its repair (cut, log.repaired appended) and the appends after it are read
    on without a notice."""
    log = tmp_path / "run.jsonl"
    _recorded(log, clock, draft).close()

    def append_after_repair() -> None:
        with _writer(log, clock) as ledger:
            ledger.complete("reproduce", ["after the repair"])

    batches = _followed(
        log,
        2,
        [
            lambda: _append(log, b'{"v":1,"seq":3,"ts":"2026-01-01T00:00:00Z","run":"run","type":"step.completed"'),
            lambda: repair(log),
            append_after_repair,
        ],
    )
    given = [r for b in batches for r in b]
    assert [(r.seq, r.type) for r in given] == [(3, "log.repaired"), (4, "step.completed")]
    assert not any(isinstance(b, Rewound) for b in batches)


def test_a_cut_below_what_was_given_is_said_and_the_log_read_again(
    tmp_path: Path, clock: Clock, draft: dict[str, object]
) -> None:
    """A record given and then cut off (the file truncated into it, then repaired) is named in a notice; the log
    is given again from seq 0, with the repair record in the given record's place."""
    log = tmp_path / "run.jsonl"
    _recorded(log, clock, draft).close()

    def complete() -> None:
        with _writer(log, clock) as ledger:
            ledger.complete("reproduce", ["done, then torn"])

    batches = _followed(
        log,
        2,
        [complete, lambda: os.truncate(log, log.stat().st_size - 30), lambda: repair(log)],
    )
    seqs = _seqs(batches)
    assert seqs[0] == 3
    assert seqs[1] == ("rewound", "cut", 3, 2, 0)
    assert seqs[2:] == [0, 1, 2, 3]
    notice = batches[1]
    assert isinstance(notice, Rewound) and "seq 3 is no longer in it" in notice.message
    assert [b for b in batches if b][-1][-1].type == "log.repaired"


def test_a_file_put_at_the_path_with_the_same_records_is_followed_on(
    tmp_path: Path, clock: Clock, draft: dict[str, object]
) -> None:
    """Another file at the path that holds everything given (a copy that grew) is followed after a notice that
    does not start over."""
    log = tmp_path / "run.jsonl"
    _recorded(log, clock, draft).close()
    other = tmp_path / "other.jsonl"

    def replace() -> None:
        shutil.copyfile(log, other)
        with _writer(other, clock) as ledger:
            ledger.complete("reproduce", ["written to the copy"])
        os.replace(other, log)

    batches = _followed(log, 2, [replace])
    assert _seqs(batches) == [("rewound", "replaced", 2, 2, 3), 3]


def test_a_file_put_at_the_path_with_another_history_is_read_from_its_start(
    tmp_path: Path, clock: Clock, draft: dict[str, object]
) -> None:
    """Another run's log at the path holds none of what was given: the notice says so and its records are given
    from seq 0."""
    log = tmp_path / "run.jsonl"
    _recorded(log, clock, draft).close()
    other = tmp_path / "other.jsonl"
    Ledger.create(other, draft, clock=clock, fsync="none", nonce="1" * 32).close()

    batches = _followed(log, 2, [lambda: os.replace(other, log)])
    assert _seqs(batches) == [("rewound", "replaced", 2, -1, 0), 0, 1]
    assert "the records shown are not all in it" in batches[0].message  # type: ignore[attr-defined]


@pytest.mark.parametrize("shrink", [30, 1])
def test_a_log_cut_back_and_regrown_past_the_follower_is_never_read_mid_line(
    tmp_path: Path, clock: Clock, draft: dict[str, object], shrink: int
) -> None:
    """Cut into the last record given, repaired and appended to until the file is longer than before: the
    follower does not read from its old offset (the middle of a line) but says what changed."""
    log = tmp_path / "run.jsonl"
    _recorded(log, clock, draft).close()

    def cut_repair_append() -> None:
        os.truncate(log, log.stat().st_size - shrink)
        repair(log)
        with _writer(log, clock) as ledger:
            ledger.start("reproduce")
            ledger.complete("reproduce", ["x" * 400])

    batches = _followed(log, 1, [cut_repair_append])
    seqs = _seqs(batches)
    assert seqs[:2] == [2, ("rewound", "cut", 2, 1, 0)]
    assert seqs[2:] == [0, 1, 2, 3, 4]


def test_a_change_between_a_read_and_the_follow_is_said(tmp_path: Path, clock: Clock, draft: dict[str, object]) -> None:
    """A run that read its log and then follows it starts where the read ended: a cut made in between is said
    and the log given again from its start, never skipped; a hash the caller names for its last record is checked
    the same way."""
    log = tmp_path / "run.jsonl"
    _recorded(log, clock, draft).close()
    with FileRun(log) as run:
        assert [r.seq for r in run.records()] == [0, 1, 2]
        os.truncate(log, log.stat().st_size - 20)
        repair(log)
        batches = list(run.follow(after=2, poll=0.0, stop=lambda: True))
    assert _seqs(batches) == [("rewound", "cut", 2, -1, 0), 0, 1, 2]
    assert batches[-1][-1].type == "log.repaired"
    with FileRun(log) as run:
        batches = list(run.follow(after=2, poll=0.0, stop=lambda: True, head="0" * 64))
    assert _seqs(batches) == [("rewound", "cut", 2, -1, 0), 0, 1, 2]
    with FileRun(log) as run:
        head = run.record_at(2).h
        assert list(run.follow(after=2, poll=0.0, stop=lambda: True, head=head)) == []
