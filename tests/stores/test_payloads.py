"""Payloads kept beside a run's records, in every store: a writer stores one before the record that names it,
durable when the call returns and appending nothing; a reader gets the bytes back only when they hash to their
name; a payload that is missing or altered is refused with its code, and bad arguments with USAGE."""

from __future__ import annotations

import copy
import hashlib
import os
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path

import pytest

from plantrail import Ledger, as_run
from plantrail.ledger.stores.jsonl.blobs import blobs_dir
from plantrail.ledger.stores.payloads import SALT_BYTES
from plantrail.ledger.stores.protocol import RunWriter
from plantrail.ledger.vocabulary.errors import PlantrailError
from tests.conftest import LOGIN_DRAFT
from tests.helpers.stores import JsonlTarget, PostgresTarget, unique_run

Target = JsonlTarget | PostgresTarget


@pytest.fixture
def location(target: Target) -> str:
    """A fresh run with a plan in the store."""
    where = target.location(unique_run("payloads"))
    Ledger.create(where, copy.deepcopy(LOGIN_DRAFT), fsync="none").close()
    return where


@pytest.fixture
def writer(location: str) -> Iterator[RunWriter]:
    """The run opened for appending."""
    opened = as_run(location).open_writer()
    yield opened
    opened.close()


def _code(action: object) -> str:
    with pytest.raises(PlantrailError) as caught:
        action()  # type: ignore[operator]
    return caught.value.code


def test_a_stored_payload_reads_back_by_its_name_and_appends_nothing(
    target: Target, location: str, writer: RunWriter
) -> None:
    """The name is sha256 over the salt and the bytes; the run's records are unchanged; any reader of the run
    (a new run object, another process's) gets the same bytes back."""
    before = target.lines(location)
    data = b"evidence: 3 tests failed\n" + bytes(range(256))
    salt = b"s" * SALT_BYTES
    stored = writer.store_payload(data, salt=salt)
    assert stored.digest == "sha256:" + hashlib.sha256(salt + data).hexdigest()
    assert stored.size == len(data)
    assert target.lines(location) == before
    with as_run(location) as run:
        assert run.payload(stored.digest) == data


def test_the_same_bytes_stored_twice_get_two_names(writer: RunWriter, location: str) -> None:
    """A fresh salt each time: the same bytes under two names, each readable (a guess of the bytes cannot be
    confirmed from a name without its salt); the same salt and bytes again keep one name."""
    first = writer.store_payload(b"the prompt")
    second = writer.store_payload(b"the prompt")
    assert first.digest != second.digest
    salt = os.urandom(SALT_BYTES)
    assert writer.store_payload(b"x", salt=salt) == writer.store_payload(b"x", salt=salt)
    with as_run(location) as run:
        assert run.payload(first.digest) == run.payload(second.digest) == b"the prompt"
        assert run.payload(writer.store_payload(b"").digest) == b""


def test_a_payload_stored_before_its_record_is_there_when_the_record_is(location: str, writer: RunWriter) -> None:
    """The order a format that names payloads relies on: store, then append the record naming it; a reader
    that sees the record finds the payload."""
    stored = writer.store_payload(b"full test output")
    with Ledger.open(location) as ledger:
        ack = ledger.start("reproduce")
        ledger.complete("reproduce", [f"output kept as {stored.digest}"])
    with as_run(location) as run:
        named = run.record_at(ack.seq + 1)
        digest = named.data.evidence[0].split()[-1]  # type: ignore[union-attr]
        assert run.payload(digest) == b"full test output"


def test_a_name_no_payload_has_is_missing(location: str, writer: RunWriter) -> None:
    """PAYLOAD_MISSING for a well-formed name the run holds nothing under, also before any payload was kept."""
    absent = "sha256:" + "0" * 64
    with as_run(location) as run:
        assert _code(lambda: run.payload(absent)) == "PAYLOAD_MISSING"
        writer.store_payload(b"another")
        assert _code(lambda: run.payload(absent)) == "PAYLOAD_MISSING"


def test_a_payload_of_another_run_is_not_this_runs(target: Target, location: str, writer: RunWriter) -> None:
    """Payloads are kept per run."""
    stored = writer.store_payload(b"mine")
    other = target.location(unique_run("other"))
    Ledger.create(other, copy.deepcopy(LOGIN_DRAFT), fsync="none").close()
    with as_run(other) as run:
        assert _code(lambda: run.payload(stored.digest)) == "PAYLOAD_MISSING"


def test_a_run_lists_the_names_of_its_payloads(target: Target, location: str, writer: RunWriter) -> None:
    """payload_names: none before the first payload, then every payload the run keeps, sorted, and no other
    run's; salted_payload gives each one's salt and bytes, which hash to its name."""
    with as_run(location) as run:
        assert run.payload_names() == []
    salt = b"t" * SALT_BYTES
    stored = [writer.store_payload(b"first", salt=salt), writer.store_payload(b"second"), writer.store_payload(b"")]
    other = target.location(unique_run("other"))
    Ledger.create(other, copy.deepcopy(LOGIN_DRAFT), fsync="none").close()
    with closing(as_run(other).open_writer()) as theirs:
        theirs.store_payload(b"not mine")
    with as_run(location) as run:
        assert run.payload_names() == sorted(s.digest for s in stored)
        assert run.salted_payload(stored[0].digest) == (salt, b"first")
        for name in run.payload_names():
            kept_salt, data = run.salted_payload(name)
            assert "sha256:" + hashlib.sha256(kept_salt + data).hexdigest() == name
        assert _code(lambda: run.salted_payload("sha256:" + "0" * 64)) == "PAYLOAD_MISSING"
        assert _code(lambda: run.salted_payload("0" * 64)) == "USAGE"
    with as_run(other) as run:
        assert len(run.payload_names()) == 1


def test_bad_arguments_are_refused_not_coerced(location: str, writer: RunWriter) -> None:
    """A text is not bytes, a salt is 32 bytes, a name is sha256:<64 lower-case hex>: USAGE, nothing stored."""
    assert _code(lambda: writer.store_payload("text")) == "USAGE"  # type: ignore[arg-type]
    assert _code(lambda: writer.store_payload(bytearray(b"x"))) == "USAGE"  # type: ignore[arg-type]
    assert _code(lambda: writer.store_payload(b"x", salt=b"short")) == "USAGE"
    with as_run(location) as run:
        for name in ("", "sha256:" + "A" * 64, "md5:" + "0" * 32, "0" * 64, "sha256:../../etc/passwd", 7):
            assert _code(lambda name=name: run.payload(name)) == "USAGE", name


def test_a_payload_over_the_cap_is_refused(location: str, writer: RunWriter, monkeypatch: pytest.MonkeyPatch) -> None:
    """INPUT_TOO_LARGE past $PLANTRAIL_MAX_PAYLOAD_BYTES, and nothing is stored."""
    monkeypatch.setenv("PLANTRAIL_MAX_PAYLOAD_BYTES", "10")
    assert writer.store_payload(b"0123456789").size == 10
    assert _code(lambda: writer.store_payload(b"0123456789A")) == "INPUT_TOO_LARGE"


# --------------------------------------------------------------------------- the file store's payload folder


@pytest.fixture
def log(tmp_path: Path) -> str:
    """A fresh log file with a plan."""
    path = str(tmp_path / "run.jsonl")
    Ledger.create(path, copy.deepcopy(LOGIN_DRAFT), fsync="none").close()
    return path


def test_a_log_keeps_its_payloads_in_its_blobs_folder(log: str) -> None:
    """``run.jsonl`` keeps them in ``run.blobs/``, one file per payload named by the digest's hex, holding the
    salt and the bytes; no temporary file is left."""
    with closing(as_run(log).open_writer()) as writer:
        stored = writer.store_payload(b"bytes", salt=b"\1" * SALT_BYTES)
    assert blobs_dir(log) == log[: -len(".jsonl")] + ".blobs"
    assert os.listdir(blobs_dir(log)) == [stored.digest.removeprefix("sha256:")]
    assert Path(blobs_dir(log), stored.digest[7:]).read_bytes() == b"\1" * SALT_BYTES + b"bytes"


@pytest.mark.parametrize("change", ["bytes", "salt", "truncated"])
def test_an_altered_payload_file_is_refused(log: str, change: str) -> None:
    """PAYLOAD_ALTERED when the file's bytes or its salt changed, or it was cut short; storing the payload
    again puts the right bytes back."""
    salt = b"\2" * SALT_BYTES
    with closing(as_run(log).open_writer()) as writer:
        stored = writer.store_payload(b"the real output", salt=salt)
        path = Path(blobs_dir(log), stored.digest[7:])
        blob = bytearray(path.read_bytes())
        if change == "truncated":
            del blob[40:]
        else:
            blob[SALT_BYTES + 2 if change == "bytes" else 3] ^= 1
        path.write_bytes(bytes(blob))
        with as_run(log) as run:
            assert _code(lambda: run.payload(stored.digest)) == "PAYLOAD_ALTERED"
            assert writer.store_payload(b"the real output", salt=salt) == stored
            assert run.payload(stored.digest) == b"the real output"


def test_planted_links_and_special_files_are_never_followed(log: str, tmp_path: Path) -> None:
    """A link in place of a payload or of the folder is refused NOT_A_FILE, a FIFO under a payload's name is no
    payload: nothing is followed, nothing blocks, nothing lands where a link points."""
    secret = tmp_path / "secret"
    secret.write_bytes(b"\0" * SALT_BYTES + b"not yours")
    digest = "sha256:" + hashlib.sha256(b"\0" * SALT_BYTES + b"not yours").hexdigest()
    folder = Path(blobs_dir(log))
    folder.mkdir()
    (folder / digest[7:]).symlink_to(secret)
    with as_run(log) as run:
        assert _code(lambda: run.payload(digest)) == "NOT_A_FILE"
        (folder / digest[7:]).unlink()
        os.mkfifo(folder / digest[7:])
        assert _code(lambda: run.payload(digest)) == "PAYLOAD_MISSING"
    folder.joinpath(digest[7:]).unlink()
    folder.rmdir()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    folder.symlink_to(elsewhere)
    with closing(as_run(log).open_writer()) as writer:
        assert _code(lambda: writer.store_payload(b"x")) == "NOT_A_FILE"
    assert list(elsewhere.iterdir()) == []
    with as_run(log) as run:
        assert _code(lambda: run.payload(digest)) == "NOT_A_FILE"


def test_only_payload_files_are_listed(log: str, tmp_path: Path) -> None:
    """A temporary file a store left, a file of another name, a sub-folder or a link in the payload folder is no
    payload: payload_names lists only the regular files named by a digest's hex."""
    with closing(as_run(log).open_writer()) as writer:
        stored = writer.store_payload(b"kept")
    folder = Path(blobs_dir(log))
    (folder / f".{'a' * 64}.tmp.1.abcd").write_bytes(b"x" * 40)
    (folder / "notes.txt").write_bytes(b"x")
    (folder / ("b" * 64)).mkdir()
    outside = tmp_path / "outside"
    outside.write_bytes(b"y" * 40)
    (folder / ("c" * 64)).symlink_to(outside)
    with as_run(log) as run:
        assert run.payload_names() == [stored.digest]


def test_a_closed_writer_stores_nothing(log: str) -> None:
    """A writer after close refuses with WRITER_POISONED and leaves no folder."""
    writer = as_run(log).open_writer()
    writer.close()
    assert _code(lambda: writer.store_payload(b"late")) == "WRITER_POISONED"
    assert not os.path.lexists(blobs_dir(log))


def test_a_runs_folder_lists_no_payload_folder_as_a_run(tmp_path: Path, log: str) -> None:
    """The payload folder sits beside the log in a runs folder and is no run."""
    from plantrail import open_store

    with closing(as_run(log).open_writer()) as writer:
        writer.store_payload(b"x")
    store = open_store(tmp_path)
    assert store.run_ids() == ["run"]
    assert [row.location for row in store.summaries()] == [log]
