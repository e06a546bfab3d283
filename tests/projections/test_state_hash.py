"""The state hash, taken piece by piece, is the SHA-256 of the canonical bytes, and holds one piece at a time.

:func:`projections.canonical.state_hash` feeds the hash the state's members and each step, criterion and late
result one at a time instead of encoding the whole state first. These tests hold it to the hash of
:func:`canonical_bytes` on every state of every bundled sample (format v1 and v2, imported, forked, with
lineage and side effects), of the benchmark's recorded run and of generated runs, on values a state never
holds (empty and nested tables, tuples, dicts with other keys), and show what it saves on a state holding
megabytes of evidence.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bench.scenario import record_run
from plantrail.ledger.api import Ledger
from plantrail.ledger.reading import read_state
from plantrail.ledger.rules.decide import Command
from plantrail.ledger.stores.jsonl.log import LogReader
from plantrail.ledger.vocabulary.plan import PlanSpec
from plantrail.projections import canonical
from plantrail.projections.canonical import canonical_bytes, state_hash
from plantrail.projections.model import PlanState
from plantrail.projections.state import evolve, initial
from plantrail.projections.table import Table
from tests.conftest import Clock
from tests.strategies import commands, plans, simulate

#: The bundled plantrail logs (not the transcripts they were imported from).
SAMPLES = sorted(
    p
    for p in (Path(__file__).parents[2] / "samples").glob("*.jsonl")
    if p.read_bytes().startswith(b'{"v":') and b'"type":"log.opened"' in p.read_bytes().split(b"\n", 1)[0]
)


def _whole(state: Any) -> str:
    return hashlib.sha256(canonical_bytes(state)).hexdigest()


def _states(path: Path) -> list[PlanState]:
    """The state after every record of the log at ``path``."""
    state, states = initial(), []
    with LogReader(path) as reader:
        for record in reader.records():
            state = evolve(state, record)
            states.append(state)
    return states


@pytest.mark.parametrize("path", SAMPLES, ids=[p.name for p in SAMPLES])
def test_every_state_of_every_sample_hashes_as_its_canonical_bytes(path: Path) -> None:
    states = _states(path)
    assert states
    for state in states:
        assert state_hash(state) == _whole(state)


def test_every_state_of_a_recorded_run_with_replans_and_late_results(tmp_path: Path) -> None:
    states = _states(record_run(tmp_path / "run.jsonl", 600))
    assert any(s.orphans for s in states) or any(s.version > 2 for s in states)
    for state in states[::7] + states[-1:]:
        assert state_hash(state) == _whole(state)


@settings(max_examples=100, deadline=None)
@given(plans(checks=True), st.lists(commands(), max_size=25))
def test_every_state_of_a_generated_run(plan: PlanSpec, cmds: list[Command]) -> None:
    for state in simulate(plan, cmds).states:
        assert state_hash(state) == _whole(state)


@pytest.mark.parametrize(
    "value",
    [
        {},
        [],
        (),
        {"b": [1, (2, 3)], "a": {"y": {}, "x": []}, "é": None, "Z": "\n\u2028"},
        {1: "a", 2: "b"},  # keys orjson refuses: encoded whole, refused the same way
        Table((), ()),
        Table(("b", "a"), (1, {"k": (1, [])})),
    ],
    ids=["empty dict", "empty list", "empty tuple", "nested", "int keys", "empty table", "table"],
)
def test_the_pieces_of_any_value_are_its_canonical_bytes(value: Any) -> None:
    """Sorted keys (by code point, as orjson sorts them), empty containers, escapes, and what cannot be encoded."""
    for depth in range(4):
        try:
            whole = canonical_bytes(value)
        except TypeError:
            with pytest.raises(TypeError):
                b"".join(canonical._pieces(value, depth))
            continue
        assert b"".join(canonical._pieces(value, depth)) == whole


def test_a_state_with_megabytes_of_evidence_is_hashed_a_step_at_a_time(tmp_path: Path) -> None:
    """Eight steps of 1 MiB of evidence each: the whole encoding is over 8 MiB; the hash, the same value, is fed
    pieces of at most about one step's encoding, each dropped before the next is made (a generator)."""
    size, count = 1 << 20, 8
    steps = [{"id": f"s{i}", "title": f"step {i}", "completion_evidence": "output"} for i in range(count)]
    draft = {"goal": "much evidence", "acceptance_criteria": [{"id": "c", "description": "done"}], "steps": steps}
    with Ledger.create(tmp_path / "run.jsonl", draft, fsync="none", clock=Clock()) as ledger:
        for i, step in enumerate(steps):
            ledger.start(step["id"])
            ledger.complete(step["id"], [f"{i:04d}" + "x" * (size - 4)])
    state = read_state(str(tmp_path / "run.jsonl"), use_cache=False).state
    assert state_hash(state) == _whole(state)
    assert len(canonical_bytes(state)) > count * size
    assert max(len(piece) for piece in canonical._pieces(state, canonical._OPENED)) < size + 4096
