"""Where runs live by default, for the front doors that name runs by id (the MCP server, agent hooks).

A run id names ``<runs folder>/<run id>.jsonl``. The runs folder is the one given, else
``$PLANTRAIL_HOME/runs``, else ``.plantrail/runs`` under the working directory (for a hook: the directory
the agent reports). A run id is checked like every id (letters, digits, ``.``, ``_``, ``-``; no ``/``), so
it never escapes its folder.
"""

from __future__ import annotations

import os
from pathlib import Path

from plantrail.ledger.errors import error
from plantrail.ledger.plan import check_id

__all__ = ["HOME_ENV", "run_path", "runs_folder"]

HOME_ENV = "PLANTRAIL_HOME"


def runs_folder(given: str | os.PathLike[str] | None = None, *, cwd: str | os.PathLike[str] | None = None) -> Path:
    """The folder runs live in: ``given``, else ``$PLANTRAIL_HOME/runs``, else ``<cwd>/.plantrail/runs``."""
    if given is not None:
        return Path(given)
    home = os.environ.get(HOME_ENV)
    if home:
        return Path(home) / "runs"
    return Path(cwd if cwd is not None else os.getcwd()) / ".plantrail" / "runs"


def run_path(folder: Path, run: str) -> Path:
    """The log of run ``run`` in ``folder``; a run id that is no id (``../x``, ``a/b``) is refused."""
    check_id(run, "run id")
    path = folder / f"{run}.jsonl"
    if path.parent != folder:  # check_id allows no separator; this is the invariant, said once more
        raise error("INVALID_ID", f"run id {run!r} would leave the runs folder", run=run)
    return path
