"""The cache beside a log (snapshots, version index) changes no answer, and is ignored unless it checks out."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from plantrail.ledger.api import Ledger
from plantrail.ledger.stores.jsonl import cache, reads, seal
from plantrail.projections.canonical import state_hash
from plantrail.projections.state_json import REDUCER_VERSION
from tests.conftest import CliResult


def _run(make_ledger: Callable[..., Ledger], draft: dict[str, Any]) -> Path:
    """A run with two replans, a late result and a keyed command; closing it leaves a snapshot."""
    ledger = make_ledger(draft)
    ledger.start("reproduce", idempotency_key="w1")
    ledger.complete("reproduce", ["login.test.ts fails with 401"])
    ledger.start("diagnose")
    draft["steps"][1]["title"] = "Check what the auth service returns"
    ledger.replan("failed_assumption", "the 401 comes from the auth service", plan=draft, causes=[3])
    ledger.complete("diagnose", ["late: the token check"], plan_version=1, attempt=1)
    ledger.start("diagnose")
    draft["steps"][1]["title"] = "Trace the auth client timeout"
    ledger.replan("new_constraint", "auth times out", plan=draft, causes=[7])
    ledger.close()
    return Path(ledger.location)


def _payload(snap: Path) -> bytes:
    """The payload of a sealed cache file (read with this user's key)."""
    key = seal.cache_key(create=False)
    assert key is not None
    payload = seal.unseal(key, "snapshot", snap.read_bytes())
    assert payload is not None
    return payload


def _reseal(snap: Path, payload: bytes) -> None:
    """Write a payload sealed with this user's key, as plantrail itself would."""
    key = seal.cache_key(create=False)
    assert key is not None
    snap.write_bytes(seal.seal(key, "snapshot", payload))


def _answer(out: str) -> dict[str, Any]:
    """A command's JSON output."""
    parsed: dict[str, Any] = json.loads(out)
    return parsed


def _without_note(answer: dict[str, Any]) -> dict[str, Any]:
    """The answer without the note of where a snapshot answered."""
    return {k: v for k, v in answer.items() if k != "snapshot_seq"}


def _fresh(log: Path) -> str:
    return state_hash(reads.read_state(str(log), use_cache=False).state)


def test_a_snapshot_gives_the_same_state_as_a_full_read(
    make_ledger: Callable[..., Ledger], draft: dict[str, Any]
) -> None:
    """The state read through the snapshot equals the state folded from the first line."""
    log = _run(make_ledger, draft)
    assert (Path(str(log) + ".plantrail-cache") / "head.snap").exists()
    assert state_hash(reads.read_state(str(log)).state) == _fresh(log)


def test_a_writer_resumes_from_the_snapshot_with_its_idempotency_keys(
    make_ledger: Callable[..., Ledger], draft: dict[str, Any]
) -> None:
    """A reopened writer starts from the snapshot, still knows old keys, and appends after it."""
    log = _run(make_ledger, draft)
    with Ledger.open(log, fsync="none") as ledger:
        assert ledger.start("reproduce", idempotency_key="w1").duplicate
        ledger.start("diagnose")
    assert state_hash(reads.read_state(str(log)).state) == _fresh(log)


@pytest.mark.parametrize("damage", ["digest", "other-log", "cut-back", "reducer"])
def test_a_snapshot_that_does_not_check_out_is_ignored(
    make_ledger: Callable[..., Ledger], draft: dict[str, Any], tmp_path: Path, damage: str
) -> None:
    """An edited snapshot, another log's snapshot, a log cut back under it, or another reducer: all ignored."""
    log = _run(make_ledger, draft)
    snap = Path(str(log) + ".plantrail-cache") / "head.snap"
    meta, state = _payload(snap).split(b"\n", 1)
    if damage == "digest":
        _reseal(snap, meta + b"\n" + state.replace(b'"completed"', b'"blocked"'))
    elif damage == "reducer":
        ours = f'"reducer":{REDUCER_VERSION}'.encode()
        assert ours in meta
        _reseal(snap, meta.replace(ours, b'"reducer":99') + b"\n" + state)
    elif damage == "other-log":
        other = Ledger.create(tmp_path / "other.jsonl", draft, fsync="none")
        other.close()
        shutil.copytree(
            str(log) + ".plantrail-cache", str(tmp_path / "other.jsonl") + ".plantrail-cache", dirs_exist_ok=True
        )
        log = tmp_path / "other.jsonl"
    else:
        data = log.read_bytes()
        log.write_bytes(data[: data.rindex(b"\n", 0, len(data) - 1) + 1])  # drop the last record
    with open(log, "rb") as f:
        assert cache.load_snapshot(str(log), f.fileno()) is None
    assert state_hash(reads.read_state(str(log)).state) == _fresh(log)


def test_the_version_index_rebuilds_every_version_like_a_full_read(
    make_ledger: Callable[..., Ledger], draft: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """With the index, each version as it stood when superseded is exactly what a full fold gives."""
    log = _run(make_ledger, draft)
    monkeypatch.setattr(reads, "INDEX_FROM_BYTES", 0)
    for version in (1, 2, 3):
        plain = reads.rebuild_version(str(log), version, use_cache=False)
        indexed = reads.rebuild_version(str(log), version)
        assert (state_hash(indexed[0]), indexed[1]) == (state_hash(plain[0]), plain[1])
    with open(log, "rb") as f:
        start = cache.version_start(str(log), f.fileno(), 2)
    assert start is not None and start.state.version == 2


def test_a_version_blob_that_does_not_match_its_entry_is_not_used(
    make_ledger: Callable[..., Ledger], draft: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each index entry vouches for its own blob: an altered blob is not believed (the rebuild folds the log and
    gives the same answer), while the other versions' blobs still are (versions.bin is never read whole)."""
    log = _run(make_ledger, draft)
    monkeypatch.setattr(reads, "INDEX_FROM_BYTES", 0)
    reads.build_version_index(str(log))
    blobs = log.parent / (log.name + cache.SUFFIX) / "versions.bin"
    with open(log, "rb") as f:
        second = cache.version_start(str(log), f.fileno(), 2)
    assert second is not None
    raw = bytearray(blobs.read_bytes())
    raw[-1] ^= 0xFF  # the last version's blob ends the file
    blobs.write_bytes(bytes(raw))
    with open(log, "rb") as f:
        assert cache.version_start(str(log), f.fileno(), 3) is None
        again = cache.version_start(str(log), f.fileno(), 2)
    assert again is not None and state_hash(again.state) == state_hash(second.state)
    plain = reads.rebuild_version(str(log), 3, use_cache=False)
    indexed = reads.rebuild_version(str(log), 3)
    assert (state_hash(indexed[0]), indexed[1]) == (state_hash(plain[0]), plain[1])


def test_a_version_entry_that_was_edited_is_not_used_and_the_others_still_are(
    make_ledger: Callable[..., Ledger], draft: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each index entry carries its own MAC: one byte changed in version 2's entry makes that entry unusable
    (its rebuild folds the log and gives the same answer) while version 3's entry is still read alone."""
    log = _run(make_ledger, draft)
    monkeypatch.setattr(reads, "INDEX_FROM_BYTES", 0)
    reads.build_version_index(str(log))
    idx = log.parent / (log.name + cache.SUFFIX) / "versions.idx"
    raw = bytearray(idx.read_bytes())
    raw[cache._SEALED_AT + cache._SIGNED_ENTRY + 24] ^= 0x01  # version 2's line number: only its MAC covers it
    idx.write_bytes(bytes(raw))
    with open(log, "rb") as f:
        assert cache.version_start(str(log), f.fileno(), 2) is None
        assert cache.version_start(str(log), f.fileno(), 3) is not None
    plain = reads.rebuild_version(str(log), 2, use_cache=False)
    indexed = reads.rebuild_version(str(log), 2)
    assert (state_hash(indexed[0]), indexed[1]) == (state_hash(plain[0]), plain[1])


def test_a_superseded_version_is_answered_from_its_end_state_alone(
    make_ledger: Callable[..., Ledger], draft: dict[str, Any]
) -> None:
    """Each superseded version as it stood when superseded comes from the index with no record read, equal to a
    full fold's (late results up to the superseding record included); the active version is not answered so."""
    log = _run(make_ledger, draft)
    reads.build_version_index(str(log))
    with open(log, "rb") as f:
        for version in (1, 2):
            ended = cache.superseded_state(str(log), f.fileno(), version)
            plain, superseded_at, _ = reads.rebuild_version(str(log), version, use_cache=False)
            assert ended is not None and ended[1] == superseded_at
            assert state_hash(ended[0]) == state_hash(plain) and ended[0].orphans == plain.orphans
        assert cache.superseded_state(str(log), f.fileno(), 3) is None


def test_an_end_state_that_was_edited_is_not_used(make_ledger: Callable[..., Ledger], draft: dict[str, Any]) -> None:
    """One byte changed in version 1's end blob makes the index unable to answer for it (the rebuild folds the
    log instead and gives the same answer)."""
    log = _run(make_ledger, draft)
    reads.build_version_index(str(log))
    folder = log.parent / (log.name + cache.SUFFIX)
    idx = (folder / "versions.idx").read_bytes()
    end_at = cache._ENTRY.unpack(idx[cache._SEALED_AT : cache._SEALED_AT + cache._ENTRY.size])[8]
    blobs = bytearray((folder / "versions.bin").read_bytes())
    blobs[cache._SEALED_AT + end_at] ^= 0xFF
    (folder / "versions.bin").write_bytes(bytes(blobs))
    with open(log, "rb") as f:
        assert cache.superseded_state(str(log), f.fileno(), 1) is None
    plain = reads.rebuild_version(str(log), 1, use_cache=False)
    indexed = reads.rebuild_version(str(log), 1)
    assert (state_hash(indexed[0]), indexed[1]) == (state_hash(plain[0]), plain[1])


def test_replaying_a_superseded_version_imports_neither_the_store_nor_the_reducer(
    make_ledger: Callable[..., Ledger], draft: dict[str, Any]
) -> None:
    """``replay --version V`` of a superseded version, answered from the index, loads no codec, msgspec or
    reducer (which is what it costs over ``status``)."""
    import subprocess
    import sys

    log = _run(make_ledger, draft)
    reads.build_version_index(str(log))
    script = (
        "import sys\n"
        "from pathlib import Path\n"
        "from plantrail.ledger.audit import read_replay\n"
        "reading = read_replay(Path(sys.argv[1]), 1)\n"
        "assert reading.document['replay']['superseded_at'] == 5, reading.document['replay']\n"
        "heavy = ('plantrail.ledger.vocabulary.codec', 'msgspec', 'plantrail.projections.state')\n"
        "loaded = [m for m in heavy if m in sys.modules]\n"
        "print(','.join(loaded) or 'none')\n"
    )
    done = subprocess.run([sys.executable, "-c", script, str(log)], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "none"


def test_status_from_a_covering_snapshot_imports_neither_the_store_nor_the_reducer(
    make_ledger: Callable[..., Ledger], draft: dict[str, Any]
) -> None:
    """``status`` on a log its snapshot covers loads no codec, msgspec, event classes or reducer (what makes it
    start faster than importing its own dependencies)."""
    import subprocess
    import sys

    log = _run(make_ledger, draft)
    script = (
        "import sys\n"
        "from plantrail.cli.main import main\n"
        "try:\n"
        "    main(['status', sys.argv[1], '--json'])\n"
        "except SystemExit:\n"
        "    pass\n"
        "heavy = ('plantrail.ledger.vocabulary.codec', 'msgspec', 'plantrail.ledger.vocabulary.events',\n"
        "         'plantrail.projections.state')\n"
        "print('loaded:', ','.join(m for m in heavy if m in sys.modules) or 'none')\n"
    )
    done = subprocess.run([sys.executable, "-c", script, str(log)], capture_output=True, text=True, check=True)
    assert done.stdout.strip().splitlines()[-1] == "loaded: none"


def test_deleting_the_cache_changes_no_answer(
    make_ledger: Callable[..., Ledger],
    draft: dict[str, Any],
    run_cli: Callable[..., CliResult],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """status, resume and replay print the same through the snapshot and version index as without any cache
    (only the note of where the snapshot answered differs)."""
    log = _run(make_ledger, draft)
    monkeypatch.setattr(reads, "INDEX_FROM_BYTES", 0)  # so even this small log gets its version index
    commands = [("status", "--json"), ("resume", "--json"), ("replay", "--version", "2", "--json")]
    warm = [_answer(run_cli(c[0], log, *c[1:]).out) for c in commands]
    assert warm[0]["snapshot_seq"] == warm[1]["snapshot_seq"] == 8
    assert (Path(str(log) + ".plantrail-cache") / "versions.idx").exists()
    shutil.rmtree(str(log) + ".plantrail-cache")
    monkeypatch.setenv("PLANTRAIL_NO_CACHE", "1")
    cold = [_answer(run_cli(c[0], log, *c[1:]).out) for c in commands]
    assert cold[0]["snapshot_seq"] is None
    assert not Path(str(log) + ".plantrail-cache").exists()
    assert [_without_note(a) for a in warm] == [_without_note(a) for a in cold]


def test_a_writer_removes_the_temporary_files_a_killed_writer_left_and_nothing_else(
    make_ledger: Callable[..., Ledger], draft: dict[str, Any]
) -> None:
    """A writer killed between making a cache file's temporary copy (or a clock stamp) and renaming or removing
    it leaves it behind; the next writer removes such files once they are old, and leaves a young one (another
    writer may be using it) and every other file alone."""
    import os
    import time

    log = _run(make_ledger, draft)
    folder = Path(cache.cache_dir(str(log)))
    old = time.time() - seal.STALE_TMP_SECONDS - 60
    left = [folder / ".stamp.0123456789abcdef.tmp", folder / ".head.snap.fedcba9876543210.tmp"]
    young = folder / ".keys.snap.00112233445566ff.tmp"
    other = folder / "notes.tmp"
    for path in [*left, young, other]:
        path.write_bytes(b"")
    for path in [*left, other]:
        os.utime(path, (old, old))
    with Ledger.open(log) as ledger:
        ledger.start("diagnose")
    names = {p.name for p in folder.iterdir()}
    assert not names & {p.name for p in left}
    assert {young.name, other.name} <= names
    assert "head.snap" in names
