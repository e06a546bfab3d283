"""Text from data reaches a terminal shown, never obeyed: every human output escapes the control characters,
escape sequences and bidi overrides that come from a log, a draft or a transcript."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

import orjson
import pytest

from plantrail.cli.main import all_commands
from plantrail.cli.terminal import printable, screen
from tests.conftest import CliResult
from tests.helpers.otlp import Collector

#: What a hostile transcript or draft may hold: OSC (window title) ended by BEL and by ST, CSI (clear the
#: screen, colours), a bare ESC, C1 controls (CSI, OSC, ST as single code points), a carriage return and a
#: backspace (overwrite a line), DEL, bidi overrides and isolates, a line separator.
HOSTILE = (
    "\x1b]0;owned\x07 \x1b]2;title\x1b\\ \x1b[2J\x1b[H\x1b[31mred\x1b[0m \x1bc \x9b31m \x9d0;c1\x9c \x85"
    " \r\x08\x7f \u202eevil\u202c \u2066iso\u2069 \u200f \u2028"
)
#: The same in a file: a NUL byte too (an argument cannot hold one).
HOSTILE_IN_FILES = HOSTILE + "\x00"


#: Commands this test does not run, and why: each prints no data of a log for people here.
NOT_WALKED = {
    "mcp",  # speaks JSON-RPC on stdio to a program, not to a person
    "acp",  # relays an agent's JSON-RPC stream to an editor, byte for byte; it prints nothing of a log
    "store",  # store init prints a database URL and a schema version (it needs a database)
    "watch",  # a live view that runs until interrupted; it renders through cli.tables.cell and emit
}


def raw_controls(text: str) -> list[str]:
    """Every character of ``text`` a terminal could act on, plantrail's own line breaks aside."""
    return sorted({c for c in text if not c.isprintable() and c != "\n"})


def test_printable_escapes_every_control_and_keeps_plain_text() -> None:
    """printable shows each control as its escape (line breaks too) and leaves printable text alone."""
    assert printable("plain text · ünïcode ✓") == "plain text · ünïcode ✓"
    assert printable("a\x1b[2Jb\nc\u202ed\x9b\x00") == "a\\x1b[2Jb\\nc\\u202ed\\x9b\\x00"
    assert raw_controls(printable(HOSTILE_IN_FILES)) == []


def test_screen_keeps_the_layout_line_breaks() -> None:
    """screen escapes controls inside each line but keeps the line breaks between them."""
    assert screen("one\x1b]0;t\x07\ntwo\r") == "one\\x1b]0;t\\x07\ntwo\\r"


def hostile_draft(goal_suffix: str = "") -> dict[str, object]:
    """A valid draft whose every free-text field is hostile."""
    return {
        "goal": "goal " + HOSTILE_IN_FILES + goal_suffix,
        "acceptanceCriteria": [{"id": "c1", "description": "criterion " + HOSTILE_IN_FILES}],
        "steps": [
            {"id": "a", "title": "title " + HOSTILE_IN_FILES, "dependsOn": [], "completionEvidence": HOSTILE},
            {"id": "b", "title": "b " + HOSTILE_IN_FILES, "dependsOn": ["a"], "completionEvidence": "x"},
            {"id": "c", "title": "c " + HOSTILE_IN_FILES, "dependsOn": [], "completionEvidence": "y"},
        ],
    }


def hostile_transcript(tmp: Path) -> Path:
    """The Codex fixture with a plan item's text replaced by the hostile string (JSON inside a JSON string)."""
    fixture = Path(__file__).parents[1] / "fixtures" / "transcripts" / "codex_rollout.jsonl"
    inner = json.dumps(HOSTILE_IN_FILES)[1:-1]  # as written in update_plan's arguments
    outer = json.dumps(inner)[1:-1]  # as written in the rollout line
    text = fixture.read_text().replace("Add the Prusa MK4 profile", outer)
    path = tmp / "rollout \x1b[31m.jsonl"
    path.write_text(text)
    return path


@pytest.fixture
def hostile_log(tmp_path: Path, run_cli: Callable[..., CliResult]) -> tuple[Path, list[tuple[str, CliResult]]]:
    """A log (at a hostile path) where every kind of event carries hostile text, with the output of every
    recording command that built it."""
    folder = tmp_path / "dir \x1b]0;path\x07"
    folder.mkdir()
    log = folder / "run \u202e.jsonl"
    draft = folder / "draft.json"
    draft.write_bytes(orjson.dumps(hostile_draft()))
    v2 = folder / "v2.json"
    v2.write_bytes(orjson.dumps(hostile_draft()))
    more = folder / "more.json"
    more.write_bytes(
        orjson.dumps({"steps": [{"id": "d", "title": "d " + HOSTILE_IN_FILES, "completionEvidence": HOSTILE}]})
    )
    calls = [
        ("create", [log, "--plan", draft, "--run", "run-1"]),
        ("extend", [log, more]),
        ("start", [log, "a"]),
        ("complete", [log, "a", "--evidence", "evidence " + HOSTILE]),
        ("start", [log, "b"]),
        ("fail", [log, "b", "--error", "error " + HOSTILE]),
        ("start", [log, "b"]),
        ("block", [log, "b", "--reason", "reason " + HOSTILE]),
        ("criterion", [log, "c1", "--failed", "--evidence", "verdict " + HOSTILE]),
        (
            "replan",
            [
                log,
                "--plan",
                v2,
                "--reason",
                "user_request",
                "--why",
                "why " + HOSTILE,
                "--caused-by",
                "7",
                "--observation",
                "observed " + HOSTILE,
            ],
        ),
        ("complete", [log, "b", "--plan-version", "1", "--attempt", "2", "--evidence", "late " + HOSTILE]),
        ("start", [log, "c"]),
        ("heartbeat", [log, "c", "--lease", "60"]),
        ("abandon", [log, "c", "--reason", "gone " + HOSTILE]),
        ("complete", [log, "c", "--attempt", "1", "--evidence", "late after all " + HOSTILE]),
        ("adopt", lambda: [log, str(len(log.read_bytes().splitlines()) - 1)]),  # the late completion just written
        ("start", [log, "b"]),
        ("effect", [log, "b", "--requested", "k1", "--target", "target " + HOSTILE, "--before", "was " + HOSTILE]),
        ("effect", [log, "b", "--committed", "k1", "--result", "result " + HOSTILE]),
        ("effect", [log, "b", "--requested", "k2", "--target", "in doubt " + HOSTILE]),
        ("request-approval", [log, "r1", "--steps", "a", "--question", "may we " + HOSTILE, "--tool", HOSTILE]),
        ("approve", [log, "r1", "--by", "by " + HOSTILE, "--why", "why " + HOSTILE]),
        ("request-approval", [log, "r2", "--steps", "a", "--question", "again " + HOSTILE]),
        ("deny", [log, "r2", "--by", "by " + HOSTILE, "--why", "why " + HOSTILE]),
        ("observe", [log, "repo", "v " + HOSTILE, "--dirty", "dirty " + HOSTILE]),
        ("finish", [log, "--outcome", "paused", "--reason", "paused " + HOSTILE]),
    ]
    outputs = []
    for name, given in calls:
        args = given() if callable(given) else given
        result = run_cli(name, *args)
        assert result.code == 0, (name, result.err)
        outputs.append((name, result))
    return log, outputs


def _hostile_hook_errors(tmp_path: Path) -> Path:
    """A .plantrail folder whose hook error file holds a line about a payload full of hostile text."""
    from plantrail.ledger.capture.hook import claude_hook

    folder = tmp_path / "hooks \x1b[2J"
    claude_hook(f'{{"session_id": "s", "hook_event_name": "{HOSTILE}"}}'.encode(), env={"PLANTRAIL_HOME": str(folder)})
    return folder


def test_no_human_output_carries_a_raw_control_character_from_data(
    hostile_log: tuple[Path, list[tuple[str, CliResult]]], tmp_path: Path, run_cli: Callable[..., CliResult]
) -> None:
    """Every command, run for people on a log, a path and a transcript full of escape sequences, C1 controls
    and bidi overrides, prints none of them raw on stdout or stderr."""
    log, outputs = hostile_log
    copy = tmp_path / "copy \x1b[2J.jsonl"
    shutil.copyfile(log, copy)
    key = tmp_path / "key"
    key.write_bytes(b"a checkpoint key of 32 bytes....")
    runs: list[tuple[str, list[object]]] = [
        ("status", [log]),
        ("log", [log]),
        ("show", [log, "2"]),
        ("graph", [log, "--format", "mermaid"]),  # pictures escape what a terminal or viewer would obey
        ("graph", [log, "--format", "dot"]),
        ("next", [log]),
        ("versions", [log]),
        ("replay", [log, "--version", "1"]),
        ("replay", [log, "--at-seq", "5"]),
        ("diff", [log, "1", "2"]),
        ("why", [log, "2"]),
        ("orphans", [log]),
        ("resume", [log]),
        ("verify", [log]),
        ("salvage", [log]),
        ("schema", []),
        ("checkpoint", [copy, "--key-file", key]),
        ("repair", [copy]),
        ("import", [hostile_transcript(tmp_path), "-o", tmp_path / "imported \x9b.jsonl"]),
        ("status", [tmp_path / "imported \x9b.jsonl"]),
        ("log", [tmp_path / "imported \x9b.jsonl"]),
        ("copy", [log, tmp_path / "copied \x1b[2J.jsonl"]),
        ("report", [log, "-o", tmp_path / "report \x1b[2J.html"]),
        ("runs", [log.parent]),  # the hostile log's goal and the folder's hostile file names
        ("serve", [log.parent, "--host", "0.0.0.0", "--token-file", tmp_path / "token \x1b[2J"]),  # refused first
        ("status", [tmp_path / "missing \x1b]0;x\x07.jsonl"]),  # an error naming a hostile path
        ("start", [log, "c"]),  # a refusal naming hostile state
        ("hook", ["errors", "--dir", _hostile_hook_errors(tmp_path)]),
        ("install", ["claude", "--settings", tmp_path / "settings \x1b[2J.json"]),
        ("uninstall", ["claude", "--settings", tmp_path / "settings \x1b[2J.json"]),
        ("brief", [log]),
        ("check", [log.parent / "draft.json", "--strict"]),
        ("new", [tmp_path / "draft \x1b[2J.toml"]),  # the path it wrote, named back
        ("keygen", [tmp_path / "signer \x1b[2J"]),  # the key files it wrote, named back
        ("fork", [log, "--at-seq", "5", "-o", tmp_path / "fork \x1b[2J.jsonl", "--reason", "why " + HOSTILE]),
        ("status", [tmp_path / "fork \x1b[2J.jsonl"]),
        ("verify", [tmp_path / "fork \x1b[2J.jsonl", "--parent", log]),
        ("export", ["pack", log, "-o", tmp_path / "pack \x1b[2J.zip"]),  # the pack it wrote, named back
        ("verify", ["--pack", tmp_path / "pack \x1b[2J.zip"]),  # the pack and its runs, named back
    ]
    for name, args in runs:
        outputs.append((name, run_cli(name, *args)))
    assert outputs[-1][1].code == 0 and (tmp_path / "pack \x1b[2J.zip").exists()  # the pack written and verified
    collector = Collector()  # export names the run it sent
    try:
        outputs.append(("export", run_cli("export", "otel", log, "--endpoint", collector.endpoint)))
        assert collector.spans()
    finally:
        collector.close()
    for name, result in outputs:
        assert "Traceback" not in result.err and "error[INTERNAL]" not in result.err, (name, result.err)
        assert raw_controls(result.out) == [], (name, result.out)
        assert raw_controls(result.err) == [], (name, result.err)
    assert {name for name, _ in outputs} | NOT_WALKED == set(all_commands()), "every command is walked"


def test_hostile_text_is_still_shown_escaped(
    hostile_log: tuple[Path, list[tuple[str, CliResult]]], run_cli: Callable[..., CliResult]
) -> None:
    """The data is not dropped: status shows the goal with its escapes spelled out."""
    log, _ = hostile_log
    out = run_cli("status", log).out
    assert "goal: goal \\x1b]0;owned\\x07" in out
    assert "\\u202eevil\\u202c" in out
