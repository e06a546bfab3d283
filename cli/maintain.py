"""Commands that check and mend: verify, checkpoint, repair, salvage, schema."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from plantrail.cli.common import FilePath, emit, json_option, log_argument, store_option, truncate

if TYPE_CHECKING:
    from plantrail.ledger.stores.jsonl.salvage import SalvageReport
    from plantrail.ledger.verify import VerifyReport

__all__ = ["maintain_commands"]


@click.command()
@click.argument("log", required=False, type=FilePath(dir_okay=True, path_type=str))
@store_option
@click.option(
    "--pack",
    metavar="FILE.zip",
    type=FilePath(dir_okay=False, path_type=str),
    help="Check an evidence pack (export pack) instead of a LOG, offline: every member against the manifest, "
    "every log with the pack's keys, every payload against its name, and every report against what is found.",
)
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
    "--pubkey",
    metavar="FILE",
    help="Check every signed checkpoint with this public key (a .pub file from keygen): the tree of the records "
    "it covers and its signature. Says up to which seq the log is proven.",
)
@click.option(
    "--consistency",
    nargs=2,
    metavar="OLD NEW",
    help="Two signed notes of this log (files, as checkpoint --sign-key prints them): check both against the log "
    "(and --pubkey), then make and check the consistency proof that OLD's tree is a prefix of NEW's, and print it.",
)
@click.option(
    "--note",
    "notes",
    multiple=True,
    metavar="FILE",
    help="A signed note of this log kept outside it (one checkpoint --sign-key printed, published or cosigned by "
    "a witness), signed by --pubkey: the log must still hold the tree it names, its size and root (catches a log "
    "cut after its last signed checkpoint). Repeatable.",
)
@click.option(
    "--record",
    "record_seq",
    type=int,
    metavar="SEQ",
    help="With --pubkey: prove that record SEQ is in the tree the last signed checkpoint signed, and print the "
    "RFC 6962 inclusion proof (its audit path) that anyone holding that checkpoint's note can check.",
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
    log: str | None,
    pack: str | None,
    anchor: str | None,
    key_file: str | None,
    pubkey: str | None,
    consistency: tuple[str, str] | None,
    notes: tuple[str, ...],
    record_seq: int | None,
    parent: str | None,
    as_json: bool,
    store: str | None,
) -> None:
    """Check everything: framing, seq, hash chain, every event legal in order, no late result applied, and a
    deterministic fold. Prints the head as an anchor (SEQ:HASH: keep it, and paste it into a later
    --anchor) and the state hash. With a checkpoint key, every checkpoint's MAC must verify and at least
    one must exist. With a public key, every signed checkpoint's tree root and signature must verify and at
    least one must exist: the log is proven up to the last seq one covers, and what follows is unsigned;
    a signed note kept outside the log (--note) proves the records up to the size it names were not cut.
    Everything is checked offline, from the log and the key alone. With --pack, an evidence pack is checked
    instead (docs/evidence-packs.md); with --pubkey, every run in it must be proven by that key.

    \b
    JSON: {"ok", "records", "last_seq", "head_hash", "anchor": "SEQ:HASH" (the head), "anchor_checked"
      (the --anchor given, or null), "head" (the same as anchor), "state_hash", "versions", "orphans",
      "outcome", "checkpoints", "checkpointed_seq", "keyed", "signed", "signed_seq", "pubkey", "notes" (the
      tree sizes of the --note files the log holds),
      "unsigned" (records after signed_seq), "torn": null | {"offset", "length", "line"},
      "parent": null | {"run", "seq"} (the parent checked with --parent), "adopted" (the late completions
      plantrail adopt took into the plan), "consistency": null | {"old_size", "new_size", "proof"} (the
      proof's hashes in base64), "inclusion": null | {"seq", "hash", "tree_size", "root", "proof"} (--record:
      the root and the audit path in base64)}

    \b
    Example:
      plantrail verify samples/login-fix.jsonl
      plantrail verify run.jsonl --anchor 14:3f2a...   # the head an earlier verify printed
      plantrail verify run.jsonl --key-file ~/.plantrail/audit.key
      plantrail verify run.jsonl --pubkey ~/.plantrail/audit.pub
      plantrail verify run.jsonl --pubkey audit.pub --consistency old.note new.note
      plantrail verify run.jsonl --pubkey audit.pub --note published.note
      plantrail verify run.jsonl --pubkey audit.pub --record 12   # proves seq 12 under the last signed head
      plantrail verify retry.jsonl --parent run.jsonl   # a fork against the log it was forked from
      plantrail verify --pack evidence.zip
      plantrail verify --pack evidence.zip --pubkey audit.pub   # every run proven by the key you hold

    \b
    JSON with --pack: {"ok", "pack", "plantrail", "made", "members", "keys", "runs": [{"run", "records",
      "last_seq", "head", "state_hash", "versions", "orphans", "outcome", "checkpoints", "signed",
      "signed_seq", "unsigned", "pubkey", "payloads_checked"}]}
    """
    import os

    from plantrail.cli.common import locate_log, raise_if_torn
    from plantrail.cli.progress import progress_bar, size_of
    from plantrail.ledger.checkpoint import KEY_ENV, load_key
    from plantrail.ledger.verify import parse_anchor, verify_log
    from plantrail.ledger.vocabulary.errors import error

    if pack is not None:
        given = {"LOG": log, "--anchor": anchor, "--key-file": key_file}
        others = {"--consistency": consistency, "--note": notes or None, "--record": record_seq, "--parent": parent}
        _verify_pack(pack, pubkey, {**given, **others}, as_json)
        return
    if log is None:
        raise error("USAGE", "verify needs a LOG (or --pack FILE.zip)")
    log = locate_log(log, store)
    key = load_key(key_file) if key_file is not None or os.environ.get(KEY_ENV) else None
    if record_seq is not None and pubkey is None:
        raise error("USAGE", "--record proves a record under a signed checkpoint: give the public key (--pubkey)")
    verifier = None
    if pubkey is not None:
        from plantrail.ledger.signing import load_verifier

        verifier = load_verifier(pubkey)
    with progress_bar("verify", size_of(log), enabled=not as_json) as shown:
        report = verify_log(
            log,
            anchor=parse_anchor(anchor) if anchor else None,
            key=key,
            on_progress=shown,
            parent=None if parent is None else locate_log(parent, store),
            pubkey=verifier,
            notes=notes,
        )
    head = f"{report.last_seq}:{report.head_hash}"
    data = report._asdict() | {
        "ok": report.torn is None,
        "anchor": head,
        "anchor_checked": anchor,
        "head": head,
        "torn": None if report.torn is None else report.torn._asdict(),
        "parent": None if report.parent is None else {"run": report.parent[0], "seq": report.parent[1]},
        "unsigned": report.last_seq - (report.signed_seq if report.signed_seq is not None else -1),
        "consistency": None,
        "notes": list(report.notes),
        "inclusion": None,
    }
    proof_lines: list[str] = []
    if record_seq is not None:
        import base64

        from plantrail.ledger.signing import prove_inclusion

        line_hash, size, root, path = prove_inclusion(log, record_seq, report.signed_seq)
        audit_path = [base64.b64encode(p).decode() for p in path]
        data["inclusion"] = {
            "seq": record_seq,
            "hash": line_hash,
            "tree_size": size,
            "root": base64.b64encode(root).decode(),
            "proof": audit_path,
        }
        proof_lines = [
            f"included: seq {record_seq} ({line_hash}) is leaf {record_seq} of the signed tree of {size} records "
            f"(root {data['inclusion']['root']}); proof ({len(audit_path)} hashes):",
            *audit_path,
        ]
    if consistency is not None:
        from plantrail.ledger.signing import prove_consistency

        old_size, new_size, proof = prove_consistency(log, *consistency, verifier)
        data["consistency"] = {"old_size": old_size, "new_size": new_size, "proof": proof}
        proof_lines += [
            f"consistent: the tree of {old_size} records ({consistency[0]}) is a prefix of the tree of {new_size}"
            f" ({consistency[1]}); proof ({len(proof)} hashes):",
            *proof,
        ]
    emit(as_json, data, lambda: "\n".join([_render_verify(report, anchor), *proof_lines]))
    raise_if_torn(log, report.torn)


def _verify_pack(pack: str, pubkey: str | None, given: dict[str, object], as_json: bool) -> None:
    """verify --pack: the pack alone, with the public key the caller trusts (USAGE with a LOG or another check's
    option, ``given`` when not None)."""
    from plantrail.cli.export_pack import checked_pack_document, render_checked_pack
    from plantrail.ledger.pack import verify_pack
    from plantrail.ledger.vocabulary.errors import error

    extra = [name for name, value in given.items() if value is not None]
    if extra:
        raise error("USAGE", f"verify --pack checks the pack alone (and --pubkey): {', '.join(extra)} goes without it")
    trusted = []
    if pubkey is not None:
        from plantrail.ledger.signing import load_verifier

        trusted.append(load_verifier(pubkey))
    checked = verify_pack(pack, trusted=trusted)
    emit(as_json, checked_pack_document(checked), lambda: render_checked_pack(checked))


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
    if report.signed:
        unsigned = report.last_seq - (report.signed_seq if report.signed_seq is not None else -1)
        if report.pubkey is not None:
            shown = f"proven up to seq {report.signed_seq} by {report.pubkey} (tree and signatures checked)"
        else:
            shown = f"the last covers seq {report.signed_seq}; trees and signatures not checked (no --pubkey)"
        lines.insert(1, f"signed checkpoints: {report.signed}, {shown}; {unsigned} record(s) after it unsigned")
    for size in reversed(report.notes):
        lines.insert(1, f"checked signed note: the log holds its tree of {size} records (seq 0..{size - 1})")
    return "\n".join(lines)


@click.command()
@log_argument
@click.option(
    "--key-file",
    metavar="FILE",
    help="The HMAC key (at least 16 bytes; a trailing newline is ignored). Default: $PLANTRAIL_CHECKPOINT_KEY.",
)
@click.option(
    "--sign-key",
    metavar="FILE",
    help="Sign instead with this Ed25519 private key (a .key file from keygen): a C2SP checkpoint over the "
    "RFC 6962 tree of the records, checked with the public key alone. An HMAC checkpoint is added too only "
    "with --key-file or $PLANTRAIL_CHECKPOINT_KEY.",
)
@json_option
def checkpoint(log: str, key_file: str | None, sign_key: str | None, as_json: bool) -> None:
    """Append a keyed checkpoint: an HMAC-SHA256, under a key kept outside the log, over the run id and the
    head's seq and hash. Someone who can rewrite the file but lacks the key can no longer re-chain history
    unnoticed (verify --key-file). Keep the printed anchor too: it also catches a cut-off tail.

    \b
    With --sign-key, prints the signed note (a C2SP tlog-checkpoint): the text to hand a witness or a
    transparency log, and to keep for verify --consistency.

    \b
    JSON (signed): {"ok", "seq", "hash", "covers_seq", "anchor", "durable", "signer", "root", "note", "hmac":
      null | the keyed checkpoint's {"seq", "hash", "key_id"}}

    \b
    Example:
      PLANTRAIL_CHECKPOINT_KEY=$(cat ~/.plantrail/audit.key) plantrail checkpoint run.jsonl
      plantrail checkpoint run.jsonl --key-file ~/.plantrail/audit.key
      plantrail checkpoint run.jsonl --sign-key ~/.plantrail/signer.key > head.note
    """
    from plantrail.ledger.api import Ledger
    from plantrail.ledger.checkpoint import key_id, load_key

    if sign_key is not None:
        _signed_checkpoint(log, sign_key, key_file, as_json)
        return
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


def _signed_checkpoint(log: str, sign_key: str, key_file: str | None, as_json: bool) -> None:
    """checkpoint --sign-key: the signed checkpoint (after a keyed one when an HMAC key is given too)."""
    import os

    from plantrail.ledger.api import Ledger
    from plantrail.ledger.checkpoint import KEY_ENV, key_id, load_key
    from plantrail.ledger.reading import record_at
    from plantrail.ledger.signing import load_signer, note_of

    signer = load_signer(sign_key)
    key = load_key(key_file) if key_file is not None or os.environ.get(KEY_ENV) else None
    with Ledger.open(log) as ledger:
        keyed = None if key is None else ledger.checkpoint(key)
        ack = ledger.sign_checkpoint(signer)
    record = record_at(log, ack.seq)
    note = note_of(record)
    data = {
        "ok": True,
        "seq": ack.seq,
        "hash": ack.hash,
        "covers_seq": ack.seq - 1,
        "anchor": f"{ack.seq}:{ack.hash}",
        "durable": ack.durable,
        "signer": f"{signer.name}+{signer.key_id.hex()}",
        "root": getattr(record.data, "root", None),
        "note": note,
        "hmac": None if keyed is None or key is None else {"seq": keyed.seq, "hash": keyed.hash, "key_id": key_id(key)},
    }
    emit(as_json, data, lambda: note.rstrip("\n"))
    if not as_json:
        click.echo(
            f"signed checkpoint at seq {ack.seq} covers seq 0..{ack.seq - 1} (key {data['signer']}); "
            f"anchor: {data['anchor']}",
            err=True,
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
