"""docs/cli.md is generated from the command declarations and cannot drift: it is exactly what the generator
gives now, it covers every command, sub-command and option ``--help`` shows, and no page or help text names
an option that does not exist."""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterator
from pathlib import Path

import click

from plantrail.cli.main import plantrail
from plantrail.cli.reference import command_paths, render

ROOT = Path(__file__).resolve().parents[2]
CLI_REFERENCE = ROOT / "docs" / "cli.md"
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
COMMANDS = dict(command_paths())


def _sections(text: str) -> dict[str, str]:
    """Each ``### plantrail ...`` / ``#### plantrail ...`` section of the reference, by its command path."""
    parts = re.split(r"^#{3,4} (plantrail [a-z -]+)$", text, flags=re.MULTILINE)
    return {parts[i]: parts[i + 1] for i in range(1, len(parts), 2)}


def _options(command: click.Command) -> set[str]:
    """Every option name the command takes (both names of a --x/--no-x pair), --help included."""
    names = {"--help", "-h"}
    for param in command.params:
        if isinstance(param, click.Option):
            names.update(param.opts, param.secondary_opts)
    return names


def test_the_reference_is_what_the_generator_gives_now() -> None:
    """Regenerate with ``python -m plantrail.cli.reference > docs/cli.md`` when this fails."""
    assert CLI_REFERENCE.read_text() == render()


def test_every_command_and_option_has_its_place_in_the_reference() -> None:
    """Walking the click command tree: every command and sub-command has its section, and every option it takes
    (each of its names) is in that section with the help ``--help`` prints for it."""
    sections = _sections(CLI_REFERENCE.read_text())
    assert set(sections) == set(COMMANDS)
    assert len(COMMANDS) > 50
    missing = []
    for path, command in COMMANDS.items():
        ctx = click.Context(command, info_name=path.split(" ")[-1])
        for param in command.get_params(ctx):
            record = param.get_help_record(ctx) if isinstance(param, click.Option) else None
            if record is None:
                continue
            for name in (*param.opts, *param.secondary_opts):
                if not re.search(rf"`[^`]*(?<![\w-]){re.escape(name)}(?![\w-])[^`]*`", sections[path]):
                    missing.append(f"{path} {name}")
            help_words = " ".join(record[1].split())[:40]
            if help_words and help_words.replace("*", r"\*").replace("<", "&lt;") not in sections[path]:
                missing.append(f"{path} {param.name}: help {help_words!r}")
    assert missing == []


def test_every_example_in_a_help_is_in_the_reference() -> None:
    """The examples each command's --help gives are the reference's examples for it."""
    sections = _sections(CLI_REFERENCE.read_text())
    for path, command in COMMANDS.items():
        for line in (command.help or "").splitlines():
            if line.strip().startswith("plantrail "):
                assert line.strip() in sections[path], (path, line)


#: A command line inside a code span or a code block: ``plantrail CMD [SUB] ARGS...`` up to a pipe or a separator.
_COMMAND_LINE = re.compile(r"(?<![\w/.-])plantrail ([a-z][a-z-]*)((?: +[^\s|;&`]+)*)")
#: A command named in prose with an option right after it: ``replan --plan``.
_NAMED_WITH_OPTION = re.compile(r"(?<![\w/.-])([a-z][a-z-]*) (--[a-z][a-z-]*)")


def _code(text: str) -> Iterator[str]:
    """The page's code: every code span and every line of every fenced block."""
    for block in re.findall(r"^```[^\n]*\n(.*?)^```", text, flags=re.MULTILINE | re.DOTALL):
        yield from block.splitlines()
    prose = re.sub(r"^```[^\n]*\n.*?^```", "", text, flags=re.MULTILINE | re.DOTALL)
    yield from re.findall(r"`([^`\n]+)`", prose)


def _words(text: str) -> list[str]:
    """The words of a command line, a quoted text one word (its insides are no option)."""
    try:
        return shlex.split(text)
    except ValueError:  # an unclosed quote: the words before it
        return text.split('"')[0].split()


def _wrong_options(text: str, where: str) -> Iterator[str]:
    """``where: plantrail CMD --option`` for each option the text gives a command that does not take it."""
    tops = {path.split(" ")[1]: command for path, command in COMMANDS.items() if path.count(" ") == 1}
    for line in _code(text):
        for name, rest in _COMMAND_LINE.findall(line):
            command = tops.get(name)
            if command is None:
                continue
            words = _words(rest)
            if "--" in words:  # what follows a bare -- is another program's command line (plantrail acp -- AGENT)
                words = words[: words.index("--")]
            if isinstance(command, click.Group) and words and words[0] in command.commands:
                command = command.commands[words[0]]
            for word in words:
                option = word.split("=")[0]
                if re.fullmatch(r"--?[a-z][a-z-]*", option) and option not in _options(command):
                    yield f"{where}: plantrail {name} {option}"
    prose = re.sub(r"^```[^\n]*\n.*?^```", "", text, flags=re.MULTILINE | re.DOTALL)
    prose = re.sub(r"^\s*plantrail .*$", "", prose, flags=re.MULTILINE)  # a help's examples, checked above
    for found in _NAMED_WITH_OPTION.finditer(prose):
        name, option = found.groups()
        before = prose[: found.start()].split()
        if before and before[-1].startswith("-"):  # the value of an option (`--outcome complete --reason`)
            continue
        command = tops.get(name)
        if command is not None and not isinstance(command, click.Group) and option not in _options(command):
            yield f"{where}: {name} {option}"


def test_no_page_names_an_option_that_does_not_exist() -> None:
    """Every ``plantrail CMD --option`` in README.md and docs/*.md, and every ``CMD --option`` in their prose,
    names an option CMD takes."""
    wrong = [found for page in PAGES for found in _wrong_options(page.read_text(), page.name)]
    assert wrong == []


def test_no_help_names_an_option_that_does_not_exist() -> None:
    """Every ``CMD --option`` a command's help or an option's help names is an option CMD takes."""
    ctx = click.Context(plantrail)
    texts = [(path, command.help or "") for path, command in COMMANDS.items()]
    texts += [
        (path, param.help or "")
        for path, command in COMMANDS.items()
        for param in command.params
        if isinstance(param, click.Option)
    ]
    texts.append(("plantrail", plantrail.get_help(ctx)))
    wrong = [found for path, text in texts for found in _wrong_options(text, path)]
    assert wrong == []


def test_the_check_of_options_finds_a_wrong_one() -> None:
    """The checks above see an option a command does not take, in a code span, a block and in prose."""
    text = "Run `plantrail replan run.jsonl --draft v2.json`.\n\n```console\n$ plantrail start x a --nope\n```\n"
    text += "a whole draft that `create` or `replan --draft` takes\n"
    assert sorted(_wrong_options(text, "p")) == [
        "p: plantrail replan --draft",
        "p: plantrail start --nope",
        "p: replan --draft",
    ]
