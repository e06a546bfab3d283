"""`plantrail acp`: a real editor and a real agent, both written with the agent-client-protocol SDK, talk through
the relay over real pipes; every byte passes unchanged and each plan becomes a run."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import orjson
import pytest

from plantrail import Ledger
from plantrail.ledger.importers import acp as adapter

if os.environ.get("CI") != "true":  # on CI the SDK (the [acp] extra, part of [test]) must be there: never skipped
    pytest.importorskip("acp")

HELPERS = Path(__file__).resolve().parents[1] / "helpers"
EDITOR = HELPERS / "acp_editor.py"
AGENT = HELPERS / "acp_fake_agent.py"
PLANTRAIL = [sys.executable, "-m", "plantrail"]


def _session(
    tmp_path: Path, mode: str, *options: str, agent: list[str] | None = None, more_env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """Run the SDK editor against `plantrail acp [options] -- <the SDK agent>` in the project tmp_path/proj."""
    project = tmp_path / "proj"
    project.mkdir(exist_ok=True)
    command = [
        *PLANTRAIL,
        "acp",
        *options,
        "--",
        *(agent or [sys.executable, str(AGENT), mode, str(tmp_path / "agent")]),
    ]
    env = {k: v for k, v in os.environ.items() if k not in ("PLANTRAIL_HOME", "PLANTRAIL_STORE")}
    env |= more_env or {}
    return subprocess.run(
        [sys.executable, str(EDITOR), str(project), str(tmp_path / "editor"), "--", *command],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        cwd=tmp_path,
    )


def _status(log: Path) -> list[tuple[str, str]]:
    """Each step's title and status, as `plantrail status --json` gives them."""
    done = subprocess.run([*PLANTRAIL, "status", str(log), "--json"], capture_output=True, check=True)
    return [(step["title"], step["status"]) for step in orjson.loads(done.stdout)["steps"]]


def _relayed_unchanged(tmp_path: Path) -> None:
    agent_wrote, editor_read = (tmp_path / "agent.out").read_bytes(), (tmp_path / "editor.in").read_bytes()
    editor_wrote, agent_read = (tmp_path / "editor.out").read_bytes(), (tmp_path / "agent.in").read_bytes()
    assert agent_wrote and editor_wrote
    assert editor_read == agent_wrote
    assert agent_read == editor_wrote


def test_a_v1_session_is_relayed_unchanged_and_its_last_plan_is_the_runs(tmp_path: Path) -> None:
    """Every byte passes unchanged both ways, and the run acp-<sessionId> holds the last plan update's steps
    and statuses, with the user's prompt as its goal and the agent's name on its sources."""
    done = _session(tmp_path, "v1")
    assert done.returncode == 0, done.stderr
    _relayed_unchanged(tmp_path)
    runs = tmp_path / "proj" / ".plantrail" / "runs"
    assert sorted(p.name for p in runs.glob("*.jsonl")) == ["acp-session-1.jsonl"]
    log = runs / "acp-session-1.jsonl"
    assert _status(log) == [
        ("Read the failing test", "completed"),
        ("Fix the parser", "in_progress"),
        ("Run the suite", "pending"),
    ]
    records = [orjson.loads(line) for line in log.read_bytes().splitlines()]
    created = next(r for r in records if r["type"] == "plan.created")
    assert created["data"]["plan"]["goal"] == "Fix the failing parser test and run the whole suite"
    assert created["source"]["meta"]["agent"] == "acp:fake-agent"
    assert any("agent acp:fake-agent 1.0" in note for note in created["data"]["plan"]["notes"])
    assert not (tmp_path / "proj" / ".plantrail" / "hook-errors.log").exists()


def test_a_v2_session_with_two_plan_ids_gives_two_runs(tmp_path: Path) -> None:
    """Each planId is its own run acp-<sessionId>.<planId> with its own last statuses; a Markdown plan that
    never lists a step is written down in the hook error file, and the relay is still unchanged."""
    done = _session(tmp_path, "v2")
    assert done.returncode == 0, done.stderr
    _relayed_unchanged(tmp_path)
    runs = tmp_path / "proj" / ".plantrail" / "runs"
    assert sorted(p.name for p in runs.glob("*.jsonl")) == ["acp-session-1.backend.jsonl", "acp-session-1.docs.jsonl"]
    assert _status(runs / "acp-session-1.backend.jsonl") == [
        ("Add the endpoint", "completed"),
        ("Write its test", "completed"),
    ]
    assert _status(runs / "acp-session-1.docs.jsonl") == [("Describe the endpoint", "completed")]
    errors = (tmp_path / "proj" / ".plantrail" / "hook-errors.log").read_text()
    assert "error[EMPTY_PLAN]: plan session-1.notes" in errors


def test_the_saved_stream_imports_to_the_same_plan(tmp_path: Path) -> None:
    """--save-stream writes every message with its direction, one a line, and `plantrail import` reads it back
    to the same steps and statuses as the live run."""
    saved = tmp_path / "session.acp.jsonl"
    assert _session(tmp_path, "v1", "--save-stream", str(saved)).returncode == 0
    lines = [orjson.loads(line) for line in saved.read_bytes().splitlines()]
    agent_lines = (tmp_path / "agent.out").read_bytes().splitlines()
    assert [orjson.dumps(line["message"]) for line in lines if line["from"] == "agent"] == [
        orjson.dumps(orjson.loads(raw)) for raw in agent_lines
    ]
    assert sum(line["from"] == "editor" for line in lines) == len((tmp_path / "agent.in").read_bytes().splitlines())
    imported = tmp_path / "imported.jsonl"
    done = subprocess.run([*PLANTRAIL, "import", str(saved), "-o", str(imported)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert _status(imported) == _status(tmp_path / "proj" / ".plantrail" / "runs" / "acp-session-1.jsonl")
    with Ledger.open(imported) as ledger:
        assert ledger.unread_state.run == "acp-session-1"


def test_a_planted_link_at_the_save_path_is_refused_and_its_target_untouched(tmp_path: Path) -> None:
    """A symlink where the saved stream goes is refused with NOT_A_FILE before the agent starts; its target
    keeps its bytes."""
    target = tmp_path / "precious.txt"
    target.write_bytes(b"keep me\n")
    link = tmp_path / "stream.jsonl"
    link.symlink_to(target)
    done = subprocess.run(
        [*PLANTRAIL, "acp", "--save-stream", str(link), "--", sys.executable, "-c", "pass"],
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 4
    assert done.stderr.startswith("error[NOT_A_FILE]:")
    assert target.read_bytes() == b"keep me\n"


def test_a_recording_that_fails_never_breaks_the_relay(tmp_path: Path) -> None:
    """With a file planted where the runs folder goes, nothing is recorded, the session still runs unchanged,
    and the failure is one line in the hook error file under the session's working directory."""
    plantrail = tmp_path / "proj" / ".plantrail"
    plantrail.mkdir(parents=True)
    (plantrail / "runs").write_bytes(b"not a folder\n")
    done = _session(tmp_path, "v1")
    assert done.returncode == 0, done.stderr
    _relayed_unchanged(tmp_path)
    errors = (plantrail / "hook-errors.log").read_text()
    assert "acp session session-1: error[NOT_A_FILE]" in errors
    assert (plantrail / "runs").read_bytes() == b"not a folder\n"


def test_dir_names_where_the_runs_go(tmp_path: Path) -> None:
    """--dir DIR records each plan as DIR/<run>.jsonl."""
    where = tmp_path / "elsewhere"
    assert _session(tmp_path, "v2", "--dir", str(where)).returncode == 0
    assert sorted(p.name for p in where.glob("*.jsonl")) == ["acp-session-1.backend.jsonl", "acp-session-1.docs.jsonl"]


def test_the_agents_exit_code_is_the_commands(tmp_path: Path) -> None:
    """The child's exit code is returned, and EOF on the agent's stdout ends the editor's stream."""
    done = subprocess.run(
        [*PLANTRAIL, "acp", "--", sys.executable, "-c", "import sys; sys.stdout.write('bye\\n'); sys.exit(7)"],
        capture_output=True,
        stdin=subprocess.DEVNULL,
        cwd=tmp_path,
    )
    assert done.returncode == 7
    assert done.stdout == b"bye\n"


def test_eof_from_the_editor_closes_the_agents_stdin(tmp_path: Path) -> None:
    """What the editor writes reaches the agent unchanged, and the editor closing its side ends the agent's input
    (an agent that echoes until EOF exits)."""
    echo = "import sys; data = sys.stdin.buffer.read(); sys.stdout.buffer.write(data[::-1])"
    sent = b'{"jsonrpc":"2.0","method":"x"}\nno newline at the end'
    done = subprocess.run(
        [*PLANTRAIL, "acp", "--", sys.executable, "-c", echo], input=sent, capture_output=True, cwd=tmp_path, timeout=60
    )
    assert done.returncode == 0
    assert done.stdout == sent[::-1]


def test_a_signal_is_passed_to_the_agent(tmp_path: Path) -> None:
    """SIGTERM sent to the relay reaches the agent, whose exit code the relay returns."""
    ready = tmp_path / "ready"
    agent = (
        "import signal, sys, time, pathlib\n"
        "signal.signal(signal.SIGTERM, lambda *a: sys.exit(5))\n"
        f"pathlib.Path({str(ready)!r}).write_text('up')\n"
        "while True: time.sleep(0.05)\n"
    )
    relay = subprocess.Popen(
        [*PLANTRAIL, "acp", "--", sys.executable, "-c", agent], stdin=subprocess.PIPE, cwd=tmp_path
    )
    deadline = time.monotonic() + 60
    while not ready.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    relay.send_signal(signal.SIGTERM)
    assert relay.wait(timeout=60) == 5


def test_an_agent_that_cannot_start_is_an_error_not_a_traceback(tmp_path: Path) -> None:
    """A missing agent program is FILE_NOT_FOUND (exit 4)."""
    done = subprocess.run(
        [*PLANTRAIL, "acp", "--", str(tmp_path / "no-such-agent")],
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 4
    assert done.stderr.startswith("error[FILE_NOT_FOUND]:")
    assert "Traceback" not in done.stderr


def test_a_plan_key_that_is_no_run_id_is_hashed() -> None:
    """acp-<key> when it is a valid run id, else acp-<hash of the key>."""
    assert adapter.run_id("session-1.backend") == "acp-session-1.backend"
    hashed = adapter.run_id("a session/with spaces")
    assert hashed.startswith("acp-") and hashed != "acp-a session/with spaces"
    assert hashed == adapter.run_id("a session/with spaces")
    assert len(hashed) == len("acp-") + 32


def test_a_long_message_crosses_unchanged(tmp_path: Path) -> None:
    """A message far larger than one read (several MiB, split across reads) reaches the other side whole, in
    order with the messages around it."""
    echo = "import sys; sys.stdout.buffer.write(sys.stdin.buffer.read())"
    big = orjson.dumps({"jsonrpc": "2.0", "method": "x", "params": {"blob": "é" * (3 << 20)}})
    sent = b'{"jsonrpc":"2.0","id":1}\n' + big + b'\n{"jsonrpc":"2.0","id":2}\n'
    done = subprocess.run(
        [*PLANTRAIL, "acp", "--save-stream", str(tmp_path / "s.jsonl"), "--", sys.executable, "-c", echo],
        input=sent,
        capture_output=True,
        cwd=tmp_path,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == sent
    saved = [orjson.loads(line) for line in (tmp_path / "s.jsonl").read_bytes().splitlines()]
    assert [(line["from"], line["message"].get("id")) for line in saved] == [
        ("editor", 1),
        ("editor", None),
        ("editor", 2),
        ("agent", 1),
        ("agent", None),
        ("agent", 2),
    ]


def test_an_editor_that_goes_away_never_blocks_the_agent(tmp_path: Path) -> None:
    """When the editor stops reading, the agent's further output is drained (and recorded), so the agent is
    never left blocked on a full pipe: it finishes, and its exit code is the relay's."""
    agent = "import sys\nfor _ in range(200): sys.stdout.write('x' * 65536 + '\\n')\nsys.stdout.flush()\nsys.exit(3)\n"
    relay = subprocess.Popen(
        [*PLANTRAIL, "acp", "--", sys.executable, "-c", agent],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        cwd=tmp_path,
    )
    assert relay.stdout is not None
    relay.stdout.read(10)
    relay.stdout.close()  # the editor goes away after its first bytes
    assert relay.wait(timeout=120) == 3


def test_dir_overrides_the_store_of_the_environment_but_not_one_given(tmp_path: Path) -> None:
    """PLANTRAIL_STORE gives way to --dir; --store and --dir both on the command line are USAGE."""
    both = subprocess.run(
        [*PLANTRAIL, "acp", "--store", str(tmp_path), "--dir", str(tmp_path), "--", sys.executable, "-c", "pass"],
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
    )
    assert both.returncode == 2 and "error[USAGE]: --dir and --store name two places" in both.stderr
    where, elsewhere = tmp_path / "dir", tmp_path / "store"
    elsewhere.mkdir()
    project = tmp_path / "proj"
    project.mkdir()
    command = [*PLANTRAIL, "acp", "--dir", str(where), "--", sys.executable, str(AGENT), "v1", str(tmp_path / "agent")]
    env = {**os.environ, "PLANTRAIL_STORE": str(elsewhere)}
    done = subprocess.run(
        [sys.executable, str(EDITOR), str(project), str(tmp_path / "editor"), "--", *command],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert done.returncode == 0, done.stderr
    assert [p.name for p in where.glob("*.jsonl")] == ["acp-session-1.jsonl"]
    assert list(elsewhere.iterdir()) == []


def test_the_relay_signs_the_runs_it_records_on_its_environment(tmp_path: Path) -> None:
    """With $PLANTRAIL_SIGN_KEY and $PLANTRAIL_SIGN_EVERY=2 the recorder's ledgers sign after every turn that
    leaves 2 or more records since the last signed checkpoint, and the run verifies with the public key; a bad
    N is refused (USAGE, exit 2) before the agent starts, and no run is recorded."""
    from plantrail.ledger.signing import keygen, load_verifier
    from plantrail.ledger.verify import verify_log

    keygen(str(tmp_path / "audit"))
    signing = {"PLANTRAIL_SIGN_KEY": str(tmp_path / "audit.key"), "PLANTRAIL_SIGN_EVERY": "2"}
    done = _session(tmp_path, "v1", more_env=signing)
    assert done.returncode == 0, done.stderr
    _relayed_unchanged(tmp_path)
    log = tmp_path / "proj" / ".plantrail" / "runs" / "acp-session-1.jsonl"
    types = [orjson.loads(line)["type"] for line in log.read_bytes().splitlines()]
    assert types.count("log.signed") >= 1
    assert verify_log(log, pubkey=load_verifier(str(tmp_path / "audit.pub"))).signed == types.count("log.signed")

    refused = subprocess.run(
        [*PLANTRAIL, "acp", "--dir", str(tmp_path / "other"), "--", sys.executable, str(AGENT), "v1", "x"],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, **signing, "PLANTRAIL_SIGN_EVERY": "0"},
        stdin=subprocess.DEVNULL,
    )
    assert refused.returncode == 2 and "error[USAGE]" in refused.stderr and "Traceback" not in refused.stderr
    assert not (tmp_path / "other").exists()
