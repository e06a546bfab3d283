"""The draft ``plantrail new`` writes is a valid plan, and every term it shows as a comment is one a draft takes."""

from __future__ import annotations

import re
import tomllib

from plantrail.ledger.vocabulary.draft_check import check_draft
from plantrail.ledger.vocabulary.draft_template import TEMPLATE
from plantrail.ledger.vocabulary.plan import build_plan, parse_draft

#: A commented term: ``# key = value``, optionally followed by its own comment.
_TERM = re.compile(r"^# ([a-z_]+ = .+?)(?:\s+# .*)?$")


def _uncommented(text: str) -> str:
    """The template with every commented term (and the commented [policy] table) made live."""
    lines = []
    for line in text.splitlines():
        if line == "# [policy]":
            lines.append("[policy]")
            continue
        found = _TERM.match(line)
        lines.append(found.group(1) if found else line)
    return "\n".join(lines) + "\n"


def test_the_template_as_written_is_a_plan_with_no_problem_and_no_warning() -> None:
    found = check_draft(tomllib.loads(TEMPLATE))
    assert (found.problems, found.warnings) == ((), ())
    plan = build_plan(parse_draft(tomllib.loads(TEMPLATE)))
    assert [step.id for step in plan.steps] == ["first", "second"]
    assert [criterion.id for criterion in plan.acceptance_criteria] == ["done"]


def test_every_commented_term_uncommented_is_taken_by_the_draft() -> None:
    live = _uncommented(TEMPLATE)
    assert live != TEMPLATE
    draft = tomllib.loads(live)
    first = draft["steps"][0]
    assert {
        "covers",
        "priority",
        "max_attempts",
        "timeout_s",
        "writes",
        "allowed_tools",
        "requires_approval",
        "effects_require_approval",
        "on_failure",
        "max_cost_usd",
        "outputs",
        "notes",
    } <= set(first)
    assert set(draft["scope"]) == {"writes", "reads"}
    assert draft["acceptance_criteria"][0]["checks"][0]["kind"] == "command_exit"
    assert set(draft["policy"]) == {"max_in_progress", "max_turns", "max_cost_usd", "deadline", "allowed_partial"}
    found = check_draft(draft)
    assert found.problems == ()
