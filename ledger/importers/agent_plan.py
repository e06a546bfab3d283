"""The agent's own plan after each update: observations folded into whole, keyed item lists (pure).

A whole-list update (TodoWrite, update_plan, todowrite, a Cline checklist) replaces the agent's list;
a task-tool event (TaskCreate, TaskUpdate) changes one task of its board. The agent's plan is the list
followed by the board, so a session that uses both keeps both.

Identity:
* A list item is known by its text (trimmed), never by a position label: old TodoWrite and OpenCode ids
  are positions that agents reuse for other items. The same text twice in one list is two items, told
  apart by their order of occurrence. An item reworded is a different item (the old one is gone).
* A task is known by the id the task tool gave it; its subject is its title, so a renamed task keeps
  its identity with a new title.

What is not an item of the plan: an item with blank text (it has nothing to record), an item marked
`cancelled` (OpenCode, Gemini: the agent took it out of its plan; the fact is kept as a note), a deleted
task. A Gemini item marked `blocked` stays in the plan as pending, with a note: the ledger's block needs a
reason, and the list gives none.
An update the tool rejected (except a plan the user denied: their decision, recorded as such), a task created
without a result (no id to follow it by) and an update of a task never created in the imported files are
skipped with a reason, never fatal.
"""

from __future__ import annotations

from collections import Counter
from typing import Literal, TypeAlias

import msgspec

from .model import ListSnapshot, Observation, TaskEvent, TodoItem

__all__ = ["AgentPlan", "ItemStatus", "Key", "PlanItem", "Update", "location"]

ItemStatus = Literal["pending", "in_progress", "completed"]
Key: TypeAlias = tuple[str, str, int]
"""("todo", text, occurrence) for a list item, ("task", task id, 1) for a task."""

_STATUSES: dict[str, ItemStatus] = {"pending": "pending", "in_progress": "in_progress", "completed": "completed"}
_DOCUMENT_FORMATS = frozenset({"opencode", "cline", "gemini"})


def location(format_name: str, line: int) -> str:
    """How to cite a place in a transcript: a line of a JSONL file or a message of a JSON document."""
    unit = "message" if format_name in _DOCUMENT_FORMATS else "line"
    return f"{unit} {line}"


class PlanItem(msgspec.Struct, frozen=True):
    """One item of the agent's plan: its identity, its text, its status, and how to name it in prose."""

    key: Key
    title: str
    status: ItemStatus
    label: str
    notes: tuple[str, ...] = ()
    """What the agent wrote about the item beyond its text: its priority label, the item it nests under,
    a task's description (step notes, `mapping`)."""


class Update(msgspec.Struct, frozen=True):
    """One plan update from `file`: the agent's whole plan after it, or the reason it was skipped.

    `notes` are facts the update shows that its items do not: items marked cancelled, blank items
    ignored, a list the tool had emptied on its own before this write.
    """

    file: str
    observation: Observation
    items: tuple[PlanItem, ...] = ()
    notes: tuple[str, ...] = ()
    skipped: str | None = None


class AgentPlan(msgspec.Struct):
    """Folds observations, in order, into the agent's plan after each one."""

    format: str
    todo: tuple[PlanItem, ...] = ()
    tasks: dict[str, PlanItem] = msgspec.field(default_factory=dict)

    def read(self, file: str, observation: Observation) -> Update:
        """The agent's plan after `observation` (written in `file`), or why it is skipped."""
        denied = isinstance(observation, ListSnapshot) and observation.decision == "denied"
        if observation.result == "error" and not denied:
            return Update(file, observation, skipped="rejected_by_tool")
        if isinstance(observation, ListSnapshot):
            return self._replace_list(file, observation)
        return self._change_task(file, observation)

    def _items(self) -> tuple[PlanItem, ...]:
        return (*self.todo, *self.tasks.values())

    def _replace_list(self, file: str, snapshot: ListSnapshot) -> Update:
        notes: list[str] = []
        if snapshot.replayed is not None:
            notes.append(f"replayed when the session was resumed at {snapshot.replayed}: the work is older than that")
        if snapshot.prior_items == () and self.todo:
            where = location(self.format, snapshot.result_line or snapshot.line)
            notes.append(f"the tool's answer at {where} shows the list was already empty before this write")
        seen: Counter[str] = Counter()
        items: list[PlanItem] = []
        for item in snapshot.items:
            text = item.text.strip()
            if not text:
                notes.append("an item with no text was ignored")
            elif item.status == "cancelled":
                notes.append(f'"{text}" is marked cancelled, so it is no longer part of the plan')
            else:
                seen[text] += 1
                key: Key = ("todo", text, seen[text])
                status = _STATUSES.get(item.status, "pending")
                if item.status == "blocked":
                    notes.append(f'"{text}" is marked blocked (recorded as pending: the agent gave no reason)')
                items.append(PlanItem(key, text, status, f'"{text}"', _item_notes(item)))
        self.todo = tuple(items)
        return Update(file, snapshot, self._items(), tuple(notes))

    def _change_task(self, file: str, event: TaskEvent) -> Update:
        skipped = self._create_task(event) if event.kind == "created" else self._update_task(event)
        if skipped is not None:
            return Update(file, event, skipped=skipped)
        return Update(file, event, self._items())

    def _create_task(self, event: TaskEvent) -> str | None:
        title = (event.subject or event.description or "").strip()
        if event.task_id is None:
            return "task_without_id"
        if event.task_id in self.tasks:
            return "task_created_twice"
        if not title:
            return "task_without_subject"
        self.tasks[event.task_id] = _task(event.task_id, title, "pending", _description(event, title))
        return None

    def _update_task(self, event: TaskEvent) -> str | None:
        current = self.tasks.get(event.task_id or "")
        if event.task_id is None or current is None:
            return "unknown_task"
        title, notes = current.title, current.notes
        if "description" in (event.updated_fields or ()) and event.description is not None:
            notes = _description(event, title)
        if event.subject and event.subject.strip() and "subject" in (event.updated_fields or ()):
            title = event.subject.strip()
        if event.status_to == "deleted":
            del self.tasks[event.task_id]
            return None
        status = current.status if event.status_to is None else _STATUSES.get(event.status_to)
        if status is None:
            return "unknown_task_status"
        self.tasks[event.task_id] = _task(event.task_id, title, status, notes)
        return None


def _task(task_id: str, title: str, status: ItemStatus, notes: tuple[str, ...]) -> PlanItem:
    return PlanItem(("task", task_id, 1), title, status, f'task #{task_id} "{title}"', notes)


def _item_notes(item: TodoItem) -> tuple[str, ...]:
    """The agent's own detail about a list item, one fact a note."""
    notes = []
    if item.priority is not None:
        notes.append(f'the agent gave it priority "{item.priority}"')
    if item.parent is not None:
        notes.append(f'a sub-item of "{item.parent.strip()}"')
    return tuple(notes)


def _description(event: TaskEvent, title: str) -> tuple[str, ...]:
    """A task's description as the agent wrote it (none when blank or the same as its title)."""
    text = (event.description or "").strip()
    return () if not text or text == title else (f"description: {text}",)
