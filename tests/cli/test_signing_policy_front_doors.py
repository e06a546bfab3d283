"""A signing policy from every front door: the recording commands' --sign-key / --sign-every (or
$PLANTRAIL_SIGN_KEY / $PLANTRAIL_SIGN_EVERY), `plantrail mcp` and the agents' hooks, each started as a real
process; a bad value is a coded refusal before anything is written."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pytest

from plantrail.ledger.signing import keygen, load_verifier
from plantrail.ledger.signing_policy import SIGN_EVERY_ENV, SIGN_KEY_ENV
from plantrail.ledger.verify import verify_log
from tests.conftest import LOGIN_DRAFT, CliResult
from tests.helpers.hook_payloads import post_tool_use, prompt

Cli = Callable[..., CliResult]
SESSION = "5d6e7f80-1a2b-4c3d-9e8f-0a1b2c3d4e5f"


@pytest.fixture
def keys(tmp_path: Path) -> tuple[Path, Path]:
    """A key pair: (private, public)."""
    keygen(str(tmp_path / "audit"))
    return tmp_path / "audit.key", tmp_path / "audit.pub"


def types_of(log: Path) -> list[str]:
    """The record types of a log, in order."""
    return [orjson.loads(line)["type"] for line in log.read_bytes().splitlines()]


def _env(**more: str) -> dict[str, str]:
    """This process's environment without a signing policy or a runs folder of its own, plus ``more``."""
    dropped = (SIGN_KEY_ENV, SIGN_EVERY_ENV, "PLANTRAIL_HOME", "PLANTRAIL_STORE")
    return {**{k: v for k, v in os.environ.items() if k not in dropped}, **more}


def test_the_recording_commands_sign_on_their_options_and_the_environment(
    tmp_path: Path, keys: tuple[Path, Path], run_cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    """create and the recording commands with --sign-key and --sign-every 3 sign after each command that leaves 3
    or more records since the log's last signed checkpoint, though each command opens the log anew; with
    $PLANTRAIL_SIGN_KEY alone, only the finish is signed. Every signature verifies."""
    private, public = keys
    log, draft = tmp_path / "run.jsonl", tmp_path / "plan.json"
    draft.write_bytes(orjson.dumps(LOGIN_DRAFT))
    signing = ("--sign-key", str(private), "--sign-every", "3")
    assert run_cli("create", log, "--plan", draft, *signing).code == 0
    assert run_cli("start", log, "reproduce", *signing).code == 0  # seq 2: 3 records since none signed
    assert types_of(log)[-1] == "log.signed"
    for n in range(4):
        assert run_cli("criterion", log, "login-test-passes", "--failed", "--evidence", f"run {n}", *signing).code == 0
    # seq 3 signed; 4, 5, 6: signed at 7; then 8
    assert [n for n, t in enumerate(types_of(log)) if t == "log.signed"] == [3, 7]

    monkeypatch.setenv(SIGN_KEY_ENV, str(private))
    assert run_cli("criterion", log, "login-test-passes", "--failed", "--evidence", "again").code == 0
    assert types_of(log)[-1] == "criterion.verified"
    finished = run_cli("finish", log, "--outcome", "failed", "--reason", "stopped", "--json")
    assert finished.code == 0, finished.err
    assert types_of(log)[-2:] == ["run.finished", "log.signed"]
    assert finished.json()["seq"] == len(types_of(log)) - 2  # the finish keeps its own acknowledgement
    report = verify_log(log, pubkey=load_verifier(str(public)))
    assert (report.signed, report.signed_seq) == (3, report.last_seq - 1)


@pytest.mark.parametrize(
    ("options", "env", "code"),
    [
        (("--sign-every", "0"), {}, "USAGE"),
        (("--sign-every", "three"), {}, "USAGE"),
        (("--sign-every", "-2"), {}, "USAGE"),
        (("--sign-every", "2"), {}, "USAGE"),  # no key
        ((), {SIGN_EVERY_ENV: "1.5"}, "USAGE"),
        (("--sign-key", "{public}"), {}, "SIGNING_KEY_INVALID"),
        ((), {SIGN_KEY_ENV: "{public}"}, "SIGNING_KEY_INVALID"),
    ],
)
def test_a_bad_signing_policy_is_refused_before_anything_is_written(
    tmp_path: Path,
    keys: tuple[Path, Path],
    run_cli: Cli,
    monkeypatch: pytest.MonkeyPatch,
    options: tuple[str, ...],
    env: dict[str, str],
    code: str,
) -> None:
    """A bad N, an N without a key, a file that holds no private key: the command is refused with its code (exit
    2), a recording command leaves the log byte for byte, and create makes no log."""
    shown = {"public": str(keys[1])}
    for name, value in env.items():
        monkeypatch.setenv(name, value.format(**shown))
    given = [option.format(**shown) for option in options]
    log, draft = tmp_path / "run.jsonl", tmp_path / "plan.json"
    draft.write_bytes(orjson.dumps(LOGIN_DRAFT))
    refused = run_cli("create", tmp_path / "new.jsonl", "--plan", draft, *given)
    assert refused.code == 2 and f"error[{code}]" in refused.err and "Traceback" not in refused.err
    assert not (tmp_path / "new.jsonl").exists()
    for name in env:
        monkeypatch.delenv(name)
    assert run_cli("create", log, "--plan", draft).code == 0
    for name, value in env.items():
        monkeypatch.setenv(name, value.format(**shown))
    before = log.read_bytes()
    refused = run_cli("start", log, "reproduce", *given)
    assert refused.code == 2 and f"error[{code}]" in refused.err
    assert log.read_bytes() == before


def test_the_plan_server_signs_the_runs_it_writes_on_its_environment(tmp_path: Path, keys: tuple[Path, Path]) -> None:
    """`plantrail mcp` started with $PLANTRAIL_SIGN_KEY and $PLANTRAIL_SIGN_EVERY=2, over real stdio: the run its
    tools write is signed every 2 records and at the finish, and verifies with the public key. A bad N: the server
    refuses to start (USAGE, exit 2)."""
    if os.environ.get("CI") != "true":
        pytest.importorskip("mcp")
    import anyio
    from mcp import Client, StdioServerParameters

    from tests.helpers.mcp_calls import call, result

    private, public = keys
    runs = tmp_path / "runs"
    env = _env(**{SIGN_KEY_ENV: str(private), SIGN_EVERY_ENV: "2"})

    async def main() -> None:
        params = StdioServerParameters(
            command=sys.executable, args=["-m", "plantrail", "mcp", "--dir", str(runs)], env=env, cwd=tmp_path
        )
        async with Client(params) as client:
            steps = [{"id": "reproduce", "title": "Reproduce", "completion_evidence": "failing output"}]
            criteria = [{"id": "tests-pass", "description": "the suite passes"}]
            result(await call(client, "plan_set", run="m1", goal="g", steps=steps, criteria=criteria))
            result(await call(client, "step_start", run="m1", step="reproduce"))
            result(await call(client, "step_update", run="m1", step="reproduce", action="complete", evidence=["x"]))
            result(await call(client, "run_finish", run="m1", outcome="failed", reason="stopped"))

    anyio.run(main)
    log = runs / "m1.jsonl"
    types = types_of(log)
    assert types[-2:] == ["run.finished", "log.signed"] and types.count("log.signed") >= 2
    assert verify_log(log, pubkey=load_verifier(str(public))).signed == types.count("log.signed")

    bad = subprocess.run(
        [sys.executable, "-m", "plantrail", "mcp", "--dir", str(runs)],
        env=_env(**{SIGN_KEY_ENV: str(private), SIGN_EVERY_ENV: "0"}),
        cwd=tmp_path,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert bad.returncode == 2 and "error[USAGE]" in bad.stderr and "Traceback" not in bad.stderr


def _hook(project: Path, payload: dict[str, Any], **env: str) -> None:
    """One `plantrail hook claude` call as its own process, as the installed hook runs it (it always exits 0)."""
    done = subprocess.run(
        [sys.executable, "-m", "plantrail", "hook", "claude"],
        input=orjson.dumps(payload),
        env=_env(**env),
        cwd=project,
        capture_output=True,
        timeout=60,
    )
    assert done.returncode == 0 and b"Traceback" not in done.stderr, done.stderr


def _event(project: Path, event: str, **fields: Any) -> dict[str, Any]:
    base = {"session_id": SESSION, "transcript_path": str(project / "t.jsonl"), "cwd": str(project)}
    return {**base, "permission_mode": "default", "hook_event_name": event, **fields}


def test_the_hooks_sign_the_session_run_and_write_a_bad_policy_down(tmp_path: Path, keys: tuple[Path, Path]) -> None:
    """The Claude Code hook with $PLANTRAIL_SIGN_KEY signs the session's run when the session's end finishes it;
    with a bad $PLANTRAIL_SIGN_EVERY it still exits 0, appends nothing and writes the refusal in the hook
    error file."""
    private, public = keys
    project = tmp_path / "project"
    project.mkdir()
    signing = {SIGN_KEY_ENV: str(private)}
    _hook(project, _event(project, "SessionStart", source="startup"), **signing)
    _hook(project, prompt(SESSION, project, "fix the login"), **signing)
    todos = [{"content": text, "status": "pending", "activeForm": text} for text in ("Reproduce", "Fix")]
    answer = {"oldTodos": [], "newTodos": todos}
    _hook(project, post_tool_use(SESSION, project, "TodoWrite", "c1", {"todos": todos}, answer), **signing)
    log = project / ".plantrail" / "runs" / f"{SESSION}.jsonl"
    before = log.read_bytes()
    _hook(project, _event(project, "SessionEnd", reason="other"), **signing, **{SIGN_EVERY_ENV: "often"})
    assert log.read_bytes() == before
    errors = (project / ".plantrail" / "hook-errors.log").read_text()
    assert "error[USAGE]" in errors and "often" in errors
    _hook(project, _event(project, "SessionEnd", reason="other"), **signing)
    assert types_of(log)[-2:] == ["run.finished", "log.signed"]
    assert verify_log(log, pubkey=load_verifier(str(public))).signed == 1


def test_an_import_signs_on_its_options_and_its_bytes_stay_the_same(
    tmp_path: Path, keys: tuple[Path, Path], run_cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`plantrail import --sign-key --sign-every 5` signs the run it writes as the recording commands do, each
    signature verifies with the public key, and the same transcript imported twice gives the same bytes (the
    signatures are deterministic, their times the transcript's); without a policy nothing is signed."""
    monkeypatch.delenv(SIGN_KEY_ENV, raising=False)
    monkeypatch.delenv(SIGN_EVERY_ENV, raising=False)
    private, public = keys
    transcript = Path(__file__).resolve().parents[2] / "samples" / "claude-session.jsonl"
    signing = ("--sign-key", str(private), "--sign-every", "5")
    first, second, plain = tmp_path / "a.jsonl", tmp_path / "b.jsonl", tmp_path / "plain.jsonl"
    assert run_cli("import", transcript, "-o", first, *signing).code == 0
    assert run_cli("import", transcript, "-o", second, *signing).code == 0
    assert run_cli("import", transcript, "-o", plain).code == 0

    assert first.read_bytes() == second.read_bytes()
    assert types_of(first).count("log.signed") >= 2 and "log.signed" not in types_of(plain)
    report = verify_log(first, pubkey=load_verifier(str(public)))
    assert report.signed == types_of(first).count("log.signed") and report.signed_seq is not None
    refused = run_cli("import", transcript, "-o", tmp_path / "c.jsonl", "--sign-every", "5")
    assert refused.code == 2 and not (tmp_path / "c.jsonl").exists()
