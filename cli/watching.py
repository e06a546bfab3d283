"""``plantrail watch``: follow a log as it grows and redraw the status, the last few events and the advice.

The log is read once from the start, then followed from the position the last read ended at (a look at the
file every ``interval`` seconds; new records are folded onto the state, never the whole log again). A torn
record is never shown (a line is shown once it is complete and checked), a repair is read on, and when the
log changes under the watch (cut back, or another file put at its path) the watch says so and folds the log
again from its start (see :mod:`plantrail.ledger.stores.jsonl.follow`). On a terminal each change redraws
the screen; otherwise each new event is one plain line. Text from the log
never reaches the terminal raw: :func:`terminal_safe` shows every control character as an escape, so the
redraw is the only escape sequence plantrail writes. Ctrl-C ends the watch cleanly.

:func:`frame` and :func:`event_line` are pure renderings.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Final, TextIO

from plantrail.ledger.stores.values import Rewound

if TYPE_CHECKING:
    from plantrail.ledger.vocabulary.events import Record
    from plantrail.projections.model import PlanState

__all__ = ["REDRAW", "event_line", "follow", "frame", "terminal_safe"]

#: Cursor home and clear to the end of the screen: the one escape sequence the watch writes.
REDRAW: Final = "\x1b[H\x1b[J"


def terminal_safe(text: str) -> str:
    """``text`` with every control character (ESC, CR, BEL, C1 controls, …) shown as a Python escape, newlines
    kept: nothing a terminal would act on (each line through :func:`cli.tables.cell`)."""
    from plantrail.cli.tables import cell

    return "\n".join(cell(line) for line in text.split("\n"))


def _detail(record: Record) -> str:
    data = record.data
    for name in ("evidence", "reason", "error", "why", "verdict"):
        value = getattr(data, name, None)
        if isinstance(value, tuple):
            value = "; ".join(value)
        if isinstance(value, str) and value:
            return value
    return ""


def event_line(record: Record, width: int = 100) -> str:
    """One event as a line: seq, time, actor, type, subject, version and its evidence or reason (escaped)."""
    from plantrail.cli.common import truncate

    data = record.data
    subject = getattr(data, "step", None) or getattr(data, "criterion", None) or getattr(data, "outcome", None) or ""
    head = f"seq {record.seq} · {record.ts[11:19]} · {record.actor} · {record.type} {subject} (v{record.plan_version})"
    detail = _detail(record)
    line = f"{head}: {truncate(detail, max(width - len(head) - 2, 12))}" if detail else head
    return terminal_safe(line)


def frame(state: PlanState, recent: Sequence[Record], width: int = 100) -> str:
    """The whole screen: the status table, the last few events and the advice (no escape sequence)."""
    from plantrail.cli.inspect import render_status
    from plantrail.projections.views import advice, status_view

    lines = [render_status(state, status_view(state)), "", "recent events"]
    lines += [f"  {event_line(r, width - 2)}" for r in recent] or ["  (none)"]
    hint = advice(state)
    lines += ["", f"advice: {hint or 'none'}", "(watching; Ctrl-C to stop)"]
    return terminal_safe("\n".join(lines))


def _is_terminal(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def _columns() -> int:
    """The screen's width, as every table takes it (:func:`plantrail.cli.terminal.columns`)."""
    from plantrail.cli.terminal import columns

    return columns()


def follow(
    path: str,
    out: TextIO,
    *,
    recent: int = 8,
    interval: float = 0.05,
    until: Callable[[], bool] | None = None,
    as_json: bool = False,
) -> None:
    """Watch ``path`` (a JSONL log or a database run) until Ctrl-C (or until ``until()`` is true, asked before
    each wait), writing to ``out``; ``as_json`` writes JSON Lines (the status document, then one ``{"event",
    "advice"}`` per event) instead."""
    from plantrail.ledger.stores.opener import as_run

    live = _is_terminal(out) and not as_json
    screen = _Screen(out, live, as_json, deque(maxlen=recent))
    try:
        with as_run(path) as run:  # a file by its size (everything new at once), a database run woken by NOTIFY
            state = screen.first(run.records())
            for batch in run.follow(after=state.last_seq, poll=interval, stop=until):
                state = screen.more(state, batch)
    except KeyboardInterrupt:
        pass
    finally:
        if live:
            out.write("\n")
        out.flush()


class _Screen:
    """What the watch writes: the first frame, then each batch of new records folded onto the state; after a
    :class:`Rewound` notice (the log changed under the watch), the log again from its start, folded anew, of
    which only the records after the last one still held are new."""

    def __init__(self, out: TextIO, live: bool, as_json: bool, last: deque[Record]) -> None:
        self.out, self.live, self.as_json, self.last = out, live, as_json, last
        self.notice: str | None = None  # the last notice, shown under each frame drawn after it
        self.known = -1  # records up to this seq were shown already (set by a notice that starts over)
        self.restarting = False  # the next batch is the log again from its start

    def first(self, records: Iterable[Record]) -> PlanState:
        from plantrail.projections.state import fold
        from plantrail.projections.views import status_view

        state = fold(_noted(records, self.last, []))
        self.out.write(
            _json_line(status_view(state))
            if self.as_json
            else (REDRAW if self.live else "") + frame(state, self.last, _columns()) + "\n"
        )
        self.out.flush()
        return state

    def more(self, state: PlanState, records: list[Record]) -> PlanState:
        from plantrail.projections.history import quote_record
        from plantrail.projections.state import fold, initial
        from plantrail.projections.views import advice

        if isinstance(records, Rewound):
            return self._rewound(state, records)
        fresh: list[Record] = []
        before = advice(state)
        if self.restarting and records:
            state, self.restarting = initial(), False
        state = fold(_noted(records, self.last, fresh), state)
        fresh = [r for r in fresh if r.seq > self.known]
        if fresh and self.as_json:
            self.out.writelines(_json_line({"event": quote_record(r), "advice": advice(state)}) for r in fresh)
            self.out.flush()
        elif fresh or (self.live and records):
            _update(self.out, self.live, state, self.last, fresh, before, self.notice)
        return state

    def _rewound(self, state: PlanState, notice: Rewound) -> PlanState:
        """Say what happened; when the follower starts over, forget what was shown after what the log still holds."""
        self.notice = f"note: {notice.message}"
        if notice.from_seq == 0:
            self.known, self.restarting = notice.kept, True
            self.last.clear()
        if self.as_json:
            self.out.write(_json_line({"rewound": notice.as_dict()}))
        elif not self.live:
            self.out.write(terminal_safe(self.notice) + "\n")
        else:
            self.out.write(REDRAW + frame(state, self.last, _columns()) + "\n" + terminal_safe(self.notice) + "\n")
        self.out.flush()
        return state


def _json_line(data: object) -> str:
    import orjson

    return orjson.dumps(data).decode() + "\n"


def _noted(records: Iterable[Record], last: deque[Record], fresh: list[Record]) -> Iterable[Record]:
    """``records`` unchanged; each event (not a ``log.*`` record) also goes to ``last`` and ``fresh``."""
    for record in records:
        if not record.type.startswith("log."):
            last.append(record)
            fresh.append(record)
        yield record


def _update(
    out: TextIO,
    live: bool,
    state: PlanState,
    last: Sequence[Record],
    fresh: Sequence[Record],
    before: str | None,
    notice: str | None = None,
) -> None:
    """Redraw the screen (a terminal), or print the new events as plain lines and a changed advice."""
    from plantrail.projections.views import advice

    width = _columns()
    if live:
        out.write(REDRAW + frame(state, last, width) + "\n" + (terminal_safe(notice) + "\n" if notice else ""))
    else:
        out.writelines(event_line(r, width) + "\n" for r in fresh)
        now = advice(state)
        if now != before:
            out.write(f"advice: {now or 'none'}\n")
    out.flush()
