"""`plantrail install AGENT` / `uninstall AGENT` as a user runs them: absolute paths that work with a bare PATH,
idempotent, a backup of what changed, the user's comments kept, an invalid file refused with its code, and
the Claude Code plugin's launcher."""

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

PLANTRAIL = Path(sys.executable).parent / "plantrail"
LAUNCHER = Path(__file__).resolve().parents[2] / "integrations" / "claude-code" / "bin" / "plantrail-launch"
THEIRS = {"model": "opus", "hooks": {"Stop": [{"hooks": [{"type": "command", "command": "notify-send done"}]}]}}
CODEX = """# my Codex settings
model = "gpt-5"  # the one I like

[mcp_servers.docs]
command = "docs-server"   # keep me
args = ["--stdio"]
"""


def _env(home: Path, **more: str) -> dict[str, str]:
    kept = {k: v for k, v in os.environ.items() if k not in ("PLANTRAIL_HOME", "PLANTRAIL_STORE", "XDG_CONFIG_HOME")}
    return {**kept, "HOME": str(home), **more}


def _plantrail(cwd: Path, *args: str, home: Path | None = None) -> subprocess.CompletedProcess[str]:
    """The installed console script, as a user runs it."""
    return subprocess.run(
        [str(PLANTRAIL), *args],
        cwd=cwd,
        env=_env(home or cwd / "home"),
        capture_output=True,
        text=True,
        check=False,
    )


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    project = tmp_path / "repo"
    project.mkdir()
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    return project


def _start(project: Path, session: str = "sess-1") -> bytes:
    return orjson.dumps(
        {"session_id": session, "cwd": str(project), "hook_event_name": "SessionStart", "source": "startup"}
    )


def test_install_claude_writes_absolute_paths_that_run_with_a_bare_path(repo: Path) -> None:
    """The hooks and the plan server run the console script by its absolute path; the installed hook command
    runs with PATH=/usr/bin:/bin and with an empty PATH, and leaves nothing under .plantrail/ in git status."""
    done = _plantrail(repo, "install", "claude", "--project", "--json")
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout)
    assert answer["command"] == [str(PLANTRAIL)] and os.path.isabs(answer["command"][0])

    settings = json.loads((repo / ".claude" / "settings.json").read_text())
    servers = json.loads((repo / ".mcp.json").read_text())["mcpServers"]
    assert servers == {"plantrail": {"command": str(PLANTRAIL), "args": ["mcp"]}}
    handlers = [h for groups in settings["hooks"].values() for g in groups for h in g["hooks"]]
    assert {(h["command"], tuple(h["args"])) for h in handlers} == {(str(PLANTRAIL), ("hook", "claude"))}
    assert set(settings["hooks"]) >= {"SessionStart", "PreCompact", "PostToolUse", "Stop", "SessionEnd"}

    [hook] = settings["hooks"]["SessionStart"][0]["hooks"]
    for path in ("/usr/bin:/bin", ""):
        ran = subprocess.run(
            [hook["command"], *hook["args"]],
            input=_start(repo),
            env={"PATH": path, "HOME": str(repo / "home")},
            cwd=repo,
            capture_output=True,
            check=True,
        )
        context = orjson.loads(ran.stdout)["hookSpecificOutput"]["additionalContext"]
        assert context.startswith('plantrail: this session\'s run is "sess-1".') and ran.stderr == b""
    status = subprocess.run(["git", "status", "--porcelain", "--untracked-files=all"], cwd=repo, capture_output=True)
    assert [line for line in status.stdout.decode().splitlines() if ".plantrail" in line] == []


def test_install_claude_replaces_an_earlier_bare_handler_and_is_idempotent(tmp_path: Path) -> None:
    from plantrail.ledger.capture.install import CLAUDE_HOOKS

    settings = tmp_path / ".claude" / "settings.json"
    settings.parent.mkdir()
    earlier = {**CLAUDE_HOOKS, "Stop": [*THEIRS["hooks"]["Stop"], *CLAUDE_HOOKS["Stop"]]}
    settings.write_text(json.dumps({**THEIRS, "hooks": earlier}))

    first = json.loads(_plantrail(tmp_path, "install", "claude", "--json").stdout)
    again = json.loads(_plantrail(tmp_path, "install", "claude", "--json").stdout)

    merged = json.loads(settings.read_text())
    assert set(first["changed"]) == set(CLAUDE_HOOKS) and again["changed"] == []
    assert [f["changed"] for f in again["files"]] == [[], []]
    assert [len(g["hooks"]) for g in merged["hooks"]["SessionStart"]] == [1]
    assert merged["hooks"]["Stop"][0] == THEIRS["hooks"]["Stop"][0]
    assert json.loads(Path(first["backup"]).read_text())["hooks"]["Stop"][-1]["hooks"][0]["command"] == "plantrail"

    removed = json.loads(_plantrail(tmp_path, "uninstall", "claude", "--json").stdout)
    assert set(removed["changed"]) == set(CLAUDE_HOOKS)
    assert json.loads(settings.read_text()) == THEIRS
    assert json.loads((tmp_path / ".mcp.json").read_text()) == {}


@pytest.mark.parametrize(
    ("agent", "file", "key"),
    [
        ("gemini", ".gemini/settings.json", "mcpServers"),
        ("cursor", ".cursor/mcp.json", "mcpServers"),
        ("opencode", "opencode.json", "mcp"),
    ],
)
def test_each_json_agent_installs_once_keeps_a_backup_and_uninstalls_back(
    tmp_path: Path, agent: str, file: str, key: str
) -> None:
    path = tmp_path / file
    path.parent.mkdir(parents=True, exist_ok=True)
    theirs = {**THEIRS, key: {"docs": {"command": "docs-server", "args": ["--stdio"]}}}
    path.write_text(json.dumps(theirs))

    first = _plantrail(tmp_path, "install", agent, "--json")
    again = json.loads(_plantrail(tmp_path, "install", agent, "--json").stdout)

    assert first.returncode == 0, first.stderr
    written = json.loads(first.stdout)["files"][0]
    assert written["file"] == str(path) and json.loads(Path(written["backup"]).read_text()) == theirs
    assert [file["changed"] for file in again["files"]] == [[]] * len(again["files"])
    installed = json.loads(path.read_text())
    entry = installed[key]["plantrail"]
    command = entry["command"] if agent == "opencode" else [entry["command"], *entry["args"]]
    assert command == [str(PLANTRAIL), "mcp"] and installed[key]["docs"] == theirs[key]["docs"]
    if agent == "gemini":
        [hook] = installed["hooks"]["AfterTool"][0]["hooks"]
        assert hook["command"] == f"{PLANTRAIL} hook gemini" and installed["hooks"]["Stop"] == THEIRS["hooks"]["Stop"]
    elif agent == "opencode":
        assert json.loads(first.stdout)["note"].endswith("start it again to record its todo list.")
    else:
        assert json.loads(first.stdout)["note"].endswith("there.")

    _plantrail(tmp_path, "uninstall", agent)
    assert json.loads(path.read_text()) == theirs


def test_install_opencode_writes_its_plugin_running_this_plantrail_and_uninstall_removes_it(tmp_path: Path) -> None:
    """install opencode writes .opencode/plugins/plantrail.ts with this plantrail's absolute command (and no
    backup of it), is idempotent, replaces an earlier plugin of its own, and uninstall removes the file."""
    from plantrail.ledger.capture.opencode_plugin import plugin_source

    plugin = tmp_path / ".opencode" / "plugins" / "plantrail.ts"
    first = json.loads(_plantrail(tmp_path, "install", "opencode", "--json").stdout)
    again = json.loads(_plantrail(tmp_path, "install", "opencode", "--json").stdout)

    assert [(f["file"], f["changed"]) for f in first["files"]] == [
        (str(tmp_path / "opencode.json"), ["mcp.plantrail"]),
        (str(plugin), ["plugin"]),
    ]
    assert plugin.read_bytes() == plugin_source((str(PLANTRAIL),))
    assert [f["changed"] for f in again["files"]] == [[], []]

    plugin.write_bytes(plugin_source(("/old/bin/plantrail",)))  # an earlier install's, of another plantrail
    replaced = json.loads(_plantrail(tmp_path, "install", "opencode", "--json").stdout)
    assert replaced["files"][1] == {"file": str(plugin), "changed": ["plugin"], "backup": None}
    assert plugin.read_bytes() == plugin_source((str(PLANTRAIL),))
    assert sorted(p.name for p in plugin.parent.iterdir()) == ["plantrail.ts"]

    removed = json.loads(_plantrail(tmp_path, "uninstall", "opencode", "--json").stdout)
    assert [f["changed"] for f in removed["files"]] == [["mcp.plantrail"], ["plugin"]]
    assert not plugin.exists() and json.loads((tmp_path / "opencode.json").read_text()) == {}
    nothing = json.loads(_plantrail(tmp_path, "uninstall", "opencode", "--json").stdout)
    assert [f["changed"] for f in nothing["files"]] == [[], []]


def test_install_opencode_user_writes_under_the_home_config_folder(tmp_path: Path) -> None:
    """With --user, the plan server goes into ~/.config/opencode/opencode.json and the plugin into
    ~/.config/opencode/plugins/plantrail.ts; nothing is written in the project."""
    home = tmp_path / "home"
    project = tmp_path / "project"
    project.mkdir()

    done = _plantrail(project, "install", "opencode", "--user", "--json", home=home)

    assert done.returncode == 0, done.stderr
    folder = home / ".config" / "opencode"
    assert [f["file"] for f in json.loads(done.stdout)["files"]] == [
        str(folder / "opencode.json"),
        str(folder / "plugins" / "plantrail.ts"),
    ]
    assert f'const PLANTRAIL = ["{PLANTRAIL}"]' in (folder / "plugins" / "plantrail.ts").read_text()
    assert list(project.iterdir()) == []


@pytest.mark.parametrize("given", ["absolute", "relative"])
def test_install_opencode_user_follows_xdg_config_home(tmp_path: Path, given: str) -> None:
    """OpenCode reads its user configuration from $XDG_CONFIG_HOME/opencode: with it set to an absolute path,
    --user writes both files there; a relative value is ignored (the XDG rules), and ~/.config is used."""
    home, project, config = tmp_path / "home", tmp_path / "project", tmp_path / "config"
    project.mkdir()
    value = str(config) if given == "absolute" else "config"

    done = subprocess.run(
        [str(PLANTRAIL), "install", "opencode", "--user", "--json"],
        cwd=project,
        env=_env(home, XDG_CONFIG_HOME=value),
        capture_output=True,
        text=True,
    )

    assert done.returncode == 0, done.stderr
    folder = (config if given == "absolute" else home / ".config") / "opencode"
    assert [f["file"] for f in json.loads(done.stdout)["files"]] == [
        str(folder / "opencode.json"),
        str(folder / "plugins" / "plantrail.ts"),
    ]
    assert (folder / "plugins" / "plantrail.ts").is_file() and list(project.iterdir()) == []


@pytest.mark.parametrize("theirs", [b"", b"export const Mine = async () => ({})\n", b"// plantrail for me\n"])
def test_install_opencode_never_overwrites_a_plugin_file_of_the_users(tmp_path: Path, theirs: bytes) -> None:
    """A file at .opencode/plugins/plantrail.ts without plantrail's first line is the user's: install refuses
    it with PLUGIN_EXISTS before writing anything (no opencode.json), and uninstall leaves it."""
    plugin = tmp_path / ".opencode" / "plugins" / "plantrail.ts"
    plugin.parent.mkdir(parents=True)
    plugin.write_bytes(theirs)

    done = _plantrail(tmp_path, "install", "opencode")

    assert done.returncode == 1 and done.stderr.startswith(f"error[PLUGIN_EXISTS]: {plugin} "), done.stderr
    assert "Traceback" not in done.stderr and plugin.read_bytes() == theirs
    assert sorted(p.name for p in tmp_path.iterdir()) == [".opencode"]
    assert sorted(p.name for p in plugin.parent.iterdir()) == ["plantrail.ts"]

    removed = _plantrail(tmp_path, "uninstall", "opencode", "--json")
    assert removed.returncode == 0 and plugin.read_bytes() == theirs


def test_install_opencode_refuses_a_fifo_at_the_plugin_path_without_waiting_on_it(tmp_path: Path) -> None:
    """A FIFO planted at .opencode/plugins/plantrail.ts is refused (NOT_A_FILE) without blocking, before
    opencode.json is written."""
    plugin = tmp_path / ".opencode" / "plugins" / "plantrail.ts"
    plugin.parent.mkdir(parents=True)
    os.mkfifo(plugin)

    done = _plantrail(tmp_path, "install", "opencode")

    assert done.returncode == 4 and done.stderr.startswith("error[NOT_A_FILE]: "), done.stderr
    assert not (tmp_path / "opencode.json").exists()


def test_install_codex_keeps_the_users_comments_and_uninstalls_to_the_same_bytes(tmp_path: Path) -> None:
    path = tmp_path / ".codex" / "config.toml"
    path.parent.mkdir()
    path.write_text(CODEX)

    done = _plantrail(tmp_path, "install", "codex")
    again = json.loads(_plantrail(tmp_path, "install", "codex", "--json").stdout)

    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1] == (
        "Codex's plan tool reaches no hook, so only the plan server was installed; the model keeps its plan there."
    )
    text = path.read_text()
    assert text.startswith(CODEX) and "# keep me" in text and "# the one I like" in text
    assert f'[mcp_servers.plantrail]\ncommand = "{PLANTRAIL}"\nargs = ["mcp"]\n' in text
    assert again["files"][0]["changed"] == [] and Path(f"{path}.plantrail-backup").read_text() == CODEX

    _plantrail(tmp_path, "uninstall", "codex")
    assert path.read_text() == CODEX


def test_install_codex_into_a_missing_file_writes_only_the_server(tmp_path: Path) -> None:
    home = tmp_path / "home"
    done = _plantrail(tmp_path, "install", "codex", "--user", home=home)

    assert done.returncode == 0, done.stderr
    assert (home / ".codex" / "config.toml").read_text() == (
        f'[mcp_servers.plantrail]\ncommand = "{PLANTRAIL}"\nargs = ["mcp"]\n'
    )


@pytest.mark.parametrize(
    ("agent", "file", "content"),
    [
        ("codex", ".codex/config.toml", "model = = 1\n"),
        ("codex", ".codex/config.toml", 'mcp_servers = "none"\n'),
        ("gemini", ".gemini/settings.json", "{oops"),
        ("gemini", ".gemini/settings.json", '{"hooks": []}'),
        ("cursor", ".cursor/mcp.json", '{"mcpServers": []}'),
        ("opencode", "opencode.json", "[1, 2]"),
        ("claude", ".mcp.json", '{"mcpServers": 3}'),
    ],
)
def test_an_invalid_config_is_refused_with_its_code_and_left_alone(
    tmp_path: Path, agent: str, file: str, content: str
) -> None:
    path = tmp_path / file
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(content)

    done = _plantrail(tmp_path, "install", agent)

    assert done.returncode == 1 and done.stderr.startswith("error[SETTINGS_INVALID]: "), done.stderr
    assert "Traceback" not in done.stderr and path.read_text() == content
    assert not Path(f"{path}.plantrail-backup").exists()


# --------------------------------------------------------------------------- the plugin's launcher


def _launch(
    project: Path, home: Path, path: str, *args: str, payload: bytes = b""
) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        ["/bin/sh", str(LAUNCHER), *args],
        input=payload,
        env={"PATH": path, "HOME": str(home)},
        cwd=project,
        capture_output=True,
        check=False,
    )


def test_the_launcher_runs_the_plantrail_install_recorded(tmp_path: Path) -> None:
    home = tmp_path / "home"
    recorded = _plantrail(tmp_path, "install", "claude", "--plugin", "--json", home=home)
    assert recorded.returncode == 0, recorded.stderr
    assert (home / ".config" / "plantrail" / "plugin-command").read_text() == f"{PLANTRAIL}\n"

    ran = _launch(tmp_path, home, "/usr/bin:/bin", "hook", "claude", payload=_start(tmp_path))

    context: Any = orjson.loads(ran.stdout)["hookSpecificOutput"]["additionalContext"]
    assert ran.returncode == 0 and "Also tell the user" not in context

    _plantrail(tmp_path, "uninstall", "claude", "--plugin", home=home)
    assert not (home / ".config" / "plantrail" / "plugin-command").exists()


def test_the_launcher_falls_back_to_the_path_with_a_warning_and_never_fails_a_hook(tmp_path: Path) -> None:
    home = tmp_path / "home"
    found = tmp_path / "bin"
    found.mkdir()
    (found / "plantrail").symlink_to(PLANTRAIL)

    ran = _launch(tmp_path, home, f"{found}:/usr/bin:/bin", "hook", "claude", payload=_start(tmp_path))
    context: Any = orjson.loads(ran.stdout)["hookSpecificOutput"]["additionalContext"]
    assert context.splitlines()[-1].startswith(
        f"Also tell the user: the plantrail plugin found no recorded plantrail and ran the first one on PATH "
        f"({found / 'plantrail'})"
    )

    nothing = _launch(tmp_path, home, "/usr/bin:/bin", "hook", "claude", payload=_start(tmp_path))
    assert (nothing.returncode, nothing.stdout) == (0, b"")
    assert b"plantrail install claude --plugin" in nothing.stderr
    server = _launch(tmp_path, home, "/usr/bin:/bin", "mcp")
    assert server.returncode == 1


@pytest.mark.skipif(shutil.which("sh") is None, reason="needs a POSIX shell")
def test_the_launcher_is_executable() -> None:
    assert os.access(LAUNCHER, os.X_OK)
