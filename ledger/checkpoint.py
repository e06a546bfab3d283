"""Keyed checkpoints: an HMAC over the head of the log, with the key kept outside the log.

A hash chain proves that nothing changed *unless the whole chain was recomputed*: anyone who can write the
file can edit a record and re-chain everything after it. A ``log.checkpoint`` record closes that gap for
everyone who lacks the key. It carries an HMAC-SHA256, under a key the log never holds, of a short note in
the spirit of a C2SP signed note::

    plantrail/<run>\\n<seq>\\n<head hash>\\n

where ``seq`` and ``head hash`` are those of the record just before the checkpoint. ``verify`` with the key
recomputes the MAC and checks that the covered record really is the one before it, with that hash. What this
does not defend against (someone holding the key; records after the last checkpoint; a log cut back to an
earlier checkpoint) is written down in docs/reliability.md, "Tamper evidence and its limits".
"""

from __future__ import annotations

import hashlib
import hmac
import os
from typing import Final

from plantrail.ledger.stores.files import read_capped
from plantrail.ledger.vocabulary.errors import error
from plantrail.ledger.vocabulary.events import LogCheckpoint, Record
from plantrail.ledger.vocabulary.limits import KEY_FILE

__all__ = ["KEY_ENV", "MIN_KEY_BYTES", "check_checkpoint", "key_id", "load_key", "make_checkpoint", "note"]

#: The environment variable a key is read from when no key file is given.
KEY_ENV: Final = "PLANTRAIL_CHECKPOINT_KEY"
#: Shorter keys are refused: a MAC is only as strong as its key.
MIN_KEY_BYTES: Final = 16
_ALGORITHM: Final = "hmac-sha256"


def load_key(key_file: str | None) -> bytes:
    """The key from ``key_file`` (its bytes without a trailing newline), else from ``$PLANTRAIL_CHECKPOINT_KEY``."""
    if key_file is not None:
        key = read_capped(key_file, KEY_FILE).rstrip(b"\r\n")
        where = f"key file {key_file}"
    else:
        key = os.environ.get(KEY_ENV, "").encode("utf-8", "surrogateescape")
        where = f"${KEY_ENV}"
        if not key:
            raise error(
                "CHECKPOINT_KEY_INVALID",
                f"no checkpoint key (no key file, and ${KEY_ENV} is empty)",
                advice="NO_CHECKPOINT_KEY",
            )
    if len(key) < MIN_KEY_BYTES:
        raise error("CHECKPOINT_KEY_INVALID", f"the key in {where} is {len(key)} bytes; use at least {MIN_KEY_BYTES}")
    return key


def key_id(key: bytes) -> str:
    """A key's public name: the first 16 hex digits of its SHA-256 (tells keys apart, reveals nothing)."""
    return hashlib.sha256(key).hexdigest()[:16]


def note(run: str, seq: int, head: str) -> bytes:
    """The text a checkpoint's MAC covers."""
    return f"plantrail/{run}\n{seq}\n{head}\n".encode()


def _mac(key: bytes, run: str, seq: int, head: str) -> str:
    return hmac.new(key, note(run, seq, head), hashlib.sha256).hexdigest()


def make_checkpoint(key: bytes, run: str, seq: int, head: str) -> LogCheckpoint:
    """The checkpoint event over the record ``seq`` with hash ``head``."""
    return LogCheckpoint(
        covers_seq=seq, head=head, algorithm=_ALGORITHM, key_id=key_id(key), mac=_mac(key, run, seq, head)
    )


def check_checkpoint(record: Record, key: bytes | None) -> None:
    """Raise CHECKPOINT_INVALID unless a checkpoint covers the record before it and, given the key, its MAC holds."""
    data = record.data
    assert isinstance(data, LogCheckpoint)
    line = record.seq + 1
    if data.covers_seq != record.seq - 1 or data.head != record.prev:
        raise error(
            "CHECKPOINT_INVALID",
            f"line {line}: the checkpoint at seq {record.seq} does not cover the record before it",
            seq=record.seq,
            line=line,
        )
    if key is None:
        return
    if data.key_id != key_id(key):
        raise error(
            "CHECKPOINT_INVALID",
            f"line {line}: the checkpoint at seq {record.seq} was made with key {data.key_id}, "
            f"not the given key {key_id(key)}",
            seq=record.seq,
            line=line,
        )
    if not hmac.compare_digest(data.mac, _mac(key, record.run, data.covers_seq, data.head)):
        raise error(
            "CHECKPOINT_INVALID",
            f"line {line}: the MAC of the checkpoint at seq {record.seq} does not verify: the records it "
            "covers were rewritten, or it was forged",
            seq=record.seq,
            line=line,
        )
