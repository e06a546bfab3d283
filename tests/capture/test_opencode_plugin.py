"""The OpenCode plugin run under Node with a fake Bun shell: what it forwards to the hook, as the repository's copy
(a bare `plantrail` on PATH) and as `plantrail install opencode` writes it (the absolute command baked in)."""

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
CONSOLE_SCRIPT = Path(sys.executable).parent / "plantrail"


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


def _drive(
    project: Path, events: list[dict[str, Any]], *mode: str, plugin: Path = PLUGIN, path: str = "/usr/bin:/bin"
) -> dict[str, Any]:
    """Run ``plugin`` (copied as an ES module) on ``events`` with ``path`` as PATH; the driver's report. The
    repository's copy runs this checkout's plantrail for its bare `plantrail`; an installed one runs what it
    names."""
    copy = project.parent / "plantrail.mjs"
    copy.write_bytes(plugin.read_bytes())
    lines = project.parent / "events.jsonl"
    lines.write_bytes(b"".join(orjson.dumps(event) + b"\n" for event in events))
    env = {"PATH": path, "HOME": str(project.parent / "home")}
    if plugin == PLUGIN:
        env["PLANTRAIL_ARGV"] = json.dumps([sys.executable, "-m", "plantrail.cli.main"])
    command = [str(NODE), str(DRIVER), str(copy), str(project), str(lines), *mode]
    done = subprocess.run(command, capture_output=True, check=True, env=env)
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
    assert [run["text"] for run in report["runs"]] == ["${0} hook opencode < ${1}"] * 2
    assert [run["argv"] for run in report["runs"]] == [["plantrail", "hook", "opencode"]] * 2
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


def test_the_repository_copy_is_the_template_for_a_plantrail_on_path() -> None:
    """integrations/opencode/plantrail.ts is byte for byte what install writes for a bare `plantrail`."""
    from plantrail.ledger.capture.opencode_plugin import ON_PATH, is_our_plugin, plugin_source

    assert PLUGIN.read_bytes() == plugin_source(ON_PATH)
    assert is_our_plugin(PLUGIN.read_bytes())


def _installed(project: Path, launcher: Path = CONSOLE_SCRIPT, *how: str) -> Path:
    """`plantrail install opencode` run in ``project`` by ``launcher`` (with ``how`` before the command's own
    arguments); the plugin file it wrote."""
    done = subprocess.run(
        [str(launcher), *how, "install", "opencode", "--json"],
        cwd=project,
        env={"PATH": "/usr/bin:/bin", "HOME": str(project.parent / "home")},
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["command"] == [str(launcher), *how]
    return project / ".opencode" / "plugins" / "plantrail.ts"


@pytest.mark.parametrize("path", ["/usr/bin:/bin", ""])
def test_an_installed_plugin_records_the_plan_with_a_bare_or_empty_path(project: Path, path: str) -> None:
    """The plugin install writes runs the absolute plantrail that ran the install, so with PATH=/usr/bin:/bin
    or an empty PATH each todo update still reaches the hook, which records the plan."""
    plugin = _installed(project)

    report = _drive(project, _fixture_events()[:2], plugin=plugin, path=path)

    assert report["resolved"] is True
    assert [run["argv"] for run in report["runs"]] == [[str(CONSOLE_SCRIPT), "hook", "opencode"]] * 2
    assert [(run["exit"], run["stdout"]) for run in report["runs"]] == [(0, "")] * 2
    log = project / ".plantrail" / "runs" / "ses_hooks0001.jsonl"
    types = [orjson.loads(line)["type"] for line in log.read_bytes().splitlines()]
    assert types[:2] == ["log.opened", "plan.created"] and "step.completed" in types


def test_the_repository_copy_finds_no_plantrail_with_an_empty_path(project: Path) -> None:
    """Run as it is (no plantrail on PATH), the bare `plantrail` of the repository's copy records nothing and
    the session goes on: what the installed plugin's absolute command is for."""
    copy = project.parent / "bare.ts"
    copy.write_bytes(PLUGIN.read_bytes())

    report = _drive(project, _fixture_events()[:1], plugin=copy, path="")

    assert report["resolved"] is True and [run["exit"] for run in report["runs"]] == [None]
    assert not (project / ".plantrail" / "runs" / "ses_hooks0001.jsonl").exists()


def test_a_command_with_spaces_and_quotes_reaches_the_hook_as_one_argument(project: Path) -> None:
    """A plantrail installed under a path with a space and a quote is baked in as one list element, which
    Bun's shell passes as one argument: the hook runs and records the plan."""
    folder = project.parent / "my tools" / "it's here"
    folder.mkdir(parents=True)
    (folder / "plantrail").symlink_to(CONSOLE_SCRIPT)
    plugin = _installed(project, folder / "plantrail")
    assert f"const PLANTRAIL = {json.dumps([str(folder / 'plantrail')])}\n" in plugin.read_text()

    report = _drive(project, _fixture_events()[:1], plugin=plugin, path="")

    ran = [(run["argv"], run["exit"]) for run in report["runs"]]
    assert ran == [([str(folder / "plantrail"), "hook", "opencode"], 0)]
    assert (project / ".plantrail" / "runs" / "ses_hooks0001.jsonl").exists()


def test_a_plantrail_run_as_a_python_module_is_baked_in_as_three_arguments(project: Path) -> None:
    """Installed by `python -m plantrail`, the plugin runs that Python with `-m plantrail` (each its own
    argument), and records the plan with an empty PATH."""
    plugin = _installed(project, Path(sys.executable), "-m", "plantrail")

    report = _drive(project, _fixture_events()[:1], plugin=plugin, path="")

    ran = [(run["argv"], run["exit"]) for run in report["runs"]]
    assert ran == [([sys.executable, "-m", "plantrail", "hook", "opencode"], 0)]
    assert (project / ".plantrail" / "runs" / "ses_hooks0001.jsonl").exists()
