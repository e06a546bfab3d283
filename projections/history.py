"""A run's history: replay one plan version or one seq, and the audit views over its versions.

Pure functions over an iterable of records, read lazily and only as far as the answer needs (stop iterating
and the rest of the log is never read), or over folded states. Nothing is re-executed and nothing does I/O:
:mod:`cli.replay` reads the log and renders. The dicts returned are the ``--json`` contract of
``plantrail versions``, ``replay``, ``diff``, ``why``, ``orphans`` and ``resume``.

A plan version's *span* is its stretch of the log: from the record that adopted it up to, not including,
the replan that superseded it. :func:`fold_span` folds one span from any state, so a snapshot taken at the
start of a version can seed it instead of a fold from seq 0.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal, NamedTuple

import msgspec

from plantrail.ledger.vocabulary.errors import error
from plantrail.ledger.vocabulary.plan import PlanSpec, Policy, StepSpec
from plantrail.ledger.vocabulary.versions import plain
from plantrail.projections.effects import check_first, effects_view
from plantrail.projections.leases import expired_leases, lease_view
from plantrail.projections.lineage import forked_summary, lineage_view, parent_event
from plantrail.projections.model import (
    Changes,
    CriterionState,
    Fork,
    Orphan,
    PlanState,
    StepChange,
    StepState,
    VersionInfo,
    optional_text,
    texts,
)
from plantrail.projections.outcomes import outcome_lists
from plantrail.projections.repair_edges import idle_repairs, repairs_view, waiting_for
from plantrail.projections.state import evolve, fold, initial
from plantrail.projections.stop import stop_decision
from plantrail.projections.views import (
    advice,
    approvals_view,
    capacity_view,
    effects_to_check,
    in_doubt,
    orphan_view,
    ready_steps,
    startable_steps,
)

if TYPE_CHECKING:
    from plantrail.ledger.vocabulary.events import Record

__all__ = [
    "DEFAULT_VERSIONS",
    "History",
    "Span",
    "Verdict",
    "changes_view",
    "criterion_seqs",
    "diff_traced",
    "diff_view",
    "fold_span",
    "history",
    "orphans_view",
    "quote_record",
    "replan_version",
    "replay_at_seq",
    "replay_version",
    "replay_versions",
    "resume_receipt",
    "resume_verdict",
    "shown_versions",
    "spans",
    "verdict_seqs",
    "version_items",
    "versions_view",
    "why_traced",
    "why_view",
]


class Span(NamedTuple):
    """One plan version's span, folded: the state at its end and the seq of the record that superseded it
    (None while the version is active)."""

    state: PlanState
    superseded_at: int | None = None


# --------------------------------------------------------------------------- replay


_CHUNK = 1024


def fold_span(records: Iterator[Record], state: PlanState) -> tuple[Span, PlanState | None]:
    """Fold ``records`` from ``state`` (a fold so far, or a snapshot) until one moves the run to another version.

    Returns the span, which ends just before that record, and the state just after it (None when the records
    ran out). No record after it is read. Records between plan events are folded in chunks (the fast fold);
    each plan event is evolved on its own to see whether it changed the version.
    """
    pending: list[Record] = []
    for record in records:
        if not record.type.startswith("plan.") and record.type != "run.forked":  # a fork adopts its carried version
            pending.append(record)
            if len(pending) >= _CHUNK:
                state, pending = fold(pending, state), []
            continue
        state, pending = fold(pending, state), []
        after = evolve(state, record)
        if after.version != state.version:
            return Span(state, record.seq), after
        state = after
    return Span(fold(pending, state)), None


def spans(records: Iterable[Record], start: PlanState | None = None) -> Iterator[Span]:
    """Every version's span in log order, folded lazily from ``start`` (version 0 is the header before the plan)."""
    stream = iter(records)
    state: PlanState | None = initial() if start is None else start
    while state is not None:
        span, state = fold_span(stream, state)
        yield span


def replay_versions(
    records: Iterable[Record], versions: Collection[int], start: PlanState | None = None
) -> dict[int, Span]:
    """Each of ``versions`` as it stood when superseded (or now, for the active one), by version.

    Reads no further than the replan that superseded the latest version asked for. UNKNOWN_PLAN_VERSION
    names a version the log does not have.
    """
    wanted = versions if isinstance(versions, range) else frozenset(versions)  # a range stays lazy
    top = _largest(wanted)
    found: dict[int, Span] = {}
    reached = 0
    for span in spans(records, start):
        reached = span.state.version
        if reached in wanted:
            found[reached] = span
        if reached >= top:
            break
    missing = _last_missing(wanted, found)  # bounded by the log's versions, never by the numbers asked for
    if missing is not None:  # name the latest version asked for: the one the caller gave (diff 1 9 asks for 1..9)
        raise error(
            "UNKNOWN_PLAN_VERSION",
            f"plan version {missing} is not in the log (it has versions 1 to {reached})",
            plan_version=missing,
            expected=reached,
        )
    return found


def _largest(wanted: range | frozenset[int]) -> int:
    if isinstance(wanted, range):
        return max(wanted[0], wanted[-1]) if wanted else 0
    return max(wanted, default=0)


def _last_missing(wanted: range | frozenset[int], found: Mapping[int, Span]) -> int | None:
    """The largest of ``wanted`` not in ``found`` (None: all found). A range is walked from its high end, so
    in at most ``len(found) + 1`` steps whatever its length."""
    if isinstance(wanted, range):
        descending = reversed(wanted) if wanted.step > 0 else wanted
        return next((v for v in descending if v not in found), None)
    return max((v for v in wanted if v not in found), default=None)


def replay_version(records: Iterable[Record], version: int, start: PlanState | None = None) -> Span:
    """Version ``version`` as it stood when superseded, or now for the active one (see :func:`replay_versions`)."""
    return replay_versions(records, (version,), start)[version]


def replay_at_seq(records: Iterable[Record], seq: int, start: PlanState | None = None) -> PlanState:
    """The state right after record ``seq``; records after it are not read. UNKNOWN_SEQ when the log stops short."""
    state = initial() if start is None else start
    if state.last_seq < seq:
        for record in records:
            state = evolve(state, record)
            if record.seq >= seq:
                break
    if state.last_seq != seq:
        raise error(
            "UNKNOWN_SEQ",
            f"seq {seq} is not in the log (its records end at seq {state.last_seq})",
            seq=seq,
            actual=state.last_seq,
        )
    return state


# --------------------------------------------------------------------------- versions


class History(NamedTuple):
    """The whole log folded, with every plan version as it was adopted (the state keeps only the active one)."""

    state: PlanState
    versions: tuple[VersionInfo, ...]


def history(records: Iterable[Record], start: PlanState | None = None) -> History:
    """Fold ``records`` and collect each version the moment it is adopted (its plan and what its replan changed),
    and again each time it is extended in place (``plan.extended``: the version with the steps added)."""
    versions = [] if start is None or start.adopted is None else [start.adopted]

    def adopted(state: PlanState) -> None:
        assert state.adopted is not None  # the fold calls this right after a record adopted or extended a version
        if versions and versions[-1].version == state.adopted.version:
            versions[-1] = state.adopted  # extended in place
        else:
            versions.append(state.adopted)

    return History(fold(records, start, on_adopt=adopted), tuple(versions))


def _step_change(change: StepChange) -> dict[str, Any]:
    return change._asdict() | {"fields": list(change.fields)}


def _criterion_change(change: StepChange) -> dict[str, Any]:
    return {"criterion": change.step, "cause": change.cause, "was": change.was}


def changes_view(changes: Changes) -> dict[str, Any]:
    """What one replan recorded: kept / reset / added / removed steps and criteria, and a policy change.

    Shape: ``kept``, ``added``, ``criteria_kept``, ``criteria_added``, ``criteria_removed`` are id lists;
    ``reset`` and ``removed`` hold ``{step, cause, was, attempt, upstream, fields}``; ``criteria_reset``
    holds ``{criterion, cause, was}``; ``policy_changed`` is a bool.
    """
    return {
        "kept": list(changes.kept),
        "reset": [_step_change(c) for c in changes.reset],
        "added": list(changes.added),
        "removed": [_step_change(c) for c in changes.removed],
        "criteria_kept": list(changes.criteria_kept),
        "criteria_reset": [_criterion_change(c) for c in changes.criteria_reset],
        "criteria_added": list(changes.criteria_added),
        "criteria_removed": list(changes.criteria_removed),
        "policy_changed": changes.policy_changed,
    }


def versions_view(log: History) -> list[dict[str, Any]]:
    """``plantrail versions --all``: each version with when, by whom and why it was adopted, its causes and changes.

    Each item: ``version``, ``seq``, ``ts``, ``actor``, ``reason``, ``why``, ``causes`` (seqs),
    ``observations``, ``patched``, ``steps`` and ``criteria`` (counts), ``superseded_at`` (the seq of the
    next replan, None for the active version), ``changes`` (:func:`changes_view`; None for version 1) and
    ``extended`` (the seqs of the ``plan.extended`` records that added to the version in place; ``steps`` and
    ``criteria`` count them in).
    """
    return version_items(log.versions, None)


def version_items(infos: Sequence[VersionInfo], superseded_at: int | None) -> list[dict[str, Any]]:
    """:func:`versions_view` items for consecutive versions ``infos``; ``superseded_at`` is the seq of the replan
    that superseded the last of them (None when it is the active version)."""
    nexts = [*(info.seq for info in infos[1:]), superseded_at]
    return [
        {
            "version": info.version,
            "seq": info.seq,
            "ts": info.ts,
            "actor": info.actor,
            "reason": info.reason,
            "why": info.why,
            "causes": list(info.causes),
            "observations": list(info.observations),
            "patched": info.patched,
            "steps": len(info.plan.steps),
            "criteria": len(info.plan.acceptance_criteria),
            "superseded_at": after,
            "changes": None if info.changes is None else changes_view(info.changes),
            "extended": list(info.extended),
        }
        for info, after in zip(infos, nexts, strict=True)
    ]


#: How many versions ``plantrail versions`` shows by default (the latest ones).
DEFAULT_VERSIONS = 20


def shown_versions(
    count: int, *, everything: bool = False, limit: int | None = None, since: int | None = None
) -> range:
    """Which of versions 1..``count`` a ``versions`` view shows: all of them, those from ``since`` on, or the
    latest ``limit`` (default :data:`DEFAULT_VERSIONS`); ``since`` and ``limit`` together: the first ``limit``
    from ``since``."""
    if everything:
        return range(1, count + 1)
    if since is not None:
        end = count if limit is None else min(count, since + limit - 1)
        return range(max(since, 1), end + 1)
    return range(max(1, count - (DEFAULT_VERSIONS if limit is None else limit) + 1), count + 1)


# --------------------------------------------------------------------------- diff


def _policy(policy: Policy) -> int | str:
    return "unlimited" if policy.max_in_progress is None else policy.max_in_progress


def _field_changes(was: StepSpec, now: StepSpec) -> dict[str, dict[str, Any]]:
    """The fields of one step that differ between two plans (``depends_on`` compared as a set)."""
    changes = {}
    for name in ("title", "completion_evidence"):
        if getattr(was, name) != getattr(now, name):
            changes[name] = {"from": getattr(was, name), "to": getattr(now, name)}
    if set(was.depends_on) != set(now.depends_on):
        changes["depends_on"] = {"from": list(was.depends_on), "to": list(now.depends_on)}
    if was.max_attempts != now.max_attempts:
        changes["max_attempts"] = {"from": was.max_attempts, "to": now.max_attempts}
    return changes


def _changed_steps(old: PlanSpec, new: PlanSpec) -> list[dict[str, Any]]:
    before = {s.id: s for s in old.steps}
    pairs = ((before[s.id], s) for s in new.steps if s.id in before)
    return [{"step": now.id, "fields": fields} for was, now in pairs if (fields := _field_changes(was, now))]


def _criteria_plan_diff(old: PlanSpec, new: PlanSpec) -> dict[str, Any]:
    before = {c.id: c.description for c in old.acceptance_criteria}
    after = {c.id: c.description for c in new.acceptance_criteria}
    return {
        "added": [c for c in after if c not in before],
        "removed": [c for c in before if c not in after],
        "changed": [
            {"criterion": c, "from": before[c], "to": d} for c, d in after.items() if c in before and before[c] != d
        ],
    }


def _replan_changes(info: VersionInfo) -> Changes:
    assert info.changes is not None  # every version after the first was adopted by a replan, which records them
    return info.changes


def _steps_dropped(changes: Changes) -> Iterable[StepChange]:
    return (*changes.reset, *changes.removed)


def _criteria_dropped(changes: Changes) -> Iterable[StepChange]:
    return (*changes.criteria_reset, *(StepChange(step=c, cause="removed") for c in changes.criteria_removed))


def _first_drop(
    item: str, replans: Sequence[VersionInfo], dropped: Callable[[Changes], Iterable[StepChange]]
) -> tuple[int, StepChange] | None:
    """The first replan (its version) that reset or removed ``item``, and what it recorded."""
    for info in replans:
        change = next((c for c in dropped(_replan_changes(info)) if c.step == item), None)
        if change is not None:
            return info.version, change
    return None


def _kept_step(step: StepState) -> dict[str, Any]:
    return {"step": step.id, "attempt": step.attempt, "evidence": texts(step.evidence), "completed_seq": step.last_seq}


def _step_fates(before: PlanState, replans: Sequence[VersionInfo]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Completed work kept through every replan, and each step's first reset with the replan that did it."""
    kept: list[dict[str, Any]] = []
    reset: list[dict[str, Any]] = []
    for step in before.steps.values_in_order():
        done = step.status == "completed"
        drop = _first_drop(step.id, replans if done else replans[:1], _steps_dropped)
        if drop is not None:
            reset.append(_step_change(drop[1]) | {"at_version": drop[0]})
        elif done:
            kept.append(_kept_step(step))
    return kept, reset


def _criterion_fates(
    before: PlanState, verdicts: Mapping[int, Mapping[str, int]], old: int, replans: Sequence[VersionInfo]
) -> dict[str, Any]:
    """Verdicts of version ``old`` kept, reset by a replan, or replaced by a newer verdict in a version between
    (``verdicts``: each later version's verdict seq per criterion at its end)."""
    fates: dict[str, list[dict[str, Any]]] = {"kept": [], "reset": [], "reverified": []}
    for criterion in before.criteria.values_in_order():
        judged = criterion.status != "unverified"
        drop = _first_drop(criterion.id, replans if judged else replans[:1], _criteria_dropped)
        carried_to = old + len(replans) if drop is None else drop[0]
        replaced = next(
            (v for v in range(old + 1, carried_to) if judged and verdicts[v][criterion.id] != criterion.last_seq),
            None,
        )
        if replaced is not None:
            fates["reverified"].append({"criterion": criterion.id, "at_version": replaced})
        elif drop is not None:
            change = drop[1]
            fates["reset"].append(
                {
                    "criterion": criterion.id,
                    "cause": change.cause,
                    "was": change.was or criterion.status,
                    "at_version": drop[0],
                }
            )
        elif judged:
            fates["kept"].append(_kept_criterion(criterion))
    return fates


def _kept_criterion(criterion: CriterionState) -> dict[str, Any]:
    return {
        "criterion": criterion.id,
        "status": criterion.status,
        "evidence": optional_text(criterion.evidence),
        "verified_seq": criterion.last_seq,
    }


def diff_view(ends: Mapping[int, PlanState], versions: Sequence[VersionInfo], old: int, new: int) -> dict[str, Any]:
    """``plantrail diff``: plan version ``old`` against version ``new``.

    ``ends`` holds the state at the end of every version from ``old`` to ``new - 1`` (from
    :func:`replay_versions`); ``versions`` is any later state's version list (it must reach ``new``).

    The plans are compared as recorded, field by field (``depends_on`` as a set). The work is traced, not
    recomputed: starting from the state at the end of ``old``, through each replan up to ``new`` as that
    replan recorded it, so nothing is claimed that a direct reconcile of ``old`` against ``new`` would say
    but the run never did. A step completed at the end of ``old`` is ``kept`` if every replan kept it
    (a completed step cannot change inside a version), else ``reset`` at the first replan that dropped it,
    with that replan's cause and, for lineage, the upstream step that started it. A step that was not
    completed carries no work past the next replan, so only that replan's verdict on it is reported.
    Criteria likewise, except that a verdict may be recorded again inside a version: once a newer verdict
    replaced the old one, the criterion is listed under ``reverified`` instead. For adjacent versions this
    is exactly what the replan recorded.

    Shape: ``from``, ``to``, ``adjacent``; ``added`` and ``removed`` (step ids); ``changed``
    (``{step, fields: {name: {from, to}}}``); ``kept`` (``{step, attempt, evidence, completed_seq}``);
    ``reset`` (``{step, cause, was, attempt, upstream, fields, at_version}``); ``criteria`` with
    ``added``, ``removed``, ``changed`` (``{criterion, from, to}``), ``kept`` (``{criterion, status,
    evidence, verified_seq}``), ``reset`` (``{criterion, cause, was, at_version}``) and ``reverified``
    (``{criterion, at_version}``); ``policy`` (``{max_in_progress: {from, to}}``, or None if unchanged).
    """
    if not 1 <= old < new:
        raise error("USAGE", f"diff compares an earlier version with a later one, not v{old} with v{new}")
    if new > len(versions):
        raise error(
            "UNKNOWN_PLAN_VERSION",
            f"plan version {new} is not in the log (it has versions 1 to {len(versions)})",
            plan_version=new,
        )
    infos = {v: versions[v - 1] for v in range(old, new + 1)}
    return diff_traced(ends[old], infos, verdict_seqs(ends, range(old + 1, new)), old, new)


def verdict_seqs(ends: Mapping[int, PlanState], versions: Iterable[int]) -> dict[int, dict[str, int]]:
    """Each version's verdict seq per criterion at its end, from the states at the end of those versions."""
    return {v: criterion_seqs(ends[v]) for v in versions}


def criterion_seqs(state: PlanState) -> dict[str, int]:
    """The seq of each criterion's last verdict (or reset) in ``state``."""
    return {c.id: c.last_seq for c in state.criteria.values_in_order()}


def diff_traced(
    before: PlanState,
    infos: Mapping[int, VersionInfo],
    verdicts: Mapping[int, Mapping[str, int]],
    old: int,
    new: int,
) -> dict[str, Any]:
    """:func:`diff_view` from its parts: ``before`` is the state at the end of ``old``, ``infos`` every version
    from ``old`` to ``new`` as adopted, ``verdicts`` each version strictly between them's verdict seqs at its
    end (:func:`criterion_seqs`). These are small and known once each version ends, so an index can keep them.
    """
    if not 1 <= old < new:
        raise error("USAGE", f"diff compares an earlier version with a later one, not v{old} with v{new}")
    old_plan, new_plan = infos[old].plan, infos[new].plan
    replans = [infos[v] for v in range(old + 1, new + 1)]
    kept, reset = _step_fates(before, replans)
    before_steps = {s.id for s in old_plan.steps}
    after_steps = {s.id for s in new_plan.steps}
    policies = (_policy(old_plan.policy), _policy(new_plan.policy))
    return {
        "from": old,
        "to": new,
        "adjacent": new == old + 1,
        "added": [s.id for s in new_plan.steps if s.id not in before_steps],
        "removed": [s.id for s in old_plan.steps if s.id not in after_steps],
        "changed": _changed_steps(old_plan, new_plan),
        "kept": kept,
        "reset": reset,
        "criteria": _criteria_plan_diff(old_plan, new_plan) | _criterion_fates(before, verdicts, old, replans),
        "policy": None if policies[0] == policies[1] else {"max_in_progress": {"from": policies[0], "to": policies[1]}},
    }


# --------------------------------------------------------------------------- why, orphans


def quote_record(record: Record) -> dict[str, Any]:
    """A record quoted in full: ``seq``, ``ts``, ``actor``, ``type``, ``plan_version``, ``data``, ``h``
    (its hash), ``source`` when it was imported, and ``trace`` (``traceparent``, ``tracestate``) when its command
    carried a W3C trace context."""
    quoted: dict[str, Any] = {
        "seq": record.seq,
        "ts": record.ts,
        "actor": record.actor,
        "type": record.type,
        "plan_version": record.plan_version,
        "data": msgspec.to_builtins(record.data),
        "h": record.h,
    }
    if record.source is not None:
        quoted["source"] = plain(record.source)  # its format v2 ``meta`` only when set
    if record.trace is not None:
        quoted["trace"] = record.trace.as_json()
    return quoted


def replan_version(latest: int, version: int | None) -> int:
    """The replan ``why`` explains, checked against the ``latest`` version: ``version``, or the latest replan."""
    if version is None:
        if latest < 2:
            raise error("UNKNOWN_PLAN_VERSION", "the run was never replanned: it has only version 1", plan_version=2)
        return latest
    if version < 2:
        raise error("USAGE", "version 1 was created, not replanned; why explains versions 2 and later")
    if version > latest:
        raise error(
            "UNKNOWN_PLAN_VERSION",
            f"plan version {version} is not in the log (it has versions 1 to {latest})",
            plan_version=version,
        )
    return version


def why_view(records: Iterable[Record], final: History, version: int | None = None) -> dict[str, Any]:
    """``plantrail why``: the audit of the replan that created ``version`` (default: the latest replan).

    ``final`` is the history of the whole log (the late results may arrive at any time after the replan);
    ``records`` is the log again from its start: it is read only up to that replan, to quote the causing
    events and to rebuild the superseded version for the work it kept.

    Shape: ``version``, ``replaced`` (the version before), ``seq``, ``ts``, ``actor``, ``reason``, ``why``,
    ``observations``, ``patch`` (``{base_version, operations}`` or None), ``causes`` (each
    :func:`quote_record`), ``changes`` (:func:`diff_view` of the two versions) and ``late_results`` (the
    orphans stamped with the replaced version, as in ``orphans``).
    """
    version = replan_version(len(final.versions), version)
    info = final.versions[version - 1]
    wanted = {*info.causes, info.seq}
    quoted: dict[int, Record] = {}

    def tap() -> Iterator[Record]:
        for record in records:
            if record.seq in wanted:
                quoted[record.seq] = record
            yield record

    before = replay_version(tap(), version - 1).state
    return why_traced(final.versions[version - 2], info, before, quoted, final.state.orphans, final.state.lineage)


def why_traced(
    replaced: VersionInfo,
    info: VersionInfo,
    before: PlanState,
    quoted: Mapping[int, Record],
    orphans: Iterable[Orphan],
    lineage: Iterable[Fork] = (),
    carried: PlanState | None = None,
) -> dict[str, Any]:
    """:func:`why_view` from its parts: the version replaced and the one adopted, the state at the end of the
    replaced one, the records it quotes by seq (the replan and its causes), every late result of the log, the
    runs the log was forked from (``lineage``) and, for a fork, the parent's state it carries (``carried``: what
    the replan's parent causes are told from)."""
    version = info.version
    links = tuple(lineage)
    patch = getattr(quoted[info.seq].data, "patch", None) if info.seq in quoted else None
    parent_causes = getattr(quoted[info.seq].data, "parent_causes", ()) if info.seq in quoted else ()
    return {
        "version": version,
        "replaced": version - 1,
        "seq": info.seq,
        "ts": info.ts,
        "actor": info.actor,
        "reason": info.reason,
        "why": info.why,
        "observations": list(info.observations),
        "patch": None if patch is None else dataclasses.asdict(patch),
        "causes": [cause_view(quoted[seq]) for seq in info.causes if seq in quoted],
        "parent_causes": [
            {"run": links[-1].run, "seq": seq, "summary": parent_event(carried, links[-1], seq)}
            for seq in parent_causes
            if links
        ],
        "changes": diff_traced(before, {version - 1: replaced, version: info}, {}, version - 1, version),
        "late_results": [orphan_view(o) for o in orphans if o.plan_version == version - 1],
        "lineage": lineage_view(links),
    }


def cause_view(record: Record) -> dict[str, Any]:
    """A causing event as ``why`` quotes it: in full (:func:`quote_record`), but a fork's ``run.forked`` without
    the parent's state it carries (its ``state_hash`` names it), with a one-line ``summary`` instead."""
    from plantrail.ledger.vocabulary.events import RunForked

    quoted = quote_record(record)
    if isinstance(record.data, RunForked):
        quoted["data"] = {name: value for name, value in quoted["data"].items() if name != "state"}
        quoted["summary"] = forked_summary(record.data)
    return quoted


def _status_now(state: PlanState, step: str) -> str | None:
    current = state.steps.get(step)
    return None if current is None else current.status


def orphans_view(state: PlanState) -> list[dict[str, Any]]:
    """``plantrail orphans``: every late result in log order, never applied to the plan.

    Each item: ``seq``, ``type``, ``step``, ``plan_version`` (the version it was stamped with), ``attempt``,
    ``active_version`` (the version active when it arrived), ``why`` (``SUPERSEDED_VERSION``,
    ``STALE_ATTEMPT`` or ``RUN_FINISHED``), ``evidence``, ``reason``, and ``status_now``: the step's status
    in the active version (None when the active version has no such step).
    """
    return [orphan_view(o) | {"status_now": _status_now(state, o.step)} for o in state.orphans]


# --------------------------------------------------------------------------- resume

Verdict = Literal[
    "damaged", "finished", "partial", "in_doubt", "failed", "budget_exhausted", "paused", "stuck", "continue"
]


def resume_verdict(state: PlanState, *, damaged: bool = False, now: str | None = None) -> Verdict:
    """What to do first after a crash, by priority: repair, stop (finished), check steps in doubt, stop where
    the stop policy says so (failed for no progress, a budget or the deadline spent: a v2 plan only), resume
    a pause, replan a run where no step can start, check the targets of a ready step's side effects never
    known committed (in doubt too: the step would do them again), else continue."""
    if damaged:
        return "damaged"
    if state.outcome in ("partial", "budget_exhausted"):  # format v2's recorded outcomes have their own codes
        return "partial" if state.outcome == "partial" else "budget_exhausted"
    if state.finished:
        return "finished"
    if in_doubt(state):
        return "in_doubt"
    decision = stop_decision(state, now)
    if decision.outcome == "failed":
        return "failed"
    if decision.outcome == "budget_exhausted":
        return "budget_exhausted"
    if state.outcome == "paused" or decision.outcome == "paused":  # finish paused, or a scope or approval pause
        return "paused"
    idle = idle_repairs(state)  # a repair step nothing needs is no work left
    work_left = any(s.status != "completed" and s.id not in idle for s in state.steps.values_in_order())
    if state.plan is None or (work_left and not ready_steps(state)):
        return "stuck"
    if state.effects and _effects_before_start(state):
        return "in_doubt"  # a ready step's side effect may have happened: check its target before it starts
    return "continue"


def _effects_before_start(state: PlanState) -> list[str]:
    """What to check before each ready step starts again: its side effects never known committed."""
    return [f"{c['check']}; then start {c['step']}" for c in effects_to_check(state)]


def _next_action(state: PlanState, verdict: Verdict, damage: Mapping[str, Any] | None, now: str | None) -> str:
    match verdict:
        case "damaged":
            return _repair_action(damage)
        case "finished":
            return f"nothing to resume: the run finished {state.outcome} ({state.outcome_reason})"
        case "in_doubt":
            return _in_doubt_action(state, now)
        case "partial":
            lists = outcome_lists(state, "partial")
            return (
                f"the run finished partial ({state.outcome_reason}); a continuation resumes from "
                f"{', '.join(lists.resume_from) or 'nothing ready'} (not done: {', '.join(lists.not_done)})"
            )
        case "budget_exhausted" if state.finished:
            unmet = outcome_lists(state, "budget_exhausted").unmet
            return f"the run finished budget_exhausted ({state.outcome_reason}); unmet: {', '.join(unmet)}"
        case "paused" if stop_decision(state, now).outcome == "paused":
            return f"the stop policy says paused: {stop_decision(state, now).reason}"
        case "paused":
            return "the run is paused: start a ready step or replan to continue it"
        case "failed" | "budget_exhausted":
            decision = stop_decision(state, now)
            return f"the stop policy says {decision.outcome}: {decision.reason}; replan or finish"
        case "stuck" if state.plan is None:
            return "no step can start: the log has no plan yet"
        case "stuck":
            return f"no step can start: replan (advice: {advice(state) or 'no_ready_step'})"
    ready = ready_steps(state)
    if ready:
        return _start_action(state, ready, now)
    open_criteria = [c.id for c in state.criteria.values_in_order() if c.status != "passed"]
    if open_criteria:
        return f"verify {', '.join(open_criteria)}, then finish"
    return "every step and criterion is done: finish --outcome complete"


def _start_action(state: PlanState, ready: list[str], now: str | None) -> str:
    """Start every step that can start now (as ``next`` lists them), with the room left when not all fit under
    max_in_progress and what each repair step repairs; the first ready step when none can start now."""
    startable = startable_steps(state, now) or ready[:1]
    capacity = capacity_view(state)
    free = capacity["free"]
    room = ""
    if free is not None and 0 < free < len(startable):
        room = (
            f" (room for {free} more: max_in_progress {capacity['max_in_progress']}, "
            f"{capacity['in_progress']} in progress)"
        )
    repairs = {s: waiting_for(state, s) for s in startable}
    if len(startable) == 1 and repairs[startable[0]]:
        return f"start {startable[0]}: it repairs {', '.join(repairs[startable[0]])}, which failed and waits for it"
    said = [f"{s} repairs {', '.join(r)}, which failed and waits for it" for s, r in repairs.items() if r]
    return f"start {', '.join(startable)}{room}" + (f": {'; '.join(said)}" if said else "")


def _in_doubt_action(state: PlanState, now: str | None) -> str:
    """What to do about steps in doubt: abandon those whose lease expired (their worker is gone), and find
    out about the others; with none in progress, check the targets of the ready steps' side effects that are
    never known committed before they start again."""
    if not in_doubt(state):
        return "; ".join(_effects_before_start(state))
    cancelled = [s.id for s in in_doubt(state) if s.cancel is not None]
    if cancelled:  # an input changed under them: their work is void, whatever it did (lineage_digest)
        cancel = (
            f"an input changed under {', '.join(cancelled)}: stop its worker and abandon it (plantrail abandon LOG "
            f"{cancelled[0]} --reason ...); it becomes stale and runs again on the current inputs"
        )
        effects = [n for s in cancelled if (n := check_first(state, s)) is not None] if state.effects else []
        if effects:  # what the cancelled attempt may have done outside the log is still to check
            cancel = f"{cancel}; {'; '.join(effects)}"
        rest = [s for s in in_doubt(state) if s.cancel is None]
        return cancel if not rest else f"{cancel}; for the other steps in doubt, {_in_doubt_rest(state, now)}"
    return _in_doubt_rest(state, now)


def _in_doubt_rest(state: PlanState, now: str | None) -> str:
    """What to do about the steps in doubt that no input change cancelled."""
    doubt = [s for s in in_doubt(state) if s.cancel is None]
    expired = [e for e in expired_leases(state, now) if e["step"] in {s.id for s in doubt}]
    check = (
        "find out whether each step in doubt did its work, then record its result "
        "(complete, fail or block with --attempt) or replan"
    )
    effects = [note for s in doubt if (note := check_first(state, s.id)) is not None] if state.effects else []
    if effects:
        check = f"{check}; {'; '.join(effects)}"
    if not expired:
        return check
    gone = ", ".join(f"{e['step']} (attempt {e['attempt']}, expired {e['expires_at']})" for e in expired)
    first = expired[0]["step"]
    action = (
        f"the lease of {gone} expired: its worker is gone; abandon it (plantrail abandon LOG {first} "
        "--reason ...), which does not charge the attempt, or record its result"
    )
    return action if len(expired) == len(doubt) else f"{action}; for the other steps in doubt, {check}"


def _repair_action(damage: Mapping[str, Any] | None) -> str:
    code = None if damage is None else damage.get("code")
    if code == "TORN_TAIL":
        return "repair the torn tail first (plantrail repair LOG), then resume again"
    return f"the log is damaged ({code}) and cannot be repaired automatically: run plantrail verify LOG to locate it"


def resume_receipt(state: PlanState, damage: Mapping[str, Any] | None = None, now: str | None = None) -> dict[str, Any]:
    """``plantrail resume``: where a run stands after a crash and what to do next.

    ``state`` is the fold of the log's valid part; ``damage`` describes what stopped the read (a torn tail
    or damage further in: ``{code, message, ...}``), None for an intact log.

    Shape: ``verdict`` (:func:`resume_verdict`), ``next`` (one sentence), ``run``, ``goal``,
    ``plan_version``, ``finished``, ``outcome``, ``outcome_reason``, ``done`` (``{step, attempt, evidence,
    completed_seq}``), ``in_doubt`` (``{step, attempt, started_seq}``: started, no result), ``ready``,
    ``blocked`` (``{step, reason}``), ``stale`` (``{step, reason}``: format v2, an input changed), ``cancel``
    (``{step, attempt, reason}``: attempts to end with abandon, an input changed under them), and, for a run
    that records observations, ``possibly_stale`` and ``drift``; ``criteria_unverified`` and
    ``criteria_failed`` (ids), ``orphans``
    (as in ``orphans``), ``advice``, ``last_seq``, ``head_hash``, ``damage`` and ``stop`` (the stop policy's
    decision at ``now``: :func:`projections.stop.stop_decision`) and ``leases`` (every running attempt's
    lease at ``now``: :func:`projections.leases.lease_view`; each step in doubt says ``lease_expired``: true,
    false, or None without a lease).
    """
    verdict = resume_verdict(state, damaged=damage is not None, now=now)
    steps = list(state.steps.values_in_order())
    leases = lease_view(state, now)
    expired = {entry["step"]: entry["expired"] for entry in leases}
    criteria = list(state.criteria.values_in_order())
    return {
        "verdict": verdict,
        "next": _next_action(state, verdict, damage, now),
        "run": state.run,
        "goal": state.goal,
        "plan_version": state.version,
        "finished": state.finished,
        "outcome": state.outcome,
        "outcome_reason": state.outcome_reason,
        "done": [_kept_step(s) for s in steps if s.status == "completed"],
        "in_doubt": [
            {"step": s.id, "attempt": s.attempt, "started_seq": s.last_seq, "lease_expired": expired.get(s.id)}
            for s in in_doubt(state)
        ],
        "leases": leases,
        "ready": ready_steps(state),
        "blocked": [{"step": s.id, "reason": s.reason} for s in steps if s.status == "blocked"],
        "criteria_unverified": [c.id for c in criteria if c.status == "unverified"],
        "criteria_failed": [c.id for c in criteria if c.status == "failed"],
        "orphans": orphans_view(state),
        "advice": advice(state),
        "last_seq": state.last_seq,
        "head_hash": state.head,
        "damage": None if damage is None else dict(damage),
        "stop": stop_decision(state, now).as_dict(),
        "approvals": approvals_view(state),
        "repairs": repairs_view(state),
        "effects": effects_view(state),
        "stale": [{"step": s.id, "reason": s.reason} for s in steps if s.status == "stale"],
        "cancel": [{"step": s.id, "attempt": s.attempt, "reason": s.cancel} for s in steps if s.cancel is not None],
    } | _drift(state)


def _drift(state: PlanState) -> dict[str, Any]:
    """Whether the plan is possibly stale (format v2 observations; absent for a run that records none)."""
    from plantrail.projections.views import drift_view

    view = drift_view(state)
    return {} if not view else {"possibly_stale": view["possibly_stale"], "drift": view["drift"]}
