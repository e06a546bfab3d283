"""A run's plan versions, whichever store holds it: one fold of its records reports every version adopted, and
the diffs and replan audits are answered from those versions. The file store may answer from its history
index instead (:mod:`plantrail.ledger.stores.jsonl.reads`); the answers are the same."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, NamedTuple

from plantrail.ledger.vocabulary.errors import error
from plantrail.projections.history import criterion_seqs, diff_traced, fold_span, replan_version, why_traced

if TYPE_CHECKING:
    from plantrail.ledger.stores.values import TornTail
    from plantrail.ledger.vocabulary.events import Record
    from plantrail.projections.model import PlanState, VersionInfo

__all__ = [
    "VersionEntry",
    "Versions",
    "before_fork",
    "diff_of",
    "listed_versions",
    "unknown_version",
    "versions_in",
    "why_of",
]


class VersionEntry(NamedTuple):
    """One plan version as adopted, and ``ended``: each criterion's verdict seq at the end of the version before
    it (None for version 1)."""

    info: VersionInfo
    ended: tuple[tuple[str, int], ...] | None


class Versions(NamedTuple):
    """A log's plan versions: ``total`` of them (the last is the active one), read by :meth:`entries`; the run
    id, the torn tail the read of the log ended on, and ``ending``: the state at the end of a version."""

    run: str | None
    total: int
    torn: TornTail | None
    entries: Callable[[int, int], list[VersionEntry]]
    ending: Callable[[int], PlanState]
    first: int = 1  # the first version the log adopted itself (a fork starts at the version it carries)
    final: PlanState | None = None  # the state at the end of the log, when the read folded all of it

    def entry(self, version: int) -> VersionEntry:
        """One version's entry."""
        return self.entries(version, version)[0]


def versions_in(
    records: Iterable[Record],
    state: PlanState,
    add: Callable[[VersionEntry, Any, PlanState], None],
    *,
    where: Callable[[], Any] = lambda: None,
    known: VersionInfo | None = None,
    at_end: Callable[[int, PlanState], None] | None = None,
) -> tuple[PlanState, bool]:
    """Fold ``records`` from ``state`` to their end, reporting every version adopted on the way with ``where()``
    as it stood just after the adopting record (a file reader's position; nothing for other stores) and the
    state just after it; return the final state, and whether the version ``state`` is in ends up other than
    ``known`` (what an entry made for it before says; then that entry is stale: the version was extended in
    place since). Any store's records.

    A version is reported once its span is folded, so its entry holds the version with every step added to it
    in place (``plan.extended``); the active version is reported as it stands at the end of the records. With
    ``at_end``, each version's number and its state at its end (when superseded, or at the end of the records)
    are reported too."""
    stream = iter(records)
    waiting: tuple[VersionEntry, Any, PlanState] | None = None
    stale = False
    while True:
        span, after = fold_span(stream, state)
        if at_end is not None and span.state.version:
            at_end(span.state.version, span.state)
        if waiting is not None:
            entry, at, adopting = waiting
            assert span.state.adopted is not None  # the span of a version that was adopted
            add(entry._replace(info=span.state.adopted), at, adopting)
        else:
            stale = known is not None and span.state.adopted != known
        if after is None:
            return span.state, stale
        assert after.adopted is not None  # a version changes only by a record that adopts one
        ended = None if span.state.version == 0 else tuple(criterion_seqs(span.state).items())
        waiting = (VersionEntry(after.adopted, ended), where(), after)
        state = after


def listed_versions(
    found: list[VersionEntry], run: str | None, torn: TornTail | None, ending: Callable[[int], PlanState]
) -> Versions:
    """The :class:`Versions` of every version a fold of a whole log found, in order (any store's log)."""
    base = found[0].info.version if found else 1  # a fork's first version is the one it carries

    def entries(first: int, last: int) -> list[VersionEntry]:
        return found[max(first - base, 0) : max(last - base + 1, 0)]

    return Versions(run, base - 1 + len(found), torn, entries, ending, base)


def unknown_version(wanted: int, count: int) -> Exception:
    return error(
        "UNKNOWN_PLAN_VERSION",
        f"plan version {wanted} is not in the log (it has versions 1 to {count})",
        plan_version=wanted,
        expected=count,
    )


def before_fork(wanted: int, first: int) -> Exception:
    return error(
        "UNKNOWN_PLAN_VERSION",
        f"this run is a fork that starts at plan version {first}: version {wanted} and its replan are in the "
        "parent run's log (status names it)",
        plan_version=wanted,
        expected=first,
    )


def diff_of(found: Versions, old: int, new: int) -> tuple[dict[str, Any], PlanState]:
    """:func:`version_diff` over any store's :class:`Versions`."""
    if new > found.total:
        raise unknown_version(new, found.total)
    if old < found.first:
        raise before_fork(old, found.first)
    entries = found.entries(old, new)
    infos = {entry.info.version: entry.info for entry in entries}
    verdicts = {entry.info.version - 1: dict(entry.ended or ()) for entry in entries[2:]}
    return diff_traced(found.ending(old), infos, verdicts, old, new), found.ending(new)


def why_of(found: Versions, version: int | None, quote: Callable[[int], Record], current: PlanState) -> dict[str, Any]:
    """:func:`replan_audit`'s document over any store's :class:`Versions`, records read by seq with ``quote``."""
    version = replan_version(found.total, version)
    if version <= found.first:
        raise before_fork(version, found.first)
    replaced, adopted = (entry.info for entry in found.entries(version - 1, version))
    before = found.ending(version - 1)
    quoted = {seq: quote(seq) for seq in sorted({*adopted.causes, adopted.seq})}
    carried = None
    if current.lineage and getattr(quoted[adopted.seq].data, "parent_causes", ()):
        from plantrail.ledger.vocabulary.events import RunForked
        from plantrail.projections.lineage import carried_state

        forked = quote(1).data  # a fork's seq 1 is its run.forked, which carries the parent's state
        carried = carried_state(forked) if isinstance(forked, RunForked) else None
    return why_traced(replaced, adopted, before, quoted, current.orphans, current.lineage, carried)
