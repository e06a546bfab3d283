"""Signed checkpoints (issue 34): keygen, checkpoint --sign-key and verify --pubkey / --consistency as a user
runs them, and the tamper trials a public key catches where the chain alone cannot."""

from __future__ import annotations

import base64
import re
import stat
from collections.abc import Callable
from pathlib import Path

import orjson
import pytest

from plantrail.ledger.api import Ledger
from plantrail.ledger.signing import load_signer
from plantrail.ledger.verify import verify_log
from plantrail.ledger.vocabulary.errors import PlantrailError
from plantrail.ledger.vocabulary.merkle import leaf_hash, root_of, verify_consistency
from plantrail.ledger.vocabulary.signed_note import parse_checkpoint, parse_note
from tests.conftest import CliResult
from tests.helpers.logs import build_log, lines_of, rechain, reseal, write_lines

Cli = Callable[..., CliResult]


@pytest.fixture
def keys(tmp_path: Path, run_cli: Cli) -> tuple[Path, Path]:
    """A key pair made by plantrail keygen: (private, public)."""
    result = run_cli("keygen", tmp_path / "audit")
    assert result.code == 0, result.err
    return tmp_path / "audit.key", tmp_path / "audit.pub"


@pytest.fixture
def log(make_ledger: Callable[..., Ledger], tmp_path: Path) -> Path:
    """A log with some history (seq 0..6)."""
    ledger = make_ledger()
    build_log(ledger, 4)
    ledger.close()
    return tmp_path / "run.jsonl"


def more(log: Path, n: int) -> None:
    """Append ``n`` criterion verdicts."""
    with Ledger.open(log, fsync="none") as ledger:
        for i in range(n):
            ledger.verify_criterion("login-test-passes", True, f"again {i}")


def code_of(log: Path, pubkey: Path) -> str | None:
    """The code verify raises with the public key, or None when the log verifies."""
    from plantrail.ledger.signing import load_verifier

    try:
        verify_log(log, pubkey=load_verifier(str(pubkey)))
    except PlantrailError as exc:
        return exc.code
    return None


def test_keygen_writes_a_private_key_only_its_owner_reads(keys: tuple[Path, Path], run_cli: Cli) -> None:
    """The private key is mode 0600 and loads; the public key is a C2SP verifier key; keygen never overwrites."""
    private, public = keys
    assert stat.S_IMODE(private.stat().st_mode) == 0o600
    signer = load_signer(str(private))
    assert re.fullmatch(r"audit\+[0-9a-f]{8}\+[A-Za-z0-9+/]{43}[A-Za-z0-9+/=]\n", public.read_text())
    assert public.read_text().split("+")[1] == signer.key_id.hex()
    before = private.read_bytes()
    again = run_cli("keygen", private.with_suffix(""))
    assert again.code == 1 and "KEY_EXISTS" in again.err and "Traceback" not in again.err
    assert private.read_bytes() == before


def test_signed_checkpoints_prove_the_log_up_to_the_last_one(
    log: Path, keys: tuple[Path, Path], tmp_path: Path, run_cli: Cli
) -> None:
    """checkpoint --sign-key prints a C2SP checkpoint of the log; verify --pubkey checks every one and says up to
    which seq the log is proven; --consistency makes a proof between two notes that verifies."""
    private, public = keys
    first = run_cli("checkpoint", log, "--sign-key", private)
    assert first.code == 0, first.err
    text, signatures = parse_note(first.out)
    body = parse_checkpoint(text)
    run = orjson.loads(lines_of(log)[0])["run"]
    assert (body.origin, body.size) == (f"plantrail/{run}", 7)
    assert body.root == root_of([leaf_hash(bytes.fromhex(orjson.loads(x)["h"])) for x in lines_of(log)[:7]])
    assert [s.name for s in signatures] == ["audit"]
    (tmp_path / "old.note").write_text(first.out)
    more(log, 3)
    second = run_cli("checkpoint", log, "--sign-key", private, "--json")
    assert second.code == 0, second.err
    data = orjson.loads(second.out)
    assert data["covers_seq"] == 10 and data["seq"] == 11
    (tmp_path / "new.note").write_text(data["note"])
    more(log, 2)

    checked = run_cli("verify", log, "--pubkey", public)
    assert checked.code == 0, checked.err
    assert "signed checkpoints: 2, proven up to seq 10 by audit+" in checked.out
    assert "3 record(s) after it unsigned" in checked.out
    report = orjson.loads(run_cli("verify", log, "--pubkey", public, "--json").out)
    assert (report["signed"], report["signed_seq"], report["unsigned"]) == (2, 10, 3)

    proved = run_cli("verify", log, "--pubkey", public, "--consistency", tmp_path / "old.note", tmp_path / "new.note")
    assert proved.code == 0, proved.err
    assert "consistent: the tree of 7 records" in proved.out and "of 11" in proved.out
    result = orjson.loads(
        run_cli("verify", log, "--json", "--consistency", tmp_path / "old.note", tmp_path / "new.note").out
    )["consistency"]
    old, new = parse_checkpoint(parse_note(first.out)[0]), parse_checkpoint(parse_note(data["note"])[0])
    proof = [base64.b64decode(p) for p in result["proof"]]
    assert (result["old_size"], result["new_size"]) == (7, 11)
    assert verify_consistency(7, 11, old.root, new.root, proof)
    assert not verify_consistency(7, 11, new.root, old.root, proof)
    swapped = run_cli("verify", log, "--consistency", tmp_path / "new.note", tmp_path / "old.note")
    assert swapped.code == 2 and "USAGE" in swapped.err


def test_a_rechained_edit_passes_the_chain_but_not_the_signature(
    log: Path, keys: tuple[Path, Path], run_cli: Cli
) -> None:
    """Edit a record and re-chain everything: the chain verifies, the tree root does not; forge the root too
    and the signature fails."""
    private, public = keys
    assert run_cli("checkpoint", log, "--sign-key", private).code == 0
    assert code_of(log, public) is None
    lines = lines_of(log)
    lines[3] = lines[3].replace(b"one failure", b"all passing")
    write_lines(log, rechain(lines, 3))
    verify_log(log)  # the chain alone is fooled
    assert code_of(log, public) == "CHECKPOINT_MISMATCH"
    checked = run_cli("verify", log, "--pubkey", public)
    assert checked.code == 3 and "CHECKPOINT_MISMATCH" in checked.err and "Traceback" not in checked.err

    lines = lines_of(log)
    forged_root = root_of([leaf_hash(bytes.fromhex(orjson.loads(x)["h"])) for x in lines[:-1]]).hex()
    lines[-1] = reseal(re.sub(rb'"root":"[0-9a-f]{64}"', b'"root":"' + forged_root.encode() + b'"', lines[-1]))
    write_lines(log, lines)
    verify_log(log)
    assert code_of(log, public) == "SIGNATURE_INVALID"


def test_another_key_a_stripped_checkpoint_and_bad_key_files_are_refused(
    log: Path, keys: tuple[Path, Path], tmp_path: Path, run_cli: Cli
) -> None:
    """Another public key: SIGNATURE_INVALID; no signed checkpoint left: CHECKPOINT_MISSING; a malformed key
    file: SIGNING_KEY_INVALID, and the refused checkpoint leaves the log byte for byte unchanged."""
    private, public = keys
    assert run_cli("checkpoint", log, "--sign-key", private).code == 0
    assert run_cli("keygen", tmp_path / "other").code == 0
    assert code_of(log, tmp_path / "other.pub") == "SIGNATURE_INVALID"
    write_lines(log, lines_of(log)[:-1])
    assert code_of(log, public) == "CHECKPOINT_MISSING"
    before = log.read_bytes()
    (tmp_path / "bad.key").write_text("PRIVATE+KEY+audit+00000000+AAAA\n")
    refused = run_cli("checkpoint", log, "--sign-key", tmp_path / "bad.key")
    assert refused.code == 2 and "SIGNING_KEY_INVALID" in refused.err and "Traceback" not in refused.err
    assert log.read_bytes() == before
    bad = run_cli("verify", log, "--pubkey", private)  # the private key is no verifier key
    assert bad.code == 2 and "SIGNING_KEY_INVALID" in bad.err


def test_only_the_signing_module_imports_cryptography() -> None:
    """Nothing imports cryptography at module level: the signing module loads it inside the functions that
    make keys, sign or check, so a log without signatures is read and verified without the extra."""
    root = Path(__file__).resolve().parents[2]
    found = []
    for path in [*root.glob("ledger/**/*.py"), *root.glob("cli/*.py"), *root.glob("projections/*.py")]:
        for line in path.read_text().splitlines():
            if re.match(r"\s*(from|import) cryptography\b", line):
                found.append((path.relative_to(root).as_posix(), line.startswith((" ", "\t"))))
    assert found and {p for p, _ in found} == {"ledger/signing.py"}
    assert all(indented for _, indented in found)


def test_the_signed_checkpoint_is_a_v2_line_and_a_wrong_signer_is_refused(log: Path, keys: tuple[Path, Path]) -> None:
    """Ledger.sign_checkpoint writes one "v":2 log.signed line; a signer of another type is refused
    (INVALID_ARGUMENT) and leaves the log unchanged."""
    before = log.read_bytes()
    with Ledger.open(log, fsync="none") as ledger:
        with pytest.raises(PlantrailError) as refused:
            ledger.sign_checkpoint("audit.key")  # type: ignore[arg-type]
        assert refused.value.code == "INVALID_ARGUMENT"
        assert log.read_bytes() == before
        ack = ledger.sign_checkpoint(load_signer(str(keys[0])))
    line = orjson.loads(lines_of(log)[-1])
    assert (line["v"], line["type"], line["seq"], line["data"]["covers_seq"]) == (2, "log.signed", ack.seq, ack.seq - 1)
    assert line["data"]["head"] == line["prev"]


def test_a_writer_signs_every_n_records_and_at_finish(log: Path, keys: tuple[Path, Path]) -> None:
    """sign_on(every=3): a signed checkpoint follows each turn that leaves 3 or more records since the last;
    the finishing turn is signed too; each command's acknowledgement stays its own; the log verifies with the
    public key up to the finish."""
    from plantrail.ledger.signing import load_verifier

    with Ledger.open(log, fsync="none") as ledger:
        ledger.sign_on(load_signer(str(keys[0])), every=3)
        acks = [ledger.verify_criterion("login-test-passes", True, f"pass {i}") for i in range(5)]
        assert ledger.acknowledgement(acks[-1])  # the turn signed after is still acknowledged (USAGE if not)
        finished = ledger.finish("failed", reason="stopped")
    types = [orjson.loads(line)["type"] for line in lines_of(log)]
    signed = [n for n, t in enumerate(types) if t == "log.signed"]
    # seq 6 is the head before sign_on; records 7, 8, 9 make 3: signed at 10; 11, 12, 13: signed at 14 ...
    assert signed[:1] == [10] and signed[-1] == finished.seq + 1 == len(types) - 1
    report = verify_log(log, pubkey=load_verifier(str(keys[1])))
    assert report.signed == len(signed) and report.signed_seq == finished.seq


def test_a_signing_that_fails_after_the_turn_never_writes_the_turn_again(
    log: Path, keys: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The policy's checkpoint is signed after the turn is committed: a conflict while signing is said with the
    seqs the turn recorded, and the command is written once (a signing inside the retries wrote it again)."""
    from plantrail.ledger.vocabulary.errors import error

    def conflicted(self: Ledger, signer: object) -> None:
        raise error("WRITE_CONFLICT", "other writers kept appending while the tree was read")

    before = len(lines_of(log))
    with Ledger.open(log, fsync="none") as ledger:
        ledger.sign_on(load_signer(str(keys[0])), every=1)
        monkeypatch.setattr(Ledger, "sign_checkpoint", conflicted)
        with pytest.raises(PlantrailError) as caught:
            ledger.verify_criterion("login-test-passes", True, "once")
    assert caught.value.code == "WRITE_CONFLICT"
    assert "were recorded (seq 7)" in caught.value.message and caught.value.fields["recorded"] == [7]
    assert [orjson.loads(line)["type"] for line in lines_of(log)[before:]] == ["criterion.verified"]


def test_sign_on_refuses_a_bad_policy(log: Path, keys: tuple[Path, Path]) -> None:
    """every must be a positive integer: 0 and a string are INVALID_ARGUMENT."""
    with Ledger.open(log, fsync="none") as ledger:
        for every in (0, "3"):
            with pytest.raises(PlantrailError) as refused:
                ledger.sign_on(load_signer(str(keys[0])), every=every)  # type: ignore[arg-type]
            assert refused.value.code == "INVALID_ARGUMENT"


def test_a_published_head_exposes_a_history_the_key_holder_re_signed(
    log: Path, keys: tuple[Path, Path], tmp_path: Path, run_cli: Cli
) -> None:
    """Someone holding the private key rewrites history and signs it again: verify --pubkey passes, but the
    head published before the rewrite no longer matches the log (CHECKPOINT_MISMATCH); a note of another run
    and a file that is no note are refused too."""
    private, public = keys
    published = run_cli("checkpoint", log, "--sign-key", private)
    (tmp_path / "published.note").write_text(published.out)
    lines = lines_of(log)[:-1]  # drop the signed checkpoint, edit, re-chain, sign again
    lines[3] = lines[3].replace(b"one failure", b"all passing")
    write_lines(log, rechain(lines, 3))
    resigned = run_cli("checkpoint", log, "--sign-key", private)
    (tmp_path / "resigned.note").write_text(resigned.out)
    assert run_cli("verify", log, "--pubkey", public).code == 0
    caught = run_cli(
        "verify", log, "--pubkey", public, "--consistency", tmp_path / "published.note", tmp_path / "resigned.note"
    )
    assert caught.code == 3 and "CHECKPOINT_MISMATCH" in caught.err and "published.note" in caught.err

    foreign = published.out.replace("plantrail/", "plantrail/other-", 1)
    (tmp_path / "foreign.note").write_text(foreign)
    mismatch = run_cli("verify", log, "--consistency", tmp_path / "foreign.note", tmp_path / "resigned.note")
    assert mismatch.code == 3 and "CHECKPOINT_MISMATCH" in mismatch.err
    (tmp_path / "junk.note").write_text("not a note\n")
    junk = run_cli("verify", log, "--consistency", tmp_path / "junk.note", tmp_path / "resigned.note")
    assert junk.code == 2 and "USAGE" in junk.err and "Traceback" not in junk.err


def _witness_accepts(old_note: str, new_note: str, proof: list[bytes], public: Path) -> bool:
    """What a witness does before it cosigns NEW, holding only OLD (cosigned before) and the writer's public key:
    both signatures verify, same origin, and the consistency proof shows OLD's tree a prefix of NEW's."""
    from plantrail.ledger.signing import ed25519_check, load_verifier
    from plantrail.ledger.vocabulary.signed_note import open_note

    key = load_verifier(str(public))
    old = parse_checkpoint(open_note(old_note, key, ed25519_check))
    new = parse_checkpoint(open_note(new_note, key, ed25519_check))
    return old.origin == new.origin and verify_consistency(old.size, new.size, old.root, new.root, proof)


def _hashes(log: Path) -> list[bytes]:
    """The leaf hashes of every record of the log."""
    return [leaf_hash(bytes.fromhex(orjson.loads(line)["h"])) for line in lines_of(log)]


def test_a_witness_accepts_the_next_head_of_a_run_but_not_a_rewritten_history(
    log: Path, keys: tuple[Path, Path], tmp_path: Path, run_cli: Cli
) -> None:
    """Two signed heads of one run: the proof verify --consistency prints convinces a witness holding only the
    older note and the public key. The key holder then rewrites a record, signs every checkpoint again and
    signs a newer head: no proof it can make from its log convinces the witness that the old note is a prefix."""
    from plantrail.ledger.signing import sign_checkpoint
    from plantrail.ledger.vocabulary.merkle import consistency_proof

    private, public = keys
    old_note = run_cli("checkpoint", log, "--sign-key", private).out
    more(log, 4)
    new_note = run_cli("checkpoint", log, "--sign-key", private).out
    (tmp_path / "old.note").write_text(old_note)
    (tmp_path / "new.note").write_text(new_note)
    shown = orjson.loads(
        run_cli(
            "verify", log, "--pubkey", public, "--json", "--consistency", tmp_path / "old.note", tmp_path / "new.note"
        ).out
    )["consistency"]
    assert _witness_accepts(old_note, new_note, [base64.b64decode(p) for p in shown["proof"]], public)
    assert not _witness_accepts(new_note, old_note, [base64.b64decode(p) for p in shown["proof"]], public)

    signer = load_signer(str(private))
    lines = lines_of(log)
    run = orjson.loads(lines[0])["run"]
    rewritten = rechain([*lines[:3], lines[3].replace(b"one failure", b"all passing"), *lines[4:]], 3)
    assert rewritten[3] != lines[3]
    for index, line in enumerate(rewritten):  # every signed checkpoint signed again over the new history
        if b'"log.signed"' in line:
            head = orjson.loads(rewritten[index - 1])["h"]
            root = root_of([leaf_hash(bytes.fromhex(orjson.loads(x)["h"])) for x in rewritten[:index]])
            again = sign_checkpoint(signer, run, index - 1, head, root)
            line = re.sub(rb'"root":"[0-9a-f]{64}"', b'"root":"' + again.root.encode() + b'"', line)
            rewritten[index] = re.sub(rb'"signature":"[^"]*"', b'"signature":"' + again.signature.encode() + b'"', line)
            rewritten = rechain(rewritten, index)
    write_lines(log, rewritten)
    assert code_of(log, public) is None  # the key alone is fooled: every signature verifies
    more(log, 2)
    forged_note = run_cli("checkpoint", log, "--sign-key", private).out
    old_size = parse_checkpoint(parse_note(old_note)[0]).size
    hashes = _hashes(log)[: parse_checkpoint(parse_note(forged_note)[0]).size]
    assert not _witness_accepts(old_note, forged_note, consistency_proof(hashes, old_size), public)
    (tmp_path / "forged.note").write_text(forged_note)
    refused = run_cli(
        "verify", log, "--pubkey", public, "--consistency", tmp_path / "old.note", tmp_path / "forged.note"
    )
    assert refused.code == 3 and "CHECKPOINT_MISMATCH" in refused.err and "old.note" in refused.err


@pytest.fixture
def leaves_added(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Counts every leaf added to a Merkle frontier (each one a leaf hash computed): [count]."""
    from plantrail.ledger.vocabulary.merkle import Frontier

    count = [0]
    append = Frontier.append

    def counted(self: Frontier, leaf: bytes) -> None:
        count[0] += 1
        append(self, leaf)

    monkeypatch.setattr(Frontier, "append", counted)
    return count


def test_a_writer_signing_every_10_events_hashes_each_record_once(
    log: Path, keys: tuple[Path, Path], leaves_added: list[int]
) -> None:
    """sign_on(every=10) over 2,000 events: the writer keeps the tree's frontier as it appends, so the leaves
    hashed are the log's records (each once), not the whole log again at each of the 200 checkpoints; every
    checkpoint verifies with the public key."""
    from plantrail.ledger.signing import load_verifier

    with Ledger.open(log, fsync="none", cache=False) as ledger:
        ledger.sign_on(load_signer(str(keys[0])), every=10)
        for i in range(2000):
            ledger.verify_criterion("login-test-passes", True, f"pass {i}")
    records = len(lines_of(log))
    assert records >= 2200
    assert leaves_added[0] <= records  # a re-read per checkpoint would hash about 200 x 1,100
    report = verify_log(log, pubkey=load_verifier(str(keys[1])))
    assert report.signed == 200 and report.signed_seq == records - 2


def test_the_tree_is_built_once_from_the_log_and_follows_other_writers(
    log: Path, keys: tuple[Path, Path], leaves_added: list[int]
) -> None:
    """A ledger opened from its snapshot builds the tree from the log at its first signed checkpoint, then carries
    it; records another writer appends in between are added as the ledger catches up. Every checkpoint
    verifies."""
    from plantrail.ledger.signing import load_verifier

    signer = load_signer(str(keys[0]))
    more(log, 3)  # leaves a snapshot beside the log
    with Ledger.open(log, fsync="none") as ledger, Ledger.open(log, fsync="none") as other:
        ledger.sign_checkpoint(signer)
        first = leaves_added[0]
        assert first == len(lines_of(log))  # every record before the checkpoint, read once, and the checkpoint
        for i in range(5):
            other.verify_criterion("login-test-passes", True, f"other {i}")
            ledger.verify_criterion("login-test-passes", True, f"mine {i}")
        ledger.sign_checkpoint(signer)
        assert leaves_added[0] == first + 1 + 10  # its own checkpoint, then the ten records since
    assert verify_log(log, pubkey=load_verifier(str(keys[1]))).signed == 2


@pytest.mark.parametrize("present", ["audit.key", "audit.pub", "link"])
def test_keygen_never_overwrites_any_file_an_empty_one_too(tmp_path: Path, run_cli: Cli, present: str) -> None:
    """An empty NAME.key, an empty NAME.pub, or a dangling link in NAME.key's place: keygen refuses KEY_EXISTS
    (exit 1), leaves that name as it was and makes no other file."""
    if present == "link":
        (tmp_path / "audit.key").symlink_to(tmp_path / "elsewhere")
    else:
        (tmp_path / present).write_bytes(b"")
    before = sorted(p.name for p in tmp_path.iterdir())
    refused = run_cli("keygen", tmp_path / "audit")
    assert refused.code == 1 and "error[KEY_EXISTS]" in refused.err and "Traceback" not in refused.err
    assert sorted(p.name for p in tmp_path.iterdir()) == before
    assert not (tmp_path / "elsewhere").exists()
    if present != "link":
        assert (tmp_path / present).read_bytes() == b""


def test_verify_proves_one_records_inclusion_under_the_last_signed_head(
    log: Path, keys: tuple[Path, Path], run_cli: Cli
) -> None:
    """verify --pubkey --record SEQ prints the audit path of each record the last signed checkpoint covers, which
    checks against that checkpoint's note alone (and fails for another record's hash); a record after it is
    CHECKPOINT_MISSING, one past the log UNKNOWN_SEQ, and --record without --pubkey USAGE."""
    from plantrail.ledger.vocabulary.merkle import verify_inclusion

    private, public = keys
    run_cli("checkpoint", log, "--sign-key", private)
    more(log, 2)
    note = run_cli("checkpoint", log, "--sign-key", private).out
    more(log, 1)
    head = parse_checkpoint(parse_note(note)[0])
    hashes = [orjson.loads(line)["h"] for line in lines_of(log)]
    for seq in range(head.size):
        shown = run_cli("verify", log, "--pubkey", public, "--record", str(seq), "--json")
        assert shown.code == 0, shown.err
        inclusion = shown.json()["inclusion"]
        proof = [base64.b64decode(p) for p in inclusion["proof"]]
        assert (inclusion["seq"], inclusion["hash"], inclusion["tree_size"]) == (seq, hashes[seq], head.size)
        assert base64.b64decode(inclusion["root"]) == head.root
        assert verify_inclusion(seq, head.size, leaf_hash(bytes.fromhex(hashes[seq])), proof, head.root)
        other = hashes[(seq + 1) % head.size]
        assert not verify_inclusion(seq, head.size, leaf_hash(bytes.fromhex(other)), proof, head.root)
    text = run_cli("verify", log, "--pubkey", public, "--record", "3").out
    assert f"included: seq 3 ({hashes[3]}) is leaf 3 of the signed tree of {head.size} records" in text
    after = run_cli("verify", log, "--pubkey", public, "--record", str(head.size + 1))
    assert after.code == 3 and "error[CHECKPOINT_MISSING]" in after.err
    past = run_cli("verify", log, "--pubkey", public, "--record", "999")
    assert past.code == 1 and "error[UNKNOWN_SEQ]" in past.err
    bare = run_cli("verify", log, "--record", "3")
    assert bare.code == 2 and "error[USAGE]" in bare.err
