"""The run a session-start hook announced for a project: how the plan server finds the run of the session.

One agent session is one run, named by the session id. The session-start hook tells the model that id and
writes it down here, in ``capture/announced.json`` under the project's plantrail folder (``$PLANTRAIL_HOME``,
else ``<project>/.plantrail``); the plan server, called with no run or with a run id that names no run, uses the
run announced last for the project it was started in. Several sessions at once in one project each announce
their own run: the latest announcement wins, which is why the hook also tells the model to pass its run id.

The file is small JSON (``{"run": ID, "session": ID, "agent": NAME, "at": TIME}``), replaced whole (a fresh
temporary file renamed over it), never followed through a link; anything unreadable in it counts as no
announcement.
"""

from __future__ import annotations

import os

import msgspec

from plantrail.ledger.capture.journal import CAPTURE_FOLDER

__all__ = ["ANNOUNCED_FILE", "Announcement", "announce", "announced"]

ANNOUNCED_FILE = "announced.json"
_LIMIT = 4096


class Announcement(msgspec.Struct, frozen=True, kw_only=True):
    """One announcement: the run, the session that announced it, the agent (``claude-code``, ``gemini``…) and when."""

    run: str
    session: str
    agent: str
    at: str


def announce(plantrail_folder: str | os.PathLike[str], announcement: Announcement) -> None:
    """Write ``announcement`` as the project's latest (its capture folder made when missing, never through a
    link)."""
    from plantrail.ledger.stores.owned import Folder

    with (
        Folder.open(os.fspath(plantrail_folder), create=True, what="plantrail folder") as root,
        root.folder(CAPTURE_FOLDER, create=True, what="capture folder") as capture,
    ):
        capture.replace(ANNOUNCED_FILE, msgspec.json.encode(announcement), what="announcement")


def announced(plantrail_folder: str | os.PathLike[str]) -> Announcement | None:
    """The project's latest announcement, or None when there is none or it cannot be read as one (a run id
    that is no valid id counts as none)."""
    from plantrail.ledger.stores.owned import Folder
    from plantrail.ledger.vocabulary.errors import PlantrailError
    from plantrail.ledger.vocabulary.plan import check_id

    try:
        with (
            Folder.open(os.fspath(plantrail_folder), what="plantrail folder") as root,
            root.folder(CAPTURE_FOLDER, what="capture folder") as capture,
        ):
            raw = capture.read(ANNOUNCED_FILE, _LIMIT, what="announcement")
    except PlantrailError:
        return None
    if raw is None:
        return None
    try:
        found = msgspec.json.decode(raw, type=Announcement)
        check_id(found.run, "announced run")
        check_id(found.session, "announced session")
    except (msgspec.DecodeError, PlantrailError):
        return None
    return found
