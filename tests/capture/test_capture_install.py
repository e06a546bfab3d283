"""`plantrail install claude` / `uninstall claude` on settings files, and the Claude Code plugin's files."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from plantrail.ledger.capture.install import (
    CLAUDE_HOOKS,
    HANDLER,
    PLUGIN_HOOKS,
    PLUGIN_LAUNCHER,
    install_claude,
    settings_path,
    uninstall_claude,
)
from plantrail.ledger.vocabulary.errors import PlantrailError
from tests.conftest import CliResult

PLUGIN = Path(__file__).resolve().parents[2] / "integrations" / "claude-code"
THEIRS = {
    "model": "opus",
    "permissions": {"allow": ["Bash(ls:*)"]},
    "hooks": {
        "PostToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "echo checked"}]}],
        "Stop": [{"hooks": [{"type": "command", "command": "notify-send done"}]}],
    },
}


def _settings(tmp_path: Path, content: object = THEIRS) -> Path:
    path = tmp_path / ".claude" / "settings.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(content if isinstance(content, str) else json.dumps(content))
    return path


def test_install_merges_the_hooks_and_keeps_everything_else(tmp_path: Path) -> None:
    """install adds a plantrail handler to each event and keeps every key, group and handler already there."""
    path = _settings(tmp_path)

    report = install_claude(path)

    merged = json.loads(path.read_text())
    assert set(report.changed) == set(CLAUDE_HOOKS)
    assert merged["model"] == "opus" and merged["permissions"] == THEIRS["permissions"]
    assert merged["hooks"]["PostToolUse"][0] == THEIRS["hooks"]["PostToolUse"][0]
    assert merged["hooks"]["Stop"][0] == THEIRS["hooks"]["Stop"][0]
    for event in CLAUDE_HOOKS:
        assert any(HANDLER in group["hooks"] for group in merged["hooks"][event])
    assert json.loads(Path(report.backup or "").read_text()) == THEIRS


def test_install_twice_adds_nothing_the_second_time(tmp_path: Path) -> None:
    """A second install finds every handler in place and leaves the file as it was."""
    path = _settings(tmp_path)
    install_claude(path)
    once = path.read_bytes()

    again = install_claude(path)

    assert again.changed == () and path.read_bytes() == once


def test_uninstall_removes_exactly_what_install_added(tmp_path: Path) -> None:
    """install then uninstall gives back the settings as they were."""
    path = _settings(tmp_path)
    install_claude(path)

    report = uninstall_claude(path)

    assert set(report.changed) == set(CLAUDE_HOOKS)
    assert json.loads(path.read_text()) == THEIRS


def test_uninstall_keeps_a_handler_the_user_put_in_our_group(tmp_path: Path) -> None:
    """A handler the user added beside ours stays, in its group, when ours is removed."""
    path = _settings(tmp_path, {})
    install_claude(path)
    settings = json.loads(path.read_text())
    mine = {"type": "command", "command": "echo mine"}
    settings["hooks"]["SessionEnd"][0]["hooks"].append(mine)
    path.write_text(json.dumps(settings))

    uninstall_claude(path)

    assert json.loads(path.read_text()) == {"hooks": {"SessionEnd": [{"hooks": [mine]}]}}


def test_install_creates_a_missing_settings_file(tmp_path: Path) -> None:
    """With no settings file yet, install writes one holding only the hooks (and no backup)."""
    path = tmp_path / ".claude" / "settings.json"

    report = install_claude(path)

    assert report.backup is None and json.loads(path.read_text()) == {"hooks": CLAUDE_HOOKS}


@pytest.mark.parametrize("content", ["{not json", "[1, 2]", '{"hooks": []}', '{"hooks": {"Stop": {}}}'])
def test_a_settings_file_it_cannot_parse_is_refused_and_left_alone(tmp_path: Path, content: str) -> None:
    """Malformed JSON, a non-object, or hooks of the wrong shape: SETTINGS_INVALID, the file unchanged."""
    path = _settings(tmp_path, content)

    with pytest.raises(PlantrailError) as caught:
        install_claude(path)

    assert caught.value.code == "SETTINGS_INVALID"
    assert path.read_text() == content and not Path(f"{path}.plantrail-backup").exists()


def test_install_cli_refuses_an_unparseable_file_with_its_code(
    tmp_path: Path, run_cli: Callable[..., CliResult]
) -> None:
    """plantrail install claude prints error[SETTINGS_INVALID] and exits 1 for a file it cannot parse."""
    path = _settings(tmp_path, "{oops")

    result = run_cli("install", "claude", "--settings", path)

    assert result.code == 1 and result.err.startswith("error[SETTINGS_INVALID]")


def test_install_and_uninstall_cli_report_the_events(tmp_path: Path, run_cli: Callable[..., CliResult]) -> None:
    """install --json names the events it added to; uninstall --json the events it removed from."""
    path = _settings(tmp_path)

    added = run_cli("install", "claude", "--settings", path, "--json").json()
    removed = run_cli("uninstall", "claude", "--settings", path, "--json").json()

    assert set(added["changed"]) == set(removed["changed"]) == set(CLAUDE_HOOKS)


def test_the_scopes_name_the_project_and_the_user_settings(tmp_path: Path) -> None:
    """--project is .claude/settings.json in the working directory, --user the one in the home folder."""
    assert settings_path("project", cwd=tmp_path) == tmp_path / ".claude" / "settings.json"
    assert settings_path("user", home=tmp_path) == tmp_path / ".claude" / "settings.json"


def test_the_plugin_runs_the_hooks_install_merges() -> None:
    """The plugin's hooks/hooks.json holds exactly the hooks install merges into a settings file, run by the
    plugin's launcher."""
    assert json.loads((PLUGIN / "hooks" / "hooks.json").read_text())["hooks"] == PLUGIN_HOOKS
    assert {e: [{**g, "hooks": [{**h, "command": "plantrail"} for h in g["hooks"]]} for g in groups]
            for e, groups in PLUGIN_HOOKS.items()} == CLAUDE_HOOKS  # fmt: skip


def test_the_plugin_has_its_manifest_mcp_server_and_commands() -> None:
    """plugin.json names the plugin, .mcp.json starts `plantrail mcp` through the launcher, and the slash commands
    have descriptions."""
    manifest = json.loads((PLUGIN / ".claude-plugin" / "plugin.json").read_text())
    servers = json.loads((PLUGIN / ".mcp.json").read_text())["mcpServers"]
    commands = sorted((PLUGIN / "commands").glob("*.md"))

    assert manifest["name"] == "plantrail"
    assert servers["plantrail"] == {"command": PLUGIN_LAUNCHER, "args": ["mcp"]}
    assert [c.stem for c in commands] == ["plantrail-resume", "plantrail-status", "plantrail-why"]
    assert all(c.read_text().startswith("---\ndescription: ") for c in commands)
