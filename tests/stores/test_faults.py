"""Faults: a short write, a full disk or a failed fsync leaves the log as it was or poisons the writer, and
reopening verifies clean; a create killed at any step leaves no log or a valid one, never a headless one."""

from __future__ import annotations

import copy
import errno
import multiprocessing
import os
import signal
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from plantrail.ledger.api import Ledger
from plantrail.ledger.stores.jsonl import log as jsonl_store
from plantrail.ledger.stores.jsonl.log import repair
from plantrail.ledger.verify import verify_log
from plantrail.ledger.vocabulary.errors import PlantrailError
from tests.conftest import LOGIN_DRAFT, CliResult
from tests.helpers.logs import build_log

MakeLedger = Callable[..., Ledger]


def on_log(path: Path, real: Callable[..., Any], fault: Callable[..., Any]) -> Callable[..., Any]:
    """Wrap an ``os`` call so that it misbehaves (``fault``) only on descriptors of ``path``."""
    inode = path.stat().st_ino

    def call(fd: int, *args: Any) -> Any:
        return fault(fd, *args) if os.fstat(fd).st_ino == inode else real(fd, *args)

    return call


def raising(code: int) -> Callable[..., Any]:
    """A fault that raises an OSError with ``code``."""

    def fail(*_args: Any) -> Any:
        raise OSError(code, os.strerror(code))

    return fail


@pytest.fixture
def opened(make_ledger: MakeLedger, tmp_path: Path) -> tuple[Ledger, Path]:
    """A ledger with some history, fsync always, and its path."""
    ledger = make_ledger(fsync="always")
    build_log(ledger, 3)
    return ledger, tmp_path / "run.jsonl"


def append(ledger: Ledger) -> None:
    """One more append of a legal event."""
    ledger.verify_criterion("login-test-passes", True, "the login test passes")


def expect_error(code: str, action: Callable[[], object]) -> None:
    """Run ``action`` expecting a PlantrailError with ``code``."""
    with pytest.raises(PlantrailError) as caught:
        action()
    assert caught.value.code == code


def half_write(real: Callable[..., int]) -> Callable[..., int]:
    """A write that stores only half of its bytes and says so (a short write)."""
    return lambda fd, data: real(fd, bytes(data)[: len(data) // 2])


def half_then_enospc(real: Callable[..., int]) -> Callable[..., int]:
    """A write whose first half reaches the file before the disk fills up."""

    def write(fd: int, data: bytes) -> int:
        real(fd, bytes(data)[: len(data) // 2])
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    return write


@pytest.mark.parametrize(
    ("fault", "code"),
    [
        (half_write, "IO_ERROR"),
        (lambda real: raising(errno.ENOSPC), "NO_SPACE"),
        (half_then_enospc, "NO_SPACE"),
        (lambda real: raising(errno.EDQUOT), "NO_SPACE"),
    ],
    ids=["short-write", "enospc", "partial-then-enospc", "quota"],
)
def test_failed_write_leaves_the_file_as_it_was(
    opened: tuple[Ledger, Path], monkeypatch: pytest.MonkeyPatch, fault: Callable[..., Any], code: str
) -> None:
    """A short or failed append is cut back: the bytes are as before, and the writer goes on afterwards."""
    ledger, path = opened
    before = path.read_bytes()
    with monkeypatch.context() as patch:
        patch.setattr(os, "write", on_log(path, os.write, fault(os.write)))
        expect_error(code, lambda: append(ledger))
    assert path.read_bytes() == before
    append(ledger)
    assert verify_log(path).last_seq == ledger.state.last_seq


def test_failed_cut_back_poisons_the_writer_and_reopen_repairs(
    opened: tuple[Ledger, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """If a short write cannot even be cut back, the writer acknowledges nothing more; a reopen repairs."""
    ledger, path = opened
    last = ledger.state.last_seq
    with monkeypatch.context() as patch:
        patch.setattr(os, "write", on_log(path, os.write, half_write(os.write)))
        patch.setattr(os, "ftruncate", on_log(path, os.ftruncate, raising(errno.EIO)))
        expect_error("IO_ERROR", lambda: append(ledger))
    expect_error("WRITER_POISONED", lambda: append(ledger))
    expect_error("TORN_TAIL", lambda: Ledger.open(path))
    with Ledger.open(path, repair=True) as reopened:
        assert reopened.state.last_seq == last + 1  # the log.repaired record
    assert verify_log(path).torn is None


@pytest.mark.parametrize("policy", ["always", "batch"])
def test_failed_fsync_poisons_the_writer(
    make_ledger: MakeLedger, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, policy: str
) -> None:
    """A failed fsync is never retried: that append (or sync) fails and nothing more is acknowledged."""
    ledger = make_ledger(fsync=policy)
    path = tmp_path / "run.jsonl"
    with monkeypatch.context() as patch:
        patch.setattr(os, "fdatasync", on_log(path, os.fdatasync, raising(errno.EIO)))
        if policy == "batch":
            append(ledger)  # acknowledged as written, not yet durable
            expect_error("IO_ERROR", ledger.sync)
        else:
            expect_error("IO_ERROR", lambda: append(ledger))
    expect_error("WRITER_POISONED", lambda: append(ledger))
    expect_error("WRITER_POISONED", ledger.refresh)
    ledger.close()
    assert verify_log(path).torn is None


def test_full_disk_through_the_cli_exits_4_and_leaves_the_log(
    opened: tuple[Ledger, Path], monkeypatch: pytest.MonkeyPatch, run_cli: Callable[..., CliResult]
) -> None:
    """`plantrail` on a full disk prints error[NO_SPACE], exits 4 and leaves the log byte for byte."""
    ledger, path = opened
    ledger.close()
    before = path.read_bytes()
    monkeypatch.setattr(os, "write", on_log(path, os.write, raising(errno.ENOSPC)))
    result = run_cli("criterion", path, "login-test-passes", "--passed", "--evidence", "ok")
    assert (result.code, result.err.split(":")[0]) == (4, "error[NO_SPACE]")
    assert "Traceback" not in result.err
    assert path.read_bytes() == before


def test_failed_fsync_on_create_leaves_no_log(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A create whose fsync fails leaves neither the log nor its temporary file."""
    monkeypatch.setattr(os, "fsync", raising(errno.EIO))
    expect_error("IO_ERROR", lambda: Ledger.create(tmp_path / "run.jsonl", copy.deepcopy(LOGIN_DRAFT)))
    assert list(tmp_path.iterdir()) == []


def die(*_args: Any) -> Any:
    """SIGKILL the calling process: a crash at exactly this step."""
    os.kill(os.getpid(), signal.SIGKILL)


def half_write_then_die(fd: int, data: bytes) -> int:
    """Write half of the bytes, then crash."""
    os.pwrite(fd, bytes(data)[: len(data) // 2], 0)
    return die()  # type: ignore[no-any-return]


CREATE_STEPS: dict[str, tuple[Any, str, Callable[..., Any]]] = {
    "mid-write": (os, "write", half_write_then_die),
    "before-fsync": (os, "fsync", die),
    "before-link": (os, "link", die),
    "after-link": (os, "unlink", die),
    "before-dir-fsync": (jsonl_store, "fsync_dir", die),
}


def create_and_die(path: Path, step: str) -> None:
    """In a child: create a log, crashing at ``step``."""
    owner, name, crash = CREATE_STEPS[step]
    setattr(owner, name, crash)
    Ledger.create(path, copy.deepcopy(LOGIN_DRAFT))


@pytest.mark.parametrize("step", list(CREATE_STEPS))
def test_create_killed_at_any_step_leaves_no_log_or_a_valid_one(tmp_path: Path, step: str) -> None:
    """After a crash at any step of create the log is absent or valid, and leftovers are cleaned safely."""
    path = tmp_path / "run.jsonl"
    child = multiprocessing.get_context("fork").Process(target=create_and_die, args=(path, step))
    child.start()
    child.join()
    assert child.exitcode == -signal.SIGKILL

    if path.exists():
        assert verify_log(path).last_seq == 1
        repair(path)
    else:
        Ledger.create(path, copy.deepcopy(LOGIN_DRAFT)).close()
    assert sorted(p.name for p in tmp_path.iterdir() if not p.name.endswith(".plantrail-cache")) == ["run.jsonl"]
    assert verify_log(path).last_seq == 1


def test_a_live_creators_temporary_file_is_left_alone(tmp_path: Path) -> None:
    """Cleaning never removes the temporary file of a create that is still running."""
    path = tmp_path / "run.jsonl"
    live = tmp_path / f"run.jsonl.tmp.{os.getpid()}.0badc0de"
    live.write_bytes(b"in progress")
    Ledger.create(path, copy.deepcopy(LOGIN_DRAFT)).close()
    assert live.exists()
