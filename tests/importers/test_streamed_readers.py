"""The streamed readers of transcripts give what reading the whole file at once gave: a JSON document's items
and members, a Markdown export's lines and markers, a section's words as a prompt shows them, and the skip
counts of a transcript's lines."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from plantrail.ledger.importers import gemini, opencode_markdown
from plantrail.ledger.importers._records import JsonStream, Tally, TextLines, Words, clip, with_prompt
from plantrail.ledger.vocabulary.errors import PlantrailError

_SCALARS = st.none() | st.booleans() | st.integers(-(2**62), 2**62) | st.text(max_size=6)
_VALUES = st.recursive(
    _SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=4), inner, max_size=4),
    max_leaves=12,
)


def _stream(tmp_path: Path, blob: bytes, key: str | None, read_size: int) -> tuple[str | None, Any, list[Any]]:
    path = tmp_path / "document.json"
    path.write_bytes(blob)
    stream = JsonStream(path, "test")
    stream.read_size = read_size
    items = list(stream.items(key))
    return stream.kind, stream.members, items


@settings(max_examples=200, deadline=None)
@given(
    document=st.dictionaries(st.text(max_size=4), _VALUES, max_size=4) | st.lists(_VALUES, max_size=5),
    messages=st.lists(_VALUES, max_size=5),
    read_size=st.integers(1, 9),
    spaced=st.booleans(),
)
def test_a_streamed_json_document_gives_what_the_whole_parse_gives(
    tmp_path_factory: pytest.TempPathFactory, document: Any, messages: list[Any], read_size: int, spaced: bool
) -> None:
    """Read a few bytes at a time, a document's message array comes item by item and its other members whole,
    equal to orjson's parse of the whole file."""
    if isinstance(document, dict):
        document = {**document, "messages": messages}
    blob = orjson.dumps(document, option=orjson.OPT_INDENT_2 if spaced else 0)
    kind, members, items = _stream(tmp_path_factory.mktemp("s"), blob, "messages", read_size)
    if isinstance(document, dict):
        assert (kind, {**members, "messages": items}) == ("object", document)
    else:
        assert (kind, items) == ("array", document)


@pytest.mark.parametrize(
    "blob",
    [b'{"a":1,}', b"[1,2", b'{"messages":[1,2]} x', b"[1 2]", b'{"a" 1}', b'{"messages":["a\\"]', b"", b"{"],
)
def test_a_file_that_is_not_one_json_value_is_not_a_transcript(tmp_path: Path, blob: bytes) -> None:
    """A document the whole parse refuses is NOT_A_TRANSCRIPT when the stream reaches its fault."""
    with pytest.raises(ValueError):
        orjson.loads(blob)
    with pytest.raises(PlantrailError) as caught:
        _stream(tmp_path, blob, "messages", 3)
    assert caught.value.code == "NOT_A_TRANSCRIPT"


_TEXT = st.text(alphabet="ab #*:`\n\r\u2028-", max_size=60)


@settings(max_examples=200, deadline=None)
@given(text=_TEXT)
def test_a_markdown_export_streamed_gives_the_lines_and_markers_of_its_text(
    tmp_path_factory: pytest.TempPathFactory, text: str
) -> None:
    """TextLines gives str.splitlines of the whole text, and its markers say what is_export and is_share said of
    it."""
    path = tmp_path_factory.mktemp("t") / "export.md"
    path.write_bytes(text.encode())
    markers = {**{f"o-{k}": v for k, v in opencode_markdown.MARKERS.items()}}
    markers |= {f"g-{k}": v for k, v in gemini.SHARE_MARKERS.items()}
    source = TextLines(path, markers)
    assert list(source) == text.splitlines() and source.count == len(text.splitlines())
    found = {name.split("-", 1)[1] for name in source.found if name.startswith("o-")}
    assert opencode_markdown.found_export(found) is opencode_markdown.is_export(text)
    found = {name.split("-", 1)[1] for name in source.found if name.startswith("g-")}
    assert gemini.found_share(found) is gemini.is_share(text)


@settings(max_examples=300, deadline=None)
@given(lines=st.lists(st.text(alphabet="a \t", max_size=400) | st.just(""), max_size=30))
def test_a_sections_words_are_kept_only_as_far_as_a_prompt_shows_them(lines: list[str]) -> None:
    """Words gives clip and with_prompt what the section's whole text gave them, and is empty exactly when it
    is."""
    words = Words()
    for line in lines:
        words.add(line)
    whole = "\n".join(lines).strip()
    kept = words.text().strip()
    assert bool(kept) is bool(whole)
    assert clip(kept) == clip(whole)
    assert with_prompt((), kept, 1) == with_prompt((), whole, 1)


def test_a_tally_counts_each_skipped_line_once_under_its_first_reason() -> None:
    """A line skipped twice in a row counts once, under its first reason; the tally keeps counts, not lines."""
    tally = Tally()
    for line, reason in [(1, "blank_line"), (2, "invalid_json"), (2, "unknown_record_type"), (5, "blank_line")]:
        tally.skip(line, reason)
    assert dict(tally.reasons()) == {"blank_line": 2, "invalid_json": 1}
    assert tally.lines_skipped == 3
