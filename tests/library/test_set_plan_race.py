"""Agents that send the same keyed first plan at once (each its own plan server on one runs folder): one creates
the run, and every other gets the original's acknowledgement as a retry, not LOG_EXISTS."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

from plantrail import Ledger
from plantrail.ledger.stores.jsonl.run import FileRun
from plantrail.ledger.vocabulary.errors import PlantrailError

STEPS = [{"id": "reproduce", "title": "Reproduce", "completion_evidence": "failing output"}]
CRITERIA = [{"id": "tests-pass", "description": "the suite passes"}]


def _racing(monkeypatch: pytest.MonkeyPatch, path: Path, calls: list[dict[str, Any]]) -> list[Any]:
    """Run every call of ``Ledger.set_plan`` at once, each having looked for the run before any created it (the
    window the race falls in, held open): what each returned (its acknowledgement) or raised."""
    monkeypatch.setattr(FileRun, "exists", lambda self: False)
    start = threading.Barrier(len(calls))
    answers: list[Any] = [None] * len(calls)

    def call(i: int) -> None:
        start.wait()
        try:
            with Ledger.set_plan(path, STEPS, goal="fix login", criteria=CRITERIA, **calls[i]) as ledger:
                answers[i] = ledger.acknowledgement()
        except PlantrailError as exc:
            answers[i] = exc

    threads = [threading.Thread(target=call, args=(i,)) for i in range(len(calls))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
        assert not thread.is_alive()
    return answers


def test_the_same_keyed_first_plan_at_once_creates_once_and_acks_all(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Three callers, one key: one plan record, three acks of it (two of them duplicates)."""
    path = tmp_path / "r1.jsonl"
    answers = _racing(monkeypatch, path, [{"idempotency_key": "plan-1"}] * 3)
    assert all(isinstance(a, dict) for a in answers), answers
    assert {(a["seq"], a["hash"]) for a in answers} == {(answers[0]["seq"], answers[0]["hash"])}
    assert sorted(a["duplicate"] for a in answers) == [False, True, True]
    assert path.read_bytes().count(b'"type":"plan.created"') == 1


def test_without_a_key_or_with_another_key_the_loser_is_told(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Without a key a second creation is LOG_EXISTS (nothing says it is a retry); under another key it is a
    second plan for a run that has one (PLAN_ALREADY_CREATED)."""
    answers = _racing(monkeypatch, tmp_path / "r2.jsonl", [{}, {}])
    assert sorted(type(a).__name__ for a in answers) == ["CommandRefused", "dict"]
    assert [a.code for a in answers if isinstance(a, PlantrailError)] == ["LOG_EXISTS"]
    answers = _racing(monkeypatch, tmp_path / "r3.jsonl", [{"idempotency_key": "k1"}, {"idempotency_key": "k2"}])
    assert sorted(type(a).__name__ for a in answers) == ["CommandRefused", "dict"]
    assert [a.code for a in answers if isinstance(a, PlantrailError)] == ["PLAN_ALREADY_CREATED"]
