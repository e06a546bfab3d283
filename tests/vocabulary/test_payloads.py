"""An unread payload is one value: read once through the reader its store gave it, or known only by its digest."""

from __future__ import annotations

import pytest

from plantrail.ledger.vocabulary.payloads import Payload
from plantrail.projections.model import LazyText, text


def test_a_payload_is_read_once_through_its_reader() -> None:
    """The reader runs on first use only; the payload then equals, hashes and prints as its text."""
    reads: list[tuple[object, ...]] = []

    def read(ref: tuple[object, ...]) -> str:
        reads.append(ref)
        return "npm test passes"

    payload = Payload((10, 20, "h"), read)
    assert not payload.resolved and repr(payload) == "Payload((10, 20, 'h'))"
    assert payload == "npm test passes" and text(payload) == "npm test passes" and str(payload) == "npm test passes"
    assert hash(payload) == hash("npm test passes") and payload.resolved
    assert reads == [(10, 20, "h")]


def test_a_payload_known_by_its_digest_compares_by_digest_and_cannot_be_read() -> None:
    """With no reader, two payloads of one digest are equal, another digest is not, and reading names the digest."""
    one, same, other = (Payload(("blob",), digest=d) for d in ("ab" * 32, "ab" * 32, "cd" * 32))
    assert one == same and one != other and hash(one) == hash(same)
    with pytest.raises(ValueError, match="sha256:abab"):
        one.resolve()


def test_the_old_name_is_the_same_class() -> None:
    """``LazyText``, the name before the payload joined the vocabulary, is the same class."""
    assert LazyText is Payload
