"""The hook journal's kept mapping state: used only for the very bytes it was built from, read and hashed once."""

from __future__ import annotations

import hashlib
from pathlib import Path

import orjson
import pytest

from plantrail.ledger.capture.hook import claude_hook
from plantrail.ledger.capture.live import advance, load_state
from tests.helpers.hook_payloads import post_tool_use


def _todo(project: Path, call: str, *items: tuple[str, str]) -> bytes:
    todos = [{"content": text, "status": status, "activeForm": text} for text, status in items]
    payload = post_tool_use("s1", project, "TodoWrite", call, {"todos": todos}, {"oldTodos": [], "newTodos": todos})
    return orjson.dumps(payload)


@pytest.fixture
def journal(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A session's journal after two captured plan updates (its mapping state kept)."""
    monkeypatch.delenv("PLANTRAIL_HOME", raising=False)
    monkeypatch.delenv("PLANTRAIL_STORE", raising=False)
    for call, first, second in (("toolu_1", "in_progress", "pending"), ("toolu_2", "completed", "in_progress")):
        assert claude_hook(_todo(tmp_path, call, ("read", first), ("fix", second))).errors == ()
    [found] = (tmp_path / ".plantrail" / "capture").glob("s1.*.jsonl")
    return found


def test_the_kept_state_comes_with_the_digest_of_the_bytes_it_describes(journal: Path) -> None:
    """A kept state is returned with the SHA-256 of the journal's first bytes, the digest it holds, whether
    the journal's bytes are given or read."""
    blob = journal.read_bytes()

    for given in (blob, None):
        kept = load_state(journal, given)
        assert kept is not None
        state, prefix = kept
        assert state.offset == len(blob)
        assert prefix.hexdigest() == state.digest == hashlib.sha256(blob).hexdigest()


def test_a_kept_state_of_other_bytes_is_not_used(journal: Path) -> None:
    """A journal whose first bytes changed (same length) or shrank has no kept state: it is mapped again from
    its start."""
    blob = journal.read_bytes()
    at = blob.index(b'"read"') + 1
    changed = blob[:at] + b"R" + blob[at + 1 :]

    assert load_state(journal, changed) is None
    assert load_state(journal, blob[:-1]) is None
    journal.write_bytes(changed)
    assert load_state(journal) is None


def test_advancing_hashes_on_from_the_kept_prefix(journal: Path) -> None:
    """Advancing a kept state over lines appended since gives the digest of the journal's new whole lines,
    as hashing the journal from its start does."""
    kept = load_state(journal)
    assert kept is not None
    state, prefix = kept
    with open(journal, "ab") as handle:
        handle.write(b'{"type":"system","subtype":"note"}\n{"torn":')
    blob = journal.read_bytes()

    advance(journal, state, blob, prefix)

    assert state.offset == blob.rindex(b"\n") + 1
    assert state.digest == hashlib.sha256(blob[: state.offset]).hexdigest()
