"""integrations/opencode/plantrail.ts run under Node with a fake Bun shell: what it forwards to the hook."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest

REPO = Path(__file__).resolve().parents[2]
PLUGIN = REPO / "integrations" / "opencode" / "plantrail.ts"
DRIVER = Path(__file__).resolve().parent / "opencode_driver.mjs"
EVENTS = Path(__file__).resolve().parents[1] / "fixtures" / "hooks" / "opencode_events.jsonl"
NODE = shutil.which("node")


@pytest.fixture(autouse=True)
def _node() -> None:
    """Skip (or, on CI, fail) when Node is not installed: on CI these tests must run."""
    if NODE is not None:
        return
    reason = "node is not installed (.ci/run installs Debian's nodejs)"
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"the OpenCode plugin's tests must run on CI: {reason}")
    pytest.skip(reason)


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A project folder, with $PLANTRAIL_HOME unset so runs go under its .plantrail/."""
    monkeypatch.delenv("PLANTRAIL_HOME", raising=False)
    monkeypatch.delenv("PLANTRAIL_STORE", raising=False)
    (tmp_path / "project").mkdir()
    return tmp_path / "project"


def _drive(project: Path, events: list[dict[str, Any]], *mode: str) -> dict[str, Any]:
    """Run the plugin file (copied as an ES module) on ``events``; the driver's report."""
    plugin = project.parent / "plantrail.mjs"
    plugin.write_bytes(PLUGIN.read_bytes())
    lines = project.parent / "events.jsonl"
    lines.write_bytes(b"".join(orjson.dumps(event) + b"\n" for event in events))
    argv = json.dumps([sys.executable, "-m", "plantrail.cli.main"])
    command = [str(NODE), str(DRIVER), str(plugin), str(project), str(lines), *mode]
    done = subprocess.run(
        command, capture_output=True, check=True, env={"PATH": "/usr/bin:/bin", "PLANTRAIL_ARGV": argv}
    )
    report: dict[str, Any] = json.loads(done.stdout)
    return report


def _fixture_events() -> list[dict[str, Any]]:
    return [orjson.loads(line) for line in EVENTS.read_bytes().splitlines() if line.strip()]


def test_the_plugin_forwards_each_todo_update_as_one_line_to_the_hook(project: Path) -> None:
    """Each todo.updated event goes to `plantrail hook opencode` as one JSON line with the project's directory,
    and the hook records the plan from it; other events are not forwarded."""
    todo = _fixture_events()
    events = [todo[0], {"type": "session.idle", "properties": {"sessionID": "ses_hooks0001"}}, todo[1]]

    report = _drive(project, events)

    assert report["resolved"] is True
    assert [run["text"] for run in report["runs"]] == ["plantrail hook opencode < ${0}"] * 2
    sent = [orjson.loads(run["stdin"]) for run in report["runs"]]
    assert [run["stdin"].count("\n") for run in report["runs"]] == [1, 1]
    assert sent == [{**todo[0], "directory": str(project)}, {**todo[1], "directory": str(project)}]
    assert [(run["exit"], run["stdout"]) for run in report["runs"]] == [(0, "")] * 2
    log = project / ".plantrail" / "runs" / "ses_hooks0001.jsonl"
    types = [orjson.loads(line)["type"] for line in log.read_bytes().splitlines()]
    assert types[:2] == ["log.opened", "plan.created"] and "step.completed" in types


def test_a_shell_that_throws_never_breaks_the_session(project: Path) -> None:
    """When running plantrail throws (not on PATH), the plugin's handler still resolves."""
    report = _drive(project, _fixture_events()[:1], "throw")

    assert report == {"runs": [], "resolved": True}
