"""Issue 34's acceptance test: a third party holding only the public key (and, for a cut, a signed note kept
outside the log) checks a signed log in a fresh folder with an empty HOME, through the real `plantrail`
command, and finds every changed byte, moved or forged signature at its line, and a cut after the last
signature."""

from __future__ import annotations

import base64
import bisect
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from plantrail.ledger.api import Ledger
from plantrail.ledger.reading import open_records
from plantrail.ledger.signing import keygen, load_signer, load_verifier, note_of, sign_checkpoint
from plantrail.ledger.verify import verify_log
from plantrail.ledger.vocabulary.errors import PlantrailError
from plantrail.ledger.vocabulary.events import LogSigned
from plantrail.ledger.vocabulary.merkle import leaf_hash, root_of
from tests.helpers.logs import build_log, lines_of, rechain, write_lines


class Signed(NamedTuple):
    """A signed log as its writer left it, and the auditor's fresh folder holding a copy with the public key."""

    log: bytes  # the log's bytes
    auditor: Path  # a fresh folder: run.jsonl, audit.pub and published.note (the last signed head)
    home: Path  # an empty HOME
    signed_lines: list[int]  # the 1-based lines holding a log.signed record
    writer: Path  # the writer's folder (the private key, another key pair)


@pytest.fixture
def signed(make_ledger: Callable[..., Ledger], tmp_path: Path) -> Signed:
    """A run recorded with sign_on(every=3) to its finish; the auditor gets the log, the public key and the
    note of the last signed checkpoint (what a witness cosigned), and nothing else."""
    writer = tmp_path / "writer"
    writer.mkdir()
    keygen(str(writer / "audit"))
    keygen(str(writer / "other"))
    ledger = make_ledger(cache=False)
    ledger.sign_on(load_signer(str(writer / "audit.key")), every=3)
    build_log(ledger, 5)
    ledger.finish("failed", reason="stopped")
    ledger.close()
    log = tmp_path / "run.jsonl"
    with open_records(log) as (_, records):
        notes = [note_of(r) for r in records if type(r.data) is LogSigned]
    auditor, home = tmp_path / "auditor", tmp_path / "home"
    auditor.mkdir()
    home.mkdir()
    shutil.copy(log, auditor / "run.jsonl")
    shutil.copy(writer / "audit.pub", auditor / "audit.pub")
    (auditor / "published.note").write_text(notes[-1])
    types = [orjson.loads(line)["type"] for line in lines_of(log)]
    return Signed(log.read_bytes(), auditor, home, [n + 1 for n, t in enumerate(types) if t == "log.signed"], writer)


def audit(signed: Signed, log: bytes, *options: str) -> tuple[int, str | None, int | None, dict[str, object]]:
    """Write ``log`` into the auditor's folder and run ``plantrail verify run.jsonl --pubkey audit.pub --json``
    there as its own process (empty HOME, PATH only); return the exit code, the error's code and line (or the
    torn tail's), and the JSON printed."""
    (signed.auditor / "run.jsonl").write_bytes(log)
    done = subprocess.run(
        [sys.executable, "-m", "plantrail", "verify", "run.jsonl", "--pubkey", "audit.pub", "--json", *options],
        cwd=signed.auditor,
        env={"HOME": str(signed.home), "PATH": os.environ.get("PATH", "")},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert "Traceback" not in done.stderr, done.stderr
    shown = orjson.loads(done.stdout)
    if "error" in shown:
        return done.returncode, shown["error"]["code"], shown["error"].get("line"), shown
    torn = shown.get("torn")
    if torn is not None:
        return done.returncode, "TORN_TAIL", torn["line"], shown
    return done.returncode, None, None, shown


def line_of(log: bytes, offset: int) -> int:
    """The 1-based line holding byte ``offset``."""
    starts = [0, *(n + 1 for n, b in enumerate(log) if b == 10)]
    return bisect.bisect_right(starts, offset)


def changed(log: bytes, offset: int, value: int) -> bytes:
    """``log`` with the byte at ``offset`` replaced by ``value``."""
    edited = bytearray(log)
    edited[offset] = value
    return bytes(edited)


def found_in_process(path: Path, log: bytes, pubkey: Path) -> tuple[str | None, int | None]:
    """What verify with the public key finds in ``log``, in this process: the error's code and line (a torn
    tail's), or (None, None)."""
    path.write_bytes(log)
    try:
        report = verify_log(path, pubkey=load_verifier(str(pubkey)))
    except PlantrailError as exc:
        return exc.code, exc.fields.get("line")
    return (None, None) if report.torn is None else ("TORN_TAIL", report.torn.line)


def test_the_untouched_log_and_its_published_note_verify_for_a_third_party(signed: Signed) -> None:
    """In a fresh folder with an empty HOME, the log as written verifies with the public key alone and with the
    published note, cosigned by a witness (its signature line added after the writer's): signed up to the
    finish, the note's tree held."""
    from plantrail.ledger.vocabulary.signed_note import signature_line

    note = (signed.auditor / "published.note").read_text()
    witness = load_signer(str(signed.writer / "other.key"))
    text = note[: note.index("\n\n") + 1]
    cosigned = note + signature_line("witness", witness.key_id, witness.sign(text.encode()))
    (signed.auditor / "published.note").write_text(cosigned)
    code, error, _, shown = audit(signed, signed.log, "--note", "published.note")
    assert (code, error) == (0, None)
    assert shown["signed"] == len(signed.signed_lines) and shown["unsigned"] == 1
    assert shown["notes"] == [signed.signed_lines[-1] - 1]


def test_every_changed_byte_of_a_signed_log_is_reported_at_its_line(signed: Signed, tmp_path: Path) -> None:
    """Exhaustively: each byte of the signed log changed (its lowest bit flipped) is refused, by code, at the
    line that holds it (a flipped final newline is a torn tail at that line)."""
    path, pubkey = tmp_path / "flipped.jsonl", signed.writer / "audit.pub"
    missed = []
    for offset in range(len(signed.log)):
        code, line = found_in_process(path, changed(signed.log, offset, signed.log[offset] ^ 1), pubkey)
        if code is None or line != line_of(signed.log, offset):
            missed.append((offset, line_of(signed.log, offset), code, line))
    assert not missed, missed[:10]


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_a_third_party_finds_any_changed_byte_at_its_line(signed: Signed, data: st.DataObject) -> None:
    """Any byte set to any other value, checked by the real command in the auditor's folder: exit 3 and the
    error (or torn tail) names the changed byte's line."""
    offset = data.draw(st.integers(0, len(signed.log) - 1), label="offset")
    value = data.draw(st.integers(0, 255).filter(lambda v: v != signed.log[offset]), label="value")
    code, error, line, _ = audit(signed, changed(signed.log, offset, value))
    assert (code, line) == (3, line_of(signed.log, offset)), error


def _edit_signed(line: bytes, **fields: str | int) -> bytes:
    """A log.signed line with some of its data members replaced (the line is re-sealed by rechain)."""
    for name, value in fields.items():
        shown = str(value).encode() if isinstance(value, int) else b'"' + value.encode() + b'"'
        line, count = re.subn(rb'"%s":("[^"]*"|[0-9]+)' % name.encode(), b'"%s":%s' % (name.encode(), shown), line)
        assert count == 1, name
    return line


def test_moved_forged_and_foreign_signatures_are_reported_at_their_line(signed: Signed) -> None:
    """Someone who can write the file but lacks the key re-chains every edit: a signed checkpoint moved one
    record later (CHECKPOINT_INVALID), moved and told to cover its new place (CHECKPOINT_MISMATCH), with the
    new tree's root too (SIGNATURE_INVALID), a forged signature and one by another key (SIGNATURE_INVALID):
    each reported at the line the checkpoint stands on."""
    lines = lines_of_bytes(signed.log)
    first = signed.signed_lines[0] - 1  # its index; the record after it is a command's
    moved = [*lines[:first], lines[first + 1], lines[first]]
    moved_log = join(rechain([*moved, *lines[first + 2 :]], first))
    assert audit(signed, moved_log)[1:3] == ("CHECKPOINT_INVALID", first + 2)

    told = moved_log.split(b"\n")
    told[first + 1] = _edit_signed(told[first + 1], covers_seq=first)
    covering = join(rechain(told[:-1], first + 1))
    assert audit(signed, covering)[1:3] == ("CHECKPOINT_MISMATCH", first + 2)

    rooted = covering.split(b"\n")[:-1]
    root = root_of([leaf_hash(bytes.fromhex(orjson.loads(x)["h"])) for x in rooted[: first + 1]])
    rooted[first + 1] = _edit_signed(rooted[first + 1], root=root.hex())
    assert audit(signed, join(rechain(rooted, first + 1)))[1:3] == ("SIGNATURE_INVALID", first + 2)

    last = signed.signed_lines[-1] - 1
    forged = list(lines)
    forged[last] = _edit_signed(forged[last], signature=base64.b64encode(os.urandom(64)).decode())
    assert audit(signed, join(rechain(forged, last)))[1:3] == ("SIGNATURE_INVALID", last + 1)

    other = list(lines)
    data = orjson.loads(other[last])["data"]
    run = orjson.loads(other[0])["run"]
    resigned = sign_checkpoint(
        load_signer(str(signed.writer / "other.key")),
        run,
        data["covers_seq"],
        data["head"],
        bytes.fromhex(data["root"]),
    )
    other[last] = _edit_signed(
        other[last], signer=resigned.signer, key_id=resigned.key_id, signature=resigned.signature
    )
    code, error, line, shown = audit(signed, join(rechain(other, last)))
    assert (code, error, line) == (3, "SIGNATURE_INVALID", last + 1)
    assert "signed by other+" in str(shown["error"])  # type: ignore[index]


def lines_of_bytes(log: bytes) -> list[bytes]:
    """A log's lines without their newlines."""
    return log.split(b"\n")[:-1]


def join(lines: list[bytes]) -> bytes:
    """Lines back into a log, each with its newline."""
    return b"".join(line + b"\n" for line in lines)


def test_a_cut_after_the_last_signature_is_caught_only_by_a_note_held_outside(signed: Signed) -> None:
    """Cut after the next-to-last signed checkpoint (the finish and its signature gone): the public key alone
    still proves what is left (exit 0), the published note does not (ANCHOR_MISMATCH naming the seq it needs).
    Cut in the middle of what the note covers: the same. The note is held only with the key that signed it."""
    lines = lines_of_bytes(signed.log)
    for keep in (signed.signed_lines[-2], signed.signed_lines[-1] - 2):
        cut = join(lines[:keep])
        code, error, _, shown = audit(signed, cut)
        assert (code, error) == (0, None) and shown["last_seq"] == keep - 1
        code, error, _, shown = audit(signed, cut, "--note", "published.note")
        assert (code, error) == (3, "ANCHOR_MISMATCH")
        assert shown["error"] == shown["error"] | {"seq": signed.signed_lines[-1] - 2, "actual": keep - 1}  # type: ignore[operator]
    shutil.copy(signed.writer / "other.pub", signed.auditor / "other.pub")
    (signed.auditor / "run.jsonl").write_bytes(signed.log)
    refused = subprocess.run(
        [sys.executable, "-m", "plantrail", "verify", "run.jsonl", "--note", "published.note"],
        cwd=signed.auditor,
        env={"HOME": str(signed.home), "PATH": os.environ.get("PATH", "")},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert refused.returncode == 2 and "USAGE" in refused.stderr and "public key" in refused.stderr


def test_a_history_re_signed_by_the_key_holder_does_not_hold_the_published_note(signed: Signed) -> None:
    """The key holder rewrites a record, drops the signed checkpoints, re-chains and signs again: the public
    key alone passes, the note
    published before does not (ANCHOR_MISMATCH: another root); a note signed by another key is refused."""
    lines = lines_of_bytes(signed.log)
    assert b"one failure" in lines[3]
    signer = load_signer(str(signed.writer / "audit.key"))
    run = orjson.loads(lines[0])["run"]
    rewritten = rechain([*lines[:3], lines[3].replace(b"one failure", b"all passing"), *lines[4:]], 3)
    for index in [n - 1 for n in signed.signed_lines]:  # sign every checkpoint again, over the new history
        head = orjson.loads(rewritten[index - 1])["h"]
        root = root_of([leaf_hash(bytes.fromhex(orjson.loads(x)["h"])) for x in rewritten[:index]])
        again = sign_checkpoint(signer, run, index - 1, head, root)
        rewritten[index] = _edit_signed(rewritten[index], root=again.root, signature=again.signature)
        rewritten = rechain(rewritten, index)
    path = signed.writer / "rewritten.jsonl"
    write_lines(path, rewritten)
    assert len(rewritten) == len(lines) and rewritten[-1] != lines[-1]
    code, error, _, _ = audit(signed, path.read_bytes())
    assert (code, error) == (0, None)
    code, error, _, shown = audit(signed, path.read_bytes(), "--note", "published.note")
    assert (code, error) == (3, "ANCHOR_MISMATCH") and "another root" in str(shown["error"])

    shutil.copy(signed.writer / "other.pub", signed.auditor / "audit.pub")
    code, error, _, shown = audit(signed, signed.log, "--note", "published.note")
    assert (code, error) == (3, "SIGNATURE_INVALID") and "published.note" in str(shown["error"])


def test_a_note_of_another_run_is_not_held_to_the_log(signed: Signed) -> None:
    """A note whose origin names another run: ANCHOR_MISMATCH, though its tree size and signature are fine."""
    note = (signed.auditor / "published.note").read_text()
    text, _, _ = note.partition("\n\n")
    other = text.replace("plantrail/", "plantrail/other-", 1) + "\n"
    signer = load_signer(str(signed.writer / "audit.key"))
    from plantrail.ledger.vocabulary.signed_note import signature_line

    (signed.auditor / "foreign.note").write_text(
        other + "\n" + signature_line(signer.name, signer.key_id, signer.sign(other.encode()))
    )
    code, error, _, shown = audit(signed, signed.log, "--note", "foreign.note")
    assert (code, error) == (3, "ANCHOR_MISMATCH") and "plantrail/other-" in str(shown["error"])
