"""Idempotency keys: is a retried command the same as the event its key already wrote?

"The same content" is every field of the event's ``data`` except what the ledger derives from the state
(the attempt a start gets, the next version, a patch's applied plan), compared with the same fields of the
command, normalised as its decision normalises them (text trimmed, blank observations dropped). A field
added to an event later is compared without a change here. The plan version, the attempt, a draft's goal and
policy are compared when the retried command states them (the seq of an attempt's start, which only
resolves to a version and an attempt, is not); when it leaves them to their defaults they are
whatever the original resolved to (a retry after the run moved on still finds its original event).

The comparison is made against the record the key names, read from the log's own bytes by the store, never
against a cache's copy: a cache can make a retry slower, never a duplicate.
"""

from __future__ import annotations

import hashlib
from typing import Any, Final

import orjson

from plantrail.ledger.rules.approvals import Decide
from plantrail.ledger.rules.decide import DECLARATIONS, Block, Command, Complete, Extend, Fail, Replan, VerifyCriterion
from plantrail.ledger.rules.effects import CommitEffect, RequestEffect
from plantrail.ledger.rules.observations import Observe
from plantrail.ledger.vocabulary.errors import error
from plantrail.ledger.vocabulary.events import ApprovalDenied, ApprovalGranted, PlanReplanned, Record, StepBlocked
from plantrail.ledger.vocabulary.keys import KeyEntry
from plantrail.ledger.vocabulary.plan import Draft
from plantrail.ledger.vocabulary.versions import added_defaults, plain

__all__ = ["KeyEntry", "command_content", "match", "record_content", "record_view"]


#: Fields of an event's data that the decision derives from the state, never from the command.
DERIVED: Final = frozenset(
    {"attempt", "new_version", "lease_s", "done", "not_done", "resume_from", "unmet", "ambiguous"}
)
#: Fields of a command that are not event content: the envelope, and the defaults compared on their own.
_NOT_CONTENT: Final = frozenset(
    {"actor", "source", "key", "plan_version", "attempt", "started_seq", "lease_s", "strict"}
)
#: The type of the event each command records, from its declaration (a decision on an approval records one of
#: two: :func:`_expected_type`).
_EVENT_TYPE: Final[dict[type, str]] = {d.command: d.events[0].TYPE for d in DECLARATIONS if len(d.events) == 1}


def _builtins(value: Any) -> Any:
    """Plain JSON values (lists for every sequence), written the writer's way (the fields format v2 added left
    out at their defaults), so a command and a record compare field by field."""
    return orjson.loads(orjson.dumps(value, default=plain, option=orjson.OPT_PASSTHROUGH_DATACLASS))


#: The members format v2 added to the event each command records, with their defaults as plain JSON: a command
#: that leaves one at its default is compared without it, as the record (which leaves it out) is.
_ADDED: Final[dict[type, tuple[tuple[str, Any], ...]]] = {
    d.command: tuple((name, _builtins(value)) for name, value in added_defaults(d.events[0]))
    for d in DECLARATIONS
    if len(d.events) == 1
}


def _trimmed(value: Any) -> Any:
    """Text trimmed as a decision trims it: a string, or each string of a list."""
    if isinstance(value, str):
        return value.strip()
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return [v.strip() for v in value]
    return value


def record_content(record: Record) -> dict[str, Any]:
    """The comparable content of a stored record: every field of its data but the derived ones."""
    content: dict[str, Any] = {k: v for k, v in _builtins(record.data).items() if k not in DERIVED}
    if isinstance(record.data, PlanReplanned) and record.data.patch is not None:
        del content["plan"]  # the patch applied to its base: derived
    return content


def command_content(command: Command) -> dict[str, Any]:
    """The comparable content of a command, named and normalised as its decision would write it."""
    content = {
        name: _trimmed(_builtins(getattr(command, name)))
        for name in command.__struct_fields__
        if name not in _NOT_CONTENT
    }
    if isinstance(command, Observe):  # the event names the observation ``key``, its dirty paths sorted
        content["key"] = content.pop("name")
        content["dirty"] = sorted(set(content["dirty"]))
    if isinstance(command, VerifyCriterion):
        content["verdict"] = "passed" if content.pop("passed") else "failed"
    if isinstance(command, Decide):
        del content["granted"]  # the event's type says it
    if isinstance(command, (RequestEffect, CommitEffect)):
        content["key"] = content.pop("effect")  # the event's member for the effect's own idempotency key
    if isinstance(command, (Replan, Extend)):
        content["observations"] = [o for o in content["observations"] if o]
    if isinstance(command, Replan) and command.patch is not None:
        del content["plan"]
    if isinstance(command, Extend):  # the event leaves its criteria and observations out when there are none
        content = {name: value for name, value in content.items() if name == "steps" or value}
    for name, default in _ADDED.get(type(command), ()):
        if name in content and content[name] == default:
            del content[name]  # a member format v2 added, at its default: the event leaves it out (as the record)
    return content


def _stated(content: dict[str, Any], command: Command) -> dict[str, Any]:
    """``content`` without what the command left to its default (a replan draft's goal and policy)."""
    plan = getattr(command, "plan", None)
    if not isinstance(plan, Draft) or "plan" not in content or not isinstance(content["plan"], dict):
        return content
    omitted = {name for name in ("goal", "policy", "scope", "artifacts") if getattr(plan, name) is None}
    return content | {"plan": {k: v for k, v in content["plan"].items() if k not in omitted}}


def _digest(content: dict[str, Any]) -> str:
    return hashlib.sha256(orjson.dumps(content, option=orjson.OPT_SORT_KEYS)).hexdigest()


def record_view(record: Record) -> KeyEntry:
    """Where a keyed record is and a digest of its content (the index entry; matching reads the record)."""
    return KeyEntry(
        seq=record.seq,
        hash=record.h,
        view=_digest({"type": record.type, **record_content(record)}),
        plan_version=record.plan_version,
        attempt=getattr(record.data, "attempt", None),
    )


_RESULTS: Final = (Complete, Fail, Block)


def _expected_type(command: Command) -> str | None:
    """The type of the event ``command`` records (a decision on an approval: granted or denied)."""
    if isinstance(command, Decide):
        return ApprovalGranted.TYPE if command.granted else ApprovalDenied.TYPE
    return _EVENT_TYPE.get(type(command))


def match(record: Record, command: Command, key: str) -> None:
    """Accept a retry of ``record`` (the event ``key`` wrote, read from the log); raise IDEMPOTENCY_CONFLICT
    when any of the command's content differs."""
    wanted = _stated(command_content(command), command)
    stored = _stated(record_content(record), command)
    same = record.type == _expected_type(command) and wanted == stored
    if isinstance(record.data, StepBlocked) and record.data.violation is not None and isinstance(command, _RESULTS):
        # a result outside its scope was recorded as the blocked attempt: its retry reports the same record
        same = command.step == record.data.step and _builtins(command.report) == _builtins(record.data.report)
    version = getattr(command, "plan_version", None)
    attempt = getattr(command, "attempt", None)
    if same and version is not None and version != record.plan_version:
        same = False
    if same and attempt is not None and attempt != getattr(record.data, "attempt", None):
        same = False
    lease = getattr(command, "lease_s", None)  # a heartbeat's lease, compared when the retry states it
    if same and lease is not None and float(lease) != getattr(record.data, "lease_s", None):
        same = False
    if not same:
        raise error(
            "IDEMPOTENCY_CONFLICT",
            f"idempotency key {key!r} was used at seq {record.seq} for different content",
            key=key,
            seq=record.seq,
        )
