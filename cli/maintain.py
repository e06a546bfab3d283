"""Commands that check and mend: verify, repair, schema."""

from __future__ import annotations

import click

from cli.common import emit, json_option, log_argument

__all__ = ["maintain_commands"]


@click.command()
@log_argument
@click.option("--anchor", metavar="SEQ:HASH", help="A head printed by an earlier verify: prove the log still holds it.")
@json_option
def verify(log: str, anchor: str | None, as_json: bool) -> None:
    """Check everything: framing, seq, hash chain, every event legal in order, no late result applied, and a
    deterministic fold. Prints the head (keep it as an anchor) and the state hash.

    \b
    Example:
      plantrail verify samples/login-fix.jsonl
      plantrail verify run.jsonl --anchor 14:3f2a...   # the head an earlier verify printed
    """
    from cli.common import raise_if_torn
    from ledger.verify import parse_anchor, verify_log

    report = verify_log(log, anchor=parse_anchor(anchor) if anchor else None)
    data = report._asdict() | {
        "ok": report.torn is None,
        "anchor": anchor,
        "head": f"{report.last_seq}:{report.head_hash}",
        "torn": None if report.torn is None else report.torn._asdict(),
    }

    def human() -> str:
        lines = [
            f"ok: {report.records} records, seq 0..{report.last_seq}, hash chain intact, every event legal in order",
            f"plan versions: {report.versions} · late results (orphans): {report.orphans}, none applied · "
            f"outcome: {report.outcome or 'open'}",
            f"head: {report.last_seq}:{report.head_hash}",
            f"state hash: {report.state_hash}",
        ]
        if anchor:
            lines.insert(1, f"anchor {anchor[:24]}… is in the log")
        return "\n".join(lines)

    emit(as_json, data, human)
    raise_if_torn(log, report.torn)


@click.command()
@log_argument
@click.option("--acked", metavar="SEQ:HASH",
              help="The last record your writer acknowledged: refuse (DATA_LOSS) instead of cutting it off.")
@json_option
def repair(log: str, acked: str | None, as_json: bool) -> None:
    """Repair a torn tail: move the torn bytes to a quarantine file beside LOG (never deleted), cut the log back
    to its last valid record, and append a log.repaired record. Any other damage is refused.

    \b
    Example:
      plantrail repair run.jsonl
    """
    from ledger.jsonl import repair as repair_log
    from ledger.verify import parse_anchor

    result = repair_log(log, acked=parse_anchor(acked) if acked else None)
    record = result.record
    data = {"ok": True, "repaired": record is not None, "last_seq": result.last_seq,
            "repair": None if record is None else record.data}

    def human() -> str:
        if record is None:
            return f"nothing to repair: {log} ends with a complete record (seq {result.last_seq})"
        d = record.data
        return (f"repaired {log}: {d.bytes} torn bytes at offset {d.truncated_at} moved to "  # type: ignore[union-attr]
                f"{d.quarantine}; log.repaired recorded at seq {record.seq}")  # type: ignore[union-attr]

    emit(as_json, data, human)


@click.command()
def schema() -> None:
    """Print the JSON Schema of one log line (the storage contract).

    \b
    Example:
      plantrail schema > plantrail-log.schema.json
    """
    import orjson

    from ledger.codec import json_schema

    click.echo(orjson.dumps(json_schema(), option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS).decode())


maintain_commands = (verify, repair, schema)
