"""Bytes <-> records: the line framing, the hash chain and strict decoding.

A line is the compact JSON of one record with its hash member last and fixed-width::

    {"v":1,"seq":7,...,"data":{...},"prev":"<64 hex>","h":"<64 hex>"}\\n

``v`` is the lowest format version that holds the line (:mod:`ledger.vocabulary.versions`): v1 for everything the first
format's plan can say, v2 for a line that uses the plan contract. A v1 line reads as the v2 models with every added
field at its default (the upcaster), and the canonical form of a line includes its version: a v2 line
holding only v1 content, or a v1 line holding v2 content, is CORRUPT_LINE.

``h`` is the SHA-256 of the line without its ``,"h":"..."`` member, that is ``line[:-72] + b"}"``, so a
verifier in any language needs no canonical-JSON library; ``prev`` is the previous line's ``h`` (64 zeros
for the header), so the hashes form a chain. Decoding checks, in order: length, framing, hash, JSON and
schema (msgspec, held to the one pydantic ``TypeAdapter`` over the discriminated union that is the schema),
and canonical form (the record encodes back to the line's very bytes: no repeated, escaped or spaced key).
"""

from __future__ import annotations

import dataclasses
import hashlib
import math
import re
import threading
import typing
from collections.abc import Callable, Iterable
from functools import cache
from typing import TYPE_CHECKING, Annotated, Any, Final, Literal, Union

import msgspec
import orjson

from plantrail._version import __version__
from plantrail.ledger.vocabulary import events as ev
from plantrail.ledger.vocabulary.errors import LogDamaged, error
from plantrail.ledger.vocabulary.events import FORMAT_VERSION, FORMATS, V2_TYPES, Record, Source, Trace
from plantrail.ledger.vocabulary.plan import PlanSpec, validated_as
from plantrail.ledger.vocabulary.versions import V1, V2, added_defaults, needs_v2, never_v2, plain, v2_checker

if TYPE_CHECKING:
    from pydantic import TypeAdapter

__all__ = [
    "GENESIS_PREV",
    "MAX_LINE_BYTES",
    "decode",
    "encode",
    "encode_checked",
    "holds_record_end",
    "json_schema",
    "line_version",
    "log_format",
    "record_adapter",
]

#: Lines longer than this are refused on write and reported as CORRUPT_LINE on read.
MAX_LINE_BYTES: Final = 16 * 1024 * 1024
#: The ``prev`` of the header line.
GENESIS_PREV: Final = "0" * 64

_SUFFIX: Final = 72  # len(',"h":"') + 64 + len('"}')
_PREFIX: Final = b'{"v":%d,' % V1  # the hot path: v1 step events
_PREFIX_V2: Final = b'{"v":%d,' % V2
_HEX64 = re.compile(rb"[0-9a-f]{64}")
_RECORD_END = re.compile(rb',"h":"[0-9a-f]{64}"\}')

EVENT_CLASSES: Final[tuple[type[Any], ...]] = typing.get_args(ev.Event)
_EVENT_CLASSES_BY_TYPE: Final[dict[str, type[Any]]] = {cls.TYPE: cls for cls in EVENT_CLASSES}


def encode(
    *,
    seq: int,
    ts: str,
    run: str,
    plan_version: int,
    actor: str,
    data: ev.Event,
    prev: str,
    source: Source | None = None,
    key: str | None = None,
    trace: Trace | None = None,
) -> tuple[bytes, str]:
    """Encode one record as its line (newline included) and return it with its hash."""
    version = line_version(data, source=source, trace=trace)
    envelope = _envelope(version, seq, ts, run, plan_version, actor, data, prev, source, key, trace)
    try:
        raw = orjson.dumps(envelope, default=plain, option=orjson.OPT_PASSTHROUGH_DATACLASS)
    except orjson.JSONEncodeError as exc:
        raise error("INVALID_TEXT", f"the event cannot be encoded: {exc}", seq=seq) from None
    h = hashlib.sha256(raw).hexdigest()
    line = b'%s,"h":"%s"}\n' % (raw[:-1], h.encode())
    if len(line) > MAX_LINE_BYTES:
        raise error("EVENT_TOO_LARGE", f"the event is {len(line)} bytes; the limit is {MAX_LINE_BYTES}", seq=seq)
    return line, h


def line_version(
    data: ev.Event, *, held: bool | None = None, source: Source | None = None, trace: Trace | None = None
) -> int:
    """The format version of a line holding ``data`` (from ``source``, issued in ``trace``): the lowest that
    holds it.

    A header says the version the log was created in (its ``format``); any other event is v2 when its type
    or one of its values is something v1 cannot express, when its source carries ``meta``, or when it carries
    a trace context (both format v2), else v1. ``held``, when the caller knows it: whether ``data`` holds an
    added field away from its default (:func:`ledger.vocabulary.versions.needs_v2`).
    """
    if ((source is not None and source.meta) or trace is not None) and type(data) is not ev.LogOpened:
        return V2
    if type(data) is ev.LogOpened:
        return V2 if data.format == FORMATS[V2] else V1
    if type(data) is ev.RunFinished and isinstance(data.outcome, str) and data.outcome in _V2_OUTCOMES:
        return V2
    return V2 if data.TYPE in V2_TYPES or (needs_v2(data) if held is None else held) else V1


#: The outcomes format v2 added: a ``run.finished`` line recording one is a v2 line.
_V2_OUTCOMES: Final = frozenset({"partial", "budget_exhausted"})


def log_format(first: Iterable[ev.Event]) -> str:
    """The format a new log is created in, given the events written with its header: ``plantrail/2`` when one
    of them is a v2 event, else ``plantrail/1`` (docs/format-v2.md). Every store names it the same way."""
    return FORMATS[max((line_version(data) for data in first), default=V1)]


def _envelope(
    v: int,
    seq: int,
    ts: str,
    run: str,
    plan_version: int,
    actor: str,
    data: ev.Event,
    prev: str,
    source: Source | None,
    key: str | None,
    trace: Trace | None = None,
) -> dict[str, Any]:
    """A record without its ``h`` member, members in wire order: its compact JSON is what the hash covers.
    ``trace`` is written as an object of its ``traceparent`` and, when there is one, its ``tracestate``."""
    body: dict[str, Any] = {
        "v": v,
        "seq": seq,
        "ts": ts,
        "run": run,
        "type": data.TYPE,
        "plan_version": plan_version,
        "actor": actor,
    }
    if trace is not None:
        body["trace"] = (
            {"traceparent": trace.traceparent}
            if trace.tracestate is None
            else {"traceparent": trace.traceparent, "tracestate": trace.tracestate}
        )
    if source is not None:
        body["source"] = source
    if key is not None:
        body["key"] = key
    body["data"] = data
    body["prev"] = prev
    return body


def decode(line: bytes, line_no: int) -> Record:
    """Decode and check one line (without its newline); raise a LogDamaged error naming the line.

    The hot path of every replay, inlined: framing by slicing, one msgspec decode from the bytes, one
    SHA-256, and the canonical-form check of :func:`_canonical` (the record encodes back to the line's very
    bytes). Every other line takes :func:`_decode_in_full`, which checks the same things in the order damage
    is named.
    """
    size = len(line)
    if size > MAX_LINE_BYTES or size < _SUFFIX or not line.startswith(b',"h":"', size - 72) or not line.endswith(b'"}'):
        raise _framing_error(line, line_no)  # (-72: -_SUFFIX, without a lookup per line)
    if not line.startswith(_PREFIX):
        if not line.startswith(_PREFIX_V2):
            raise _framing_error(line, line_no)
        digest = _sha256(line[:-_SUFFIX] + b"}").hexdigest()
        return _decode_in_full(line, line_no, digest, _msgspec(line))
    try:
        record: Record | None = (_DECODE or _first_decoder(line))(line)
    except msgspec.MsgspecError:
        record = None
    body = line[:-72] + b"}"  # line[:-_SUFFIX]
    digest = _sha256(body).hexdigest()
    if record is not None and digest == record.h:
        data = record.data
        source = record.source
        hot = _HOT[type(data)]
        if hot is not None and source is None and record.key is None and record.trace is None:
            # The common line: a native event type, no source, key or trace (see _make_hot).
            if hot(record, data) == body:
                return record
        elif (
            not _OUTGROWS_V1[type(data)](data)
            and (source is None or not source.meta)
            and record.trace is None
            and _canonical(record, body, v2=False)
        ):
            return record
    return _decode_in_full(line, line_no, digest, record)


_LOWEST: Final = -(1 << 63)
_HIGHEST: Final = (1 << 64) - 1


def _fits(record: Record, kind: type[Any]) -> bool:
    """Whether every integer of a record msgspec encodes is one the writer (orjson: 64 bits) could write:
    msgspec encodes any integer, so without this a line no writer wrote would pass as canonical."""
    if not (
        _LOWEST <= record.seq <= _HIGHEST
        and _LOWEST <= record.v <= _HIGHEST
        and _LOWEST <= record.plan_version <= _HIGHEST
    ):
        return False
    data = record.data
    for name in _INT_FIELDS[kind]:
        value = getattr(data, name)
        if value is not None and not _LOWEST <= value <= _HIGHEST:
            return False
    source = record.source
    return source is None or source.line is None or _LOWEST <= source.line <= _HIGHEST


def _make_hot(kind: type[Any]) -> Callable[[Record, Any], bytes | None] | None:
    """For a native event type (None for any other), the hot path's canonical encoding of a record holding one
    with neither source nor key, generated as straight-line code: None unless its event does not outgrow v1
    (:func:`_outgrows_v1`) and its integers fit (:func:`_fits`), else the envelope encoded by msgspec, which
    writes it as the writer does (the envelope a struct, :class:`_Plain`, a third cheaper to encode than a
    dict). ``v`` and ``type`` are written as the literals 1 and the type's name: the caller compares the
    bytes with a v1 line's body of that type, and a record whose ``v`` or ``type`` is other than the body's
    first member says came from a line with a repeated member, which encodes to other bytes anyway. The loop
    of :func:`_fits` over field names and the calls this saves cost about a tenth of a replay."""
    if not _NATIVE[kind]:
        return None
    outgrows = _OUTGROWS_V1[kind]
    terms = [] if outgrows is never_v2 else ["not _outgrows(d)"]
    terms += ["_LO <= r.seq <= _HI", "_LO <= r.plan_version <= _HI"]
    types = {f.name: f.type for f in msgspec.structs.fields(kind)}
    for name in _INT_FIELDS[kind]:
        if types[name] is int:
            terms.append(f"_LO <= d.{name} <= _HI")
        else:
            terms.append(f"(d.{name} is None or _LO <= d.{name} <= _HI)")
    body = [
        "def hot(r, d):",
        f"    if {' and '.join(terms)}:",
        f"        return _E(_P({V1}, r.seq, r.ts, r.run, {kind.TYPE!r}, r.plan_version, r.actor, d, r.prev))",
        "    return None",
    ]
    namespace: dict[str, Any] = {"_outgrows": outgrows, "_LO": _LOWEST, "_HI": _HIGHEST, "_E": _ENCODE, "_P": _Plain}
    exec("\n".join(body), namespace)  # generated from field names
    return typing.cast(Callable[[Record, Any], bytes | None], namespace["hot"])


def _str_tuple(value: Any) -> bool:
    """Whether ``value`` is a tuple of strings, each exactly a ``str``."""
    if type(value) is not tuple:
        return False
    for item in value:  # noqa: SIM110 - the loop costs half of all() over a generator
        if type(item) is not str:
            return False
    return True


def _type_term(value: str, tp: Any, names: dict[str, Any]) -> str | None:
    """A boolean expression saying that ``value`` holds exactly a value of type ``tp`` that msgspec decodes
    back to an equal value of the same type and encodes to the same bytes (None: a type this does not know)."""
    if tp is str:
        return f"type({value}) is str"
    if tp is int:
        return f"(type({value}) is int and _LO <= {value} <= _HI)"
    if tp is float:
        return f"(type({value}) is float and _finite({value}))"
    if tp is bool:
        return f"type({value}) is bool"
    if tp == tuple[str, ...]:
        return f"_str_tuple({value})"
    if typing.get_origin(tp) is Literal and all(type(arg) is str for arg in typing.get_args(tp)):
        name = f"_L{len(names)}"
        names[name] = frozenset(typing.get_args(tp))
        return f"(type({value}) is str and {value} in {name})"
    return None


def _default_term(value: str, default: Any) -> str | None:
    """A boolean expression saying that ``value`` is exactly a field's default (left out of a v1 line)."""
    if default is None or default is False:
        return f"{value} is {default!r}"
    if default == () and type(default) is tuple:
        return f"(type({value}) is tuple and not {value})"
    return None


def _make_typed(kind: type[Any]) -> Callable[..., bool] | None:
    """For a native event type, a check that a record the writer is about to write holds exactly the types
    its fields and envelope say, generated as one boolean expression: ``typed(seq, ts, run, plan_version,
    actor, prev, data)``. Exact types (``type(x) is str``, an ``int`` within 64 bits, a finite ``float``, a
    tuple of ``str``, a string of a ``Literal``, a field format v2 added at exactly its default) are what
    msgspec decodes a line into: a line encoded from such values decodes back to equal values of the same
    types, so :func:`encode_checked` need not decode it to know the reader accepts it. None for a type with a
    field of any other type (its lines are decoded to be checked)."""
    if not _NATIVE[kind] or not (isinstance(kind, type) and issubclass(kind, msgspec.Struct)):
        return None
    hints = _field_hints(kind)
    added = dict(added_defaults(kind))
    names: dict[str, Any] = {"_LO": _LOWEST, "_HI": _HIGHEST, "_finite": math.isfinite, "_str_tuple": _str_tuple}
    actors = typing.get_type_hints(Record)["actor"]
    envelope = {"seq": int, "ts": str, "run": str, "plan_version": int, "actor": actors, "prev": str}
    terms: list[str] = []
    for value, tp in [*envelope.items(), *((f"d.{name}", tp) for name, tp in hints.items())]:
        name = value.removeprefix("d.")
        term = _default_term(value, added[name]) if value != name and name in added else _type_term(value, tp, names)
        if term is None:
            return None
        terms.append(term)
    body = ["def typed(seq, ts, run, plan_version, actor, prev, d):", f"    return {' and '.join(terms)}"]
    exec("\n".join(body), names)  # generated from field names and types
    return typing.cast(Callable[..., bool], names["typed"])


def _decode_in_full(line: bytes, line_no: int, digest: str, record: Record | None) -> Record:
    """A framed line's record checked in order: hash, then schema, then canonical form."""
    if digest.encode() != line[-66:-2]:
        raise _hash_error(line, line_no)
    return _record(line, line_no, record)


def _record(line: bytes, line_no: int, record: Record | None) -> Record:
    """The record a framed line holds, checked against the schema and for canonical form, given what msgspec
    made of it (None: refused). msgspec's record stands when it is exactly the line's content (then pydantic
    would give the same record); any other line gets pydantic's verdict, and must then be the canonical
    encoding of pydantic's record."""
    body = line[:-_SUFFIX] + b"}"
    held = record is not None and needs_v2(record.data)
    if record is None or not _canonical(record, body, v2=held):
        record = _checked(line, line_no)
        held = needs_v2(record.data)
        if not _canonical(record, body, v2=held):
            raise _not_canonical(line_no)
    _check_version(record, line_no, held)
    return record


def _check_version(record: Record, line_no: int, held: bool | None = None) -> None:
    """Refuse a line whose ``v`` is not the lowest format version that holds its record (``held``: whether
    the record holds an added field away from its default)."""
    version = line_version(record.data, held=held, source=record.source, trace=record.trace)
    if record.v != version:
        raise error(
            "CORRUPT_LINE",
            f"line {line_no} says format v{record.v} but holds a v{version} record (a line carries the lowest "
            "version that holds it)",
            line=line_no,
            expected=version,
            actual=record.v,
        )


def _not_canonical(line_no: int) -> Exception:
    return error(
        "CORRUPT_LINE",
        f"line {line_no} is not in canonical form (a repeated, escaped or spaced key, or a value spelled "
        "otherwise than the writer spells it)",
        line=line_no,
    )


def _canonical(record: Record, body: bytes, *, v2: bool | None = None) -> bool:
    """Whether ``body`` (a line without its ``h`` member) is exactly the canonical encoding of ``record``.

    This is the whole canonical-form check. A line with a repeated key (one hidden as ``"k" :``), an escaped
    key (``"s\\u0065q"``), a gap between tokens or a value spelled another way encodes back to other bytes;
    so does one with an unknown member msgspec skipped, or a default it filled in. msgspec's encoder writes
    the same bytes as orjson (the writer's) for the values a writer writes; a value no writer could have
    written (an integer beyond 64 bits, which msgspec would encode) takes the writer's way, does not encode
    at all, and is not canonical either.
    """
    try:
        return _as_written(record, v2=v2) == body
    except (msgspec.EncodeError, OverflowError, TypeError, ValueError):
        return False


_sha256 = hashlib.sha256


def encode_checked(
    *,
    seq: int,
    ts: str,
    run: str,
    plan_version: int,
    actor: str,
    data: ev.Event,
    prev: str,
    source: Source | None = None,
    key: str | None = None,
    trace: Trace | None = None,
) -> tuple[bytes, Record]:
    """The writer's one call per record: its line (newline included) and the record exactly as a reader will
    decode it, the line checked against the schema and for canonical form as :func:`check_schema` checks it.

    The common line (a native event type holding nothing format v2 added, no source or key) is encoded once,
    by msgspec as the reader's canonical-form check encodes it (:func:`_make_hot`), and hashed once. When every
    value of the record is of exactly its field's type (:func:`_make_typed`: the writer built it from checked
    values, as the rules do), it stands as it is: decoding that line gives back those very values and encodes
    them to the same bytes, so the line is one the reader accepts, without decoding it again. Otherwise the
    line is decoded once by its type's own decoder and stands when the decoded event equals the one given and
    encodes back to the same bytes, which are then the bytes orjson writes for it (a value of another type than
    its field's decodes to another value, or not at all). Any other record, and a common one that fails those
    checks, is encoded and checked as :func:`encode` and :func:`check_schema` do, with their errors."""
    kind = type(data)
    hot = _HOT[kind] if source is None and key is None and trace is None else None
    if hot is not None and not _OUTGROWS_V1[kind](data):
        try:
            body = _ENCODE(_Plain(V1, seq, ts, run, kind.TYPE, plan_version, actor, data, prev))
        except (msgspec.EncodeError, OverflowError, TypeError, ValueError):
            body = None
        if body is not None:
            h = _sha256(body).hexdigest()
            line = b'%s,"h":"%s"}\n' % (body[:-1], h.encode())
            if len(line) <= MAX_LINE_BYTES:
                typed = _TYPED[kind]
                if typed is not None and typed(seq, ts, run, plan_version, actor, prev, data):
                    record_class = _RECORD_CLASSES[kind.TYPE]
                    # typed() checked that actor is one of Actor's names
                    return line, record_class(
                        v=V1,
                        seq=seq,
                        ts=ts,
                        run=run,
                        plan_version=plan_version,
                        actor=actor,  # type: ignore[arg-type]
                        data=data,
                        prev=prev,
                        h=h,
                    )
                try:
                    record = _ONE_TYPE_ONLY[kind.TYPE](line[:-1])
                except msgspec.MsgspecError:
                    record = None
                if record is not None and record.data == data and hot(record, record.data) == body:
                    return line, record
    line, _ = encode(
        seq=seq,
        ts=ts,
        run=run,
        plan_version=plan_version,
        actor=actor,
        data=data,
        prev=prev,
        source=source,
        key=key,
        trace=trace,
    )
    record = check_schema(line[:-1], line_no=seq + 1)
    plan = getattr(data, "plan", None)
    if isinstance(plan, PlanSpec):  # the plan the rules validated: the fold adopting the decoded one need not
        validated_as(getattr(record.data, "plan", None), plan)
    return line, record


def check_schema(line: bytes, *, line_no: int) -> Record:
    """Validate a line about to be written against the schema and return its record: a value of the wrong type
    handed to the library is a usage error (nothing is written), never a log every later read would refuse."""
    try:
        return _record(line, line_no, _msgspec(line))
    except LogDamaged as exc:
        raise error(
            "USAGE",
            f"the event does not fit the log's schema: {exc}".replace(f"line {line_no}: ", ""),
            seq=line_no - 1,
        ) from None


def _hash_error(line: bytes, line_no: int) -> Exception:
    if _HEX64.fullmatch(line, len(line) - 66, len(line) - 2) is None:
        return error("CORRUPT_LINE", f"line {line_no} is not a plantrail record (bad hash member)", line=line_no)
    return error("HASH_MISMATCH", f"line {line_no}: the content does not match its hash", line=line_no)


def holds_record_end(data: bytes) -> bool:
    """True when ``data`` holds a complete record ending (``,"h":"<64 hex>"}``), whatever its hash says.

    Recovery asks this of damaged bytes: a crash leaves a prefix of a write or zeros, never the end of a
    whole record after the damage, so bytes that hold one are corruption, not a torn tail.
    """
    return _RECORD_END.search(data) is not None


def _framing_error(line: bytes, line_no: int) -> Exception:
    """Tell an over-long line, a newer format and plain damage apart for a line that does not frame as v1."""
    if len(line) > MAX_LINE_BYTES:
        return error("CORRUPT_LINE", f"line {line_no} is {len(line)} bytes, over the limit", line=line_no)
    try:
        value = orjson.loads(line)
    except orjson.JSONDecodeError as exc:
        return error("CORRUPT_LINE", f"line {line_no} is not JSON: {exc}", line=line_no)
    if isinstance(value, dict):
        version = value.get("v")
        if isinstance(version, int) and not isinstance(version, bool) and version > FORMAT_VERSION:
            return _too_new(line_no, f"format v{version} (this plantrail reads up to v{FORMAT_VERSION})")
    return error("CORRUPT_LINE", f"line {line_no} is not a plantrail record (bad framing)", line=line_no)


def _schema_error(exc: ValueError, line_no: int, line: bytes) -> Exception:
    """The error a line whose hash holds but whose content the schema refuses gets: FORMAT_TOO_NEW when all the
    schema misses are names it does not know (an event type, a member) and the line is written as a writer
    writes (compact JSON, no repeated or escaped key), which is what a newer writer's line is; CORRUPT_LINE for
    anything else (a wrong type, a missing member, bytes no writer writes)."""
    from pydantic import ValidationError

    if not isinstance(exc, ValidationError):
        return error("CORRUPT_LINE", f"line {line_no}: {exc}", line=line_no)
    problems = exc.errors(include_url=False)
    unknown = [_unknown_name(problem) for problem in problems]
    if all(name is not None for name in unknown) and _as_a_writer_writes(line):
        return _too_new(line_no, ", ".join(dict.fromkeys(name for name in unknown if name is not None)))
    first = problems[0]
    where = ".".join(str(p) for p in first["loc"]) or "line"
    return error("CORRUPT_LINE", f"line {line_no}: {where}: {first['msg']}", line=line_no, field=where)


def _unknown_name(problem: Any) -> str | None:
    """What a schema miss names when it is a name this plantrail does not know (None for any other miss)."""
    if problem["type"] == "union_tag_invalid":
        return f"the event type {problem.get('ctx', {}).get('tag', '?')!r}"
    if problem["type"] in ("extra_forbidden", "unexpected_keyword_argument"):
        loc = problem["loc"]
        where = ".".join(str(p) for p in (loc[1:] if len(loc) > 1 and loc[0] in _EVENT_CLASSES_BY_TYPE else loc))
        return f"the member {where!r}"
    return None


def _as_a_writer_writes(line: bytes) -> bool:
    """Whether a framed line's body is compact JSON as the writer spells it (orjson's own encoding of what it
    decodes to: no gap, no repeated or escaped key, no number spelled otherwise), whatever its members are."""
    body = line[:-_SUFFIX] + b"}"
    try:
        return orjson.dumps(orjson.loads(body)) == body
    except (orjson.JSONDecodeError, orjson.JSONEncodeError):
        return False


def _too_new(line_no: int, what: str) -> Exception:
    """FORMAT_TOO_NEW for a line holding ``what``: a line a newer plantrail wrote, not damage."""
    return error(
        "FORMAT_TOO_NEW",
        f"line {line_no} holds {what}, which plantrail {__version__} does not know: a newer plantrail wrote it; "
        f"read this log with that plantrail or a later one (pip install -U plantrail)",
        line=line_no,
        reader=__version__,
        needs=f"newer than {__version__}",
    )


# --------------------------------------------------------------------------- the union
#
# Two decoders of one schema. pydantic's discriminated union is the schema: it gives the JSON Schema and
# every error message. msgspec decodes a tagged union of Record subclasses, one per event type, about four
# times faster on the step events that make most of a log, so it decodes every line first; whatever it
# refuses goes to pydantic, whose verdict stands (an error, or rarely a record msgspec was too strict for).
# msgspec may never accept what pydantic refuses: tests/vocabulary/test_codec_fast.py holds it to that on mutated
# lines. One gap is closed by the canonical-form check: msgspec skips an unknown member of a dataclass (the
# plan events), so its record stands only when it is exactly the line's content (_canonical).

#: The envelope's members in wire order (``h`` last; ``trace``, ``source`` and ``key`` only when set).
WIRE_ORDER: Final = (
    "v",
    "seq",
    "ts",
    "run",
    "type",
    "plan_version",
    "actor",
    "trace",
    "source",
    "key",
    "data",
    "prev",
    "h",
)
#: The envelope's optional members (left out of a line when not set).
_OPTIONAL: Final = ("trace", "source", "key")

_DECODE: Callable[[bytes], Record] | None = None


def _msgspec(line: bytes) -> Record | None:
    """The record msgspec decodes from ``line``, or None when it refuses it (pydantic then judges)."""
    try:
        return (_DECODE or _first_decoder(line))(line)
    except msgspec.MsgspecError:
        return None


def _as_written(record: Record, *, v2: bool | None = None) -> bytes:
    """The compact JSON of a decoded record without ``h``: the line's own bytes when it was canonical.

    The writer's way (orjson, :func:`ledger.vocabulary.versions.plain`) for a value that may leave something out:
    anything holding a field format v2 added away from its default (``v2``: whether ``record.data`` does, when
    the caller knows), and any class of :data:`_PLAIN_V1`'s complement whose msgspec bytes differ from the
    writer's. Everything else is encoded by msgspec, which writes the same bytes as orjson and encodes
    dataclasses 3x faster; the common envelope (no source, no key) is a struct (:class:`_Plain`), a third
    cheaper to encode than a dict: this runs for every line of every replay.
    """
    data = record.data
    if _NATIVE[type(data)] and not (needs_v2(data) if v2 is None else v2) and _fits(record, type(data)):
        if record.source is None and record.key is None and record.trace is None:
            return _ENCODE(
                _Plain(
                    record.v,
                    record.seq,
                    record.ts,
                    record.run,
                    record.type,
                    record.plan_version,
                    record.actor,
                    data,
                    record.prev,
                )
            )
        source = record.source
        if _NATIVE[_source_v1()] and (source is None or not source.meta):
            envelope = _record_envelope(record)
            if source is not None:  # its v1 fields only: msgspec would write ``meta`` at its default too
                v1 = _source_v1()
                envelope["source"] = v1(*[getattr(source, name) for name in v1.__struct_fields__])
            return _ENCODE(envelope)
    return orjson.dumps(_record_envelope(record), default=plain, option=orjson.OPT_PASSTHROUGH_DATACLASS)


def _record_envelope(record: Record) -> dict[str, Any]:
    """A decoded record's envelope, members in wire order, without ``h`` (see :func:`_envelope`)."""
    return _envelope(
        record.v,
        record.seq,
        record.ts,
        record.run,
        record.plan_version,
        record.actor,
        record.data,
        record.prev,
        record.source,
        record.key,
        record.trace,
    )


_ENCODE: Final = msgspec.json.Encoder().encode


def _encodes_natively(tp: Any, seen: frozenset[Any] = frozenset()) -> bool:
    """Whether msgspec writes every value of type ``tp`` whose added fields are at their defaults with the bytes
    the writer gives it: a dataclass that gained fields in v2 writes them (the writer leaves them out), a struct
    leaves out exactly its fields with defaults when it omits defaults (so those must be its added fields),
    and everything a field can hold must encode natively too."""
    if tp in seen:
        return True
    seen = seen | {tp}
    if dataclasses.is_dataclass(tp) and isinstance(tp, type):
        if added_defaults(tp):
            return False
        return all(_encodes_natively(hint, seen) for hint in _field_hints(tp).values())
    if isinstance(tp, type) and issubclass(tp, msgspec.Struct):
        added = {name for name, _ in added_defaults(tp)}
        defaulted = set(tp.__struct_fields__[len(tp.__struct_fields__) - len(tp.__struct_defaults__) :])
        if added != (defaulted if tp.__struct_config__.omit_defaults else set()):
            return False
        return all(_encodes_natively(hint, seen) for name, hint in _field_hints(tp).items() if name not in added)
    return all(_encodes_natively(arg, seen) for arg in typing.get_args(tp))


_V = typing.TypeVar("_V")
_K = typing.TypeVar("_K")


class _OnDemand(dict[_K, _V]):
    """A table whose entry for a key is made the first time it is asked for: a process that reads or writes
    a few records (one append) pays for the event types it meets, not for all of them."""

    def __init__(self, make: Callable[[_K], _V]) -> None:
        super().__init__()
        self._make = make

    def __missing__(self, key: _K) -> _V:
        with _MAKING:  # one entry per key even when threads ask at once (a record class is made once)
            if key in self:
                return self[key]
            value = self[key] = self._make(key)
            return value


#: Held while an :class:`_OnDemand` entry is made (re-entrant: making one entry may ask for another).
_MAKING: Final = threading.RLock()


def _int_fields(cls: type[Any]) -> tuple[str, ...]:
    """A native class's integer fields (:func:`_fits` checks they hold what the writer could write)."""
    if not _NATIVE[cls]:
        return ()
    return tuple(f.name for f in msgspec.structs.fields(cls) if f.type is int or f.type == (int | None))


def _outgrows_v1(cls: type[Any]) -> Callable[[Any], bool]:
    """For an event type, whether a value of it cannot be a v1 line's (the hot path's form of
    :func:`line_version`: an added field away from its default, a v2 event type, a v2 header)."""
    if cls is ev.LogOpened:
        return _v2_header
    if cls is ev.RunFinished:
        return _v2_finish
    if cls.TYPE in V2_TYPES:
        return _always
    return v2_checker(cls)


#: Whether msgspec encodes a value of a class (an event type, or :class:`Source`) with the writer's bytes when
#: nothing format v2 added is away from its default (found from the field types on first use).
_NATIVE: Final[_OnDemand[type[Any], bool]] = _OnDemand(_encodes_natively)
#: Each native class's integer fields.
_INT_FIELDS: Final[_OnDemand[type[Any], tuple[str, ...]]] = _OnDemand(_int_fields)
#: For each event type, whether a value of it cannot be a v1 line's.
_OUTGROWS_V1: Final[_OnDemand[type[Any], Callable[[Any], bool]]] = _OnDemand(_outgrows_v1)
#: For each event type, the hot path's check of its records (:func:`_make_hot`; None: not native).
_HOT: Final[_OnDemand[type[Any], Callable[[Record, Any], bytes | None] | None]] = _OnDemand(_make_hot)
#: For each event type, the writer's check that a record holds exactly its fields' types (:func:`_make_typed`).
_TYPED: Final[_OnDemand[type[Any], Callable[..., bool] | None]] = _OnDemand(_make_typed)


def _v2_header(data: ev.LogOpened) -> bool:
    return data.format != FORMATS[V1]


def _v2_finish(data: ev.RunFinished) -> bool:
    return line_version(data) != V1


def _always(data: Any) -> bool:
    return True


def _make_source_v1(source: type[Any]) -> type[msgspec.Struct]:
    """A struct of :class:`Source`'s fields without those format v2 added (``meta``), in order: what msgspec
    encodes a source without them as, with the bytes the writer gives it."""
    added = {name for name, _ in added_defaults(source)}
    hints = _field_hints(source)
    fields = [
        (f.name, hints[f.name], f.default) if f.default is not dataclasses.MISSING else (f.name, hints[f.name])
        for f in dataclasses.fields(source)
        if f.name not in added
    ]
    return msgspec.defstruct("_SourceV1", fields, module=__name__, gc=False)


#: :func:`_make_source_v1`'s struct, made on first use (by :class:`Source`).
_SOURCE_V1: Final[_OnDemand[type[Any], type[msgspec.Struct]]] = _OnDemand(_make_source_v1)


def _source_v1() -> type[msgspec.Struct]:
    """:class:`Source` without its format v2 fields, as a struct (made once)."""
    return _SOURCE_V1[Source]


class _Plain(msgspec.Struct, gc=False):
    """The envelope of a record without ``source`` or ``key``, members in wire order, ``h`` left out."""

    v: int
    seq: int
    ts: str
    run: str
    type: str
    plan_version: int
    actor: str
    data: Any
    prev: str


def _checked(line: bytes, line_no: int) -> Record:
    """pydantic's verdict on a line msgspec refused or did not decode exactly: its LogDamaged error, or the
    record it accepts."""
    from pydantic import ValidationError

    try:
        wire = record_adapter().validate_json(line)
    except ValidationError as exc:
        raise _schema_error(exc, line_no, line) from None
    except ValueError as exc:
        raise error("CORRUPT_LINE", f"line {line_no}: {exc}", line=line_no) from None
    record_class = _RECORD_CLASSES[wire.type]
    fields = {name: getattr(wire, name) for name in record_class.__struct_fields__}
    fields["data"] = _from_view(wire.data, _EVENT_CLASSES_BY_TYPE[wire.type])
    return record_class(**fields)


def _fast_decoder() -> Callable[[bytes], Record]:
    """msgspec's decoder of the tagged union of every record type (built on first use)."""
    global _DECODE
    if _DECODE is None:
        union: Any = Union[tuple(_RECORD_CLASSES[cls.TYPE] for cls in EVENT_CLASSES)]  # noqa: UP007 - runtime
        _DECODE = msgspec.json.Decoder(union).decode
    return _DECODE


#: How many lines a process decodes with one-type decoders before it builds the union's, which resolves every
#: event type's fields (about 10 ms): a one-type decode costs about 0.75 µs more a line (the type looked up in
#: the line), so a process reading fewer lines than this (an append, a version rebuilt from the index, a read
#: covered by its snapshot) never pays for the union, and one reading more pays at most ~1.5 ms for the wait.
FEW_LINES: Final = 2048
_few_left = [FEW_LINES]
_TYPE_MEMBER: Final = b',"type":"'


def _first_decoder(line: bytes) -> Callable[[bytes], Record]:
    """The decoder for one of a process's first :data:`FEW_LINES` lines: the one of the event type the line
    names (its first ``,"type":"`` member, which no JSON string can hold unescaped), so that a process which
    decodes a few lines never builds the union's; the union's for a line naming no known type, and for
    every line after those. The decoders agree: on a line whose type is X the union decodes into X's record
    class, the very class the one-type decoder has, and checks the same members; a line that X's decoder
    refuses (its top-level ``type`` another, or a member of the wrong type) is judged by the union's."""
    if _few_left[0] <= 0:
        return _fast_decoder()
    _few_left[0] -= 1
    at = line.find(_TYPE_MEMBER)
    end = line.find(b'"', at + len(_TYPE_MEMBER)) if at >= 0 else -1
    name = line[at + len(_TYPE_MEMBER) : end].decode("ascii", "replace") if end >= 0 else ""
    if name not in _EVENT_CLASSES_BY_TYPE:
        return _fast_decoder()
    return _ONE_TYPE[name]


def _one_type(name: str) -> Callable[[bytes], Record]:
    """msgspec's decoder of one event type's records; on a line it refuses, the union's verdict."""
    decode: Callable[[bytes], Record] = msgspec.json.Decoder(_RECORD_CLASSES[name]).decode

    def one_or_union(line: bytes) -> Record:
        try:
            return decode(line)
        except msgspec.MsgspecError:
            return _fast_decoder()(line)

    return one_or_union


def _record_class(event_cls: type[Any]) -> type[Record]:
    """The Record subclass of one event type: tagged with its type name, ``data`` of its class."""
    name = event_cls.__name__ + "Record"
    cls = msgspec.defstruct(
        name,
        [("data", event_cls)],
        bases=(Record,),
        module=__name__,
        namespace={"type": event_cls.TYPE},  # a plain class attribute: read for every record of a replay
        tag=event_cls.TYPE,
        forbid_unknown_fields=True,
    )
    globals()[name] = cls  # so records pickle (multiprocessing, caches) like any module-level class
    return typing.cast(type[Record], cls)


#: Each event type's Record subclass, by type name (made on first use).
_RECORD_CLASSES: Final[_OnDemand[str, type[Record]]] = _OnDemand(
    lambda name: _record_class(_EVENT_CLASSES_BY_TYPE[name])
)
#: Each event type's one-type decoder, by type name (see :func:`_first_decoder`).
_ONE_TYPE: Final[_OnDemand[str, Callable[[bytes], Record]]] = _OnDemand(_one_type)
#: Each event type's msgspec decoder alone, by type name (the writer's check: a line it refuses is encoded and
#: checked again the full way).
_ONE_TYPE_ONLY: Final[_OnDemand[str, Callable[[bytes], Record]]] = _OnDemand(
    lambda name: msgspec.json.Decoder(_RECORD_CLASSES[name]).decode
)


@cache
def record_adapter() -> TypeAdapter[Any]:
    """The one pydantic adapter that validates any record from bytes: the schema (built on first use)."""
    from pydantic import Field, TypeAdapter

    wire = tuple(_wire_class(cls) for cls in EVENT_CLASSES)
    union: Any = Annotated[Union[wire], Field(discriminator="type")]  # noqa: UP007 - a runtime tuple of types
    return TypeAdapter(union)


def _wire_class(event_cls: type[Any]) -> type[Any]:
    """pydantic's view of one record type: a frozen dataclass with ``type`` pinned to one event type."""
    hints = typing.get_type_hints(Record) | {"type": Literal[event_cls.TYPE], "data": _pydantic_view(event_cls)}
    fields: list[Any] = [(f, hints[f]) for f in WIRE_ORDER if f not in _OPTIONAL]
    fields += [(f, hints[f], dataclasses.field(default=None)) for f in _OPTIONAL]
    cls = dataclasses.make_dataclass(event_cls.__name__ + "Record", fields, frozen=True, slots=True, kw_only=True)
    cls.__pydantic_config__ = {"extra": "forbid", "strict": True}  # type: ignore[attr-defined]
    return cls


def _pydantic_view(event_cls: type[Any]) -> type[Any]:
    """The type pydantic validates an event as: the event's own dataclass, or a struct's dataclass twin (same
    name, fields and strictness, so the JSON Schema and every error message read as before)."""
    if not issubclass(event_cls, msgspec.Struct):
        return event_cls
    defaults = dict(added_defaults(event_cls))
    fields: list[Any] = [
        (name, hint, dataclasses.field(default=defaults[name])) if name in defaults else (name, hint)
        for name, hint in _field_hints(event_cls).items()
    ]
    twin = dataclasses.make_dataclass(event_cls.__name__, fields, frozen=True, slots=True)
    twin.__pydantic_config__ = {"extra": "forbid", "strict": True}  # type: ignore[attr-defined]
    twin.__doc__ = event_cls.__doc__
    return twin


def _from_view(value: Any, event_cls: type[Any]) -> Any:
    """The event that ``value``, pydantic's view of it, stands for."""
    if type(value) is event_cls:
        return value
    return event_cls(**{name: getattr(value, name) for name in event_cls.__struct_fields__})


def json_schema() -> dict[str, Any]:
    """The JSON Schema of one log line."""
    schema = record_adapter().json_schema()
    schema["title"] = f"plantrail log record (format v{FORMAT_VERSION})"
    schema["description"] = (
        "One line of a plantrail log. Members appear in the order v seq ts run type plan_version actor "
        "[trace] [source] [key] data prev h; h = sha256 of the line without its h member. v is the lowest "
        "format version that holds the line: 1 unless it uses a field, member (trace) or event type format 2 "
        "added (a field added in format 2 is left out at its default); format 1 lines read as format 2 with "
        "those defaults."
    )
    return schema


# --------------------------------------------------------------------------- field types


def _field_hints(cls: type[Any]) -> dict[str, Any]:
    """A dataclass's or struct's fields and their types, in order."""
    hints = typing.get_type_hints(cls)
    if dataclasses.is_dataclass(cls):
        return {f.name: hints[f.name] for f in dataclasses.fields(cls)}
    return {name: hints[name] for name in cls.__struct_fields__}
