"""Measurement primitives: medians of repeated runs and side-by-side ratios."""

from __future__ import annotations

import gc
import operator
import re
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

Thunk = Callable[[], object]
Probe = Callable[[], float]

_OPS: dict[str, Callable[[float, float], bool]] = {
    "<=": operator.le,
    "<": operator.lt,
    ">=": operator.ge,
    ">": operator.gt,
}
_TARGET = re.compile(r"^\s*(\+?)(<=|>=|<|>)\s*([0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)\s*(x?)\s*$")

# Runs the command with stdout/stderr discarded from a small interpreter, so the
# child's ru_maxrss is not inflated by a large parent's RSS (Linux copies the
# exec-ing mm's high-water mark into the child's rusage). Prints KiB.
_RSS_TRAMPOLINE = """
import os, sys
null = os.open(os.devnull, os.O_RDWR)
actions = [(os.POSIX_SPAWN_DUP2, null, 1), (os.POSIX_SPAWN_DUP2, null, 2)]
pid = os.posix_spawnp(sys.argv[1], sys.argv[1:], os.environ, file_actions=actions)
_, status, usage = os.wait4(pid, 0)
print(usage.ru_maxrss)
sys.exit(os.waitstatus_to_exitcode(status))
"""


@dataclass(frozen=True)
class Sample:
    """All measured values of one quantity, in run order."""

    values: tuple[float, ...]

    @property
    def median(self) -> float:
        """Median of the measured values."""
        return statistics.median(self.values)


@dataclass(frozen=True)
class Target:
    """A bound on the ratio (``<=2x``), on the candidate median (``<=150``), or on how far the candidate
    median is above the baseline's (``+<=60``)."""

    op: str
    bound: float
    on_ratio: bool
    on_difference: bool = False

    def met(self, ratio: float, candidate: float, baseline: float = 0.0) -> bool:
        """Whether the bound holds for this ratio, candidate median, or difference from the baseline."""
        if self.on_difference:
            return _OPS[self.op](candidate - baseline, self.bound)
        return _OPS[self.op](ratio if self.on_ratio else candidate, self.bound)


def parse_target(text: str) -> Target:
    """Parse ``<=2x`` (ratio bound), ``<=150`` (bound in the row's unit) or ``+<=60`` (bound on the difference)."""
    match = _TARGET.match(text)
    if match is None or (match[1] and match[4]):
        raise ValueError(f"target must look like '<=2x', '<150' or '+<=60', got {text!r}")
    plus, op, bound, x = match.groups()
    return Target(op, float(bound), on_ratio=bool(x), on_difference=bool(plus))


@dataclass(frozen=True)
class Row:
    """One table row: candidate (plantrail) against a baseline measured in the same run."""

    figure: str
    size: int | None
    unit: str
    candidate: Sample | None
    baseline: Sample | None
    target: str | None = None
    events: int | None = None

    @property
    def ratio(self) -> float | None:
        """Candidate median divided by baseline median (>1 means the candidate is slower or bigger)."""
        if self.candidate is None or self.baseline is None or self.baseline.median == 0:
            return None
        return self.candidate.median / self.baseline.median

    @property
    def met(self) -> bool | None:
        """Whether the target holds, or None when there is no target or no candidate yet."""
        ratio = self.ratio
        if self.target is None or ratio is None:
            return None
        assert self.candidate is not None and self.baseline is not None
        return parse_target(self.target).met(ratio, self.candidate.median, self.baseline.median)

    def per_event(self, sample: Sample | None) -> float | None:
        """Median per event (seconds per event for time rows), when the row counts events."""
        if sample is None or not self.events:
            return None
        return sample.median / self.events


def timed(fn: Thunk, setup: Thunk | None = None, *, collect: bool = True) -> Probe:
    """Wrap fn into a probe returning its wall time, running setup and gc outside the timing."""

    def probe() -> float:
        if setup is not None:
            setup()
        if collect:
            gc.collect()
        start = time.perf_counter()
        fn()
        return time.perf_counter() - start

    return probe


def sample(probe: Probe, *, repeats: int) -> Sample:
    """Call probe `repeats` times and keep every value."""
    if repeats < 1:
        raise ValueError("repeats must be >= 1")
    return Sample(tuple(probe() for _ in range(repeats)))


def measure(fn: Thunk, *, repeats: int, setup: Thunk | None = None, collect: bool = True) -> Sample:
    """Time fn `repeats` times with perf_counter; setup and gc.collect run untimed."""
    return sample(timed(fn, setup, collect=collect), repeats=repeats)


def interleave(candidate: Probe, baseline: Probe, *, repeats: int) -> tuple[Sample, Sample]:
    """Call the probes alternately (candidate, baseline, candidate, ...) so noise hits both."""
    if repeats < 1:
        raise ValueError("repeats must be >= 1")
    pairs = [(candidate(), baseline()) for _ in range(repeats)]
    return Sample(tuple(c for c, _ in pairs)), Sample(tuple(b for _, b in pairs))


def compare_values(
    name: str,
    candidate: Probe,
    baseline: Probe,
    *,
    repeats: int,
    target: str | None,
    unit: str,
    size: int | None = None,
    events: int | None = None,
) -> Row:
    """Interleave two probes that return their own measurement (e.g. MB) and build a Row."""
    if target is not None:
        parse_target(target)
    cand, base = interleave(candidate, baseline, repeats=repeats)
    return Row(name, size, unit, cand, base, target, events)


def compare(
    name: str,
    candidate: Thunk,
    baseline: Thunk,
    *,
    repeats: int,
    target: str | None,
    unit: str = "s",
    size: int | None = None,
    events: int | None = None,
    candidate_setup: Thunk | None = None,
    baseline_setup: Thunk | None = None,
) -> Row:
    """Time candidate and baseline interleaved and build a Row with medians and their ratio."""
    return compare_values(
        name,
        timed(candidate, candidate_setup),
        timed(baseline, baseline_setup),
        repeats=repeats,
        target=target,
        unit=unit,
        size=size,
        events=events,
    )


def run_process(argv: Sequence[str]) -> Thunk:
    """A thunk that runs argv to completion with output discarded, raising on failure."""
    args = list(argv)

    def run() -> None:
        subprocess.run(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)

    return run


def subprocess_time(argv: Sequence[str], repeats: int) -> Sample:
    """Wall time of the whole process argv, repeated; use `.median`."""
    return measure(run_process(argv), repeats=repeats, collect=False)


def peak_rss_mb(argv: Sequence[str]) -> float:
    """Peak RSS in MiB of the process argv (Linux; floor is the ~8 MiB trampoline interpreter)."""
    out = subprocess.run(
        [sys.executable, "-I", "-S", "-c", _RSS_TRAMPOLINE, *argv],
        capture_output=True,
        text=True,
        check=True,
    )
    return int(out.stdout) / 1024


def format_quantity(value: float, unit: str) -> str:
    """Render a value, auto-scaling seconds to ns/µs/ms/s."""
    if unit != "s":
        return f"{value:.3g} {unit}"
    for scale, suffix in ((1.0, "s"), (1e-3, "ms"), (1e-6, "µs")):
        if abs(value) >= scale:
            return f"{value / scale:.3g} {suffix}"
    return f"{value / 1e-9:.3g} ns"


def format_size(size: int | None) -> str:
    """Render a size as 10^k when it is a power of ten, else with thousands separators."""
    if size is None:
        return "—"
    exponent = len(str(size)) - 1
    if size >= 100 and size == 10**exponent:
        return f"10^{exponent}"
    return f"{size:,}"


def _cell(row: Row, sample: Sample | None) -> str:
    """Median cell, with the per-event figure for rows that count events."""
    if sample is None:
        return "pending"
    text = format_quantity(sample.median, row.unit)
    per_event = row.per_event(sample)
    if per_event is not None:
        text += f" ({format_quantity(per_event, row.unit)}/ev)"
    return text


def _met(row: Row) -> str:
    """Met cell: yes, no, or a dash when undecidable."""
    return {True: "yes", False: "**no**", None: "—"}[row.met]


def _target(row: Row) -> str:
    """Target cell, with the unit appended for absolute bounds."""
    if row.target is None:
        return "—"
    return row.target if parse_target(row.target).on_ratio else f"{row.target} {row.unit}"


def render_table(rows: Sequence[Row]) -> str:
    """Render rows as a Markdown table."""
    lines = [
        "| figure | size | plantrail median | baseline median | ratio | target | met |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for row in rows:
        ratio = "—" if row.ratio is None else _ratio_text(row.ratio)
        cells = [
            row.figure,
            format_size(row.size),
            _cell(row, row.candidate),
            _cell(row, row.baseline),
            ratio,
            _target(row),
            _met(row),
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _ratio_text(ratio: float) -> str:
    """Two decimals, or three significant digits below 0.1 (so 0.0143x is not shown as 0.01x)."""
    return f"{ratio:.2f}x" if ratio >= 0.1 else f"{ratio:.3g}x"
