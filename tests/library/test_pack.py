"""Evidence packs (issue 34): ``plantrail export pack`` and ``plantrail verify --pack`` as a user runs them, in
real processes: a round trip on the samples, a signed run checked with the key the pack holds, a database run
packed byte for byte, every tampering caught at the member (and line) it touched, and every unsafe archive
refused with its code, never a traceback."""

from __future__ import annotations

import contextlib
import copy
import hashlib
import os
import stat
import subprocess
import sys
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pytest

from plantrail import Ledger, as_run
from plantrail.ledger.pack import verify_pack
from plantrail.ledger.vocabulary.errors import PlantrailError
from tests.conftest import LOGIN_DRAFT, CliResult
from tests.helpers.logs import build_log
from tests.helpers.stores import postgres_url, unique_run

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = ("login-fix", "contract-tour", "session-expiry")


def plantrail(*args: str | os.PathLike[str], cwd: Path, env: dict[str, str] | None = None) -> CliResult:
    """``plantrail ARGS`` in a process of its own, in ``cwd``."""
    done = subprocess.run(
        [sys.executable, "-m", "plantrail", *map(os.fspath, args)],
        capture_output=True,
        text=True,
        cwd=cwd,
        env={**os.environ, **(env or {})},
        timeout=120,
        check=False,
    )
    return CliResult(done.returncode, done.stdout, done.stderr)


def members_of(pack: Path) -> dict[str, bytes]:
    with zipfile.ZipFile(pack) as archive:
        return {name: archive.read(name) for name in archive.namelist()}


def write_zip(pack: Path, members: dict[str, bytes] | list[tuple[zipfile.ZipInfo | str, bytes]]) -> None:
    """A zip holding exactly ``members`` (in that order; names and attributes as given)."""
    items = list(members.items()) if isinstance(members, dict) else members
    with zipfile.ZipFile(pack, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, body in items:
            archive.writestr(name, body)


def resealed(members: dict[str, bytes]) -> dict[str, bytes]:
    """``members`` with the manifest's list rewritten to match them (a forger who also rewrites the manifest)."""
    manifest = orjson.loads(members["manifest.json"])
    manifest["members"] = [
        {"name": name, "sha256": hashlib.sha256(body).hexdigest(), "size": len(body)}
        for name, body in sorted(members.items())
        if name != "manifest.json"
    ]
    return {**members, "manifest.json": orjson.dumps(manifest)}


def failure(pack: Path) -> PlantrailError:
    with pytest.raises(PlantrailError) as caught:
        verify_pack(str(pack))
    return caught.value


@pytest.fixture
def sample_pack(tmp_path: Path) -> Path:
    """A pack of three sample runs, made by the command."""
    pack = tmp_path / "evidence.zip"
    done = plantrail("export", "pack", *(ROOT / "samples" / f"{s}.jsonl" for s in SAMPLES), "-o", pack, cwd=tmp_path)
    assert done.code == 0, done.err
    return pack


def test_a_pack_of_the_samples_verifies_offline_in_an_empty_home(sample_pack: Path, tmp_path: Path) -> None:
    """Copied into a fresh folder and checked with an empty HOME and no store: exit 0, every run's head and
    state hash what plantrail verify says of the sample itself."""
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    (fresh / "e.zip").write_bytes(sample_pack.read_bytes())
    home = tmp_path / "home"
    home.mkdir()
    env = {"HOME": str(home), "PLANTRAIL_HOME": str(home / ".plantrail"), "PLANTRAIL_STORE": ""}
    done = plantrail("verify", "--pack", "e.zip", "--json", cwd=fresh, env=env)
    assert done.code == 0, done.err
    checked = done.json()
    assert [r["run"] for r in checked["runs"]] == sorted(SAMPLES)
    for report in checked["runs"]:
        own = plantrail("verify", ROOT / "samples" / f"{report['run']}.jsonl", "--json", cwd=tmp_path).json()
        assert report["head"] == own["head"]
        assert report["state_hash"] == own["state_hash"]
        assert report["records"] == own["records"]
    assert list(home.iterdir()) == []  # nothing written to the empty home
    assert sorted(p.name for p in fresh.iterdir()) == ["e.zip"]  # nothing extracted
    human = plantrail("verify", "--pack", "e.zip", cwd=fresh, env=env)
    assert human.code == 0 and human.out.startswith("ok: e.zip: its 7 members match the manifest")


def test_a_pack_holds_each_log_byte_for_byte_and_a_manifest_of_every_member(sample_pack: Path) -> None:
    """Each run's folder holds its log exactly, and the manifest lists every other member's SHA-256 and size,
    plantrail's version, the make time, and the duties section in plain words."""
    members = members_of(sample_pack)
    manifest = orjson.loads(members["manifest.json"])
    assert set(members) == {"manifest.json"} | {f"runs/{s}/{m}" for s in SAMPLES for m in ("log.jsonl", "report.json")}
    for sample in SAMPLES:
        assert members[f"runs/{sample}/log.jsonl"] == (ROOT / "samples" / f"{sample}.jsonl").read_bytes()
    listed = {m["name"]: m for m in manifest["members"]}
    assert set(listed) == set(members) - {"manifest.json"}
    for name, item in listed.items():
        assert item == {"name": name, "sha256": hashlib.sha256(members[name]).hexdigest(), "size": len(members[name])}
    assert manifest["pack"] == "plantrail-evidence-pack/1" and manifest["plantrail"]
    duties = manifest["duties"]
    assert set(duties) == {"period_of_use", "inputs_and_outputs", "people", "retention"}
    assert all(isinstance(section["says"], str) and len(section["says"]) > 40 for section in duties.values())
    period = {r["run"]: r for r in duties["period_of_use"]["runs"]}
    for sample in SAMPLES:  # the first and last event times, the log's own records left out
        lines = (ROOT / "samples" / f"{sample}.jsonl").read_bytes().splitlines()
        times = [r["ts"] for r in map(orjson.loads, lines) if not r["type"].startswith("log.")]
        assert period[sample] == {"run": sample, "first": min(times), "last": max(times), "times_recorded": True}
    retention = duties["retention"]
    assert retention["records_since"] == min(p["first"] for p in period.values())
    assert retention["records_until"] == max(p["last"] for p in period.values())
    assert duties["inputs_and_outputs"]["texts_in_logs"] is True
    assert "not redacted" in duties["inputs_and_outputs"]["says"]
    login = next(r for r in duties["inputs_and_outputs"]["runs"] if r["run"] == "login-fix")
    text = members["manifest.json"].decode()
    for item in login["evidence"]:  # a digest of the text, never the text itself
        assert len(item["sha256"]) == 64
    records = [orjson.loads(line) for line in members["runs/login-fix/log.jsonl"].splitlines()]
    evidence = [e for r in records if r["type"] == "step.completed" for e in r["data"]["evidence"]]
    assert len(login["evidence"]) >= len(evidence) > 0
    assert {i["sha256"] for i in login["evidence"]} >= {hashlib.sha256(e.encode()).hexdigest() for e in evidence}
    assert all(e not in text for e in evidence)
    assert {e["role"] for e in duties["people"]["entries"]} >= {"criterion passed"}
    assert duties["retention"]["made"] == manifest["made"]


def test_a_run_imported_without_times_has_no_period_of_use(tmp_path: Path) -> None:
    """A transcript that recorded no times (older Cline): the period of use and every entry's time are null,
    never the import's 1970 placeholders; a timed import beside it keeps its times."""
    fixtures = ROOT / "tests" / "fixtures" / "transcripts"
    for name, transcript in (("untimed", "cline_history.json"), ("timed", "claude_task_burst.jsonl")):
        done = plantrail("import", fixtures / transcript, "-o", f"{name}.jsonl", "--run", name, cwd=tmp_path)
        assert done.code == 0, done.err
    assert plantrail("export", "pack", "untimed.jsonl", "timed.jsonl", "-o", "i.zip", cwd=tmp_path).code == 0
    text = members_of(tmp_path / "i.zip")["manifest.json"].decode()
    duties = orjson.loads(text)["duties"]
    period = {r["run"]: r for r in duties["period_of_use"]["runs"]}
    assert period["untimed"] == {"run": "untimed", "first": None, "last": None, "times_recorded": False}
    assert period["timed"]["times_recorded"] is True and period["timed"]["first"] > "2000"
    assert duties["retention"]["records_since"] == period["timed"]["first"]
    untimed = next(r for r in duties["inputs_and_outputs"]["runs"] if r["run"] == "untimed")
    assert untimed["evidence"] and all(e["ts"] is None for e in untimed["evidence"])
    assert "1970-" not in text


def test_a_store_without_a_run_named_is_packed_whole(tmp_path: Path) -> None:
    """export pack --store FOLDER with no RUN: every run of the folder; no RUN and no store, or a store with no
    run, is USAGE."""
    runs = tmp_path / "runs"
    runs.mkdir()
    for sample in SAMPLES:
        (runs / f"{sample}.jsonl").write_bytes((ROOT / "samples" / f"{sample}.jsonl").read_bytes())
    done = plantrail("export", "pack", "--store", runs, "-o", "all.zip", "--json", cwd=tmp_path)
    assert done.code == 0, done.err
    assert [r["run"] for r in done.json()["runs"]] == sorted(SAMPLES)
    (tmp_path / "empty").mkdir()
    for extra in ([], ["--store", tmp_path / "empty"]):
        done = plantrail("export", "pack", *extra, "-o", "none.zip", cwd=tmp_path, env={"PLANTRAIL_STORE": ""})
        assert done.code == 2 and "error[USAGE]" in done.err, done.err
    assert not (tmp_path / "none.zip").exists()


def test_the_same_runs_give_the_same_zip(tmp_path: Path) -> None:
    """With $SOURCE_DATE_EPOCH the two packs are the same bytes; without it, only the manifest's make time
    differs; the members are sorted with a fixed timestamp."""
    sample = ROOT / "samples" / "login-fix.jsonl"
    fixed = {"SOURCE_DATE_EPOCH": "1764460800"}
    for name in ("a.zip", "b.zip"):
        assert plantrail("export", "pack", sample, "-o", name, cwd=tmp_path, env=fixed).code == 0
    assert (tmp_path / "a.zip").read_bytes() == (tmp_path / "b.zip").read_bytes()
    assert orjson.loads(members_of(tmp_path / "a.zip")["manifest.json"])["made"] == "2025-11-30T00:00:00Z"
    assert plantrail("export", "pack", sample, "-o", "c.zip", cwd=tmp_path).code == 0
    a, c = members_of(tmp_path / "a.zip"), members_of(tmp_path / "c.zip")
    assert {n: b for n, b in a.items() if n != "manifest.json"} == {n: b for n, b in c.items() if n != "manifest.json"}
    ma, mc = orjson.loads(a["manifest.json"]), orjson.loads(c["manifest.json"])
    assert ma["made"] != mc["made"]
    for m in (ma, mc):
        del m["made"], m["duties"]["retention"]["made"]
    assert ma == mc
    with zipfile.ZipFile(tmp_path / "c.zip") as archive:
        infos = archive.infolist()
    assert [i.filename for i in infos] == sorted(i.filename for i in infos)
    assert {i.date_time for i in infos} == {(1980, 1, 1, 0, 0, 0)}
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")] == []


# --------------------------------------------------------------------------- a signed run, payloads


@pytest.fixture
def signed(tmp_path: Path, make_ledger: Callable[..., Ledger]) -> tuple[Path, Path, Path]:
    """A run with a signed checkpoint and a payload, and its key pair: (log, private key, public key)."""
    ledger = make_ledger()
    build_log(ledger, 3)
    ledger.close()
    log = tmp_path / "run.jsonl"
    assert plantrail("keygen", tmp_path / "audit", cwd=tmp_path).code == 0
    done = plantrail("checkpoint", log, "--sign-key", tmp_path / "audit.key", cwd=tmp_path)
    assert done.code == 0, done.err
    with Ledger.open(log, fsync="none") as more:
        more.verify_criterion("login-test-passes", True, "after the checkpoint")
    writer = as_run(str(log)).open_writer()
    try:
        writer.store_payload(b"full output of the test run\n")
    finally:
        writer.close()
    return log, tmp_path / "audit.key", tmp_path / "audit.pub"


def test_a_signed_run_verifies_with_the_key_in_the_pack(signed: tuple[Path, Path, Path], tmp_path: Path) -> None:
    """The pack holds the key and says it verified the run; verify --pack checks the signatures with it (the
    records after the checkpoint are reported unsigned) and the payload against its name."""
    log, _, pub = signed
    done = plantrail("export", "pack", log, "--pubkey", pub, "-o", "s.zip", "--json", cwd=tmp_path)
    assert done.code == 0, done.err
    members = members_of(tmp_path / "s.zip")
    manifest = orjson.loads(members["manifest.json"])
    key_text = pub.read_text().strip()
    [key] = manifest["keys"]
    assert key["key"] == key_text and key["verified"] == ["run"]
    assert members[key["member"]] == (key_text + "\n").encode()
    assert manifest["runs"][0]["pubkey"] == key["member"]
    [payload] = manifest["runs"][0]["payloads"]
    assert members[payload][32:] == b"full output of the test run\n"
    checked = plantrail("verify", "--pack", "s.zip", "--json", cwd=tmp_path)
    assert checked.code == 0, checked.err
    [report] = checked.json()["runs"]
    assert report["pubkey"] == key_text and report["signed"] == 1
    assert report["unsigned"] == 2  # the signed checkpoint's own record, and the verdict after it
    assert report["payloads_checked"] == 1
    signers = [e for e in manifest["duties"]["people"]["entries"] if e["role"] == "checkpoint signed"]
    assert [e["who"].split("+")[0] for e in signers] == ["audit"]
    assert "proven up to seq" in plantrail("verify", "--pack", "s.zip", cwd=tmp_path).out


def test_verify_pack_with_the_key_you_hold(signed: tuple[Path, Path, Path], sample_pack: Path, tmp_path: Path) -> None:
    """verify --pack --pubkey: 0 when every run is proven by that key; SIGNATURE_INVALID when the pack verifies
    a run with another key (a forger's own, say), CHECKPOINT_MISSING when it verifies one with none."""
    log, _, pub = signed
    assert plantrail("export", "pack", log, "--pubkey", pub, "-o", "s.zip", cwd=tmp_path).code == 0
    assert plantrail("verify", "--pack", "s.zip", "--pubkey", pub, cwd=tmp_path).code == 0
    (tmp_path / "other").mkdir()
    assert plantrail("keygen", tmp_path / "other" / "audit", cwd=tmp_path).code == 0
    done = plantrail("verify", "--pack", "s.zip", "--pubkey", tmp_path / "other" / "audit.pub", cwd=tmp_path)
    assert done.code == 3 and "error[SIGNATURE_INVALID]" in done.err and "not with the key given" in done.err
    done = plantrail("verify", "--pack", sample_pack, "--pubkey", pub, cwd=tmp_path)
    assert done.code == 3 and "error[CHECKPOINT_MISSING]" in done.err and "contract-tour" in done.err


def test_a_key_that_signed_none_of_the_runs_is_refused(signed: tuple[Path, Path, Path], tmp_path: Path) -> None:
    """USAGE, and no pack is written."""
    assert plantrail("keygen", tmp_path / "other", cwd=tmp_path).code == 0
    done = plantrail("export", "pack", signed[0], "--pubkey", tmp_path / "other.pub", "-o", "x.zip", cwd=tmp_path)
    assert done.code == 2 and "error[USAGE]" in done.err and "signed no checkpoint" in done.err
    assert not (tmp_path / "x.zip").exists()


def test_another_key_in_place_of_the_signers_fails_the_signature(
    signed: tuple[Path, Path, Path], tmp_path: Path
) -> None:
    """A forger who swaps the pack's key (and rewrites the manifest to match) is caught by the signatures:
    SIGNATURE_INVALID naming the log member."""
    log, _, pub = signed
    assert plantrail("export", "pack", log, "--pubkey", pub, "-o", "s.zip", cwd=tmp_path).code == 0
    (tmp_path / "other").mkdir()
    assert plantrail("keygen", tmp_path / "other" / "audit", cwd=tmp_path).code == 0  # another key, the same name
    members = members_of(tmp_path / "s.zip")
    manifest = orjson.loads(members["manifest.json"])
    member = manifest["keys"][0]["member"]
    members[member] = (tmp_path / "other" / "audit.pub").read_bytes()
    forged = tmp_path / "forged.zip"
    write_zip(forged, resealed(members))
    exc = failure(forged)
    assert exc.code == "SIGNATURE_INVALID", exc
    assert "runs/run/log.jsonl" in exc.message and exc.fields["member"] == "runs/run/log.jsonl"
    members[member] = b"no key\n"
    write_zip(forged, resealed(members))
    exc = failure(forged)
    assert exc.code == "PACK_MANIFEST_INVALID" and member in exc.message and exc.exit_code == 3


def test_a_damaged_run_is_refused_and_no_pack_is_written(tmp_path: Path) -> None:
    """The run is verified before the pack is written: exit 3 with the damage's code, nothing at -o."""
    log = tmp_path / "run.jsonl"
    lines = (ROOT / "samples" / "login-fix.jsonl").read_bytes().split(b"\n")
    lines[5] = lines[5].replace(b'"agent"', b'"user"', 1)
    log.write_bytes(b"\n".join(lines))
    done = plantrail("export", "pack", log, "-o", "x.zip", cwd=tmp_path)
    assert done.code == 3 and "Traceback" not in done.err, done.err
    assert not (tmp_path / "x.zip").exists()


def test_a_torn_run_is_refused_until_repaired(tmp_path: Path) -> None:
    """A log that ends in a torn tail: TORN_TAIL (exit 3), advising repair, and no pack; after repair it packs."""
    log = tmp_path / "run.jsonl"
    log.write_bytes((ROOT / "samples" / "login-fix.jsonl").read_bytes() + b'{"v":1,"seq":16,"ts"')
    done = plantrail("export", "pack", log, "-o", "x.zip", cwd=tmp_path)
    assert done.code == 3 and "error[TORN_TAIL]" in done.err and "repair it before packing" in done.err, done.err
    assert not (tmp_path / "x.zip").exists()
    assert plantrail("repair", log, cwd=tmp_path).code == 0
    assert plantrail("export", "pack", log, "-o", "x.zip", cwd=tmp_path).code == 0


def test_bad_arguments_are_refused(tmp_path: Path) -> None:
    """An output that is no .zip, a run named twice, a pack past the cap verify --pack reads; verify with
    neither a LOG nor --pack, or --pack with a LOG or another check: each refused, nothing written."""
    sample = ROOT / "samples" / "login-fix.jsonl"
    done = plantrail("export", "pack", sample, "-o", "run.jsonl", cwd=tmp_path)
    assert done.code == 2 and "error[USAGE]" in done.err
    done = plantrail("export", "pack", sample, sample, "-o", "x.zip", cwd=tmp_path)
    assert done.code == 2 and "named twice" in done.err
    done = plantrail("export", "pack", sample, "-o", "x.zip", cwd=tmp_path, env={"PLANTRAIL_MAX_PACK_BYTES": "5000"})
    assert done.code == 1 and "error[INPUT_TOO_LARGE]" in done.err and "PLANTRAIL_MAX_PACK_BYTES" in done.err
    assert list(tmp_path.iterdir()) == []
    assert plantrail("export", "pack", sample, "-o", "x.zip", cwd=tmp_path).code == 0
    done = plantrail("verify", cwd=tmp_path)
    assert done.code == 2 and "needs a LOG (or --pack" in done.err
    for extra in ([sample], ["--anchor", "1:" + "0" * 64], ["--parent", sample]):
        done = plantrail("verify", "--pack", "x.zip", *extra, cwd=tmp_path)
        assert done.code == 2 and "error[USAGE]" in done.err and "checks the pack alone" in done.err, extra


def test_the_library_refuses_wrong_types(tmp_path: Path) -> None:
    """make_pack and verify_pack refuse an argument of the wrong type (never coerced): a name for the list of
    runs, a path that is no text, a key that is no key."""
    from plantrail.ledger.pack import make_pack

    sample = str(ROOT / "samples" / "login-fix.jsonl")
    for call in (
        lambda: make_pack(sample, str(tmp_path / "x.zip")),  # one name, not a list
        lambda: make_pack([sample], tmp_path / "x.zip"),  # type: ignore[arg-type]
        lambda: make_pack([sample], str(tmp_path / "x.zip"), pubkeys=[7]),  # type: ignore[list-item]
        lambda: verify_pack(tmp_path / "x.zip"),  # type: ignore[arg-type]
        lambda: verify_pack(str(tmp_path / "x.zip"), trusted=["audit+00+key"]),  # type: ignore[list-item]
    ):
        with pytest.raises(PlantrailError) as caught:
            call()
        assert caught.value.code in ("USAGE", "INVALID_ARGUMENT") and caught.value.exit_code == 2
    assert list(tmp_path.iterdir()) == []


def test_export_pack_answers_in_json(tmp_path: Path, signed: tuple[Path, Path, Path]) -> None:
    """--json: the pack, its make time, its members and each run's head, signed seq, key and payloads."""
    log, _, pub = signed
    done = plantrail("export", "pack", log, "--pubkey", pub, "-o", "s.zip", "--json", cwd=tmp_path)
    assert done.code == 0, done.err
    answer = done.json()
    own = plantrail("verify", log, "--pubkey", pub, "--json", cwd=tmp_path).json()
    assert answer["ok"] is True and answer["pack"] == "s.zip" and answer["members"] == 5
    assert answer["runs"] == [
        {"run": "run", "head": own["head"], "signed_seq": own["signed_seq"], "pubkey": own["pubkey"], "payloads": 1}
    ]


# --------------------------------------------------------------------------- tampering


def _tamper_log(members: dict[str, bytes]) -> dict[str, bytes]:
    lines = members["runs/login-fix/log.jsonl"].split(b"\n")
    lines[6] = lines[6].replace(b'"agent"', b'"user"', 1)
    return {**members, "runs/login-fix/log.jsonl": b"\n".join(lines)}


def _drop_last_record(members: dict[str, bytes]) -> dict[str, bytes]:
    lines = members["runs/login-fix/log.jsonl"].split(b"\n")
    return {**members, "runs/login-fix/log.jsonl": b"\n".join(lines[:-2]) + b"\n"}


def _append_torn(members: dict[str, bytes]) -> dict[str, bytes]:
    return {**members, "runs/login-fix/log.jsonl": members["runs/login-fix/log.jsonl"] + b'{"v":1,"seq":16,'}


def _edit_report(members: dict[str, bytes]) -> dict[str, bytes]:
    report = orjson.loads(members["runs/login-fix/report.json"])
    report["outcome"] = "failed"
    return {**members, "runs/login-fix/report.json": orjson.dumps(report)}


def _no_runs(members: dict[str, bytes]) -> dict[str, bytes]:
    manifest = orjson.loads(members["manifest.json"])
    manifest["runs"] = []
    return {"manifest.json": orjson.dumps(manifest)}


def _list_a_run_twice(members: dict[str, bytes]) -> dict[str, bytes]:
    manifest = orjson.loads(members["manifest.json"])
    manifest["runs"].append(manifest["runs"][0])
    return {**members, "manifest.json": orjson.dumps(manifest)}


#: Each tampering: what it does to the members, whether the manifest is rewritten to match, the code and the
#: text the error must name.
TAMPERING: dict[str, tuple[Callable[[dict[str, bytes]], dict[str, bytes]], bool, str, str]] = {
    "a log byte changed": (_tamper_log, False, "PACK_MEMBER_ALTERED", "runs/login-fix/log.jsonl"),
    "a member removed": (
        lambda m: {k: v for k, v in m.items() if k != "runs/login-fix/report.json"},
        False,
        "PACK_MEMBER_MISSING",
        "runs/login-fix/report.json",
    ),
    "a member added": (lambda m: {**m, "runs/login-fix/extra.txt": b"x"}, False, "PACK_MEMBER_UNLISTED", "extra.txt"),
    "the manifest removed": (
        lambda m: {k: v for k, v in m.items() if k != "manifest.json"},
        False,
        "PACK_MANIFEST_INVALID",
        "manifest.json",
    ),
    "the manifest not JSON": (lambda m: {**m, "manifest.json": b"{"}, False, "PACK_MANIFEST_INVALID", "not JSON"),
    "a run listed twice": (_list_a_run_twice, True, "PACK_MANIFEST_INVALID", "lists a run twice"),
    "every run taken out": (_no_runs, True, "PACK_MANIFEST_INVALID", "lists no run"),
    "a log line changed, manifest rewritten": (_tamper_log, True, "HASH_MISMATCH", "runs/login-fix/log.jsonl: line 7"),
    "the last record cut, manifest rewritten": (_drop_last_record, True, "PACK_REPORT_MISMATCH", "last_seq"),
    "a torn line appended, manifest rewritten": (_append_torn, True, "TORN_TAIL", "make it again with `plantrail"),
    "a report edited, manifest rewritten": (_edit_report, True, "PACK_REPORT_MISMATCH", "outcome"),
}


@pytest.mark.parametrize("case", sorted(TAMPERING))
def test_each_tampering_is_caught_at_its_member(sample_pack: Path, tmp_path: Path, case: str) -> None:
    """verify --pack exits 3 with the tampering's code, naming the member (and the line) it touched."""
    change, reseal, code, named = TAMPERING[case]
    members = change(members_of(sample_pack))
    tampered = tmp_path / "tampered.zip"
    write_zip(tampered, resealed(members) if reseal else members)
    done = plantrail("verify", "--pack", tampered, cwd=tmp_path)
    assert done.code == 3, (case, done.err)
    assert f"error[{code}]" in done.err and named in done.err, (case, done.err)
    assert "Traceback" not in done.err


def test_an_altered_payload_is_caught(signed: tuple[Path, Path, Path], tmp_path: Path) -> None:
    """A payload's bytes changed (the manifest rewritten to match): PAYLOAD_ALTERED naming the member."""
    log, _, pub = signed
    assert plantrail("export", "pack", log, "--pubkey", pub, "-o", "s.zip", cwd=tmp_path).code == 0
    members = members_of(tmp_path / "s.zip")
    [name] = [n for n in members if "/payloads/" in n]
    members[name] = members[name][:-2] + b"X\n"
    write_zip(tmp_path / "t.zip", resealed(members))
    exc = failure(tmp_path / "t.zip")
    assert exc.code == "PAYLOAD_ALTERED" and name in exc.message


# --------------------------------------------------------------------------- unsafe archives


def _info(name: str, mode: int | None = None) -> zipfile.ZipInfo:
    info = zipfile.ZipInfo(name)
    if mode is not None:
        info.create_system = 3
        info.external_attr = mode << 16
    return info


UNSAFE: dict[str, list[tuple[zipfile.ZipInfo | str, bytes]]] = {
    "dot-dot": [("manifest.json", b"{}"), ("runs/../../evil", b"x")],
    "absolute": [("manifest.json", b"{}"), ("/etc/evil", b"x")],
    "backslash": [("manifest.json", b"{}"), ("runs\\..\\evil", b"x")],
    "a drive letter": [("manifest.json", b"{}"), ("C:/evil", b"x")],
    "a control character": [("manifest.json", b"{}"), ("runs/a\x1b[2J", b"x")],
    "a link": [("manifest.json", b"{}"), (_info("runs/link", stat.S_IFLNK | 0o777), b"/etc/passwd")],
    "a folder": [("manifest.json", b"{}"), ("runs/", b"")],
    "a name twice": [("manifest.json", b"{}"), ("runs/a", b"1"), ("runs/a", b"2")],
}


@pytest.mark.parametrize("case", sorted(UNSAFE))
def test_an_unsafe_archive_is_refused_unread(tmp_path: Path, case: str) -> None:
    """PACK_UNSAFE, exit 3, no traceback, nothing written in the folder."""
    pack = tmp_path / "unsafe.zip"
    with pytest.warns(UserWarning) if case == "a name twice" else contextlib.nullcontext():
        write_zip(pack, UNSAFE[case])
    done = plantrail("verify", "--pack", pack, cwd=tmp_path)
    assert done.code == 3 and "error[PACK_UNSAFE]" in done.err, (case, done.err)
    assert "Traceback" not in done.err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["unsafe.zip"]


def test_a_zip_bomb_is_refused_from_its_declared_sizes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A member that declares more than the cap, members that together expand past it, or too many members:
    PACK_UNSAFE before a member is read."""
    pack = tmp_path / "bomb.zip"
    write_zip(pack, {"manifest.json": b"{}", "runs/a": b"\0" * 600, "runs/b": b"\0" * 600})
    monkeypatch.setenv("PLANTRAIL_MAX_PACK_BYTES", "1000")
    exc = failure(pack)
    assert exc.code == "PACK_UNSAFE" and "expand" in exc.message
    monkeypatch.setenv("PLANTRAIL_MAX_PACK_BYTES", "500")
    assert "runs/a" in failure(pack).message
    monkeypatch.delenv("PLANTRAIL_MAX_PACK_BYTES")
    data = bytearray(pack.read_bytes())
    central = data.index(b"PK\x01\x02")  # the first central directory entry ...
    while data[central + 46 : central + 52] != b"runs/a":  # ... up to that of runs/a (its name at offset 46)
        central = data.index(b"PK\x01\x02", central + 1)
    data[central + 24 : central + 28] = (0xFFFFFFF0).to_bytes(4, "little")  # runs/a declares ~4 GiB
    pack.write_bytes(bytes(data))
    exc = failure(pack)
    assert exc.code == "PACK_UNSAFE" and "runs/a" in exc.message
    monkeypatch.setattr("plantrail.ledger.pack_archive.MAX_MEMBERS", 2)
    write_zip(pack, {"manifest.json": b"{}", "runs/a": b"1", "runs/b": b"2"})
    assert failure(pack).code == "PACK_UNSAFE"


def test_bytes_before_the_first_member_are_refused(sample_pack: Path, tmp_path: Path) -> None:
    """A pack with other bytes put in front of it (zip readers skip them, so the file can be something else too):
    PACK_UNSAFE."""
    joined = tmp_path / "joined.zip"
    joined.write_bytes(b"#!/bin/sh\necho hidden\n" + sample_pack.read_bytes())
    exc = failure(joined)
    assert exc.code == "PACK_UNSAFE" and "before its first member" in exc.message


def test_a_file_that_is_no_zip_is_refused(tmp_path: Path) -> None:
    """PACK_NOT_ZIP for text, an empty file and a zip cut short; FILE_NOT_FOUND for no file."""
    for name, body in (("text.zip", b"hello\n"), ("empty.zip", b"")):
        (tmp_path / name).write_bytes(body)
        done = plantrail("verify", "--pack", name, cwd=tmp_path)
        assert done.code == 3 and "error[PACK_NOT_ZIP]" in done.err, done.err
    write_zip(tmp_path / "whole.zip", {"manifest.json": b"{}" * 1000})
    (tmp_path / "cut.zip").write_bytes((tmp_path / "whole.zip").read_bytes()[:-30])
    assert failure(tmp_path / "cut.zip").code == "PACK_NOT_ZIP"
    done = plantrail("verify", "--pack", "missing.zip", cwd=tmp_path)
    assert done.code == 4 and "Traceback" not in done.err


# --------------------------------------------------------------------------- a database run


def test_a_database_run_is_packed_byte_for_byte(tmp_path: Path) -> None:
    """A PostgreSQL run named by its id and --store: its rows as the JSONL lines a copy writes, its payload
    rows, and the pack verifies offline."""
    url = postgres_url()
    run = unique_run("pack")
    where = f"{url}#{run}"
    with Ledger.create(where, copy.deepcopy(LOGIN_DRAFT), fsync="none") as ledger:
        build_log(ledger, 2)
    writer = as_run(where).open_writer()
    try:
        stored = writer.store_payload(b"a payload in a row")
    finally:
        writer.close()
    done = plantrail("export", "pack", run, "--store", url, "-o", "db.zip", cwd=tmp_path)
    assert done.code == 0, done.err
    assert plantrail("copy", where, tmp_path / "copied.jsonl", cwd=tmp_path).code == 0
    members = members_of(tmp_path / "db.zip")
    assert members[f"runs/{run}/log.jsonl"] == (tmp_path / "copied.jsonl").read_bytes()
    assert members[f"runs/{run}/payloads/{stored.digest.removeprefix('sha256:')}"][32:] == b"a payload in a row"
    entry: dict[str, Any] = orjson.loads(members["manifest.json"])["runs"][0]
    assert entry["store"] == "database" and "postgresql" not in members["manifest.json"].decode()
    checked = plantrail("verify", "--pack", "db.zip", "--json", cwd=tmp_path, env={"PLANTRAIL_STORE": ""})
    assert checked.code == 0, checked.err
    assert checked.json()["runs"][0]["payloads_checked"] == 1
