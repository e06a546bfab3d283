"""What torn bytes say, as far as they go: the records a crash cut short, read leniently.

A torn tail (or the quarantine file a repair moved it to) is a record's line cut short, or a group commit cut
short: whole lines of records that never counted, then perhaps a cut one. Such bytes are not a record and are
never read as one; but a person deciding what to do after the crash wants to know what the writer was writing
("was the worker's completion what was lost?"). :func:`read_fragment` says it: a whole line that decodes is
described from its JSON; a cut one by pulling the envelope's and the event's first members out of the bytes
(``"type":"…"``, ``"seq":N``, ``"step":"…"``, ``"attempt":N`` …), each only when its value is complete; bytes
that give nothing are "undecodable". Nothing here is trusted: it is a description for a person, never a
record, and every text from it is shown escaped like any other.
"""

from __future__ import annotations

import re
from typing import Any, Final, NamedTuple

import orjson

__all__ = ["TornRecord", "read_fragment"]

#: The most bytes of one line that are looked at (the members sought come first in a line).
_LOOKED_AT: Final = 64 * 1024
_STRING: Final = rb'"((?:[^"\\]|\\.){0,512})"'
_ENVELOPE: Final = {
    "seq": re.compile(rb'"seq":(\d{1,18})[,}]'),
    "type": re.compile(rb'"type":"([a-z_]{1,40}\.[a-z_]{1,40})"'),
    "plan_version": re.compile(rb'"plan_version":(\d{1,18})[,}]'),
    "ts": re.compile(rb'"ts":' + _STRING),
    "actor": re.compile(rb'"actor":' + _STRING),
}
_DATA: Final = re.compile(rb'"data":\{')
_MEMBERS: Final = {
    "step": re.compile(rb'"step":' + _STRING),
    "attempt": re.compile(rb'"attempt":(\d{1,18})[,}]'),
    "criterion": re.compile(rb'"criterion":' + _STRING),
    "verdict": re.compile(rb'"verdict":' + _STRING),
    "outcome": re.compile(rb'"outcome":' + _STRING),
    "new_version": re.compile(rb'"new_version":(\d{1,18})[,}]'),
    "part": re.compile(rb'"part":"(begin|end)"'),
}
_NUMBERS: Final = frozenset({"seq", "plan_version", "attempt", "new_version"})


class TornRecord(NamedTuple):
    """One record's worth of torn bytes: what they say, as far as they go (None: not in the bytes).

    ``whole`` is True for a line that ends with its newline (in a torn tail: a record of a group commit cut
    short, written whole but never counted), False for one cut short; ``length`` is the line's bytes; ``summary``
    says it in words.
    """

    whole: bool
    length: int
    seq: int | None = None
    type: str | None = None
    plan_version: int | None = None
    ts: str | None = None
    actor: str | None = None
    step: str | None = None
    attempt: int | None = None
    criterion: str | None = None
    verdict: str | None = None
    outcome: str | None = None
    new_version: int | None = None
    part: str | None = None

    @property
    def summary(self) -> str:
        """The record in words: ``seq 5 step.completed: step diagnose, attempt 1 (plan v1), cut short``."""
        if self.type is None and self.seq is None:
            return f"undecodable ({self.length} bytes)"
        head = " ".join(x for x in (None if self.seq is None else f"seq {self.seq}", self.type) if x)
        what = [
            f"{name} {value}"
            for name, value in (
                ("step", self.step),
                ("attempt", self.attempt),
                ("criterion", self.criterion),
                ("verdict", self.verdict),
                ("outcome", self.outcome),
                ("new version", self.new_version),
                ("part", self.part),
            )
            if value is not None
        ]
        version = "" if self.plan_version is None else f" (plan v{self.plan_version})"
        state = "a whole line" if self.whole else f"cut short after {self.length} bytes"
        return f"{head}{': ' + ', '.join(what) if what else ''}{version}, {state}"

    def as_dict(self) -> dict[str, Any]:
        """The description as JSON members (with ``summary``)."""
        return {**self._asdict(), "summary": self.summary}


def read_fragment(data: bytes) -> tuple[TornRecord, ...]:
    """What ``data`` (a torn tail's bytes, from the start of a line) says: one description per line; a
    zero-filled stretch (a power loss) or bytes that name nothing are described as undecodable."""
    found: list[TornRecord] = []
    lines = data.split(b"\n")
    last = lines.pop()
    found += [_line(line, whole=True) for line in lines]
    if last:
        found.append(_line(last, whole=False))
    return tuple(found)


def _line(line: bytes, *, whole: bool) -> TornRecord:
    text = line.strip(b"\0")
    if whole and len(text) <= _LOOKED_AT:
        try:
            value = orjson.loads(text)
        except orjson.JSONDecodeError:
            value = None
        if isinstance(value, dict):
            return _from_json(value, len(line))
    return _from_bytes(text[:_LOOKED_AT], len(line), whole=whole)


def _from_json(value: dict[str, Any], length: int) -> TornRecord:
    data = value.get("data")
    members = data if isinstance(data, dict) else {}
    fields: dict[str, Any] = {}
    for name in (*_ENVELOPE, *_MEMBERS):
        got = value.get(name) if name in _ENVELOPE else members.get(name)
        if isinstance(got, int) and not isinstance(got, bool) if name in _NUMBERS else isinstance(got, str):
            fields[name] = got
    return TornRecord(True, length, **fields)


def _from_bytes(text: bytes, length: int, *, whole: bool) -> TornRecord:
    fields: dict[str, Any] = {}
    data = _DATA.search(text)
    envelope, members = (text, b"") if data is None else (text[: data.start()], _scalars(text[data.end() :]))
    for table, where in ((_ENVELOPE, envelope), (_MEMBERS, members)):
        for name, pattern in table.items():
            match = pattern.search(where)
            if match is not None:
                fields[name] = int(match[1]) if name in _NUMBERS else _unescaped(match[1])
    return TornRecord(whole, length, **fields)


def _scalars(members: bytes) -> bytes:
    """The event's members up to its first nested array or object (outside a string): the members sought are
    the scalars an event begins with, and a nested value (a report, a plan) may hold members of the same name."""
    in_string = escaped = False
    for at, byte in enumerate(members):
        if escaped:
            escaped = False
        elif in_string:
            escaped = byte == 0x5C  # a backslash escapes the next byte
            in_string = byte != 0x22
        elif byte == 0x22:
            in_string = True
        elif byte in (0x5B, 0x7B):  # [ {
            return members[:at]
    return members


def _unescaped(raw: bytes) -> str:
    """A JSON string's text (its escapes read); the raw bytes as UTF-8 (replaced where invalid) otherwise."""
    try:
        value = orjson.loads(b'"' + raw + b'"')
    except orjson.JSONDecodeError:
        return raw.decode("utf-8", "replace")
    return value if isinstance(value, str) else raw.decode("utf-8", "replace")
