"""The ``observe`` command: record an observation's version (the rules are in
:mod:`ledger.observations`, what it invalidates in :mod:`projections.lineage_digest`).

It parses its arguments, calls one library function, and renders the acknowledgement as the recording
commands do.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

import click

from plantrail.cli.common import log_argument
from plantrail.cli.record import _LATE_REFUSED, _plan_version_option, _run, _write_options

if TYPE_CHECKING:
    from plantrail.ledger.vocabulary.events import Actor

__all__ = ["observe"]


@click.command()
@log_argument
@click.argument("name", metavar="KEY")
@click.argument("version")
@click.option(
    "--dirty",
    multiple=True,
    metavar="PATH",
    help="A file that is dirty (changed, not committed) at this version (repeatable; for a repository).",
)
@_plan_version_option(f"{_LATE_REFUSED}.")
@_write_options("runtime")
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
    """Record VERSION of the observation KEY (a repository HEAD, a schema version ...). Format v2
    (observation.recorded).

    When it differs from the version the plan was made from (the draft's ``observed``), status, next and
    resume flag the plan as possibly stale; a step whose inputs name KEY is judged by the digest rules: a
    pending one becomes stale, one in progress is marked for cancellation (end it with abandon), a completed
    one that consumed another version becomes stale.

    \b
    Example:
      plantrail observe run.jsonl repo "$(git rev-parse HEAD)" --dirty src/app.py
      plantrail observe run.jsonl db-schema 42
    """
    from plantrail.ledger.rules.observations import Observe

    command = Observe(
        name=name, version=version, dirty=dirty, plan_version=plan_version, key=key, actor=cast("Actor", actor)
    )
    _run(log, command, expected_seq, as_json)
