"""``plantrail export pack``: runs, their payloads, public keys and verification reports in one zip
(:mod:`plantrail.ledger.pack`); ``plantrail verify --pack`` checks one."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click

from plantrail.cli.common import FilePath, emit, json_option, store_option

if TYPE_CHECKING:
    from plantrail.ledger.pack import CheckedPack

__all__ = ["pack", "render_checked_pack"]


@click.command()
@click.argument("runs", nargs=-1, type=FilePath(dir_okay=True, path_type=str))
@store_option
@click.option(
    "-o",
    "--output",
    required=True,
    metavar="FILE.zip",
    type=FilePath(dir_okay=False, path_type=str),
    help="The pack to write (a .zip; written whole under a temporary name, then renamed over FILE.zip).",
)
@click.option(
    "--pubkey",
    "pubkeys",
    multiple=True,
    metavar="FILE",
    type=FilePath(dir_okay=False, path_type=str),
    help="A public key (a .pub file from keygen) to put in the pack; each run whose checkpoints it signed is "
    "verified with it. Repeat for several keys.",
)
@json_option
def pack(runs: tuple[str, ...], store: str | None, output: str, pubkeys: tuple[str, ...], as_json: bool) -> None:
    """Write an evidence pack: one zip holding each run's log byte for byte (a database run as the JSONL a
    file would hold), the payloads its store keeps, the public keys given, a verification report per run, and
    manifest.json: every member's SHA-256 and size, plantrail's version, when the pack was made, which key
    verified which run, and what the pack holds for record keeping (period of use, inputs and outputs by
    digest, the people who approved or verified, retention; docs/evidence-packs.md). Each run is verified
    before anything is written: a damaged run is refused. The same runs and keys give the same zip, but for
    the time in the manifest ($SOURCE_DATE_EPOCH fixes it). Without RUN, every run of --store. Check a pack
    with `plantrail verify --pack`.

    \b
    JSON: {"ok", "pack", "made", "members", "runs": [{"run", "head", "signed_seq", "pubkey", "payloads"}]}

    \b
    Example:
      plantrail export pack samples/login-fix.jsonl -o evidence.zip
      plantrail export pack run-1 run-2 --store postgresql://localhost/plans -o evidence.zip
      plantrail export pack --store runs/ -o everything.zip
      plantrail export pack run.jsonl --pubkey audit.pub -o evidence.zip
    """
    from plantrail.ledger.pack import make_pack

    made = make_pack(list(runs), output, pubkeys=list(pubkeys), store=store)
    manifest = made.manifest
    entries = {entry["run"]: entry for entry in manifest["runs"]}
    summary = {
        "ok": True,
        "pack": output,
        "made": manifest["made"],
        "members": len(manifest["members"]) + 1,
        "runs": [
            {
                "run": report["run"],
                "head": report["head"],
                "signed_seq": report["signed_seq"],
                "pubkey": report["pubkey"],
                "payloads": len(entries[report["run"]]["payloads"]),
            }
            for report in made.reports
        ],
    }

    def human() -> str:
        lines = [f"wrote {output}: {len(entries)} run(s), {summary['members']} members, made {manifest['made']}"]
        for run in summary["runs"]:
            signed = f", signed up to seq {run['signed_seq']}, verified with {run['pubkey']}" if run["pubkey"] else ""
            lines.append(f"  {run['run']}: log, report, {run['payloads']} payload(s){signed}")
        return "\n".join(lines)

    emit(as_json, summary, human)


def checked_pack_document(checked: CheckedPack) -> dict[str, Any]:
    """What verify --pack --json prints."""
    return {
        "ok": True,
        "pack": checked.path,
        "plantrail": checked.plantrail,
        "made": checked.made,
        "members": checked.members,
        "keys": checked.keys,
        "runs": [run.report for run in checked.runs],
    }


def render_checked_pack(checked: CheckedPack) -> str:
    """What verify --pack prints for people."""
    lines = [
        f"ok: {checked.path}: its {checked.members} members match the manifest; made "
        f"{checked.made} by plantrail {checked.plantrail}",
    ]
    for run in checked.runs:
        r = run.report
        lines.append(
            f"  {r['run']}: {r['records']} records, hash chain intact, every event legal in order; head {r['head']}"
        )
        if r["signed"]:
            if r["pubkey"] is not None:
                proven = f"proven up to seq {r['signed_seq']} by {r['pubkey']}"
                lines.append(f"    {proven}; {r['unsigned']} record(s) after it rest on the chain alone")
            else:
                lines.append(f"    {r['signed']} signed checkpoint(s), signatures not checked (the pack holds no key)")
        lines.append(f"    payloads checked: {r['payloads_checked']}; the report in the pack says the same")
    if checked.keys:
        lines.append("keys in the pack (compare them with a copy you trust): " + ", ".join(checked.keys))
    return "\n".join(lines)
