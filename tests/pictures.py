"""Logs that the picture tests draw: a diamond plan with a retry, a lineage reset and a late result."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from plantrail.ledger.api import Ledger

#: The titles no renderer may let through raw.
HOSTILE_TITLE = '</script><!-- "><svg onload=alert(1)> & \u2028 naïve 日本語 \x1b[31m'


def diamond(title: str = "Write the fix") -> dict[str, Any]:
    """A draft: a -> (b, c) -> d -> e, one criterion; ``title`` is step b's title."""
    step = lambda i, t, deps: {"id": i, "title": t, "depends_on": deps, "completion_evidence": f"{i} done"}  # noqa: E731
    return {
        "goal": "Ship the change",
        "acceptance_criteria": [{"id": "tests-pass", "description": "the tests pass"}],
        "steps": [
            step("a", "Reproduce", []),
            step("b", title, ["a"]),
            step("c", "Check config", ["a"]),
            step("d", "Verify", ["b", "c"]),
            step("e", "Release", ["d"]),
        ],
        "policy": {"max_in_progress": 2},
    }


def record_replanned_run(make_ledger: Callable[..., Ledger], title: str = "Write the fix") -> Ledger:
    """v1: a completed, b failed once then completed, c in progress; a replan rewords a (resetting b and d by
    lineage, superseding c); c's worker then reports late for v1."""
    ledger = make_ledger(diamond(title))
    ledger.start("a")
    ledger.complete("a", ["reproduced: exit 1"])
    ledger.start("b")
    ledger.fail("b", "tool crashed")
    ledger.start("b")
    ledger.complete("b", ["patched src/fix.py"])
    ledger.start("c")
    v2 = diamond(title)
    v2["steps"][0]["title"] = "Reproduce with the slow auth service"
    ledger.replan("failed_assumption", "the failure needs a slow auth service", plan=v2, causes=[5])
    ledger.complete("c", ["config is fine"], plan_version=1, attempt=1)
    return ledger
