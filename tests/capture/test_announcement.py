"""The run a session-start hook announces for a project, as the plan server reads it back."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from plantrail.ledger.capture.announcement import ANNOUNCED_FILE, Announcement, announce, announced


def _one(run: str = "sess-1") -> Announcement:
    return Announcement(run=run, session=run, agent="claude-code", at="2026-12-04T00:00:00Z")


def test_an_announcement_is_read_back_and_the_latest_wins(tmp_path: Path) -> None:
    folder = tmp_path / ".plantrail"
    assert announced(folder) is None
    announce(folder, _one("sess-1"))
    announce(folder, _one("sess-2"))
    assert announced(folder) == _one("sess-2")
    assert sorted(os.listdir(folder / "capture")) == [ANNOUNCED_FILE]  # no temporary file left behind


@pytest.mark.parametrize(
    "content",
    [b"", b"{", b"[]", b'{"run": "../etc", "session": "s", "agent": "a", "at": "t"}', b'{"run": 1}', b"\xff" * 10],
)
def test_an_unreadable_announcement_counts_as_none(tmp_path: Path, content: bytes) -> None:
    (tmp_path / "capture").mkdir()
    (tmp_path / "capture" / ANNOUNCED_FILE).write_bytes(content)
    assert announced(tmp_path) is None


def test_a_link_in_place_of_the_announcement_is_never_followed(tmp_path: Path) -> None:
    (tmp_path / "capture").mkdir()
    target = tmp_path / "elsewhere.json"
    target.write_bytes(b'{"run": "planted", "session": "planted", "agent": "a", "at": "t"}')
    (tmp_path / "capture" / ANNOUNCED_FILE).symlink_to(target)
    assert announced(tmp_path) is None
    with pytest.raises(Exception) as refused:
        announce(tmp_path, _one())
    assert getattr(refused.value, "code", None) == "NOT_A_FILE"
    assert target.read_bytes().startswith(b'{"run": "planted"')
