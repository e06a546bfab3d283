"""``plantrail export``: a run sent to another system's format (``export otel``: OpenTelemetry spans), or runs
kept as an evidence pack (``export pack``)."""

from __future__ import annotations

import click

from plantrail.cli.export_otel import otel
from plantrail.cli.export_pack import pack

__all__ = ["export"]


@click.group()
def export() -> None:
    """Send a run to another system, in that system's format.

    \b
    Example:
      plantrail export otel run.jsonl --endpoint http://localhost:4318/v1/traces
      plantrail export pack run.jsonl -o evidence.zip
    """


export.add_command(otel)
export.add_command(pack)
