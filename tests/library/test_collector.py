"""The cyclic collector paused for a read: off inside, as it was after, whatever the block raised."""

from __future__ import annotations

import gc
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from plantrail.ledger.api import Ledger
from plantrail.ledger.collector import paused
from plantrail.ledger.verify import verify_log
from plantrail.ledger.vocabulary.errors import PlantrailError


@pytest.fixture(params=[True, False], ids=["collecting", "not-collecting"])
def collecting(request: pytest.FixtureRequest) -> Iterator[bool]:
    """The collector on or off before the block, as the caller left it; restored after the test."""
    was = gc.isenabled()
    (gc.enable if request.param else gc.disable)()
    try:
        yield request.param
    finally:
        (gc.enable if was else gc.disable)()


def test_the_collector_is_off_inside_and_as_it_was_after(collecting: bool) -> None:
    with paused():
        assert not gc.isenabled()
        with paused():  # nested: the inner block leaves it off for the outer one
            assert not gc.isenabled()
        assert not gc.isenabled()
    assert gc.isenabled() is collecting


def test_the_collector_is_restored_when_the_block_raises(collecting: bool) -> None:
    with pytest.raises(ZeroDivisionError), paused():
        _ = 1 / 0
    assert gc.isenabled() is collecting


def test_verify_leaves_the_collector_as_it_found_it(
    tmp_path: Path, make_ledger: Callable[..., Ledger], draft: dict[str, Any], collecting: bool
) -> None:
    """On a log that verifies and on one it refuses, verify gives the collector back in the state it had."""
    ledger = make_ledger(draft)
    ledger.start("reproduce")
    ledger.close()
    log = tmp_path / "run.jsonl"
    verify_log(log)
    assert gc.isenabled() is collecting
    lines = log.read_bytes().splitlines(keepends=True)
    log.write_bytes(lines[0] + lines[1].replace(b'"reproduce"', b'"reproducE"', 1) + b"".join(lines[2:]))
    with pytest.raises(PlantrailError):
        verify_log(log)
    assert gc.isenabled() is collecting
