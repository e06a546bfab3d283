"""``plantrail export``: a run sent to another system's format (``export otel``: OpenTelemetry spans)."""

from __future__ import annotations

import click

from plantrail.cli.export_otel import otel

__all__ = ["export"]


@click.group()
def export() -> None:
    """Send a run to another system, in that system's format.

    \b
    Example:
      plantrail export otel run.jsonl --endpoint http://localhost:4318/v1/traces
    """


export.add_command(otel)
