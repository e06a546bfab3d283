"""`plantrail install claude` in a settings folder it does not own: nothing written through a planted link,
the file's mode and owner kept, a linked settings file edited through its link, malformed settings refused
naming the place, nothing waited on."""

from __future__ import annotations

import copy
import json
import os
import stat
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from plantrail.ledger.capture.install import CLAUDE_HOOKS, install_claude, uninstall_claude
from plantrail.ledger.vocabulary.errors import PlantrailError
from tests.conftest import CliResult

#: Seconds an install may take before it counts as hung.
BOUND = 20
THEIRS: dict[str, Any] = {
    "env": {"ANTHROPIC_API_KEY": "sk-secret"},
    "hooks": {
        "PostToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "echo checked"}]}],
        "Stop": [{"hooks": [{"type": "command", "command": "notify-send done"}]}],
    },
}


@pytest.fixture
def umask() -> Iterator[None]:
    """The usual umask (022), under which a file made the ordinary way is 0644."""
    previous = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(previous)


def _settings(folder: Path, content: object = THEIRS, mode: int = 0o644) -> Path:
    path = folder / ".claude" / "settings.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(content if isinstance(content, str) else json.dumps(content))
    path.chmod(mode)
    return path


def test_a_link_planted_as_the_backup_is_not_written_through(tmp_path: Path, run_cli: Callable[..., CliResult]) -> None:
    """A link planted at settings.json.plantrail-backup: install refuses with NOT_A_FILE (exit 4), and neither
    the link's target nor the settings file changes."""
    path = _settings(tmp_path)
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    Path(f"{path}.plantrail-backup").symlink_to(victim)

    result = run_cli("install", "claude", "--settings", path)

    assert result.code == 4 and result.err.startswith("error[NOT_A_FILE]"), result.err
    assert victim.read_text() == "precious\n" and json.loads(path.read_text()) == THEIRS
    assert Path(f"{path}.plantrail-backup").is_symlink()


@pytest.mark.usefixtures("umask")
def test_install_keeps_the_settings_files_mode_for_it_and_its_backup(tmp_path: Path) -> None:
    """A 0600 settings file (it holds keys) stays 0600 after install and uninstall, and its backup is 0600."""
    path = _settings(tmp_path, mode=0o600)

    report = install_claude(path)
    after_install = stat.S_IMODE(path.stat().st_mode)
    uninstall_claude(path)

    assert report.backup is not None
    assert (after_install, stat.S_IMODE(path.stat().st_mode)) == (0o600, 0o600)
    assert stat.S_IMODE(Path(report.backup).stat().st_mode) == 0o600


@pytest.mark.usefixtures("umask")
def test_a_new_settings_file_gets_the_usual_mode(tmp_path: Path) -> None:
    """With no settings file yet, install makes its folder and a file as any new file is made (0644 here)."""
    path = tmp_path / ".claude" / "settings.json"

    install_claude(path)

    assert stat.S_IMODE(path.stat().st_mode) == 0o644 and json.loads(path.read_text()) == {"hooks": CLAUDE_HOOKS}


def test_a_linked_settings_file_is_edited_through_its_link(tmp_path: Path) -> None:
    """A settings file that is a link into a dotfiles folder stays that link: install replaces the link's
    target (keeping its mode) and keeps the backup beside the target; uninstall puts the target back."""
    dotfiles = tmp_path / "dotfiles"
    dotfiles.mkdir()
    target = dotfiles / "claude-settings.json"
    target.write_text(json.dumps(THEIRS))
    target.chmod(0o600)
    path = tmp_path / ".claude" / "settings.json"
    path.parent.mkdir()
    path.symlink_to(target)

    report = install_claude(path)

    assert path.is_symlink() and os.readlink(path) == str(target)
    assert set(json.loads(target.read_text())["hooks"]) == set(CLAUDE_HOOKS)
    assert stat.S_IMODE(target.stat().st_mode) == 0o600
    assert report.backup == str(dotfiles / "claude-settings.json.plantrail-backup")
    assert json.loads(Path(report.backup).read_text()) == THEIRS
    assert not Path(f"{path}.plantrail-backup").exists()
    uninstall_claude(path)
    assert path.is_symlink() and json.loads(target.read_text()) == THEIRS


def test_a_fifo_as_the_settings_file_is_refused_without_waiting(tmp_path: Path) -> None:
    """A FIFO in the settings file's place: install finishes with NOT_A_FILE (exit 4) and leaves it."""
    path = tmp_path / ".claude" / "settings.json"
    path.parent.mkdir()
    os.mkfifo(path)
    command = [sys.executable, "-m", "plantrail", "install", "claude", "--settings", str(path)]

    try:
        done = subprocess.run(command, capture_output=True, timeout=BOUND, check=False)
    except subprocess.TimeoutExpired:
        pytest.fail(f"install did not finish within {BOUND} s: it waited on a FIFO")

    assert done.returncode == 4 and done.stderr.startswith(b"error[NOT_A_FILE]"), done.stderr
    assert stat.S_ISFIFO(path.lstat().st_mode)


@pytest.mark.parametrize("kind", ["file", "dangling link"])
def test_a_file_or_dangling_link_planted_as_the_settings_folder_is_refused(tmp_path: Path, kind: str) -> None:
    """A file, or a link to nowhere, where the settings folder goes: install refuses with NOT_A_FILE and makes
    nothing (no folder through the link)."""
    folder = tmp_path / ".claude"
    if kind == "file":
        folder.write_text("planted\n")
    else:
        folder.symlink_to(tmp_path / "nowhere")

    with pytest.raises(PlantrailError) as caught:
        install_claude(folder / "settings.json")

    assert caught.value.code == "NOT_A_FILE"
    assert not (tmp_path / "nowhere").exists()


@pytest.mark.parametrize("bad", [5, None])
def test_a_matcher_groups_hooks_of_the_wrong_type_are_refused_naming_the_place(tmp_path: Path, bad: object) -> None:
    """A matcher group whose hooks is 5 or null: SETTINGS_INVALID naming hooks.Stop[0].hooks, file unchanged."""
    content = json.dumps({"hooks": {"Stop": [{"hooks": bad}]}})
    path = _settings(tmp_path, content)

    for edit in (install_claude, uninstall_claude):
        with pytest.raises(PlantrailError) as caught:
            edit(path)
        assert caught.value.code == "SETTINGS_INVALID"
        assert caught.value.fields["place"] == "hooks.Stop[0].hooks" and "hooks.Stop[0].hooks" in caught.value.message
    assert path.read_text() == content


def _places(value: Any, where: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    """The path of every value inside ``value`` (its keys and indexes), the value itself first."""
    yield where
    if isinstance(value, dict):
        for key, inner in value.items():
            yield from _places(inner, (*where, key))
    elif isinstance(value, list):
        for index, inner in enumerate(value):
            yield from _places(inner, (*where, index))


def _with(value: Any, where: tuple[Any, ...], replacement: object) -> Any:
    changed = copy.deepcopy(value)
    if not where:
        return replacement
    inner = changed
    for step in where[:-1]:
        inner = inner[step]
    inner[where[-1]] = replacement
    return changed


def test_every_part_of_the_hooks_of_the_wrong_type_is_refused_or_taken(tmp_path: Path) -> None:
    """Any value inside a settings file's hooks (with the user's and plantrail's own groups) replaced by a
    number, null, a string, a list or an object: install and uninstall either succeed or refuse with
    SETTINGS_INVALID leaving the file as it was, never another error."""
    installed = copy.deepcopy(THEIRS)
    installed["hooks"] = {**THEIRS["hooks"], **{e: g for e, g in CLAUDE_HOOKS.items() if e not in THEIRS["hooks"]}}
    installed["hooks"]["Stop"] = [*THEIRS["hooks"]["Stop"], *CLAUDE_HOOKS["Stop"]]
    tried = 0
    for where in _places(installed["hooks"], ("hooks",)):
        for replacement in (5, None, "x", [], {}):
            content = json.dumps(_with(installed, where, replacement))
            path = _settings(tmp_path / f"case{tried}", content)
            for edit in (install_claude, uninstall_claude):
                try:
                    edit(path)
                except PlantrailError as exc:
                    assert exc.code == "SETTINGS_INVALID", (where, replacement, exc)
                    assert path.read_text() == content
                path.write_text(content)
            tried += 1
    assert tried > 100
