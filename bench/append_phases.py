"""CPU time of an append's phases: `python -m bench.append_phases LOG [LOG ...] [--repeats N]`.

The append row (`python -m bench.run --rows 'that append'`) times a writer's whole append (open, one criterion
verdict, fsync, close) by the wall clock, which a shared machine makes noisy. This prints, for each log, the
medians of the CPU time (``time.process_time``) of each phase of the same append, and of its wall time: a copy
of the log and its cache is made once beside it (``<log>.phases.jsonl``) and settled as its last writer would
leave it (two opens and closes, the second a clock tick after the first), then appended to ``--repeats``
times. Run it with each install's interpreter on logs that install wrote, in turn.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import time
from pathlib import Path

from plantrail.ledger.api import Ledger
from plantrail.ledger.stores.jsonl import cache

__all__ = ["main", "phases"]

_TICK = 0.05  # longer than any file-system clock tick


def _settled_copy(log: Path) -> Path:
    """A copy of ``log`` and its cache beside it, made and settled once."""
    work = log.with_name(log.stem + ".phases.jsonl")
    if not work.exists():
        shutil.copyfile(log, work)
        folder = Path(str(log) + cache.SUFFIX)
        if folder.is_dir():
            shutil.copytree(folder, Path(str(work) + cache.SUFFIX))
        for _ in range(2):
            time.sleep(_TICK)
            Ledger.open(work, fsync="none").close()
    return work


def phases(log: Path, repeats: int) -> dict[str, float]:
    """Medians, in ms, of the CPU time of each phase of ``repeats`` appends to a settled copy of ``log``, and of
    their wall time."""
    work = _settled_copy(log)
    taken: dict[str, list[float]] = {"open": [], "append": [], "close": [], "wall": []}
    for _ in range(repeats):
        start, c0 = time.perf_counter(), time.process_time()
        ledger = Ledger.open(work)
        c1 = time.process_time()
        ledger.verify_criterion("c0", passed=True, evidence="checked by hand")
        c2 = time.process_time()
        ledger.close()
        c3, end = time.process_time(), time.perf_counter()
        for name, took in (("open", c1 - c0), ("append", c2 - c1), ("close", c3 - c2), ("wall", end - start)):
            taken[name].append(took * 1000)
        time.sleep(_TICK)
    return {name: statistics.median(values) for name, values in taken.items()}


def main(argv: list[str] | None = None) -> int:
    """Measure and print one line per log."""
    parser = argparse.ArgumentParser(prog="python -m bench.append_phases", description=__doc__.split("\n\n")[0])
    parser.add_argument("logs", nargs="+", type=Path, help="logs recorded with their cache (bench.run --keep DIR)")
    parser.add_argument("--repeats", type=int, default=15)
    args = parser.parse_args(argv)
    for log in args.logs:
        got = phases(log, args.repeats)
        cpu = ", ".join(f"{name} {got[name]:.2f} ms" for name in ("open", "append", "close"))
        print(f"{log.name}: {cpu} of CPU; {got['wall']:.2f} ms of wall time")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
