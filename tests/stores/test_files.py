"""Reading inputs: no open blocks, nothing but a regular file is read, and no input is read past its cap."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from plantrail.ledger.stores.files import open_regular, read_capped
from plantrail.ledger.vocabulary.errors import PlantrailError
from plantrail.ledger.vocabulary.limits import DRAFT, KEY_FILE, LIMITS, Limit

SMALL = Limit("draft", 100, "PLANTRAIL_TEST_CAP")


def test_open_regular_refuses_a_fifo_without_blocking(tmp_path: Path) -> None:
    """A FIFO with no writer is NOT_A_FILE at once (a blocking open would wait for a writer forever)."""
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(PlantrailError) as caught:
        open_regular(str(fifo))
    assert caught.value.code == "NOT_A_FILE"


def test_open_regular_refuses_devices_and_directories(tmp_path: Path) -> None:
    """/dev/zero and a directory are NOT_A_FILE; a missing file is LOG_NOT_FOUND or FILE_NOT_FOUND."""
    for path in ("/dev/zero", str(tmp_path)):
        with pytest.raises(PlantrailError) as caught:
            open_regular(path, what="draft")
        assert caught.value.code == "NOT_A_FILE"
    with pytest.raises(PlantrailError) as missing:
        open_regular(str(tmp_path / "nope"), what="draft")
    assert missing.value.code == "FILE_NOT_FOUND"


def test_open_regular_gives_a_blocking_descriptor(tmp_path: Path) -> None:
    """The descriptor of a regular file has O_NONBLOCK cleared again once the file is checked."""
    import fcntl

    path = tmp_path / "f"
    path.write_bytes(b"x")
    fd = open_regular(str(path))
    try:
        assert not fcntl.fcntl(fd, fcntl.F_GETFL) & os.O_NONBLOCK
    finally:
        os.close(fd)


def test_read_capped_takes_exactly_the_cap_and_refuses_one_byte_more(tmp_path: Path) -> None:
    """An input of exactly the cap is read whole; one byte more is INPUT_TOO_LARGE naming the cap."""
    path = tmp_path / "in"
    path.write_bytes(b"x" * 100)
    assert read_capped(str(path), SMALL) == b"x" * 100
    path.write_bytes(b"x" * 101)
    with pytest.raises(PlantrailError) as caught:
        read_capped(str(path), SMALL)
    assert (caught.value.code, caught.value.fields["limit"]) == ("INPUT_TOO_LARGE", 100)
    assert "PLANTRAIL_TEST_CAP" in caught.value.message


def test_standard_input_is_read_no_further_than_the_cap_plus_one(monkeypatch: pytest.MonkeyPatch) -> None:
    """From a pipe (standard input), read_capped consumes at most cap + 1 bytes before refusing."""
    read_end, write_end = os.pipe()
    os.write(write_end, b"y" * 1000)
    os.close(write_end)

    class Stdin:
        def fileno(self) -> int:
            return read_end

    monkeypatch.setattr(sys, "stdin", Stdin())
    with pytest.raises(PlantrailError) as caught:
        read_capped("-", SMALL)
    assert caught.value.code == "INPUT_TOO_LARGE"
    assert len(os.read(read_end, 2000)) == 1000 - 101
    os.close(read_end)


def test_a_cap_is_overridden_by_its_environment_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each cap reads its variable (ASCII digits); a malformed value is USAGE, an unset one the default."""
    assert DRAFT.cap() == 16 * 2**20 and KEY_FILE.cap() == 64 * 1024
    monkeypatch.setenv(DRAFT.env, "42")
    assert DRAFT.cap() == 42
    for bad in ("\u00b2", "-1", "1e6", "9" * 20, " 7"):
        monkeypatch.setenv(DRAFT.env, bad)
        with pytest.raises(PlantrailError) as caught:
            DRAFT.cap()
        assert caught.value.code == "USAGE"


def test_docs_limits_lists_every_cap_with_its_variable_and_default() -> None:
    """docs/limits.md has a row for every cap: its input, default in bytes and environment variable."""
    text = (Path(__file__).resolve().parents[2] / "docs" / "limits.md").read_text()
    for limit in LIMITS:
        assert f"| {limit.what} | {limit.default:,} | `{limit.env}` |" in text, limit
