"""Every number of seconds that becomes a time is bounded where it enters, and a log holding a larger one is
still read.

The numbers are found, not listed: :func:`seconds_fields` walks every class of the vocabulary, the rules and
the projections for a numeric field named like seconds (``*_s``, ``seconds``, ``timeout``, ``lease``, ...),
and :func:`seconds_options` walks every option of every command. Each field found needs an entry in
:data:`TRIALS` (how a value reaches it through the library) or in :data:`NOT_TIMES` (why it never becomes a
time), so a new field fails here until it is bounded and tried.
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import math
import pkgutil
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import click
import orjson
import pytest

import plantrail.ledger.rules
import plantrail.ledger.vocabulary
import plantrail.projections
from plantrail.ledger.api import Ledger
from plantrail.ledger.vocabulary.durations import LATEST, MAX_SECONDS, seconds_after
from plantrail.ledger.vocabulary.errors import PlantrailError
from plantrail.ledger.vocabulary.plan import build_plan, parse_draft
from plantrail.projections.history import resume_receipt
from plantrail.projections.leases import lease_view
from plantrail.projections.views import next_view, status_view
from tests.conftest import CliResult
from tests.helpers.logs import lines_of, rechain, write_lines

#: A field or option name that says it holds seconds.
_SECONDS = re.compile(r"(^|_)(s|secs?|seconds|timeout|lease|ttl|interval|duration|poll|wait)(_|$)")
#: A numeric annotation (the sources use ``from __future__ import annotations``: annotations are strings).
_NUMBER = re.compile(r"\b(float|int)\b")
#: The time a test asks at (the test clock writes 2026-01-01 timestamps).
NOW = "2026-06-01T00:00:00Z"
#: A value written by a trial and then replaced in the log's bytes by a number past the bound.
MARK = 1234.5


def seconds_fields() -> Iterator[str]:
    """``Class.field`` for every numeric field named like seconds of a class defined in the vocabulary, the
    rules or the projections."""
    for package in (plantrail.ledger.vocabulary, plantrail.ledger.rules, plantrail.projections):
        for info in pkgutil.iter_modules(package.__path__, package.__name__ + "."):
            module = importlib.import_module(info.name)
            for cls in vars(module).values():
                if not inspect.isclass(cls) or cls.__module__ != module.__name__:
                    continue
                for name, annotation in inspect.get_annotations(cls).items():
                    if _SECONDS.search(name) and _NUMBER.search(str(annotation)):
                        yield f"{cls.__qualname__}.{name}"


def seconds_options() -> Iterator[tuple[str, click.Parameter]]:
    """``(command, option)`` for every option of every command named like seconds."""
    from plantrail.cli.main import all_commands

    def walk(command: click.Command, path: str) -> Iterator[tuple[str, click.Parameter]]:
        if isinstance(command, click.Group):
            for name, sub in command.commands.items():
                yield from walk(sub, f"{path} {name}")
        for parameter in command.params:
            if _SECONDS.search(parameter.name or ""):
                yield path, parameter

    for name, command in sorted(all_commands().items()):
        yield from walk(command, name)


def _draft(timeout_s: Any) -> dict[str, Any]:
    """A one-step plan whose step declares ``timeout_s`` (its attempts' lease)."""
    return {
        "goal": "Reject expired sessions",
        "acceptance_criteria": [{"id": "expired-gets-401", "description": "an expired session gets 401"}],
        "steps": [{"id": "implement", "title": "Check expiry", "completion_evidence": "the test passes", **timeout_s}],
    }


def _timeout_from_draft(make: Callable[..., Ledger], value: Any) -> None:
    make(_draft({"timeout_s": value})).start("implement")


def _timeout_from_spec(make: Callable[..., Ledger], value: Any) -> None:
    """A plan given as a spec skips the draft's parsing: the bound holds there too."""
    spec = build_plan(parse_draft(_draft({"timeout_s": 60})))
    step = spec.steps[0]
    assert step.terms is not None
    terms = dataclasses.replace(step.terms, timeout_s=float(value))  # a spec holds the float a log holds
    make(dataclasses.replace(spec, steps=(dataclasses.replace(step, terms=terms),))).start("implement")


def _lease_from_heartbeat(make: Callable[..., Ledger], value: Any) -> None:
    ledger = make(_draft({"timeout_s": 60}))
    ledger.start("implement")
    ledger.heartbeat("implement", lease_s=value)


#: How a value reaches each field through the library (each way of each field is tried).
TRIALS: dict[str, tuple[Callable[[Callable[..., Ledger], Any], None], ...]] = {
    "StepTerms.timeout_s": (_timeout_from_draft, _timeout_from_spec),
    "StepHeartbeat.lease_s": (_lease_from_heartbeat,),
    "Heartbeat.lease_s": (_lease_from_heartbeat,),
    # the state's lease is made from the two above, and only from them
    "Lease.seconds": (_timeout_from_draft, _lease_from_heartbeat),
}
#: Fields named like seconds that never become a time, and why.
NOT_TIMES: dict[str, str] = {
    "Report.duration_s": "how long an attempt took, as its worker measured it: recorded and shown, never a time",
}
#: Values past the bound (or no number of seconds at all), each refused where it enters.
HOSTILE = (MAX_SECONDS + 1, 3e11, 1e300, math.inf, math.nan, 0, -1)


def test_every_field_of_seconds_is_tried_or_said_to_be_no_time() -> None:
    """Each numeric field named like seconds has a trial here or a reason it never becomes a time."""
    found = set(seconds_fields())
    assert found, "the walk found no field: it is broken"
    assert found <= TRIALS.keys() | NOT_TIMES.keys(), (
        f"untried fields: {sorted(found - TRIALS.keys() - NOT_TIMES.keys())}"
    )
    assert TRIALS.keys() | NOT_TIMES.keys() <= found, "an entry names a field that no longer exists"


TRIED = [(field, way) for field, ways in TRIALS.items() for way in ways]


@pytest.mark.parametrize(("field", "way"), TRIED, ids=[f"{f}-{w.__name__}" for f, w in TRIED])
@pytest.mark.parametrize("value", HOSTILE, ids=repr)
def test_a_number_of_seconds_past_the_bound_is_refused(
    make_ledger: Callable[..., Ledger], tmp_path: Path, field: str, way: Callable[..., None], value: float
) -> None:
    """A number of seconds above MAX_SECONDS (or none at all) is refused with its code, and nothing is written:
    no log for a refused plan, nothing after the start for a refused heartbeat."""
    with pytest.raises(PlantrailError) as caught:
        way(make_ledger, value)
    assert caught.value.code in {"DRAFT_INVALID", "LEASE_REQUIRED"}, caught.value
    path = tmp_path / "run.jsonl"
    assert not path.exists() or b'"type":"step.started"' in lines_of(path)[-1]


@pytest.mark.parametrize(("field", "way"), TRIED, ids=[f"{f}-{w.__name__}" for f, w in TRIED])
def test_the_largest_number_of_seconds_gives_a_time(
    make_ledger: Callable[..., Ledger], field: str, way: Callable[..., None]
) -> None:
    """MAX_SECONDS itself is accepted, and every view that judges leases answers with a real time."""
    ledgers: list[Ledger] = []

    def make(plan: Any) -> Ledger:
        ledgers.append(make_ledger(plan))
        return ledgers[-1]

    way(make, MAX_SECONDS)
    state = ledgers[-1].state
    (lease,) = lease_view(state, NOW)
    assert (lease["lease_s"], lease["expired"]) == (MAX_SECONDS, False)
    assert lease["expires_at"].startswith("2057-")
    status_view(state, NOW), next_view(state, NOW), resume_receipt(state, now=NOW)


def _past_the_bound(path: Path, number: float) -> None:
    """Rewrite the log as an older plantrail (or a hand) could have written it: MARK becomes ``number``, spelled
    as the writer spells it, and the chain is sealed again from that line on."""
    lines = lines_of(path)
    (at,) = [n for n, line in enumerate(lines) if orjson.dumps(MARK) in line]
    lines[at] = lines[at].replace(orjson.dumps(MARK), orjson.dumps(number))
    write_lines(path, rechain(lines, at))
    for beside in path.parent.iterdir():  # a cache of the state written before the edit
        if beside != path and beside.name.startswith(path.name):
            beside.unlink() if beside.is_file() else None


@pytest.mark.parametrize(("field", "way"), TRIED, ids=[f"{f}-{w.__name__}" for f, w in TRIED])
@pytest.mark.parametrize("number", [3e11, 9e13, 999999999999999.0], ids=repr)  # what earlier plantrails took
def test_a_log_holding_seconds_past_the_bound_is_read_and_reported(
    make_ledger: Callable[..., Ledger],
    run_cli: Callable[..., CliResult],
    tmp_path: Path,
    field: str,
    way: Callable[..., None],
    number: float,
) -> None:
    """A log holding a number of seconds past the bound is read by every command (the lease never expires)
    and verify reports the record; nothing fails with INTERNAL."""
    ledgers: list[Ledger] = []

    def make(plan: Any) -> Ledger:
        ledgers.append(make_ledger(plan))
        return ledgers[-1]

    way(make, MARK)
    ledgers[-1].close()
    path = tmp_path / "run.jsonl"
    _past_the_bound(path, number)
    for command in ("status", "next", "resume", "log", "replay", "graph", "brief"):
        result = run_cli(command, path, "--json")
        assert result.code in (0, 10) and "INTERNAL" not in result.err, (command, result)
    result = run_cli("report", path, "-o", tmp_path / "report.html")
    assert result.code == 0, result
    (lease,) = run_cli("status", path, "--json").json()["leases"]
    assert (lease["expires_at"], lease["expired"]) == ("9999-12-31T23:59:59.999999Z", False)
    verdict = run_cli("verify", path)
    assert verdict.code == 3 and "INTERNAL" not in verdict.err, verdict


@pytest.mark.parametrize(
    ("since", "seconds", "end"),
    [
        ("2026-01-01T00:00:00Z", 60.0, "2026-01-01T00:01:00+00:00"),
        ("2026-01-01T01:00:00+01:00", 60.0, "2026-01-01T00:01:00+00:00"),
        ("2026-01-01T00:00:00Z", 1e300, LATEST.isoformat()),
        ("9999-12-31T23:59:59-05:00", 1.0, LATEST.isoformat()),
        ("0001-01-01T00:00:00+05:00", 1.0, "0001-01-01T00:00:00+00:00"),
        ("2026-01-01T00:00:00Z", -1e300, "0001-01-01T00:00:00+00:00"),
    ],
)
def test_seconds_after_a_time_are_clamped_to_the_times_a_timestamp_can_say(
    since: str, seconds: float, end: str
) -> None:
    """A time plus seconds is the UTC time they reach, or the first or last time a timestamp can say."""
    from datetime import datetime

    moment = seconds_after(datetime.fromisoformat(since), seconds)
    assert moment is not None and moment.isoformat() == end
    assert seconds_after(datetime.fromisoformat(since), math.nan) is None


@pytest.mark.parametrize(
    ("command", "option"), list(seconds_options()), ids=[f"{c}-{o.name}" for c, o in seconds_options()]
)
def test_every_option_of_seconds_on_the_command_line_is_bounded(command: str, option: click.Parameter) -> None:
    """An option named like seconds takes a number with an upper bound at most MAX_SECONDS (USAGE above it)."""
    kind = option.type
    assert isinstance(kind, click.FloatRange | click.IntRange), (command, option.name, kind)
    assert kind.max is not None and kind.max <= MAX_SECONDS, (command, option.name, kind)
