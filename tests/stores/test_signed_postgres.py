"""Signed checkpoints on a database run: checkpoint --sign-key, a writer's sign_on policy, the front doors'
--sign-key, and verify --pubkey (with --note, --record and --consistency), against the suite's PostgreSQL."""

from __future__ import annotations

import copy
from collections.abc import Callable
from pathlib import Path

import orjson
import pytest

from plantrail.ledger.api import Ledger
from plantrail.ledger.signing import keygen, load_signer, load_verifier
from plantrail.ledger.verify import verify_log
from plantrail.ledger.vocabulary.errors import PlantrailError
from tests.conftest import LOGIN_DRAFT, CliResult
from tests.helpers.logs import build_log
from tests.helpers.stores import PostgresTarget, postgres_url, unique_run

Cli = Callable[..., CliResult]


@pytest.fixture
def keys(tmp_path: Path) -> tuple[Path, Path]:
    """A key pair: (private, public)."""
    keygen(str(tmp_path / "audit"))
    return tmp_path / "audit.key", tmp_path / "audit.pub"


def test_a_database_run_is_signed_and_verified_with_the_public_key(
    keys: tuple[Path, Path], tmp_path: Path, run_cli: Cli
) -> None:
    """sign_on(every=3) on a database run signs as on a file; checkpoint --sign-key prints a note of it; verify
    --pubkey proves the rows, holds them to the note, proves one record's inclusion and the consistency of two
    notes; a run recorded by the command line with --sign-key is signed at its finish."""
    private, public = keys
    target = PostgresTarget(postgres_url())
    location = target.location(unique_run("signed"))
    with Ledger.create(location, copy.deepcopy(LOGIN_DRAFT), fsync="none") as ledger:
        ledger.sign_on(load_signer(str(private)), every=3)
        build_log(ledger, 4)
    types = [r.type for r in target.records(location)]
    assert types.count("log.signed") >= 1
    report = verify_log(location, pubkey=load_verifier(str(public)))
    assert report.signed == types.count("log.signed")

    first = run_cli("checkpoint", location, "--sign-key", private)
    assert first.code == 0, first.err
    (tmp_path / "old.note").write_text(first.out)
    with Ledger.open(location, fsync="none") as ledger:  # a second writer's records, signed on the way
        ledger.sign_on(load_signer(str(private)), every=2)
        for n in range(3):
            ledger.verify_criterion("login-test-passes", True, f"again {n}")
    second = run_cli("checkpoint", location, "--sign-key", private, "--json")
    assert second.code == 0, second.err
    (tmp_path / "new.note").write_text(second.json()["note"])
    checked = run_cli(
        "verify",
        location,
        "--pubkey",
        public,
        "--note",
        tmp_path / "new.note",
        "--record",
        "2",
        "--consistency",
        tmp_path / "old.note",
        tmp_path / "new.note",
        "--json",
    )
    assert checked.code == 0, checked.err
    shown = checked.json()
    assert shown["notes"] == [second.json()["covers_seq"] + 1] and shown["unsigned"] == 1  # the checkpoint itself
    assert shown["inclusion"]["seq"] == 2 and shown["consistency"]["new_size"] == second.json()["covers_seq"] + 1
    lines = target.lines(location).splitlines()
    assert orjson.loads(lines[-1])["type"] == "log.signed"

    other = target.location(unique_run("cli"))
    draft = tmp_path / "plan.json"
    draft.write_bytes(orjson.dumps(LOGIN_DRAFT))
    assert run_cli("create", other, "--plan", draft, "--sign-key", private).code == 0
    assert run_cli("finish", other, "--outcome", "failed", "--reason", "stopped", "--sign-key", private).code == 0
    assert [r.type for r in target.records(other)][-2:] == ["run.finished", "log.signed"]
    assert verify_log(other, pubkey=load_verifier(str(public))).signed == 1


def test_a_database_run_cut_after_its_last_signature_fails_its_published_note(
    keys: tuple[Path, Path], tmp_path: Path, run_cli: Cli
) -> None:
    """Rows deleted after a signed checkpoint whose note was kept: the public key alone passes what is left,
    the note does not (ANCHOR_MISMATCH)."""
    psycopg = pytest.importorskip("psycopg")
    private, public = keys
    url = postgres_url()
    run = unique_run("cut")
    location = PostgresTarget(url).location(run)
    with Ledger.create(location, copy.deepcopy(LOGIN_DRAFT), fsync="none") as ledger:
        build_log(ledger, 2)
        ledger.sign_checkpoint(load_signer(str(private)))
        cut_from = ledger.verify_criterion("login-test-passes", True, "more")
        note_ack = ledger.sign_checkpoint(load_signer(str(private)))
    from plantrail.ledger.reading import record_at
    from plantrail.ledger.signing import note_of

    (tmp_path / "head.note").write_text(note_of(record_at(location, note_ack.seq)))
    with psycopg.connect(url, autocommit=True) as db:
        tables = [r[0] for r in db.execute("SELECT tablename FROM pg_tables WHERE tablename LIKE 'plantrail%'")]
        table = next(t for t in ("plantrail_records", "plantrail_events") if t in tables)
        db.execute(f"DELETE FROM {table} WHERE run = %s AND seq >= %s", (run, cut_from.seq))
    assert verify_log(location, pubkey=load_verifier(str(public))).signed == 1
    with pytest.raises(PlantrailError) as caught:
        verify_log(location, pubkey=load_verifier(str(public)), notes=[tmp_path / "head.note"])
    assert caught.value.code == "ANCHOR_MISMATCH"
    refused = run_cli("verify", location, "--pubkey", public, "--note", tmp_path / "head.note")
    assert refused.code == 3 and "error[ANCHOR_MISMATCH]" in refused.err
