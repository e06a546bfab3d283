"""Every module's import cost in one ``plantrail`` command: ``python -m bench.imports [--repeats N] [--top K]
COMMAND ARGS...`` runs the command as a whole process under ``python -X importtime`` N times (bytecode cached),
and prints each module's own and cumulative import time (the minima over the runs, in µs) and the module that
imported it, costliest first, with the total.

    python -m bench.imports --repeats 7 status run.jsonl
    python -m bench.imports start run.jsonl inspect
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
from collections.abc import Sequence
from typing import NamedTuple

__all__ = ["Cost", "costs", "main", "parse"]

_SCRIPT = "import sys\nfrom plantrail.cli.entry import main\nsys.exit(main(sys.argv[1:]))\n"
_LINE = re.compile(r"import time:\s+(\d+) \|\s+(\d+) \|( *)(\S+)")


class Cost(NamedTuple):
    """One module's import: its own time, with what it imported, and the module that imported it (µs)."""

    module: str
    self_us: int
    cumulative_us: int
    parent: str | None


def parse(text: str) -> list[Cost]:
    """The modules ``-X importtime`` reports in ``text`` (its stderr), with the module each was imported under."""
    entries = []
    for line in text.splitlines():
        match = _LINE.match(line)
        if match:
            entries.append((len(match[3]), match[4], int(match[1]), int(match[2])))
    found = []
    for i, (depth, name, own, cumulative) in enumerate(entries):
        # A module is listed after everything it imported: its importer is the next module less indented.
        parent = next((other for d, other, _, _ in entries[i + 1 :] if d < depth), None)
        found.append(Cost(name, own, cumulative, parent))
    return found


def costs(argv: Sequence[str], repeats: int) -> list[Cost]:
    """Each module's minimum costs over ``repeats`` runs of ``plantrail ARGV``, costliest first."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    best: dict[str, Cost] = {}
    for _ in range(repeats):
        done = subprocess.run(
            [sys.executable, "-X", "importtime", "-c", _SCRIPT, *argv],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
            check=False,
        )
        for cost in parse(done.stderr):
            known = best.get(cost.module)
            if known is None:
                best[cost.module] = cost
            else:
                best[cost.module] = known._replace(
                    self_us=min(known.self_us, cost.self_us), cumulative_us=min(known.cumulative_us, cost.cumulative_us)
                )
    return sorted(best.values(), key=lambda c: -c.self_us)


def main(argv: Sequence[str] | None = None) -> None:
    """Print the table."""
    parser = argparse.ArgumentParser(prog="python -m bench.imports", description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5, help="runs of the command (default 5; minima kept)")
    parser.add_argument("--top", type=int, default=40, help="modules listed (default 40; 0: all)")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="the plantrail command line")
    args = parser.parse_args(argv)
    found = costs(args.command, args.repeats)
    total = sum(c.self_us for c in found)
    ours = sum(c.self_us for c in found if c.module.startswith("plantrail"))
    print(f"`plantrail {' '.join(args.command)}`: {len(found)} modules, {total / 1000:.1f} ms of import")
    print(f"(plantrail's own modules {ours / 1000:.1f} ms; minima of {args.repeats} runs, importtime's overhead in)")
    print()
    print("| module | self µs | cumulative µs | imported by |")
    print("| --- | --- | --- | --- |")
    for cost in found[: args.top or None]:
        print(f"| {cost.module} | {cost.self_us} | {cost.cumulative_us} | {cost.parent or '-'} |")


if __name__ == "__main__":
    main()
