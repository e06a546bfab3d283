"""The audit views of a run's log, for Python callers: versions, replay, diff, why, orphans and resume.

Each function reads the log read-only (nothing is re-executed) and returns exactly the document that the
command of the same name prints with ``--json``::

    from plantrail import audit

    audit.versions("run.jsonl")["active_version"]
    audit.resume("run.jsonl")["exit_code"]

A log with a torn tail (a crash mid-write) still answers from its valid part, but the read is not the whole
story: ``versions``, ``replay``, ``why`` and ``orphans`` then raise :class:`~ledger.vocabulary.errors.LogDamaged`
``TORN_TAIL`` with the valid part's document as the error's ``partial``. ``resume`` never raises for a
damaged log: its receipt says so (``verdict`` ``damaged``, ``exit_code`` 3, ``damage``). A log that cannot
be read at all raises as usual (``LOG_NOT_FOUND``, ``PERMISSION_DENIED`` ...).

The ``read_*`` functions are the same reads as a :class:`Reading`: the document, the state it was built
from, and the damage instead of raising it (the CLI renders both; a caller that wants the state too can).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Final, NamedTuple, TypeAlias

import orjson

from plantrail.ledger.stores.opener import as_run
from plantrail.ledger.vocabulary.errors import PlantrailError, error

if TYPE_CHECKING:
    from plantrail.ledger.stores.protocol import Run
    from plantrail.ledger.stores.values import Quarantined, TornTail
    from plantrail.ledger.vocabulary.fragments import TornRecord
    from plantrail.projections.model import PlanState

__all__ = [
    "RESUME_EXIT_CODES",
    "Reading",
    "brief",
    "diff",
    "orphans",
    "read_brief",
    "read_diff",
    "read_orphans",
    "read_replay",
    "read_resume",
    "read_versions",
    "read_why",
    "replay",
    "resume",
    "torn_tail_error",
    "versions",
    "why",
]

#: A run: a run object (:func:`plantrail.ledger.stores.opener.open_run`), or a log's path or a database run's URL.
Path: TypeAlias = "Run | str | os.PathLike[str]"

#: The resume receipt's exit code by verdict (``plantrail resume`` exits with it).
RESUME_EXIT_CODES: Final[dict[str, int]] = {
    "continue": 0,
    "damaged": 3,
    "in_doubt": 10,
    "stuck": 11,
    "paused": 12,
    "finished": 13,
    "failed": 14,
    "budget_exhausted": 15,
    "partial": 16,
}


class Reading(NamedTuple):
    """One audit read: the ``--json`` document, the state it describes, and the damage that cut the read
    short (a TORN_TAIL after the valid part, or for ``resume`` any damage; None when the log read whole)."""

    document: dict[str, Any]
    state: PlanState
    damage: PlantrailError | None = None

    def checked(self) -> dict[str, Any]:
        """The document; or, when the read was cut short, the damage raised with the document as ``partial``."""
        if self.damage is not None:
            self.damage.partial = self.document
            raise self.damage
        return self.document


def torn_tail_error(path: str | os.PathLike[str], torn: TornTail) -> PlantrailError:
    """The TORN_TAIL error of a read that answered from the valid part of a log ending in ``torn``."""
    name = os.fspath(path)
    return error(
        "TORN_TAIL",
        f"{name} ends with {torn.length} bytes of an incomplete record after line {torn.line - 1}",
        advice="TORN_TAIL_READ",
        line=torn.line,
        offset=torn.offset,
        path=name,
    )


def _damage(run: Run, torn: TornTail | None) -> PlantrailError | None:
    return None if torn is None else torn_tail_error(run.location, torn)


@contextmanager
def _opened(path: Path) -> Iterator[Run]:
    """The run ``path`` names, for one read: a run object given is used as it is and left open."""
    run = as_run(path)
    try:
        yield run
    finally:
        if run is not path:
            run.close()


# --------------------------------------------------------------------------- versions


def read_versions(
    path: Path, *, everything: bool = False, limit: int | None = None, since: int | None = None
) -> Reading:
    """:func:`versions` as a :class:`Reading`."""

    if everything and (limit is not None or since is not None):
        raise error("USAGE", "every version was asked for, and also a limit or a first version: give one or the other")
    with _opened(path) as run:
        return _versions_reading(run, everything, limit, since)


def _versions_reading(run: Run, everything: bool, limit: int | None, since: int | None) -> Reading:
    from plantrail.projections.history import shown_versions, version_items

    found = run.versions()
    if since is not None and since > found.total:
        raise error(
            "UNKNOWN_PLAN_VERSION",
            f"plan version {since} is not in the log (it has versions 1 to {found.total})",
            plan_version=since,
        )
    shown = shown_versions(found.total, everything=everything, limit=limit, since=since)
    infos = [entry.info for entry in found.entries(shown.start, shown.stop - 1)]
    after = found.entry(shown.stop).info.seq if shown.stop <= found.total else None
    document = {"run": found.run, "active_version": found.total, "versions": version_items(infos, after)}
    return Reading(document, run.current().state, _damage(run, found.torn))


def versions(
    path: Path, *, everything: bool = False, limit: int | None = None, since: int | None = None
) -> dict[str, Any]:
    """Plan versions (the latest 20 unless ``everything``, the latest ``limit``, or those from ``since`` on):
    when, by whom and why each was adopted, its causes, and what its replan changed. Read from the history
    index beside the log (brought up to date first), not by folding the log.

    ``{"run", "active_version", "versions": [{"version", "seq", "ts", "actor", "reason", "why", "causes",
    "observations", "patched", "steps", "criteria", "superseded_at", "changes"}]}`` (``plantrail versions
    --json``): the versions shown; ``active_version`` is how many there are.
    """
    return read_versions(path, everything=everything, limit=limit, since=since).checked()


# --------------------------------------------------------------------------- replay


def read_replay(path: Path, version: int | None = None, at_seq: int | None = None) -> Reading:
    """:func:`replay` as a :class:`Reading`."""
    from plantrail.projections.canonical import state_hash
    from plantrail.projections.views import status_view

    if version is not None and at_seq is not None:
        raise error("USAGE", "replay rebuilds one point: a plan version or a seq, not both", advice="REPLAY_ONE_POINT")
    superseded_at = None
    with _opened(path) as run:
        if version is not None:
            state, superseded_at, torn = run.version_state(version)
        elif at_seq is not None:
            from plantrail.projections.history import replay_at_seq

            state = replay_at_seq(run.records(), at_seq)
            torn = run.torn
        else:
            result = run.current()
            state, torn = result.state, result.torn
        damage = _damage(run, torn)
    document = status_view(state) | {
        "state_hash": state_hash(state),
        "replay": {"version": state.version, "at_seq": at_seq, "superseded_at": superseded_at},
    }
    return Reading(document, state, damage)


def replay(path: Path, version: int | None = None, at_seq: int | None = None) -> dict[str, Any]:
    """The plan and every step's state at a past point: plan ``version`` as it stood when superseded (or now,
    for the active version), the state right after event ``at_seq``, or (with neither) the state now.

    The ``status --json`` document at that point, plus ``"state_hash"`` and ``"replay": {"version",
    "at_seq", "superseded_at"}`` (``plantrail replay --json``). ``version`` reads no further than the
    replan that superseded it. UNKNOWN_PLAN_VERSION or UNKNOWN_SEQ when the log does not reach the point.
    """
    return read_replay(path, version, at_seq).checked()


# --------------------------------------------------------------------------- diff


def read_diff(path: Path, v1: int, v2: int) -> Reading:
    """:func:`diff` as a :class:`Reading` (its state is the state at the end of ``v2``'s span read)."""

    if isinstance(v1, bool) or isinstance(v2, bool) or not (isinstance(v1, int) and isinstance(v2, int)):
        raise error("USAGE", "diff compares two plan versions, given as whole numbers")
    from plantrail.ledger.stores.versions import diff_of

    if v1 >= v2:
        raise error("USAGE", f"diff compares an earlier version with a later one, not v{v1} with v{v2}")
    with _opened(path) as run:
        document, state = diff_of(run.versions(), v1, v2)
    return Reading(document, state)


def diff(path: Path, v1: int, v2: int) -> dict[str, Any]:
    """What changed from plan version ``v1`` to a later ``v2``: steps added, removed and changed field by
    field; completed work kept (with its evidence) or reset (with the cause); criteria kept or reset.

    ``{"from", "to", "adjacent", "added", "removed", "changed", "kept", "reset", "criteria", "policy"}``
    (``plantrail diff --json``). Read from the history index beside the log and the records of ``v1`` and
    ``v2`` alone, so it never reports a torn tail.
    """
    return read_diff(path, v1, v2).checked()


# --------------------------------------------------------------------------- why


def read_why(path: Path, version: int | None = None) -> Reading:
    """:func:`why` as a :class:`Reading`."""
    from plantrail.ledger.stores.versions import why_of

    with _opened(path) as run:
        found = run.versions()
        state = run.current().state
        document = why_of(found, version, run.record_at, state)
        damage = _damage(run, found.torn)
    # The quoted events and the patch hold tuples; the document holds what JSON holds (lists), as printed.
    return Reading(orjson.loads(orjson.dumps(document)), state, damage)


def why(path: Path, version: int | None = None) -> dict[str, Any]:
    """The audit of the replan that created plan ``version`` (default: the latest replan): reason code, why,
    actor, the causing events quoted in full, what changed, and the late results for the version it replaced.

    ``{"version", "replaced", "seq", "ts", "actor", "reason", "why", "observations", "patch", "causes",
    "changes", "late_results", "lineage"}`` (``plantrail why --json``; ``lineage``: the runs a fork was forked
    from, as in ``status``).
    """
    return read_why(path, version).checked()


# --------------------------------------------------------------------------- orphans


def read_orphans(path: Path) -> Reading:
    """:func:`orphans` as a :class:`Reading`."""
    from plantrail.projections.history import orphans_view

    with _opened(path) as run:
        result = run.current()
        damage = _damage(run, result.torn)
    state = result.state
    document = {"run": state.run, "active_version": state.version, "orphans": orphans_view(state)}
    return Reading(document, state, damage)


def orphans(path: Path) -> dict[str, Any]:
    """Late results: completions, blocks and failures stamped with a superseded version or a stale attempt,
    or arriving after the run finished; in the log, never applied to the plan.

    ``{"run", "active_version", "orphans": [{"seq", "type", "step", "plan_version", "attempt",
    "active_version", "why", "evidence", "reason", "adopted", "status_now"}]}`` (``plantrail orphans --json``).
    """
    return read_orphans(path).checked()


# --------------------------------------------------------------------------- brief


def read_brief(path: Path) -> Reading:
    """:func:`brief` as a :class:`Reading`."""
    from plantrail.projections.brief import brief_view

    with _opened(path) as run:
        result = run.current()
        damage = _damage(run, result.torn)
    return Reading(brief_view(result.state), result.state, damage)


def brief(path: Path) -> dict[str, Any]:
    """The replan brief, derived from the log only: completed steps with their evidence
    (kept under their ids by a replan that leaves their contract alone), failed steps with their errors and
    reasons, steps in doubt and not run, unmet criteria, late results, coverage, the work remaining and the
    budget left; each step with its whole contract, so a patch can be written from the brief alone.

    ``{"run", "goal", "plan_version", "round", "outcome", "completed", "failed", "in_progress", "not_run",
    "unmet_criteria", "orphans", "coverage", "remaining", "budget", "lineage"}`` (``plantrail brief --json``;
    :func:`projections.brief.brief_view` names every member).
    """
    return read_brief(path).checked()


# --------------------------------------------------------------------------- resume


def read_resume(path: Path, *, every_byte: bool = False, now: str | None = None) -> Reading:
    """:func:`resume` as a :class:`Reading`: ``damage`` is the error that stopped the read, if any. ``now``
    (default: the clock) is the time the stop policy judges a deadline at."""
    from plantrail.ledger.vocabulary.clock import utc_now
    from plantrail.projections.history import resume_receipt

    with _opened(path) as run:
        result = run.current(stop_at_damage=True, use_cache=False if every_byte else None)
        damage: PlantrailError | None = result.damage if result.damage is not None else _damage(run, result.torn)
        torn = () if result.torn is None else run.torn_records(result.torn)
        quarantined = run.quarantined()
    receipt = resume_receipt(result.state, None if damage is None else damage.as_dict(), now=now or utc_now())
    document = receipt | {
        "exit_code": RESUME_EXIT_CODES[receipt["verdict"]],
        "snapshot_seq": result.snapshot_seq,
        "torn": [record.as_dict() for record in torn],
        "quarantined": [_quarantine_view(q) for q in quarantined],
    }
    _note_cut_off(document["in_doubt"], [*torn, *(r for q in quarantined for r in q.records)])
    return Reading(document, result.state, damage)


#: The events whose loss leaves a step in doubt: a worker's result.
_RESULTS: Final = frozenset({"step.completed", "step.failed", "step.blocked"})


def _quarantine_view(found: Quarantined) -> dict[str, Any]:
    return {
        "file": os.path.basename(found.name),
        "offset": found.offset,
        "bytes": found.size,
        "records": [record.as_dict() for record in found.records],
    }


def _note_cut_off(in_doubt: list[dict[str, Any]], torn: list[TornRecord]) -> None:
    """Give each step in doubt ``cut_off``: the summary of a result of its attempt that a crash cut off (in the
    torn tail or a quarantine file), the last one when there are several; None when there is none."""
    for item in in_doubt:
        lost = [r for r in torn if r.type in _RESULTS and r.step == item["step"] and r.attempt == item["attempt"]]
        item["cut_off"] = lost[-1].summary if lost else None


def resume(path: Path, *, every_byte: bool = False) -> dict[str, Any]:
    """The resume receipt after a crash: where the run stands and what to do next, with its exit code.

    ``{"verdict", "exit_code", "next", "run", "goal", "plan_version", "finished", "outcome",
    "outcome_reason", "done", "in_doubt", "ready", "blocked", "criteria_unverified", "criteria_failed",
    "orphans", "advice", "last_seq", "head_hash", "damage", "snapshot_seq", "torn", "quarantined"}``
    (``plantrail resume --json``). ``torn`` is what a torn tail's bytes read as (each record as far as it goes,
    :class:`~plantrail.ledger.vocabulary.fragments.TornRecord`), ``quarantined`` the quarantine files repairs
    left beside the log with what theirs read as; a step in doubt whose result a crash cut off says so
    (``cut_off``).
    ``snapshot_seq`` is the seq up to which the cache's snapshot answered (those records were not re-read;
    None with ``every_byte``, which reads and checks every byte, or without a snapshot). ``verdict``
    is the first that applies of ``damaged`` (exit 3: repair first; the receipt covers the valid part),
    ``finished`` (13), ``in_doubt`` (10: steps started without a result), ``paused`` (12), ``stuck`` (11: no
    step can start; replan) and ``continue`` (0). A damaged log is reported in the receipt, not raised.
    """
    return read_resume(path, every_byte=every_byte).document
