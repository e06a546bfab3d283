"""Commands that check and mend: verify, checkpoint, repair, salvage, schema."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from plantrail.cli.common import FilePath, emit, json_option, log_argument, truncate

if TYPE_CHECKING:
    from plantrail.ledger.stores.jsonl.salvage import SalvageReport
    from plantrail.ledger.verify import VerifyReport

__all__ = ["maintain_commands"]


@click.command()
@log_argument
@click.option(
    "--anchor",
    metavar="SEQ:HASH",
    help="An anchor printed earlier (by verify, status, import or a recording command): prove the log still holds it.",
)
@click.option(
    "--key-file",
    metavar="FILE",
    help="Check every keyed checkpoint's MAC with this key (default: $PLANTRAIL_CHECKPOINT_KEY if set).",
)
@click.option(
    "--parent",
    metavar="LOG",
    type=FilePath(dir_okay=False, path_type=str),
    help="For a forked run: the parent's log (a run id in --store too), which must hold the hash and the state "
    "the fork carries.",
)
@json_option
def verify(
    log: str, anchor: str | None, key_file: str | None, parent: str | None, as_json: bool, store: str | None
) -> None:
    """Check everything: framing, seq, hash chain, every event legal in order, no late result applied, and a
    deterministic fold. Prints the head as an anchor (SEQ:HASH: keep it, and paste it into a later
    --anchor) and the state hash. With a checkpoint key, every checkpoint's MAC must verify and at least
    one must exist.

    \b
    JSON: {"ok", "records", "last_seq", "head_hash", "anchor": "SEQ:HASH" (the head), "anchor_checked"
      (the --anchor given, or null), "head" (the same as anchor), "state_hash", "versions", "orphans",
      "outcome", "checkpoints", "checkpointed_seq", "keyed", "torn": null | {"offset", "length", "line"},
      "parent": null | {"run", "seq"} (the parent checked with --parent), "adopted" (the late completions
      plantrail adopt took into the plan)}

    \b
    Example:
      plantrail verify samples/login-fix.jsonl
      plantrail verify run.jsonl --anchor 14:3f2a...   # the head an earlier verify printed
      plantrail verify run.jsonl --key-file ~/.plantrail/audit.key
      plantrail verify retry.jsonl --parent run.jsonl   # a fork against the log it was forked from
    """
    import os

    from plantrail.cli.common import locate_log, raise_if_torn
    from plantrail.cli.progress import progress_bar, size_of
    from plantrail.ledger.checkpoint import KEY_ENV, load_key
    from plantrail.ledger.verify import parse_anchor, verify_log

    key = load_key(key_file) if key_file is not None or os.environ.get(KEY_ENV) else None
    with progress_bar("verify", size_of(log), enabled=not as_json) as shown:
        report = verify_log(
            log,
            anchor=parse_anchor(anchor) if anchor else None,
            key=key,
            on_progress=shown,
            parent=None if parent is None else locate_log(parent, store),
        )
    head = f"{report.last_seq}:{report.head_hash}"
    data = report._asdict() | {
        "ok": report.torn is None,
        "anchor": head,
        "anchor_checked": anchor,
        "head": head,
        "torn": None if report.torn is None else report.torn._asdict(),
        "parent": None if report.parent is None else {"run": report.parent[0], "seq": report.parent[1]},
    }
    emit(as_json, data, lambda: _render_verify(report, anchor))
    raise_if_torn(log, report.torn)


def _render_verify(report: VerifyReport, anchor: str | None) -> str:
    checked = f"{report.records} records, seq 0..{report.last_seq}, hash chain intact, every event legal in order"
    if report.torn is None:
        verdict = f"ok: {checked}"
    else:
        verdict = f"NOT ok: a torn tail follows the valid part ({checked}); see the error below"
    lines = [
        verdict,
        (
            f"plan versions: {report.versions} · late results (orphans): {report.orphans}, "
            + (f"{report.adopted} adopted by plantrail adopt, no other applied" if report.adopted else "none applied")
            + f" · outcome: {report.outcome or 'open'}"
        ),
        f"anchor: {report.last_seq}:{report.head_hash}",
        f"state hash: {report.state_hash}",
    ]
    if report.grew:
        lines.append(
            f"verified up to seq {report.last_seq} (the first {report.verified_bytes} bytes): the log grew while "
            "verify read it, and what was appended after is not covered"
        )
    if anchor:
        lines.insert(1, f"checked anchor {anchor}: the log still holds it")
    if report.parent is not None:
        run, seq = report.parent
        lines.insert(1, f"checked parent: run {run} holds at seq {seq} the hash and the state this fork carries")
    if report.checkpoints:
        checked = "MACs verified with the key" if report.keyed else "MACs not checked (no key given)"
        after = report.last_seq - (report.checkpointed_seq or 0)
        lines.insert(
            1,
            f"checkpoints: {report.checkpoints}, {checked}; the last covers seq {report.checkpointed_seq}"
            f" ({after} record(s) after it rest on the chain alone)",
        )
    return "\n".join(lines)


@click.command()
@log_argument
@click.option(
    "--key-file",
    metavar="FILE",
    help="The HMAC key (at least 16 bytes; a trailing newline is ignored). Default: $PLANTRAIL_CHECKPOINT_KEY.",
)
@json_option
def checkpoint(log: str, key_file: str | None, as_json: bool) -> None:
    """Append a keyed checkpoint: an HMAC-SHA256, under a key kept outside the log, over the run id and the
    head's seq and hash. Someone who can rewrite the file but lacks the key can no longer re-chain history
    unnoticed (verify --key-file). Keep the printed anchor too: it also catches a cut-off tail.

    \b
    Example:
      PLANTRAIL_CHECKPOINT_KEY=$(cat ~/.plantrail/audit.key) plantrail checkpoint run.jsonl
      plantrail checkpoint run.jsonl --key-file ~/.plantrail/audit.key
    """
    from plantrail.ledger.api import Ledger
    from plantrail.ledger.checkpoint import key_id, load_key

    key = load_key(key_file)
    with Ledger.open(log) as ledger:
        ack = ledger.checkpoint(key)
    data = {
        "ok": True,
        "seq": ack.seq,
        "hash": ack.hash,
        "covers_seq": ack.seq - 1,
        "key_id": key_id(key),
        "anchor": f"{ack.seq}:{ack.hash}",
        "durable": ack.durable,
    }
    emit(
        as_json,
        data,
        lambda: (
            f"checkpoint at seq {ack.seq} covers seq {ack.seq - 1} (key {data['key_id']})\nanchor: {data['anchor']}"
        ),
    )


@click.command()
@log_argument
@click.option(
    "--acked",
    metavar="SEQ:HASH",
    help="The last record your writer acknowledged: refuse (DATA_LOSS) instead of cutting it off.",
)
@json_option
def repair(log: str, acked: str | None, as_json: bool) -> None:
    """Repair a torn tail: move the torn bytes to a quarantine file beside LOG (never deleted), cut the log back
    to its last valid record, and append a log.repaired record. Any other damage is refused.

    \b
    Example:
      plantrail repair run.jsonl
    """
    import msgspec

    from plantrail.ledger.stores.jsonl.log import repair as repair_log
    from plantrail.ledger.verify import parse_anchor
    from plantrail.ledger.vocabulary.events import LogRepaired

    result = repair_log(log, acked=parse_anchor(acked) if acked else None)
    record = result.record
    data = {
        "ok": True,
        "repaired": record is not None,
        "last_seq": result.last_seq,
        "repair": None if record is None else msgspec.to_builtins(record.data),
        "reads_as": [r.as_dict() for r in result.reads_as],
        "removed_temp_files": list(result.removed_temps),
    }

    def human() -> str:
        if record is None:
            lines = [f"nothing to repair: {log} ends with a complete record (seq {result.last_seq})"]
        else:
            d = record.data
            assert isinstance(d, LogRepaired)
            lines = [
                (
                    f"repaired {log}: {d.bytes} torn bytes at offset {d.truncated_at} moved to {d.quarantine}; "
                    f"log.repaired recorded at seq {record.seq}"
                )
            ]
            lines += ["the torn bytes read as:"] + [f"  {truncate(r.summary, 110)}" for r in result.reads_as]
        lines += [f"removed {name} (left by a create that crashed)" for name in result.removed_temps]
        return "\n".join(lines)

    emit(as_json, data, human)


@click.command()
@log_argument
@json_option
def salvage(log: str, as_json: bool) -> None:
    """List every record that still verifies and every damaged byte range, to the end of the file, without
    writing anything (not even a repair). Also lists quarantine and leftover temporary files beside LOG.
    Exits 0 when the log is whole, else 3 with the code of the first damage.

    \b
    Example:
      plantrail salvage run.jsonl
      plantrail salvage run.jsonl --json | jq '.damaged'
    """
    from plantrail.ledger.stores.jsonl.salvage import salvage as salvage_log
    from plantrail.ledger.vocabulary.errors import error

    report = salvage_log(log)
    data = {
        "ok": report.clean,
        "path": report.path,
        "size": report.size,
        "records": report.records,
        "segments": report.segments,
        "damaged": [d._asdict() | {"reads_as": [r.as_dict() for r in d.reads_as]} for d in report.damaged],
        "quarantine": [q._asdict() | {"reads_as": [r.as_dict() for r in q.reads_as]} for q in report.quarantine],
        "temp_files": report.temp_files,
    }
    emit(as_json, data, lambda: _render_salvage(report))
    problems = sorted(
        [(d.start, d.first_line, d.code) for d in report.damaged]
        + [(s.start, s.first_line, s.break_code) for s in report.segments if s.break_code]
    )
    if problems:
        offset, line, code = problems[0]
        raise error(
            code,
            f"{log}: {len(problems)} damaged range(s) or chain break(s), the first at line {line} "
            f"(byte {offset}); the records listed above verify on their own",
            line=line,
            offset=offset,
        )


def _render_salvage(report: SalvageReport) -> str:
    lines = [f"{report.path}: {report.size} bytes, {len(report.records)} verifiable record(s)"]
    rows = [
        (
            s.start,
            (
                f"  records  seq {s.first_seq}..{s.last_seq}  lines {s.first_line}..{s.last_line}  "
                f"bytes {s.start}..{s.end}" + (f"  (does not chain on: {s.break_code})" if s.break_code else "")
            ),
        )
        for s in report.segments
    ]
    rows += [
        (
            d.start,
            f"  damaged  lines {d.first_line}..{d.last_line}  bytes {d.start}..{d.end}  {d.code}: {d.message}"
            + "".join(f"\n           reads as: {truncate(r.summary, 100)}" for r in d.reads_as),
        )
        for d in report.damaged
    ]
    lines += [text for _, text in sorted(rows)]
    for q in report.quarantine:
        state = "recorded by a log.repaired record" if q.recorded else "NOT recorded in the log"
        lines.append(f"quarantine: {q.name} ({q.size} bytes cut at offset {q.offset}; {state})")
        lines += [f"  reads as: {truncate(r.summary, 100)}" for r in q.reads_as]
    lines += [f"leftover temporary file: {name} (plantrail repair removes it)" for name in report.temp_files]
    return "\n".join(lines)


@click.command()
@json_option
def schema(as_json: bool) -> None:
    """Print the JSON Schema of one log line (the storage contract). The output is JSON either way; --json
    is accepted like on every other command.

    \b
    Example:
      plantrail schema > plantrail-log.schema.json
      plantrail schema --json
    """
    import orjson

    from plantrail.ledger.vocabulary.codec import json_schema

    click.echo(orjson.dumps(json_schema(), option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS).decode())


maintain_commands = (verify, checkpoint, repair, salvage, schema)
