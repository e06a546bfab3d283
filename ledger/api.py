"""The library's front door: a run's log opened for recording.

Each turn takes the store's writer lock, catches up with what other writers appended, checks the caller's
expected seq and idempotency key, decides the command against the current state, and appends the events
with one write (command -> event -> store -> reducer). A refusal raises before anything is written.

    with Ledger.create("run.jsonl", draft) as ledger:
        ledger.start("inspect")
        ledger.complete("inspect", "read cli.py, test_cli.py and package.json", idempotency_key="inspect-1")

The recording methods take their command's options as keyword-only arguments named as the CLI names them;
a bare ``str`` of evidence or observations is one item (see :mod:`ledger.vocabulary.items`). The reference, with every
option, is ``docs/library.md``; the audit views are in :mod:`ledger.audit`.
"""

from __future__ import annotations

import inspect
import os
import random
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from types import MethodType
from typing import TYPE_CHECKING, Any, Concatenate, Generic, Literal, ParamSpec, cast, overload

from plantrail.ledger.rules import (
    adoption,
    approvals,
    attempts,
    commands,
    criteria,
    effects,
    extension,
    leases,
    observations,
    outcomes,
    reconcile,
)
from plantrail.ledger.rules.commands import Method, declaration_of
from plantrail.ledger.rules.decide import Command, Create, decide, decide_one
from plantrail.ledger.rules.idempotency import match, record_view
from plantrail.ledger.stores.locations import default_run_id
from plantrail.ledger.stores.opener import as_run
from plantrail.ledger.stores.values import Ack, FsyncPolicy, KeyEntry, PendingRecord
from plantrail.ledger.tracing import command_trace
from plantrail.ledger.vocabulary.arguments import checker, described, refuse, strict
from plantrail.ledger.vocabulary.clock import utc_now
from plantrail.ledger.vocabulary.errors import PlantrailError, error
from plantrail.ledger.vocabulary.events import Actor, LogBatch, ReasonCode, Record, Source, Trace
from plantrail.ledger.vocabulary.plan import Draft, PlanSpec, parse_draft
from plantrail.projections.model import PlanState, holds_lazy, resolved
from plantrail.projections.state import Advancing, evolve, initial

if TYPE_CHECKING:
    from plantrail.ledger.signing import HeadTree, Signer
    from plantrail.ledger.signing_policy import SigningPolicy
    from plantrail.ledger.stores.protocol import RunWriter, Session, StateCache

__all__ = ["Ledger", "default_run_id"]

P = ParamSpec("P")

#: How many times a batch is decided again when a database writer lost the race for the next seq.
_CONFLICT_RETRIES = 32
#: How many times a signed checkpoint reads the tree again when another writer appended while it read.
_SIGN_TRIES = 5


class _Recording(Generic[P]):
    """A recording method of :class:`Ledger`, built from a method its command declares (:mod:`.rules.commands`):
    the declared arguments function gives its signature (its own parameters, then the envelope options with the
    command's defaults), its docstring and the command it records. The method is compiled from that signature
    when first read, and then replaces this descriptor on the class: a call is a plain function call, and a
    misspelt keyword is Python's own TypeError naming it."""

    __slots__ = ("_method", "_owner")

    def __init__(self, method: Method[P, Any]) -> None:
        self._method = method
        self._owner: type[Ledger] | None = None

    def __set_name__(self, owner: type[Ledger], name: str) -> None:
        if name != self._method.name:
            raise TypeError(f"Ledger.{name} is built from the declared method {self._method.name}")
        self._owner = owner

    @overload
    def __get__(self, ledger: None, owner: type[Ledger]) -> Callable[Concatenate[Ledger, P], Ack]: ...

    @overload
    def __get__(self, ledger: Ledger, owner: type[Ledger]) -> Callable[P, Ack]: ...

    def __get__(self, ledger: Ledger | None, owner: type[Ledger]) -> Any:
        function = _compiled(self._method)
        setattr(self._owner or owner, self._method.name, function)
        return function if ledger is None else MethodType(function, ledger)


def _compiled(method: Method[Any, Any]) -> Callable[..., Ack]:
    """The function ``Ledger.<method>``: it builds the command from its arguments with the declared arguments
    function and executes it with the ``expected_seq`` and ``trace`` given."""
    parameters = method.parameters()
    keyword = inspect.Parameter.KEYWORD_ONLY
    heads = ["self"]
    for parameter in parameters:
        if parameter.kind is keyword and "*" not in heads:
            heads.append("*")
        shown = parameter.name
        heads.append(shown if parameter.default is parameter.empty else f"{shown}=_defaults[{shown!r}]")
    passed = [p.name for p in parameters if p.kind is not keyword]
    execution = ("expected_seq", "trace")
    passed += [f"{p.name}={p.name}" for p in parameters if p.kind is keyword and p.name not in execution]
    name = method.name
    types = method.types()
    checks = {p.name: checker(types[p.name]) for p in parameters if p.name in types}
    defaults = {p.name: p.default for p in parameters if p.default is not p.empty}
    tests = [  # each check a name of the function's own namespace; a default given as it is needs none
        (
            f"    if {p} is not _defaults[{p!r}] and not _t_{p}({p}):\n"
            if p in defaults
            else f"    if not _t_{p}({p}):\n"
        )
        + f"        raise _refuse({p!r}, {p}, _checks[{p!r}].expected, where=_where)\n"
        for p in checks
    ]
    source = (
        f"def {name}({', '.join(heads)}):\n"
        + "".join(tests)
        + f"    return self._execute_checked([_arguments({', '.join(passed)})], expected_seq, trace)[0]\n"
    )
    namespace: dict[str, Any] = {
        **vars(commands),
        **method.arguments.__globals__,  # so that typing.get_type_hints reads the annotations
        "Ack": Ack,
        "_arguments": method.arguments,
        "_defaults": {p.name: p.default for p in parameters},
        "_checks": checks,
        **{f"_t_{p}": check.test for p, check in checks.items()},
        "_refuse": refuse,
        "_where": f"Ledger.{name}",
    }
    exec(compile(source, f"<Ledger.{name}>", "exec"), namespace)
    function: Callable[..., Ack] = namespace[name]
    function.__qualname__ = f"Ledger.{name}"
    function.__module__ = __name__
    function.__doc__ = _indented(method.doc)
    function.__annotations__ = {p.name: p.annotation for p in parameters} | {"return": "Ack"}
    return function


def _indented(doc: str) -> str:
    """A declared method's docstring as a method of the class shows it (its continuation lines indented to the
    method's body)."""
    first, *rest = doc.split("\n")
    return "\n".join([first, *(f"    {line}" if line.strip() else line for line in rest)])


def _front_door_policy() -> SigningPolicy | None:
    """The signing policy a front door set for the ledgers it opens (:func:`ledger.signing.signing`); raises the
    refusal it holds instead, before anything is written."""
    from plantrail.ledger.signing_policy import current_policy

    return current_policy()


class Ledger:
    """One run's log, opened for recording commands."""

    def __init__(self, store: RunWriter, *, clock: Callable[[], str] = utc_now, cache: bool = True) -> None:
        if not (callable(getattr(store, "session", None)) and callable(getattr(store, "close", None))):
            raise error(
                "LEDGER_NOT_OPEN",
                f"Ledger() takes an opened run writer, not {described(store)}: open a log with "
                "Ledger.open(path), or create one with Ledger.create(path, plan)",
            )
        if not callable(clock):
            raise refuse("clock", clock, "a callable", where="Ledger")
        if cache is not True and cache is not False:
            raise refuse("cache", cache, "True or False", where="Ledger")
        self._store = store
        self._location = store.target
        self._clock = clock
        self._cache = cache
        self._state = initial()
        self._keys: dict[str, KeyEntry] = {}
        self._shown: tuple[PlanState, PlanState] | None = None  # the last state :attr:`state` read, and as read
        self._unread = False  # the state may hold unread evidence (it started from a snapshot that had some)
        self._turn: tuple[tuple[Command, Ack], ...] = ()  # the commands this ledger's last turn recorded, acked
        self._signing: tuple[Signer, int | None, bool] | None = None  # sign_on's signer, every and at_finish
        self._signed_at = -1  # the head seq at the last signed checkpoint (or when sign_on was called)
        # The tree over the records, grown as this ledger sees them appended once a signed checkpoint built it.
        self._tree: HeadTree | None = None

    # ----------------------------------------------------------- opening

    @classmethod
    @strict
    def create(
        cls,
        path: str | os.PathLike[str],
        plan: Draft | PlanSpec | Mapping[str, Any],
        *,
        run: str | None = None,
        fsync: FsyncPolicy = "always",
        actor: Actor = "planner",
        source: Source | None = None,
        idempotency_key: str | None = None,
        nonce: str | None = None,
        allow_network_fs: bool = False,
        clock: Callable[[], str] = utc_now,
        cache: bool = True,
        strict: bool = False,
        trace: Trace | str | None = None,
    ) -> Ledger:
        """Create a new log holding its header and the plan's first version (atomically).

        ``path`` is a file, or a database run (``postgresql://.../db#RUN``). ``run`` defaults to the file name
        without ``.jsonl``; ``fsync`` is the durability policy recorded in the header; ``idempotency_key`` is
        stored on the plan's record. ``nonce`` fixes the header's nonce (for reproducible logs in tests),
        ``allow_network_fs`` accepts a log on NFS or SMB, ``clock`` supplies timestamps, and ``cache=False``
        leaves no snapshot beside the log (see :mod:`plantrail.ledger.stores.jsonl.cache`). ``strict`` refuses a
        plan with a task criterion no step covers and no typed check covers (COVERAGE_GAP, every gap listed).
        ``trace`` is the W3C trace context the plan is recorded in (see :mod:`plantrail.ledger.tracing`).
        """
        policy = _front_door_policy()
        target = as_run(path)
        if target.exists():  # said before the draft is judged (the create itself refuses an existing log too)
            where = target.location
            raise error("LOG_EXISTS", f"{where} already exists; plantrail never overwrites a log", path=where)
        spec = parse_draft(plan) if isinstance(plan, Mapping) else plan
        command = Create(plan=spec, actor=actor, source=source, key=idempotency_key, strict=strict)
        [event] = decide(initial(), command)
        ts = clock()
        first = PendingRecord(
            ts=ts,
            plan_version=1,
            actor=event.actor,
            data=event.data,
            source=source,
            key=idempotency_key,
            trace=command_trace(trace),
        )
        store, _ = target.create(
            run=run,
            first=[first],
            fsync=fsync,
            nonce=nonce,
            ts=ts,
            actor=actor,
            allow_network_fs=allow_network_fs,
            clock=clock,
        )
        ledger = cls(store, clock=clock, cache=cache)
        ledger._refresh()
        ledger._turn = ((command, Ack(seq=ledger._state.last_seq, hash=ledger._state.head or "")),)
        if policy is not None:
            ledger._sign_by(policy)
        return ledger

    @classmethod
    @strict
    def open(
        cls,
        path: str | os.PathLike[str],
        *,
        fsync: FsyncPolicy | None = None,
        batch_size: int = 100,
        repair: bool = False,
        acked: tuple[int, str] | None = None,
        allow_network_fs: bool = False,
        clock: Callable[[], str] = utc_now,
        cache: bool = True,
    ) -> Ledger:
        """Open an existing log; ``repair=True`` repairs a torn tail instead of refusing (TORN_TAIL).

        With ``cache`` (the default) the ledger starts from the log's snapshot when it checks out, and leaves
        a fresh one when it closes; ``cache=False`` reads the whole log and leaves none. ``acked`` is the
        ``(seq, hash)`` of the last event this caller was acknowledged: opening raises DATA_LOSS (and repairs
        nothing) unless the log still holds exactly that record.
        """
        policy = _front_door_policy()
        store = as_run(path).open_writer(
            fsync=fsync,
            batch_size=batch_size,
            repair=repair,
            acked=acked,
            allow_network_fs=allow_network_fs,
            clock=clock,
        )
        ledger = cls(store, clock=clock, cache=cache)
        try:
            # With a watermark every record up to it must be checked, so the whole log is read.
            kept = _state_cache(store) if cache and acked is None else None
            snapshot = kept.resume() if kept is not None else None
            if snapshot is not None:
                ledger._state, ledger._keys = snapshot.state, dict(snapshot.keys)
                ledger._unread = holds_lazy(snapshot.state)
            reading = getattr(store, "reading", None) if not repair and acked is None else None
            if callable(reading):  # caught up as a reader reads: an append then takes the writer lock once
                with reading() as session:
                    ledger._catch_up(session)
            else:
                ledger._refresh()
            if policy is not None:
                ledger._sign_by(policy)
        except BaseException:
            store.close()
            raise
        return ledger

    @classmethod
    @strict
    def fork(
        cls,
        parent: str | os.PathLike[str],
        path: str | os.PathLike[str],
        *,
        at_seq: int | None = None,
        version: int | None = None,
        reason: str | None = None,
        run: str | None = None,
        actor: Actor = "user",
        fsync: FsyncPolicy = "always",
        nonce: str | None = None,
        allow_network_fs: bool = False,
        clock: Callable[[], str] = utc_now,
        cache: bool = True,
    ) -> Ledger:
        """Write a new run at ``path`` forked from ``parent`` right after seq ``at_seq``, or where ``replay
        --version`` stands for ``version`` (``plantrail fork``; see :func:`ledger.fork.fork_run`), and open it
        for recording: its events fold on top of the parent's state there. The parent is only read."""
        from plantrail.ledger.fork import fork_run

        fork_run(
            parent,
            path,
            at_seq=at_seq,
            version=version,
            reason=reason,
            run=run,
            actor=actor,
            fsync=fsync,
            nonce=nonce,
            allow_network_fs=allow_network_fs,
            clock=clock,
        )
        return cls.open(path, allow_network_fs=allow_network_fs, clock=clock, cache=cache)

    @classmethod
    @strict
    def set_plan(
        cls,
        path: str | os.PathLike[str],
        steps: Sequence[Mapping[str, Any]],
        *,
        run: str | None = None,
        goal: str | None = None,
        criteria: Sequence[Mapping[str, Any]] | None = None,
        reason: ReasonCode | None = None,
        why: str | None = None,
        causes: Sequence[int] = (),
        observations: Sequence[str] = (),
        terms: Mapping[str, Any] | None = None,
        max_in_progress: int | None = None,
        expected_seq: int | None = None,
        idempotency_key: str | None = None,
        actor: Actor = "agent",
        source: Source | None = None,
        clock: Callable[[], str] = utc_now,
        trace: Trace | str | None = None,
    ) -> Ledger:
        """Create the run's plan, or replan it: an agent's one plan call (the MCP server's ``plan_set``). Return
        the ledger, open; :meth:`acknowledgement` is the call's answer.

        When ``path`` holds no run yet, create it (its folder too) with ``goal``, ``steps`` and ``criteria`` (the
        draft's ``acceptance_criteria``) as version 1, and ``max_in_progress`` as the policy's focus limit.
        Otherwise replan with ``reason`` (a reason code) and ``why``, USAGE without them, and with the
        ``causes`` (seqs of events in the log) and ``observations`` behind it: the goal stays (a different
        ``goal`` is GOAL_CHANGED), and so do the active criteria (typed checks included) unless ``criteria`` are
        given, and the active policy (budgets included), with only what the call gives changed. ``terms`` holds
        the contract's other terms, merged into the draft as given
        (:func:`~plantrail.ledger.vocabulary.agent_draft.with_terms`). A first call retried under its
        ``idempotency_key`` (no ``reason``) answers the original's ack and writes nothing. ``expected_seq``
        holds for a replan; ``source`` (where the call came from: the plan server names itself), ``clock`` and
        ``trace`` are as for :meth:`create`.
        """
        from plantrail.ledger.vocabulary.agent_draft import carried_terms, with_terms

        draft = _agent_draft(steps, criteria, max_in_progress)
        target = as_run(path)
        if not target.exists():
            target.prepare()
            try:
                return cls.create(
                    target.location,
                    with_terms({"goal": goal, **draft}, terms),
                    run=run,
                    actor=actor,
                    source=source,
                    idempotency_key=idempotency_key,
                    clock=clock,
                    trace=trace,
                )
            except PlantrailError as exc:
                # Another caller created the run since it was looked for: a first call under a key is then
                # answered as its retry (the original's ack, or IDEMPOTENCY_CONFLICT), as if it came second.
                if exc.code != "LOG_EXISTS" or reason is not None or idempotency_key is None:
                    raise
        ledger = cls.open(target.location, clock=clock)
        try:
            if reason is None and idempotency_key is not None:  # a retried first call: the original's ack
                first = with_terms({"goal": goal, **draft}, terms)
                command = Create(plan=parse_draft(first), actor=actor, source=source, key=idempotency_key)
                ledger.execute(command, trace=trace)
                return ledger
            if reason is None or not why:
                raise error("USAGE", "a replan needs reason (a reason code) and why")
            current = ledger.unread_state
            plan: dict[str, Any] = {"goal": current.goal if goal is None else goal, **draft}
            if current.plan is not None and criteria is None:
                plan["acceptance_criteria"] = _kept_criteria(current.plan)
            if current.plan is not None:
                terms = carried_terms(current.plan, plan, terms)
            plan = with_terms(plan, terms)
            if current.plan is not None and "policy" in plan:
                plan["policy"] = _kept_policy(current.plan, plan["policy"])
            ledger.replan(
                reason,
                why,
                plan=plan,
                causes=causes,
                observations=observations,
                expected_seq=expected_seq,
                idempotency_key=idempotency_key,
                actor=actor,
                source=source,
                trace=trace,
            )
        except BaseException:
            ledger.close()
            raise
        return ledger

    def __enter__(self) -> Ledger:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Sync what the fsync policy owes, leave a snapshot for the next reader, and release the log. A closed
        ledger records and reads nothing more (LEDGER_NOT_OPEN); closing it again does nothing."""
        store = self._store
        if isinstance(store, _Closed):
            return
        self._store = _Closed()
        try:
            kept = _state_cache(store) if self._cache else None
            if kept is not None:
                kept.checkpoint(self._state, self._keys)
        finally:
            store.close()

    def sync(self) -> None:
        """Make every acknowledged event durable (for the ``batch`` policy)."""
        self._store.sync()

    @property
    def location(self) -> str:
        """What names the ledger's run: the log's path, or the database run's URL (its password left out); known
        after :meth:`close` too."""
        return self._location

    # ----------------------------------------------------------- state

    @property
    def state(self) -> PlanState:
        """The state as of this ledger's last turn (call :meth:`refresh` to see other writers' events), its
        evidence read (see :attr:`unread_state`)."""
        return self._read(self._state)

    @property
    def unread_state(self) -> PlanState:
        """The state as of this ledger's last turn, where evidence a snapshot pointed at may not be read yet: a
        :class:`~plantrail.ledger.vocabulary.payloads.Payload`, read and checked by hash when first used. Opening
        from a snapshot reads none (no rule reads evidence); a view that prints none (the acknowledgement of
        a command) takes this, every other :attr:`state`."""
        return self._state

    def _read(self, state: PlanState) -> PlanState:
        """``state`` with its evidence read (HASH_MISMATCH when a record it comes from changed under it)."""
        if not self._unread:
            return state  # it holds no unread payload: records appended since are read whole
        shown = self._shown
        if shown is not None and shown[0] is state:
            return shown[1]
        try:
            read = resolved(state)
        except ValueError as exc:
            raise error(
                "HASH_MISMATCH",
                f"a record the state's evidence comes from no longer checks out: {exc}; reopen the log",
            ) from None
        except OSError as exc:
            raise error("IO_ERROR", f"reading the state's evidence from the log failed: {exc}") from None
        self._shown = (state, read)
        return read

    def refresh(self) -> PlanState:
        """Catch up with everything appended to the log and return the current state (its evidence read)."""
        self._refresh()
        return self._read(self._state)

    def _refresh(self) -> None:
        with self._store.session() as session:
            self._catch_up(session)

    def _catch_up(self, session: Session) -> None:
        if session.rewound:
            self._state, self._keys, self._unread = initial(), {}, False
            self._tree = None
        state = self._state
        tree = self._tree
        for record in session.new_records():
            state = evolve(state, record)
            self._index(self._keys, record)
            if tree is not None and not tree.add(record):
                tree = self._tree = None
        self._state = state

    def _grow(self, records: Iterable[Record]) -> None:
        """Add records this ledger wrote to the signing tree, when it keeps one."""
        tree = self._tree
        if tree is not None:
            for record in records:
                if not tree.add(record):
                    self._tree = None
                    return

    @staticmethod
    def _index(keys: dict[str, KeyEntry], record: Record) -> None:
        if record.key is not None and record.key not in keys:
            keys[record.key] = record_view(record)

    @strict
    def recorded(self, keys: Iterable[str]) -> frozenset[str]:
        """The idempotency keys among ``keys`` that a record of the log holds, checked against the log's own
        bytes (an index entry from the cache that does not check out is dropped), after catching up."""
        with self._store.session() as session:
            self._catch_up(session)
            return frozenset(key for key in keys if _original(session, self._keys, key) is not None)

    # ----------------------------------------------------------- commands

    def execute(self, command: Command, *, expected_seq: int | None = None, trace: Trace | str | None = None) -> Ack:
        """Decide one command and append its event; return its ack (or the original's, for a retried key)."""
        [ack] = self.execute_many([command], expected_seq=expected_seq, trace=trace)
        return ack

    def execute_many(
        self, commands: Iterable[Command], *, expected_seq: int | None = None, trace: Trace | str | None = None
    ) -> list[Ack]:
        """Decide commands in order and append all their events with one write and one fsync (group commit).

        All or nothing: if any command is refused, nothing is written; and after a crash too: more than one
        command's events are written between a ``log.batch`` begin and end, and readers take none of them
        unless the end is there. A store without a writer lock (a
        database) may find that another writer appended first: the commands are then decided again against
        the new head, up to a bounded number of times, or refused STALE_EXPECTED_SEQ when ``expected_seq``
        was given. A command whose field holds a value of another type than the field's is refused
        INVALID_ARGUMENT. Every event is recorded in the W3C trace context ``trace`` (a traceparent, or a
        :class:`~plantrail.ledger.vocabulary.events.Trace`; by default :func:`plantrail.ledger.tracing.traced`'s
        or the current OpenTelemetry span's); an invalid one is INVALID_TRACE_CONTEXT, and nothing is written.
        """
        if isinstance(commands, str | bytes | Mapping) or not isinstance(commands, Iterable):
            raise refuse("commands", commands, "a list of plantrail commands", where="Ledger.execute_many")
        if expected_seq is not None and (type(expected_seq) is bool or not isinstance(expected_seq, int)):
            raise refuse("expected_seq", expected_seq, "an integer or None", where="Ledger.execute_many")
        if trace is not None and not isinstance(trace, str | Trace):
            raise refuse("trace", trace, "a traceparent (str), a Trace or None", where="Ledger.execute_many")
        batch = list(commands)
        for command in batch:
            declaration_of(command).check_fields(command)
        return self._execute_checked(batch, expected_seq, trace)

    def _execute_checked(
        self, commands: list[Command], expected_seq: int | None, trace: Trace | str | None = None
    ) -> list[Ack]:
        """:meth:`execute_many` of commands whose types are known to hold (built from checked arguments)."""
        batch = commands
        self._turn = ()
        found = command_trace(trace)
        for attempt in range(_CONFLICT_RETRIES):
            try:
                acks = self._execute_once(batch, expected_seq, found)
                self._turn = tuple(zip(batch, acks, strict=True))
            except PlantrailError as exc:
                if exc.code != "WRITE_CONFLICT":
                    raise
                if expected_seq is not None:
                    raise error(
                        "STALE_EXPECTED_SEQ",
                        f"expected the log to end at seq {expected_seq}; another writer appended after it",
                        expected=expected_seq,
                    ) from None
                if attempt == _CONFLICT_RETRIES - 1:
                    raise
                time.sleep(random.uniform(0, min(0.1, 0.001 * 2**attempt)))  # spread colliding writers
                continue
            # Signing comes after the turn is committed, outside the retries: a conflict while signing must
            # never write the turn again, and its error says the commands are recorded.
            if self._signing is not None:
                self._sign_on_policy(acks)
            return acks
        raise AssertionError("unreachable")

    @strict
    def acknowledgement(self, ack: Ack | None = None) -> dict[str, Any]:
        """The acknowledgement document of a command this ledger recorded in its last turn (``ack``, one of the
        acks that turn returned; default: its last command, or the plan a :meth:`create` wrote): what every
        front door answers (see :mod:`plantrail.ledger.acknowledgement`), as the run stands now in this ledger
        (:attr:`unread_state`). USAGE when the ack is not one of the last turn's."""
        from plantrail.ledger.acknowledgement import acknowledgement

        turn = self._turn if ack is None else tuple((c, a) for c, a in self._turn if a == ack)
        if not turn:
            what = "recorded nothing" if ack is None else "recorded no command with that ack"
            raise error("USAGE", f"this ledger's last turn {what}: there is nothing to acknowledge")
        command, acked = turn[-1]
        return acknowledgement(self._state, acked, command)

    def _execute_once(
        self, commands: Sequence[Command], expected_seq: int | None, trace: Trace | None = None
    ) -> list[Ack]:
        with self._store.session() as session:
            self._catch_up(session)
            state = Advancing(self._state)  # each command is decided against the state the batch has reached
            known = self._keys
            added: dict[str, Record] = {}  # records with keys this batch adds; indexed only once written
            done: list[tuple[int, str, bool, str | None]] = []  # seq, hash, duplicate, orphan
            staged: list[Record] = []
            checked_seq = False
            bounded = False  # a log.batch begin is staged
            for command in commands:
                key = command.key
                if key is not None:
                    original = added.get(key) or _original(session, known, key)
                    if original is not None:
                        match(original, command, key)
                        done.append((original.seq, original.h, True, None))
                        continue
                if not checked_seq:
                    _check_expected(session, expected_seq)
                    checked_seq = True
                ts = self._clock()
                data, plan_version, orphan = decide_one(state.current(), command, now=ts)
                if len(commands) > 1 and not bounded:
                    staged.append(self._bound(session, "begin", plan_version))
                    state.add(staged[-1])
                    bounded = True
                record = session.stage(PendingRecord(ts, plan_version, command.actor, data, command.source, key, trace))
                staged.append(record)
                state.add(record)
                if key is not None:
                    added[key] = record
                done.append((record.seq, record.h, False, orphan))
            if bounded:
                staged.append(self._bound(session, "end", state.current().version))
                state.add(staged[-1])
            durable = session.commit()
            self._state = state.result()
            self._grow(staged)
            known.update((k, record_view(r)) for k, r in added.items())
            acks = [
                Ack(seq, h, session.durable(seq) if duplicate else durable, duplicate, orphan)
                for seq, h, duplicate, orphan in done
            ]
        return acks

    def _bound(self, session: Session, part: Literal["begin", "end"], plan_version: int) -> Record:
        """Stage one bound of a group commit (see :class:`ledger.vocabulary.events.LogBatch`)."""
        return session.stage(PendingRecord(self._clock(), plan_version, "runtime", LogBatch(part=part)))

    @strict
    def checkpoint(self, key: bytes) -> Ack:
        """Append a keyed checkpoint over the current head (see :mod:`ledger.checkpoint`); return its ack."""
        from plantrail.ledger.checkpoint import make_checkpoint

        with self._store.session() as session:
            self._catch_up(session)
            data = make_checkpoint(key, self._store.run, session.head_seq, session.head_hash)
            record = session.stage(
                PendingRecord(ts=self._clock(), plan_version=self._state.version, actor="runtime", data=data)
            )
            durable = session.commit()
            self._state = evolve(self._state, record)
            self._grow([record])
        self._turn = ()  # a checkpoint is no command: nothing to acknowledge
        return Ack(seq=record.seq, hash=record.h, durable=durable)

    def sign_on(self, signer: Signer, *, every: int | None = None, at_finish: bool = True) -> None:
        """Sign checkpoints on a policy from now on: after a turn that leaves ``every`` or more records since the
        last signed checkpoint (or since this call), and, with ``at_finish``, after the turn that finishes the
        run. The first signing reads the log to build its tree; the ledger then grows it as records are appended,
        so each later one costs a few hashes (see :meth:`sign_checkpoint`)."""
        from plantrail.ledger.signing import Signer

        if not isinstance(signer, Signer):
            raise refuse("signer", signer, "a Signer (ledger.signing.load_signer)", where="Ledger.sign_on")
        if every is not None and (type(every) is not int or every < 1):
            raise refuse("every", every, "a positive integer or None", where="Ledger.sign_on")
        if type(at_finish) is not bool:
            raise refuse("at_finish", at_finish, "True or False", where="Ledger.sign_on")
        self._signing = (signer, every, at_finish)
        self._signed_at = self._state.last_seq

    def _sign_by(self, policy: SigningPolicy) -> None:
        """Sign on a front door's policy (:func:`ledger.signing.signing`): as :meth:`sign_on`, counting the records
        since the log's last signed checkpoint (each command of a front door may open the log anew)."""
        from plantrail.ledger.reading import tail_records
        from plantrail.ledger.vocabulary.events import LogSigned

        self.sign_on(policy.signer, every=policy.every, at_finish=policy.at_finish)
        if policy.every is not None:
            head = self._state.last_seq
            since = max(0, head - policy.every + 1)
            found, _ = tail_records(self._location, 1, lambda r: type(r.data) is LogSigned, stop_below=since)
            self._signed_at = found[-1].seq if found else max(-1, head - policy.every)

    def _sign_on_policy(self, acks: list[Ack]) -> None:
        """Append a signed checkpoint after a turn when :meth:`sign_on`'s policy asks for one (the turn's
        acknowledgement is kept)."""
        assert self._signing is not None
        signer, every, at_finish = self._signing
        finished = at_finish and self._state.outcome_seq in {a.seq for a in acks if not a.duplicate}
        due = every is not None and self._state.last_seq - self._signed_at >= every
        if finished or due:
            turn = self._turn
            try:
                self.sign_checkpoint(signer)
            except PlantrailError as exc:
                recorded = ", ".join(str(a.seq) for a in acks)
                raise error(
                    exc.code,
                    f"the turn's commands were recorded (seq {recorded}), but its signed checkpoint was not: "
                    f"{exc.message}",
                    recorded=[a.seq for a in acks],
                ) from None
            finally:
                self._turn = turn

    @strict
    def sign_checkpoint(self, signer: Signer) -> Ack:
        """Append a signed checkpoint over the current head (see :mod:`ledger.signing`): the root of the RFC 6962
        tree over every record's line hash, signed as a C2SP checkpoint; return its ack. The first one reads the
        log to build the tree, which the ledger then keeps (its frontier, a hash per bit of the log's size) and
        grows with every record it writes or catches up with, so a later one reads nothing more. The tree is
        read again when it does not end at the head (another writer appended meanwhile, or the log was
        repaired); WRITE_CONFLICT after a few tries."""
        from plantrail.ledger.reading import records_from
        from plantrail.ledger.signing import HeadTree, Signer, sign_checkpoint

        if not isinstance(signer, Signer):
            raise refuse("signer", signer, "a Signer (ledger.signing.load_signer)", where="Ledger.sign_checkpoint")
        for _ in range(_SIGN_TRIES):
            if self._tree is None:
                self._tree = HeadTree.of(records_from(self._location, 0))
            with self._store.session() as session:
                self._catch_up(session)  # grows the tree by the records appended since
                tree = self._tree
                seq, head = session.head_seq, session.head_hash
                if tree is None or not tree.covers(seq, head):
                    self._tree = None
                    continue  # it does not end at the head: read it again
                data = sign_checkpoint(signer, self._store.run, seq, head, tree.root())
                record = session.stage(
                    PendingRecord(ts=self._clock(), plan_version=self._state.version, actor="runtime", data=data)
                )
                durable = session.commit()
                self._state = evolve(self._state, record)
                self._grow([record])
            self._turn = ()  # a checkpoint is no command: nothing to acknowledge
            self._signed_at = record.seq
            return Ack(seq=record.seq, hash=record.h, durable=durable)
        raise error(
            "WRITE_CONFLICT", f"other writers kept appending while the tree was read ({_SIGN_TRIES} tries); try again"
        )

    # Every recording method takes the options of its CLI command as keyword-only arguments, named alike:
    # ``plan_version`` (--plan-version), ``attempt`` (--attempt), ``started_seq`` (--started-seq),
    # ``idempotency_key`` (--idempotency-key), ``expected_seq`` (--expected-seq), ``actor`` (--actor), plus
    # ``source`` (where an imported event came from). An unknown keyword is Python's TypeError naming it. Each
    # is built from its command's declaration (see _Recording): its signature, defaults and docstring are the
    # declared method's.

    start = _Recording(attempts.start)
    complete = _Recording(attempts.complete)
    block = _Recording(attempts.block)
    fail = _Recording(attempts.fail)
    verify_criterion = _Recording(criteria.verify_criterion)
    finish = _Recording(outcomes.finish)
    heartbeat = _Recording(leases.heartbeat)
    abandon = _Recording(leases.abandon)
    adopt = _Recording(adoption.adopt)
    observe = _Recording(observations.observe)
    replan = _Recording(reconcile.replan)
    extend = _Recording(extension.extend)
    request_approval = _Recording(approvals.request_approval)
    approve = _Recording(approvals.approve)
    deny = _Recording(approvals.deny)
    request_effect = _Recording(effects.request_effect)
    commit_effect = _Recording(effects.commit_effect)


def _agent_draft(
    steps: Sequence[Mapping[str, Any]], criteria: Sequence[Mapping[str, Any]] | None, max_in_progress: int | None
) -> dict[str, Any]:
    """The draft terms an agent's plan call gives: its steps, its criteria and its focus limit when given."""
    draft: dict[str, Any] = {"steps": steps}
    if criteria is not None:
        draft["acceptance_criteria"] = criteria
    if max_in_progress is not None:
        draft["policy"] = {"max_in_progress": max_in_progress}
    return draft


def _kept_criteria(plan: PlanSpec) -> list[dict[str, Any]]:
    """The criteria an agent's replan (:meth:`Ledger.set_plan`) that gives none keeps: the active ones by their
    own fields (their typed checks are carried with the other terms)."""
    return [{"id": c.id, "description": c.description} for c in plan.acceptance_criteria]


def _kept_policy(plan: PlanSpec, given: Any) -> Any:
    """The policy of an agent's replan (:meth:`Ledger.set_plan`) that gives some of it: the active one (budgets
    included) with what the call gives changed (what is not a mapping is left for the draft to refuse)."""
    from plantrail.ledger.vocabulary.draft_writer import policy_draft

    return {**policy_draft(plan.policy), **given} if isinstance(given, Mapping) else given


class _Closed:
    """The writer of a closed ledger: whatever is asked of it is refused LEDGER_NOT_OPEN."""

    def __getattr__(self, name: str) -> Any:
        raise error("LEDGER_NOT_OPEN", "this ledger is closed: open the log again with Ledger.open(path)")


def _state_cache(store: RunWriter) -> StateCache | None:
    """The writer as a :class:`StateCache` when its store keeps one (an optional capability; asked of its methods
    rather than with ``isinstance``, which costs a protocol's check on every call)."""
    has = callable(getattr(store, "resume", None)) and callable(getattr(store, "checkpoint", None))
    return cast("StateCache", store) if has else None


def _original(session: Session, known: dict[str, KeyEntry], key: str) -> Record | None:
    """The record ``key`` wrote, read from the log's own bytes; None when the log holds none (then an index
    entry that claimed one, e.g. from a cache, is dropped: the command is decided as new)."""
    entry = known.get(key)
    if entry is None:
        return None
    record = session.record(entry.seq, entry.hash)
    if record is None or record.key != key:
        del known[key]
        return None
    return record


def _check_expected(session: Session, expected_seq: int | None) -> None:
    if expected_seq is not None and expected_seq != session.head_seq:
        raise error(
            "STALE_EXPECTED_SEQ",
            f"expected the log to end at seq {expected_seq}; it ends at seq {session.head_seq}",
            expected=expected_seq,
            actual=session.head_seq,
        )
