"""The goal rule: a slash command's goal is its purpose in plain words, a templated prompt's its first sentence of
substance with the whole prompt kept, any other message's the message itself."""

from __future__ import annotations

import shutil
from pathlib import Path

from plantrail.ledger.importers.goal import first_sentence, purpose, request, slash_command, templated
from plantrail.ledger.importers.importer import import_transcript
from plantrail.ledger.stores.jsonl.log import LogReader
from plantrail.ledger.verify import verify_log
from plantrail.projections.model import PlanState
from plantrail.projections.state import fold

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "transcripts"
CLEAR = (
    "<command-name>/clear</command-name>\n  <command-message>clear</command-message>\n  <command-args></command-args>"
)
REVIEW = (
    "<command-name>/review-pr</command-name>\n<command-message>review-pr</command-message>\n"
    "<command-args>123</command-args>"
)
TEMPLATE = (
    "## User Input\n\n```text\nAdd an export of the monthly report as CSV\n```\n\n"
    "You **MUST** consider the user input before proceeding (if not empty).\n\n## Outline\n\n"
    "Given that feature description, do this:\n\n1. Generate a short name for the branch.\n"
    '2. Run `create-feature.sh --json "$ARGUMENTS"` and parse its output.\n' + "Keep each step small. " * 12
)


def imported_plan(tmp_path: Path, fixture: str) -> PlanState:
    """The plan of a fixture's import (its log verified)."""
    source = tmp_path / fixture
    shutil.copyfile(FIXTURES / fixture, source)
    report = import_transcript(source, tmp_path / "out.jsonl")
    verify_log(report.log)
    with LogReader(report.log) as reader:
        return fold(list(reader.records()))


def test_a_slash_command_with_arguments_is_the_command_as_typed() -> None:
    """`/review-pr 123` is the goal of a command with arguments: the command and its arguments, no XML."""
    assert purpose(REVIEW) == ("/review-pr 123", None, True)
    assert slash_command(REVIEW) == ("/review-pr", "review-pr", "123", "")


def test_a_slash_command_as_typed_is_read_as_one() -> None:
    """The command as a hook receives it (`/review-pr 123`) asks for what it says; `/clear` alone asks for nothing; a
    path is no command."""
    assert purpose("/review-pr 123") == ("/review-pr 123", None, True)
    assert purpose("/clear") == ("/clear", None, False)
    assert slash_command("/etc/hosts is missing an entry") is None
    assert request([("/clear", 1), ("/review-pr 123", 2)], (None, None)) == ("/review-pr 123", 2, None)


def test_a_slash_command_that_expands_is_its_expansions_first_sentence() -> None:
    """A command without arguments whose expansion the transcript holds asks what its expansion's first sentence
    of substance says; the whole (command and expansion) is kept."""
    sent = "<command-name>/init</command-name>\n\nPlease analyze this codebase and write down how to test it.\n\n1. No."

    assert purpose(sent) == (
        "/init: Please analyze this codebase and write down how to test it.",
        "/init\n\nPlease analyze this codebase and write down how to test it.\n\n1. No.",
        True,
    )


def test_a_slash_command_of_its_name_alone_asks_for_nothing() -> None:
    """`/clear` says nothing more than its name: not a request; one whose message says more is its message."""
    running = "<command-message>init is analyzing your codebase…</command-message>\n<command-name>/init</command-name>"

    assert purpose(CLEAR) == ("/clear", None, False)
    assert purpose(running) == ("/init: init is analyzing your codebase…", None, True)
    assert request([(CLEAR, 2), ("Fix the flaky login test please", 4)], (None, None)) == (
        "Fix the flaky login test please",
        4,
        None,
    )


def test_words_that_merely_mention_a_command_are_no_command() -> None:
    """A message that opens with words of its own is read as written, even when it quotes command elements."""
    said = "Why does <command-name>/init</command-name> write a CLAUDE file here?"

    assert slash_command(said) is None
    assert purpose(said) == (said, None, True)


def test_a_templated_prompt_is_its_first_sentence_of_substance() -> None:
    """Headings and code are passed over; a `text` block is the user's words, so it is the first sentence of
    substance; the whole prompt is kept."""
    assert templated(TEMPLATE)
    assert purpose(TEMPLATE) == ("Add an export of the monthly report as CSV", TEMPLATE.strip(), True)


def test_a_sentence_ends_where_the_next_begins() -> None:
    """Sentences are split after a full stop, question or exclamation mark followed by a word that is not in lower
    case; emphasis and element tags are taken off; front matter and tables are not prose."""
    text = "---\ndescription: a command\n---\n| a | b |\n<task>\nFix **the** parser right now. Then add tests.\n</task>"

    assert first_sentence(text) == "Fix the parser right now."
    assert first_sentence("# Title\n\n```python\nprint('a long line of code here')\n```") is None


def test_a_message_without_markup_or_length_is_no_template() -> None:
    """A long message of plain prose, or a short one with a heading, is read as written."""
    prose = "Please fix the rounding of invoice totals. " * 12
    short = "## Bug\n\nThe total is off by a cent."

    assert not templated(prose) and purpose(prose) == (prose, None, True)
    assert not templated(short) and purpose(short) == (short, None, True)


def test_a_session_opened_by_a_slash_command_has_its_purpose_as_goal(tmp_path: Path) -> None:
    """Imported, a session that begins with `/clear` and then a command whose expansion follows it has the
    command's purpose as goal, the expansion kept in version 1's notes, and no XML anywhere in the goal."""
    plan = imported_plan(tmp_path, "claude_slash_command.jsonl").plan

    assert plan is not None
    assert plan.goal == (
        "/release-notes: Write the release notes for the next version from the pull requests merged since the last tag."
    )
    (kept,) = [note for note in plan.notes if "the user's prompt in full" in note]
    assert kept.startswith("transcript line 4: the user's prompt in full: /release-notes\n\n# Release notes\n")
    assert kept.endswith("keep each entry to one line.")


def test_a_session_opened_by_a_template_has_its_first_sentence_as_goal(tmp_path: Path) -> None:
    """Imported, a session that begins with a templated prompt has its first sentence of substance as goal and the
    whole prompt in version 1's notes."""
    plan = imported_plan(tmp_path, "claude_templated_prompt.jsonl").plan

    assert plan is not None
    assert plan.goal == "Review the refund endpoint for double refunds when a request is retried"
    (kept,) = [note for note in plan.notes if "the user's prompt in full" in note]
    assert kept.startswith("transcript line 1: the user's prompt in full: ## Task\n\n```text\nReview the refund")
    assert kept.endswith("</guidelines>")
