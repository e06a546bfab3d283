"""A follower's wait between two looks at its run is a bounded number of seconds: every follow the stores and
the library offer refuses any other value with USAGE (a huge one made the wait itself fail with an
OverflowError), and nothing is read."""

from __future__ import annotations

import copy
import math
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import pytest

from plantrail import Ledger, open_run, open_store
from plantrail.ledger import reading
from plantrail.ledger.vocabulary.durations import MAX_POLL_SECONDS, poll_seconds
from plantrail.ledger.vocabulary.errors import PlantrailError
from tests.conftest import LOGIN_DRAFT
from tests.helpers.stores import postgres_url, unique_run

BAD = [-1, -0.5, math.nan, math.inf, 1e300, MAX_POLL_SECONDS + 1, "1", True, None, [1]]


def _followers(tmp_path: Path) -> dict[str, Callable[[Any], Iterable[Any]]]:
    """Every follow plantrail offers, each on a run of its store that exists."""
    log = tmp_path / "run.jsonl"
    Ledger.create(str(log), copy.deepcopy(LOGIN_DRAFT), fsync="none").close()
    url = postgres_url()
    database_run = f"{url}#{unique_run('poll')}"
    Ledger.create(database_run, copy.deepcopy(LOGIN_DRAFT)).close()
    return {
        "file run": lambda poll: open_run(log).follow(poll=poll, stop=lambda: True),
        "database run": lambda poll: open_run(database_run).follow(poll=poll, stop=lambda: True),
        "database store": lambda poll: open_store(url).follow(poll=poll, stop=lambda: True),
        "reading.follow": lambda poll: reading.follow(str(log), poll=poll, stop=lambda: True),
    }


@pytest.mark.parametrize("poll", BAD, ids=[repr(p) for p in BAD])
def test_every_follower_refuses_a_wait_that_is_no_bounded_number_of_seconds(tmp_path: Path, poll: Any) -> None:
    """USAGE naming the poll, from the first look (a generator says it when first asked for a batch)."""
    for name, follow in _followers(tmp_path).items():
        with pytest.raises(PlantrailError) as caught:
            for _ in follow(poll):
                pass
        assert caught.value.code == "USAGE" and "poll" in caught.value.message, name


def test_a_wait_in_range_is_taken() -> None:
    """From 0 (look again at once) to an hour, an int or a float."""
    assert [poll_seconds(v) for v in (0, 0.01, 1, MAX_POLL_SECONDS)] == [0.0, 0.01, 1.0, float(MAX_POLL_SECONDS)]
