"""C2SP signed notes and the tlog-checkpoint body they carry: encode, parse, and check given a signature check.

A signed note (https://c2sp.org/signed-note) is a text ending in a newline, a blank line, then one signature
line per signer: ``— <name> <base64(key id || signature)>`` (an em dash). The key id is the first four bytes of
SHA-256(name || "\\n" || 0x01 || public key) for an Ed25519 key (algorithm 1); a verifier key is written
``<name>+<key id in hex>+<base64(0x01 || public key)>``. A checkpoint (https://c2sp.org/tlog-checkpoint) is the
text: the log's origin, the tree size in decimal and the base64 root hash, each on its own line.

Pure and small: no cryptography here (the Ed25519 check is passed in, :mod:`ledger.signing` has it), no I/O.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

__all__ = [
    "ED25519",
    "PRIVATE_KEY",
    "Checkpoint",
    "NoteError",
    "Signature",
    "VerifierKey",
    "checkpoint_text",
    "key_id",
    "open_note",
    "parse_checkpoint",
    "parse_note",
    "parse_private_key",
    "parse_verifier_key",
    "signature_line",
    "verifier_key",
]

#: The signed-note algorithm byte of Ed25519.
ED25519: Final = 1
#: What a private key's text starts with (golang.org/x/mod/sumdb/note's form).
PRIVATE_KEY: Final = "PRIVATE+KEY+"
_DASH: Final = "\u2014 "


class NoteError(ValueError):
    """Text that is no well-formed signed note, checkpoint or verifier key (the message says what)."""


@dataclass(frozen=True, slots=True)
class VerifierKey:
    """A signer's public key with its name and key id."""

    name: str
    key_id: bytes
    public: bytes

    def __str__(self) -> str:
        return verifier_key(self.name, self.public)


@dataclass(frozen=True, slots=True)
class Signature:
    """One signature line: the signer's name, the key id and the signature bytes."""

    name: str
    key_id: bytes
    signature: bytes


@dataclass(frozen=True, slots=True)
class Checkpoint:
    """A tlog-checkpoint body: origin, tree size, root hash, and any extension lines after them."""

    origin: str
    size: int
    root: bytes
    extensions: tuple[str, ...] = ()


def _check_name(name: str) -> None:
    if not name or "+" in name or any(c.isspace() for c in name) or not name.isprintable():
        raise NoteError(f"{name!r} is no key name (non-empty, no space and no '+')")


def key_id(name: str, public: bytes) -> bytes:
    """The key id of an Ed25519 public key under ``name``: SHA-256(name || "\\n" || 0x01 || key)[:4]."""
    return hashlib.sha256(name.encode() + b"\n" + bytes([ED25519]) + public).digest()[:4]


def verifier_key(name: str, public: bytes) -> str:
    """The verifier key text ``name+<hex key id>+<base64(0x01 || key)>``."""
    _check_name(name)
    if len(public) != 32:
        raise NoteError(f"an Ed25519 public key is 32 bytes, not {len(public)}")
    encoded = base64.b64encode(bytes([ED25519]) + public).decode()
    return f"{name}+{key_id(name, public).hex()}+{encoded}"


def _b64(text: str, what: str) -> bytes:
    try:
        return base64.b64decode(text.encode("ascii"), validate=True)
    except (binascii.Error, UnicodeEncodeError):
        raise NoteError(f"{what} is not base64: {text!r}") from None


def _key_parts(text: str, form: str) -> tuple[str, str, bytes]:
    """The name, hex key id and 32 key bytes of ``<name>+<key id>+<base64(0x01 || key)>`` (a verifier key, or
    a private key after its prefix); NoteError (saying ``form``) unless it is an Ed25519 key of that shape."""
    parts = text.split("+", 2)
    if len(parts) != 3:
        raise NoteError(f"a {form}")
    name, hex_id, encoded = parts
    _check_name(name)
    raw = _b64(encoded, "the key")
    if len(raw) != 33 or raw[0] != ED25519:
        raise NoteError("the key is no Ed25519 key (algorithm 1, 32 bytes)")
    return name, hex_id, raw[1:]


def parse_private_key(text: str) -> tuple[str, str, bytes]:
    """The name, hex key id and 32-byte seed of a private key ``PRIVATE+KEY+<name>+<key id>+<base64(0x01 ||
    seed)>``; NoteError unless it has that shape (the key id is checked by whoever derives the public key)."""
    form = f"private key is {PRIVATE_KEY}<name>+<key id>+<key>"
    if not text.startswith(PRIVATE_KEY):
        raise NoteError(f"a {form}")
    return _key_parts(text[len(PRIVATE_KEY) :], form)


def parse_verifier_key(text: str) -> VerifierKey:
    """A verifier key read from its text; NoteError unless it is an Ed25519 key whose key id matches."""
    name, hex_id, public = _key_parts(text.strip(), "verifier key is <name>+<key id>+<key>")
    if hex_id != key_id(name, public).hex():
        raise NoteError(f"the key id {hex_id} does not match the key and name (it is {key_id(name, public).hex()})")
    return VerifierKey(name, bytes.fromhex(hex_id), public)


def checkpoint_text(origin: str, size: int, root: bytes) -> str:
    """The checkpoint body: origin, size and base64 root, each ending in a newline."""
    if not origin or "\n" in origin:
        raise NoteError(f"{origin!r} is no origin line")
    return f"{origin}\n{size}\n{base64.b64encode(root).decode()}\n"


def parse_checkpoint(text: str) -> Checkpoint:
    """A checkpoint body read from a note's text; NoteError unless it holds origin, size and a 32-byte root."""
    lines = text.split("\n")
    if len(lines) < 4 or lines[-1] != "":
        raise NoteError("a checkpoint is an origin, a size and a root hash, each on its own line")
    origin, size, root = lines[0], lines[1], lines[2]
    if not origin:
        raise NoteError("the checkpoint has no origin")
    if not size.isascii() or not size.isdigit() or (size != "0" and size.startswith("0")):
        raise NoteError(f"the tree size {size!r} is no decimal number")
    digest = _b64(root, "the root hash")
    if len(digest) != 32:
        raise NoteError(f"the root hash is {len(digest)} bytes, not 32")
    return Checkpoint(origin, int(size), digest, tuple(lines[3:-1]))


def signature_line(name: str, key: bytes, signature: bytes) -> str:
    """One signature line (with its newline)."""
    _check_name(name)
    return f"{_DASH}{name} {base64.b64encode(key + signature).decode()}\n"


def parse_note(note: str) -> tuple[str, tuple[Signature, ...]]:
    """A signed note's text and signatures; NoteError unless it is text, a blank line and signature lines."""
    if not note.endswith("\n"):
        raise NoteError("a signed note ends with a newline")
    split = note.rfind("\n\n")
    if split < 0:
        raise NoteError("a signed note has a blank line before its signatures")
    text, block = note[: split + 1], note[split + 2 :]
    signatures = []
    for line in block.split("\n")[:-1]:
        if not line.startswith(_DASH):
            raise NoteError(f"{line!r} is no signature line (— <name> <signature>)")
        name, _, encoded = line[len(_DASH) :].partition(" ")
        _check_name(name)
        raw = _b64(encoded, "the signature")
        if len(raw) < 5:
            raise NoteError("the signature is too short")
        signatures.append(Signature(name, raw[:4], raw[4:]))
    if not signatures:
        raise NoteError("the note has no signature")
    return text, tuple(signatures)


def open_note(note: str, key: VerifierKey, check: Callable[[bytes, bytes, bytes], bool]) -> str:
    """The text of ``note`` if one of its signatures is ``key``'s and verifies, by ``check(public key, message,
    signature)``; NoteError if it has none by the key, or a signature of the key fails."""
    text, signatures = parse_note(note)
    mine = [s for s in signatures if s.name == key.name and s.key_id == key.key_id]
    if not mine:
        raise NoteError(f"the note has no signature by the key {key.name}+{key.key_id.hex()}")
    for s in mine:
        if not check(key.public, text.encode(), s.signature):
            raise NoteError(f"the signature by {key.name}+{key.key_id.hex()} does not verify")
    return text
