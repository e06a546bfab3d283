"""The golden pins' own machinery: the entropy they fix is fixed, a mismatch fails with a diff, and the MCP rule
lets an acknowledgement gain only the keys it names."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson
import pytest

from tests.golden import golden
from tests.golden.golden import FIXED_NONCE, Cli, StoppedClock, assert_golden, block
from tests.golden.test_write_acks import MCP_ACK_MAY_GAIN, _without_gained


def _header_and_plan(log: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    first, second = log.read_bytes().splitlines()[:2]
    return orjson.loads(first), orjson.loads(second)


def test_a_new_log_takes_the_stopped_clock_and_the_fixed_nonce(stopped_clock: StoppedClock, tmp_path: Path) -> None:
    """A log created under the pins carries the stopped clock's instant as every ts and the fixed nonce, and a
    second command reads the clock where the test moved it: the entropy of a log is fixed, or the pins say so
    here first."""
    (tmp_path / "draft.json").write_bytes(
        orjson.dumps(
            {
                "goal": "g",
                "acceptance_criteria": [{"id": "c", "description": "d"}],
                "steps": [{"id": "s", "title": "t", "completion_evidence": "e"}],
            }
        )
    )
    start = datetime(2026, 3, 4, 5, 6, 7, 890123, tzinfo=UTC)
    cli = Cli(stopped_clock, start)
    assert cli("create", "run.jsonl", "--plan", "draft.json").code == 0
    header, plan = _header_and_plan(tmp_path / "run.jsonl")
    assert (header["ts"], plan["ts"]) == ("2026-03-04T05:06:07.890123Z", "2026-03-04T05:06:07.890123Z")
    assert header["data"]["nonce"] == FIXED_NONCE
    cli.wait(90)
    assert cli("start", "run.jsonl", "s").code == 0
    started = orjson.loads((tmp_path / "run.jsonl").read_bytes().splitlines()[2])
    assert started["ts"] == "2026-03-04T05:07:37.890123Z"


def test_a_mismatch_fails_with_a_unified_diff(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """A pin whose output differs from its file fails and shows the unified diff from the file to the output;
    a missing file fails too (only PLANTRAIL_UPDATE_GOLDEN=1 writes files)."""
    monkeypatch.setattr(golden, "EXPECTED", tmp_path)
    monkeypatch.setattr(golden, "UPDATING", False)
    (tmp_path / "pin.txt").write_bytes(b"one\ntwo\n")
    assert_golden("pin.txt", "one\ntwo\n")
    with pytest.raises(pytest.fail.Exception) as failed:
        assert_golden("pin.txt", "one\nthree\n")
    assert "--- expected/pin.txt\n+++ actual\n" in str(failed.value)
    assert "-two\n+three\n" in str(failed.value)
    with pytest.raises(pytest.fail.Exception, match="no golden file"):
        assert_golden("missing.txt", "x")


def test_a_transcript_block_tells_every_output_apart() -> None:
    """An output's block counts its lines and marks a missing last newline: outputs that differ only there
    read differently."""
    shown = {block("stdout", text) for text in ("", "\n", "a", "a\n", "a\n\n", "a\nb", "a\nb\n")}
    assert len(shown) == 7


def test_the_mcp_rule_drops_only_a_gained_listed_key() -> None:
    """A writing tool's result may gain a key of MCP_ACK_MAY_GAIN; any other new key, a listed key the golden
    entry already has with another value, or a changed value stays and so fails the comparison."""
    was = {"tool": "step_effect", "result": {"seq": 3, "warnings": []}}
    gained = {"tool": "step_effect", "result": {"seq": 3, "warnings": [], "effect": {"key": "k"}}}
    assert _without_gained([gained], [was]) == [was]
    other = {"tool": "step_effect", "result": {"seq": 3, "warnings": [], "extra": 1}}
    assert _without_gained([other], [was]) == [other]
    changed = {"tool": "step_effect", "result": {"seq": 3, "warnings": ["w"], "effect": None}}
    assert _without_gained([changed], [was]) == [{"tool": "step_effect", "result": {"seq": 3, "warnings": ["w"]}}]
    read = {"tool": "plan_status", "result": {"seq": 3, "effect": 1}}
    assert _without_gained([read], [{"tool": "plan_status", "result": {"seq": 3}}]) == [read]
    assert frozenset({"scope_violation", "effect", "warnings", "run", "steps"}) == MCP_ACK_MAY_GAIN
