"""Helpers shared by the format parsers: typed field access, line streaming, skip accounting."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator, Mapping
from datetime import UTC, datetime, timedelta
from types import MappingProxyType
from typing import TYPE_CHECKING, BinaryIO

import msgspec
import orjson

from plantrail.ledger.stores.files import open_capped
from plantrail.ledger.vocabulary.errors import StorageError
from plantrail.ledger.vocabulary.evidence import Usage
from plantrail.ledger.vocabulary.limits import TRANSCRIPT

from .errors import transcript_error
from .model import Observation, Status, TodoItem, Transcript

if TYPE_CHECKING:
    from pathlib import Path

JsonObject = Mapping[str, object]

CONTEXT_LIMIT = 500
PROMPTS_KEPT = 16
STATUSES: frozenset[Status] = frozenset({"pending", "in_progress", "completed"})


def add_usage(total: Usage | None, more: Usage | None) -> Usage | None:
    """Two usages summed (either may be None: nothing spent)."""
    if more is None:
        return total
    if total is None:
        return more
    return Usage(
        total.turns + more.turns,
        total.tool_calls + more.tool_calls,
        total.tokens + more.tokens,
        total.cost_usd + more.cost_usd,
    )


def text_field(record: JsonObject | None, key: str) -> str | None:
    """The value at `key` when it is a string, else None."""
    value = record.get(key) if record is not None else None
    return value if isinstance(value, str) else None


def object_field(record: JsonObject | None, key: str) -> JsonObject | None:
    """The value at `key` when it is a JSON object, else None."""
    value = record.get(key) if record is not None else None
    return value if isinstance(value, dict) else None


def list_field(record: JsonObject | None, key: str) -> list[object] | None:
    """The value at `key` when it is a JSON array, else None."""
    value = record.get(key) if record is not None else None
    return value if isinstance(value, list) else None


def objects(values: list[object] | None) -> Iterator[JsonObject]:
    """The JSON objects in `values`, in order; anything else is passed over."""
    for value in values or ():
        if isinstance(value, dict):
            yield value


def clip(text: str) -> str:
    """`text` without surrounding whitespace, cut to CONTEXT_LIMIT characters with a trailing '…'."""
    text = text.strip()
    return text if len(text) <= CONTEXT_LIMIT else text[: CONTEXT_LIMIT - 1] + "…"


def with_prompt(prompts: tuple[tuple[str, int], ...], text: str, line: int) -> tuple[tuple[str, int], ...]:
    """`prompts` with the user's message at `line` added, while fewer than PROMPTS_KEPT are kept."""
    return prompts if len(prompts) >= PROMPTS_KEPT else (*prompts, (clip(text), line))


def iso_to_millis(stamp: str) -> int | None:
    """An ISO-8601 timestamp as Unix milliseconds; None when it is not one."""
    try:
        moment = datetime.fromisoformat(stamp.replace("Z", "+00:00"))
    except ValueError:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return int(moment.timestamp() * 1000)


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def iso_from_millis(millis: int) -> str | None:
    """A Unix time in milliseconds as an ISO-8601 UTC timestamp with milliseconds; None when it is outside
    the years 1 to 9999 (a transcript's number is untrusted: no value of it may crash the import)."""
    try:
        moment = _EPOCH + timedelta(milliseconds=millis)
    except OverflowError:
        return None
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def open_transcript(path: Path) -> BinaryIO:
    """A reader of a transcript that never blocks on open and delivers at most its cap (``TRANSCRIPT``):
    TRANSCRIPT_UNREADABLE for a path that is missing or not a regular file (a FIFO, a device), and
    INPUT_TOO_LARGE for a transcript over the cap."""
    try:
        return open_capped(str(path), TRANSCRIPT)
    except StorageError as exc:
        raise transcript_error("TRANSCRIPT_UNREADABLE", exc.message) from None


def status_of(value: object, allowed: frozenset[Status] = STATUSES) -> Status | None:
    """`value` as an item status when it is one of `allowed`, else None."""
    for status in allowed:
        if value == status:
            return status
    return None


def todo_items(values: object, allowed: frozenset[Status] = STATUSES) -> tuple[TodoItem, ...] | None:
    """`{content, status, id?, activeForm?, priority?}` objects as items; None if any is malformed."""
    if not isinstance(values, list):
        return None
    items: list[TodoItem] = []
    for value in values:
        item = _todo_item(value, allowed) if isinstance(value, dict) else None
        if item is None:
            return None
        items.append(item)
    return tuple(items)


def _todo_item(value: JsonObject, allowed: frozenset[Status]) -> TodoItem | None:
    text = text_field(value, "content")
    status = status_of(value.get("status"), allowed)
    if text is None or status is None:
        return None
    label = value.get("id")
    return TodoItem(
        text=text,
        status=status,
        position_label=None if label is None else str(label),
        active_form=text_field(value, "activeForm"),
        priority=text_field(value, "priority"),
    )


class Tally(msgspec.Struct):
    """Counts a transcript's lines, the lines of the parser's own format, and skipped lines."""

    total: int = 0
    recognized: int = 0
    skipped: dict[int, str] = msgspec.field(default_factory=dict)

    def skip(self, line: int, reason: str) -> None:
        """Count `line` as skipped; a line keeps the first reason it was skipped for."""
        self.skipped.setdefault(line, reason)

    def reasons(self) -> Mapping[str, int]:
        """Skipped lines per reason, in reason order, read-only."""
        return MappingProxyType(dict(sorted(Counter(self.skipped.values()).items())))

    def require(self, format_name: str, path: Path) -> None:
        """Refuse a file in which no line was a record of `format_name`."""
        if self.recognized == 0:
            raise transcript_error("NOT_A_TRANSCRIPT", f"{path} holds no {format_name} record")

    def transcript(
        self, format_name: str, path: Path, session_id: str | None, observations: Iterable[Observation]
    ) -> Transcript:
        """The parsed transcript with this tally's counts."""
        return Transcript(
            format=format_name,
            path=str(path),
            session_id=session_id,
            observations=tuple(observations),
            lines_total=self.total,
            lines_skipped=len(self.skipped),
            skipped_reasons=self.reasons(),
        )


def json_lines(path: Path, tally: Tally) -> Iterator[tuple[int, JsonObject]]:
    """Stream the JSON objects of a JSONL file with their 1-based line numbers.

    Blank lines, lines that are not JSON and JSON values that are not objects are skipped and
    counted in `tally`, never fatal.
    """
    with open_transcript(path) as handle:
        for number, raw in enumerate(handle, start=1):
            tally.total = number
            record = _decode_line(raw)
            if isinstance(record, str):
                tally.skip(number, record)
            else:
                yield number, record


def _decode_line(raw: bytes) -> JsonObject | str:
    if not raw.strip():
        return "blank_line"
    try:
        value = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return "invalid_json"
    return value if isinstance(value, dict) else "not_an_object"


def text_document(path: Path) -> str:
    """The whole file as text (a Markdown export); bytes that are not UTF-8 are replaced, never fatal. (Read
    as json_document reads its file: a transcript cap applies to both.)"""
    with open_transcript(path) as handle:
        return handle.read().decode("utf-8", errors="replace")


def json_document(path: Path, format_name: str) -> object:
    """The whole file as one JSON value; a file that is not JSON is not a transcript."""
    try:
        with open_transcript(path) as handle:
            return orjson.loads(handle.read())
    except orjson.JSONDecodeError as exc:
        raise transcript_error("NOT_A_TRANSCRIPT", f"{path} is not a {format_name} JSON document") from exc
