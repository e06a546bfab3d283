"""Signed notes and checkpoints (ledger.vocabulary.signed_note) against the golang.org/x/mod/sumdb/note
example: its verifier key parses with its key id, its signed note opens with Ed25519, and a changed text,
another key or a malformed note is refused."""

from __future__ import annotations

import base64

import pytest
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from plantrail.ledger.vocabulary.signed_note import (
    NoteError,
    checkpoint_text,
    key_id,
    open_note,
    parse_checkpoint,
    parse_note,
    parse_verifier_key,
    signature_line,
    verifier_key,
)

# The example of golang.org/x/mod/sumdb/note (its package documentation and note_test.go).
VKEY = "PeterNeumann+c74f20a3+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW"
SKEY = "PRIVATE+KEY+PeterNeumann+c74f20a3+AYEKFALVFGyNhPJEMzD1QIDr+Y7hfZx09iUvxdXHKDFz"
TEXT = "If you think cryptography is the answer to your problem,\nthen you don't know what your problem is.\n"
NOTE = (
    TEXT
    + "\n— PeterNeumann x08go/ZJkuBS9UG/SffcvIAQxVBtiFupLLr8pAcElZInNIuGUgYN1FFYC2pZSNXgKvqfqdngotpRZb6KE6RyyBwJnAM=\n"
)


def ed25519_check(public: bytes, message: bytes, signature: bytes) -> bool:
    try:
        Ed25519PublicKey.from_public_bytes(public).verify(signature, message)
    except InvalidSignature:
        return False
    return True


def test_the_published_verifier_key_parses_and_round_trips() -> None:
    """The example key's id is SHA-256(name, newline, 0x01, key)[:4], and the key text is rebuilt exactly."""
    key = parse_verifier_key(VKEY)
    assert key.name == "PeterNeumann" and key.key_id.hex() == "c74f20a3" and len(key.public) == 32
    assert str(key) == VKEY == verifier_key(key.name, key.public)
    assert key_id(key.name, key.public) == key.key_id


def test_the_published_note_is_signed_and_opened_alike() -> None:
    """Signing the example text with the example private key gives the published note; it opens with the key."""
    seed = base64.b64decode(SKEY.split("+", 4)[-1])[1:]
    private = Ed25519PrivateKey.from_private_bytes(seed)
    key = parse_verifier_key(VKEY)
    assert TEXT + "\n" + signature_line(key.name, key.key_id, private.sign(TEXT.encode())) == NOTE
    assert open_note(NOTE, key, ed25519_check) == TEXT


def test_a_changed_text_or_another_key_is_refused() -> None:
    """A tampered text fails the signature; a note with no signature by the key is refused too."""
    key = parse_verifier_key(VKEY)
    with pytest.raises(NoteError, match="does not verify"):
        open_note(NOTE.replace("cryptography", "cryptographY"), key, ed25519_check)
    other = Ed25519PrivateKey.generate().public_key().public_bytes_raw()
    with pytest.raises(NoteError, match="no signature by the key"):
        open_note(NOTE, parse_verifier_key(verifier_key("PeterNeumann", other)), ed25519_check)


@pytest.mark.parametrize(
    "bad",
    [
        "PeterNeumann+c74f20a4+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW",  # wrong key id
        "PeterNeumann+c74f20a3+AhpcQcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW",  # wrong algorithm / length
        "PeterNeumann+c74f20a3",
        "Peter Neumann+c74f20a3+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW",
        "PeterNeumann+c74f20a3+not-base64!",
    ],
)
def test_malformed_verifier_keys_are_refused(bad: str) -> None:
    """A key text with a wrong id, algorithm, shape, name or encoding is refused."""
    with pytest.raises(NoteError):
        parse_verifier_key(bad)


@pytest.mark.parametrize(
    "bad",
    [TEXT, NOTE[:-1], NOTE.replace("— ", "- "), TEXT + "\n", NOTE.replace("x08go", "x08g!")],
)
def test_malformed_notes_are_refused(bad: str) -> None:
    """No blank line, no final newline, a signature line without the em dash, no signature, bad base64."""
    with pytest.raises(NoteError):
        parse_note(bad)


def test_checkpoint_body_round_trips_and_refuses_malformed() -> None:
    """A checkpoint body reads back as written; a size with a leading zero or a short root is refused."""
    root = bytes(range(32))
    text = checkpoint_text("plantrail/run-1", 12, root)
    assert text == f"plantrail/run-1\n12\n{base64.b64encode(root).decode()}\n"
    read = parse_checkpoint(text)
    assert (read.origin, read.size, read.root, read.extensions) == ("plantrail/run-1", 12, root, ())
    for bad in (text.replace("\n12\n", "\n012\n"), text.replace("\n12\n", "\n-1\n"),
                f"o\n1\n{base64.b64encode(b'short').decode()}\n", "o\n1\n"):  # fmt: skip
        with pytest.raises(NoteError):
            parse_checkpoint(bad)


def test_a_private_key_is_parsed_as_a_verifier_key_is() -> None:
    """The private key's text shares the verifier key's parsing: name, key id and 32 key bytes after the prefix;
    a missing prefix, a bad name, a key that is not base64 or not Ed25519 is a NoteError."""
    from plantrail.ledger.vocabulary.signed_note import ED25519, PRIVATE_KEY, parse_private_key

    seed = bytes(range(32))
    encoded = base64.b64encode(bytes([ED25519]) + seed).decode()
    assert parse_private_key(f"{PRIVATE_KEY}audit+0a0b0c0d+{encoded}") == ("audit", "0a0b0c0d", seed)
    for bad in (
        f"audit+0a0b0c0d+{encoded}",
        f"{PRIVATE_KEY}audit+{encoded}",
        f"{PRIVATE_KEY}au dit+0a0b0c0d+{encoded}",
        f"{PRIVATE_KEY}audit+0a0b0c0d+not base64",
        f"{PRIVATE_KEY}audit+0a0b0c0d+{base64.b64encode(bytes([2]) + seed).decode()}",
        f"{PRIVATE_KEY}audit+0a0b0c0d+{base64.b64encode(bytes([ED25519]) + seed[:31]).decode()}",
    ):
        with pytest.raises(NoteError):
            parse_private_key(bad)
