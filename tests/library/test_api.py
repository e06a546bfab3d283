"""The Ledger's recording methods: typed keyword-only options, named as the CLI names them."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from pathlib import Path

import click
import pytest

from plantrail.cli.main import all_commands
from plantrail.ledger.api import Ledger
from plantrail.ledger.stores.jsonl.log import LogReader
from plantrail.ledger.vocabulary.events import Source
from tests.conftest import CliResult

#: Each recording method and the command that does the same.
METHODS = {
    "start": "start",
    "complete": "complete",
    "block": "block",
    "fail": "fail",
    "verify_criterion": "criterion",
    "finish": "finish",
    "replan": "replan",
}
#: The options the recording commands share with the library, by their Python name.
SHARED = {"plan_version", "attempt", "idempotency_key", "expected_seq", "actor"}


def _flags(command: click.Command) -> set[str]:
    """A command's long option names as Python identifiers (``--idempotency-key`` -> ``idempotency_key``)."""
    return {
        flag.removeprefix("--").replace("-", "_")
        for param in command.params
        if isinstance(param, click.Option)
        for flag in param.opts
        if flag.startswith("--")
    }


def _keyword_only(method: str) -> set[str]:
    parameters = inspect.signature(getattr(Ledger, method)).parameters.values()
    return {p.name for p in parameters if p.kind is inspect.Parameter.KEYWORD_ONLY}


@pytest.mark.parametrize("method", sorted(METHODS))
def test_each_method_takes_exactly_its_commands_shared_options_by_the_same_names(method: str) -> None:
    """A recording method has a keyword-only argument for each shared option its command has, and no other."""
    flags = _flags(all_commands()[METHODS[method]])
    assert SHARED & flags == SHARED & _keyword_only(method)
    assert "source" in _keyword_only(method)


@pytest.mark.parametrize("method", sorted(METHODS))
def test_no_method_takes_arbitrary_options(method: str) -> None:
    """No recording method hides its options behind **kwargs."""
    kinds = {p.kind for p in inspect.signature(getattr(Ledger, method)).parameters.values()}
    assert inspect.Parameter.VAR_KEYWORD not in kinds


@pytest.mark.parametrize("typo", ["key", "expected_sequence", "idempotencyKey"])
def test_an_unknown_keyword_is_a_type_error_naming_it(make_ledger: Callable[..., Ledger], typo: str) -> None:
    """A misspelt option is Python's TypeError naming the keyword, and nothing is written."""
    ledger = make_ledger()
    with pytest.raises(TypeError, match=typo):
        ledger.start("reproduce", **{typo: "x"})  # type: ignore[arg-type]
    assert ledger.refresh().last_seq == 1


def test_a_python_idempotency_key_is_the_clis_idempotency_key(
    make_ledger: Callable[..., Ledger], tmp_path: Path, run_cli: Callable[..., CliResult]
) -> None:
    """A start recorded with idempotency_key="s1" in Python is a duplicate for --idempotency-key s1."""
    make_ledger().close()
    with Ledger.open(tmp_path / "run.jsonl") as ledger:
        first = ledger.start("reproduce", idempotency_key="s1")
    retried = run_cli("start", tmp_path / "run.jsonl", "reproduce", "--idempotency-key", "s1", "--json").json()
    assert (retried["seq"], retried["duplicate"]) == (first.seq, True)


def test_actor_source_plan_version_and_attempt_reach_the_record(
    make_ledger: Callable[..., Ledger], tmp_path: Path
) -> None:
    """The keyword options land in the record's envelope and data as given."""
    ledger = make_ledger()
    ledger.start("reproduce", actor="runtime", source=Source(file="t.jsonl", line=3))
    ack = ledger.fail("reproduce", "flaky", plan_version=1, attempt=1, actor="user", expected_seq=2)
    with LogReader(tmp_path / "run.jsonl") as reader:
        started, failed = list(reader.records())[-2:]
    assert (started.actor, started.source) == ("runtime", Source(file="t.jsonl", line=3))
    assert (failed.seq, failed.actor, failed.plan_version, failed.data.attempt) == (ack.seq, "user", 1, 1)  # type: ignore[attr-defined]


def test_create_takes_its_idempotency_key_by_the_same_name(tmp_path: Path, draft: dict[str, object]) -> None:
    """Ledger.create(idempotency_key=...) stores the key on the plan's record."""
    with Ledger.create(tmp_path / "k.jsonl", draft, idempotency_key="plan-1", fsync="none"):
        pass
    with LogReader(tmp_path / "k.jsonl") as reader:
        assert [r.key for r in reader.records()] == [None, "plan-1"]
