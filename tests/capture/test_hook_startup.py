"""`plantrail hook AGENT` as the hooks are installed starts without click: what it loads, and that it answers
exactly as the click command does."""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
import typing
from pathlib import Path
from typing import Any

import orjson
import pytest

from tests.helpers.hook_payloads import post_tool_use

#: What a hook call must not load: click and the command table (the CLI's start-up), and pydantic (the
#: hook's input is JSON orjson reads; pydantic is the schema's, for `verify` and `schema`).
NOT_ON_THE_HOOK_PATH = ("click", "plantrail.cli.main", "plantrail.cli.common", "pydantic")


def _todo(project: Path, call: str, *items: tuple[str, str]) -> dict[str, Any]:
    todos = [{"content": text, "status": status, "activeForm": text} for text, status in items]
    return post_tool_use("s1", project, "TodoWrite", call, {"todos": todos}, {"oldTodos": [], "newTodos": todos})


def _run(args: list[str], payload: dict[str, Any], project: Path) -> subprocess.CompletedProcess[bytes]:
    env = {k: v for k, v in os.environ.items() if k not in ("PLANTRAIL_HOME", "PLANTRAIL_STORE")}
    return subprocess.run(args, input=orjson.dumps(payload), capture_output=True, check=False, cwd=project, env=env)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A project folder with one captured plan update (its run exists)."""
    first = _todo(tmp_path, "toolu_1", ("read the code", "in_progress"), ("write the fix", "pending"))
    assert _run([sys.executable, "-m", "plantrail", "hook", "claude"], first, tmp_path).returncode == 0
    return tmp_path


def test_a_hook_call_loads_neither_click_nor_the_command_table_nor_pydantic(project: Path) -> None:
    """`plantrail hook claude` records a plan update without importing click, the CLI's command table or
    pydantic, and prints nothing."""
    script = (
        "import sys\n"
        "from plantrail.cli.entry import main\n"
        "code = main(['hook', 'claude'])\n"
        f"loaded = [m for m in {NOT_ON_THE_HOOK_PATH!r} if m in sys.modules]\n"
        "print(code, ','.join(loaded) or 'none')\n"
    )
    update = _todo(project, "toolu_2", ("read the code", "completed"), ("write the fix", "in_progress"))

    done = _run([sys.executable, "-c", script], update, project)

    assert (done.returncode, done.stdout.decode().strip()) == (0, "0 none"), done.stderr
    log = (project / ".plantrail" / "runs" / "s1.jsonl").read_bytes()
    assert b'"type":"step.completed"' in log
    assert not (project / ".plantrail" / "hook-errors.log").exists()


@pytest.mark.parametrize(
    "payload",
    [
        {"hook_event_name": "SessionStart", "source": "resume"},
        {"hook_event_name": "UserPromptSubmit", "prompt": "also write the release note"},
        {"hook_event_name": "Notification"},
    ],
    ids=["session-start", "prompt", "unknown-event"],
)
def test_the_option_less_hook_answers_as_the_click_command_does(project: Path, payload: dict[str, Any]) -> None:
    """The hook's start without click prints, exits and writes down errors exactly as `plantrail hook claude`
    through the click command: the SessionStart receipt, nothing for a prompt, an error line for an unknown
    event."""
    payload = {"session_id": "s1", "cwd": str(project), **payload}
    errors = project / ".plantrail" / "hook-errors.log"

    fast = _run([sys.executable, "-m", "plantrail", "hook", "claude"], payload, project)
    fast_errors = errors.read_text() if errors.exists() else ""
    errors.unlink(missing_ok=True)
    through_click = _run([sys.executable, "-m", "plantrail.cli.main", "hook", "claude"], payload, project)
    click_errors = errors.read_text() if errors.exists() else ""

    assert (fast.returncode, fast.stdout, fast.stderr) == (through_click.returncode, through_click.stdout, b"")
    assert [line.split(" ", 1)[1] for line in fast_errors.splitlines()] == [
        line.split(" ", 1)[1] for line in click_errors.splitlines()
    ]
    if payload["hook_event_name"] == "SessionStart":
        assert orjson.loads(fast.stdout)["hookSpecificOutput"]["hookEventName"] == "SessionStart"


def test_a_hook_with_options_or_an_unknown_agent_goes_through_the_command_line(project: Path) -> None:
    """Only the installed form skips click: `hook claude --json` prints what the call did, and an agent the
    hook does not take is click's usage error."""
    update = _todo(project, "toolu_2", ("read the code", "completed"), ("write the fix", "in_progress"))

    as_json = _run([sys.executable, "-m", "plantrail", "hook", "claude", "--json"], update, project)
    unknown = _run([sys.executable, "-m", "plantrail", "hook", "cursor"], update, project)

    assert as_json.returncode == 0 and orjson.loads(as_json.stdout)["ok"] is True
    assert unknown.returncode == 2 and b"error[USAGE]" in unknown.stderr


def test_a_hook_call_loads_msgspec_without_typing_extensions(project: Path) -> None:
    """The hook's msgspec resolves types with typing's own functions (typing_extensions is not loaded), and the
    call records the update as always; typing_extensions stays importable in the process afterwards."""
    script = (
        "import sys, typing\n"
        "from plantrail.cli.entry import main\n"
        "code = main(['hook', 'claude'])\n"
        "import msgspec._utils as u\n"
        "held = 'typing_extensions' in sys.modules\n"
        "same = (u._get_type_hints is typing.get_type_hints, u.Required is typing.Required,"
        " u.NotRequired is typing.NotRequired)\n"
        "import typing_extensions\n"
        "print(code, held, same)\n"
    )
    update = _todo(project, "toolu_2", ("read the code", "completed"), ("write the fix", "in_progress"))

    done = _run([sys.executable, "-c", script], update, project)

    assert (done.returncode, done.stdout.decode().strip()) == (0, "0 False (True, True, True)"), done.stderr
    assert b'"type":"step.completed"' in (project / ".plantrail" / "runs" / "s1.jsonl").read_bytes()
    assert not (project / ".plantrail" / "hook-errors.log").exists()


def _resolved_classes() -> list[type[Any]]:
    """Every class msgspec resolves for the log: each event type's record class and every dataclass or
    struct a record can hold."""
    from plantrail.ledger.vocabulary import codec
    from plantrail.ledger.vocabulary import events as ev

    found: list[type[Any]] = []
    todo: list[Any] = [codec._RECORD_CLASSES[cls.TYPE] for cls in typing.get_args(ev.Event)]
    while todo:
        tp = todo.pop()
        if isinstance(tp, type) and (dataclasses.is_dataclass(tp) or hasattr(tp, "__struct_fields__")):
            if tp not in found:
                found.append(tp)
                todo.extend(typing.get_type_hints(tp, include_extras=True).values())
        else:
            todo.extend(typing.get_args(tp))
    return found


@pytest.mark.parametrize("cls", _resolved_classes(), ids=lambda cls: cls.__name__)
def test_typing_resolves_the_log_classes_as_typing_extensions_does(cls: type[Any]) -> None:
    """What msgspec asks typing_extensions for (the hints with extras) is what typing gives, class by class, so
    the hook's msgspec, loaded without typing_extensions, builds the same decoders."""
    import typing_extensions

    assert typing_extensions.get_type_hints(cls, include_extras=True) == typing.get_type_hints(cls, include_extras=True)
    assert (typing_extensions.Required, typing_extensions.NotRequired) == (typing.Required, typing.NotRequired)


def test_a_msgspec_that_needs_typing_extensions_is_left_to_load_with_it(tmp_path: Path) -> None:
    """When msgspec will not load without typing_extensions (a later release that imports it outright),
    load_msgspec leaves nothing half-loaded and the next import loads it with typing_extensions."""
    fake = tmp_path / "msgspec"
    fake.mkdir()
    (fake / "__init__.py").write_text("import typing_extensions\nLOADED_WITH = typing_extensions.__name__\n")
    script = (
        f"import sys; sys.path.insert(0, {str(tmp_path)!r})\n"
        "from plantrail.cli.hook_call import load_msgspec\n"
        "load_msgspec()\n"
        "left = sorted(m for m in sys.modules if m.split('.')[0] in ('msgspec', 'typing_extensions'))\n"
        "import msgspec\n"
        "print(left, msgspec.LOADED_WITH)\n"
    )

    done = subprocess.run([sys.executable, "-c", script], capture_output=True, check=False)

    assert (done.returncode, done.stdout.decode().strip()) == (0, "[] typing_extensions"), done.stderr
