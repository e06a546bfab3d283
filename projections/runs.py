"""A run in one row: what its log says it stands at now, for a list of many runs."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any, Final, NamedTuple

__all__ = ["AGENTS_BY_ADAPTER", "AGENTS_BY_TOOL", "RunRow", "agent_of", "kept_row", "matches", "summarise"]


class RunRow(NamedTuple):
    """One run as its log says it stands: ``replans`` counts the versions adopted after the first, ``reasons``
    their reason codes in order; ``damage`` is the code of the damage that cut the read short (the row then
    says what the valid part says), None for a whole log."""

    run: str | None
    goal: str | None
    outcome: str | None
    plan_version: int
    last_activity: str | None
    replans: int
    orphans: int
    last_seq: int
    location: str
    reasons: tuple[str, ...] = ()
    damage: str | None = None
    #: The dialect that recorded the run (:func:`agent_of`), None when its first plan event does not say; read
    #: only when a filter or a caller asks (:func:`plantrail.ledger.runs.with_details`).
    agent: str | None = None
    #: The titles of the active plan's steps, read with ``agent``.
    titles: tuple[str, ...] = ()

    def as_dict(self) -> dict[str, Any]:
        """The ``runs --json`` item, with ``reasons`` as the count of replans per reason code."""
        item = self._asdict()
        item["reasons"] = dict(sorted(Counter(self.reasons).items()))
        del item["titles"]
        return item


def summarise(
    state: Any, last_activity: str | None, reasons: Sequence[str], location: str, damage: str | None = None
) -> RunRow:
    """The row of a run whose folded state is ``state`` (a :class:`~plantrail.projections.model.PlanState`)."""
    return RunRow(
        run=state.run,
        goal=state.goal,
        outcome=state.outcome,
        plan_version=state.version,
        last_activity=last_activity,
        replans=max(state.version - 1, 0),
        orphans=len(state.orphans),
        last_seq=state.last_seq,
        location=location,
        reasons=tuple(reasons),
        damage=damage,
    )


def kept_row(
    run: str | None,
    goal: str | None,
    outcome: str | None,
    plan_version: int,
    last_activity: str | None,
    orphans: int,
    last_seq: int,
    location: str,
    reasons: Sequence[str] = (),
) -> RunRow:
    """The row of a run from what a store kept of it (a snapshot's summary, a database's summary row): the same
    row :func:`summarise` gives its folded state."""
    return RunRow(
        run=run,
        goal=goal,
        outcome=outcome,
        plan_version=plan_version,
        last_activity=last_activity,
        replans=max(plan_version - 1, 0),
        orphans=orphans,
        last_seq=last_seq,
        location=location,
        reasons=tuple(reasons),
    )


#: The agent each adapter that reads an agent's own words stands for (a hook adapter, a transcript parser).
AGENTS_BY_ADAPTER: Final = {
    "claude-code": "claude-code",
    "claude-code-hooks": "claude-code",
    "codex": "codex",
    "cline": "cline",
    "gemini": "gemini",
    "gemini-jsonl": "gemini",
    "gemini-share": "gemini",
    "gemini-cli-hooks": "gemini",
    "opencode": "opencode",
    "opencode-hooks": "opencode",
    "opencode-markdown": "opencode",
}
#: The agent whose plan tool an imported or captured plan came from, when its source names no adapter.
AGENTS_BY_TOOL: Final = {
    "TodoWrite": "claude-code",
    "ExitPlanMode": "claude-code",
    "TaskCreate": "claude-code",
    "TaskUpdate": "claude-code",
    "update_plan": "codex",
    "todowrite": "opencode",
    "write_todos": "gemini",
}


def agent_of(source: Any) -> str | None:
    """The dialect that recorded a run, from its first plan event's ``source`` (a
    :class:`~plantrail.ledger.vocabulary.events.Source` or None): the ``agent`` its meta names (``mcp``,
    ``acp:<agent>`` …), else the agent of the adapter its meta names, else the agent of the plan tool it names;
    None when the event says none of these (a plan given directly, through the library or ``plantrail create``)."""
    if source is None:
        return None
    meta = source.meta or {}
    named = meta.get("agent")
    if isinstance(named, str) and named:
        return named
    adapter = meta.get("adapter")
    if isinstance(adapter, str) and adapter:
        return AGENTS_BY_ADAPTER.get(adapter, adapter)
    tool = source.tool
    return None if tool is None else AGENTS_BY_TOOL.get(tool)


def matches(row: RunRow, text: str) -> bool:
    """Whether ``text`` occurs in the run's goal or one of its step titles (case-insensitive; ``row`` read with
    its details)."""
    needle = text.casefold()
    return needle in (row.goal or "").casefold() or any(needle in title.casefold() for title in row.titles)
