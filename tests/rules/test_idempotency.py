"""Idempotent appends: the same key with the same content returns the original seq and writes nothing; the
same key with other content is refused with IDEMPOTENCY_CONFLICT. Library and CLI alike."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from plantrail.ledger.api import Ledger
from plantrail.ledger.rules.decide import Complete, Start
from plantrail.ledger.vocabulary.errors import PlantrailError
from tests.conftest import CliResult

MakeLedger = Callable[..., Ledger]


def test_retry_with_the_same_key_returns_the_original_and_writes_nothing(
    make_ledger: MakeLedger, tmp_path: Path
) -> None:
    """A retried keyed command acks the original seq and hash, marked duplicate, and the file is unchanged."""
    ledger = make_ledger()
    first = ledger.start("reproduce", idempotency_key="start-reproduce")
    ledger.complete("reproduce", ["saved failing output"], idempotency_key="done-reproduce")
    before = (tmp_path / "run.jsonl").read_bytes()

    again = ledger.start("reproduce", idempotency_key="start-reproduce")

    assert (again.seq, again.hash, again.duplicate) == (first.seq, first.hash, True)
    assert (tmp_path / "run.jsonl").read_bytes() == before


def test_same_key_with_other_content_is_refused(make_ledger: MakeLedger, tmp_path: Path) -> None:
    """Reusing a key for different content raises IDEMPOTENCY_CONFLICT naming the original seq."""
    ledger = make_ledger()
    ledger.start("reproduce")
    original = ledger.complete("reproduce", ["saved failing output"], idempotency_key="k1")
    before = (tmp_path / "run.jsonl").read_bytes()

    with pytest.raises(PlantrailError) as caught:
        ledger.block("reproduce", "no access", idempotency_key="k1")

    assert (caught.value.code, caught.value.fields["seq"]) == ("IDEMPOTENCY_CONFLICT", original.seq)
    assert (tmp_path / "run.jsonl").read_bytes() == before


def test_keys_survive_reopening(make_ledger: MakeLedger, tmp_path: Path) -> None:
    """Another process (or a restarted one) sees the keys already in the log."""
    make_ledger().start("reproduce", idempotency_key="s1")
    with Ledger.open(tmp_path / "run.jsonl") as reopened:
        assert reopened.start("reproduce", idempotency_key="s1").duplicate
        with pytest.raises(PlantrailError, match="idempotency key 's1'"):
            reopened.start("diagnose", idempotency_key="s1")


def test_a_batch_with_a_retried_key_writes_only_the_new_events(make_ledger: MakeLedger) -> None:
    """In one group commit, retried keys ack their originals and only new events are written."""
    ledger = make_ledger()
    started = ledger.start("reproduce", idempotency_key="a")
    acks = ledger.execute_many(
        [Start(step="reproduce", key="a"), Complete(step="reproduce", evidence=["out"], key="b")]
    )
    assert [(a.seq, a.duplicate) for a in acks] == [(started.seq, True), (started.seq + 2, False)]
    assert ledger.state.last_seq == started.seq + 3  # the new event between its batch's log.batch bounds


def test_cli_idempotency_key(
    tmp_path: Path, run_cli: Callable[..., CliResult], write_json: Callable[[str, Any], Path], draft: dict[str, Any]
) -> None:
    """`--idempotency-key`: a retry exits 0 with the original seq; other content exits 1, log unchanged."""
    log = tmp_path / "run.jsonl"
    run_cli("create", log, "--plan", write_json("d.json", draft))
    first = run_cli("start", log, "reproduce", "--idempotency-key", "job-7", "--json").json()
    before = log.read_bytes()

    retry = run_cli("start", log, "reproduce", "--idempotency-key", "job-7", "--json")
    conflict = run_cli("start", log, "diagnose", "--idempotency-key", "job-7")

    assert (retry.code, retry.json()["seq"], retry.json()["duplicate"]) == (0, first["seq"], True)
    assert (conflict.code, conflict.err.split(":")[0]) == (1, "error[IDEMPOTENCY_CONFLICT]")
    assert log.read_bytes() == before
