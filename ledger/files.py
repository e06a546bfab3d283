"""File helpers every part of plantrail that touches the file system shares: stable error codes for OS errors,
path checks, and durable directory entries."""

from __future__ import annotations

import errno
import os
import stat

from plantrail.ledger.errors import PlantrailError, error

__all__ = ["check_path", "folder_of", "fsync_dir", "os_error"]


def os_error(exc: OSError, path: str, what: str = "log") -> PlantrailError:
    """Map an OSError to the storage error with the right stable code."""
    reason = exc.strerror or str(exc)
    if exc.errno == errno.ENOENT:
        code = "LOG_NOT_FOUND" if what == "log" else "FILE_NOT_FOUND"
        return error(code, f"{what} {path} does not exist", path=path)
    if exc.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
        return error("PERMISSION_DENIED", f"cannot open {what} {path}: {reason}", path=path)
    if exc.errno in (errno.EISDIR, errno.ENOTDIR):
        return error("NOT_A_FILE", f"{what} {path} is not a regular file", path=path)
    if exc.errno in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG):
        return error("NO_SPACE", f"{what} {path}: {reason}", path=path, errno=exc.errno)
    return error("IO_ERROR", f"{what} {path}: {reason}", path=path, errno=exc.errno)


def check_path(path: str, what: str = "log") -> None:
    """Refuse a path no file can have (a NUL byte) as a usage error rather than a crash."""
    if "\0" in path:
        raise error("USAGE", f"the {what} path {path!r} contains a NUL byte", path=path)


def folder_of(path: str, what: str = "log") -> os.stat_result:
    """The folder a new file at ``path`` goes in; FOLDER_NOT_FOUND (naming it) when it does not exist."""
    folder = os.path.dirname(os.path.abspath(path))
    try:
        found = os.stat(folder)
    except FileNotFoundError:
        shown = os.path.dirname(path) or folder
        raise error(
            "FOLDER_NOT_FOUND",
            f"cannot create {what} {path}: the folder {shown} does not exist (create it first)",
            path=path,
            folder=shown,
        ) from None
    except NotADirectoryError:
        found = None
    except OSError as exc:
        raise os_error(exc, folder, "folder") from None
    if found is None or not stat.S_ISDIR(found.st_mode):
        shown = os.path.dirname(path) or folder
        raise error("NOT_A_FILE", f"cannot create {what} {path}: {shown} is not a folder", path=path, folder=shown)
    return found


def fsync_dir(path: str) -> None:
    """Make a directory entry durable (after create, link, rename or unlink)."""
    fd = os.open(os.path.dirname(os.path.abspath(path)), os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
