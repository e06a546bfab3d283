"""The minimal evidence record a result may carry, and its JSON form.

A ``complete``, ``fail`` or ``block`` may report what the runtime observed: the command or operation, its
exit code, whether it started and whether its output was truncated, the paths it changed, one observation
per check it ran, the tools it used, its usage (turns, tool calls, tokens, cost), its duration and free
metadata (tool-call id, trace id, worker id, model ...) kept as given. The event size limit stays: a runtime
with larger output records a digest and a path in ``meta``.

Every field is optional and left out of the line at its default (:mod:`ledger.vocabulary.versions`); a result with an
evidence record is a format v2 line.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, Final, Literal

from plantrail.ledger.vocabulary.errors import error

__all__ = ["Decision", "Observation", "Report", "Usage", "parse_report"]

_STRICT: dict[str, Any] = {"extra": "forbid", "strict": True}

Decision = Literal["approved", "rejected"]


@dataclass(frozen=True, slots=True)
class Observation:
    """What one run of one check saw: an exit code (command_exit), a value (state_predicate) or a decision
    (human_review); ``started`` False for a command that never ran, ``truncated`` for cut output."""

    __pydantic_config__: ClassVar[dict[str, Any]] = _STRICT
    ADDED: ClassVar[frozenset[str]] = frozenset({"exit_code", "value", "decision", "started", "truncated", "note"})

    check: str
    exit_code: int | None = None
    value: Any = None
    decision: Decision | None = None
    started: bool = True
    truncated: bool = False
    note: str | None = None


@dataclass(frozen=True, slots=True)
class Usage:
    """What an attempt spent: model turns, tool calls, tokens and cost in US dollars."""

    __pydantic_config__: ClassVar[dict[str, Any]] = _STRICT
    ADDED: ClassVar[frozenset[str]] = frozenset({"turns", "tool_calls", "tokens", "cost_usd"})

    turns: int = 0
    tool_calls: int = 0
    tokens: int = 0
    cost_usd: float = 0.0


@dataclass(frozen=True, slots=True)
class Report:
    """The evidence record of one attempt's result."""

    __pydantic_config__: ClassVar[dict[str, Any]] = _STRICT
    ADDED: ClassVar[frozenset[str]] = frozenset(
        {
            "command",
            "exit_code",
            "started",
            "truncated",
            "changed_paths",
            "observations",
            "tools",
            "usage",
            "duration_s",
            "meta",
        }
    )

    command: str | None = None
    exit_code: int | None = None
    started: bool = True
    truncated: bool = False
    changed_paths: tuple[str, ...] = ()
    observations: tuple[Observation, ...] = ()
    tools: tuple[str, ...] = ()
    usage: Usage | None = None
    duration_s: float | None = None
    meta: dict[str, Any] = field(default_factory=dict)


# --------------------------------------------------------------------------- parsing

_REPORT_KEYS: Final = frozenset(Report.ADDED)
_OBSERVATION_KEYS: Final = frozenset({"check", *Observation.ADDED})
_USAGE_KEYS: Final = frozenset(Usage.ADDED)


def _invalid(where: str, what: str) -> Exception:
    return error("REPORT_INVALID", f"{where} {what}", path=where)


def _object(value: Any, where: str, allowed: frozenset[str]) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise _invalid(where, "must be a JSON object")
    unknown = sorted(set(value) - allowed)
    if unknown:
        raise _invalid(where, f"has unknown keys: {', '.join(unknown)}")
    return value


def _int(value: Any, where: str, *, minimum: int | None = None) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not -(2**63) <= value < 2**63:
        raise _invalid(where, "must be a whole number")
    if minimum is not None and value < minimum:
        raise _invalid(where, f"must be >= {minimum}")
    return value


def _number(value: Any, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value < 0:
        raise _invalid(where, "must be a number >= 0")
    return float(value)


def _bool(value: Any, where: str) -> bool:
    if not isinstance(value, bool):
        raise _invalid(where, "must be true or false")
    return value


def _str(value: Any, where: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise _invalid(where, "must be a non-blank string")
    return value.strip()


def _strings(value: Any, where: str) -> tuple[str, ...]:
    if not isinstance(value, list):
        raise _invalid(where, "must be a list of strings")
    return tuple(_str(v, f"{where}[{i}]") for i, v in enumerate(value))


def _observation(raw: Any, where: str) -> Observation:
    obj = _object(raw, where, _OBSERVATION_KEYS)
    decision = obj.get("decision")
    if decision not in (None, "approved", "rejected"):
        raise _invalid(f"{where}.decision", "must be approved or rejected")
    return Observation(
        check=_str(obj.get("check"), f"{where}.check"),
        exit_code=None if obj.get("exit_code") is None else _int(obj["exit_code"], f"{where}.exit_code"),
        value=obj.get("value"),
        decision=decision,
        started=_bool(obj.get("started", True), f"{where}.started"),
        truncated=_bool(obj.get("truncated", False), f"{where}.truncated"),
        note=None if obj.get("note") is None else _str(obj["note"], f"{where}.note"),
    )


def _usage(raw: Any, where: str) -> Usage:
    obj = _object(raw, where, _USAGE_KEYS)
    return Usage(
        turns=_int(obj.get("turns", 0), f"{where}.turns", minimum=0),
        tool_calls=_int(obj.get("tool_calls", 0), f"{where}.tool_calls", minimum=0),
        tokens=_int(obj.get("tokens", 0), f"{where}.tokens", minimum=0),
        cost_usd=_number(obj.get("cost_usd", 0), f"{where}.cost_usd"),
    )


def parse_report(raw: Any) -> Report:
    """Parse an evidence record's JSON value (the keys of :class:`Report`); REPORT_INVALID names the field."""
    obj = _object(raw, "report", _REPORT_KEYS)
    meta = obj.get("meta", {})
    if not isinstance(meta, Mapping):
        raise _invalid("report.meta", "must be a JSON object")
    observations = obj.get("observations", [])
    if not isinstance(observations, list):
        raise _invalid("report.observations", "must be a list")
    return Report(
        command=None if obj.get("command") is None else _str(obj["command"], "report.command"),
        exit_code=None if obj.get("exit_code") is None else _int(obj["exit_code"], "report.exit_code"),
        started=_bool(obj.get("started", True), "report.started"),
        truncated=_bool(obj.get("truncated", False), "report.truncated"),
        changed_paths=_strings(obj.get("changed_paths", []), "report.changed_paths"),
        observations=tuple(_observation(o, f"report.observations[{i}]") for i, o in enumerate(observations)),
        tools=_strings(obj.get("tools", []), "report.tools"),
        usage=None if obj.get("usage") is None else _usage(obj["usage"], "report.usage"),
        duration_s=None if obj.get("duration_s") is None else _number(obj["duration_s"], "report.duration_s"),
        meta=dict(meta),
    )
