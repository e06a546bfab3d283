"""File helpers every part of plantrail that touches the file system shares: stable error codes for OS errors,
path checks, durable directory entries, and reading an input without hanging or exhausting the machine.

Every path plantrail opens to read goes through :func:`open_regular`: the open never blocks (a FIFO would
block before any check could run), and anything but a regular file is refused with NOT_A_FILE. Inputs
(drafts, patches, key files, transcripts) are read through :func:`read_capped` or :func:`open_capped`,
which read at most the input's cap plus one byte and refuse a larger input with INPUT_TOO_LARGE (the caps
are in :mod:`ledger.vocabulary.limits`).
"""

from __future__ import annotations

import errno
import fcntl
import io
import os
import stat
import sys
import time
from typing import BinaryIO, Final

from plantrail.ledger.vocabulary.errors import PlantrailError, error
from plantrail.ledger.vocabulary.limits import Limit

__all__ = [
    "LOCK_TIMEOUT_ENV",
    "check_path",
    "folder_of",
    "fsync_dir",
    "lock_timeout",
    "open_capped",
    "open_regular",
    "os_error",
    "read_capped",
    "read_regular",
    "read_upto",
    "shared_lock_within",
]

#: Seconds a reader waits for a writer's lock before giving up with LOCK_TIMEOUT (default 10).
LOCK_TIMEOUT_ENV: Final = "PLANTRAIL_LOCK_TIMEOUT"
_DEFAULT_LOCK_TIMEOUT: Final = 10.0
#: Opening a file plantrail did not create: never through a symlink, never blocking on a FIFO.
_SAFE_READ: Final = os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC


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


def open_regular(path: str, flags: int = os.O_RDONLY, what: str = "log") -> int:
    """Open ``path`` (a descriptor) only if it is a regular file, without ever blocking in ``open``.

    The open carries ``O_NONBLOCK`` (a FIFO or a device would otherwise block before it could be checked)
    and ``O_NOCTTY``; once ``fstat`` shows a regular file, ``O_NONBLOCK`` is cleared again. NOT_A_FILE for
    anything else (a FIFO, a device such as ``/dev/zero``, a socket, a directory).
    """
    check_path(path, what)
    try:
        fd = os.open(path, flags | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    except OSError as exc:
        raise os_error(exc, path, what) from None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise error("NOT_A_FILE", f"{what} {path} is not a regular file", path=path)
        fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) & ~os.O_NONBLOCK)
    except BaseException:
        os.close(fd)
        raise
    return fd


def read_capped(path: str, limit: Limit) -> bytes:
    """The whole of an input file (``-``: standard input), reading at most its cap plus one byte.

    INPUT_TOO_LARGE when it holds more than ``limit.cap()`` bytes (a regular file is refused from its size
    before a byte is read); NOT_A_FILE for a path that is not a regular file.
    """
    with open_capped(path, limit) as f:
        return f.read()


def open_capped(path: str, limit: Limit) -> BinaryIO:
    """A buffered binary reader of an input file (``-``: standard input) that refuses, with INPUT_TOO_LARGE,
    to deliver more than ``limit.cap()`` bytes: it never reads more than the cap plus one byte."""
    cap = limit.cap()
    if path == "-":
        try:
            fd = os.dup(sys.stdin.fileno())
        except (OSError, ValueError) as exc:  # no standard input at all (closed)
            raise error("USAGE", f"cannot read the {limit.what} from standard input: {exc}") from None
    else:
        fd = open_regular(path, os.O_RDONLY, limit.what)
        try:
            size = os.fstat(fd).st_size
        except OSError as exc:
            os.close(fd)
            raise os_error(exc, path, limit.what) from None
        if size > cap:
            os.close(fd)
            raise _too_large(path, limit, cap)
    return io.BufferedReader(_CappedReader(fd, path, limit, cap))


def _too_large(path: str, limit: Limit, cap: int) -> PlantrailError:
    where = "on standard input" if path == "-" else path
    return error(
        "INPUT_TOO_LARGE",
        f"the {limit.what} {where} is larger than {cap:,} bytes, the limit for a {limit.what} "
        f"(set ${limit.env} to change it)",
        path=path,
        limit=cap,
    )


class _CappedReader(io.RawIOBase):
    """A raw reader over a descriptor it owns that raises INPUT_TOO_LARGE once more than ``cap`` bytes came."""

    def __init__(self, fd: int, path: str, limit: Limit, cap: int) -> None:
        super().__init__()
        self._fd = fd
        self._path = path
        self._limit = limit
        self._left = cap + 1  # one byte more than allowed tells "exactly the cap" from "more"
        self._cap = cap

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: bytearray | memoryview) -> int:  # type: ignore[override]  # io's own signature
        view = memoryview(buffer).cast("B")
        want = min(len(view), self._left)
        if want == 0:
            return 0
        try:
            got = os.readv(self._fd, [view[:want]])
        except OSError as exc:
            raise os_error(exc, self._path, self._limit.what) from None
        self._left -= got
        if self._left == 0:
            raise _too_large(self._path, self._limit, self._cap)
        return got

    def close(self) -> None:
        if not self.closed:
            os.close(self._fd)
        super().close()


def lock_timeout() -> float:
    """How long a reader waits for the writer lock: ``$PLANTRAIL_LOCK_TIMEOUT`` seconds, else 10."""
    text = os.environ.get(LOCK_TIMEOUT_ENV, "")
    try:
        value = float(text) if text else _DEFAULT_LOCK_TIMEOUT
    except ValueError:
        raise error("USAGE", f"${LOCK_TIMEOUT_ENV} must be a number of seconds, not {text!r}") from None
    if not value >= 0:  # also refuses NaN
        raise error("USAGE", f"${LOCK_TIMEOUT_ENV} must be a number of seconds, not {text!r}")
    return value


def shared_lock_within(fd: int, path: str, why: str) -> None:
    """Take a shared ``flock`` on ``fd``, waiting at most :func:`lock_timeout` seconds; LOCK_TIMEOUT after that
    (a writer that is stopped or hung holds the lock; ``why`` says what the lock was needed for)."""
    limit = lock_timeout()
    deadline = time.monotonic() + limit
    pause = 0.001
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            pass
        now = time.monotonic()
        if now >= deadline:
            raise error(
                "LOCK_TIMEOUT",
                f"another process has held the lock on {path} for over {limit:g} s ({why}); is a writer stopped? "
                f"(wait longer with {LOCK_TIMEOUT_ENV}=SECONDS)",
                path=path,
                seconds=limit,
            )
        time.sleep(min(pause, deadline - now))
        pause = min(pause * 2, 0.05)


def read_regular(path: str, limit: int, *, dir_fd: int | None = None, private: bool = False) -> bytes | None:
    """The bytes of ``path`` when it is a regular file (not a symlink, FIFO or device) owned by this user and
    at most ``limit`` bytes (with ``private``, also with no group or other permission bits); else None."""
    try:
        fd = os.open(path, os.O_RDONLY | _SAFE_READ, dir_fd=dir_fd)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_uid != os.geteuid() or st.st_size > limit:
            return None
        if private and st.st_mode & 0o077:
            return None
        data = read_upto(fd, limit + 1)
        return None if len(data) > limit else data
    except OSError:
        return None
    finally:
        os.close(fd)


def read_upto(fd: int, limit: int) -> bytes:
    """At most ``limit`` bytes read from ``fd`` to its end, in chunks of at most 8 MiB."""
    parts: list[bytes] = []
    left = limit
    while left > 0:
        chunk = os.read(fd, min(left, 8 << 20))
        if not chunk:
            break
        parts.append(chunk)
        left -= len(chunk)
    return b"".join(parts)
