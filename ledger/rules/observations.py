"""Observation versions (format v2): the ``observe`` command, its
event ``observation.recorded`` and its rule, and whether the active plan was made from what is current.

An observation is a version of something the plan depends on: a repository's HEAD (with the files dirty
then), a schema version, a remote branch. The plan records the versions it was made from (its ``observed``,
the run's baseline, :mod:`ledger.vocabulary.artifacts`); each ``observe`` records a newer one. When a current version
differs from the plan's, the plan is *possibly stale* (:func:`plan_drift`: ``status``, ``next`` and ``resume``
flag it), and the steps whose inputs name that key are judged by :mod:`projections.lineage_digest` (the
version is the observation's digest). Pure: :mod:`ledger.rules.decide` builds and checks, the views read.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Unpack

import msgspec

from plantrail.ledger.rules.commands import LATE_REFUSED, Envelope, Field, Help, declare, fields, timeless
from plantrail.ledger.rules.guards import issued_version, require_open
from plantrail.ledger.vocabulary.errors import error
from plantrail.ledger.vocabulary.events import Actor, ObservationRecorded, Source

if TYPE_CHECKING:
    from plantrail.ledger.vocabulary.plan import Draft
    from plantrail.projections.state import StateView

__all__ = ["OBSERVE", "Observe", "build_observation", "check_observation", "observe", "with_observed"]


class Observe(msgspec.Struct, frozen=True, kw_only=True):
    """Record the current ``version`` of observation ``name`` (the event's ``key``: ``repo``, a schema ...) and,
    for a repository, its dirty files; ``key`` is the idempotency key, as on every command."""

    name: str
    version: str
    dirty: Sequence[str] = ()
    plan_version: int | None = None
    actor: Actor = "runtime"
    source: Source | None = None
    key: str | None = None


def build_observation(command: Observe) -> ObservationRecorded:
    """The event: key and version trimmed, the dirty paths trimmed, deduplicated and sorted."""
    dirty = tuple(sorted({p.strip() for p in command.dirty if isinstance(p, str) and p.strip()}))
    return ObservationRecorded(key=command.name.strip(), version=command.version.strip(), dirty=dirty)


def check_observation(state: StateView, data: ObservationRecorded, plan_version: int) -> None:
    """Refuse an observation on a finished run (RUN_FINISHED), with an invalid key (INVALID_ID) or a blank
    version (BLANK_FIELD), or issued against a superseded version (STALE_PLAN_VERSION)."""
    from plantrail.ledger.vocabulary.plan import check_id

    require_open(state)
    check_id(data.key, "observation key")
    if not data.version.strip():
        raise error("BLANK_FIELD", f"observation {data.key} needs a version", path="version")
    if plan_version < state.version:
        raise error(
            "STALE_PLAN_VERSION",
            f"the observation was issued against plan version {plan_version}; version {state.version} superseded it",
            plan_version=plan_version,
            expected=state.version,
            actual=plan_version,
        )


def _build(state: StateView, command: Observe) -> tuple[ObservationRecorded, int]:
    version = issued_version(state, command.plan_version)
    return build_observation(command), version


OBSERVE = declare(
    Observe,
    build=_build,
    rules={ObservationRecorded: timeless(check_observation)},
    fields={
        "dirty": Field(
            help="A file that is dirty (changed, not committed) at this version (repeatable; for a repository).",
            metavar="PATH",
        )
    },
    superseded=f"{LATE_REFUSED}.",
    refusals=(
        "PLAN_NOT_CREATED",
        "UNKNOWN_PLAN_VERSION",
        "STALE_PLAN_VERSION",
        "RUN_FINISHED",
        "INVALID_ID",
        "BLANK_FIELD",
    ),
    cli={
        "observe": Help(
            "Record VERSION of the observation KEY (a repository HEAD, a schema version ...). Format v2\n"
            "(observation.recorded).",
            "When it differs from the version the plan was made from (the draft's ``observed``), status, next and\n"
            "resume flag the plan as possibly stale; a step whose inputs name KEY is judged by the digest rules: a\n"
            "pending one becomes stale, one in progress is marked for cancellation (end it with abandon), a "
            "completed\none that consumed another version becomes stale.",
            examples=(
                'plantrail observe run.jsonl repo "$(git rev-parse HEAD)" --dirty src/app.py',
                "plantrail observe run.jsonl db-schema 42",
            ),
        )
    },
)


@OBSERVE.method
def observe(name: str, version: str, *, dirty: Sequence[str] = (), **envelope: Unpack[Envelope]) -> Observe:
    """Record ``version`` of the observation ``name`` (a repository HEAD with its ``dirty`` files, a schema
    version ...; ``plantrail observe``): the steps whose inputs name it are judged by their digests."""
    return Observe(name=name, version=version, dirty=tuple(dirty), **fields(envelope))


def with_observed(draft: Draft, pairs: Sequence[str]) -> Draft:
    """``draft`` with the observation versions ``KEY=VERSION`` (``create``/``replan --observed``) among the
    versions it was made from (each replacing the draft's own for that key); USAGE when one is malformed."""
    import dataclasses

    from plantrail.ledger.vocabulary.artifacts import ObservedVersion, TaskArtifacts
    from plantrail.ledger.vocabulary.plan import check_id

    if not pairs:
        return draft
    given: dict[str, ObservedVersion] = {}
    for pair in pairs:
        key, sep, version = pair.partition("=")
        if not sep or not version.strip():
            raise error("USAGE", f"observed {pair!r} must be KEY=VERSION")
        given[key.strip()] = ObservedVersion(check_id(key.strip(), "observed key"), version.strip())
    task = draft.artifacts or TaskArtifacts()
    kept = tuple(o for o in task.observed if o.key not in given)
    artifacts = dataclasses.replace(task, observed=(*kept, *given.values()))
    return dataclasses.replace(draft, artifacts=artifacts)
