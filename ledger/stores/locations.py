"""Where runs live by default, for the front doors that name runs by id (the MCP server, agent hooks).

A run id names ``<runs folder>/<run id>.jsonl``. The runs folder is the one given, else
``$PLANTRAIL_HOME/runs``, else ``.plantrail/runs`` under the working directory (for a hook: the directory
the agent reports). A run id is checked like every id (letters, digits, ``.``, ``_``, ``-``; no ``/``), so
it never escapes its folder by its name; and it names only a regular file in the folder, or nothing yet: a
symbolic link there (to a file outside the folder, or to another run's log), a directory or a FIFO is
refused (NOT_A_FILE), never followed. Every way plantrail turns a run id into its log goes through
:func:`run_path` or :func:`run_file`.

A run's log ends with ``.jsonl``; no name plantrail keeps beside a log does (``<log>.plantrail-cache``,
``<log>.quarantine.<offset>.<time>.<tag>``, ``<log>.tmp.<pid>.<hex>``, ``<run>.blobs``), and each reader of
those names matches its own pattern in full, so another run's log, whatever its id, is never taken for one.
"""

from __future__ import annotations

import os
import stat
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
    _regular_or_absent(str(path), run)
    return path


def run_file(folder: str, run: str) -> str:
    """:func:`run_path` as a string, ``str(run_path(folder, run))``, without :mod:`pathlib` (which a hook call
    does not load: ~2.5 ms of its start-up)."""
    check_id(run, "run id")
    name = f"{run}.jsonl"
    if "/" in name:  # check_id allows no separator; this is the invariant, said once more
        raise error("INVALID_ID", f"run id {run!r} would leave the runs folder", run=run)
    path = child_path(pure_path(folder), name)
    _regular_or_absent(path, run)
    return path


def _regular_or_absent(path: str, run: str) -> None:
    """NOT_A_FILE unless the folder's entry for run ``run`` is a regular file or missing (one ``lstat``: a link is
    not followed). A run opened from its folder is then also opened without following a link (``FileRun``'s
    ``links=False``), so a link swapped in after this look is refused too."""
    try:
        st = os.lstat(path)
    except OSError:
        return  # nothing there yet (a run to create), or the open that follows reports why not
    if stat.S_ISREG(st.st_mode):
        return
    kind = "a symbolic link" if stat.S_ISLNK(st.st_mode) else "not a regular file"
    raise error(
        "NOT_A_FILE",
        f"run {run!r}: {path} is {kind}; a run id names only a regular file in its runs folder",
        run=run,
        path=path,
    )


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
