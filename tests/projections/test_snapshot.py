"""State snapshots: encoding a state and decoding it gives the same state, for any log."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from plantrail.ledger.rules.decide import Command
from plantrail.ledger.vocabulary.plan import PlanSpec
from plantrail.projections.canonical import state_hash
from plantrail.projections.state import initial
from plantrail.projections.state_json import decode_state, encode_state
from tests.strategies import commands, plans, simulate


@settings(max_examples=150, deadline=None)
@given(st.tuples(plans(), st.lists(commands(), max_size=30)))
def test_a_snapshot_decodes_to_the_state_it_encoded(log: tuple[PlanSpec, list[Command]]) -> None:
    """decode(encode(s)) == s at every point of any log, with the same state hash."""
    for state in simulate(*log).states:
        again = decode_state(encode_state(state))
        assert again == state
        assert state_hash(again) == state_hash(state)


def test_the_empty_state_round_trips() -> None:
    """Even the state before any record survives a snapshot."""
    assert decode_state(encode_state(initial())) == initial()


@settings(max_examples=100, deadline=None)
@given(st.tuples(plans(), st.lists(commands(), max_size=30)))
def test_a_snapshot_that_refers_to_nothing_is_the_plain_encoding(log: tuple[PlanSpec, list[Command]]) -> None:
    """The walk that looks for large texts to refer to (which gives tuples of scalars back whole) writes, when
    it refers to nothing, the very bytes of the plain encoding, at every point of any log; and with every
    string referred to, the state decodes back from the references."""
    for state in simulate(*log).states:
        assert encode_state(state, lambda text: None) == encode_state(state)
        refs: dict[str, int] = {}
        with_refs = encode_state(state, lambda text, refs=refs: refs.setdefault(text, len(refs)))
        texts = {ref: text for text, ref in refs.items()}
        assert decode_state(with_refs, texts.__getitem__) == state
