"""CPU time of the hook row's processes: `python -m bench.hook_cpu [--repeats N] [NAME=VENV ...]`.

The hook row (`python -m bench.run --rows 'hook claude'`) compares wall times, which a shared machine makes
noisy; this prints, for each install, the medians of the user + sys CPU time of the same three processes on
the same 1,000-event session (bench/hooks.py): `plantrail hook claude` (the session reset untimed before),
`plantrail status` on the log that call just wrote (as the row runs it), and `plantrail finish` (a plain
write, reset before), interleaved across installs so that load hits all of them alike. Each install (a
virtualenv with plantrail installed, default: this interpreter's) builds its own session.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

__all__ = ["main"]

_BUILD = """
import sys
from pathlib import Path
sys.path.insert(0, {root!r})
from bench.hooks import hook_session
session = hook_session(Path({work!r}), {events})
Path({work!r}, "payload").write_bytes(session.payload)
print(session.project, session.pristine, session.log, sep="\\n")
"""


def _measure(argv: list[str], stdin: bytes | None) -> tuple[float, float]:
    """(CPU ms, wall ms) of one process run to completion."""
    before, start = resource.getrusage(resource.RUSAGE_CHILDREN), time.perf_counter()
    subprocess.run(argv, input=stdin, capture_output=True, check=True)
    wall, after = time.perf_counter() - start, resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    return cpu * 1000, wall * 1000


def main(argv: list[str] | None = None) -> int:
    """Measure and print one line per install."""
    parser = argparse.ArgumentParser(prog="python -m bench.hook_cpu", description=__doc__.split("\n\n")[0])
    parser.add_argument("installs", nargs="*", help="NAME=VENV (default: this interpreter's install)")
    parser.add_argument("--repeats", type=int, default=25)
    parser.add_argument("--events", type=int, default=1000)
    args = parser.parse_args(argv)
    installs = dict(item.split("=", 1) for item in args.installs) or {"this": str(Path(sys.executable).parent.parent)}
    root = str(Path(__file__).resolve().parent.parent)
    folder = Path(tempfile.mkdtemp(prefix=".plantrail-bench-cpu-", dir=root))
    try:
        sessions = {}
        for name, venv in installs.items():
            work = folder / name
            work.mkdir()
            code = _BUILD.format(root=root, work=str(work), events=args.events)
            built = subprocess.run([f"{venv}/bin/python", "-c", code], capture_output=True, text=True, check=True)
            project, pristine, log = built.stdout.split("\n")[:3]
            sessions[name] = (Path(project), Path(pristine), log, (work / "payload").read_bytes())
        times: dict[tuple[str, str], list[tuple[float, float]]] = {}
        for _ in range(args.repeats):
            for name, venv in installs.items():
                project, pristine, log, payload = sessions[name]
                plantrail = f"{venv}/bin/plantrail"
                for kind, command, stdin in (
                    ("hook", [plantrail, "hook", "claude"], payload),
                    ("status", [plantrail, "status", log], None),
                    ("finish", [plantrail, "finish", log, "--outcome", "paused", "--reason", "bench"], None),
                ):
                    if kind != "status":  # status reads the log the hook call just wrote, as the row does
                        shutil.rmtree(project / ".plantrail")
                        shutil.copytree(pristine, project / ".plantrail")
                    times.setdefault((name, kind), []).append(_measure(command, stdin))
        for name in installs:
            cpu = {k: statistics.median(t[0] for t in times[(name, k)]) for k in ("hook", "status", "finish")}
            wall = {k: statistics.median(t[1] for t in times[(name, k)]) for k in ("hook", "status", "finish")}
            print(
                f"{name}: CPU hook {cpu['hook']:.1f} ms, status {cpu['status']:.1f} ms, finish {cpu['finish']:.1f} ms"
                f" (hook {cpu['hook'] / cpu['status']:.2f}x status, finish {cpu['finish'] / cpu['status']:.2f}x);"
                f" wall hook {wall['hook'] / wall['status']:.2f}x status"
            )
        print(f"medians of {args.repeats}, load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
