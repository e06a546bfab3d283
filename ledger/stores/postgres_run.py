"""A run kept in a PostgreSQL database, and the database as a store of runs, as the store protocols' objects.

A database run is never torn (a transaction commits whole or not at all) and keeps no snapshot: its current
state and its versions are folds of its rows. A :class:`DatabaseRun` keeps what it folded, so one question
folds the run's rows at most once (``why`` asks for the versions and the current state: one fold gives both).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, Self

if TYPE_CHECKING:
    from plantrail.ledger.stores.postgres import GlobalPosition, PostgresStore
    from plantrail.ledger.stores.values import PendingRecord, Quarantined, ReadResult, TornTail
    from plantrail.ledger.stores.versions import Versions
    from plantrail.ledger.vocabulary.errors import LogDamaged
    from plantrail.ledger.vocabulary.events import Record
    from plantrail.ledger.vocabulary.fragments import TornRecord
    from plantrail.projections.model import PlanState
    from plantrail.projections.runs import RunRow

__all__ = ["DatabaseRun", "DatabaseStore"]


class DatabaseRun:
    """Run ``location``: ``postgresql://…/db#RUN``."""

    torn: TornTail | None = None  # a database run has no torn tail
    names_its_id = True  # postgresql://…/db#RUN

    def __init__(self, location: str) -> None:
        self.location = location
        self._versions: Versions | None = None
        self._current: ReadResult | None = None

    def __repr__(self) -> str:
        from plantrail.ledger.stores.postgres import parse_location

        return f"DatabaseRun({str(parse_location(self.location))!r})"

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Nothing to release: each read takes a pooled connection and gives it back."""

    @property
    def store(self) -> DatabaseStore:
        """The database the run is in."""
        return DatabaseStore(self.location.partition("#")[0])

    # ----------------------------------------------------------- reading

    def exists(self) -> bool:
        """True when the database holds the run with its header."""
        from plantrail.ledger.vocabulary.errors import PlantrailError

        try:
            self.record_at(0)
        except PlantrailError as exc:
            if exc.code in ("RUN_NOT_FOUND", "UNKNOWN_SEQ"):
                return False
            raise
        return True

    def header(self) -> Record:
        """The run's header record."""
        return self.record_at(0)

    def records(self, *, after: int = -1, upto: int | None = None) -> Iterator[Record]:
        """The run's records after seq ``after`` up to seq ``upto``, each checked to follow the one before it."""
        from plantrail.ledger.stores.postgres import read_range

        return read_range(self.location, from_seq=after + 1, to_seq=upto)

    def record_at(self, seq: int) -> Record:
        """Record ``seq``, its own hash checked; UNKNOWN_SEQ when the run does not reach it."""
        from plantrail.ledger.stores.postgres import record_at

        return record_at(self.location, seq)

    def payload(self, digest: str) -> bytes:
        """The bytes of payload ``digest`` from the run's payload rows, checked against the name
        (PAYLOAD_MISSING, PAYLOAD_ALTERED)."""
        from plantrail.ledger.stores.postgres import read_payload

        return read_payload(self.location, digest)

    def salted_payload(self, digest: str) -> tuple[bytes, bytes]:
        """The salt and the bytes of payload ``digest`` from the run's payload rows, checked against the name."""
        from plantrail.ledger.stores.postgres import read_salted

        return read_salted(self.location, digest)

    def payload_names(self) -> list[str]:
        """The names of the payloads the run's payload rows holds, sorted."""
        from plantrail.ledger.stores.postgres import payload_names

        return payload_names(self.location)

    def tail(
        self, count: int, keep: Callable[[Record], bool], *, stop_below: int = 0
    ) -> tuple[list[Record], TornTail | None]:
        """The last ``count`` records ``keep`` accepts, read backwards from the run's head (never torn)."""
        from plantrail.ledger.stores.postgres import tail_records

        return tail_records(self.location, count, keep, stop_below=stop_below), None

    def follow(
        self,
        *,
        after: int = -1,
        poll: float = 0.2,
        stop: Callable[[], bool] | None = None,
        head: str | None = None,
    ) -> Iterator[list[Record]]:
        """The records after seq ``after`` as they are appended: a NOTIFY wakes the follower, and it looks again
        every ``poll`` seconds as the fallback. A run's rows are never cut or replaced, so ``head`` (the hash the
        caller read record ``after`` with) needs no check here."""
        from plantrail.ledger.stores.postgres import follow_run
        from plantrail.ledger.vocabulary.durations import poll_seconds

        poll = poll_seconds(poll)
        return follow_run(self.location, after=after, poll_s=poll, stop=stop)

    def _fold(self) -> Versions:
        """One fold of the run's rows: every version with its state at its end, and the state at the end."""
        from plantrail.ledger.stores.versions import VersionEntry, listed_versions, versions_in
        from plantrail.projections.state import initial

        found: list[VersionEntry] = []
        endings: dict[int, PlanState] = {}
        final, _ = versions_in(
            self.records(), initial(), lambda entry, _, __: found.append(entry), at_end=endings.__setitem__
        )

        def ending(version: int) -> PlanState:
            return endings[version] if version in endings else self.version_state(version)[0]

        return listed_versions(found, final.run, None, ending)._replace(final=final)

    def torn_records(self, torn: TornTail) -> tuple[TornRecord, ...]:
        """A database run is never torn: nothing."""
        return ()

    def quarantined(self) -> tuple[Quarantined, ...]:
        """A database run is never repaired: nothing is quarantined."""
        return ()

    def current(self, *, use_cache: bool | None = None, stop_at_damage: bool = False) -> ReadResult:
        """The fold of the run's rows (a database keeps no snapshot); with ``stop_at_damage`` a damaged row ends
        the fold, and the result says what stopped it."""
        from plantrail.ledger.stores.values import ReadResult

        if not stop_at_damage:
            if self._current is None:
                final = self._versions.final if self._versions is not None else None
                if final is None:
                    from plantrail.projections.state import fold

                    final = fold(self.records())
                self._current = ReadResult(final, None)
            return self._current
        from plantrail.ledger.stores.values import until_damage
        from plantrail.projections.state import fold

        damage: list[LogDamaged] = []
        state = fold(until_damage(self.records(), damage))
        return ReadResult(state, None, damage[0] if damage else None, None)

    def versions(self) -> Versions:
        """The run's plan versions, from one fold of its rows (a database run keeps no history index)."""
        if self._versions is None:
            self._versions = self._fold()
        return self._versions

    def version_state(self, version: int) -> tuple[PlanState, int | None, TornTail | None]:
        """Version ``version`` as it stood when superseded (or now), folded from the run's rows."""
        from plantrail.projections.history import replay_version

        span = replay_version(self.records(), version)
        return span.state, span.superseded_at, None

    # ----------------------------------------------------------- writing

    def new_run_id(self, given: str | None = None, *, what: str = "the run") -> str:
        """The id a run created here gets: the URL's own (``#RUN``); USAGE when it names none (asking to name
        ``what``), or another id than ``given``."""
        from plantrail.ledger.stores.postgres import parse_location
        from plantrail.ledger.vocabulary.errors import error
        from plantrail.ledger.vocabulary.plan import check_id

        named = parse_location(self.location, run=given).run
        if named is None:
            raise error("USAGE", f"name {what}: {self.location}#RUN_ID")
        return check_id(named, "run id")

    def prepare(self) -> None:
        """Nothing to make: the database creates its tables on first use."""

    def create(
        self, *, run: str | None, first: Sequence[PendingRecord], **options: Any
    ) -> tuple[PostgresStore, list[Record]]:
        """Create the run with its header and ``first`` records in one transaction; LOG_EXISTS when it exists.
        The options a file takes and a database does not (``allow_network_fs``) are ignored."""
        from plantrail.ledger.stores.postgres import PostgresStore

        options.pop("allow_network_fs", None)
        return PostgresStore.create(self.location, run=run, first=first, **options)

    def open_writer(self, **options: Any) -> PostgresStore:
        """The run opened for appending; ``clock`` is the one option a database run takes (``acked`` is the file
        store's: USAGE, a database run is never cut back)."""
        from plantrail.ledger.stores.postgres import PostgresStore
        from plantrail.ledger.vocabulary.errors import error

        if options.get("acked") is not None:
            raise error("USAGE", "acked= is a JSONL store option; a database run is never cut back")
        return PostgresStore.open(self.location, **({"clock": options["clock"]} if "clock" in options else {}))


class DatabaseStore:
    """A PostgreSQL database of runs (``postgresql://…/db``): run ``ID`` is ``postgresql://…/db#ID``."""

    def __init__(self, location: str) -> None:
        self.location = location

    def __repr__(self) -> str:
        return f"DatabaseStore({str(self)!r})"

    def __str__(self) -> str:
        """The database's URL without its password."""
        from plantrail.ledger.stores.postgres import parse_location

        return str(parse_location(self.location))

    def init_schema(self) -> int:
        """Create or upgrade plantrail's tables (idempotent; a newer schema is refused); the schema version."""
        from plantrail.ledger.stores.postgres import init_schema

        return init_schema(self.location)

    def run_ids(self) -> list[str]:
        """The ids of every run in the database, in order."""
        from plantrail.ledger.stores.postgres import list_runs

        return list_runs(self.location)

    def summaries(self, *, reasons: bool = True) -> list[RunRow]:
        """One row per run, from the database's per-run summaries (each checked against the run's head seq; a
        stale or missing one is recomputed from the run's rows), with their replan reasons."""
        from plantrail.ledger.stores.postgres import run_summaries

        return run_summaries(self.location)

    def with_reasons(self, row: RunRow) -> RunRow:
        """``row`` itself: a database's rows carry their replan reasons."""
        return row

    def follow(
        self, *, after: GlobalPosition | None = None, poll: float = 1.0, stop: Callable[[], bool] | None = None
    ) -> Iterator[tuple[GlobalPosition, Record]]:
        """Every record of every run in the order the database committed them, after ``after`` (a position an
        earlier pair gave), waiting for new ones until ``stop()``: a row that commits late is never skipped
        (see :func:`plantrail.ledger.stores.postgres.follow`)."""
        from plantrail.ledger.stores.postgres import follow
        from plantrail.ledger.vocabulary.durations import poll_seconds

        return follow(self.location, after=after, poll_s=poll_seconds(poll), stop=stop)

    def head_position(self) -> GlobalPosition | None:
        """The position after every record committed now (None: the database holds none), for :meth:`follow`
        and :func:`plantrail.ledger.run_changes.run_changes`."""
        from plantrail.ledger.stores.postgres import global_head

        return global_head(self.location)

    def run(self, run_id: str) -> DatabaseRun:
        """Run ``run_id`` of the database; INVALID_ID when it is no run id."""
        from plantrail.ledger.stores.targets import run_in_store

        return DatabaseRun(run_in_store(self.location, run_id))

    def runs(self) -> list[DatabaseRun]:
        """Every run of the database, in the order of their ids."""
        return [self.run(run_id) for run_id in self.run_ids()]
