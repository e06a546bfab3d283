"""The goal rule: which of the user's messages is the request a plan answers, and what of it is the goal.

The request is the first message of the session, before the first plan update, that asks for something;
failing that, the last message before the plan. What a message asks for, in plain words:

* **A slash command** (as typed, ``/review-pr 123``, which is what a hook receives; a Claude Code transcript
  writes ``<command-name>/review-pr</command-name>``, ``<command-message>…</command-message>`` and
  ``<command-args>123</command-args>``, and the prompt the command expands to on the next line, which the
  parser joins to it): the command with its arguments
  (``/review-pr 123``); without arguments, the command and the first sentence of substance of the prompt it
  expands to (``/init: Please analyze this codebase and write down how to build it.``); without either, the
  command and its message when the message says more than the command's name. A command that says nothing
  more than its name (``/clear``, ``/model``) asks for nothing.
* **A templated prompt**, one of at least TEMPLATE_CHARACTERS characters that holds markup (a Markdown
  heading, an XML-like element, a placeholder such as ``$ARGUMENTS`` or ``{{name}}``): its first sentence of
  substance, see :func:`first_sentence`.
* **Any other message**: the message itself, when it is *substantive*: at least REQUEST_WORDS words and
  REQUEST_CHARACTERS characters once whitespace is collapsed (not "Go", not "OK, let's start").

When the goal is only part of the message (a template's sentence, a command's expansion), the whole message
is kept beside it (:attr:`Request.whole`), and the mapping records it in version 1's notes. Pure functions
of text: nothing here reads a file.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from typing import NamedTuple

__all__ = [
    "REQUEST_CHARACTERS",
    "REQUEST_WORDS",
    "TEMPLATE_CHARACTERS",
    "Purpose",
    "Request",
    "SlashCommand",
    "first_sentence",
    "purpose",
    "request",
    "slash_command",
    "substantive",
    "templated",
]

REQUEST_WORDS = 4
REQUEST_CHARACTERS = 20
TEMPLATE_CHARACTERS = 400

# The patterns are compiled on first use (``re``'s own cache keeps them): a hook call maps through this module
# and meets none of them in the common case.
_COMMAND_ELEMENT = r"(?s)<command-(?P<tag>name|message|args)>(?P<value>.*?)</command-(?P=tag)>"
_TYPED_COMMAND = r"(?s)(?P<name>/[A-Za-z][\w:.-]*)(?:\s+(?P<args>.*))?"
_HEADING = r"(?m)^\s{0,3}#{1,6}\s+\S"
_ELEMENT = r"(?m)^\s*</?[A-Za-z][\w.:-]*(?:\s[^<>]*)?/?>"
_PLACEHOLDER = r"\$ARGUMENTS\b|\$[1-9]\b|\{\{\s*[\w.-]+\s*\}\}|\[[A-Z][A-Z0-9_]{2,}(?: [A-Z0-9_]+)*\]"
_TAG = r"</?[A-Za-z][\w.:-]*(?:\s[^<>]*)?/?>"
_FENCE = r"^\s*(?:```|~~~)\s*(?P<language>[\w+-]*)"
_QUOTED_LANGUAGES = frozenset({"text", "txt", "plaintext"})
_RULE = r"^\s*(?:[-*_]\s*){3,}$"
_ITEM = r"^\s*(?:[-*+]|\d{1,3}[.)])\s+"
_EMPHASIS = r"\*\*|__"
_SENTENCE_END = r"(?<=[.!?])\s+(?=[^a-z])"


class SlashCommand(NamedTuple):
    """A slash command as the user sent it: its name (with its slash), message, arguments and, when the
    transcript holds it, the prompt it expands to (``body``)."""

    name: str
    message: str
    args: str
    body: str


class Purpose(NamedTuple):
    """What one message asks for: the goal's words, the whole message when the goal is only part of it, and
    whether the message is a request at all."""

    goal: str
    whole: str | None
    asks: bool


class Request(NamedTuple):
    """The request a plan answers: the goal's words, the message's line, and the whole message when the goal
    is only part of it (a template's first sentence of substance, a command's expansion)."""

    goal: str
    line: int
    whole: str | None


def substantive(text: str) -> bool:
    """Whether a user message can be the request a plan answers: at least REQUEST_WORDS words and
    REQUEST_CHARACTERS characters once whitespace is collapsed (not "Go", not "OK, let's start")."""
    flat = " ".join(text.split())
    return len(flat.split(" ")) >= REQUEST_WORDS and len(flat) >= REQUEST_CHARACTERS


def slash_command(text: str) -> SlashCommand | None:
    """The slash command a message is (it opens with ``<command-…>`` elements that name one, as a transcript
    records it, or it is the command as typed, ``/review-pr 123``, as a hook receives it); None otherwise."""
    typed = re.fullmatch(_TYPED_COMMAND, text.strip())
    if typed is not None:
        return SlashCommand(name=typed["name"], message="", args=(typed["args"] or "").strip(), body="")
    first = re.search(_COMMAND_ELEMENT, text)
    if first is None or text[: first.start()].strip():
        return None
    values: dict[str, str] = {}

    def take(element: re.Match[str]) -> str:
        values.setdefault(element["tag"], element["value"].strip())
        return ""

    body = re.sub(_COMMAND_ELEMENT, take, text).strip()
    name = values.get("name", "")
    if not name:
        return None
    return SlashCommand(
        name=name if name.startswith("/") else f"/{name}",
        message=values.get("message", ""),
        args=values.get("args", ""),
        body=body,
    )


def templated(text: str) -> bool:
    """Whether a message is a templated prompt: at least TEMPLATE_CHARACTERS characters (whitespace collapsed)
    holding a Markdown heading, an XML-like element at the start of a line, or a placeholder."""
    if len(" ".join(text.split())) < TEMPLATE_CHARACTERS:
        return False
    return any(re.search(pattern, text) for pattern in (_HEADING, _ELEMENT, _PLACEHOLDER))


def first_sentence(text: str) -> str | None:
    """A template's first sentence of substance: the first substantive sentence of its prose, read in order.
    Prose is what is left once headings, front matter, rules, tables and code are set aside and element tags
    and emphasis marks are taken off; a fenced block marked ``text`` is prose (a template quotes the user's own
    words in one). None when the text holds no such sentence."""
    for paragraph in _paragraphs(text):
        for sentence in re.split(_SENTENCE_END, paragraph):
            sentence = sentence.strip()
            if substantive(sentence):
                return sentence
    return None


def _paragraphs(text: str) -> Iterator[str]:
    """The prose of ``text`` as paragraphs (blank lines and list items start a new one), each on one line."""
    lines: list[str] = []
    fence: str | None = None  # the language of the open fenced block, "" when it names none
    for line in _without_front_matter(text.strip().splitlines()):
        opened = re.match(_FENCE, line)
        if opened is not None:
            fence = opened["language"].lower() if fence is None else None
            yield from _flushed(lines)
            continue
        if fence is not None and fence not in _QUOTED_LANGUAGES:
            continue
        plain = re.sub(_EMPHASIS, "", re.sub(_TAG, "", line)).strip()
        if not plain or re.match(_HEADING, line) or re.match(_RULE, line) or plain.startswith("|"):
            yield from _flushed(lines)
            continue
        if re.match(_ITEM, plain):
            yield from _flushed(lines)
            plain = re.sub(_ITEM, "", plain)
        lines.append(plain)
    yield from _flushed(lines)


def _without_front_matter(lines: list[str]) -> list[str]:
    """``lines`` without the front matter that opens them (a ``---`` line, the matter, a closing ``---``)."""
    if not lines or lines[0].strip() != "---":
        return lines
    closing = next((n for n, line in enumerate(lines[1:], start=1) if line.strip() == "---"), None)
    return lines if closing is None else lines[closing + 1 :]


def _flushed(lines: list[str]) -> Iterator[str]:
    """The paragraph gathered in ``lines`` (emptied), when it holds any."""
    if lines:
        yield " ".join(" ".join(lines).split())
        lines.clear()


def purpose(text: str) -> Purpose:
    """What a user message asks for, by the module's rule."""
    command = slash_command(text)
    if command is not None:
        return _command_purpose(command)
    if templated(text):
        sentence = first_sentence(text)
        if sentence is not None:
            return Purpose(sentence, text.strip(), True)
    return Purpose(text, None, substantive(text))


def _command_purpose(command: SlashCommand) -> Purpose:
    whole = f"{command.name} {command.args}".strip() + (f"\n\n{command.body}" if command.body else "")
    kept = whole if command.body else None
    if command.args:
        return Purpose(f"{command.name} {command.args}", kept, True)
    sentence = first_sentence(command.body) if command.body else None
    if sentence is not None:
        return Purpose(f"{command.name}: {sentence}", kept, True)
    if command.message and command.message.strip("/").lower() != command.name.strip("/").lower():
        return Purpose(f"{command.name}: {command.message}", kept, True)
    return Purpose(command.name, kept, False)


def request(prompts: Sequence[tuple[str, int]], last: tuple[str | None, int | None]) -> Request | None:
    """The request a plan answers (the goal rule): the first user message that asks for something, else the
    last one; None when the user wrote nothing."""
    for text, line in prompts:
        asked = purpose(text)
        if asked.asks:
            return Request(asked.goal, line, asked.whole)
    said, where = last
    if not said or not said.strip():
        return None
    asked = purpose(said)
    return Request(asked.goal, where or 0, asked.whole)
