"""plantrail's side of each benchmark row, and the baselines that need plantrail to set them up."""

from __future__ import annotations

import copy
import os
import shutil
import sys
import time
from pathlib import Path
from typing import Any, NamedTuple

from bench.harness import Probe, timed
from bench.scenario import Clock, record_run, scripted
from plantrail.ledger.api import Ledger
from plantrail.ledger.rules.decide import Command
from plantrail.ledger.stores.jsonl import cache, reads
from plantrail.ledger.stores.jsonl.current import read_state
from plantrail.ledger.stores.jsonl.log import LogReader
from plantrail.projections.history import fold_span, resume_receipt

__all__ = [
    "SETTLE_SECONDS",
    "Script",
    "append_batches",
    "append_each",
    "append_one",
    "cli_argv",
    "evidence_log",
    "fold_version_span",
    "full_replay",
    "make_log",
    "middle_version",
    "plantrail_argv",
    "rebuild_version",
    "replay_argv",
    "resume_now",
    "script",
    "status_argv",
    "verify",
]


def make_log(path: Path, n: int) -> Path:
    """A realistic run of ``n`` events recorded through the ledger (cached by path)."""
    if not path.exists():
        record_run(path, n)
    return path


def full_replay(path: Path) -> int:
    """Read, validate, check the chain of, and fold every line (no snapshot): the full replay a read without
    the cache makes (``plantrail status --no-cache``)."""
    return read_state(str(path), use_cache=False).state.last_seq


def verify(path: Path) -> int:
    """The full audit `plantrail verify` runs: one read, every check, the determinism check."""
    from plantrail.ledger.verify import verify_log

    return verify_log(path).last_seq


#: The evidence-heavy log: a 40-step plan, every step completed with this much evidence.
EVIDENCE_STEPS = 40
EVIDENCE_BYTES = 1 << 20


def evidence_log(path: Path, size: int = EVIDENCE_BYTES) -> Path:
    """A 40-step run whose every step completed with its own ``size`` characters of evidence (1 MiB: about
    40 MB; recorded once, untimed); its writer's close leaves the snapshot beside it, as a recording agent
    would."""
    if path.exists():
        return path
    steps = [
        {"id": f"s{i}", "title": f"step {i}", "dependsOn": [], "completionEvidence": "the tool output"}
        for i in range(EVIDENCE_STEPS)
    ]
    draft = {"goal": "an evidence-heavy run", "acceptanceCriteria": [{"id": "c", "description": "done"}]}
    chunk = "tool output line with some numbers 0123456789\n"
    evidence = (chunk * (size // len(chunk) + 1))[:size]
    with Ledger.create(path, draft | {"steps": steps}, run="evidence", fsync="none", clock=Clock()) as ledger:
        for i, step in enumerate(steps):
            ledger.start(step["id"])
            ledger.complete(step["id"], [f"{i:06d}" + evidence[6:]])  # each step its own output, as in a real run
    return path


#: Longer than a file-system clock tick (Linux's coarse clock: 1-10 ms): a snapshot written later is not racy.
SETTLE_SECONDS = 0.03


def append_one(path: Path) -> Probe:
    """A writer's whole append on a fresh copy of the log and its cache (copied untimed before each run): open
    it (the snapshot is checked, its references into the log read and checked by hash), verify a criterion,
    close (which writes the next snapshot)."""
    work = path.with_name("appending-" + path.name)
    cached, work_cached = Path(str(path) + cache.SUFFIX), Path(str(work) + cache.SUFFIX)

    def setup() -> None:
        for leftover in (work, work_cached):
            if leftover.is_dir():
                shutil.rmtree(leftover)
            elif leftover.exists():
                leftover.unlink()
        shutil.copyfile(path, work)
        if cached.is_dir():
            shutil.copytree(cached, work_cached)
        # A copy is another file, which the copied snapshot did not record: settle it as its own last writer
        # would have (a clock tick after its last change, one open and close), so that the timed append meets
        # a snapshot of this very file, as a log's next writer does.
        time.sleep(SETTLE_SECONDS)
        Ledger.open(work, fsync="none").close()

    def go() -> None:
        with Ledger.open(work, fsync="none") as ledger:
            ledger.verify_criterion("c", passed=True, evidence="checked by hand")

    return timed(go, setup)


def resume_now(path: Path) -> str:
    """The resume receipt the way `plantrail resume` computes it (snapshot plus whatever follows it)."""
    result = reads.read_state(str(path), use_cache=True, stop_at_damage=True)
    return str(resume_receipt(result.state, None)["verdict"])


def middle_version(path: Path) -> int:
    """A version from the middle of the log (untimed)."""
    return max(1, reads.read_state(str(path)).state.version // 2)


def rebuild_version(path: Path, version: int) -> int:
    """Rebuild one version through the version index (`plantrail replay --version V`)."""
    state, _, _ = reads.rebuild_version(str(path), version)
    return state.last_seq


def fold_version_span(path: Path, version: int) -> Any:
    """Baseline: fold only the version's own records, from its start (found untimed in the index)."""
    with LogReader(path) as reader:
        start = cache.version_start(str(path), reader.fd, version)
    assert start is not None, "build the version index first"

    def run() -> int:
        with LogReader(path) as reader:
            span, _ = fold_span(iter(reader.records(start=start.position, run=start.state.run)), start.state)
        return span.state.last_seq

    return run


class Script(NamedTuple):
    """A run's commands and the exact lines they append (after the header and the plan)."""

    draft: dict[str, Any]
    commands: list[Command]
    lines: list[bytes]


def script(workdir: Path, n: int) -> Script:
    """The commands of a realistic ``n``-event run and the lines they write (recorded once per benchmark run,
    untimed: a script a kept work dir holds from an earlier run is recorded again, with this plantrail)."""
    path = workdir / f"script-{n}.jsonl"
    for leftover in (path, Path(str(path) + cache.SUFFIX)):
        if leftover.is_dir():
            shutil.rmtree(leftover)
        elif leftover.exists():
            leftover.unlink()
    draft, commands, lines = scripted(path, n)
    return Script(draft, commands, lines)


def _fresh_ledger(path: Path, draft: dict[str, Any]) -> Ledger:
    for leftover in (path, Path(str(path) + cache.SUFFIX)):
        if leftover.is_dir():
            shutil.rmtree(leftover)
        elif leftover.exists():
            leftover.unlink()
    return Ledger.create(
        path, copy.deepcopy(draft), run="bench", fsync="always", nonce=f"{7:032x}", clock=Clock(), cache=False
    )


def append_each(path: Path, run: Script) -> Probe:
    """Durable appends: one command per append, fsync after each (the library's default policy)."""
    box: list[Ledger] = []

    def setup() -> None:
        box[:] = [_fresh_ledger(path, run.draft)]

    def go() -> None:
        ledger = box[0]
        for command in run.commands:
            ledger.execute(command)
        ledger.close()

    return timed(go, setup)


def append_batches(path: Path, run: Script, size: int = 100) -> Probe:
    """Group commit: ``size`` commands per append, one write and one fsync each."""
    box: list[Ledger] = []
    batches = [run.commands[i : i + size] for i in range(0, len(run.commands), size)]

    def setup() -> None:
        box[:] = [_fresh_ledger(path, run.draft)]

    def go() -> None:
        ledger = box[0]
        for batch in batches:
            ledger.execute_many(batch)
        ledger.close()

    return timed(go, setup)


def _plantrail() -> list[str]:
    found = shutil.which("plantrail", path=os.path.dirname(sys.executable)) or shutil.which("plantrail")
    return [found] if found else [sys.executable, "-m", "plantrail"]


def plantrail_argv() -> list[str]:
    """The `plantrail` command as argv (the installed script beside this interpreter, else -m)."""
    return _plantrail()


def cli_argv(path: Path, command: str, *args: str) -> list[str]:
    """`plantrail COMMAND LOG ARGS...` as a whole process."""
    return [*_plantrail(), command, str(path), *args]


def status_argv(path: Path) -> list[str]:
    """`plantrail status LOG` as a whole process."""
    return [*_plantrail(), "status", str(path)]


def replay_argv(path: Path) -> list[str]:
    """A whole process that replays ``path`` in full (for its peak memory)."""
    code = (
        "import sys\nfrom plantrail.ledger.stores.jsonl.log import LogReader\n"
        "from plantrail.projections.state import fold\n"
        "with LogReader(sys.argv[1]) as r:\n    fold(r.records())\n"
    )
    return [sys.executable, "-c", code, str(path)]
