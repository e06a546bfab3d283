"""The README and docs/ stay honest: error table, commands, links, examples and length match the code."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Iterator
from pathlib import Path

import click
import pytest

import plantrail.cli.main as cli_main
from plantrail.cli.main import all_commands
from plantrail.ledger.vocabulary.errors import CODES, error
from tests.conftest import CliResult

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
DOCS = sorted((ROOT / "docs").glob("*.md"))
PAGES = [README, *DOCS]
ERRORS = ROOT / "docs" / "errors.md"
CLI_REFERENCE = ROOT / "docs" / "cli.md"
#: Pages whose Python examples this file does not run, and why.
NOT_RUN_HERE = {
    ROOT / "docs" / "library.md": "tests/project/test_docs_library.py runs its examples, in order",
    ROOT / "docs" / "scaling.md": "its examples need a PostgreSQL server",
    ROOT / "docs" / "agent-frameworks.md": "its examples need a model provider; tests/frameworks runs them offline",
}

_FENCE = re.compile(r"^```[^\n]*\n.*?^```[ \t]*$", re.MULTILINE | re.DOTALL)


def _prose(text: str) -> str:
    """The page without its fenced code blocks (headings and links inside them are not the page's)."""
    return _FENCE.sub("", text)


def _code_blocks(text: str, language: str) -> list[str]:
    """The bodies of the page's fenced blocks in ``language``, in order."""
    return re.findall(rf"^```{language}[ \t]*\n(.*?)^```[ \t]*$", text, flags=re.MULTILINE | re.DOTALL)


def _documented_codes() -> dict[str, int]:
    """Every row ``| `CODE` | exit | ...`` of the error table."""
    rows = re.findall(r"^\| `([A-Z][A-Z_]*)` \| (\d+) \|", ERRORS.read_text(), flags=re.MULTILINE)
    assert len(rows) == len(dict(rows)), "a code has two rows"
    return {code: int(exit_code) for code, exit_code in rows}


def _front_door_error(
    raise_it: Callable[[], None], monkeypatch: pytest.MonkeyPatch, run_cli: Callable[..., CliResult]
) -> tuple[str, int]:
    """The code and exit status the command line reports when its command raises through ``raise_it``."""

    def failing(*args: object, **kwargs: object) -> None:
        raise_it()

    monkeypatch.setattr(cli_main.plantrail, "main", failing)
    result = run_cli("status", "run.jsonl")
    printed = re.match(r"error\[([A-Z_]+)\]: ", result.err)
    assert printed is not None, result.err
    return printed.group(1), result.code


def _raise(exception: BaseException) -> Callable[[], None]:
    def raise_it() -> None:
        raise exception

    return raise_it


def test_every_error_code_is_documented_with_its_exit_code() -> None:
    """Each code in ledger/errors.py has a row `| `CODE` | exit |` in docs/errors.md with its class's exit code."""
    documented = _documented_codes()
    expected = {code: error(code, "probe").exit_code for code in CODES}
    assert {code: documented.get(code) for code in expected} == expected


def test_every_error_code_is_documented_with_its_class() -> None:
    """Each code's row names the exception class the library raises for it, so Python callers know what to catch."""
    rows = dict(re.findall(r"^\| `([A-Z][A-Z_]*)` \| \d+ \| `(\w+)` \|", ERRORS.read_text(), flags=re.MULTILINE))
    assert {code: rows.get(code) for code in CODES} == {code: type(error(code, "probe")).__name__ for code in CODES}


@pytest.mark.parametrize(
    "raise_it",
    [_raise(RuntimeError("a bug")), _raise(KeyboardInterrupt()), _raise(click.Abort())],
    ids=["bug", "ctrl-c", "abort"],
)
def test_the_command_lines_own_codes_are_documented(
    raise_it: Callable[[], None], monkeypatch: pytest.MonkeyPatch, run_cli: Callable[..., CliResult]
) -> None:
    """A code only the command line reports (a bug, an interruption) has its row with the exit status it returns."""
    code, exit_code = _front_door_error(raise_it, monkeypatch, run_cli)
    assert code not in CODES
    assert _documented_codes().get(code) == exit_code


def test_no_row_names_a_code_that_does_not_exist(
    monkeypatch: pytest.MonkeyPatch, run_cli: Callable[..., CliResult]
) -> None:
    """Every code in the error table is one the library raises or one the command line reports by itself."""
    front_door = {
        _front_door_error(raise_it, monkeypatch, run_cli)[0]
        for raise_it in (_raise(RuntimeError("a bug")), _raise(KeyboardInterrupt()))
    }
    assert set(_documented_codes()) - set(CODES) <= front_door


def test_every_exit_status_is_in_the_exit_table() -> None:
    """Each exit status a code can have is explained in the exit-code table of docs/errors.md."""
    explained = {int(n) for n in re.findall(r"^\| (\d+) \| [a-z]", ERRORS.read_text(), flags=re.MULTILINE)}
    assert set(_documented_codes().values()) <= explained
    assert {0, 1, 2, 3, 4} <= explained


def _mentioned_commands(text: str) -> set[str]:
    """Every `plantrail <command>` a page shows at a prompt, in backticks, under a heading or after bin/."""
    return set(re.findall(r"(?:\$ |`|bin/|^#+ )plantrail ([a-z]+(?:-[a-z]+)*)", text, flags=re.MULTILINE))


def test_every_command_the_readme_and_docs_mention_exists() -> None:
    """Every `plantrail <command>` shown in README.md or docs/*.md is a real command."""
    commands = set(all_commands())
    wrong = {page.name: sorted(_mentioned_commands(page.read_text()) - commands) for page in PAGES}
    assert {name: bad for name, bad in wrong.items() if bad} == {}
    assert len(_mentioned_commands(README.read_text())) > 10


def test_every_command_has_a_section_in_the_cli_reference() -> None:
    """docs/cli.md has one `### plantrail NAME` section for each command, and none for a command that is gone."""
    sections = re.findall(
        r"^### plantrail ([a-z]+(?:-[a-z]+)*)$", _prose(CLI_REFERENCE.read_text()), flags=re.MULTILINE
    )
    assert len(sections) == len(set(sections))
    assert sorted(sections) == sorted(all_commands())


def test_ci_runs_the_readme_test_command() -> None:
    """.ci/run runs the README's test command, so CI tests exactly what a new user runs."""
    ci = (ROOT / ".ci" / "run").read_text()
    readme_command = "python3 -m venv .venv && .venv/bin/pip install '.[test]' && .venv/bin/python -m pytest"
    assert readme_command in README.read_text()
    assert readme_command.replace("pip install", "pip install --quiet") in ci


def test_the_readme_is_at_most_300_lines() -> None:
    """The README stays short enough to read in five minutes; the reference lives in docs/."""
    assert len(README.read_text().splitlines()) <= 300


def _slug(heading: str) -> str:
    """The anchor a Markdown heading gets on GitHub: lower case, punctuation dropped, spaces to hyphens."""
    text = heading.strip().lower()
    kept = "".join(c for c in text if c in " -_" or unicodedata.category(c)[0] in "LN")
    return kept.replace(" ", "-")


def _anchors(page: Path) -> set[str]:
    """Every anchor the page's headings give, with GitHub's -1, -2 ... for repeated headings."""
    seen: dict[str, int] = {}
    anchors = set()
    for heading in re.findall(r"^#{1,6} (.+)$", _prose(page.read_text()), flags=re.MULTILINE):
        slug = _slug(heading)
        count = seen.get(slug, 0)
        anchors.add(slug if count == 0 else f"{slug}-{count}")
        seen[slug] = count + 1
    return anchors


def _relative_links(page: Path) -> Iterator[tuple[str, Path, str]]:
    """(link as written, target file, anchor or "") for every relative link in the page's prose."""
    for target in re.findall(r"\]\(([^)\s]+)\)", _prose(page.read_text())):
        if re.match(r"[a-z][a-z0-9+.-]*:", target):  # https:, mailto: ...
            continue
        path, _, anchor = target.partition("#")
        yield target, (page.parent / path).resolve() if path else page, anchor


def test_every_relative_link_points_at_a_file_that_exists() -> None:
    """Each relative link in README.md and docs/*.md names a file of the checkout, and its #anchor a heading there."""
    links = [(page, link, target, anchor) for page in PAGES for link, target, anchor in _relative_links(page)]
    broken = [
        f"{page.name}: {link}"
        for page, link, target, anchor in links
        if not target.is_file() or (anchor and target.suffix == ".md" and anchor not in _anchors(target))
    ]
    assert broken == []
    assert len(links) > 30


def test_the_readme_links_every_docs_page() -> None:
    """The README links each page in docs/, so a newcomer finds every one of them from it."""
    linked = {target for _, target, _ in _relative_links(README)}
    assert [page.name for page in DOCS if page not in linked] == []


def test_every_sample_the_docs_name_exists() -> None:
    """Each samples/ file named in README.md or docs/*.md is in the checkout."""
    named = {name for page in PAGES for name in re.findall(r"samples/[\w.-]*\w(?![\w*-])", page.read_text())}
    assert sorted(name for name in named if not (ROOT / name).is_file()) == []
    assert len(named) > 5


@pytest.mark.parametrize(
    "page",
    [p for p in PAGES if p not in NOT_RUN_HERE and _code_blocks(p.read_text(), "python")],
    ids=lambda p: p.name,
)
def test_every_python_example_runs(page: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The page's Python examples run, in order, from a scratch folder that holds the samples."""
    (tmp_path / "samples").symlink_to(ROOT / "samples")
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, object] = {"__name__": "__docs__"}
    for number, block in enumerate(_code_blocks(page.read_text(), "python"), 1):
        exec(compile(block, f"{page.name} python example {number}", "exec"), namespace)


def test_the_docs_speak_of_the_product() -> None:
    """No page sends readers to documents they do not have (design notes, studies, tickets): pages state the rule."""
    pattern = re.compile(
        r"\bseeds? ?\d{3}\b|\bseeds/|\bresearch/|\bDESIGN\.md\b|\bthe issue\b|\bissue \d+", re.IGNORECASE
    )
    found = {page.name: pattern.findall(page.read_text()) for page in PAGES}
    assert {name: words for name, words in found.items() if words} == {}
