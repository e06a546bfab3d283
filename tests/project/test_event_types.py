"""Every event type the vocabulary defines is known to every place that must know it.

docs/development.md lists, under "Adding an event type", each table and function an event type must be
registered in or handled by. Each of them is a named check below (:data:`REGISTRIES`), and every event type
the vocabulary defines is walked through every check: the types are read from
:mod:`plantrail.ledger.vocabulary.events` (every class there with a ``TYPE``), never from a list written here.
A failure names the registry and the type, e.g. ``test_registry_knows_the_type[timeline_summary-step.heartbeat]``.

Two lists say where a registry does not cover a type, and why:

- :data:`NOT_APPLICABLE`: the registry has nothing to do with the type, on purpose (the header has no command
  that writes it, the ``log.*`` records change no plan state ...); each entry says why;
- :data:`KNOWN_GAPS`: a registry that misses a type today, found when this test was written and reported; it
  is not fixed here. A gap that is closed fails its test (strict xfail) until it is taken off the list, so the
  list only shrinks; a new type never goes on it.
"""

from __future__ import annotations

import ast
import dataclasses
import functools
import inspect
import re
import typing
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, NamedTuple

import msgspec
import orjson
import pytest
from click.testing import CliRunner

from plantrail.ledger.vocabulary import codec
from plantrail.ledger.vocabulary import events as ev
from plantrail.ledger.vocabulary.plan import CriterionSpec, PlanSpec, StepSpec
from plantrail.ledger.vocabulary.versions import V1, V2, added_defaults

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"


# --------------------------------------------------------------------------- the event types, from the code


def _vocabulary() -> dict[str, type[Any]]:
    """Every event type the vocabulary module defines: each class of it with a string ``TYPE``, by type name."""
    found: dict[str, type[Any]] = {}
    for _, cls in inspect.getmembers(ev, inspect.isclass):
        name = cls.__dict__.get("TYPE")
        if cls.__module__ == ev.__name__ and isinstance(name, str):
            assert name not in found, f"two classes name the event type {name}: {found[name]} and {cls}"
            found[name] = cls
    return dict(sorted(found.items()))


TYPES: dict[str, type[Any]] = _vocabulary()


def _minimal(tp: Any) -> Any:
    """The smallest value of a field type: each required field filled in, every optional one at its default."""
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if tp is str:
        return "x"
    if tp is bool:
        return False
    if tp is int:
        return 1
    if tp is float:
        return 1.0
    if tp is Any:
        return None
    if origin is typing.Literal:
        return args[0]
    if origin is typing.Union or str(origin) == "<class 'types.UnionType'>":
        return None if type(None) in args else _minimal(args[0])
    if origin is tuple:
        return ()
    if origin is dict or tp is dict:
        return {}
    if isinstance(tp, type) and (dataclasses.is_dataclass(tp) or issubclass(tp, msgspec.Struct)):
        return _build(tp)
    raise TypeError(f"no minimal value for the field type {tp!r}: teach _minimal about it")


def _required(cls: type[Any]) -> list[str]:
    if dataclasses.is_dataclass(cls):
        missing = dataclasses.MISSING
        return [f.name for f in dataclasses.fields(cls) if f.default is missing and f.default_factory is missing]
    return [f.name for f in msgspec.structs.fields(cls) if f.required]


def _build(cls: type[Any]) -> Any:
    hints = typing.get_type_hints(cls)
    return cls(**{name: _minimal(hints[name]) for name in _required(cls)})


@functools.cache
def sample(name: str) -> Any:
    """A value of event type ``name``: its required fields at their smallest values, the rest at their defaults."""
    return _build(TYPES[name])


def record_of(data: Any, *, seq: int = 1, plan_version: int = 1) -> ev.Record:
    """A record holding ``data``, made without the codec (so a check that is not the codec's does not need it)."""
    ts = "2026-01-01T00:00:00Z"
    return ev.Record(
        v=V1, seq=seq, ts=ts, run="r", plan_version=plan_version, actor="runtime", data=data, prev="0" * 64, h="0" * 64
    )


def _line(name: str) -> bytes:
    line, _ = codec.encode(
        seq=1, ts="2026-01-01T00:00:00Z", run="r", plan_version=1, actor="runtime", data=sample(name), prev="0" * 64
    )
    return line[:-1]


# --------------------------------------------------------------------------- the registries
#
# Each check takes a type name and returns None when the registry knows the type, else what is missing.


#: The families of type names (the part before the dot), and what the prefix means to the code that reads it.
FAMILIES: dict[str, str] = {
    # the log's own records: judged by no rule (decide._check_unplanned), left out of watch's event lists
    # (cli/watching.py), their times not shown for an import without times (ledger/times.py)
    "log": "the log's own records",
    # a plan.* record (and run.forked) may change the plan version (projections/history.py fold_span)
    "plan": "the plan's versions",
    # read as a step's attempt (projections/timeline.py Collector.tap): see step_family_fields
    "step": "a step's attempt",
    # with step.* and plan.*, the report's first and last times (projections/timeline.py Collector.tap)
    "criterion": "a criterion's verdict",
    "run": "the run as a whole",
    # no code reads these prefixes
    "approval": "approvals",
    "effect": "side effects",
    "observation": "observed versions",
}


def type_family(name: str) -> str | None:
    """The type name is ``family.verb`` in lower case, of a family the code knows (:data:`FAMILIES`, and the
    paragraph on prefixes in docs/development.md): a new family is read for what the code makes of prefixes."""
    family, dot, verb = name.partition(".")
    if not (dot and re.fullmatch(r"[a-z]+", family) and re.fullmatch(r"[a-z_]+", verb)):
        return "not a type name of the form family.verb"
    return None if family in FAMILIES else f"a new family {family!r}: see what the code makes of prefixes"


def vocabulary_union(name: str) -> str | None:
    """ledger/vocabulary/events.py: the class is a member of the ``Event`` union (every other registry that is
    derived from the union sees it only then: the codec, the schema, ``log --type``) and of ``__all__``."""
    cls = TYPES[name]
    if cls not in typing.get_args(ev.Event):
        return f"{cls.__name__} is not in the Event union"
    if cls.__name__ not in ev.__all__:
        return f"{cls.__name__} is not in events.__all__"
    return None


def format_version(name: str) -> str | None:
    """ledger/vocabulary/events.py ``V2_TYPES`` (with ``FORMATS``, ``FORMAT_VERSION``): the format that added
    the type. Format 1 is closed: a type that is not one of :data:`FORMAT_1_TYPES` is one the newest format
    added, and a line holding it carries that format's ``v`` (ledger/vocabulary/codec.py ``line_version``)."""
    if name in FORMAT_1_TYPES:
        expected = V1
    elif name in ev.V2_TYPES:
        expected = V2
    else:
        return f"not in V2_TYPES (format {ev.FORMAT_VERSION}'s added types), and format 1 is closed"
    version = codec.line_version(sample(name))
    return None if version == expected else f"a line of it is v{version}, not v{expected}"


def upcaster_defaults(name: str) -> str | None:
    """ledger/vocabulary/versions.py: every field named in the class's ``ADDED`` (added after format 1) is a
    field with a default, which is what a line of the older format reads as."""
    cls = TYPES[name]
    fields = {f.name for f in dataclasses.fields(cls)} if dataclasses.is_dataclass(cls) else set(cls.__struct_fields__)
    unknown = set(getattr(cls, "ADDED", ())) - fields
    if unknown:
        return f"ADDED names {sorted(unknown)}, which are no fields of {cls.__name__}"
    try:
        added_defaults(cls)
    except TypeError as exc:
        return str(exc)
    return None


def codec_decodes(name: str) -> str | None:
    """ledger/vocabulary/codec.py: a record of the type encodes, and decodes back to the same event through
    msgspec's decoders (the union's, and the one-type decoder of a process's first lines) and pydantic's schema
    (``record_adapter``), each to the type's own record class."""
    cls = TYPES[name]
    if codec._EVENT_CLASSES_BY_TYPE.get(name) is not cls:
        return "the codec's table of event classes by type does not map the type to its class"
    line = _line(name)
    decoded = {
        "decode": codec.decode(line, 1),
        "union decoder": codec._fast_decoder()(line),
        "one-type decoder": codec._ONE_TYPE[name](line),
        "pydantic schema": codec._checked(line, 1),
    }
    for how, record in decoded.items():
        if type(record.data) is not cls or record.data != sample(name) or record.type != name:
            return f"{how} gives {record.data!r}"
        if type(record) is not codec._RECORD_CLASSES[name]:
            return f"{how} gives a record of class {type(record).__name__}"
    return None


def read_ahead_batches(name: str) -> str | None:
    """ledger/stores/jsonl/read_ahead.py: a record of the type crosses from the read-ahead child to its parent
    (MessagePack over the union of the codec's record classes) unchanged."""
    from plantrail.ledger.stores.jsonl import read_ahead

    record = codec.decode(_line(name), 1)
    batch_of, decode = read_ahead._message_types()
    back = decode(msgspec.msgpack.encode(batch_of(None, [record]))).records
    return None if back == [record] else f"the batch decodes to {back!r}"


@functools.cache
def _cli_schema() -> dict[str, Any]:
    from plantrail.cli.main import plantrail

    result = CliRunner().invoke(plantrail, ["schema"])
    assert result.exit_code == 0, result.output
    return dict(orjson.loads(result.output))


def cli_schema(name: str) -> str | None:
    """``plantrail schema`` (cli/maintain.py ``schema``, from codec ``json_schema``): the union's discriminator
    maps the type to its record's definition, which describes the event's data."""
    schema = _cli_schema()
    ref = schema.get("discriminator", {}).get("mapping", {}).get(name)
    if ref is None:
        return "the schema's discriminator does not map it"
    record = schema["$defs"][ref.rsplit("/", 1)[1]]
    if record["properties"]["type"].get("const") != name:
        return f"the record definition {ref} is not the one of type {name}"
    return None


def log_type_option(name: str) -> str | None:
    """``plantrail log --type`` (cli/timeline.py ``EVENT_TYPES``): a choice of the option."""
    import click

    from plantrail.cli.main import plantrail

    log = plantrail.get_command(click.Context(plantrail), "log")
    assert log is not None
    option = next(p for p in log.params if p.name == "types")
    return None if name in option.type.choices else "not a choice of log --type"  # type: ignore[attr-defined]


def log_table_column(name: str) -> str | None:
    """cli/timeline.py ``_TYPE_WIDTH``: the type (with `` (late)`` for a result) fits the log table's column."""
    from plantrail.cli.timeline import _TYPE_WIDTH

    shown = name + (" (late)" if name in ev.RESULT_TYPES else "")
    return None if len(shown) <= _TYPE_WIDTH else f"{shown!r} is wider than the TYPE column ({_TYPE_WIDTH})"


def reducer_handles(name: str) -> str | None:
    """projections/state.py ``_HANDLERS``: the reducer's transition for the type, which ``evolve`` and the
    in-place builder of ``fold`` both dispatch through (a type without one changes nothing but the head)."""
    from plantrail.projections.state import _HANDLERS

    return None if name in _HANDLERS else "no handler in _HANDLERS"


def rules_judge(name: str) -> str | None:
    """ledger/rules/decide.py ``_RULES``: the rules that judge an event of the type against the plan (``check``,
    which ``verify`` replays over every record); without an entry an event is accepted unjudged."""
    from plantrail.ledger.rules.decide import _RULES

    return None if TYPES[name] in _RULES else "no rules in decide._RULES"


def _command_types() -> dict[str, str]:
    """The event type each command of the ``Command`` union records (ledger/rules/idempotency.py
    ``_expected_type``: a decision on an approval records one of two), by type, with the command's name."""
    from plantrail.ledger.rules import idempotency
    from plantrail.ledger.rules.decide import Command

    found: dict[str, str] = {}
    for command in typing.get_args(Command):
        if "granted" in command.__struct_fields__:
            for granted in (True, False):
                recorded = idempotency._expected_type(command(request="r", granted=granted))
                found[str(recorded)] = f"{command.__name__}(granted={granted})"
        elif command in idempotency._EVENT_TYPE:
            found[idempotency._EVENT_TYPE[command]] = command.__name__
    return found


def command_records(name: str) -> str | None:
    """ledger/rules/idempotency.py ``_EVENT_TYPE`` (and ``_expected_type``): a command of the ``Command`` union
    records the type, and a retry of it under its idempotency key is compared with the record of that type."""
    return None if name in _command_types() else "no command's expected type (idempotency._EVENT_TYPE)"


@functools.cache
def _constructed() -> dict[str, list[str]]:
    """Every name called outside the vocabulary in the package's code (or assigned to a name, which may be called
    in its place), with the files that call it."""
    calls: dict[str, list[str]] = {}
    for folder in ("ledger", "projections", "cli", "src/plantrail"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            if "vocabulary" in path.relative_to(ROOT).parts:
                continue
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.Call):  # Class(...)
                    names = [node.func.id if isinstance(node.func, ast.Name) else getattr(node.func, "attr", None)]
                elif isinstance(node, ast.Assign):  # cls = Granted if ... else Denied; cls(...)
                    names = [n.id for n in ast.walk(node.value) if isinstance(n, ast.Name)]
                else:
                    continue
                for called in filter(None, names):
                    calls.setdefault(called, []).append(path.relative_to(ROOT).as_posix())
    return calls


def written_somewhere(name: str) -> str | None:
    """Something writes the type: its class is built by a rule (ledger/rules), the library (ledger/api.py,
    fork.py, checkpoint.py) or a store (the header, a repair), outside the vocabulary."""
    return None if TYPES[name].__name__ in _constructed() else "no module outside the vocabulary builds it"


def timeline_summary(name: str) -> str | None:
    """ledger/timeline.py ``summary``: a case of its own (the summary column of ``plantrail log``, and
    ``log --json``'s ``summary``), not the empty default a type without a case falls through to."""
    from plantrail.ledger.timeline import summary

    text = summary(record_of(sample(name)))
    return None if text else "summary() falls through to its empty default"


def step_family_fields(name: str) -> str | None:
    """The ``step.*`` family: every record whose type starts with ``step.`` is read as a step's attempt
    (projections/timeline.py ``Collector.tap`` reads ``data.step`` and ``data.attempt``; ``log --step`` filters
    on ``data.step``), so such a type has both fields. Only ``step.*`` types are checked."""
    if not name.startswith("step."):
        return None
    hints = typing.get_type_hints(TYPES[name])
    if hints.get("step") is not str or hints.get("attempt") is not int:
        return "a step.* type without `step: str` and `attempt: int`"
    return None


class _Running(NamedTuple):
    records: list[ev.Record]
    state: Any


@functools.cache
def _one_step_running() -> _Running:
    """A run whose one step ``a`` is in its first attempt, at plan version 1: its records and its state."""
    from plantrail.projections.state import fold

    header = ev.LogOpened(format="plantrail/1", run="r", nonce="0" * 32, fsync="none", created_by="test")
    step = StepSpec(id="a", title="A", depends_on=(), completion_evidence="e")
    plan = PlanSpec(goal="g", acceptance_criteria=(CriterionSpec(id="c", description="d"),), steps=(step,))
    records = [
        record_of(header, seq=0, plan_version=0),
        record_of(ev.PlanCreated(plan=plan), seq=1),
        record_of(ev.StepStarted(step="a", attempt=1), seq=2),
    ]
    state = fold(records)
    assert state.steps["a"].status == "in_progress"
    return _Running(records, state)


def _ending(name: str) -> ev.Record | None:
    """A record of the ``step.*`` type ``name`` for the running attempt of :func:`_one_step_running`, when it
    ends that attempt in the reducer (None: the type is no step event, or it leaves the attempt running)."""
    from plantrail.projections.state import evolve

    if not name.startswith("step.") or step_family_fields(name) is not None:
        return None
    data = sample(name)
    data = (dataclasses.replace if dataclasses.is_dataclass(data) else msgspec.structs.replace)(
        data, step="a", attempt=1
    )
    record = record_of(data, seq=3)
    running = _one_step_running()
    return None if evolve(running.state, record).steps["a"].status == "in_progress" else record


def attempt_history_ends(name: str) -> str | None:
    """projections/attempts.py ``fold`` (``plantrail status --attempts``): a step event that ends an attempt in the
    reducer ends it in the attempt history too (its ``result`` is no longer null, "in progress")."""
    from plantrail.projections.attempts import fold

    record = _ending(name)
    if record is None:
        return None
    attempts = fold([*_one_step_running().records, record]).attempts["a"]
    return None if attempts[-1].result is not None else "the attempt it ends stays in progress (result null)"


def report_timeline_ends(name: str) -> str | None:
    """projections/timeline.py ``_RESULTS`` (the report's lanes): a step event that ends an attempt in the reducer
    closes its interval in the report's timeline."""
    from plantrail.projections.timeline import timeline

    record = _ending(name)
    if record is None:
        return None
    lane = timeline([*_one_step_running().records, record], ()).attempts
    return None if lane[-1].outcome != "in_progress" else "the attempt it ends stays in_progress in the report"


def _format_page() -> str:
    return (DOCS / "format.md").read_text(encoding="utf-8")


def docs_event_reference(name: str) -> str | None:
    """docs/format.md and docs/format-v2.md, the log format's reference, name the type."""
    pages = _format_page() + (DOCS / "format-v2.md").read_text(encoding="utf-8")
    return None if f"`{name}`" in pages else "named in neither docs/format.md nor docs/format-v2.md"


def docs_format_table(name: str) -> str | None:
    """docs/format.md says which format introduced the type: a format 1 type has its row in the "Event types"
    table; a format 2 type is in the sentence "Format 2 adds the event types ..." under it."""
    page = _format_page()
    if name in FORMAT_1_TYPES:
        found = re.search(rf"^\| `{re.escape(name)}` \|", page, flags=re.MULTILINE)
        return None if found else "no row in docs/format.md's event table"
    added = re.search(r"^Format 2 adds the event types (.*?)(?:\n\n|\Z)", page, flags=re.MULTILINE | re.DOTALL)
    if added is None:
        return "docs/format.md has no sentence 'Format 2 adds the event types ...'"
    return None if f"`{name}`" in added.group(1) else "not in docs/format.md's 'Format 2 adds the event types' list"


def strategies_draw(name: str) -> str | None:
    """tests/strategies.py ``EVENTS``: the codec's property tests (tests/test_codec.py, test_codec_fast.py, whose
    mutated lines hold msgspec to pydantic, and test_read_ahead.py) draw events of the type."""
    from tests.strategies import EVENTS

    drawn = {m.group(1) for s in EVENTS.original_strategies if (m := re.match(r"builds\((\w+)", repr(s)))}
    assert drawn, "tests/strategies.py EVENTS is no longer a one_of of builds(...): update this check"
    return None if TYPES[name].__name__ in drawn else "tests/strategies.py EVENTS draws no event of it"


class Registry(NamedTuple):
    """One place an event type must be known: its name (in test ids) and its check."""

    name: str
    check: Callable[[str], str | None]


#: Every registry the checklist in docs/development.md names that a test can read, in the checklist's order.
REGISTRIES: tuple[Registry, ...] = tuple(
    Registry(check.__name__, check)
    for check in (
        type_family,
        vocabulary_union,
        format_version,
        upcaster_defaults,
        codec_decodes,
        read_ahead_batches,
        cli_schema,
        reducer_handles,
        rules_judge,
        command_records,
        written_somewhere,
        timeline_summary,
        step_family_fields,
        attempt_history_ends,
        report_timeline_ends,
        log_type_option,
        log_table_column,
        docs_event_reference,
        docs_format_table,
        strategies_draw,
    )
)

#: The types a format 1 line may hold. Format 1 is closed: no type is added to it. ``log.batch`` came after
#: the first release without a new format version, on purpose (docs/reliability.md: a group commit's bounds are
#: ``log.*`` records, and a reader that predates them refuses them as FORMAT_TOO_NEW).
FORMAT_1_TYPES: frozenset[str] = frozenset(
    {
        "log.opened",
        "log.repaired",
        "log.checkpoint",
        "log.batch",
        "plan.created",
        "step.started",
        "step.completed",
        "step.blocked",
        "step.failed",
        "plan.replanned",
        "criterion.verified",
        "run.finished",
    }
)

#: The log's own records: the header, a repair, a keyed checkpoint, a group commit's bounds.
_LOG_RECORDS = ("log.opened", "log.repaired", "log.checkpoint", "log.signed", "log.batch")

#: Registries that have nothing to do with a type, on purpose: registry -> {type: why}.
NOT_APPLICABLE: dict[str, dict[str, str]] = {
    "timeline_summary": {
        # A group commit's bounds are how records were written, not something the run did: `log` leaves their
        # summary empty (the records between them have theirs).
        "log.batch": "a group commit's bound says nothing of the run",
    },
    "reducer_handles": {
        # The header's handler sets the run id; the other log records change no plan state ("Projections
        # ignore the log.* records", docs/format.md).
        "log.repaired": "a repair changes no plan state",
        "log.checkpoint": "a keyed checkpoint changes no plan state",
        "log.signed": "a signed checkpoint changes no plan state",
        "log.batch": "a group commit's bound changes no plan state",
    },
    "rules_judge": {
        # decide._check_unplanned judges these without a plan: the plan's creation, the log's own records
        # (written by a store or the library, never refused by a rule) and a fork's first event.
        "plan.created": "judged by decide._check_unplanned (no plan exists yet)",
        "run.forked": "judged by decide._check_unplanned (lineage.check_forked)",
        **dict.fromkeys(_LOG_RECORDS, "a log record: written by a store or the library, judged by no rule"),
    },
    "command_records": {
        # No command of the Command union writes these: they are written by a store or the library.
        "log.opened": "written by a store when it creates a run (Run.create)",
        "log.repaired": "written by repair (ledger/stores/jsonl/log.py)",
        "log.checkpoint": "written by Ledger.checkpoint (ledger/checkpoint.py)",
        "log.signed": "written by Ledger.checkpoint with a signing key (ledger/signing.py)",
        "log.batch": "written by the ledger around a group commit (Ledger.execute_many)",
        "run.forked": "written by fork_run (ledger/fork.py) with the new run's header",
    },
}

#: Registries that miss a type (none now: a gap found is fixed, or listed here with why, and the list only shrinks).
KNOWN_GAPS: dict[str, frozenset[str]] = {}


def _cases() -> Iterator[Any]:
    for registry in REGISTRIES:
        skipped = NOT_APPLICABLE.get(registry.name, {})
        gaps = KNOWN_GAPS.get(registry.name, frozenset())
        for name in TYPES:
            if name in skipped:
                continue
            marks = []
            if name in gaps:
                reason = f"known gap: {registry.name} misses {name} (once fixed, take it off KNOWN_GAPS)"
                marks.append(pytest.mark.xfail(reason=reason, strict=True))
            yield pytest.param(registry, name, id=f"{registry.name}-{name}", marks=marks)


@pytest.mark.parametrize(("registry", "name"), list(_cases()))
def test_registry_knows_the_type(registry: Registry, name: str) -> None:
    """Each registry knows each event type of the vocabulary (but where it does not apply, or misses it today)."""
    missing = registry.check(name)
    assert missing is None, f"{registry.name} misses event type {name}: {missing}"


# --------------------------------------------------------------------------- the lists themselves


def test_the_vocabulary_is_read_whole() -> None:
    """The types are read from the module: all of the Event union's (and more, should a class not be in it)."""
    union = {cls.TYPE for cls in typing.get_args(ev.Event)}
    assert union <= set(TYPES)
    assert {"log.opened", "step.started", "observation.recorded"} <= set(TYPES)


def test_the_lists_name_registries_and_types_that_exist() -> None:
    """Every registry and type the allow-lists name exists, and no type is both not applicable and a gap."""
    names = {registry.name for registry in REGISTRIES}
    assert set(NOT_APPLICABLE) <= names and set(KNOWN_GAPS) <= names
    listed = {name for entries in NOT_APPLICABLE.values() for name in entries}
    listed |= {name for gaps in KNOWN_GAPS.values() for name in gaps} | FORMAT_1_TYPES
    assert listed <= set(TYPES), sorted(listed - set(TYPES))
    both = {r: sorted(set(NOT_APPLICABLE[r]) & KNOWN_GAPS[r]) for r in NOT_APPLICABLE if r in KNOWN_GAPS}
    assert not any(both.values()), both


def test_what_does_not_apply_is_not_covered() -> None:
    """An entry of NOT_APPLICABLE names a type its registry does not cover (once it does, the entry goes)."""
    checks = {registry.name: registry.check for registry in REGISTRIES}
    covered = [f"{r}: {name}" for r, entries in NOT_APPLICABLE.items() for name in entries if checks[r](name) is None]
    assert covered == []


def test_every_registry_is_documented_in_the_checklist() -> None:
    """docs/development.md's checklist names the file of every registry checked here."""
    page = (DOCS / "development.md").read_text(encoding="utf-8")
    checklist = page.partition("## Adding an event type")[2].partition("\n## ")[0]
    assert checklist, "docs/development.md has no section 'Adding an event type'"
    files = {
        "type_family": "ledger/vocabulary/events.py",
        "vocabulary_union": "ledger/vocabulary/events.py",
        "format_version": "ledger/vocabulary/codec.py",
        "upcaster_defaults": "ledger/vocabulary/versions.py",
        "codec_decodes": "ledger/vocabulary/codec.py",
        "read_ahead_batches": "ledger/stores/jsonl/read_ahead.py",
        "cli_schema": "cli/maintain.py",
        "reducer_handles": "projections/state.py",
        "rules_judge": "ledger/rules/decide.py",
        "command_records": "ledger/rules/idempotency.py",
        "written_somewhere": "ledger/rules/",
        "timeline_summary": "ledger/timeline.py",
        "step_family_fields": "projections/timeline.py",
        "attempt_history_ends": "projections/attempts.py",
        "report_timeline_ends": "projections/timeline.py",
        "log_type_option": "cli/timeline.py",
        "log_table_column": "cli/timeline.py",
        "docs_event_reference": "docs/format-v2.md",
        "docs_format_table": "docs/format.md",
        "strategies_draw": "tests/strategies.py",
    }
    assert set(files) == {registry.name for registry in REGISTRIES}
    assert [f"{name}: {file}" for name, file in files.items() if f"`{file}" not in checklist] == []


def test_no_registry_names_a_type_the_vocabulary_lacks() -> None:
    """The tables keyed by type name hold only the vocabulary's types (a renamed or removed type leaves none
    behind): the reducer's handlers, the rules, the format table, the result types, the step transitions, the
    report's results, the commands' expected types and the timeline summary's cases."""
    from plantrail.ledger.rules.decide import _RULES, _TRANSITION_TARGET
    from plantrail.ledger.timeline import summary
    from plantrail.projections.state import _HANDLERS
    from plantrail.projections.timeline import _RESULTS

    cases = {
        node.pattern.value.value
        for node in ast.walk(ast.parse(inspect.getsource(summary).lstrip()))
        if isinstance(node, ast.match_case) and isinstance(node.pattern, ast.MatchValue)
    }
    tables = {
        "projections/state.py _HANDLERS": set(_HANDLERS),
        "ledger/rules/decide.py _RULES": {cls.TYPE for cls in _RULES},
        "ledger/rules/decide.py _TRANSITION_TARGET": set(_TRANSITION_TARGET),
        "events.V2_TYPES": set(ev.V2_TYPES),
        "events.RESULT_TYPES": set(ev.RESULT_TYPES),
        "projections/timeline.py _RESULTS": set(_RESULTS),
        "idempotency expected types": set(_command_types()),
        "ledger/timeline.py summary cases": cases,
    }
    assert len(cases) > 10
    assert {table: sorted(names - set(TYPES)) for table, names in tables.items() if names - set(TYPES)} == {}


def test_every_command_names_the_event_it_records() -> None:
    """Each command of the Command union has the event type it records in the idempotency comparison, so a
    retry of a new command is compared with its record rather than refused as IDEMPOTENCY_CONFLICT."""
    from plantrail.ledger.rules import idempotency
    from plantrail.ledger.rules.decide import Command

    unknown = [
        command.__name__
        for command in typing.get_args(Command)
        if command not in idempotency._EVENT_TYPE and "granted" not in command.__struct_fields__
    ]
    assert unknown == []
