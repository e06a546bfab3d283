"""Helpers shared by the format parsers: typed field access, line streaming, skip accounting."""

from __future__ import annotations

import io
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from datetime import UTC, datetime, timedelta
from types import MappingProxyType
from typing import TYPE_CHECKING, BinaryIO, Final

import msgspec
import orjson

from plantrail.ledger.stores.files import open_capped
from plantrail.ledger.vocabulary.cut import cut
from plantrail.ledger.vocabulary.errors import StorageError
from plantrail.ledger.vocabulary.evidence import Usage
from plantrail.ledger.vocabulary.limits import TRANSCRIPT

from .errors import transcript_error
from .model import Observation, Status, TodoItem, Transcript

if TYPE_CHECKING:
    from pathlib import Path

JsonObject = Mapping[str, object]

CONTEXT_LIMIT = 500
#: How much of each user message a parser keeps for the goal rule (``mapping``): enough of a templated prompt
#: to find its first sentence of substance and to keep it, whole up to this size, in version 1's notes.
PROMPT_LIMIT = 4000
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


def clip(text: str, limit: int = CONTEXT_LIMIT) -> str:
    """`text` without surrounding whitespace, cut to `limit` characters with a trailing '…'."""
    return cut(text.strip(), limit)


def with_prompt(prompts: tuple[tuple[str, int], ...], text: str, line: int) -> tuple[tuple[str, int], ...]:
    """`prompts` with the user's message at `line` added (cut to PROMPT_LIMIT), while fewer than PROMPTS_KEPT
    are kept."""
    return prompts if len(prompts) >= PROMPTS_KEPT else (*prompts, (clip(text, PROMPT_LIMIT), line))


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
    """Counts a transcript's lines, the lines of the parser's own format, and skipped lines per reason.

    Its size does not grow with the transcript: a skipped line is counted under its reason, never kept. A
    line keeps the first reason it was skipped for: the skips of one line come one after another (the parser
    is at that line), so a skip of the line skipped last is not counted again. A parser that skips a line it
    has passed (a Gemini rewind) says so only for a line it did not skip before."""

    total: int = 0
    recognized: int = 0
    #: Skipped lines per reason.
    skipped: dict[str, int] = msgspec.field(default_factory=dict)
    #: The line skipped last (0: none yet).
    last: int = 0

    def skip(self, line: int, reason: str) -> None:
        """Count `line` as skipped under `reason`, unless it is the line skipped last."""
        if line == self.last:
            return
        self.last = line
        self.skipped[reason] = self.skipped.get(reason, 0) + 1

    @property
    def lines_skipped(self) -> int:
        """How many lines were skipped."""
        return sum(self.skipped.values())

    def reasons(self) -> Mapping[str, int]:
        """Skipped lines per reason, in reason order, read-only."""
        return MappingProxyType(dict(sorted(self.skipped.items())))

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
            lines_skipped=self.lines_skipped,
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


class TextLines:
    """The lines of a Markdown export, streamed: ``str.splitlines`` of the whole text, one line held at a time
    (bytes that are not UTF-8 are replaced, never fatal; the transcript cap applies). Iterating reads the file
    once; then :attr:`count` is its number of lines and :attr:`found` names the ``markers`` (each a test of
    one line of the file, as split at newlines) that some line passed, so a parser tells what the whole text
    holds without keeping it."""

    def __init__(self, path: Path, markers: Mapping[str, Callable[[str], bool]]) -> None:
        self.path = path
        self.markers = markers
        self.count = 0
        self.found: set[str] = set()

    def __iter__(self) -> Iterator[str]:
        with open_transcript(self.path) as handle:
            for raw in handle:
                text = raw.decode("utf-8", errors="replace")
                if len(self.found) < len(self.markers):
                    self.found.update(name for name, test in self.markers.items() if test(text))
                for line in text.splitlines():
                    self.count += 1
                    yield line


class Words:
    """A section's words, kept only as far as a prompt shows them (:func:`with_prompt`): the text of every line
    added is what :meth:`text` gives to :func:`clip` and :func:`with_prompt`, in memory that does not grow
    with the section (leading blank lines dropped, and once more than :data:`PROMPT_LIMIT` characters are
    kept, only whether more words follow)."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.size = 0
        self.more = False

    def add(self, line: str) -> None:
        """Add one line of the section."""
        if self.size > PROMPT_LIMIT + 1:
            self.more = self.more or bool(line.strip())
        elif self.lines:
            self.lines.append(line)
            self.size += 1 + len(line)
        elif line.strip():
            self.lines.append(line)
            self.size = len(line.lstrip())

    def text(self) -> str:
        """The section's words, as clip sees them: stripped, they begin as the whole section's do and are longer
        than a prompt shows exactly when the section's are."""
        return "\n".join(self.lines) + ("\n…" if self.more else "")


_CONTAINER: Final = re.compile(rb'["{}\[\]]')
_STRING_END: Final = re.compile(rb'["\\]')
_SCALAR_END: Final = re.compile(rb"[ \t\r\n,\]}]")
_BLANK: Final = b" \t\r\n"
_READ: Final = 1 << 16


class JsonStream:
    """A transcript that is one JSON document (an OpenCode export, a Cline history, a Gemini CLI chat session),
    read as a stream: the items of its message array one at a time, each parsed on its own, the document's
    other members (small: a session's id and header) kept in :attr:`members`. Memory holds one item, never the
    document. A file that is not one JSON value is NOT_A_TRANSCRIPT when the read reaches the fault, as when
    the whole document was parsed at once (only a repeated member holding the array is refused although the
    whole parse would take its last one)."""

    def __init__(self, path: Path, format_name: str, data: bytes | None = None) -> None:
        self.path = path
        self.format_name = format_name
        #: The document's bytes when they are in memory already (a line a sniff read), else None: the file.
        self.data = data
        #: ``object``, ``array`` or ``other`` (a scalar), once reading began.
        self.kind: str | None = None
        #: The top-level object's members but the streamed array, parsed.
        self.members: dict[str, object] = {}
        #: Whether the object's member named for :meth:`items` was an array (its items were given).
        self.array_seen = False
        self._handle: BinaryIO | None = None
        self._buf = b""
        self._pos = 0
        self._mark: int | None = None
        self._eof = False
        #: How many bytes each read asks for.
        self.read_size = _READ

    # ------------------------------------------------------------------ public

    def items(self, key: str | None = None, *, first_only: bool = False) -> Iterator[object]:
        """The items of the top-level array, or of the top-level object's member ``key`` (an array), each parsed
        on its own; with ``first_only`` only the first is parsed and given, the others passed over (a format's
        sniff). The whole file is read either way, and the object's other members kept in :attr:`members`."""
        with io.BytesIO(self.data) if self.data is not None else open_transcript(self.path) as self._handle:
            opening = self._skip_blank()
            if opening == b"{":
                yield from self._object(key, first_only)
            elif opening == b"[":
                self.kind = "array"
                yield from self._array(first_only)
            else:
                self.kind = "other"
                self._value(keep=False)
            if self._skip_blank() is not None:
                raise self._invalid()

    def shape(self) -> object:
        """A stand-in for the whole document that a format's ``is_document`` judges as it would the document: an
        object's members (its ``messages`` array as an empty list), or an array holding its first item; the
        file is read once, holding one value at a time."""
        first = list(self.items("messages", first_only=True))
        if self.kind == "object":
            return {**self.members, "messages": []} if self.array_seen else dict(self.members)
        return first if self.kind == "array" else None

    # ------------------------------------------------------------------ structure

    def _object(self, key: str | None, first_only: bool) -> Iterator[object]:
        self.kind = "object"
        self._pos += 1
        if self._skip_blank() == b"}":
            self._pos += 1
            return
        while True:
            name = self._load(self._value(keep=True))
            if not isinstance(name, str) or self._skip_blank() != b":":
                raise self._invalid()
            self._pos += 1
            if name == key and self._skip_blank() == b"[":
                if self.array_seen:
                    raise self._invalid()
                self.array_seen = True
                yield from self._array(first_only)
            else:
                self.members[name] = self._load(self._value(keep=True))
            found = self._skip_blank()
            self._pos += 1
            if found == b"}":
                return
            if found != b",":
                raise self._invalid()

    def _array(self, first_only: bool) -> Iterator[object]:
        """The array's items, parsed (after the first, passed over when ``first_only``)."""
        self._pos += 1
        if self._skip_blank() == b"]":
            self._pos += 1
            return
        index = 0
        while True:
            keep = not first_only or index == 0
            value = self._value(keep=keep)
            if keep:
                yield self._load(value)
            index += 1
            found = self._skip_blank()
            self._pos += 1
            if found == b"]":
                return
            if found != b",":
                raise self._invalid()

    # ------------------------------------------------------------------ bytes

    def _more(self) -> bool:
        """Read the next chunk, dropping what is consumed (all but a value being kept)."""
        if self._eof or self._handle is None:
            return False
        chunk = self._handle.read(self.read_size)
        if not chunk:
            self._eof = True
            return False
        keep = self._pos if self._mark is None else self._mark
        self._buf = self._buf[keep:] + chunk
        self._pos -= keep
        if self._mark is not None:
            self._mark = 0
        return True

    def _skip_blank(self) -> bytes | None:
        """The next byte that is not blank (not consumed); None at the end of the file."""
        while True:
            while self._pos < len(self._buf) and self._buf[self._pos] in _BLANK:
                self._pos += 1
            if self._pos < len(self._buf):
                return self._buf[self._pos : self._pos + 1]
            if not self._more():
                return None

    def _value(self, *, keep: bool) -> bytes | None:
        """The bytes of the next value (None when not ``keep``: only passed over)."""
        first = self._skip_blank()
        if first is None:
            raise self._invalid()
        self._mark = self._pos if keep else None
        if first in (b"{", b"["):
            self._container()
        elif first == b'"':
            self._pos += 1
            self._string()
        else:
            self._scalar()
        start, self._mark = self._mark, None
        return None if start is None else self._buf[start : self._pos]

    def _container(self) -> None:
        depth = 0
        while True:
            found = _CONTAINER.search(self._buf, self._pos)
            if found is None:
                self._pos = len(self._buf)
                if not self._more():
                    raise self._invalid()
                continue
            self._pos = found.end()
            byte = self._buf[found.start()]
            if byte == 0x22:  # "
                self._string()
            elif byte in (0x7B, 0x5B):  # { [
                depth += 1
            else:
                depth -= 1
                if depth == 0:
                    return

    def _string(self) -> None:
        """Pass the rest of a string whose opening quote is consumed."""
        while True:
            found = _STRING_END.search(self._buf, self._pos)
            if found is None or (self._buf[found.start()] == 0x5C and found.start() + 1 >= len(self._buf)):
                self._pos = len(self._buf) if found is None else found.start()
                if not self._more():
                    raise self._invalid()
                continue
            if self._buf[found.start()] == 0x5C:  # a backslash escapes the next byte
                self._pos = found.start() + 2
                continue
            self._pos = found.end()
            return

    def _scalar(self) -> None:
        while True:
            found = _SCALAR_END.search(self._buf, self._pos)
            if found is not None:
                self._pos = found.start()
                return
            self._pos = len(self._buf)
            if not self._more():
                return

    def _load(self, raw: bytes | None) -> object:
        try:
            return orjson.loads(raw or b"")
        except orjson.JSONDecodeError:
            raise self._invalid() from None

    def _invalid(self) -> Exception:
        return transcript_error("NOT_A_TRANSCRIPT", f"{self.path} is not a {self.format_name} JSON document")
