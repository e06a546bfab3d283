"""The command that extends a plan version in place: ``plantrail extend``.

It parses the extension document, calls :meth:`Ledger.extend <plantrail.ledger.api.Ledger.extend>` and renders
the acknowledgement as every recording command does; the rule is :mod:`plantrail.ledger.rules.extension`'s.
"""

from __future__ import annotations

import click

from plantrail.cli.common import log_argument, read_json_file
from plantrail.cli.record import _plan_version_option, _run, _write_options
from plantrail.ledger.rules.extension import EXTEND
from plantrail.ledger.vocabulary.limits import PATCH

__all__ = ["extend"]


@click.command(help=EXTEND.cli["extend"].text)
@log_argument
@click.argument("additions", metavar="ADDITIONS")
@_plan_version_option(EXTEND)
@_write_options(EXTEND)
def extend(
    log: str,
    additions: str,
    plan_version: int | None,
    expected_seq: int | None,
    key: str | None,
    actor: str,
    as_json: bool,
) -> None:
    from typing import cast

    from plantrail.ledger.rules.decide import Extend
    from plantrail.ledger.vocabulary.events import Actor
    from plantrail.ledger.vocabulary.extension import parse_additions

    parsed = parse_additions(read_json_file(additions, PATCH))
    command = Extend(
        steps=parsed.steps,
        criteria=parsed.criteria,
        plan_version=parsed.base_version if plan_version is None else plan_version,
        key=key,
        actor=cast("Actor", actor),
    )
    _run(log, command, expected_seq, as_json)
