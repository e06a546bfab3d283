"""Keyed checkpoints: an HMAC over the head, key kept outside the log, checked by verify with the key."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from plantrail.ledger.api import Ledger
from plantrail.ledger.checkpoint import key_id, note
from plantrail.ledger.verify import verify_log
from plantrail.ledger.vocabulary.errors import PlantrailError
from tests.conftest import CliResult
from tests.helpers.logs import build_log, lines_of, rechain, write_lines

KEY = b"a key the log never holds, 32 b"


@pytest.fixture
def log(make_ledger: Callable[..., Ledger], tmp_path: Path) -> Path:
    """A log with history and one checkpoint at seq 7, covering seq 6."""
    ledger = make_ledger()
    build_log(ledger, 4)
    assert ledger.checkpoint(KEY).seq == 7
    ledger.close()
    return tmp_path / "run.jsonl"


def verify_code(path: Path, key: bytes | None) -> str | None:
    """The code verify raises with ``key``, or None when the log verifies."""
    try:
        verify_log(path, key=key)
    except PlantrailError as exc:
        return exc.code
    return None


def test_checkpoint_covers_the_head_under_the_key(log: Path) -> None:
    """The checkpoint names the seq and hash of the record before it, the key's id and a MAC that verifies."""
    report = verify_log(log, key=KEY)
    assert (report.checkpoints, report.checkpointed_seq, report.keyed) == (1, 6, True)
    assert key_id(KEY) in lines_of(log)[-1].decode()
    assert note("run", 6, "ab" * 32) == b"plantrail/run\n6\n" + b"ab" * 32 + b"\n"


def test_another_key_or_no_checkpoint_fails(log: Path, tmp_path: Path, make_ledger: Callable[..., Ledger]) -> None:
    """A different key gives CHECKPOINT_INVALID; a key for a log without checkpoints gives CHECKPOINT_MISSING."""
    assert verify_code(log, b"some other key of 32 bytes......") == "CHECKPOINT_INVALID"
    make_ledger(name="bare.jsonl").close()
    assert verify_code(tmp_path / "bare.jsonl", KEY) == "CHECKPOINT_MISSING"


def test_rechained_history_passes_the_chain_but_not_the_key(log: Path) -> None:
    """An edit re-chained by someone without the key verifies without the key and fails with it."""
    lines = lines_of(log)
    lines[3] = lines[3].replace(b"one failure", b"all passing")
    write_lines(log, rechain(lines, 3))
    assert verify_code(log, None) is None
    assert verify_code(log, KEY) == "CHECKPOINT_INVALID"


def test_stripped_checkpoints_fail_with_the_key(log: Path) -> None:
    """Removing every checkpoint and re-chaining is caught: the key finds nothing to verify."""
    write_lines(log, lines_of(log)[:-1])
    assert verify_code(log, None) is None
    assert verify_code(log, KEY) == "CHECKPOINT_MISSING"


def test_cli_checkpoint_and_verify_with_key_file_and_env(
    log: Path, tmp_path: Path, run_cli: Callable[..., CliResult], monkeypatch: pytest.MonkeyPatch
) -> None:
    """`plantrail checkpoint` takes the key from --key-file or the environment; verify checks it either way."""
    key_file = tmp_path / "audit.key"
    key_file.write_bytes(KEY + b"\n")
    made = run_cli("checkpoint", log, "--key-file", key_file, "--json")
    assert made.code == 0 and made.json()["covers_seq"] == 7
    assert run_cli("verify", log, "--key-file", key_file, "--anchor", made.json()["anchor"]).code == 0

    monkeypatch.setenv("PLANTRAIL_CHECKPOINT_KEY", "not the key, but long enough")
    result = run_cli("verify", log)
    assert (result.code, result.err.split(":")[0]) == (3, "error[CHECKPOINT_INVALID]")
    assert "line 8" in result.err


@pytest.mark.parametrize("key", [b"", b"short\n"])
def test_missing_or_short_key_is_a_usage_error(
    log: Path, tmp_path: Path, run_cli: Callable[..., CliResult], key: bytes
) -> None:
    """A key file that is empty or under 16 bytes is refused with exit 2 and the log is unchanged."""
    key_file = tmp_path / "k"
    key_file.write_bytes(key)
    before = log.read_bytes()
    result = run_cli("checkpoint", log, "--key-file", key_file)
    assert (result.code, result.err.split(":")[0]) == (2, "error[CHECKPOINT_KEY_INVALID]")
    assert log.read_bytes() == before
