"""The ``effect`` command: a step's side effect requested or committed (the rules are in
:mod:`ledger.rules.effects`).

It parses its arguments, calls one library function, and renders the acknowledgement as the recording
commands do, with the effect as it stands after the record.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

import click

from plantrail.cli.common import emit, log_argument, readiness_lines
from plantrail.cli.record import _attempt_option, _help, _plan_version_option, _write_options
from plantrail.cli.terminal import printable
from plantrail.ledger.rules.effects import COMMIT_EFFECT, REQUEST_EFFECT

if TYPE_CHECKING:
    from plantrail.ledger.rules.effects import CommitEffect, RequestEffect
    from plantrail.ledger.stores.values import Ack
    from plantrail.ledger.vocabulary.events import Actor
    from plantrail.projections.model import PlanState

__all__ = ["effect", "effect_commands", "effect_lines"]

_ASK, _DONE = REQUEST_EFFECT, COMMIT_EFFECT


@click.command(help=_ASK.cli["effect"].text)
@log_argument
@click.argument("step")
@click.option("--requested", metavar=_ASK.field("effect").metavar, help=_help(_ASK, "effect"))
@click.option("--committed", metavar=_DONE.field("effect").metavar, help=_help(_DONE, "effect"))
@click.option("--target", metavar=_ASK.field("target").metavar, help=_help(_ASK, "target"))
@click.option("--before", metavar=_ASK.field("before").metavar, help=_help(_ASK, "before"))
@click.option("--result", metavar=_DONE.field("result").metavar, help=_help(_DONE, "result"))
@_plan_version_option(_ASK)
@_attempt_option(_ASK)
@_write_options(_ASK)
def effect(
    log: str,
    step: str,
    requested: str | None,
    committed: str | None,
    target: str | None,
    before: str | None,
    result: str | None,
    plan_version: int | None,
    attempt: int | None,
    expected_seq: int | None,
    key: str | None,
    actor: str,
    as_json: bool,
) -> None:
    from plantrail.ledger.rules.effects import CommitEffect, RequestEffect
    from plantrail.ledger.vocabulary.errors import error

    if (requested is None) == (committed is None):
        raise error("USAGE", "give exactly one of --requested KEY or --committed KEY")
    who = cast("Actor", actor)
    command: RequestEffect | CommitEffect
    if requested is not None:
        if target is None:
            raise error("USAGE", "--requested needs --target TARGET")
        if result is not None:
            raise error("USAGE", "--result goes with --committed")
        command = RequestEffect(
            step=step,
            effect=requested,
            target=target,
            before=before or "",
            plan_version=plan_version,
            attempt=attempt,
            key=key,
            actor=who,
        )
    else:
        assert committed is not None
        if target is not None or before is not None:
            raise error("USAGE", "--target and --before go with --requested")
        command = CommitEffect(
            step=step,
            effect=committed,
            result=result or "",
            plan_version=plan_version,
            attempt=attempt,
            key=key,
            actor=who,
        )
    _record(log, command, expected_seq, as_json)


def _record(log: str, command: RequestEffect | CommitEffect, expected_seq: int | None, as_json: bool) -> None:
    from plantrail.ledger.api import Ledger

    with Ledger.open(log) as ledger:
        ack = ledger.execute(command, expected_seq=expected_seq)
        _acknowledge(ledger.unread_state, command, ack, ledger.acknowledgement(ack), as_json)


def _acknowledge(
    state: PlanState, command: RequestEffect | CommitEffect, ack: Ack, data: dict[str, Any], as_json: bool
) -> None:
    """Print the acknowledgement document ``data`` (JSON), or its rendering with the effect as it stands."""
    from plantrail.cli.common import truncate
    from plantrail.ledger.rules.effects import RequestEffect

    found = data["effect"]
    what = f"effect {'--requested' if isinstance(command, RequestEffect) else '--committed'} {command.effect.strip()}"

    def human() -> str:
        if ack.duplicate:
            return f"seq {ack.seq}: {what} was already recorded under this idempotency key; nothing written"
        if ack.orphan:
            first = f"seq {ack.seq}: {what} of {command.step} is late: recorded beside the orphans ({ack.orphan})"
        else:
            first = f"seq {ack.seq}: {what} of {command.step} recorded (plan v{state.version})"
        lines = [first]
        if found is not None:
            lines.append(f"effect {found['key']}: {found['status']} (target {truncate(found['target'], 80)})")
        lines.append(f"anchor: {data['anchor']}")
        if state.outcome:
            lines.append(f"run: {state.outcome}")
        if not state.finished:
            lines += readiness_lines(state)
        return "\n".join(lines)

    emit(as_json, data, human)


def effect_lines(title: str, items: list[dict[str, Any]]) -> list[str]:
    """The text lines of a list of effects (as :func:`projections.effects.effect_view` shows them): a title
    with the count, then one line each; nothing when there are none."""
    from plantrail.cli.common import truncate

    if not items:
        return []
    lines = [f"{title} ({len(items)})"]
    for e in items:
        late = f" · late ({e['late']})" if e["late"] else ""
        said = f" · result {truncate(e['result'], 60)}" if e["committed_seq"] is not None and e["result"] else ""
        lines.append(
            f"  {printable(e['key'])}  {e['step']} attempt {e['attempt']} (v{e['plan_version']}) · target "
            f"{truncate(e['target'], 50)} · requested at seq {e['requested_seq']}{late}{said}"
        )
    return lines


effect_commands = (effect,)
