"""Fixtures of the store tests: each store in turn."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers.stores import JsonlTarget, PostgresTarget, postgres_url

Target = JsonlTarget | PostgresTarget


@pytest.fixture(params=["jsonl", "postgres"])
def target(request: pytest.FixtureRequest, tmp_path: Path) -> Target:
    """Each store in turn: runs as files in a temporary folder, then runs in the test server's database."""
    if request.param == "jsonl":
        return JsonlTarget(tmp_path)
    return PostgresTarget(postgres_url())
