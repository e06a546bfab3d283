"""Entry point: `python -m bench.run` prints machine info and a Markdown table of medians and ratios.

Rows are RowSpec entries in ROWS. A side is a function (workload, n) -> probe; the helpers
on_log, on_append, process_time and process_rss turn plain functions into sides, e.g.

    RowSpec("full replay", all_sizes, baseline=on_log(orjson_read),
            candidate=on_log(ledger.replay), target="<=3x")
"""

from __future__ import annotations

import argparse
import os
import platform
import re
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from importlib import metadata
from pathlib import Path
from typing import Final

from bench.baselines import (
    eventsourcing_replay,
    eventsourcing_sqlite_batches,
    orjson_loop_process,
    orjson_read,
    python_import_process,
    write_fsync_batches,
    write_fsync_each,
)
from bench.harness import Probe, Row, compare_values, peak_rss_mb, render_table, run_process, sample, timed
from bench.sides import (
    EVIDENCE_BYTES,
    Script,
    append_argv,
    append_batches,
    append_each,
    append_in_place,
    append_one,
    appendable_log,
    behind_log,
    cli_argv,
    evidence_log,
    fold_version_span,
    full_replay,
    make_log,
    middle_version,
    plan_events,
    plantrail_argv,
    rebuild_version,
    replay_argv,
    resume_now,
    script,
    signed_log,
    status_argv,
    verify,
    verify_pubkey,
)
from plantrail.ledger.stores.jsonl import reads

PACKAGES = ("orjson", "msgspec", "pydantic", "click", "eventsourcing", "plantrail")


@dataclass(frozen=True)
class Config:
    """What to run: event counts, repeats, and the size of fsync-bound and process rows."""

    sizes: tuple[int, ...]
    repeats: int
    append_events: int
    status_events: int = 1000
    runs_in_folder: int = 1000  # `plantrail runs`: logs in the folder (each of status_events events)
    runs_in_database: int = 10_000  # `plantrail runs --store`: runs in the database
    long_log: int = 1_000_000  # the log an append is measured on against one of short_log events
    short_log: int = 1_000
    plan_steps: int = 10_000  # the plan a start or complete is measured on against one of small_plan steps
    small_plan: int = 40
    behind: int = 1_000  # records after the snapshot in the `status` row's log that is behind


@dataclass
class Workload:
    """Generated inputs shared by all rows (cached per size) plus run notes.

    Logs are real plantrail runs recorded through the ledger (bench/scenario.py): a 40-step plan, replans,
    late results, evidence of realistic length. Both sides of each row read or write the same bytes.
    """

    dir: Path
    notes: list[str] = field(default_factory=list)
    _scripts: dict[int, Script] = field(default_factory=dict)
    _es: dict[int, Probe] = field(default_factory=dict)

    def script(self, n: int) -> Script:
        """The commands of an n-event run and the exact lines they append (recorded once, untimed)."""
        if n not in self._scripts:
            self._scripts[n] = script(self.dir, n)
        return self._scripts[n]

    def lines(self, n: int) -> list[bytes]:
        """The lines an n-event run appends after its header and plan."""
        return self.script(n).lines

    def log(self, n: int) -> Path:
        """A recorded n-event run (with its snapshot, as a writer leaves it), written on first use."""
        start = time.perf_counter()
        path = make_log(self.dir / f"run-{n}.jsonl", n)
        if time.perf_counter() - start > 1:
            self.notes.append(f"recording the {n:,}-event log took {time.perf_counter() - start:.0f} s (untimed)")
        return path

    def eventsourcing(self, n: int) -> Probe:
        """eventsourcing's replay of one aggregate with n events (set up once, untimed, noted)."""
        if n not in self._es:
            start = time.perf_counter()
            self._es[n] = timed(eventsourcing_replay(n))
            self.notes.append(f"eventsourcing setup of {n:,} events took {time.perf_counter() - start:.1f} s (untimed)")
        return self._es[n]


Side = Callable[[Workload, int], Probe]


@dataclass(frozen=True)
class RowSpec:
    """One figure: which sizes it runs at and the candidate (plantrail) and baseline sides."""

    figure: str
    sizes: Callable[[Config], Sequence[int]]
    baseline: Side | None
    candidate: Side | None = None
    target: str | None = None
    unit: str = "s"
    per_event: bool = True
    judged: Callable[[Config], Sequence[int]] | None = None  # sizes the target is set for (default: every size)
    writers: int = 1  # writers each making the size's events: the per-event figure is over all of them


def all_sizes(config: Config) -> Sequence[int]:
    """Every --sizes value."""
    return config.sizes


def largest_size(config: Config) -> Sequence[int]:
    """Only the largest --sizes value."""
    return (max(config.sizes),)


def append_size(config: Config) -> Sequence[int]:
    """The --append-events count (fsync-bound rows cannot run at 10^6)."""
    return (config.append_events,)


def status_size(config: Config) -> Sequence[int]:
    """The log size of the whole-process status row."""
    return (config.status_events,)


def on_log(fn: Callable[[Path], object]) -> Side:
    """Time fn(path of the n-event log); the log is written before timing starts."""

    def side(wl: Workload, n: int) -> Probe:
        path = wl.log(n)
        return timed(lambda: fn(path))

    return side


def _on_signed(fn: Callable[[Path, Path], object]) -> Side:
    """Time fn(path of the signed n-event log, its public key); the log is recorded before timing starts."""

    def side(wl: Workload, n: int) -> Probe:
        path, public = signed_log(wl.dir / f"signed-{n}.jsonl", n, wl.dir / "signer")
        return timed(lambda: fn(path, public))

    return side


def on_append(fn: Callable[[Path, Sequence[bytes]], object]) -> Side:
    """Time fn(empty file, n lines); the file is recreated and fsynced untimed before each run."""

    def side(wl: Workload, n: int) -> Probe:
        path = wl.dir / f"append-{fn.__name__}-{n}.jsonl"
        lines = wl.lines(n)
        return timed(lambda: fn(path, lines), lambda: _fresh_file(path))

    return side


def process_time(argv: Callable[[Workload, int], list[str]]) -> Side:
    """Wall time of the whole process argv(workload, n)."""
    return lambda wl, n: timed(run_process(argv(wl, n)), collect=False)


def process_rss(argv: Callable[[Workload, int], list[str]]) -> Side:
    """Peak RSS in MB of the process argv(workload, n)."""

    def side(wl: Workload, n: int) -> Probe:
        args = argv(wl, n)
        return lambda: peak_rss_mb(args)

    return side


def _fresh_file(path: Path) -> None:
    """Create or truncate path and make the empty file durable."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _hook_process(wl: Workload, n: int) -> Probe:
    """One `plantrail hook claude` call on a session of n events (the session reset untimed before each)."""
    from bench.hooks import hook_call

    setup, call = hook_call(wl.dir, n, plantrail_argv())
    return timed(call, setup, collect=False)


def _write_process(wl: Workload, n: int) -> Probe:
    """One plain write command (`plantrail finish`) on the same session log (reset untimed before each)."""
    from bench.hooks import write_call

    setup, call = write_call(wl.dir, n, plantrail_argv())
    return timed(call, setup, collect=False)


def _status_of_hook_session(wl: Workload, n: int) -> Probe:
    from bench.hooks import status_of_session

    return timed(run_process(status_of_session(wl.dir, n, plantrail_argv())), collect=False)


def _import_argv(wl: Workload, n: int) -> list[str]:
    """The import-only interpreter, whatever the size."""
    return python_import_process()


def _eventsourcing(wl: Workload, n: int) -> Probe:
    return wl.eventsourcing(n)


def _appending(fn: Callable[[Path, Script], Probe]) -> Side:
    """Time plantrail appending the n-event script to a fresh log (created untimed before each run)."""
    return lambda wl, n: fn(wl.dir / f"plantrail-{fn.__name__}-{n}.jsonl", wl.script(n))


def _version(fn: Callable[[Path, int], Callable[[], object]]) -> Side:
    """Time the run fn(log, V) prepares, for a version from the middle of the log (index built untimed)."""

    def side(wl: Workload, n: int) -> Probe:
        path = wl.log(n)
        reads.build_version_index(str(path))
        return timed(fn(path, middle_version(path)))

    return side


def _rebuild(path: Path, version: int) -> Callable[[], object]:
    return lambda: rebuild_version(path, version)


def evidence_size(config: Config) -> Sequence[int]:
    """The evidence-heavy log is one size: 40 steps of 1 MiB evidence (reported as its 81 events)."""
    return (81,)


def _evidence_status(cold: bool, memory: bool = False) -> Side:
    """`plantrail status` on the evidence-heavy log, with its snapshot or without the cache."""

    def argv(wl: Workload, n: int) -> list[str]:
        path = evidence_log(wl.dir / f"evidence-{EVIDENCE_BYTES}.jsonl")
        return ["env", "PLANTRAIL_NO_CACHE=1", *status_argv(path)] if cold else status_argv(path)

    return process_rss(argv) if memory else process_time(argv)


#: The evidence-heavy log's twin with 1 KiB of evidence per step: the same run, the same records, small texts.
SMALL_EVIDENCE = 1024


def _evidence_append(size: int) -> Side:
    """One append (open, verify a criterion, close) to the 40-step run with ``size`` characters of evidence per
    step, on a fresh copy of it and its cache."""

    def side(wl: Workload, n: int) -> Probe:
        return append_one(evidence_log(wl.dir / f"evidence-{size}.jsonl", size))

    return side


def _status(cold: bool) -> Side:
    def argv(wl: Workload, n: int) -> list[str]:
        path = wl.log(n)
        return ["env", "PLANTRAIL_NO_CACHE=1", *status_argv(path)] if cold else status_argv(path)

    return process_time(argv)


def _command(command: str, *args: str, versions: Callable[[int], list[str]] | None = None) -> ArgvOf:
    """`plantrail COMMAND LOG ARGS...` on the n-event log, with version arguments chosen from its active version."""

    def argv(wl: Workload, n: int) -> list[str]:
        path = wl.log(n)
        extra = versions(reads.read_state(str(path)).state.version) if versions is not None else []
        return cli_argv(path, command, *args, *extra)

    return argv


def _warm(argv: ArgvOf, label: str) -> ArgvOf:
    """argv, run once untimed first so that the caches it reads are built (the first run's time is noted)."""
    done: set[tuple[int, str]] = set()

    def warmed(wl: Workload, n: int) -> list[str]:
        args = argv(wl, n)
        if (n, label) not in done:
            start = time.perf_counter()
            run_process(args)()
            done.add((n, label))
            took = time.perf_counter() - start
            if took > 1:
                wl.notes.append(f"the first `{label}` on the {n:,}-event log took {took:.1f} s (it builds the index)")
        return args

    return warmed


def _loop_argv(wl: Workload, n: int) -> list[str]:
    return orjson_loop_process(wl.log(n))


def _status_warm(wl: Workload, n: int) -> list[str]:
    return status_argv(wl.log(n))


ArgvOf = Callable[["Workload", int], list[str]]


def _middle(active: int) -> list[str]:
    """A replanned version from the middle of the log."""
    return [str(max(2, active // 2))]


def _pair(active: int) -> list[str]:
    """Two adjacent versions from the middle of the log."""
    return [str(max(1, active // 2 - 1)), str(max(2, active // 2))]


#: The read commands judged against `plantrail status` (whole process, caches built untimed).
AUDITS: Final = (
    ("versions", _command("versions"), "<=3x"),
    ("why", _command("why"), "<=3x"),
    ("why --version V", _command("why", "--version", versions=_middle), "<=3x"),
    ("diff V1 V2", _command("diff", versions=_pair), "<=3x"),
    ("replay --version V", _command("replay", "--version", versions=_middle), "<=1.3x"),
    ("orphans", _command("orphans"), "<=1.3x"),
)

#: The timeline commands judged against the orjson loop (whole process).
TIMELINE: Final = (
    ("log", _command("log"), "<=5x"),
    ("log --json", _command("log", "--json"), "<=5x"),
)


def _audit_rows() -> list[RowSpec]:
    rows = []
    for label, argv, target in AUDITS:
        warm = _warm(argv, label)
        rows.append(
            RowSpec(
                f"`plantrail {label}`, whole process (vs `plantrail status`)",
                all_sizes,
                baseline=process_time(_status_warm),
                candidate=process_time(warm),
                target=target,
                per_event=False,
            )
        )
        if target == "<=3x":
            rows.append(
                RowSpec(
                    f"peak memory of `plantrail {label}`, MB (vs `plantrail status`)",
                    all_sizes,
                    baseline=process_rss(_status_warm),
                    candidate=process_rss(warm),
                    target="<=60",
                    unit="MB",
                    per_event=False,
                )
            )
    return rows


def _timeline_rows() -> list[RowSpec]:
    rows = []
    for label, argv, target in TIMELINE:
        rows.append(
            RowSpec(
                f"`plantrail {label}`, whole process, streamed (vs a process running the orjson loop)",
                all_sizes,
                baseline=process_time(_loop_argv),
                candidate=process_time(argv),
                target=target,
                per_event=False,
            )
        )
        rows.append(
            RowSpec(
                f"peak memory of `plantrail {label}`, MB (vs the orjson loop process)",
                all_sizes,
                baseline=process_rss(_loop_argv),
                candidate=process_rss(argv),
                target="<=60",
                unit="MB",
                per_event=False,
            )
        )
    rows.append(
        RowSpec(
            "`plantrail verify`, whole process (vs a process running the orjson loop)",
            all_sizes,
            baseline=process_time(_loop_argv),
            candidate=process_time(_command("verify")),
            target="<=6x",
            per_event=False,
        )
    )
    return rows


def runs_folder_size(config: Config) -> Sequence[int]:
    """How many logs the folder `plantrail runs` lists holds (--runs-folder)."""
    return (config.runs_in_folder,)


def runs_database_size(config: Config) -> Sequence[int]:
    """How many runs the database `plantrail runs --store` lists holds (--runs-database)."""
    return (config.runs_in_database,)


#: Events in each run of the database `plantrail runs` lists (its summaries, not its length, are read).
RUNS_DATABASE_EVENTS: Final = 20


def _runs_folder(wl: Workload, count: int) -> Probe:
    from bench.many_runs import fill_folder, folder_listing

    start = time.perf_counter()
    folder = fill_folder(wl.dir, count, Config.status_events)
    if time.perf_counter() - start > 1:
        wl.notes.append(
            f"writing {count:,} logs for `plantrail runs` took {time.perf_counter() - start:.0f} s (untimed)"
        )
    return folder_listing(folder)


def _runs_database(wl: Workload, count: int) -> Probe:
    from bench import postgres
    from bench.many_runs import database_listing, fill_database

    start = time.perf_counter()
    database = fill_database(postgres.server_url(wl.dir), wl.dir, count, RUNS_DATABASE_EVENTS)
    wl.notes.append(
        f"filling the database with {count:,} runs of {RUNS_DATABASE_EVENTS} events and listing them once "
        f"took {time.perf_counter() - start:.0f} s (untimed)"
    )
    return database_listing(database)


def _serve_folder(rows: bool) -> Side:
    def side(wl: Workload, count: int) -> Probe:
        from bench.many_runs import fill_folder, first_page

        return first_page(str(fill_folder(wl.dir, count, Config.status_events)), rows=rows)

    return side


def _serve_database(rows: bool) -> Side:
    def side(wl: Workload, count: int) -> Probe:
        from bench import postgres
        from bench.many_runs import fill_database, first_page

        if count not in _FILLED:
            _FILLED[count] = fill_database(postgres.server_url(wl.dir), wl.dir, count, RUNS_DATABASE_EVENTS)
        return first_page(_FILLED[count], rows=rows)

    return side


#: The databases of many runs filled in this benchmark, by their count of runs.
_FILLED: dict[int, str] = {}


def long_log_size(config: Config) -> Sequence[int]:
    """The long log of the append rows (--long-log)."""
    return (config.long_log,)


def plan_size(config: Config) -> Sequence[int]:
    """The large plan of the plan-size rows (--plan-steps)."""
    return (config.plan_steps,)


def _es_batches(wl: Workload, n: int) -> Probe:
    """eventsourcing's SQLite recorder appending the n-event script's events in batches of 100."""
    return eventsourcing_sqlite_batches(wl.dir, wl.lines(n))


def _plan_events(contract: bool, steps: int | None = None) -> Side:
    """Seconds per start or complete on a plan of n steps (or of ``steps``, the small plan)."""
    return lambda wl, n: plan_events(wl.dir, steps or n, contract=contract)


def _appendable(wl: Workload, n: int) -> Path:
    return appendable_log(wl.log(n), wl.dir / f"appending-{n}.jsonl")


def _append_to(size: int | None = None, memory: bool = False) -> Side:
    """One append (open, one record, close) to a copy of the n-event log (or of the ``size``-event log), timed,
    or the peak memory of a process making it."""

    def side(wl: Workload, n: int) -> Probe:
        path = _appendable(wl, size or n)
        if memory:
            args = append_argv(path)
            return lambda: peak_rss_mb(args)
        return append_in_place(path)

    return side


def _status_behind(wl: Workload, n: int) -> Probe:
    """`plantrail status` on an n-event run whose snapshot is --behind records behind its end."""
    path = behind_log(wl.dir / f"behind-{n}.jsonl", n, Config.behind)
    return timed(run_process(status_argv(path)), collect=False)


def write_path_rows(config: Config) -> list[RowSpec]:
    """The write path's rows: the peer row, and appends flat in the log's and the plan's size."""
    short, small = f"{config.short_log:,}", f"{config.small_plan:,}"
    return [
        RowSpec(
            "group-commit append, batches of 100 (vs eventsourcing's SQLite recorder, the same events saved 100 "
            "at a time, synchronous=FULL)",
            append_size,
            baseline=_es_batches,
            candidate=_appending(append_batches),
            target="<1x",
        ),
        RowSpec(
            f"a start or complete on a plan of that many steps, per event (vs the same on a plan of {small} steps)",
            plan_size,
            baseline=_plan_events(False, config.small_plan),
            candidate=_plan_events(False),
            target="<=1.2x",
            per_event=False,
        ),
        RowSpec(
            f"a start or complete on a v2 plan of that many steps (the stop policy judges each start), per event "
            f"(vs the same on a v2 plan of {small} steps)",
            plan_size,
            baseline=_plan_events(True, config.small_plan),
            candidate=_plan_events(True),
            target="<=1.2x",
            per_event=False,
        ),
        RowSpec(
            f"an append to a log of that many events: open, one record, fsync, close (vs the same on a log of "
            f"{short} events)",
            long_log_size,
            baseline=_append_to(config.short_log),
            candidate=_append_to(),
            target="<=1.1x",
            per_event=False,
        ),
        RowSpec(
            f"peak memory of a process making that append, MB (vs the same on a log of {short} events)",
            long_log_size,
            baseline=_append_to(config.short_log, memory=True),
            candidate=_append_to(memory=True),
            target="<=1.1x",
            unit="MB",
            per_event=False,
        ),
        RowSpec(
            f"`plantrail status`, whole process, its snapshot {config.behind:,} records behind (vs python -c import)",
            status_size,
            baseline=process_time(_import_argv),
            candidate=_status_behind,
            target="<=1.3x",
            per_event=False,
        ),
    ]


RUNS_ROW = RowSpec(
    "`plantrail runs DIR`, whole process: logs of 1,000 events, fresh snapshots (vs python -c import)",
    runs_folder_size,
    baseline=process_time(_import_argv),
    candidate=_runs_folder,
    target="<1",
    per_event=False,
)


SERVE_ROW = RowSpec(
    "`plantrail serve DIR`, the list's first page (the page and its first 50 rows over HTTP): logs of 1,000 "
    "events, fresh snapshots (vs the page alone)",
    runs_folder_size,
    baseline=_serve_folder(rows=False),
    candidate=_serve_folder(rows=True),
    target="<1",
    per_event=False,
)


ROWS: list[RowSpec] = [
    RowSpec(
        "full replay: read, validate, check the chain, fold (vs orjson.loads of every line)",
        all_sizes,
        baseline=on_log(orjson_read),
        candidate=on_log(full_replay),
        target="<=3x",
    ),
    RowSpec(
        "`verify`: one read, every check, the determinism check (vs orjson.loads of every line)",
        all_sizes,
        baseline=on_log(orjson_read),
        candidate=on_log(verify),
        target="<=6x",
    ),
    RowSpec(
        "`verify --pubkey` on a log signed every 1,000 records: the tree and every signature checked too (vs plain "
        "`verify` of the same log)",
        all_sizes,
        baseline=_on_signed(lambda path, public: verify(path)),
        candidate=_on_signed(verify_pubkey),
        target="<=1.3x",
    ),
    RowSpec(
        "eventsourcing replay, POPO store (vs the same orjson read)",
        all_sizes,
        baseline=on_log(orjson_read),
        candidate=_eventsourcing,
    ),
    RowSpec(
        "plantrail full replay (vs eventsourcing's replay)",
        all_sizes,
        baseline=_eventsourcing,
        candidate=on_log(full_replay),
        target="<=0.143x",
    ),
    RowSpec(
        "durable append, fsync per event (vs os.write + os.fsync)",
        append_size,
        baseline=on_append(write_fsync_each),
        candidate=_appending(append_each),
        target="<=1.25x",
    ),
    RowSpec(
        "group-commit append, batches of 100 (vs os.write each, fsync per 100)",
        append_size,
        baseline=on_append(write_fsync_batches),
        candidate=_appending(append_batches),
        target="<=2x",
    ),
    RowSpec(
        "resume / current state (vs a full replay; the target is set for the largest log)",
        all_sizes,
        baseline=on_log(full_replay),
        candidate=on_log(resume_now),
        target="<0.01x",
        judged=largest_size,
    ),
    RowSpec(
        "rebuild one plan version (vs folding only its own events; the target is set for the largest log)",
        all_sizes,
        baseline=_version(fold_version_span),
        candidate=_version(_rebuild),
        target="<=2x",
        judged=largest_size,
    ),
    RowSpec(
        "peak memory of a full replay, MB (vs the interpreter with the packages imported)",
        all_sizes,
        baseline=process_rss(_import_argv),
        candidate=process_rss(lambda wl, n: replay_argv(wl.log(n))),
        target="+<=60",
        unit="MB",
        per_event=False,
    ),
    RowSpec(
        "`plantrail status`, whole process, snapshot beside the log (vs python -c import)",
        status_size,
        baseline=process_time(_import_argv),
        candidate=_status(cold=False),
        target="<=1.3x",
        per_event=False,
    ),
    RowSpec(
        "`plantrail status`, whole process, no snapshot (vs python -c import)",
        status_size,
        baseline=process_time(_import_argv),
        candidate=_status(cold=True),
        per_event=False,
    ),
    RowSpec(
        "`plantrail status` on the evidence-heavy log (40 steps x 1 MiB), with its snapshot (vs no cache)",
        evidence_size,
        baseline=_evidence_status(cold=True),
        candidate=_evidence_status(cold=False),
        target="<=1x",
        per_event=False,
    ),
    RowSpec(
        "peak memory of that `plantrail status`, MB, with its snapshot (vs no cache)",
        evidence_size,
        baseline=_evidence_status(cold=True, memory=True),
        candidate=_evidence_status(cold=False, memory=True),
        target="<=1x",
        unit="MB",
        per_event=False,
    ),
    RowSpec(
        "an append to the evidence-heavy log (40 steps x 1 MiB): open, one record, close (vs the same run with "
        "1 KiB evidence)",
        evidence_size,
        baseline=_evidence_append(SMALL_EVIDENCE),
        candidate=_evidence_append(EVIDENCE_BYTES),
        target="<=1.5x",
        per_event=False,
    ),
    RowSpec(
        "`plantrail hook claude`, whole process, one TodoWrite on a session log (vs `plantrail status` on it)",
        status_size,
        baseline=_status_of_hook_session,
        candidate=_hook_process,
        target="<=1.3x",
        per_event=False,
    ),
    RowSpec(
        "`plantrail hook claude` (vs a plain write command, `plantrail finish`, on the same session log)",
        status_size,
        baseline=_write_process,
        candidate=_hook_process,
        per_event=False,
    ),
    *_audit_rows(),
    *_timeline_rows(),
    RUNS_ROW,
    SERVE_ROW,
]


def postgres_append_size(config: Config) -> Sequence[int]:
    """Appends to PostgreSQL: one transaction each, so at most 500 per writer."""
    return (min(config.append_events, 500),)


def postgres_sizes(config: Config) -> Sequence[int]:
    """Replays from PostgreSQL: the --sizes up to 10^5 (copying 10^6 rows in costs more than the row tells)."""
    return tuple(n for n in config.sizes if n <= 100_000) or (min(config.sizes),)


def postgres_shared_size(config: Config) -> Sequence[int]:
    """Appends to one database run, per writer: a fifth of the appends to a run each (the writers race)."""
    return (max(min(config.append_events, 500) // 5, 1),)


def _postgres_append(writers: int, raw: bool) -> Side:
    """Append the n-event script to fresh database runs with ``writers`` threads (plantrail, or the raw loop)."""
    from bench import postgres

    def side(wl: Workload, n: int) -> Probe:
        url = postgres.server_url(wl.dir)
        run = wl.script(n)
        return (postgres.append_baseline if raw else postgres.append_ledger)(url, run, writers)

    return side


def _postgres_shared(writers: int, raw: bool) -> Side:
    """``writers`` threads each appending n criterion verdicts to one fresh database run (plantrail, or the raw
    loop inserting the lines the same verdicts write)."""
    from bench import postgres

    def side(wl: Workload, n: int) -> Probe:
        url = postgres.server_url(wl.dir)
        run = wl.script(n)
        if raw:
            return postgres.shared_baseline(url, postgres.verdict_lines(wl.dir, run, n), writers)
        return postgres.shared_ledger(url, run, writers, n)

    return side


def _postgres_replay(from_database: bool) -> Side:
    from bench import postgres

    def side(wl: Workload, n: int) -> Probe:
        path = wl.log(n)
        return (
            postgres.replay_postgres(postgres.server_url(wl.dir), path)
            if from_database
            else postgres.replay_jsonl(path)
        )

    return side


POSTGRES_ROWS: list[RowSpec] = [
    RowSpec(
        "PostgreSQL append, 1 writer, a transaction per event (vs a raw psycopg loop, same rows and pattern)",
        postgres_append_size,
        baseline=_postgres_append(1, raw=True),
        candidate=_postgres_append(1, raw=False),
        target="<=1.43x",  # at least 0.7x the raw loop's throughput
    ),
    RowSpec(
        "PostgreSQL append, 8 writers on 8 runs (vs the raw loop with 8 writers)",
        postgres_append_size,
        baseline=_postgres_append(8, raw=True),
        candidate=_postgres_append(8, raw=False),
        target="<=1.43x",
        writers=8,
    ),
    RowSpec(
        "PostgreSQL append, 32 writers on 32 runs (vs the raw loop with 32 writers)",
        postgres_append_size,
        baseline=_postgres_append(32, raw=True),
        candidate=_postgres_append(32, raw=False),
        target="<=1.43x",
        writers=32,
    ),
    *(
        RowSpec(
            f"PostgreSQL append, {writers} writer{'s' if writers > 1 else ''} on one run, each that many criterion "
            "verdicts racing for the next seq (vs the raw loop doing the same, a lost race caught up and retried)",
            postgres_shared_size,
            baseline=_postgres_shared(writers, raw=True),
            candidate=_postgres_shared(writers, raw=False),
            target="<=1.43x",
            writers=writers,
        )
        for writers in (1, 8, 32)
    ),
    RowSpec(
        "full replay from PostgreSQL (vs the same run from its JSONL file)",
        postgres_sizes,
        baseline=_postgres_replay(from_database=False),
        candidate=_postgres_replay(from_database=True),
    ),
    RowSpec(
        f"`plantrail runs --store URL`, whole process: runs of {RUNS_DATABASE_EVENTS} events, summaries at their "
        "heads (vs python -c import)",
        runs_database_size,
        baseline=process_time(_import_argv),
        candidate=_runs_database,
        target="<1",
        per_event=False,
    ),
    RowSpec(
        f"`plantrail serve --store URL`, the list's first page (the page and its first 50 rows over HTTP): runs of "
        f"{RUNS_DATABASE_EVENTS} events, summaries at their heads (vs the page alone)",
        runs_database_size,
        baseline=_serve_database(rows=False),
        candidate=_serve_database(rows=True),
        target="<1",
        per_event=False,
    ),
]


def run_spec(spec: RowSpec, wl: Workload, n: int, repeats: int, *, judged: bool = True) -> Row:
    """Measure one spec at size n: interleaved when both sides exist, one side or pending otherwise; the
    target is shown (and met or not) only where ``judged``."""
    events = n * spec.writers if spec.per_event else None
    spec = spec if judged else replace(spec, target=None)
    try:
        base = spec.baseline(wl, n) if spec.baseline else None
        cand = spec.candidate(wl, n) if spec.candidate else None
    except ModuleNotFoundError as exc:
        wl.notes.append(f"{spec.figure}: skipped, {exc}")
        return Row(spec.figure, n, spec.unit, None, None, spec.target, events)
    if cand is not None and base is not None:
        return compare_values(
            spec.figure, cand, base, repeats=repeats, target=spec.target, unit=spec.unit, size=n, events=events
        )
    cand_s = sample(cand, repeats=repeats) if cand else None
    base_s = sample(base, repeats=repeats) if base else None
    return Row(spec.figure, n, spec.unit, cand_s, base_s, spec.target, events)


def run_all(specs: Sequence[RowSpec], config: Config, wl: Workload) -> list[Row]:
    """Run every spec at each of its sizes, logging progress to stderr."""
    rows = []
    for spec in specs:
        judged = spec.judged(config) if spec.judged is not None else spec.sizes(config)
        for n in spec.sizes(config):
            print(f"… {spec.figure} at {n:,}", file=sys.stderr, flush=True)
            rows.append(run_spec(spec, wl, n, config.repeats, judged=n in judged))
            print(render_table(rows[-1:]).splitlines()[-1], file=sys.stderr, flush=True)  # kept if cut short
    return rows


def filesystem_of(path: Path) -> str:
    """Filesystem type and source of the mount holding path, from /proc/self/mountinfo."""
    target = os.path.realpath(path)
    best, found = "", "unknown"
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        fields, _, tail = line.partition(" - ")
        mount = re.sub(r"\\([0-7]{3})", lambda m: chr(int(m[1], 8)), fields.split()[4])
        inside = target == mount or target.startswith(mount.rstrip("/") + "/")
        if inside and len(mount) >= len(best):
            fstype, source = tail.split()[:2]
            best, found = mount, f"{fstype} ({source} on {mount})"
    return found


def cpu_model() -> str:
    """CPU model name from /proc/cpuinfo, or platform.processor()."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def version_of(package: str) -> str:
    """Installed version of package, or 'not installed'."""
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return "not installed"


def machine_info(workdir: Path, config: Config) -> list[str]:
    """Markdown bullet lines describing the machine and the run."""
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    packages = ", ".join(f"{p} {version_of(p)}" for p in PACKAGES)
    return [
        f"- CPU: {cpu_model()}; {os.cpu_count()} cores, {len(os.sched_getaffinity(0))} usable; load {load}",
        f"- Python {platform.python_version()} ({platform.python_implementation()}) on {platform.platform()}",
        f"- packages: {packages}",
        f"- work dir: {workdir} on {filesystem_of(workdir)}",
        f"- repeats: {config.repeats} (medians; candidate and baseline interleaved)",
    ]


def parse_sizes(text: str) -> tuple[int, ...]:
    """Parse '1e4,1e5,1e6' into event counts."""
    sizes = tuple(int(float(part)) for part in text.split(",") if part.strip())
    if not sizes or min(sizes) < 1:
        raise argparse.ArgumentTypeError(f"sizes must be positive counts, got {text!r}")
    return sizes


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    """Command-line options."""
    parser = argparse.ArgumentParser(prog="python -m bench.run", description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=parse_sizes, help="event counts (default 1e4,1e5,1e6; quick 1e3,1e4)")
    parser.add_argument("--repeats", type=int, help="runs per measurement (default 5; quick 3)")
    parser.add_argument("--append-events", type=int, help="events per fsync-bound run (default 10000; quick 1000)")
    parser.add_argument("--quick", action="store_true", help="small sizes and fewer repeats, for a smoke run")
    parser.add_argument(
        "--runs-folder",
        type=int,
        metavar="N",
        help="logs in the folder `plantrail runs` lists (default 1000; quick 100)",
    )
    parser.add_argument(
        "--runs-database",
        type=int,
        metavar="N",
        help="runs in the database `plantrail runs --store` lists (default 10000; quick 1000)",
    )
    parser.add_argument(
        "--long-log",
        type=lambda text: parse_sizes(text)[0],
        metavar="N",
        help="events in the log an append is measured on, against one of 10^3 (default 1e6; quick 1e4)",
    )
    parser.add_argument(
        "--plan-steps",
        type=lambda text: parse_sizes(text)[0],
        metavar="N",
        help="steps in the plan a start or complete is measured on, against one of 40 (default 1e4; quick 1e3)",
    )
    parser.add_argument(
        "--no-postgres", action="store_true", help="leave out the PostgreSQL rows (they need plantrail[postgres])"
    )
    parser.add_argument(
        "--rows", type=re.compile, metavar="REGEX", help="only the rows whose figure matches REGEX (re.search)"
    )
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--keep", type=Path, metavar="DIR", help="generate files in DIR and keep them")
    where.add_argument("--tmp", type=Path, metavar="DIR", help="parent of the temp dir (default: current dir)")
    return parser.parse_args(argv)


def config_from(args: argparse.Namespace) -> Config:
    """Resolve defaults, which depend on --quick."""
    quick = args.quick
    return Config(
        sizes=args.sizes or ((1_000, 10_000) if quick else (10_000, 100_000, 1_000_000)),
        repeats=args.repeats or (3 if quick else 5),
        append_events=args.append_events or (1_000 if quick else 10_000),
        runs_in_folder=args.runs_folder or (100 if quick else 1_000),
        runs_in_database=args.runs_database or (1_000 if quick else 10_000),
        long_log=args.long_log or (10_000 if quick else 1_000_000),
        plan_steps=args.plan_steps or (1_000 if quick else 10_000),
    )


@contextmanager
def workdir(keep: Path | None, tmp: Path | None) -> Iterator[Path]:
    """--keep DIR as is, else a temp dir under --tmp or the current dir, removed afterwards."""
    if keep is not None:
        keep.mkdir(parents=True, exist_ok=True)
        yield keep
        return
    path = Path(tempfile.mkdtemp(prefix=".plantrail-bench-", dir=tmp or Path.cwd()))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def _postgres_available(wl: Workload) -> bool:
    """True when the PostgreSQL rows can run: the driver, and a named server or the pgserver wheel."""
    import importlib.util

    if importlib.util.find_spec("psycopg") is None or not (
        os.environ.get("PLANTRAIL_BENCH_POSTGRES") or importlib.util.find_spec("pgserver")
    ):
        wl.notes.append("PostgreSQL rows left out: pip install '.[bench]' (psycopg, pgserver) to run them")
        return False
    return True


def main(argv: Sequence[str] | None = None) -> None:
    """Run the benchmark and print machine info, the table and notes."""
    args = parse_args(argv)
    config = config_from(args)
    with workdir(args.keep, args.tmp) as path:
        wl = Workload(path)
        info = machine_info(path, config)
        specs = ROWS + write_path_rows(config)
        specs += [] if args.no_postgres or not _postgres_available(wl) else POSTGRES_ROWS
        if args.rows is not None:
            specs = [spec for spec in specs if args.rows.search(spec.figure)]
        rows = run_all(specs, config, wl)
    print("\n".join(["## plantrail benchmark", "", *info, "", render_table(rows)]))
    if wl.notes:
        print("\n".join(["", "Notes:", *(f"- {note}" for note in wl.notes)]))


if __name__ == "__main__":
    main()
