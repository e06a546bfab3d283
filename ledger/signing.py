"""Signed checkpoints: an Ed25519 signature over the RFC 6962 tree of a log's records, as a C2SP checkpoint.

A keyed checkpoint (:mod:`ledger.checkpoint`) proves the log to whoever holds the MAC key, and so can forge it.
A signed checkpoint (``log.signed``) is checked with the public key alone, and its note is what a witness
cosigns or a transparency log takes in: the C2SP tlog-checkpoint

    plantrail/<run id>
    <number of records it covers>
    <base64 root of the RFC 6962 tree over their line hashes>

    — <key name> <base64(key id || signature)>

The tree's leaves are the line hashes of the records from seq 0 to the one just before the checkpoint, each
the 32 bytes its ``h`` spells in hex (:mod:`ledger.vocabulary.merkle`); the hash chain is unchanged. Two notes
of one log are then tied by a consistency proof: the older tree is a prefix of the newer one.

Key files: ``NAME.key`` holds the private key as ``PRIVATE+KEY+<name>+<hex key id>+<base64(0x01 || seed)>``
(the form of golang.org/x/mod/sumdb/note), made exclusive with mode 0600; ``NAME.pub`` the verifier key
``<name>+<hex key id>+<base64(0x01 || public key)>``. Only this module imports ``cryptography`` (the
``plantrail[sign]`` extra), and only when a key is made, a checkpoint signed or a signature checked.
"""

from __future__ import annotations

import base64
import binascii
import os
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from plantrail.ledger.stores.files import read_capped
from plantrail.ledger.stores.owned import Folder
from plantrail.ledger.vocabulary.errors import error
from plantrail.ledger.vocabulary.events import LogSigned, Record
from plantrail.ledger.vocabulary.limits import KEY_FILE
from plantrail.ledger.vocabulary.merkle import (
    Frontier,
    consistency_proof,
    inclusion_proof,
    leaf_hash,
    root_of,
    verify_consistency,
    verify_inclusion,
)
from plantrail.ledger.vocabulary.signed_note import (
    ED25519,
    PRIVATE_KEY,
    Checkpoint,
    NoteError,
    VerifierKey,
    checkpoint_text,
    key_id,
    open_note,
    parse_checkpoint,
    parse_note,
    parse_private_key,
    parse_verifier_key,
    signature_line,
    verifier_key,
)

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

__all__ = [
    "HeadTree",
    "Signer",
    "check_signed",
    "ed25519_check",
    "keygen",
    "load_signer",
    "load_verifier",
    "note_of",
    "origin_of",
    "prove_consistency",
    "prove_inclusion",
    "read_note",
    "sign_checkpoint",
]


def _crypto() -> None:
    """Refuse with SIGNING_KEY_INVALID when the cryptography package is missing."""
    try:
        import cryptography  # noqa: F401
    except ImportError:
        raise error(
            "SIGNING_KEY_INVALID",
            "signing and checking signatures need the cryptography package: pip install 'plantrail[sign]'",
        ) from None


@dataclass(frozen=True, slots=True)
class Signer:
    """A private key with its name and key id."""

    name: str
    key_id: bytes
    private: Ed25519PrivateKey

    def sign(self, message: bytes) -> bytes:
        """The Ed25519 signature of ``message``."""
        return self.private.sign(message)


def keygen(prefix: str) -> tuple[str, str, str]:
    """Make a key pair named for the last part of ``prefix``: write ``prefix.key`` (private, 0600) and
    ``prefix.pub`` (the verifier key), both created exclusive; return both paths and the verifier key.
    KEY_EXISTS when anything by either name is already there, an empty file too (nothing is written)."""
    _crypto()
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    folder_path, name = os.path.split(prefix)
    try:
        verifier_key(name, bytes(32))
    except NoteError as exc:
        raise error("USAGE", f"keygen: {exc}") from None
    folder = Folder.open(folder_path or ".", what="key folder")
    try:
        made: list[tuple[str, int]] = []
        try:
            for file in (f"{name}.key", f"{name}.pub"):  # both made exclusive before either is written
                fd = folder.create_file(file, mode=0o600, what="key file")
                if fd is None:
                    raise error("KEY_EXISTS", f"{folder.child(file)} exists: keygen never overwrites a file", path=file)
                made.append((file, fd))
        except BaseException:
            for file, fd in made:  # the empty files this call made, and only those
                os.close(fd)
                folder.remove(file, what="key file")
            raise
        private = Ed25519PrivateKey.generate()
        public = private.public_key().public_bytes_raw()
        seed = private.private_bytes_raw()
        secret = (
            f"{PRIVATE_KEY}{name}+{key_id(name, public).hex()}+{base64.b64encode(bytes([ED25519]) + seed).decode()}"
        )
        vkey = verifier_key(name, public)
        (_, key_fd), (_, pub_fd) = made
        _write(key_fd, secret + "\n", 0o600)
        _write(pub_fd, vkey + "\n", 0o644)
        return folder.child(f"{name}.key"), folder.child(f"{name}.pub"), vkey
    finally:
        folder.close()


def _write(fd: int, text: str, mode: int) -> None:
    """Write ``text`` to the new file open on ``fd`` with ``mode``, durably, and close it."""
    try:
        os.fchmod(fd, mode)
        os.write(fd, text.encode())
        os.fsync(fd)
    finally:
        os.close(fd)


def _read_key_text(path: str) -> str:
    try:
        return read_capped(path, KEY_FILE).decode("ascii").strip()
    except UnicodeDecodeError:
        raise error("SIGNING_KEY_INVALID", f"{path} holds no key (not ASCII text)") from None


def load_signer(path: str) -> Signer:
    """The private key in ``path`` (as keygen writes it); SIGNING_KEY_INVALID when it is malformed."""
    _crypto()
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    try:
        name, hex_id, seed = parse_private_key(_read_key_text(path))
        private = Ed25519PrivateKey.from_private_bytes(seed)
        public = private.public_key().public_bytes_raw()
        if hex_id != key_id(name, public).hex():
            raise NoteError(f"the key id {hex_id} does not match the key")
    except (NoteError, ValueError) as exc:
        raise error("SIGNING_KEY_INVALID", f"{path}: {exc}") from None
    return Signer(name, bytes.fromhex(hex_id), private)


def load_verifier(path: str) -> VerifierKey:
    """The verifier key in ``path`` (a .pub file keygen wrote); SIGNING_KEY_INVALID when it is malformed."""
    try:
        return parse_verifier_key(_read_key_text(path))
    except NoteError as exc:
        raise error("SIGNING_KEY_INVALID", f"{path}: {exc}") from None


def ed25519_check(public: bytes, message: bytes, signature: bytes) -> bool:
    """Whether ``signature`` is the Ed25519 signature of ``message`` by ``public``."""
    _crypto()
    from cryptography.exceptions import InvalidSignature
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

    try:
        Ed25519PublicKey.from_public_bytes(public).verify(signature, message)
    except InvalidSignature:
        return False
    return True


class HeadTree:
    """The RFC 6962 tree over a run's records as one writer sees them appended, kept as its frontier (the compact
    range: one subtree hash per bit of its size), so that signing the head costs O(log n) once the tree is
    built. Records come in seq order; one that is not the next (a gap, or a record not chained to the last)
    means the tree no longer follows the log, and the writer builds it again from the log."""

    __slots__ = ("_frontier", "_head")

    def __init__(self) -> None:
        self._frontier = Frontier()
        self._head = ""  # the line hash of the last record added

    @classmethod
    def of(cls, records: Iterable[Record]) -> HeadTree:
        """The tree over ``records``, a log's records from seq 0 in order."""
        tree = cls()
        for record in records:
            if not tree.add(record):
                raise error("HASH_MISMATCH", f"seq {record.seq} does not follow the records before it", seq=record.seq)
        return tree

    @property
    def size(self) -> int:
        """How many records the tree holds (seq 0 to size - 1)."""
        return self._frontier.size

    def add(self, record: Record) -> bool:
        """Add ``record`` when it is the next one; a record the tree holds already is skipped. False when it is
        neither (the tree no longer follows the log; it is left unchanged)."""
        size = self._frontier.size
        if record.seq < size:
            return True
        if record.seq != size or (size and record.prev != self._head):
            return False
        self._frontier.append(leaf_hash(bytes.fromhex(record.h)))
        self._head = record.h
        return True

    def covers(self, seq: int, head: str) -> bool:
        """Whether the tree ends at the record ``seq`` whose line hash is ``head``."""
        return self._frontier.size - 1 == seq and self._head == head

    def root(self) -> bytes:
        """The tree's root."""
        return self._frontier.root()


def origin_of(run: str) -> str:
    """A log's checkpoint origin: ``plantrail/<run id>``."""
    return f"plantrail/{run}"


def sign_checkpoint(signer: Signer, run: str, seq: int, head: str, root: bytes) -> LogSigned:
    """The signed checkpoint over the records up to ``seq`` (the last with hash ``head``), whose tree has ``root``."""
    text = checkpoint_text(origin_of(run), seq + 1, root)
    signature = signer.sign(text.encode())
    return LogSigned(
        covers_seq=seq,
        head=head,
        root=root.hex(),
        signer=signer.name,
        key_id=signer.key_id.hex(),
        signature=base64.b64encode(signature).decode(),
    )


def note_of(record: Record) -> str:
    """The C2SP signed note a ``log.signed`` record holds (what a witness cosigns)."""
    data = record.data
    assert isinstance(data, LogSigned)
    text = checkpoint_text(origin_of(record.run), data.covers_seq + 1, bytes.fromhex(data.root))
    signature = base64.b64decode(data.signature)
    return text + "\n" + signature_line(data.signer, bytes.fromhex(data.key_id), signature)


def check_signed(record: Record, root: bytes | None, key: VerifierKey | None) -> None:
    """Raise unless a signed checkpoint covers the record before it and holds ``root`` (the root of the tree
    over every record before it: CHECKPOINT_MISMATCH), and, given the key, is signed by it (SIGNATURE_INVALID).
    Without the root (no key given) only what it covers is checked."""
    data = record.data
    assert isinstance(data, LogSigned)
    line = record.seq + 1
    where = f"line {line}: the signed checkpoint at seq {record.seq}"
    if data.covers_seq != record.seq - 1 or data.head != record.prev:
        raise error("CHECKPOINT_INVALID", f"{where} does not cover the record before it", seq=record.seq, line=line)
    if root is None:
        return
    if data.root != root.hex():  # public values: no constant-time compare (a non-ASCII root must not crash it)
        raise error(
            "CHECKPOINT_MISMATCH",
            f"{where} names the tree root {data.root}, but the records it covers have {root.hex()}: they were "
            "rewritten (or the checkpoint was)",
            seq=record.seq,
            line=line,
        )
    if key is None:
        return
    if (data.signer, data.key_id) != (key.name, key.key_id.hex()):
        raise error(
            "SIGNATURE_INVALID",
            f"{where} was signed by {data.signer}+{data.key_id}, not by the given key {key.name}+{key.key_id.hex()}",
            seq=record.seq,
            line=line,
        )
    try:
        open_note(note_of(record), key, ed25519_check)
    except (NoteError, binascii.Error, ValueError) as exc:
        raise error("SIGNATURE_INVALID", f"{where}: {exc}", seq=record.seq, line=line) from None


def read_note(path: str, key: VerifierKey | None) -> Checkpoint:
    """The checkpoint in the signed note file ``path``, its signature by ``key`` checked when given
    (SIGNATURE_INVALID); USAGE when the file holds no signed checkpoint."""
    try:
        note = read_capped(path, KEY_FILE).decode("utf-8")
    except UnicodeDecodeError:
        raise error("USAGE", f"{path} holds no signed note (not UTF-8 text)") from None
    try:
        text = parse_note(note)[0]
    except NoteError as exc:
        raise error("USAGE", f"{path}: {exc}") from None
    if key is not None:
        try:
            open_note(note, key, ed25519_check)
        except NoteError as exc:
            raise error("SIGNATURE_INVALID", f"{path}: {exc}") from None
    try:
        return parse_checkpoint(text)
    except NoteError as exc:
        raise error("USAGE", f"{path}: {exc}") from None


def prove_consistency(log: str, old: str, new: str, key: VerifierKey | None) -> tuple[int, int, list[str]]:
    """Check two signed notes of the log ``log`` (files) against its records (and their signatures by ``key``,
    when given), then make the consistency proof from the older tree to the newer one and check it; return the
    two sizes and the proof's hashes in base64. CHECKPOINT_MISMATCH when a note names another log, a size the
    log does not reach, or a root its records do not have; USAGE when OLD is the larger tree."""
    from plantrail.ledger.reading import open_records

    older, newer = read_note(old, key), read_note(new, key)
    if older.size > newer.size:
        raise error("USAGE", f"{old} covers {older.size} records, more than {new} ({newer.size}): give the older first")
    hashes: list[bytes] = []
    run = ""
    with open_records(log) as (_, records):
        for record in records:
            run = record.run
            if len(hashes) == newer.size:
                break
            hashes.append(leaf_hash(bytes.fromhex(record.h)))
    for path, note in ((old, older), (new, newer)):
        if note.origin != origin_of(run):
            raise error("CHECKPOINT_MISMATCH", f"{path} is a checkpoint of {note.origin}, not of {origin_of(run)}")
        if note.size > len(hashes):
            raise error("CHECKPOINT_MISMATCH", f"{path} covers {note.size} records; the log holds only {len(hashes)}")
        if root_of(hashes[: note.size]) != note.root:
            raise error(
                "CHECKPOINT_MISMATCH",
                f"{path} names a tree root the log's first {note.size} records do not have: they were rewritten",
            )
    proof = consistency_proof(hashes, older.size)
    if not verify_consistency(older.size, newer.size, older.root, newer.root, proof):  # a bug, never data
        raise error("CHECKPOINT_MISMATCH", f"the consistency proof from {old} to {new} does not verify")
    return older.size, newer.size, [base64.b64encode(p).decode() for p in proof]


def prove_inclusion(log: str, seq: int, signed_seq: int | None) -> tuple[str, int, bytes, list[bytes]]:
    """The proof that record ``seq`` of the log ``log`` is in the tree its last signed checkpoint signed (the one
    covering seq 0..``signed_seq``, as :func:`plantrail.ledger.verify.verify_log` found it, checked): the
    record's line hash, the tree's size and root, and the RFC 6962 audit path, checked before it is returned.
    UNKNOWN_SEQ when the log has no such record; CHECKPOINT_MISSING when no signed checkpoint covers it."""
    from plantrail.ledger.reading import open_records

    if type(seq) is not int or seq < 0:
        raise error("USAGE", f"a record is named by its seq, a whole number from 0, not {seq!r}")
    hashes: list[bytes] = []
    found = ""
    last = -1
    with open_records(log) as (_, records):
        for record in records:
            last = record.seq
            if record.seq == seq:
                found = record.h
            if signed_seq is not None and record.seq <= signed_seq:
                hashes.append(leaf_hash(bytes.fromhex(record.h)))
            elif record.seq >= seq:
                break
    if not found:
        raise error("UNKNOWN_SEQ", f"the log has no record at seq {seq} (it ends at seq {last})", seq=seq)
    if signed_seq is None or seq > signed_seq:
        covered = (
            "no signed checkpoint" if signed_seq is None else f"the last signed checkpoint covers seq {signed_seq}"
        )
        raise error(
            "CHECKPOINT_MISSING", f"no signed checkpoint covers seq {seq} ({covered}): nothing proves it", seq=seq
        )
    root = root_of(hashes)
    proof = inclusion_proof(hashes, seq)
    if not verify_inclusion(seq, len(hashes), hashes[seq], proof, root):  # a bug, never data
        raise error("CHECKPOINT_MISMATCH", f"the inclusion proof of seq {seq} does not verify")
    return found, len(hashes), root, proof
