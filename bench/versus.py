"""Commands of several installs on one log, against the orjson loop: `python -m bench.versus LOG [--repeats N]
[--command 'verify' ...] NAME=VENV ...`.

The rows of `python -m bench.run` time one install. To see what a change bought on a shared machine, this
runs the same whole-process commands of each install (a virtualenv with plantrail installed) on the same log,
interleaved with a process running the orjson loop over it (the rows' baseline), so that load hits every side
alike, and prints the medians of wall time and of CPU time (user + sys of the process and any child it forks)
with each as a ratio to the loop's.
"""

from __future__ import annotations

import argparse
import resource
import shlex
import statistics
import subprocess
import sys
import time
from pathlib import Path

from bench.baselines import orjson_loop_process

__all__ = ["main"]


def _measure(argv: list[str]) -> tuple[float, float]:
    """(wall s, CPU s) of one process run to completion (its children's CPU time included)."""
    before, start = resource.getrusage(resource.RUSAGE_CHILDREN), time.perf_counter()
    subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.versus", description=__doc__.split("\n\n")[0])
    parser.add_argument("log", type=Path, help="the log every command reads (bench.scenario.record_run makes one)")
    parser.add_argument("installs", nargs="+", metavar="NAME=VENV", help="a name and a virtualenv with plantrail")
    parser.add_argument("--command", action="append", help="a plantrail command and its options (default: verify)")
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args(argv)
    sides: dict[str, list[str]] = {"orjson loop": orjson_loop_process(args.log)}
    for command in args.command or ["verify"]:
        for install in args.installs:
            name, _, venv = install.partition("=")
            if not venv:
                parser.error(f"{install!r} is not NAME=VENV")
            sides[f"{name}: {command}"] = [str(Path(venv, "bin", "plantrail")), *shlex.split(command), str(args.log)]
    walls: dict[str, list[float]] = {side: [] for side in sides}
    cpus: dict[str, list[float]] = {side: [] for side in sides}
    for _ in range(args.repeats):
        for side, command_line in sides.items():
            wall, cpu = _measure(command_line)
            walls[side].append(wall)
            cpus[side].append(cpu)
    loop_wall, loop_cpu = statistics.median(walls["orjson loop"]), statistics.median(cpus["orjson loop"])
    width = max(map(len, sides))
    print(f"{args.log} · medians of {args.repeats}, interleaved")
    for side in sides:
        wall, cpu = statistics.median(walls[side]), statistics.median(cpus[side])
        ratios = f"wall {wall:8.3f} s ({wall / loop_wall:5.2f}x)  CPU {cpu:8.3f} s ({cpu / loop_cpu:5.2f}x)"
        print(f"{side:{width}}  {ratios}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
