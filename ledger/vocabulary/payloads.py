"""A payload the log holds that the state has not read: one value, whatever holds the payload's bytes.

A writer that starts from a snapshot keeps each large text of evidence as a :class:`Payload` (``ref``: where
the record carrying it lies, the store's own reference) instead of reading, decoding and hashing every record
back, since no rule reads evidence. The text is read once, when something needs it (:meth:`Payload.resolve`,
``str()``, equality, hashing, the canonical and JSON encoders), by the reader the store gave it, which checks
the bytes against their hash (ValueError when the store no longer holds them). A snapshot's encoder writes it
back as the same reference without reading it. A payload may also be known only by its ``digest`` (the SHA-256
of its bytes, with no reader): it compares by digest with another such payload, and reading it is a
ValueError naming the digest.

The state holds the value; whoever reads it reads through the store that made it: no reducer or view opens a
file for it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["Payload"]


class Payload:
    """A payload not read yet: its store's reference, its digest when known, and the reader that reads it."""

    __slots__ = ("_fill", "_text", "digest", "ref")

    def __init__(
        self,
        ref: tuple[Any, ...],
        fill: Callable[[tuple[Any, ...]], str] | None = None,
        *,
        digest: str | None = None,
    ) -> None:
        self.ref = ref
        self.digest = digest
        self._fill = fill
        self._text: str | None = None

    def resolve(self) -> str:
        """The text (read and checked on first use; ValueError when it cannot be had)."""
        if self._text is None:
            if self._fill is None:
                raise ValueError(f"the payload sha256:{self.digest} is known only by its digest: it cannot be read")
            self._text = self._fill(self.ref)
        return self._text

    @property
    def resolved(self) -> bool:
        """True once the text was read."""
        return self._text is not None

    def __str__(self) -> str:
        return self.resolve()

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Payload):
            if self.digest is not None and other.digest is not None and (self._fill is None or other._fill is None):
                return self.digest == other.digest
            if other.ref == self.ref and other._fill is self._fill:
                return True
            return self.resolve() == other.resolve()
        return self.resolve() == other if isinstance(other, str) else NotImplemented

    def __hash__(self) -> int:
        return hash(self.digest) if self._fill is None else hash(self.resolve())

    def __repr__(self) -> str:
        return f"Payload({self.ref!r})" if self._text is None else repr(self._text)
