"""The ``observe`` command: record an observation's version (the rules are in
:mod:`ledger.rules.observations`, what it invalidates in :mod:`projections.lineage_digest`).

It parses its arguments, calls one library function, and renders the acknowledgement as the recording
commands do.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

import click

from plantrail.cli.common import log_argument
from plantrail.cli.record import _help, _plan_version_option, _run, _write_options
from plantrail.ledger.rules.observations import OBSERVE

if TYPE_CHECKING:
    from plantrail.ledger.vocabulary.events import Actor

__all__ = ["observe"]


@click.command(help=OBSERVE.cli["observe"].text)
@log_argument
@click.argument("name", metavar="KEY")
@click.argument("version")
@click.option("--dirty", multiple=True, metavar=OBSERVE.field("dirty").metavar, help=_help(OBSERVE, "dirty"))
@_plan_version_option(OBSERVE)
@_write_options(OBSERVE)
def observe(
    log: str,
    name: str,
    version: str,
    dirty: tuple[str, ...],
    plan_version: int | None,
    expected_seq: int | None,
    key: str | None,
    actor: str,
    as_json: bool,
) -> None:
    from plantrail.ledger.rules.observations import Observe

    command = Observe(
        name=name, version=version, dirty=dirty, plan_version=plan_version, key=key, actor=cast("Actor", actor)
    )
    _run(log, command, expected_seq, as_json)
