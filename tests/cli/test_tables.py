"""Terminal tables: columns by display width (CJK, emoji, combining marks) and one line per row."""

from __future__ import annotations

import pytest

from plantrail.cli.tables import align, cell, display_width, fit, table, truncate


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
