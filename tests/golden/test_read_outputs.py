"""Golden pins of every read-only command on every sample log: exit code, stdout and stderr, human and --json.

The sample logs are found by their header record (a ``log.opened`` of format ``plantrail/N``), so a transcript
or any other JSON Lines file in samples/ is left out. Each pin reads a fresh copy of its sample in a temporary
working directory (the command lines name the copy by its bare file name, so no path is in any output), at a
stopped clock set after every sample's last record (resume, leases and deadlines are judged at that instant).

What each sample is asked is derived from its records: its plan versions, its replans and its last seq; a
forked sample whose parent is a sample too is also verified against that parent. The commands that follow a
log until Ctrl-C (``watch``, ``log --follow``) are pinned up to their first wait, where a Ctrl-C is simulated.
"""

from __future__ import annotations

import hashlib
import shutil
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from functools import cache
from pathlib import Path
from typing import Any, NamedTuple

import orjson
import pytest

from tests.golden.golden import SAMPLES, Cli, StoppedClock, assert_golden, render, section

#: The stopped clock's instant for every read: after the last record of every sample.
READ_NOW = datetime(2027, 1, 1, tzinfo=UTC)

Args = tuple[str, ...]


class Sample(NamedTuple):
    """What a sample log's records say about it (read straight from its JSON lines, not through plantrail)."""

    name: str
    run: str
    last_seq: int
    head: str
    first_step: str | None
    versions: tuple[int, ...]
    replans: tuple[tuple[int, int], ...]  # (seq of the replan, the version it adopted)
    parent: str | None  # the file name of the sample it was forked from

    @property
    def stem(self) -> str:
        return self.name.removesuffix(".jsonl")


def _records(path: Path) -> list[dict[str, Any]]:
    return [orjson.loads(line) for line in path.read_bytes().splitlines() if line.strip()]


def is_plantrail_log(path: Path) -> bool:
    """True when the file's first line is a plantrail log header."""
    with path.open("rb") as file:
        first = file.readline()
    try:
        header = orjson.loads(first)
    except orjson.JSONDecodeError:
        return False
    if not isinstance(header, dict) or header.get("type") != "log.opened":
        return False
    data = header.get("data")
    return isinstance(data, dict) and str(data.get("format", "")).startswith("plantrail/")


def _versions(records: list[dict[str, Any]]) -> tuple[tuple[int, ...], tuple[tuple[int, int], ...]]:
    """Every plan version of the log and its replans: the first version is the one the plan was created (or the
    run forked) at, and each replan adopts the version after the one it is stamped with."""
    first = next(r["plan_version"] for r in records if r["type"] in ("plan.created", "run.forked"))
    replans = tuple((r["seq"], r["plan_version"] + 1) for r in records if r["type"] == "plan.replanned")
    return tuple(range(first, first + len(replans) + 1)), replans


def _first_step(records: list[dict[str, Any]]) -> str | None:
    return next((r["data"]["step"] for r in records if r["type"] == "step.started"), None)


@cache
def samples() -> dict[str, Sample]:
    """Every plantrail log in samples/, by file name."""
    found: dict[str, tuple[list[dict[str, Any]], str]] = {}
    for path in sorted(SAMPLES.glob("*.jsonl")):
        if is_plantrail_log(path):
            records = _records(path)
            found[path.name] = (records, records[0]["run"])
    by_run = {run: name for name, (_, run) in found.items()}
    made: dict[str, Sample] = {}
    for name, (records, run) in found.items():
        versions, replans = _versions(records)
        forked = next((r["data"]["parent"] for r in records if r["type"] == "run.forked"), None)
        last = records[-1]
        made[name] = Sample(
            name, run, last["seq"], last["h"], _first_step(records), versions, replans, by_run.get(forked or "")
        )
    return made


# --- what each command is asked, per sample ----------------------------------------------------------------------


def _both(*args: str) -> list[Args]:
    """The human form and the --json form of one command line."""
    return [args, (*args, "--json")]


def _show(s: Sample) -> list[Args]:
    seqs = sorted({0, 1, *(seq for seq, _ in s.replans), s.last_seq})
    return [form for seq in seqs for form in _both("show", s.name, str(seq))]


def _replay(s: Sample) -> list[Args]:
    now = _both("replay", s.name)
    by_version = [form for v in s.versions for form in _both("replay", s.name, "--version", str(v))]
    seqs = sorted({0, 1, s.last_seq // 2, s.last_seq})
    at_seq = [form for seq in seqs for form in _both("replay", s.name, "--at-seq", str(seq))]
    return now + by_version + at_seq


def _diff(s: Sample) -> list[Args]:
    first, last = s.versions[0], s.versions[-1]
    pairs = [*zip(s.versions, s.versions[1:], strict=False), (first, last)]
    return [form for a, b in dict.fromkeys(pairs) for form in _both("diff", s.name, str(a), str(b))]


def _why(s: Sample) -> list[Args]:
    latest = _both("why", s.name)  # the latest replan, or the refusal of a run never replanned
    return latest + [form for _, v in s.replans for form in _both("why", s.name, "--version", str(v))]


def _log(s: Sample) -> list[Args]:
    filtered = [("log", s.name, "--tail", "3"), ("log", s.name, "--type", "step.completed")]
    mid = str(s.last_seq // 2)
    ranged = [("log", s.name, "--from-seq", mid, "--limit", "3"), ("log", s.name, "--to-seq", mid, "--json")]
    stepped = [] if s.first_step is None else [("log", s.name, "--step", s.first_step)]
    return [*_both("log", s.name), ("log", s.name, "--jsonl"), *filtered, *ranged, *stepped]


def _verify(s: Sample) -> list[Args]:
    anchored = ("verify", s.name, "--anchor", f"{s.last_seq}:{s.head}")
    wrong = ("verify", s.name, "--anchor", f"{s.last_seq}:{'0' * 64}")
    parent = [] if s.parent is None else _both("verify", s.name, "--parent", s.parent)
    return [*_both("verify", s.name), anchored, wrong, *parent]


def _graph(s: Sample) -> list[Args]:
    formats = [("graph", s.name, "--format", f) for f in ("svg", "dot", "mermaid")]
    return [("graph", s.name), *formats, ("graph", s.name, "--json"), ("graph", s.name, "--version", "1", "--json")]


COMMANDS: dict[str, Callable[[Sample], list[Args]]] = {
    "status": lambda s: [*_both("status", s.name), *_both("status", s.name, "--attempts")],
    "next": lambda s: _both("next", s.name),
    "log": _log,
    "show": _show,
    "versions": lambda s: [
        *_both("versions", s.name),
        ("versions", s.name, "--all"),
        ("versions", s.name, "--limit", "1"),
    ],
    "replay": _replay,
    "diff": _diff,
    "why": _why,
    "orphans": lambda s: _both("orphans", s.name),
    "resume": lambda s: [*_both("resume", s.name), ("resume", s.name, "--all"), *_both("resume", s.name, "--verify")],
    "verify": _verify,
    "brief": lambda s: _both("brief", s.name),
    "graph": _graph,
    "salvage": lambda s: _both("salvage", s.name),
}


# --- running the pins --------------------------------------------------------------------------------------------


@pytest.fixture
def read_cli(stopped_clock: StoppedClock) -> Cli:
    """The CLI at :data:`READ_NOW`, which stands still for every command of the pin."""
    return Cli(stopped_clock, READ_NOW)


def _copy(names: list[str], into: Path) -> None:
    for name in names:
        shutil.copyfile(SAMPLES / name, into / name)


def _copy_sample(sample: Sample, into: Path) -> None:
    _copy([sample.name, *([sample.parent] if sample.parent else [])], into)


PINS = [(name, command) for name in samples() for command in COMMANDS]


@pytest.mark.parametrize(("name", "command"), PINS, ids=[f"{n.removesuffix('.jsonl')}-{c}" for n, c in PINS])
def test_read_command_output(name: str, command: str, read_cli: Cli, tmp_path: Path) -> None:
    """A read command's exit code, stdout and stderr on a sample, in every form it is asked in, are unchanged."""
    sample = samples()[name]
    _copy_sample(sample, tmp_path)
    for args in COMMANDS[command](sample):
        read_cli(*args)
    assert_golden(f"read/{sample.stem}/{command}.txt", render(read_cli.ran))


def test_the_sample_logs_are_found_by_their_header() -> None:
    """Every samples/*.jsonl is pinned unless its first line is no plantrail header (an agent transcript)."""
    logs = set(samples())
    assert logs and all(name.endswith(".jsonl") for name in logs)
    others = {p.name for p in SAMPLES.glob("*.jsonl")} - logs
    assert all(not is_plantrail_log(SAMPLES / name) for name in others)


@pytest.mark.parametrize("name", list(samples()), ids=[n.removesuffix(".jsonl") for n in samples()])
def test_report_output(name: str, read_cli: Cli, tmp_path: Path) -> None:
    """report's stdout and stderr, human and --json, and the SHA-256 and size of the HTML it writes."""
    sample = samples()[name]
    _copy_sample(sample, tmp_path)
    read_cli("report", sample.name, "-o", "report.html")
    read_cli("report", sample.name, "-o", "report-json.html", "--json")
    html = (tmp_path / "report.html").read_bytes()
    assert (tmp_path / "report-json.html").read_bytes() == html, "the --json run wrote another page"
    written = f"{len(html)} bytes, sha256 {hashlib.sha256(html).hexdigest()}\n"
    assert_golden(f"read/{sample.stem}/report.txt", render(read_cli.ran) + "\n" + section("report.html", written))


@pytest.fixture
def ctrl_c_at_first_wait(monkeypatch: pytest.MonkeyPatch) -> None:
    """A person pressing Ctrl-C while a following command first waits for more (its ``time.sleep``)."""

    def interrupted(seconds: float) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(time, "sleep", interrupted)


@pytest.mark.parametrize("name", list(samples()), ids=[n.removesuffix(".jsonl") for n in samples()])
@pytest.mark.usefixtures("ctrl_c_at_first_wait")
def test_following_commands_until_ctrl_c(name: str, read_cli: Cli, tmp_path: Path) -> None:
    """watch (plain lines and --json) and log --follow (human and --jsonl) print the same up to a Ctrl-C at
    their first wait, and exit as a Ctrl-C makes them exit."""
    sample = samples()[name]
    _copy_sample(sample, tmp_path)
    for args in (
        ("watch", sample.name),
        ("watch", sample.name, "--json"),
        ("watch", sample.name, "--events", "2"),
        ("log", sample.name, "--follow", "--tail", "2"),
        ("log", sample.name, "--follow", "--jsonl", "--tail", "2"),
    ):
        read_cli(*args)
    assert_golden(f"read/{sample.stem}/follow.txt", render(read_cli.ran))


def _runs_args() -> Iterator[Args]:
    yield from _both("runs", "samples")
    yield ("runs", "samples", "--sort", "run")
    yield ("runs", "samples", "--sort", "replans", "--json")
    yield ("runs", "samples", "--outcome", "open")
    yield ("runs", "samples", "--outcome", "complete", "--json")
    yield ("runs", "samples", "--has-orphans")
    yield ("runs", "samples", "--reason", "new_constraint")
    yield ("runs", "samples", "--since", "2026-12-01")
    yield ("runs", "samples", "--limit", "2")
    yield ("runs", "empty")


def test_runs_over_a_copy_of_the_samples_folder(read_cli: Cli, tmp_path: Path) -> None:
    """runs lists every JSONL file of the folder (the transcript as a damaged row), with each filter and sort."""
    shutil.copytree(SAMPLES, tmp_path / "samples")
    (tmp_path / "empty").mkdir()
    for args in _runs_args():
        read_cli(*args)
    assert_golden("read/runs.txt", render(read_cli.ran))


def _drafts() -> list[str]:
    return sorted(p.name for p in SAMPLES.glob("*.json"))


@pytest.mark.parametrize("name", _drafts(), ids=[n.removesuffix(".json") for n in _drafts()])
def test_check_on_the_sample_drafts(name: str, read_cli: Cli, tmp_path: Path) -> None:
    """check on each samples/*.json (a patch too, which is no draft): human, --json, --strict."""
    _copy([name], tmp_path)
    for args in (*_both("check", name), *_both("check", name, "--strict")):
        read_cli(*args)
    assert_golden(f"read/check/{name.removesuffix('.json')}.txt", render(read_cli.ran))


def test_schema(read_cli: Cli) -> None:
    """schema prints the JSON Schema of one log line, the same with and without --json."""
    plain = read_cli("schema")
    assert read_cli("schema", "--json") == plain._replace(args=("schema", "--json"))
    assert_golden("read/schema.txt", render([plain]))
