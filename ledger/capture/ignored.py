"""A project's ``.plantrail/`` kept out of its git repository: the first write under a project makes
``.plantrail/.gitignore`` ignoring everything in the folder (itself included), so that a hook call or a plan
server answer never shows up in ``git status``.

A ``.gitignore`` already there is the user's and is left as it is; so is anything planted in its place (a link,
a FIFO): the file is made only when nothing is at its name, created exclusive, never written through a link.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from plantrail.ledger.stores.owned import Folder

__all__ = ["GITIGNORE", "IGNORE_ALL", "keep_out_of_git", "keep_project_folder_out_of_git"]

GITIGNORE = ".gitignore"
#: What the file says: every name in the folder, the file itself among them.
IGNORE_ALL = b"# made by plantrail: nothing in this folder belongs in the repository\n*\n"


def keep_out_of_git(folder: Folder) -> None:
    """Make ``.gitignore`` in the held ``.plantrail`` folder when nothing is at that name (see the module)."""
    from plantrail.ledger.vocabulary.errors import PlantrailError

    if folder.lstat(GITIGNORE) is not None:
        return
    try:
        fd = folder.open_file(GITIGNORE, write=True, create=True, mode=0o644, what="plantrail .gitignore")
    except PlantrailError:
        return  # made by another writer since, or planted: either way not ours to write
    try:
        if os.fstat(fd).st_size == 0:
            os.write(fd, IGNORE_ALL)
    finally:
        os.close(fd)


def keep_project_folder_out_of_git(path: str | os.PathLike[str]) -> None:
    """:func:`keep_out_of_git` for the ``.plantrail`` folder at ``path`` (made when missing)."""
    from plantrail.ledger.stores.owned import Folder

    with Folder.open(os.fspath(path), create=True, what="plantrail folder") as folder:
        keep_out_of_git(folder)
