"""Which run a plan server call is about: the run it names, else the run the session-start hook announced for
the project the server runs in.

One agent session is one run. The session-start hook tells the model its run id and writes it down for the
project (:mod:`plantrail.ledger.capture.announcement`); a call that names no run, or a run id that names no run
yet, goes to that announced run when there is one. A call that names no run when none was announced is refused,
telling the model to pass one (any id it chooses); an id that is no valid id is refused as such, never replaced.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

__all__ = ["chosen_run"]


def chosen_run(given: Any, exists: Callable[[str], bool], cwd: str | None = None) -> str:
    """The run a call means: ``given`` when it names a run that ``exists``; else the run announced for the project
    at ``cwd`` (default: the working directory); else ``given`` (a new run of that id). INVALID_ID for a given
    id that is no valid id, USAGE when none is given and none was announced."""
    from plantrail.ledger.vocabulary.errors import error
    from plantrail.ledger.vocabulary.plan import check_id

    if given is not None:
        check_id(given, "run id")
        if exists(given):
            return str(given)
    from plantrail.ledger.capture.announcement import announced
    from plantrail.ledger.capture.hook import plantrail_folder

    found = announced(plantrail_folder(cwd if cwd is not None else os.getcwd()))
    if found is not None:
        return found.run
    if given is None:
        raise error("USAGE", "no run given, and no session announced one for this project")
    return str(given)
