"""Snapshots point into the log for large texts: same state as a full fold, small, and ignored when a record changed."""

from __future__ import annotations

import contextlib
import copy
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from plantrail.ledger.api import Ledger
from plantrail.ledger.rules.decide import Command, Replan
from plantrail.ledger.stores.jsonl import cache, reads, seal
from plantrail.ledger.vocabulary.errors import Refused
from plantrail.ledger.vocabulary.plan import PlanSpec
from plantrail.projections.canonical import state_hash
from plantrail.projections.state_json import INLINE_MAX
from tests.conftest import LOGIN_DRAFT, CliResult
from tests.stores.test_cache import _payload
from tests.strategies import commands, plans


def _enlarge(command: Command, factor: int) -> Command:
    """The command with every text it carries repeated ``factor`` times (evidence, reasons, errors, why; a
    replan's reason is a code from a closed set, not a text)."""
    fields: dict[str, Any] = {}
    for name in ("evidence", "reason", "error", "why"):
        if name == "reason" and isinstance(command, Replan):
            continue
        value = getattr(command, name, None)
        if isinstance(value, str):
            fields[name] = value * factor
        elif isinstance(value, tuple | list):
            fields[name] = type(value)(v * factor for v in value)
    return msgspec.structs.replace(command, **fields)


def _full(log: Path) -> str:
    return state_hash(reads.read_state(str(log), use_cache=False).state)


def _snapshot_seq(log: Path) -> int | None:
    return reads.read_state(str(log)).snapshot_seq


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    plans(),
    st.lists(st.tuples(commands(), st.sampled_from([1, 300, 2000]), st.booleans()), max_size=25),
)
def test_the_state_from_a_referencing_snapshot_equals_the_full_fold(
    plan: PlanSpec, steps: list[tuple[Command, int, bool]]
) -> None:
    """On random logs with large texts and late results, reopened at random points, every snapshot read and
    every writer resumed from one gives the full fold's state hash."""
    with tempfile.TemporaryDirectory() as folder:
        log = Path(folder) / "run.jsonl"
        ledger = Ledger.create(log, plan, fsync="none")
        try:
            for command, factor, reopen in steps:
                with contextlib.suppress(Refused):  # illegal commands are part of a random log
                    ledger.execute(_enlarge(command, factor))
                if reopen:
                    ledger.close()
                    assert state_hash(reads.read_state(str(log)).state) == _full(log)
                    ledger = Ledger.open(log, fsync="none")
                    assert state_hash(ledger.state) == _full(log)
        finally:
            ledger.close()
        assert _snapshot_seq(log) is not None
        assert state_hash(reads.read_state(str(log)).state) == _full(log)


def _evidence_run(path: Path, steps: int, size: int) -> Path:
    """A run of ``steps`` steps, each completed with ``size`` characters of evidence, a late result of the same
    size and a large criterion verdict; each command by its own writer, as the CLI records them."""
    draft = {
        "goal": "an evidence-heavy run",
        "acceptanceCriteria": [{"id": "c", "description": "done"}],
        "steps": [
            {"id": f"s{i}", "title": f"step {i}", "dependsOn": [], "completionEvidence": "output"} for i in range(steps)
        ],
    }
    chunk = "tool output line with some numbers 0123456789\n"
    evidence = (chunk * (size // len(chunk) + 1))[:size]
    Ledger.create(path, draft, fsync="none").close()
    for i in range(steps):
        with Ledger.open(path, fsync="none") as ledger:
            ledger.start(f"s{i}")
        with Ledger.open(path, fsync="none") as ledger:
            ledger.complete(f"s{i}", [evidence + str(i)])
    with Ledger.open(path, fsync="none") as ledger:
        ledger.verify_criterion("c", True, evidence)
        draft["steps"][0]["title"] = "step 0, again"
        ledger.replan("new_constraint", "s0 changed", plan=draft)
    return path


def test_a_snapshot_stays_small_whatever_the_evidence(tmp_path: Path) -> None:
    """A 40-step plan with 1 MiB of evidence per step leaves a snapshot under 1 MB that reads as the full fold."""
    log = _evidence_run(tmp_path / "run.jsonl", 40, 1 << 20)
    snap = Path(str(log) + ".plantrail-cache") / "head.snap"
    assert log.stat().st_size > 40 << 20
    assert snap.stat().st_size < 1_000_000
    assert _snapshot_seq(log) == reads.read_state(str(log)).state.last_seq
    assert state_hash(reads.read_state(str(log)).state) == _full(log)


def test_a_reference_to_a_changed_record_makes_the_snapshot_unused(tmp_path: Path) -> None:
    """Changing one byte of a record a snapshot points into (keeping the file's size) makes readers and writers
    ignore the snapshot: the read goes back to the first line, which names the damage."""
    log = _evidence_run(tmp_path / "run.jsonl", 3, 4 * INLINE_MAX)
    _, state_line = _payload(Path(str(log) + ".plantrail-cache") / "head.snap").split(b"\n", 1)
    referenced = int(state_line.split(b'{"$ref":[', 1)[1].split(b",", 1)[0])  # where one pointed-to record lies
    data = bytearray(log.read_bytes())
    at = data.index(b"tool output line", referenced) + 5
    data[at : at + 1] = b"O"
    log.write_bytes(bytes(data))
    with open(log, "rb") as f:
        assert cache.load_snapshot(str(log), f.fileno()) is None
    damaged = reads.read_state(str(log), stop_at_damage=True)
    assert damaged.snapshot_seq is None and damaged.damage is not None


def test_texts_the_log_does_not_hold_stay_inline(tmp_path: Path) -> None:
    """A large reason the reducer derives (attempts exhausted, with the last error) is copied into the snapshot,
    and the state still reads back as the full fold."""
    draft = copy.deepcopy(LOGIN_DRAFT)
    for step in draft["steps"]:
        step["maxAttempts"] = 1
    with Ledger.create(tmp_path / "run.jsonl", draft, fsync="none") as ledger:
        first = draft["steps"][0]["id"]
        ledger.start(first)
        ledger.fail(first, "E" * (3 * INLINE_MAX))
    log = tmp_path / "run.jsonl"
    _, state_line = _payload(Path(str(log) + ".plantrail-cache") / "head.snap").split(b"\n", 1)
    assert b'"$ref"' in state_line and b"attempts exhausted" in state_line
    assert state_hash(reads.read_state(str(log)).state) == _full(log)


def test_deleting_a_referencing_cache_changes_no_answer(tmp_path: Path, run_cli: Callable[..., CliResult]) -> None:
    """status, next and resume answer the same on an evidence-heavy log with its snapshot and without any cache."""
    log = _evidence_run(tmp_path / "run.jsonl", 4, 8 * INLINE_MAX)
    commands = [("status", "--json"), ("next", "--json"), ("resume", "--json")]
    warm = [run_cli(c[0], log, *c[1:]) for c in commands]
    shutil.rmtree(str(log) + ".plantrail-cache")
    cold = [run_cli(c[0], log, *c[1:]) for c in commands]
    strip = '"snapshot_seq"'
    for w, c in zip(warm, cold, strict=True):
        assert w.code == c.code
        assert [line for line in w.out.splitlines() if strip not in line] == [
            line for line in c.out.splitlines() if strip not in line
        ]
    assert any('"snapshot_seq": null' not in w.out and strip in w.out for w in warm)


def test_a_late_results_large_evidence_is_a_reference(tmp_path: Path) -> None:
    """A late result's large evidence (an orphan) is referenced like a step's, and reads back as the full fold."""
    draft = copy.deepcopy(LOGIN_DRAFT)
    first = draft["steps"][0]["id"]
    late = "late output " * (INLINE_MAX // 4) + "end"
    with Ledger.create(tmp_path / "run.jsonl", draft, fsync="none") as ledger:
        ledger.start(first)
        draft["steps"][0]["title"] += ", again"
        ledger.replan("new_constraint", "the step changed", plan=draft)
        ledger.complete(first, [late], plan_version=1, attempt=1)
        assert ledger.state.orphans and ledger.state.orphans[-1].evidence == (late,)
    log = tmp_path / "run.jsonl"
    key = seal.cache_key(create=False)
    assert key is not None
    kept = seal.unseal(key, "snapshot.kept", (Path(str(log) + cache.SUFFIX) / cache.KEPT_FILE).read_bytes())
    assert kept is not None and b'"orphans":[{' in kept  # the late results live in the kept members' file
    assert b"late output" not in kept and b'"$ref"' in kept
    assert state_hash(reads.read_state(str(log)).state) == _full(log)


def test_the_idempotency_index_lives_in_its_own_file_rewritten_only_when_it_changes(
    make_ledger: Callable[..., Ledger], draft: dict[str, Any]
) -> None:
    """An append without a key leaves keys.snap as it was; a keyed one rewrites it; readers answer from the
    snapshot without it, and a writer without it reads the log in full and still knows every key."""
    ledger = make_ledger(draft)
    first = draft["steps"][0]["id"]
    ledger.start(first, idempotency_key="k1")
    ledger.close()
    log = Path(ledger.location)
    keys = Path(str(log) + ".plantrail-cache") / "keys.snap"
    before = keys.stat().st_ino, keys.read_bytes()
    with Ledger.open(log, fsync="none") as again:
        again.complete(first, ["done"])
    assert (keys.stat().st_ino, keys.read_bytes()) == before
    with Ledger.open(log, fsync="none") as again:
        again.start(draft["steps"][1]["id"], idempotency_key="k2")
    assert keys.read_bytes() != before[1]
    keys.unlink()
    assert _snapshot_seq(log) == reads.read_state(str(log)).state.last_seq
    with Ledger.open(log, fsync="none") as again:
        assert again.start(first, idempotency_key="k1").duplicate
        assert again.start(draft["steps"][1]["id"], idempotency_key="k2").duplicate
    assert state_hash(reads.read_state(str(log)).state) == _full(log)
