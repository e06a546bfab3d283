"""Plan updates seen in a transcript -> the ledger commands that record them (pure; nothing is written).

The rules, and why:

* **The plan.** The first update that lists at least one item creates the plan (`plan.created`, actor
  `agent`: the agent wrote the list; the importer only transcribed it). Steps are the agent's items, titled
  with the item's text; a step's id is a slug of its first title (ASCII letters, digits and dashes, at most
  40 characters), with `-2`, `-3` ... added in order of first appearance when two items would share one; a
  title whose letters are mostly not Latin (Chinese, say) gets `item-N` instead, N its place in order of
  first appearance, since a slug of it would say nothing. Todo lists state no order constraints, so steps
  have no dependencies; the agent's order is kept as the steps' `priority` (the first item 0, the next -1,
  ...: higher first), so status, next and resume list them as the agent does. Every step's completion
  evidence says what completion means here: "the agent marks this item completed in its plan". Nothing
  else is invented: no step gets an attempt limit (``max_attempts`` None, format v2: the agent stated none);
  what the agent wrote beyond the title (an item's priority label, the item a sub-item nests under, a task's
  description) is kept as the step's notes, and every plan version notes the adapter and its version.
* **The goal** is the request the plan answers (:mod:`.goal`): the first user message of the session before
  the first plan update that asks for something (a *substantive* one, of at least 4 words and 20 characters
  once whitespace is collapsed, so "Go", "OK, let's start" and the like are passed over; a slash command with
  arguments or an expansion); failing that, the last user message before it; failing that, a fallback that
  names the session. A slash command's goal is its purpose in plain words, a templated prompt's its first
  sentence of substance, and then the whole message is kept in version 1's notes ("transcript line N: the
  user's prompt in full: ..."). It is cut at 200 characters. The user's later messages before the first plan
  (follow-ups, a pasted template) are kept as notes of version 1 ("transcript line N: the user also wrote:
  ..."). The one acceptance criterion restates the request; nothing in a transcript
  verifies it, so it stays `unverified`. No `run.finished` is ever written: a session that ends is not a
  run that finished.
* **Extending in place.** An update that only adds items after the version's own (each unchanged, so the new
  ones come last), to a version no work has touched since it was adopted (no start or completion since: the
  mapper's ``touched``), and that no user decided (no verdict on it, no words of theirs since the previous
  update of the file) is no replan: an agent writing its list one item at a time before starting any (a
  TaskCreate burst) is still writing one plan. It is a `plan.extended` (format v2) of the new steps, by the
  agent, its observations citing the items added. :func:`added_in_place` is the decision, a pure function of
  the two lists and the version's touched-ness, so live capture (one TaskCreate at a time) makes the same.
* **Replans.** Any other update that adds, removes or renames items (a reworded, merged or split item is a
  removal plus an addition: identity is by text) is a `plan.replanned` with the new whole list. Its reason
  is `user_request` when the user decided it (an ExitPlanMode plan they edited before approving it: the why
  says so) or wrote between the previous plan update of the same file and this one (their
  words in a tool's answer count: a refused call's "the user said: ..." is a message from them), else
  `agent_revision`. Its why quotes the transcript: the user's message, else the agent's own words
  before the update (Codex `explanation`, Claude Code text), else it says that no reason was given. The
  observations cite each fact as "transcript line N: ...": the quotes in full, each item added, removed,
  renamed or reopened, cancelled items, and a list the tool had emptied by itself. Causes stay empty:
  a replan's causes are seqs of log events, and what caused an imported replan is a transcript line, not an
  event; the line is cited in the event's source (file, line, the call's id and timestamp) and in the
  observations rather than pinned on an unrelated event. A reorder alone is a replan too (the priorities
  change); the steps it moves keep their status, since priority is no part of a step's contract.
* **Approvals.** An ExitPlanMode call asks the user "approve this plan?" and its answer is their decision, so
  it is recorded as one (docs/contract.md "Approvals"): the version the proposal becomes (created, replanned,
  or the active one when unchanged) is followed by an `approval.requested` (``plan-approval-N``, the question
  APPROVAL_QUESTION, every step of the version; actor `importer`, inferred: the agent asked through its tool,
  not the ledger) and the user's `approval.granted` or `approval.denied` (actor and ``by`` "user"; why: "the
  user approved the plan [with their edits] at line L" or "the user rejected the plan at line L: "<their
  words>""; its source cites the answer's line and time; the commands share the update's batch and time, as
  live capture keys one batch per update). An approval with edits grants the proposal, and the edited plan is
  the next version (a `user_request` replan, below). A refusal: the denied proposal is still a version (what
  the agent proposed; the denial pauses the run, as the contract says), and the next plan update answers it:
  always a replan (no extension, not nothing when the list is unchanged), each step it keeps from the denied
  version noted "proposed again at line N after the user denied the plan at line M" (the agent's new proposal
  changes them, so the replan ends the pause: a replan that removes or changes the denied steps does), and
  completions it shows are recorded after that replan, never in the paused version. A denial nothing answers
  leaves the run paused: the story as lived. A refused call of another tool is no denial (no question was
  asked): the user's words there make the next replan theirs.
* **Status changes.** pending -> in_progress is a `step.started`; in_progress -> completed a
  `step.completed` with the evidence "marked completed by the agent in <tool> at line N". Where the ledger
  needs an event the agent never emitted, the importer writes it with actor `importer` and
  `source.inferred = true`: the start before a completion that skipped in_progress (or of an item born
  completed), and the new start of an item still in progress after a replan (a replan supersedes work in
  progress, docs/semantics.md "What a replan keeps"). Completions of items the update keeps are recorded against the old
  version, before the replan, so that a replan never throws away work the transcript shows done.
* **Going back.** The ledger cannot move a step backwards. An item the agent moves from in_progress back
  to pending is recorded as a replan (the step is superseded, hence pending, in the new version); an item
  it reopens after completing it gets a new completion evidence ("... again: the agent reopened it at line
  N"), a contract change, so the replan resets it to pending, and it is started or completed again as the
  transcript goes on. Except in Cline: its checklist has no in-progress mark, and a box unchecked after being
  checked states no new terms, so the step keeps its contract and its completion (the ledger never moves a
  step backwards); the replan notes that the item is pending again, and the step's notes carry the
  conclusion, marked "inferred:".
* **Emptied lists** (an agent that clears its list, or Claude Code emptying it once all is done) write
  nothing: the agent's plan simply ends, and the next list is compared with the last plan recorded.
* **Concurrency.** `max_in_progress` is the largest number of steps the imported log has in progress at
  once, at least 1. Within an update, completions come first and starts last, so this is the agent's own
  peak, except where an item goes from pending to completed while another stays in progress: its inferred
  start then needs one more slot for an instant (none of the real transcripts we test on does this).
* **Time.** Each event is stamped with its update's transcript timestamp; where the format has none
  (older Cline, legacy Codex, the Markdown exports), with 1970-01-01T00:00:00Z plus the line or message
  number in seconds, and `source.timestamp` stays empty so that nobody mistakes it for a real time
  (:mod:`ledger.times` reads that mark back: status, resume and log then say the times were not recorded).
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from types import MappingProxyType

import msgspec

from plantrail.ledger.rules.approvals import Decide, RequestApproval
from plantrail.ledger.rules.decide import Command, Complete, Create, Extend, Replan, Start
from plantrail.ledger.vocabulary.contract import StepTerms
from plantrail.ledger.vocabulary.cut import cut, one_line
from plantrail.ledger.vocabulary.events import Actor, ReasonCode, Source
from plantrail.ledger.vocabulary.evidence import Report, Usage
from plantrail.ledger.vocabulary.plan import CriterionSpec, PlanSpec, Policy, StepSpec

from ._records import add_usage
from .agent_plan import AgentPlan, ItemStatus, Key, PlanItem, Update, location
from .errors import transcript_error
from .goal import purpose, request, slash_command
from .model import ListSnapshot, Observation, TaskEvent

__all__ = [
    "Batch",
    "FileFigures",
    "LiveMapping",
    "MappedRun",
    "added_in_place",
    "map_updates",
    "slug",
    "with_their_version",
]


def with_their_version(commands: Sequence[Command], version: int) -> list[Command]:
    """An update's commands with each completion stamped with the plan version it belongs to, when the batch is
    written to a log whose active version is ``version``: every completion the mapping makes is of an attempt it
    started in the version active at that point of the batch (a replan in the batch moves it on by one). The
    mapper is the worker that knows this; a completion naming nothing could be taken for an attempt one of its
    own replans cut off (AMBIGUOUS_ATTEMPT)."""
    stamped: list[Command] = []
    for command in commands:
        if isinstance(command, Replan):
            version += 1
        elif isinstance(command, Complete) and command.plan_version is None and command.started_seq is None:
            command = msgspec.structs.replace(command, plan_version=version)
        stamped.append(command)
    return stamped


EVIDENCE = "the agent marks this item completed in its plan"
APPROVAL_QUESTION = "approve this plan?"
CRITERION_ID = "request-met"
GOAL_LIMIT = 200
WHY_LIMIT = 300
NOTE_LIMIT = 500
SLUG_LIMIT = 40
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


class Batch(msgspec.Struct, frozen=True):
    """The commands one plan update gives, and the time to record them at."""

    ts: str
    commands: tuple[Command, ...]
    update: int = 0
    """The place of the plan update that gave these commands in the mapped sequence (0 for the first): what
    live capture and ``import --append`` key each batch by (`ledger.capture`)."""


class FileFigures(msgspec.Struct, frozen=True):
    """What the updates of one file (the lead's, a subagent's) gave: items first seen there, versions made (the
    plan and its replans), extensions in place, events (inferred ones among them), and updates skipped by reason."""

    file: str
    updates: int
    items: int
    versions: int
    extensions: int
    events: int
    inferred: int
    skipped: Mapping[str, int]


class MappedRun(msgspec.Struct, frozen=True):
    """A transcript's plan updates as ledger commands (the first batch opens with the `Create`) and figures."""

    batches: tuple[Batch, ...]
    plan_updates: int
    versions: int
    completions: int
    inferred: int
    max_in_progress: int
    skipped: Mapping[str, int]
    untimed: int = 0
    items: int = 0
    extensions: int = 0
    files: tuple[FileFigures, ...] = ()
    """The figures of each file, in order of its first update (their sums are the run's)."""


def map_updates(
    observations: Sequence[tuple[str, Observation]],
    *,
    format: str,
    session: str,
    notes: Sequence[str] = (),
    live: bool = False,
) -> MappedRun:
    """Map (file name, observation) pairs, in order, to ledger commands; NO_PLAN_IN_TRANSCRIPT if none lists an
    item. ``notes`` are facts about the files (a subagent's metadata) that version 1 notes.

    ``live`` maps a transcript that is still growing (hooks, ``import --follow`` and ``--append``): each
    batch's plan must be valid when it is written, before the agent's peak is known, so every version leaves
    ``max_in_progress`` unlimited (the agent's own tool keeps its focus) instead of the whole transcript's peak.
    """
    mapper = _Mapper(format=format, session=session, file_notes=tuple(notes))
    agent = AgentPlan(format=format)
    for place, (file, observation) in enumerate(observations):
        mapper.apply(agent.read(file, observation), place)
    return mapper.result(len(observations), live=live)


class LiveMapping(msgspec.Struct):
    """The same mapping, fed one update at a time (live capture, which keeps it between hook calls): the
    batches each update gives, as ``map_updates(..., live=True)`` gives them for the whole sequence.

    Plain data (msgspec), so that live capture keeps it between calls as data, never as code: :meth:`start`
    makes one, and a kept one decodes with its types checked."""

    mapper: _Mapper
    agent: AgentPlan
    place: int = 0

    @classmethod
    def start(cls, *, format: str, session: str, notes: Sequence[str] = ()) -> LiveMapping:
        """The mapping before the first update."""
        return cls(_Mapper(format=format, session=session, file_notes=tuple(notes)), AgentPlan(format=format))

    def apply(self, file: str, observation: Observation) -> list[Batch]:
        """The batches of the next update (none when it changes nothing the ledger records)."""
        start = len(self.mapper.batches)
        self.mapper.apply(self.agent.read(file, observation), self.place)
        self.place += 1
        new = self.mapper.batches[start:]
        del self.mapper.batches[start:]  # a live mapping keeps its state, not its output
        return new

    def knows_task(self, task_id: str) -> bool:
        """Whether the agent's board holds the task (an update of any other is skipped as unknown_task)."""
        return task_id in self.agent.tasks


def added_in_place(
    old: Mapping[Key, StepSpec], new: Mapping[Key, StepSpec], *, touched: bool, decided_by_user: bool = False
) -> tuple[StepSpec, ...] | None:
    """The steps an update adds to the current version in place (``plan.extended``), or None for a replan.

    An update extends the version when only the agent's own additions happened: the version is untouched
    (no start, result or verdict since it was adopted: ``touched`` is false), every step of it stays with the
    very same spec (so the same text, evidence and place in the agent's order: the new items come last), at
    least one item is new, and no user decided it (``decided_by_user``: an approval, or their words since the
    previous update, make it a ``user_request`` replan that quotes them). Anything else is a replan. Pure:
    the importer passes its mirror of the ledger's state, a live hook the log's own
    (``ledger.rules.extension.touched``).
    """
    if touched or decided_by_user or len(new) <= len(old):
        return None
    if any(key not in new or new[key] != spec for key, spec in old.items()):
        return None
    return tuple(spec for key, spec in new.items() if key not in old)


def slug(text: str) -> str:
    """A step id for an item's text: lower-case ASCII words joined by dashes, bounded; a hash when none is left."""
    ascii_text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode()
    words = re.sub(r"[^a-z0-9]+", "-", ascii_text.lower()).strip("-")
    if len(words) > SLUG_LIMIT:
        cut = words[:SLUG_LIMIT]
        words = cut.rsplit("-", 1)[0] if "-" in cut else cut
    return words or "item-" + hashlib.sha256(text.encode()).hexdigest()[:8]


def _said(text: str) -> str:
    """A user's message as a note quotes it: a slash command in plain words (``/review-pr 123``), else as written."""
    return purpose(text).goal if slash_command(text) is not None else text


def _readable(title: str) -> bool:
    """Whether a slug can say what a title says: most of its letters have an ASCII form."""
    letters = [c for c in title if c.isalpha()]
    latin = sum(1 for c in letters if unicodedata.normalize("NFKD", c).encode("ascii", "ignore"))
    return bool(letters) and 2 * latin >= len(letters)


def _timestamp(observation: Observation) -> str:
    if observation.timestamp:
        return observation.timestamp
    moment = _EPOCH + timedelta(seconds=observation.line)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _tool(observation: Observation) -> str:
    if isinstance(observation, ListSnapshot):
        return observation.tool
    return "TaskCreate" if observation.kind == "created" else "TaskUpdate"


def _who(agent: str | None) -> str:
    if agent is not None and agent.startswith("subagent:"):
        return f"subagent {agent.removeprefix('subagent:')}"
    return "a subagent" if agent == "subagent" else "the agent"


class _StepIds(msgspec.Struct):
    """Stable step ids: one per item identity, for the whole import."""

    ids: dict[Key, str] = msgspec.field(default_factory=dict)
    used: set[str] = msgspec.field(default_factory=set)
    titles: dict[str, str] = msgspec.field(default_factory=dict)
    why: dict[str, str] = msgspec.field(default_factory=dict)
    """Why an id has a numeric suffix, for the ids that have one (a step note)."""

    def of(self, item: PlanItem) -> str:
        """The step id of `item`, chosen the first time its identity is seen."""
        found = self.ids.get(item.key)
        if found is not None:
            return found
        occurrence = item.key[2]
        stem = slug(item.title) if _readable(item.title) else f"item-{len(self.ids) + 1}"
        base = stem if occurrence == 1 else f"{stem}-{occurrence}"
        candidate, n = base, 1
        while candidate in self.used:
            n += 1
            candidate = f"{base}-{n}"
        if occurrence > 1:
            self.why[candidate] = f"occurrence {occurrence} of this text in the agent's list (hence the -{occurrence})"
        elif candidate != base:
            self.why[candidate] = f'the id {base} was taken by the earlier item "{self.titles[base]}"'
        self.ids[item.key] = candidate
        self.used.add(candidate)
        self.titles[candidate] = item.title
        return candidate


class _Mapper(msgspec.Struct, dict=True):
    """The ledger as the mapper mirrors it (plan, step statuses), the agent's last view, and the output.

    Its fields are its state (live capture keeps them as data between hook calls); the output, ``batches``, is
    an attribute of the object, not a field: it is never kept."""

    format: str
    session: str
    file_notes: tuple[str, ...] = ()
    ids: _StepIds = msgspec.field(default_factory=_StepIds)
    plan: dict[Key, StepSpec] | None = None
    plan_notes: tuple[str, ...] = ()
    goal: str = ""
    criteria: tuple[CriterionSpec, ...] = ()
    status: dict[Key, ItemStatus] = msgspec.field(default_factory=dict)
    agent: dict[Key, ItemStatus] = msgspec.field(default_factory=dict)
    evidence: dict[Key, str] = msgspec.field(default_factory=dict)
    previous_line: dict[str, int] = msgspec.field(default_factory=dict)
    primary_file: str | None = None
    skipped: Counter[str] = msgspec.field(default_factory=Counter)
    versions: int = 0
    peak: int = 0
    untimed: int = 0
    unchecked: dict[Key, tuple[str, ...]] = msgspec.field(default_factory=dict)
    """Cline items the agent unchecked after checking them: the inferred step notes that say so."""
    denied: dict[Key, str] = msgspec.field(default_factory=dict)
    """The steps of a version whose approval the user denied (each with where), until the next plan answers it."""
    answered: dict[Key, tuple[str, ...]] = msgspec.field(default_factory=dict)
    """Steps a denied plan held that a later plan proposed again: the step notes that say so (see "Approvals")."""
    approvals: int = 0
    touched: bool = False
    """Whether the mirrored version has had a start or a completion since it was adopted (see added_in_place)."""
    extensions: int = 0
    unbilled: Usage | None = None
    """The usage of the agent's turns (`Observation.turns`) that no result has reported yet: the next
    completion's report carries it (usage is counted on results, docs/contract.md)."""
    by_file: dict[str, Counter[str]] = msgspec.field(default_factory=dict)
    """Each file's figures (FileFigures' counts by name, and "skipped:<reason>"), in order of its first update."""

    def __post_init__(self) -> None:
        self.batches: list[Batch] = []

    # ----------------------------------------------------------- one update

    def apply(self, update: Update, place: int = 0) -> None:
        """Record one update: create, finish kept work, replan, then catch up with the agent's statuses."""
        self.primary_file = self.primary_file or update.file
        items, versions, extensions = len(self.ids.ids), self.versions, self.extensions
        self.unbilled = add_usage(self.unbilled, update.observation.turns)
        commands: list[Command] = []
        if update.skipped is not None:
            self.skipped[update.skipped] += 1
        elif self.plan is None:
            if update.items:
                commands += self._create(update)
                asked, decided = self._approval(update)
                commands += [*asked, *self._catch_up(update), *decided]
        elif update.items:
            commands += [] if self.denied else self._finish_kept(update)  # a denied version is paused: no work
            commands += self._replan_if_changed(update)
            asked, decided = self._approval(update)
            commands += [*asked, *self._catch_up(update), *decided]
        if update.skipped is None:
            self.agent = {item.key: item.status for item in update.items}
        self.previous_line[update.file] = update.observation.line
        if commands:
            self.batches.append(Batch(_timestamp(update.observation), tuple(commands), place))
            self.untimed += len(commands) if update.observation.timestamp is None else 0
        figures = self.by_file.setdefault(update.file, Counter())
        figures.update(
            updates=1,
            items=len(self.ids.ids) - items,
            versions=self.versions - versions,
            extensions=self.extensions - extensions,
            events=len(commands),
            inferred=sum(1 for c in commands if c.source is not None and c.source.inferred),
        )
        if update.skipped is not None:
            figures[f"skipped:{update.skipped}"] += 1

    def _create(self, update: Update) -> list[Command]:
        observation = update.observation
        asked = request(observation.prompts, (observation.context, observation.context_line))
        follow_ups: list[str] = []
        if asked is not None:
            self.goal = one_line(asked.goal, GOAL_LIMIT)
            described = f'what the user asked for is done: "{self.goal}"'
            if asked.whole is not None:
                where = location(self.format, asked.line)
                follow_ups.append(f"transcript {where}: the user's prompt in full: {asked.whole}")
            follow_ups += [
                f"transcript {location(self.format, line)}: the user also wrote: {one_line(_said(text), NOTE_LIMIT)}"
                for text, line in observation.prompts
                if line > asked.line
            ]
        else:
            self.goal = f"the plan of {self.format} session {self.session} (the transcript states no request before it)"
            described = "the plan's items are done (the transcript states no request to check them against)"
        self.criteria = (CriterionSpec(id=CRITERION_ID, description=described),)
        self.plan = self._specs(update.items)
        self.status = {item.key: "pending" for item in update.items}
        self.versions = 1
        self.touched = False
        from .parse import ADAPTER_VERSIONS  # on use: parse imports every parser, a live mapping needs one

        adapter = f"imported by plantrail's {self.format} adapter v{ADAPTER_VERSIONS[self.format]}"
        self.plan_notes = (adapter,)
        here = f"transcript {location(self.format, observation.line)}"
        noted = (adapter, *self.file_notes, *follow_ups, *(f"{here}: {n}" for n in update.notes))
        first = replace(self._plan_spec(), notes=noted)
        return [Create(plan=first, actor="agent", source=self._source(update, inferred=False))]

    def _finish_kept(self, update: Update) -> list[Command]:
        """Completions of items that keep their step, recorded in the version they were done in."""
        assert self.plan is not None
        done = [
            item
            for item in update.items
            if item.status == "completed"
            and self.status.get(item.key) not in (None, "completed")
            and self.plan[item.key].title == item.title
        ]
        done.sort(key=lambda item: self.status[item.key] != "in_progress")
        return [command for item in done for command in self._complete(update, item)]

    def _catch_up(self, update: Update) -> list[Command]:
        """After any replan: complete what the agent shows completed, then start what it shows in progress."""
        commands: list[Command] = []
        for item in update.items:
            if item.status == "completed" and self.status[item.key] != "completed":
                commands += self._complete(update, item)
        for item in update.items:
            if item.status == "in_progress" and self.status[item.key] == "pending":
                commands.append(self._start(update, item, inferred=self.agent.get(item.key) == "in_progress"))
        return commands

    def _start(self, update: Update, item: PlanItem, *, inferred: bool) -> Start:
        self.status[item.key] = "in_progress"
        self.touched = True
        self.peak = max(self.peak, sum(1 for status in self.status.values() if status == "in_progress"))
        actor: Actor = "importer" if inferred else "agent"
        return Start(step=self.ids.of(item), actor=actor, source=self._source(update, inferred=inferred))

    def _complete(self, update: Update, item: PlanItem) -> list[Command]:
        commands: list[Command] = []
        if self.status[item.key] == "pending":
            commands.append(self._start(update, item, inferred=True))
        again = self.agent.get(item.key) == "completed"
        self.status[item.key] = "completed"
        self.touched = True
        evidence = self._evidence(update, again=again)
        actor: Actor = "importer" if again else "agent"
        source = self._source(update, inferred=again)
        report = None if self.unbilled is None else Report(usage=self.unbilled)
        self.unbilled = None
        step = self.ids.of(item)
        commands.append(Complete(step=step, evidence=(evidence,), actor=actor, source=source, report=report))
        return commands

    # ----------------------------------------------------------- approvals

    def _approval(self, update: Update) -> tuple[list[Command], list[Command]]:
        """The approval a plan that asked for one (ExitPlanMode) gets: the request, inferred, covering the steps of
        the version the plan became, and the user's decision as the answer gave it (see "Approvals")."""
        observation = update.observation
        if not isinstance(observation, ListSnapshot) or observation.decision is None or self.plan is None:
            return [], []
        self.approvals += 1
        request = f"plan-approval-{self.approvals}"
        steps = tuple(spec.id for spec in self.plan.values())
        asked = RequestApproval(
            request=request,
            question=APPROVAL_QUESTION,
            steps=steps,
            actor="importer",
            source=self._source(update, inferred=True),
        )
        where = location(self.format, observation.result_line or observation.line)
        source = replace(
            self._source(update, inferred=False),
            line=observation.result_line or observation.line,
            timestamp=observation.result_timestamp,
        )
        granted = observation.decision == "granted"
        why = observation.decision_why or ("the user approved the plan" if granted else "the user rejected the plan")
        said = observation.decision_words
        why += f' at {where}: "{one_line(said, WHY_LIMIT)}"' if said else f" at {where}"
        decided = Decide(request=request, granted=granted, by="user", why=why, actor="user", source=source)
        if not granted:
            self.denied = {key: where for key in self.plan}
        return [asked], [decided]

    # ----------------------------------------------------------- replans

    def _replan_if_changed(self, update: Update) -> list[Command]:
        assert self.plan is not None
        old = self.plan
        reopened = [
            item
            for item in update.items
            if item.key in old and self.status[item.key] == "completed" and item.status != "completed"
        ]
        for item in reopened:
            where = location(self.format, update.observation.line)
            if self.format == "cline":  # a checklist without an in-progress mark: see "Going back"
                self.unchecked[item.key] = (*self.unchecked.get(item.key, ()), _unchecked(where))
            else:
                self.evidence[item.key] = f"{EVIDENCE} again: the agent reopened it at {where}"
        for item in update.items:  # the plan that answers a denial proposes again what it keeps (see "Approvals")
            if item.key in self.denied:
                here = location(self.format, update.observation.line)
                note = f"proposed again at {here} after the user denied the plan at {self.denied[item.key]}"
                self.answered[item.key] = (*self.answered.get(item.key, ()), note)
        new = self._specs(update.items)
        went_back = [
            item
            for item in update.items
            if item.key in old and self.status[item.key] == "in_progress" and item.status == "pending"
        ]
        if new.keys() == old.keys() and all(new[key] == old[key] for key in new) and not went_back:
            return []
        added = added_in_place(old, new, touched=self.touched, decided_by_user=self._decided_by_user(update))
        if added is not None and not reopened and not went_back:
            self.plan = new
            self.status = {**self.status, **{key: "pending" for key in new if key not in old}}
            self.extensions += 1
            return [self._extend(update, added)]
        changes = self._changes(update, old, new, reopened, went_back)
        kept = [item.label for item in update.items if item.key in self.denied]
        if kept:
            where = next(iter(self.denied.values()))
            changes.append(f"proposed again after the user denied the plan at {where}: {', '.join(kept)}")
        self.denied = {}
        self.plan = new
        self.evidence = {key: text for key, text in self.evidence.items() if key in new}
        self.status = {
            key: self.status[key]
            if key in old and old[key].contract() == spec.contract() and self.status[key] != "in_progress"
            else "pending"
            for key, spec in new.items()
        }
        self.versions += 1
        self.touched = False
        return [self._replan(update, changes)]

    def _changes(
        self,
        update: Update,
        old: dict[Key, StepSpec],
        new: dict[Key, StepSpec],
        reopened: Iterable[PlanItem],
        went_back: Iterable[PlanItem],
    ) -> list[str]:
        by_key = {item.key: item for item in update.items}
        changes = [f"added {item.label} ({item.status})" for item in update.items if item.key not in old]
        changes += [
            f'removed "{spec.title}" (it was {self.status[key]})' for key, spec in old.items() if key not in new
        ]
        changes += [
            f'{by_key[key].label} renamed from "{old[key].title}"'
            for key in new
            if key in old and old[key].title != new[key].title
        ]
        kept = [key for key in new if key in old]
        if kept != sorted(kept, key=lambda key: -old[key].priority):
            changes.append("the agent reordered its items: " + ", ".join(by_key[key].label for key in kept))
        changes += [f"{item.label} is {item.status} again after being completed" for item in reopened]
        changes += [f"{item.label} went back from in_progress to pending" for item in went_back]
        return changes

    def _replan(self, update: Update, changes: list[str]) -> Replan:
        observation = update.observation
        here = f"transcript {location(self.format, observation.line)}"
        said = observation.explanation
        notes: list[str] = []
        verdict = observation.user_verdict if isinstance(observation, ListSnapshot) else None
        user = None if verdict is not None else self._user_words(update)
        if verdict is not None:
            reason: ReasonCode = "user_request"
            where = location(self.format, observation.result_line or observation.line)
            why = f"{verdict} at {where}"
            notes.append(f"transcript {where}: {verdict}")
        elif user is not None:
            reason = "user_request"
            where = location(self.format, observation.context_line or 0)
            why = f'the user wrote at {where}: "{one_line(user, WHY_LIMIT)}"'
            notes.append(f"transcript {where}: the user wrote: {user}")
        else:
            reason = "agent_revision"
            why = f"the agent changed its plan in {_tool(observation)} at {location(self.format, observation.line)}"
            why += f" without saying why ({'; '.join(changes)})" if said is None else ""
        if said is not None:
            where = location(self.format, observation.explanation_line or observation.line)
            notes.append(f"transcript {where}: the agent wrote: {said}")
            if user is None and verdict is None:
                why = f'the agent wrote at {where}: "{one_line(said, WHY_LIMIT)}"'
        notes += [f"{here}: {note}" for note in (*update.notes, *changes)]
        return Replan(
            reason=reason,
            why=one_line(why, WHY_LIMIT + 100),
            plan=self._plan_spec(),
            observations=tuple(_cut(note) for note in notes),
            actor="agent",
            source=self._source(update, inferred=False),
        )

    def _extend(self, update: Update, added: Sequence[StepSpec]) -> Extend:
        """The items an update added to the untouched version, as an extension in place (no replan)."""
        here = f"transcript {location(self.format, update.observation.line)}"
        by_id = {self.ids.of(item): item for item in update.items}
        notes = [f"{here}: {note}" for note in update.notes]
        notes += [f"{here}: added {by_id[spec.id].label} ({by_id[spec.id].status})" for spec in added]
        said = update.observation.explanation
        if said is not None:
            where = location(self.format, update.observation.explanation_line or update.observation.line)
            notes.append(f"transcript {where}: the agent wrote: {said}")
        return Extend(
            steps=tuple(added),
            observations=tuple(_cut(note) for note in notes),
            actor="agent",
            source=self._source(update, inferred=False),
        )

    def _decided_by_user(self, update: Update) -> bool:
        """Whether the user decided this update: a verdict on it, or their words since the previous update."""
        observation = update.observation
        verdict = observation.user_verdict if isinstance(observation, ListSnapshot) else None
        decided = isinstance(observation, ListSnapshot) and observation.decision is not None
        return decided or verdict is not None or self._user_words(update) is not None

    def _user_words(self, update: Update) -> str | None:
        """The user's message, when one came between the previous plan update of this file and this one."""
        observation = update.observation
        previous = self.previous_line.get(update.file)
        if observation.agent is not None and observation.agent.startswith("subagent"):
            return None  # a subagent's "user" is its lead agent
        if observation.context is None or observation.context_line is None or previous is None:
            return None
        return observation.context if observation.context_line > previous else None

    # ----------------------------------------------------------- building blocks

    def _specs(self, items: Sequence[PlanItem]) -> dict[Key, StepSpec]:
        """The steps of the agent's items, in its order: the first has priority 0, each next one less."""
        return {item.key: self._spec(item, -place) for place, item in enumerate(items)}

    def _spec(self, item: PlanItem, priority: int) -> StepSpec:
        evidence = self.evidence.get(item.key, EVIDENCE)
        step_id = self.ids.of(item)
        suffix = self.ids.why.get(step_id)
        notes = (
            *item.notes,
            *([] if suffix is None else [suffix]),
            *self.unchecked.get(item.key, ()),
            *self.answered.get(item.key, ()),
        )
        return StepSpec(
            id=step_id,
            title=item.title,
            depends_on=(),
            completion_evidence=evidence,
            max_attempts=None,  # the agent set no limit, and none is invented
            terms=StepTerms(priority=priority, notes=notes),
        )

    def _plan_spec(self) -> PlanSpec:
        assert self.plan is not None
        return PlanSpec(
            goal=self.goal,
            acceptance_criteria=self.criteria,
            steps=tuple(self.plan.values()),
            policy=Policy(None),
            notes=self.plan_notes,
        )

    def _source(self, update: Update, *, inferred: bool) -> Source:
        observation = update.observation
        return Source(
            file=update.file,
            line=observation.line,
            id=observation.native_id,
            timestamp=observation.timestamp,
            tool=_tool(observation),
            inferred=inferred,
            meta=dict(observation.meta) if observation.meta else {},
        )

    def _evidence(self, update: Update, *, again: bool) -> str:
        observation = update.observation
        where = location(self.format, observation.line)
        if update.file != self.primary_file:
            where += f" of {update.file}"
        marked = f"marked completed by {_who(observation.agent)} in {_tool(observation)} at {where}"
        if isinstance(observation, TaskEvent) and observation.status_source == "request":
            marked += " (the tool's answer names the status as updated; the value is the one requested)"
        if again:
            return f"still {marked}; recorded again because the replan there reset the step"
        return marked

    # ----------------------------------------------------------- the result

    def result(self, plan_updates: int, *, live: bool = False) -> MappedRun:
        """The batches with the plan's policy filled in (unlimited when ``live``), and the figures; refuses a
        transcript with no plan."""
        if self.plan is None:
            skipped = ", ".join(f"{count} {reason}" for reason, count in sorted(self.skipped.items()))
            detail = f" ({skipped})" if skipped else ""
            raise transcript_error(
                "NO_PLAN_IN_TRANSCRIPT",
                f"none of the transcript's {plan_updates} plan updates lists an item to import{detail}",
            )
        policy = Policy(max_in_progress=None if live else max(self.peak, 1))
        batches = tuple(Batch(b.ts, tuple(_with_policy(c, policy) for c in b.commands), b.update) for b in self.batches)
        commands = [c for b in batches for c in b.commands]
        return MappedRun(
            batches=batches,
            plan_updates=plan_updates,
            versions=self.versions,
            completions=sum(1 for c in commands if isinstance(c, Complete)),
            inferred=sum(1 for c in commands if c.source is not None and c.source.inferred),
            max_in_progress=max(self.peak, 1),
            skipped=MappingProxyType(dict(sorted(self.skipped.items()))),
            untimed=self.untimed,
            items=len(self.ids.ids),
            extensions=self.extensions,
            files=tuple(_figures(file, counts) for file, counts in self.by_file.items()),
        )


def _figures(file: str, counts: Counter[str]) -> FileFigures:
    """One file's figures from its counts."""
    skipped = {key.removeprefix("skipped:"): n for key, n in sorted(counts.items()) if key.startswith("skipped:")}
    return FileFigures(
        file=file,
        updates=counts["updates"],
        items=counts["items"],
        versions=counts["versions"],
        extensions=counts["extensions"],
        events=counts["events"],
        inferred=counts["inferred"],
        skipped=MappingProxyType(skipped),
    )


def _unchecked(where: str) -> str:
    """The step note of a Cline item unchecked after being checked (what is inferred, marked as such)."""
    return (
        f"inferred: the agent unchecked it at {where} after checking it; Cline's checklist has no in-progress "
        "mark and the agent wrote no new terms, so the step keeps its contract and its completion"
    )


def _cut(note: str) -> str:
    """An observation cut to NOTE_LIMIT characters with a trailing '…'."""
    return cut(note, NOTE_LIMIT)


def _with_policy(command: Command, policy: Policy) -> Command:
    if isinstance(command, (Create, Replan)) and isinstance(command.plan, PlanSpec):
        return msgspec.structs.replace(command, plan=replace(command.plan, policy=policy))
    return command
