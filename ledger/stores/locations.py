"""Where runs live by default, for the front doors that name runs by id (the MCP server, agent hooks).

A run id names ``<runs folder>/<run id>.jsonl``. The runs folder is the one given, else
``$PLANTRAIL_HOME/runs``, else ``.plantrail/runs`` under the working directory (for a hook: the directory
the agent reports). A run id is checked like every id (letters, digits, ``.``, ``_``, ``-``; no ``/``), so
it never escapes its folder.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from plantrail.ledger.vocabulary.arguments import strict
from plantrail.ledger.vocabulary.errors import error
from plantrail.ledger.vocabulary.plan import check_id

if TYPE_CHECKING:
    from pathlib import Path

__all__ = ["HOME_ENV", "child_path", "default_run_id", "pure_path", "run_file", "run_path", "runs_folder"]

HOME_ENV = "PLANTRAIL_HOME"


def runs_folder(given: str | os.PathLike[str] | None = None, *, cwd: str | os.PathLike[str] | None = None) -> Path:
    """The folder runs live in: ``given``, else ``$PLANTRAIL_HOME/runs``, else ``<cwd>/.plantrail/runs``."""
    from pathlib import Path

    if given is not None:
        return Path(given)
    home = os.environ.get(HOME_ENV)
    if home:
        return Path(home) / "runs"
    return Path(cwd if cwd is not None else os.getcwd()) / ".plantrail" / "runs"


def run_path(folder: str | os.PathLike[str], run: str) -> Path:
    """The log of run ``run`` in ``folder``; a run id that is no id (``../x``, ``a/b``) is refused."""
    from pathlib import Path

    base = Path(folder)
    check_id(run, "run id")
    path = base / f"{run}.jsonl"
    if path.parent != base:  # check_id allows no separator; this is the invariant, said once more
        raise error("INVALID_ID", f"run id {run!r} would leave the runs folder", run=run)
    return path


def run_file(folder: str, run: str) -> str:
    """:func:`run_path` as a string, ``str(run_path(folder, run))``, without :mod:`pathlib` (which a hook call
    does not load: ~2.5 ms of its start-up)."""
    check_id(run, "run id")
    name = f"{run}.jsonl"
    if "/" in name:  # check_id allows no separator; this is the invariant, said once more
        raise error("INVALID_ID", f"run id {run!r} would leave the runs folder", run=run)
    return child_path(pure_path(folder), name)


def pure_path(path: str) -> str:
    """``str(pathlib.PurePosixPath(path))`` without :mod:`pathlib`: empty and ``.`` parts and repeated or
    trailing slashes dropped (two leading slashes, and only two, are kept, as POSIX allows), ``.`` for
    nothing; ``..`` is left as it is."""
    root = ("//" if path[:2] == "//" and path[:3] != "///" else "/") if path.startswith("/") else ""
    parts = [part for part in path.split("/") if part and part != "."]
    return root + "/".join(parts) if root or parts else "."


def child_path(folder: str, *names: str) -> str:
    """``str(PurePosixPath(folder, *names))`` for a ``folder`` :func:`pure_path` gave and ``names`` that are
    plain file names (no ``/``, neither empty nor ``.``)."""
    if folder == ".":
        return "/".join(names)
    return (folder if folder.endswith("/") else folder + "/") + "/".join(names)


@strict
def default_run_id(path: str | os.PathLike[str]) -> str:
    """The run id a log gets when none is given: its file name without ``.jsonl``."""
    name = os.path.basename(os.fspath(path))
    return name[: -len(".jsonl")] if name.endswith(".jsonl") else name
