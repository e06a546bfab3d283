"""Commands of several installs on one log, against the orjson loop: `python -m bench.versus LOG [--repeats N]
[--command 'verify' ...] [--hook] [--append N] NAME=VENV ...`.

The rows of `python -m bench.run` time one install. To see what a change bought on a shared machine, this
runs the same whole-process commands of each install (a virtualenv with plantrail installed) on the same log,
interleaved with a process running the orjson loop over it (the rows' baseline), so that load hits every side
alike, and prints the medians of wall time and of CPU time (user + sys of the process and any child it forks)
with each as a ratio to the loop's.

Two rows need no log: ``--hook`` times one ``plantrail hook claude`` call of each install on a session that
install captured itself (a few TodoWrite calls, made untimed; each timed call starts from a fresh copy of it),
and ``--append N`` has each install's interpreter record N starts and completions with the fsync policy
``none`` and report the CPU time an event (the disk decides nothing). With two installs or more, each row also
prints its ratio to the first install's.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
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


#: Records ``n`` starts and completions with the fsync policy ``none`` and prints the CPU µs an event.
_APPEND = """
import resource, sys
from plantrail import Ledger
path, n = sys.argv[1], int(sys.argv[2])
draft = {"goal": "bench appends", "acceptance_criteria": [{"id": "c", "description": "all done"}],
         "steps": [{"id": f"s{i}", "title": f"step {i}", "completion_evidence": "done"} for i in range(n)]}
with Ledger.create(path, draft, fsync="none") as ledger:
    before = resource.getrusage(resource.RUSAGE_SELF)
    for i in range(n):
        ledger.start(f"s{i}")
        ledger.complete(f"s{i}", [f"done {i}"])
    after = resource.getrusage(resource.RUSAGE_SELF)
print((after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime) / (2 * n) * 1e6)
"""


def _todo_call(project: Path, call: int) -> bytes:
    """The payload of TodoWrite number ``call`` of a ten-item list: the items before it done, it in progress."""
    todos = [
        {
            "content": f"item {i}",
            "status": "completed" if i < call else "in_progress" if i == call else "pending",
            "activeForm": f"doing item {i}",
        }
        for i in range(10)
    ]
    payload = {
        "session_id": "versus",
        "transcript_path": str(project / "transcript.jsonl"),
        "cwd": str(project),
        "hook_event_name": "PostToolUse",
        "tool_name": "TodoWrite",
        "tool_use_id": f"toolu_versus{call:04d}",
        "tool_input": {"todos": todos},
        "tool_response": {"oldTodos": [], "newTodos": todos},
    }
    return json.dumps(payload).encode()


class _HookSession:
    """One install's captured session: five TodoWrite calls made untimed; each timed call is the sixth, on a
    fresh copy of the session's folder."""

    def __init__(self, workdir: Path, name: str, plantrail: str) -> None:
        self.project = workdir / f"hook-{name}"
        self.project.mkdir()
        self.argv = [plantrail, "hook", "claude"]
        for call in range(5):
            subprocess.run(
                self.argv, input=_todo_call(self.project, call), cwd=self.project, capture_output=True, check=True
            )
        self.pristine = workdir / f"hook-{name}.pristine"
        shutil.copytree(self.project / ".plantrail", self.pristine)
        self.payload = _todo_call(self.project, 5)

    def reset(self) -> None:
        shutil.rmtree(self.project / ".plantrail")
        shutil.copytree(self.pristine, self.project / ".plantrail")


def _measure_call(session: _HookSession) -> tuple[float, float]:
    """(wall s, CPU s) of one hook call on a fresh copy of the session (the copy untimed)."""
    session.reset()
    before, start = resource.getrusage(resource.RUSAGE_CHILDREN), time.perf_counter()
    subprocess.run(session.argv, input=session.payload, cwd=session.project, capture_output=True, check=False)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def _append_cpu(python: Path, workdir: Path, n: int) -> float:
    """CPU µs an event of ``n`` starts and completions recorded by the install's interpreter."""
    log = workdir / "append.jsonl"
    shutil.rmtree(f"{log}.plantrail-cache", ignore_errors=True)
    log.unlink(missing_ok=True)
    done = subprocess.run([str(python), "-c", _APPEND, str(log), str(n)], capture_output=True, text=True, check=True)
    return float(done.stdout.strip())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.versus", description=__doc__.split("\n\n")[0])
    parser.add_argument("log", type=Path, help="the log every command reads (bench.scenario.record_run makes one)")
    parser.add_argument("installs", nargs="+", metavar="NAME=VENV", help="a name and a virtualenv with plantrail")
    parser.add_argument("--command", action="append", help="a plantrail command and its options (default: verify)")
    parser.add_argument("--hook", action="store_true", help="also time one `plantrail hook claude` call")
    parser.add_argument("--append", type=int, metavar="N", help="also time N starts and completions (CPU an event)")
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args(argv)
    installs: dict[str, Path] = {}
    for install in args.installs:
        name, _, venv = install.partition("=")
        if not venv:
            parser.error(f"{install!r} is not NAME=VENV")
        installs[name] = Path(venv).absolute()
    commands = args.command or ([] if args.hook or args.append else ["verify"])
    sides: dict[str, list[str]] = {"orjson loop": orjson_loop_process(args.log)}
    rows: list[tuple[str, str]] = []  # (row, install) of every timed side but the loop
    for command in commands:
        for name, venv in installs.items():
            sides[f"{name}: {command}"] = [str(venv / "bin" / "plantrail"), *shlex.split(command), str(args.log)]
            rows.append((command, name))
    with tempfile.TemporaryDirectory(prefix="versus-") as tmp:
        workdir = Path(tmp)
        sessions = (
            {name: _HookSession(workdir, name, str(venv / "bin" / "plantrail")) for name, venv in installs.items()}
            if args.hook
            else {}
        )
        rows += [("hook call", name) for name in sessions]
        walls: dict[str, list[float]] = {side: [] for side in sides} | {f"{n}: hook call": [] for n in sessions}
        cpus: dict[str, list[float]] = {side: [] for side in walls}
        per_event: dict[str, list[float]] = {name: [] for name in installs} if args.append else {}
        for repeat in range(args.repeats):
            order = list(installs) if repeat % 2 == 0 else list(reversed(installs))
            for side, command_line in sides.items():
                wall, cpu = _measure(command_line)
                walls[side].append(wall)
                cpus[side].append(cpu)
            for name in order if sessions else ():
                wall, cpu = _measure_call(sessions[name])
                walls[f"{name}: hook call"].append(wall)
                cpus[f"{name}: hook call"].append(cpu)
            for name in order if args.append else ():
                per_event[name].append(_append_cpu(installs[name] / "bin" / "python", workdir, args.append))
    loop_wall, loop_cpu = statistics.median(walls["orjson loop"]), statistics.median(cpus["orjson loop"])
    width = max(map(len, walls))
    print(f"{args.log} · medians of {args.repeats}, interleaved · load {os.getloadavg()[0]:.2f}")
    for side in walls:
        wall, cpu = statistics.median(walls[side]), statistics.median(cpus[side])
        ratios = f"wall {wall:8.3f} s ({wall / loop_wall:5.2f}x)  CPU {cpu:8.3f} s ({cpu / loop_cpu:5.2f}x)"
        print(f"{side:{width}}  {ratios}")
    for name, values in per_event.items():
        print(f"{name + ': append, fsync none':{width}}  CPU {statistics.median(values):8.2f} µs an event")
    names = list(installs)
    if len(names) > 1:
        first = names[0]
        print(f"ratios to {first} (medians; below 1 is faster):")
        for row in dict.fromkeys(row for row, _ in rows):
            for name in names[1:]:
                new, old = f"{name}: {row}", f"{first}: {row}"
                wall = statistics.median(walls[new]) / statistics.median(walls[old])
                cpu = statistics.median(cpus[new]) / statistics.median(cpus[old])
                print(f"  {name} {row}: wall {wall:.3f}x  CPU {cpu:.3f}x")
        for name in names[1:] if per_event else ():
            ratio = statistics.median(per_event[name]) / statistics.median(per_event[first])
            print(f"  {name} append, fsync none: CPU an event {ratio:.3f}x")
    print(f"load at the end {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
