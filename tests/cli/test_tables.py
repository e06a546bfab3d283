"""Terminal tables: columns by display width (CJK, emoji, combining marks) and one line per row."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from plantrail.cli.tables import align, cell, display_width, fit, table, truncate, wrap


@pytest.mark.parametrize(
    ("text", "width"),
    [
        ("plain", 5),
        ("修复登录", 8),  # CJK: two columns each
        ("ｆｕｌｌ", 8),  # fullwidth Latin
        ("ok 😀", 5),  # an emoji takes two columns
        ("e\u0301te\u0301", 3),  # combining acute accents take none
        ("a\u200db", 2),  # a zero-width joiner takes none
        ("", 0),
    ],
)
def test_display_width_counts_terminal_columns(text: str, width: int) -> None:
    """Wide and fullwidth characters count two columns, combining and zero-width characters none."""
    assert display_width(text) == width


def test_a_cell_is_one_printable_line() -> None:
    """Newlines, tabs and terminal escapes in a cell are shown escaped, so a row stays one line."""
    assert cell("line one\nline two\tend\x1b[31m") == "line one\\nline two\\tend\\x1b[31m"
    assert cell(None) == "" and cell("修复") == "修复"


def test_fit_cuts_by_columns_and_never_splits_a_wide_character() -> None:
    """A cut text ends with an ellipsis and is at most the width asked, counted in columns."""
    cut = fit("修复登录失败并运行测试", 9)
    assert cut == "修复登录…" and display_width(cut) == 9
    assert fit("short", 9) == "short"
    assert truncate("a\nb", 10) == "a\\nb"


def test_a_table_aligns_columns_after_cjk_and_emoji_cells() -> None:
    """Every column starts at the same terminal column on every row, whatever script the cells are in."""
    rows = [["修复", "completed", "证据 ✅"], ["reproduce", "pending", "saved output"], ["😀x", "blocked", "-"]]
    lines = table(["STEP", "STATUS", "EVIDENCE"], rows).splitlines()
    body = [lines[0], *lines[2:]]
    assert len({_starts_at(line, cells[1]) for line, cells in zip(body, [["", "STATUS"], *rows], strict=True)}) == 1
    assert (
        len({_starts_at(line, cells[2]) for line, cells in zip(body, [["", "", "EVIDENCE"], *rows], strict=True)}) == 1
    )


def test_multi_line_text_stays_on_its_row() -> None:
    """A cell holding several lines of tool output adds no line to the table and keeps the columns aligned."""
    rows = [["fix", "pytest\n5 passed\n", "completed"], ["verify", "-", "pending"]]
    lines = table(["STEP", "EVIDENCE", "STATUS"], rows, last_flexible=False).splitlines()
    assert len(lines) == 4
    assert "pytest\\n5 passed\\n" in lines[2]
    assert _starts_at(lines[2], "completed") == _starts_at(lines[3], "pending") == _starts_at(lines[0], "STATUS")


def test_align_pads_by_display_width() -> None:
    """Rows without a header line up by columns too."""
    lines = align([["修复", "a"], ["ab", "b"]])
    assert _starts_at(lines[0], "a") == _starts_at(lines[1], "b") == 8


def _starts_at(line: str, text: str) -> int:
    """The terminal column where ``text`` starts in ``line`` (searched from the right, after the first cell)."""
    return display_width(line[: line.rindex(text)])


def test_a_huge_cell_is_cut_before_it_is_escaped() -> None:
    """A megabyte of multi-line evidence becomes one bounded cell ending with an ellipsis: a table never shows
    more than a terminal's width, so it never escapes more than that."""
    from plantrail.cli.tables import CELL_MOST, cell

    shown = cell("line\n" * 200_000)
    assert shown.endswith("…") and "\n" not in shown
    assert len(shown) <= 2 * CELL_MOST and shown.startswith("line\\nline\\n")
    assert cell("short\ttext") == "short\\ttext"


# --------------------------------------------------------------------------- fitting the screen


@pytest.fixture
def layout() -> Iterator[Callable[..., None]]:
    """Set the layout (as --width and --wrap do) for one test, and forget it afterwards."""
    from plantrail.cli.terminal import reset_layout, set_layout

    yield set_layout
    reset_layout()


LONG_IDS = [
    ["reproduce-the-login-failure-on-the-staging-cluster", "a long title that may be cut or wrapped", "x" * 30],
    ["fix", "short", "-"],
]


@pytest.mark.parametrize("width", [20, 40, 60, 200])
@pytest.mark.parametrize("wrap", [False, True])
def test_no_width_cuts_an_id(layout: Callable[..., None], width: int, wrap: bool) -> None:
    """Ids and id lists stay whole at every width, wrapped or not: only text columns give way (the row is
    wider than the screen when nothing else can give)."""
    layout(width=width, wrap=wrap)
    deps = "reproduce-the-login-failure-on-the-staging-cluster, fix, check-timeout"
    rows = [[*LONG_IDS[0], deps], [*LONG_IDS[1], "-"]]
    out = table(["STEP", "TITLE", "EVIDENCE", "DEPENDS ON"], rows, texts=(1, 2), lists=(3,))
    words = out.split()
    assert "reproduce-the-login-failure-on-the-staging-cluster" in words
    assert (
        words.count("reproduce-the-login-failure-on-the-staging-cluster")
        + words.count("reproduce-the-login-failure-on-the-staging-cluster,")
        == 2
    )
    assert {"fix", "fix,"} & set(words) and {"check-timeout", "check-timeout,"} & set(words)


def test_a_table_uses_the_width_it_is_given(layout: Callable[..., None]) -> None:
    """Text columns narrow to fit the width, the rightmost first; at 160 columns a 60-column title is whole."""
    title = "Reproduce the login failure on staging and save the trace nw"  # 60 characters
    assert len(title) == 60
    rows = [["reproduce", title, "completed", "saved output " * 10]]
    layout(width=160)
    wide = table(["STEP", "TITLE", "STATUS", "EVIDENCE"], rows, texts=(1, 3))
    assert title in wide and max(display_width(line) for line in wide.splitlines()) <= 160
    layout(width=60)
    narrow = table(["STEP", "TITLE", "STATUS", "EVIDENCE"], rows, texts=(1, 3))
    assert title not in narrow and max(display_width(line) for line in narrow.splitlines()) <= 60


def test_wrap_keeps_every_word(layout: Callable[..., None]) -> None:
    """With --wrap a long text takes more lines of its column instead of an ellipsis; the other columns stay on
    the row's first line."""
    text = "npm test -- tests/login.test.ts: 1 failed: POST /api/login expected 200, got 500"
    layout(width=50, wrap=True)
    lines = table(["STEP", "STATUS", "EVIDENCE"], [["reproduce", "completed", text], ["fix", "pending", "-"]])
    assert "…" not in lines
    body = lines.splitlines()[2:]
    assert body[0].split()[:2] == ["reproduce", "completed"] and body[-1].split() == ["fix", "pending", "-"]
    assert " ".join(" ".join(line.split()) for line in body[:-1]).split()[2:] == text.split()
    assert max(display_width(line) for line in body) <= 50


def test_wrap_breaks_a_word_wider_than_its_column() -> None:
    """A word wider than the column is broken where the column ends; nothing is lost."""
    assert wrap("a " + "b" * 25, 10) == ["a", "b" * 10, "b" * 10, "b" * 5]
    assert wrap("修复登录失败", 5) == ["修复", "登录", "失败"]


@pytest.mark.parametrize(
    ("environment", "option", "expected"),
    [({"COLUMNS": "133"}, 90, 90), ({"COLUMNS": "133"}, None, 133), ({}, None, 80), ({"COLUMNS": "x"}, None, 80)],
)
def test_the_width_comes_from_the_option_then_columns_then_80(
    monkeypatch: pytest.MonkeyPatch,
    layout: Callable[..., None],
    environment: dict[str, str],
    option: int | None,
    expected: int,
) -> None:
    """--width wins, then COLUMNS, then the terminal (none here), then 80."""
    import os

    from plantrail.cli.terminal import columns

    def no_terminal(fd: int = 1) -> os.terminal_size:
        raise OSError("not a terminal")

    monkeypatch.setattr(os, "get_terminal_size", no_terminal)
    monkeypatch.delenv("COLUMNS", raising=False)
    for name, value in environment.items():
        monkeypatch.setenv(name, value)
    layout(width=option)
    assert columns() == expected


def test_a_list_of_ids_in_versions_and_diff_wraps_between_ids(layout: Callable[..., None]) -> None:
    """versions and diff list kept, added and removed ids over lines of the width, whole, and count what is
    past a few lines instead of cutting an id."""
    from plantrail.cli.replay import _listing

    ids = [f"step-with-a-rather-long-id-{n:02d}" for n in range(30)]
    layout(width=50)
    lines = _listing("added", ids[:3])
    assert [w.rstrip(",") for line in lines for w in line.split() if w != "added:"] == ids[:3]
    assert all(display_width(line) <= 50 for line in lines)
    many = _listing("added", ids)
    assert len(many) == 5 and many[-1].strip() == "... and 26 more (--json lists them all)"
    assert all(w.rstrip(",") in ids for line in many[:4] for w in line.split() if w != "added:")


def test_a_wrapped_cell_still_shows_control_characters_escaped(layout: Callable[..., None]) -> None:
    """Wrapping comes after escaping: an escape sequence in evidence is shown as text on whichever line it
    falls, never sent to the terminal, and a newline in it adds no row of its own making."""
    layout(width=30, wrap=True)
    out = table(["STEP", "EVIDENCE"], [["fix", "ok \x1b[2J\x1b]0;owned\x07 and\nmore " * 3]])
    assert "\x1b" not in out and "\x07" not in out
    assert "".join(line[len("  fix  ") :].strip() for line in out.splitlines()[2:]).count("\\x1b") == 6
