"""The project speaks of itself: no code, help text, tool description or page cites a document it does not hold.

plantrail was written from design notes that are not part of the repository. What the code relies on from
them is written in ``docs/`` in the project's own words; nothing a reader gets (the package's code, comments
and docstrings, the page and script the report ships, the pages in ``docs/`` and the README, every command's
``--help``, the MCP server's instructions and tool descriptions) points at a document they cannot open. Each
test fails listing every offending place, one line each: ``file:line: [rules] 'words' in: the line`` (for a
help or tool text, its command or tool and the text around the first citation).

The rules (:data:`RULES`), each chosen to catch a citation and nothing else:

- ``seed-number``: "seed" followed by a document number, ``seed 001``, ``seeds 001 and 004``, ``Seed 000's``
  (a number written with a leading zero, or 0 to 4 alone). A random seed is not caught: ``its seed``,
  ``PLANTRAIL_TRIAL_SEED=<seed>``, ``--seed 3`` (the word joined to ``-``, ``_`` or ``=`` is not matched) and
  the verb ("can seed it") never are; prose that gives a random seed's value writes ``seed=3``, not "seed 3".
- ``the-seeds``: "the seeds" (or "the seeds'") as the name of a set of documents. "the same seeds" and "the
  seeds of ..." / "the seeds for ..." (random seeds) are not caught.
- ``seeds-folder``, ``research-folder``: a path into ``seeds/`` or ``research/``.
- ``design-doc``: ``DESIGN`` or ``STYLE`` as a word in capitals, a document's name (``DESIGN.md``, ``DESIGN's``,
  ``DESIGN "Replan semantics"``). Identifiers are not caught: ``NODE_STYLES``, ``UNKNOWN_STYLE``, and a
  constant named ``STYLE`` or ``DESIGN`` where it is assigned, called, indexed or has an attribute read.
- ``issue-number``: ``issue 13``, ``issues 13``, ``issue #13`` (any case).
- ``hash-number``: ``#13`` standing alone, the project's own tracker's issue or pull request. Colours
  (``#1e3a8a``, ``fill:#000``, ``"#333"``), page anchors (``#2-audit-why``, ``README.md#2-...``) and another
  project's issue named with its repository (``owner/repo#13``, a public page anyone can open) are not
  caught: only ``#`` after a space, a bracket or the start of a line, with digits that end the word.
- ``section-number``: ``§`` anywhere, and ``section 9.3`` / ``sections 5, 7`` (a numbered section of some
  document: the project's pages link to their sections by anchor instead).
- ``missing-page``: a ``*.md`` path that exists nowhere in the repository (looked up from the file's own
  folder, the repository's root and ``docs/``), such as ``reliability.md`` of a folder the repository does not
  have. :data:`OUTSIDE_PAGES` lists the few named on purpose: another project's page, named with its
  repository, and a file of the sample project a tour records.
- ``reference-identifier``: a name from the design notes' own example code (``failStepId``, ``dependId``,
  ``nextStepId``, ``reconcilePlan``, ``shouldReplan``, ``selectNextStep``, ``stop_policy.js``): it names code no
  reader can find. The camelCase draft keys plantrail accepts (``dependsOn`` ...) are not in the list.
- ``cjk-heading``: Chinese text. The design notes are in Chinese and every Chinese phrase that reached the
  code was one of their headings; the project writes English (code that needs such a character for a test or a
  table writes it as an escape, ``"\\u4e2d"``, which this rule does not see).

What the rules cannot see: a bare section number with no document named (``6.6``), or a document named in
other words ("the design notes" above is prose about them, not a pointer into them). A citation written
across two lines of a docstring or a page is found (the rules allow any whitespace between their words); one
split across two ``#`` comment lines is not.
"""

from __future__ import annotations

import os
import re
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NamedTuple

import click
import pytest

from plantrail.cli.main import plantrail

ROOT = Path(__file__).resolve().parents[2]

#: The folders whose files make up the installed package (see ``[tool.setuptools.package-dir]``).
PACKAGE_FOLDERS = ("ledger", "projections", "cli", "src/plantrail")
#: The kinds of file of the package that hold text a reader may meet: the code and the report's page.
PACKAGE_SUFFIXES = (".py", ".js", ".css")

#: The ``*.md`` paths that name a page outside this repository on purpose, by the file that names them.
OUTSIDE_PAGES: dict[str, set[str]] = {
    # Gemini CLI's hook reference, in google-gemini/gemini-cli: the dialect the adapter reads.
    "ledger/capture/gemini.py": {"docs/hooks/reference.md"},
    # An initial input of the sample project the lineage tour records (a file of that project).
    "docs/lineage-tour.md": {"docs/client-style.md"},
}


class Rule(NamedTuple):
    """One kind of citation: its name, the pattern that finds it, an example of what it catches, and the words
    (lower case) one of which a text must hold for the pattern to be worth running (none: always run)."""

    name: str
    pattern: re.Pattern[str]
    catches: str
    words: tuple[str, ...] = ()


_I = re.IGNORECASE
#: Every rule the tests apply (the module docstring says what each one leaves alone).
RULES: tuple[Rule, ...] = (
    Rule("seed-number", re.compile(r"(?<![\w=-])seeds?\s+(?:0\d+|[0-4])\b", _I), "seed 001", ("seed",)),
    Rule("the-seeds", re.compile(r"\bthe\s+seeds\b(?!\s+(?:of|for)\b)", _I), "the seeds' contract", ("seeds",)),
    Rule("seeds-folder", re.compile(r"\bseeds/", _I), "seeds/002_...", ("seeds/",)),
    Rule("research-folder", re.compile(r"\bresearch/", _I), "research/reliability.md", ("research/",)),
    Rule(
        "design-doc",
        re.compile(r"\b(?:DESIGN|STYLE)\b(?!\s*(?:[:=(\[]|\.(?!md\b)))"),
        "DESIGN.md, STYLE.md",
        ("design", "style"),
    ),
    Rule("issue-number", re.compile(r"\bissues?\s+#?\d+\b", _I), "issue 13", ("issue",)),
    Rule("hash-number", re.compile(r"(?:^|(?<=[\s(\[{,;]))#\d+(?![\w-])", re.MULTILINE), "(#13)", ("#",)),
    Rule("section-number", re.compile(r"§|\bsections?\s+\d+(?:\.\d+)*\b", _I), "section 9.3", ("§", "section")),
    Rule(
        "reference-identifier",
        re.compile(r"\b(?:failStepId|dependId|nextStepId|reconcilePlan|shouldReplan|selectNextStep|stop_policy\.js)\b"),
        "failStepId, reconcilePlan",
        ("stepid", "dependid", "plan", "stop_policy"),
    ),
    Rule("cjk-heading", re.compile(r"[\u3000-\u303f\u3400-\u4dbf\u4e00-\u9fff]+"), "最小证据记录"),
)

#: A path to a Markdown page: a name ending ``.md``, with the folders before it.
_PAGE = re.compile(r"(?<![\w./-])[\w./-]*\w\.md\b")


class Finding(NamedTuple):
    """The citations on one line of a file (or in one help text): where, the rules they break, the words."""

    where: str
    rules: tuple[str, ...]
    words: tuple[str, ...]
    context: str

    def __str__(self) -> str:
        return f"{self.where}: [{', '.join(self.rules)}] {', '.join(map(repr, self.words))} in: {self.context}"


def citations(text: str) -> Iterator[tuple[int, str, str]]:
    """Every citation in ``text``: the offset where it starts, the rule's name and the words (spaces made one)."""
    lower = text.lower()
    for rule in RULES:
        if rule.words and not any(word in lower for word in rule.words):
            continue
        for match in rule.pattern.finditer(text):
            yield match.start(), rule.name, " ".join(match.group().split())


def missing_pages(text: str, relative: str, root: Path = ROOT) -> Iterator[tuple[int, str, str]]:
    """Every ``*.md`` path in ``text`` (of the file at ``relative``) that names no page of the repository."""
    if ".md" not in text:
        return
    folder = (root / relative).parent
    for match in _PAGE.finditer(text):
        page = match.group()
        if page in OUTSIDE_PAGES.get(relative, set()):
            continue
        if not any((base / page).is_file() for base in (folder, root, root / "docs")):
            yield match.start(), "missing-page", page


def _grouped(where: str, found: list[tuple[int, str, str]]) -> Finding:
    rules = tuple(dict.fromkeys(rule for _, rule, _ in found))
    return Finding(where, rules, tuple(dict.fromkeys(words for _, _, words in found)), "")


def scan_file(path: Path, root: Path = ROOT) -> list[Finding]:
    """The citations in one file, one finding per ``file:line`` with the line it is on (trimmed)."""
    relative = path.relative_to(root).as_posix()
    text = path.read_text(encoding="utf-8")
    found = [*citations(text), *missing_pages(text, relative, root)]
    if not found:
        return []
    lines = text.splitlines()
    by_line: dict[int, list[tuple[int, str, str]]] = {}
    for hit in sorted(found):
        by_line.setdefault(text.count("\n", 0, hit[0]) + 1, []).append(hit)
    return [
        _grouped(f"{relative}:{number}", hits)._replace(context=_trimmed(lines[number - 1]))
        for number, hits in sorted(by_line.items())
    ]


def scan_text(where: str, text: str) -> list[Finding]:
    """The citations in a text that is no file (a command's help, a tool's description): one finding, the
    text around the first citation as context. The text is read with its spaces and line breaks made one space,
    so a citation that help wrapping split is found whole."""
    flat = " ".join(text.split())
    found = sorted([*citations(flat), *missing_pages(flat, "README.md")])
    if not found:
        return []
    at = found[0][0]
    return [_grouped(where, found)._replace(context=f"...{flat[max(0, at - 60) : at + 100]}...")]


def _trimmed(line: str) -> str:
    line = line.strip()
    return line if len(line) <= 160 else line[:157] + "..."


def package_sources() -> list[Path]:
    """Every ``.py`` file of the package, and the script and style sheet it ships, in a stable order."""
    return sorted(p for folder in PACKAGE_FOLDERS for p in (ROOT / folder).rglob("*") if p.suffix in PACKAGE_SUFFIXES)


def pages() -> list[Path]:
    """Every page of ``docs/`` and the README."""
    return [*sorted((ROOT / "docs").glob("*.md")), ROOT / "README.md"]


def help_texts() -> Iterator[tuple[str, str]]:
    """The full ``--help`` text of the ``plantrail`` group and of every command and subcommand under it."""

    def walk(command: click.Command, path: list[str], parent: click.Context | None) -> Iterator[tuple[str, str]]:
        ctx = click.Context(command, info_name=path[-1], parent=parent)
        yield " ".join(path), command.get_help(ctx)
        if isinstance(command, click.Group):
            for name in command.list_commands(ctx):
                sub = command.get_command(ctx, name)
                if sub is not None:
                    yield from walk(sub, [*path, name], ctx)

    yield from walk(plantrail, ["plantrail"], None)


def _descriptions(schema: Any, path: str) -> Iterator[tuple[str, str]]:
    """Every ``description`` (and ``title``) inside a JSON schema, with where it is."""
    if isinstance(schema, dict):
        for key, value in schema.items():
            if key in ("description", "title") and isinstance(value, str):
                yield f"{path}.{key}", value
            else:
                yield from _descriptions(value, f"{path}.{key}")
    elif isinstance(schema, list):
        for index, value in enumerate(schema):
            yield from _descriptions(value, f"{path}[{index}]")


def _report(findings: list[Finding]) -> str:
    return f"{len(findings)} place(s) cite a document outside the repository:\n" + "\n".join(map(str, findings))


def test_the_package_code_cites_no_outside_document() -> None:
    """No comment, docstring or string of the package's code cites a document the repository does not hold."""
    sources = package_sources()
    assert len(sources) > 50 and ROOT / "cli" / "report_page.js" in sources  # the folders the build maps
    findings = [finding for path in sources for finding in scan_file(path)]
    if findings:
        pytest.fail(_report(findings), pytrace=False)


def test_the_docs_and_readme_cite_no_outside_document() -> None:
    """No page of docs/ and no line of the README cites a document the repository does not hold."""
    findings = [finding for path in pages() for finding in scan_file(path)]
    if findings:
        pytest.fail(_report(findings), pytrace=False)


def test_no_help_text_cites_an_outside_document() -> None:
    """The full --help of the group and of every command and subcommand cites no outside document."""
    texts = dict(help_texts())
    assert {"plantrail", "plantrail status", "plantrail store init"} <= set(texts)
    findings = [finding for where, text in texts.items() for finding in scan_text(f"{where} --help", text)]
    if findings:
        pytest.fail(_report(findings), pytrace=False)


def test_no_mcp_tool_description_cites_an_outside_document() -> None:
    """The MCP server's instructions, tools' descriptions and their input schemas' descriptions cite none."""
    if os.environ.get("CI") != "true":
        pytest.importorskip("mcp")
    import anyio
    from mcp import Client

    from plantrail.cli.mcp_server import build_server

    texts: dict[str, str] = {}

    async def main(folder: Path) -> None:
        async with Client(build_server(folder)) as client:
            texts["mcp instructions"] = client.instructions or ""
            for tool in (await client.list_tools()).tools:
                texts[f"mcp tool {tool.name}"] = tool.description or ""
                texts.update(_descriptions(tool.input_schema, f"mcp tool {tool.name} input"))
                texts.update(_descriptions(tool.output_schema or {}, f"mcp tool {tool.name} output"))
            for template in (await client.list_resource_templates()).resource_templates:
                texts[f"mcp resource {template.uri_template}"] = template.description or ""

    with tempfile.TemporaryDirectory() as folder:
        anyio.run(main, Path(folder))
    assert any(where.startswith("mcp tool plan_set input.") for where in texts), sorted(texts)
    findings = [finding for where, text in texts.items() for finding in scan_text(where, text)]
    if findings:
        pytest.fail(_report(findings), pytrace=False)


@pytest.mark.parametrize(
    ("text", "rules"),
    [
        ("Coverage of the goal (seed 001 section 6.1, seed 002's two levels", {"seed-number", "section-number"}),
        ("the plan contract of seeds 001 and 004 (format v2)", {"seed-number"}),
        ("Format v2 adds the seeds' plan contract", {"the-seeds"}),
        ("Seed 000 ``shouldReplan`` over what the log can tell", {"seed-number", "reference-identifier"}),
        ("as measured in research/reliability.md", {"research-folder"}),
        ("JSON: the status document (DESIGN.md) plus", {"design-doc"}),
        ('kept, never refused (DESIGN "One mapping per agent dialect")', {"design-doc"}),
        ("DESIGN's causes are seqs", {"design-doc"}),
        ("habit 16 of STYLE.md", {"design-doc"}),
        ("Leases, heartbeats and abandon (issue 13): the commands", {"issue-number"}),
        ("the rules are in (issues 13 and 14)", {"issue-number"}),
        ("fixed in (#42).", {"hash-number"}),
        ("the evidence record (seed 004 最小证据记录)", {"seed-number", "cjk-heading"}),
        ("see § 4 of the notes", {"section-number"}),
        ("Repair edges (``failStepId``; a repair step's ``dependId`` is -1)", {"reference-identifier"}),
        ("The stop policy (stop_policy.js)", {"reference-identifier"}),
    ],
)
def test_each_rule_catches_the_citations_it_is_for(text: str, rules: set[str]) -> None:
    """Each citation the project once carried is caught, by the rules meant for it."""
    assert {rule for _, rule, _ in citations(text)} == rules


@pytest.mark.parametrize(
    "text",
    [
        "A failing crash trial prints its seed; PLANTRAIL_TRIAL_SEED=<seed> reruns it.",
        "In an earlier full run with the same seeds, one SIGKILL landed",
        "each trial creates a log (policy drawn from the seed: `always` half of the time)",
        "the start of a version can seed it instead of a fold from seq 0.",
        "hypothesis --seed 3 reruns the example; the seeds of the crash trials are printed",
        'NODE_STYLES, EDGE_STYLES, UNKNOWN_STYLE: Final = NodeStyle("other", "#fae8ff", "#a21caf")',
        "STYLE = {}; DESIGN.get(x); STYLE[0]",
        'fill:#000;stroke:#16a34a; "#333"; color: #1e3a8a',
        "the [README's audit tour](../README.md#2-audit-why-a-replan-happened) and (#2-audit-why-a-replan)",
        "## USER and ## MODEL sections, a call as a JSON block; the section's agent name",
        "the command that issued it; 1.0 MB page whose first paint comes at 0.4 s (version 1.4.1)",
        "camelCase keys (acceptanceCriteria, dependsOn, completionEvidence, maxAttempts) are accepted",
    ],
)
def test_the_rules_leave_ordinary_words_alone(text: str) -> None:
    """Random seeds, the verb "seed", identifiers, colours, anchors and version numbers are no citations."""
    assert list(citations(text)) == []


def test_a_page_path_must_exist_in_the_repository() -> None:
    """A ``*.md`` path is a citation unless the repository holds that page (or it is a listed outside page)."""
    text = "see docs/reliability.md, [format](format-v2.md), ../README.md, reliability.md and notes/plan.md"
    assert [page for _, _, page in missing_pages(text, "docs/cli.md")] == ["notes/plan.md"]
    assert [page for _, _, page in missing_pages("google-gemini/gemini-cli docs/hooks/reference.md", "cli/x.py")] == [
        "docs/hooks/reference.md"
    ]
    assert list(missing_pages("docs/hooks/reference.md", "ledger/capture/gemini.py")) == []


def test_the_findings_name_the_file_line_and_text(tmp_path: Path) -> None:
    """A finding in a file reads ``file:line: [rules] 'words' in: the line``, one per line that cites."""
    (tmp_path / "docs").mkdir()
    page = tmp_path / "docs" / "page.md"
    page.write_text("# A page\n\nLeases (issue\n13) and [the notes](notes.md).\n", encoding="utf-8")
    assert [str(f) for f in scan_file(page, tmp_path)] == [
        "docs/page.md:3: [issue-number] 'issue 13' in: Leases (issue",
        "docs/page.md:4: [missing-page] 'notes.md' in: 13) and [the notes](notes.md).",
    ]
    page.write_text("See DESIGN.md (seed 001 section 9.3).\n", encoding="utf-8")
    assert [str(f) for f in scan_file(page, tmp_path)] == [
        "docs/page.md:1: [design-doc, missing-page, seed-number, section-number] 'DESIGN', 'DESIGN.md', 'seed 001', "
        "'section 9.3' in: See DESIGN.md (seed 001 section 9.3).",
    ]
