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
from bench.scenario import Clock, commands_for, record_run, scripted
from plantrail.ledger.api import Ledger
from plantrail.ledger.rules.decide import Command
from plantrail.ledger.stores.jsonl import cache, reads
from plantrail.ledger.stores.jsonl.current import read_state
from plantrail.ledger.stores.jsonl.log import LogReader
from plantrail.projections.history import fold_span, resume_receipt

__all__ = [
    "SETTLE_SECONDS",
    "Script",
    "append_argv",
    "append_batches",
    "append_each",
    "append_in_place",
    "append_one",
    "appendable_log",
    "behind_log",
    "cli_argv",
    "evidence_log",
    "fold_version_span",
    "full_replay",
    "make_log",
    "middle_version",
    "plan_draft",
    "plan_events",
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


#: How often the signed log of the `verify --pubkey` row is signed: a checkpoint every this many records.
SIGN_EVERY = 1000


def signed_log(path: Path, n: int, key: Path) -> tuple[Path, Path]:
    """The scenario's run of ``n`` events recorded by a writer signing every :data:`SIGN_EVERY` records and at
    the end, with the key pair ``key``.key / ``key``.pub made on first use (recorded once, untimed); return the
    log and the public key."""
    from plantrail.ledger.signing import keygen, load_signer
    from plantrail.ledger.signing_policy import SigningPolicy, signing

    public = key.with_name(key.name + ".pub")
    if not public.exists():
        keygen(str(key))
    if not path.exists():
        signer = load_signer(str(key.with_name(key.name + ".key")))
        with signing(SigningPolicy(signer, SIGN_EVERY)):
            record_run(path, n)
        with Ledger.open(path, fsync="none", cache=False) as ledger:
            ledger.sign_checkpoint(signer)
    return path, public


def verify_pubkey(path: Path, public: Path) -> int:
    """`plantrail verify --pubkey`: every check of `verify`, the tree of every signed checkpoint and its
    signature."""
    from plantrail.ledger.signing import load_verifier
    from plantrail.ledger.verify import verify_log

    return verify_log(path, pubkey=load_verifier(str(public))).signed


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


def _remove(path: Path) -> None:
    """Remove a log and its cache, if there."""
    for leftover in (path, Path(str(path) + cache.SUFFIX)):
        if leftover.is_dir():
            shutil.rmtree(leftover)
        elif leftover.exists():
            leftover.unlink()


#: Steps started and completed, one command per append, in each run of the plan-size rows.
PLAN_EVENTS_STEPS = 20


def plan_draft(steps: int, *, contract: bool) -> dict[str, Any]:
    """A plan of ``steps`` independent steps, up to four in progress; ``contract``: it also sets a run budget,
    so it uses the v2 contract (the stop policy judges every start)."""
    policy: dict[str, Any] = {"max_in_progress": 4} | ({"max_turns": 10**6} if contract else {})
    return {
        "goal": "a plan of many steps",
        "acceptance_criteria": [{"id": "c", "description": "every step done"}],
        "steps": [
            {"id": f"s{i}", "title": f"step {i}", "depends_on": [], "completion_evidence": "the tool output"}
            for i in range(steps)
        ],
        "policy": policy,
    }


def plan_events(folder: Path, steps: int, *, contract: bool) -> Probe:
    """Seconds per event of an open writer starting and completing :data:`PLAN_EVENTS_STEPS` steps of a plan of
    ``steps`` steps, one command per append (fsync none: the row measures the work per event, not the disk).
    Before each run, untimed: a fresh copy of the plan's log is opened and records one start and completion
    (what is indexed once per plan, as the open read it whole, is built then)."""
    template = folder / f"plan-{steps}-{'v2' if contract else 'v1'}.jsonl"
    if not template.exists():
        Ledger.create(
            template, plan_draft(steps, contract=contract), run="plan", fsync="none", clock=Clock(), cache=False
        ).close()
    work = template.with_name("working-" + template.name)
    box: list[Ledger] = []

    def probe() -> float:
        for ledger in box:
            ledger.close()
        _remove(work)
        shutil.copyfile(template, work)
        ledger = Ledger.open(work, fsync="none", clock=Clock(), cache=False)
        box[:] = [ledger]
        last = f"s{steps - 1}"
        ledger.start(last)
        ledger.complete(last, "warm")
        begin = time.perf_counter()
        for i in range(PLAN_EVENTS_STEPS):
            ledger.start(f"s{i}")
            ledger.complete(f"s{i}", "the tool output")
        return (time.perf_counter() - begin) / (2 * PLAN_EVENTS_STEPS)

    return probe


def appendable_log(source: Path, dest: Path) -> Path:
    """A copy of ``source`` and its cache to append to (made once, untimed), settled as its last writer would
    leave it (see :func:`append_one`)."""
    if not dest.exists():
        _remove(dest)
        shutil.copyfile(source, dest)
        cached = Path(str(source) + cache.SUFFIX)
        if cached.is_dir():
            shutil.copytree(cached, Path(str(dest) + cache.SUFFIX))
        time.sleep(SETTLE_SECONDS)
        Ledger.open(dest, fsync="none").close()
    return dest


def append_in_place(path: Path) -> Probe:
    """A writer's whole append to ``path`` itself: open (the snapshot and what follows it), verify a criterion
    (fsync always, as a recording agent appends), close. Each run adds one record to the log."""

    def go() -> None:
        with Ledger.open(path) as ledger:
            ledger.verify_criterion("c0", passed=True, evidence="checked by hand")

    return timed(go)


def append_argv(path: Path) -> list[str]:
    """A whole process making the append of :func:`append_in_place` (for its peak memory)."""
    code = (
        "import sys\nfrom plantrail.ledger.api import Ledger\n"
        "with Ledger.open(sys.argv[1]) as ledger:\n"
        "    ledger.verify_criterion('c0', passed=True, evidence='checked by hand')\n"
    )
    return [sys.executable, "-c", code, str(path)]


def behind_log(path: Path, n: int, behind: int) -> Path:
    """A recorded run of ``n`` events whose snapshot is ``behind`` records behind its end (made once, untimed):
    recorded with its snapshot, then ``behind`` more of the scenario's commands appended with the cache off, and
    the snapshot put back as the first writer left it, so it is that far behind whatever a writer's snapshot
    policy is (a read never writes one)."""
    if path.exists():
        return path
    _remove(path)
    record_run(path, n)
    cached, saved = Path(str(path) + cache.SUFFIX), path.with_name(path.name + ".saved-cache")
    if saved.exists():
        shutil.rmtree(saved)
    shutil.copytree(cached, saved)
    with Ledger.open(path, fsync="none", cache=False) as ledger:
        target = ledger.state.last_seq + behind
        for batch in commands_for(ledger, target):
            for command in batch:
                if ledger.state.last_seq >= target:
                    break
                ledger.execute(command)
            if ledger.state.last_seq >= target:
                break
    if cached.exists():
        shutil.rmtree(cached)
    saved.rename(cached)
    return path
