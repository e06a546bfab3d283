"""Evidence packs: runs, their payloads, public keys and verification reports in one zip, checked offline.

:func:`make_pack` (``plantrail export pack``) reads each run it is given, checked, exactly as its store holds it
(a database run's rows become the JSONL lines a file would hold, byte for byte, as ``plantrail copy`` writes
them), with the payloads its store keeps and the public keys given, verifies each run (with the key that
signed its checkpoints, when one was given) and writes the zip: one folder per run, ``runs/<run id>/``, holding
``log.jsonl``, ``report.json`` (what verify found) and ``payloads/<hex>`` (a payload's 32-byte salt then its
bytes, as a runs folder keeps it), the keys as ``keys/<key id>.pub``, and ``manifest.json``: every other
member's SHA-256 and size, plantrail's version, when the pack was made, which key verified which run, and the
record-keeping duties the pack serves (:mod:`plantrail.ledger.pack_duties`).

:func:`verify_pack` (``plantrail verify --pack``) needs nothing but the pack: it reads the archive in memory
(an unsafe archive is refused: :mod:`plantrail.ledger.pack_archive`), checks every member against the manifest
(PACK_MEMBER_ALTERED, PACK_MEMBER_MISSING, PACK_MEMBER_UNLISTED), verifies every log with the pack's keys, every
payload against its name, and that each report says what it finds (PACK_REPORT_MISMATCH). Every failure is a
LogDamaged error (exit 3) naming the member.

The zip is the same bytes for the same runs, keys and make time (:mod:`plantrail.ledger.pack_archive`); the
make time is ``$SOURCE_DATE_EPOCH`` when that is set, else now.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Final, NamedTuple

import orjson

from plantrail._version import __version__
from plantrail.ledger.pack_archive import read_members, zip_bytes
from plantrail.ledger.pack_duties import RunFacts, duties, run_facts
from plantrail.ledger.vocabulary.arguments import strict
from plantrail.ledger.vocabulary.errors import PlantrailError, error
from plantrail.ledger.vocabulary.events import LogOpened, LogSigned, Record
from plantrail.ledger.vocabulary.limits import PACK

if TYPE_CHECKING:
    from plantrail.ledger.verify import VerifyReport
    from plantrail.ledger.vocabulary.signed_note import VerifierKey

__all__ = ["FORMAT", "CheckedPack", "CheckedRun", "MadePack", "make_pack", "verify_pack"]

#: What a pack's manifest says it is.
FORMAT: Final = "plantrail-evidence-pack/1"
MANIFEST: Final = "manifest.json"
_RUN_ID: Final = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:-]{0,127}")
_PAYLOAD: Final = re.compile(r"[0-9a-f]{64}")
_JSON: Final = orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS


class CheckedRun(NamedTuple):
    """One run of a pack, as verify found it: its report document."""

    run: str
    report: dict[str, Any]


class CheckedPack(NamedTuple):
    """What verify --pack checked: the pack's format, maker and make time, its members, its runs and keys."""

    path: str
    plantrail: str
    made: str
    members: int
    runs: list[CheckedRun]
    keys: list[str]


# --------------------------------------------------------------------------- the report of one run


def report_document(run: str, report: VerifyReport, payloads: int) -> dict[str, Any]:
    """What a pack says verify found for run ``run`` (and what verify --pack must find again)."""
    return {
        "run": run,
        "records": report.records,
        "last_seq": report.last_seq,
        "head": f"{report.last_seq}:{report.head_hash}",
        "state_hash": report.state_hash,
        "versions": report.versions,
        "orphans": report.orphans,
        "outcome": report.outcome,
        "checkpoints": report.checkpoints,
        "signed": report.signed,
        "signed_seq": report.signed_seq,
        "unsigned": report.last_seq - (report.signed_seq if report.signed_seq is not None else -1),
        "pubkey": report.pubkey,
        "payloads_checked": payloads,
    }


def _json(value: Any) -> bytes:
    return orjson.dumps(value, option=_JSON) + b"\n"


def _signer(records: Sequence[Record]) -> tuple[str, str] | None:
    """The (name, key id) of the key that signed the run's first signed checkpoint; None when none is signed."""
    for record in records:
        if isinstance(record.data, LogSigned):
            return record.data.signer, record.data.key_id
    return None


def _key_for(signer: tuple[str, str] | None, keys: Sequence[VerifierKey]) -> VerifierKey | None:
    if signer is None:
        return None
    return next((k for k in keys if (k.name, k.key_id.hex()) == signer), None)


def _key_member(key: VerifierKey) -> str:
    return f"keys/{key.key_id.hex()}.pub"


# --------------------------------------------------------------------------- making a pack


class _Packed(NamedTuple):
    run: str
    members: dict[str, bytes]
    entry: dict[str, Any]
    report: dict[str, Any]
    facts: RunFacts


class MadePack(NamedTuple):
    """A pack written: its manifest, and each run's report (what verify found), in the manifest's order."""

    manifest: dict[str, Any]
    reports: list[dict[str, Any]]


def _pack_run(name: str, store: str | None, keys: Sequence[VerifierKey]) -> _Packed:
    """One run's members (log, payloads, report), its manifest entry and its facts."""
    from plantrail.ledger.stores.copy import checked_lines
    from plantrail.ledger.stores.opener import open_run
    from plantrail.ledger.verify import verify_bytes

    with open_run(name, store=store) as run:
        records, lines = checked_lines(run, "packing")
        header = records[0].data
        assert isinstance(header, LogOpened)
        run_id = header.run
        if _RUN_ID.fullmatch(run_id) is None:
            raise error("USAGE", f"{name}: run id {run_id!r} cannot name a folder in a pack")
        folder = f"runs/{run_id}"
        payloads: dict[str, bytes] = {}
        sizes = []
        for digest in run.payload_names():
            salt, data = run.salted_payload(digest)
            payloads[f"{folder}/payloads/{digest.removeprefix('sha256:')}"] = salt + data
            sizes.append((digest, len(data)))
    log = b"".join(lines)
    key = _key_for(_signer(records), keys)
    report = report_document(run_id, verify_bytes(log, f"{name} ({folder}/log.jsonl)", pubkey=key), len(payloads))
    members = {f"{folder}/log.jsonl": log, f"{folder}/report.json": _json(report), **payloads}
    entry = {
        "run": run_id,
        "format": header.format,
        "log": f"{folder}/log.jsonl",
        "report": f"{folder}/report.json",
        "payloads": sorted(payloads),
        "pubkey": None if key is None else _key_member(key),
        "store": "file" if _is_file(run) else "database",
    }
    return _Packed(run_id, members, entry, report, run_facts(run_id, records, sizes))


def _is_file(run: object) -> bool:
    from plantrail.ledger.stores.jsonl.run import FileRun

    return isinstance(run, FileRun)


def _made_at() -> str:
    """When the pack is made: ``$SOURCE_DATE_EPOCH`` (seconds, for a reproducible pack) when set, else now."""
    raw = os.environ.get("SOURCE_DATE_EPOCH")
    if raw:
        if not raw.isascii() or not raw.isdigit() or len(raw) > 12:
            raise error("USAGE", f"$SOURCE_DATE_EPOCH must be seconds since 1970 (ASCII digits), not {raw!r}")
        return datetime.fromtimestamp(int(raw), UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    from plantrail.ledger.vocabulary.clock import utc_now

    return utc_now()


@strict
def make_pack(names: Sequence[str], output: str, *, pubkeys: Sequence[str] = (), store: str | None = None) -> MadePack:
    """Write the evidence pack of the runs ``names`` names (each as every command reads a run's name, with
    ``store``; none: every run of ``store``) to ``output`` (a ``.zip`` path: written whole under a temporary
    name, then renamed), with the public keys in the files ``pubkeys``; return its manifest and the runs'
    reports. Each run is read checked and verified first: a damaged or torn run is refused with its code and
    nothing is written. USAGE for no run, a run named twice (two runs of one id), or a key that signed none of
    the runs; INPUT_TOO_LARGE for a pack past the cap a check of a pack reads ($PLANTRAIL_MAX_PACK_BYTES)."""
    from plantrail.ledger.signing import load_verifier

    if isinstance(names, str):
        raise error("USAGE", "the runs of a pack are a list of names, not one text")
    if not names:
        names = _every_run(store)
    if not isinstance(output, str) or not output.endswith(".zip") or os.path.basename(output) == ".zip":
        raise error("USAGE", f"the pack is written to a .zip file, not {output!r}")
    keys: dict[str, VerifierKey] = {}
    for path in pubkeys:
        key = load_verifier(path)
        keys.setdefault(_key_member(key), key)
    packed: dict[str, _Packed] = {}
    for name in names:
        one = _pack_run(name, store, list(keys.values()))
        if one.run in packed:
            raise error("USAGE", f"run {one.run!r} is named twice ({name}): a pack holds a run once")
        packed[one.run] = one
    used = {p.entry["pubkey"] for p in packed.values()}
    for member, key in keys.items():
        if member not in used:
            raise error("USAGE", f"the key {key} signed no checkpoint of the runs given: leave it out")
    runs = [packed[run] for run in sorted(packed)]
    members: dict[str, bytes] = {m: (str(k) + "\n").encode() for m, k in keys.items()}
    for one in runs:
        members.update(one.members)
    made = _made_at()
    manifest = {
        "pack": FORMAT,
        "plantrail": __version__,
        "made": made,
        "members": [
            {"name": name, "sha256": hashlib.sha256(body).hexdigest(), "size": len(body)}
            for name, body in sorted(members.items())
        ],
        "runs": [one.entry for one in runs],
        "keys": [
            {
                "member": member,
                "key": str(key),
                "verified": [one.run for one in runs if one.entry["pubkey"] == member],
            }
            for member, key in sorted(keys.items())
        ],
        "duties": duties([one.facts for one in runs], made),
    }
    members[MANIFEST] = _json(manifest)
    data = zip_bytes(members)
    _within_cap(sum(map(len, members.values())), len(data))
    _write(output, data)
    return MadePack(manifest, [one.report for one in runs])


def _within_cap(expanded: int, size: int) -> None:
    """INPUT_TOO_LARGE when verify --pack would refuse the pack for its size (a pack is made to be checked)."""
    cap = PACK.cap()
    if max(expanded, size) > cap:
        raise error(
            "INPUT_TOO_LARGE",
            f"the pack would hold {expanded:,} bytes ({size:,} zipped), past the {cap:,} a check of a pack "
            f"reads (set ${PACK.env} to change it); nothing was written",
            limit=cap,
        )


def _every_run(store: str | None) -> list[str]:
    """The ids of every run of ``store`` (USAGE with no store, or a store that holds no run)."""
    from plantrail.ledger.stores.opener import open_store

    if store is None:
        raise error("USAGE", "a pack needs runs: name them, or give the store whose every run it holds")
    ids = open_store(store).run_ids()
    if not ids:
        raise error("USAGE", f"{store} holds no run to pack")
    return ids


def _write(output: str, data: bytes) -> None:
    """``data`` at ``output``, whole: a temporary name in its folder, fsynced, renamed over it."""
    from plantrail.ledger.stores.owned import Folder

    folder, name = os.path.split(output)
    with Folder.open(folder or ".", what="pack folder") as where:
        where.replace(name, data, what="evidence pack")


# --------------------------------------------------------------------------- checking a pack


@strict
def verify_pack(path: str, *, trusted: Sequence[VerifierKey] = ()) -> CheckedPack:
    """Check the evidence pack at ``path`` offline (see the module's text); raise the first damage found.

    ``trusted``: public keys the caller holds from elsewhere. Given any, every run must be verified with one
    of them: a run the pack verifies with no key is CHECKPOINT_MISSING, one it verifies with another key
    SIGNATURE_INVALID (the key in a pack proves nothing to someone who does not already trust it)."""
    from plantrail.ledger.stores.files import read_capped
    from plantrail.ledger.vocabulary.signed_note import VerifierKey

    if isinstance(trusted, str) or not all(isinstance(key, VerifierKey) for key in trusted):
        raise error("USAGE", "trusted is a list of verifier keys (ledger.signing.load_verifier reads one)")
    cap = PACK.cap()
    members = read_members(read_capped(path, PACK), path, cap=cap)
    manifest = _manifest(members, path)
    _check_members(manifest, members, path)
    keys = _keys(manifest, members, path)
    runs = [_check_run(entry, members, keys, path, trusted) for entry in manifest["runs"]]
    return CheckedPack(
        path, manifest["plantrail"], manifest["made"], len(members), runs, [str(k) for k in keys.values()]
    )


def _invalid(path: str, why: str) -> PlantrailError:
    return error("PACK_MANIFEST_INVALID", f"{path}: the manifest {why}", path=path, member=MANIFEST)


def _manifest(members: dict[str, bytes], path: str) -> dict[str, Any]:
    """The manifest, its shape checked; PACK_MANIFEST_INVALID when it is missing or not what a pack writes."""
    raw = members.get(MANIFEST)
    if raw is None:
        raise error("PACK_MANIFEST_INVALID", f"{path} holds no {MANIFEST}: it is no evidence pack", path=path)
    try:
        manifest = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise _invalid(path, f"is not JSON ({exc})") from None
    if not isinstance(manifest, dict) or manifest.get("pack") != FORMAT:
        raise _invalid(path, f"does not say it is a {FORMAT}")
    shapes: dict[str, type] = {"plantrail": str, "made": str, "members": list, "runs": list, "keys": list}
    for field, kind in shapes.items():
        if not isinstance(manifest.get(field), kind):
            raise _invalid(path, f"has no {field} of type {kind.__name__}")
    for item in manifest["members"]:
        if not (
            isinstance(item, dict)
            and isinstance(item.get("name"), str)
            and isinstance(item.get("sha256"), str)
            and type(item.get("size")) is int
        ):
            raise _invalid(path, f"lists a member as {item!r}, not {{name, sha256, size}}")
    for entry in manifest["runs"]:
        if not (
            isinstance(entry, dict)
            and all(isinstance(entry.get(f), str) for f in ("run", "log", "report"))
            and isinstance(entry.get("payloads"), list)
            and all(isinstance(p, str) for p in entry["payloads"])
            and (entry.get("pubkey") is None or isinstance(entry.get("pubkey"), str))
        ):
            raise _invalid(path, f"lists a run as {entry!r}")
    for entry in manifest["keys"]:
        if not (isinstance(entry, dict) and isinstance(entry.get("member"), str)):
            raise _invalid(path, f"lists a key as {entry!r}")
    runs = [entry["run"] for entry in manifest["runs"]]
    if not runs:
        raise _invalid(path, "lists no run: a pack holds one at least")
    if len(set(runs)) != len(runs):
        raise _invalid(path, "lists a run twice")
    return manifest


def _check_members(manifest: dict[str, Any], members: dict[str, bytes], path: str) -> None:
    """Every member the manifest lists is there with its SHA-256 and size, and no other is; every listed member
    belongs to a run or a key."""
    listed: dict[str, dict[str, Any]] = {}
    for item in manifest["members"]:
        if item["name"] in listed or item["name"] == MANIFEST:
            raise _invalid(path, f"lists the member {item['name']!r} twice")
        listed[item["name"]] = item
    for name, item in sorted(listed.items()):
        body = members.get(name)
        if body is None:
            raise error("PACK_MEMBER_MISSING", f"{path}: the member {name} is missing", path=path, member=name)
        digest = hashlib.sha256(body).hexdigest()
        if len(body) != item["size"] or digest != item["sha256"]:
            raise error(
                "PACK_MEMBER_ALTERED",
                f"{path}: the member {name} was altered (SHA-256 {digest}, {len(body)} bytes; the manifest says "
                f"{item['sha256']}, {item['size']} bytes)",
                path=path,
                member=name,
            )
    for name in sorted(members):
        if name != MANIFEST and name not in listed:
            raise error(
                "PACK_MEMBER_UNLISTED", f"{path}: the member {name} is not in the manifest", path=path, member=name
            )
    owned = {e["member"] for e in manifest["keys"]}
    for entry in manifest["runs"]:
        owned.update([entry["log"], entry["report"], *entry["payloads"]])
    for name in sorted(set(listed) - owned):
        raise _invalid(path, f"lists the member {name}, which belongs to no run or key")
    for name in sorted(owned - set(listed)):
        raise error(
            "PACK_MEMBER_MISSING", f"{path}: the member {name} the manifest names is missing", path=path, member=name
        )


def _keys(manifest: dict[str, Any], members: dict[str, bytes], path: str) -> dict[str, VerifierKey]:
    """The pack's public keys by member, each parsed (PACK_MANIFEST_INVALID naming a member that holds none)."""
    from plantrail.ledger.vocabulary.signed_note import NoteError, parse_verifier_key

    keys = {}
    for entry in manifest["keys"]:
        member = entry["member"]
        try:
            keys[member] = parse_verifier_key(members[member].decode("ascii"))
        except (NoteError, UnicodeDecodeError) as exc:
            why = f"{path}: the key {member} holds no verifier key ({exc})"
            raise error("PACK_MANIFEST_INVALID", why, path=path, member=member) from None
    return keys


def _check_run(
    entry: dict[str, Any],
    members: dict[str, bytes],
    keys: dict[str, VerifierKey],
    path: str,
    trusted: Sequence[VerifierKey],
) -> CheckedRun:
    """One run: its log verified (with its key), its payloads against their names, its report matched."""
    from plantrail.ledger.stores.payloads import SALT_BYTES, check_payload
    from plantrail.ledger.verify import verify_bytes

    run, log = entry["run"], entry["log"]
    key_member = entry.get("pubkey")
    if key_member is not None and key_member not in keys:
        raise _invalid(path, f"names the key {key_member} for run {run}, which is no key of the pack")
    key = None if key_member is None else keys[key_member]
    if trusted:
        _trusted(run, key, trusted, path, log)
    where = f"{path}:{log}"
    try:
        report = verify_bytes(members[log], where, pubkey=key)
    except PlantrailError as exc:
        raise error(exc.code, f"{path}: member {log}: {exc.message}", **{**exc.fields, "member": log}) from None
    if report.torn is not None:
        raise error(
            "TORN_TAIL",
            f"{path}: member {log} ends in a torn tail at line {report.torn.line}",
            advice="PACK_TORN",
            path=path,
            member=log,
            line=report.torn.line,
        )
    header = _header_run(members[log])
    if header != run:
        raise _invalid(path, f"says {log} is run {run}, but the log is run {header}")
    for member in entry["payloads"]:
        name = member.rsplit("/", 1)[-1]
        if not member.startswith(f"runs/{run}/payloads/") or _PAYLOAD.fullmatch(name) is None:
            raise _invalid(path, f"names {member} as a payload of run {run}")
        body = members[member]
        check_payload("sha256:" + name, body[:SALT_BYTES], body[SALT_BYTES:], where=f"{path}:{member}")
    found = report_document(run, report, len(entry["payloads"]))
    try:
        said = orjson.loads(members[entry["report"]])
    except orjson.JSONDecodeError:
        said = None
    if said != found:
        differ = sorted(k for k in found if not isinstance(said, dict) or said.get(k, ...) != found[k])
        if isinstance(said, dict):
            differ += sorted(set(said) - set(found))
        raise error(
            "PACK_REPORT_MISMATCH",
            f"{path}: the report {entry['report']} does not say what verify finds in {log} "
            f"(differs in: {', '.join(differ) or 'its form'})",
            path=path,
            member=entry["report"],
        )
    return CheckedRun(run, found)


def _trusted(run: str, key: VerifierKey | None, trusted: Sequence[VerifierKey], path: str, log: str) -> None:
    """Raise unless the pack verifies run ``run`` with one of the ``trusted`` keys."""
    if key is None:
        raise error(
            "CHECKPOINT_MISSING",
            f"{path}: run {run} is verified with no key in the pack: nothing in it is proven by the key given",
            path=path,
            member=log,
        )
    if str(key) not in {str(t) for t in trusted}:
        raise error(
            "SIGNATURE_INVALID",
            f"{path}: run {run} is verified in the pack with the key {key}, not with the key given",
            path=path,
            member=log,
        )


def _header_run(log: bytes) -> str:
    """The run id the (verified) log's header names."""
    from plantrail.ledger.vocabulary.codec import decode

    header = decode(log.split(b"\n", 1)[0], 1).data
    assert isinstance(header, LogOpened)
    return header.run
