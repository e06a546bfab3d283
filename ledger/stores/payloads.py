"""Payloads a run keeps beside its records, named by a salted digest (what every store's payload shelf shares).

A writer may store a payload *before* the record that names it (:meth:`RunWriter.store_payload`): the payload
is durable when the call returns, so a record that names it never points at nothing, and a crash between the
two leaves an unnamed payload behind, which harms no read. A payload is named by
``sha256:<hex>``: SHA-256 over a random 32-byte salt followed by the bytes. The salt is kept with the payload,
so the digest proves the bytes without letting anyone confirm a guess of them from the digest alone, and the
same bytes stored twice get two names. A reader gets the bytes back only when they hash to the name
(``PAYLOAD_ALTERED`` otherwise, ``PAYLOAD_MISSING`` when the store has none).

The format does not name payloads yet: a record still carries its evidence inline. This is where a record
that names a payload by its digest will find it.
"""

from __future__ import annotations

import hashlib
import re
import secrets
from typing import Final, NamedTuple

from plantrail.ledger.vocabulary.errors import PlantrailError, error
from plantrail.ledger.vocabulary.limits import PAYLOAD

__all__ = ["SALT_BYTES", "StoredPayload", "check_digest", "check_payload", "missing", "salted"]

#: The length of a payload's salt.
SALT_BYTES: Final = 32
_DIGEST: Final = re.compile(r"sha256:[0-9a-f]{64}")


class StoredPayload(NamedTuple):
    """A payload a writer stored: its name (``sha256:<hex>`` over the salt and the bytes) and its size."""

    digest: str
    size: int


def salted(data: bytes, salt: bytes | None = None) -> tuple[StoredPayload, bytes]:
    """Name ``data`` with a fresh salt (or ``salt``, 32 bytes): the payload's name and the salt.

    A payload over the payload cap (docs/limits.md) is refused with INPUT_TOO_LARGE; a value that is not
    ``bytes`` with USAGE (a text is never encoded on the caller's behalf).
    """
    if not isinstance(data, bytes):
        raise error("USAGE", f"a payload is bytes, not {type(data).__name__}")
    if salt is None:
        salt = secrets.token_bytes(SALT_BYTES)
    elif not isinstance(salt, bytes) or len(salt) != SALT_BYTES:
        raise error("USAGE", f"a payload's salt is {SALT_BYTES} bytes")
    cap = PAYLOAD.cap()
    if len(data) > cap:
        raise error(
            "INPUT_TOO_LARGE",
            f"the payload is {len(data)} bytes, over the payload cap of {cap} (${PAYLOAD.env})",
            size=len(data),
            cap=cap,
        )
    return StoredPayload("sha256:" + hashlib.sha256(salt + data).hexdigest(), len(data)), salt


def check_digest(digest: str) -> str:
    """The hex part of a payload's name ``sha256:<64 lower-case hex digits>``; USAGE for anything else."""
    if not isinstance(digest, str) or _DIGEST.fullmatch(digest) is None:
        raise error("USAGE", f"a payload is named sha256:<64 lower-case hex digits>, not {digest!r}")
    return digest[len("sha256:") :]


def check_payload(digest: str, salt: bytes, data: bytes, *, where: str) -> bytes:
    """``data`` when the salt and the bytes hash to ``digest``; PAYLOAD_ALTERED (naming ``where``) otherwise."""
    if len(salt) != SALT_BYTES or "sha256:" + hashlib.sha256(salt + data).hexdigest() != digest:
        raise error(
            "PAYLOAD_ALTERED",
            f"payload {digest} in {where} does not hash to its name: its bytes or its salt were altered",
            digest=digest,
            path=where,
        )
    return data


def missing(digest: str, where: str) -> PlantrailError:
    """The PAYLOAD_MISSING error for a payload ``where`` does not hold."""
    return error("PAYLOAD_MISSING", f"{where} holds no payload {digest}", digest=digest, path=where)
