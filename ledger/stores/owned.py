"""Files in folders plantrail does not own: a project's ``.plantrail/`` (the hooks' journals, their mapping
state, the error file, the runs folder) and an agent's settings folder.

A project folder is someone else's: a cloned repository can ship anything in ``.plantrail/``, a link, a FIFO,
a file where a folder goes. So in such a folder plantrail reaches every name through :class:`Folder`, which
holds the folder open (a descriptor) and names each file relative to it:

* **Folders** below the one the caller trusts are opened with ``O_NOFOLLOW | O_DIRECTORY``, and made with
  ``mkdirat`` when missing: a link, a file or a FIFO planted in a folder's place is refused (NOT_A_FILE),
  never followed or created through.
* **Opening** a file is ``O_NOFOLLOW | O_NONBLOCK`` (a link is refused, a FIFO or a device cannot block the
  open), then ``fstat``: only a regular file is used (NOT_A_FILE for anything else), and one that is written
  in place (an append) only while it has one name (a hard link planted to a file elsewhere is refused).
* **Creating** a file is ``O_CREAT | O_EXCL | O_NOFOLLOW``, never anything that could open a planted name.
* **Replacing** a file whole (:meth:`Folder.replace`) writes a fresh temporary name (created exclusive,
  written, fsynced), checks the target is a regular file or absent, and renames the temporary name over
  it: a rename replaces the name itself, never what a link would point to.

The checks are made on what is there when plantrail looks; the threat is what a folder holds (files
planted before plantrail runs), not a process that swaps names while it runs.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import stat
from typing import Final

from plantrail.ledger.vocabulary.errors import PlantrailError, error

from .files import check_path, os_error

__all__ = ["Folder", "read_descriptor"]

_DIRECTORY: Final = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_NO_FOLLOW: Final = os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC
_CHUNK: Final = 8 << 20


class Folder:
    """A folder held open by its descriptor; every name in it is a plain file name, reached relative to it.

    Use as a context manager (or :meth:`close` it); ``path`` is how messages name it.
    """

    def __init__(self, fd: int, path: str) -> None:
        self.fd = fd
        self.path = path

    # ------------------------------------------------------------------ opening folders

    @classmethod
    def open(cls, path: str, *, create: bool = False, what: str = "folder") -> Folder:
        """The folder at ``path`` as the caller names it (a link on the way is followed: the caller chose
        the path), made with its missing parents when ``create``; a planted file or a dangling link where a
        missing folder would be made is refused (NOT_A_FILE)."""
        check_path(path, what)
        try:
            return cls(os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NONBLOCK | os.O_CLOEXEC), path)
        except FileNotFoundError:
            if not create:
                raise os_error(FileNotFoundError(errno.ENOENT, "missing"), path, what) from None
        except OSError as exc:
            raise _refused(exc, path, what, folder=True) from None
        parent, name = os.path.split(path.rstrip("/") or "/")
        if not name or name in (".", ".."):
            raise error("FOLDER_NOT_FOUND", f"the {what} {path} does not exist", path=path, folder=path)
        with cls.open(parent or ".", create=True, what=what) as above:
            made = above.folder(name, create=True, what=what)
        made.path = path
        return made

    def folder(self, name: str, *, create: bool = False, mode: int = 0o777, what: str = "folder") -> Folder:
        """The sub-folder ``name``, never through a link (made with ``mode``, less the umask, when missing and
        ``create``);
        NOT_A_FILE when a file, a link or anything but a folder is in its place."""
        path = self.child(name)
        _plain(name, path, what)
        if create:
            try:
                os.mkdir(name, mode, dir_fd=self.fd)
            except FileExistsError:
                pass
            except OSError as exc:
                raise _refused(exc, path, what, folder=True) from None
        try:
            return Folder(os.open(name, _DIRECTORY, dir_fd=self.fd), path)
        except OSError as exc:
            raise _refused(exc, path, what, folder=True) from None

    # ------------------------------------------------------------------ files

    def child(self, name: str) -> str:
        """How messages name ``name`` in this folder."""
        return os.path.join(self.path, name)

    def lstat(self, name: str) -> os.stat_result | None:
        """What is at ``name`` itself (a link is not followed); None when nothing is."""
        try:
            return os.stat(name, dir_fd=self.fd, follow_symlinks=False)
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise os_error(exc, self.child(name), "file") from None

    def open_file(
        self,
        name: str,
        *,
        write: bool = False,
        append: bool = False,
        create: bool = False,
        mode: int = 0o666,
        what: str = "file",
    ) -> int:
        """A descriptor for the regular file ``name`` (read-only, or read-write with ``write``, appending
        with ``append``), made (exclusive, with ``mode`` less the umask) when missing and ``create``;
        FILE_NOT_FOUND when missing otherwise, NOT_A_FILE for a link or anything but a regular file (or,
        written, one with another name elsewhere). The descriptor blocks again once checked."""
        path = self.child(name)
        _plain(name, path, what)
        access = (os.O_RDWR | (os.O_APPEND if append else 0)) if write or append else os.O_RDONLY
        while True:
            try:
                fd = os.open(name, access | _NO_FOLLOW, dir_fd=self.fd)
            except FileNotFoundError:
                if not create:
                    raise os_error(FileNotFoundError(errno.ENOENT, "missing"), path, what) from None
                try:
                    fd = os.open(name, access | _NO_FOLLOW | os.O_CREAT | os.O_EXCL, mode, dir_fd=self.fd)
                except FileExistsError:
                    continue  # made by another process since: open that one, checked as any other
                except OSError as exc:
                    raise _refused(exc, path, what) from None
            except OSError as exc:
                raise _refused(exc, path, what) from None
            break
        try:
            _regular(os.fstat(fd), path, what, written=write or append)
            fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) & ~os.O_NONBLOCK)
        except OSError as exc:
            os.close(fd)
            raise os_error(exc, path, what) from None
        except BaseException:
            os.close(fd)
            raise
        return fd

    def create_file(self, name: str, *, mode: int = 0o666, what: str = "file") -> int | None:
        """A read-write descriptor for the new regular file ``name``, made exclusive with ``mode`` (less the
        umask); None when anything by that name is there already (a file, even an empty one, a link, a
        folder): nothing is opened or changed then."""
        path = self.child(name)
        _plain(name, path, what)
        try:
            fd = os.open(name, os.O_RDWR | _NO_FOLLOW | os.O_CREAT | os.O_EXCL, mode, dir_fd=self.fd)
        except FileExistsError:
            return None
        except OSError as exc:
            raise _refused(exc, path, what) from None
        try:
            fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) & ~os.O_NONBLOCK)
        except OSError as exc:
            os.close(fd)
            raise os_error(exc, path, what) from None
        return fd

    def read(self, name: str, limit: int, *, what: str = "file") -> bytes | None:
        """The bytes of the regular file ``name`` (None when there is none), read without following a link
        or waiting on a FIFO; INPUT_TOO_LARGE past ``limit`` bytes."""
        try:
            fd = self.open_file(name, what=what)
        except PlantrailError as exc:
            if exc.code == "FILE_NOT_FOUND":
                return None
            raise
        try:
            return read_descriptor(fd, limit, self.child(name), what)
        finally:
            os.close(fd)

    def replace(
        self,
        name: str,
        data: bytes,
        *,
        mode: int | None = None,
        owner: tuple[int, int] | None = None,
        what: str = "file",
    ) -> None:
        """Put ``data`` at ``name`` whole: a fresh temporary name (exclusive, no link followed) with ``mode``
        (else as a new file gets it: 0666 less the umask) and ``owner`` (a uid and gid) when given, written
        and fsynced, renamed over ``name`` once that is checked to be absent or a regular file (NOT_A_FILE
        otherwise, and nothing is changed: a planted link is never replaced, let alone written through)."""
        path = self.child(name)
        _plain(name, path, what)
        temporary = f".{name}.{os.urandom(8).hex()}.tmp"
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NO_FOLLOW
        try:
            fd = os.open(temporary, flags, 0o600 if mode is not None else 0o666, dir_fd=self.fd)
        except OSError as exc:
            raise os_error(exc, path, what) from None
        try:
            try:
                made = os.fstat(fd)
                if owner is not None and owner != (made.st_uid, made.st_gid):
                    os.fchown(fd, *owner)
                if mode is not None:
                    os.fchmod(fd, mode)
                view = memoryview(data)
                while view:
                    view = view[os.write(fd, view) :]
                os.fsync(fd)
            finally:
                os.close(fd)
            found = self.lstat(name)
            if found is not None:
                _regular(found, path, what, written=False)
            os.rename(temporary, name, src_dir_fd=self.fd, dst_dir_fd=self.fd)
        except BaseException as exc:
            with contextlib.suppress(OSError):
                os.unlink(temporary, dir_fd=self.fd)
            if isinstance(exc, OSError):
                raise os_error(exc, path, what) from None
            raise
        with contextlib.suppress(OSError):  # the rename is done; a folder some file systems cannot fsync keeps it
            os.fsync(self.fd)

    # ------------------------------------------------------------------ lifetime

    def remove(self, name: str, *, what: str = "file") -> bool:
        """Remove the name ``name`` itself from this folder (a link is removed, never followed); False when
        nothing is there."""
        path = self.child(name)
        _plain(name, path, what)
        try:
            os.unlink(name, dir_fd=self.fd)
        except FileNotFoundError:
            return False
        except OSError as exc:
            raise os_error(exc, path, what) from None
        return True

    def detach(self) -> int:
        """Hand the folder's descriptor over to the caller (who closes it); this object no longer holds it."""
        fd, self.fd = self.fd, -1
        return fd

    def close(self) -> None:
        """Release the folder's descriptor."""
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    def __enter__(self) -> Folder:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def read_descriptor(fd: int, limit: int, path: str, what: str = "file") -> bytes:
    """Every byte of an open regular file from its start, at most ``limit`` (INPUT_TOO_LARGE past it)."""
    parts: list[bytes] = []
    offset = 0
    while True:
        try:
            chunk = os.pread(fd, min(_CHUNK, limit + 1 - offset), offset)
        except OSError as exc:
            raise os_error(exc, path, what) from None
        if not chunk:
            return b"".join(parts)
        parts.append(chunk)
        offset += len(chunk)
        if offset > limit:
            raise error("INPUT_TOO_LARGE", f"the {what} {path} is larger than {limit:,} bytes", path=path, limit=limit)


def _plain(name: str, path: str, what: str) -> None:
    """Refuse a name that is not one plain name in the folder (a caller's mistake, or a name from outside)."""
    if not name or name in (".", "..") or "/" in name or "\0" in name:
        raise error("USAGE", f"the {what} {path!r} is not a plain name in its folder", path=path)


def _regular(found: os.stat_result, path: str, what: str, *, written: bool) -> None:
    if stat.S_ISLNK(found.st_mode):
        raise _link(path, what)
    if not stat.S_ISREG(found.st_mode):
        raise error("NOT_A_FILE", f"the {what} {path} is not a regular file; it was left as it is", path=path)
    if written and found.st_nlink > 1:
        raise error(
            "NOT_A_FILE",
            f"the {what} {path} has other names (a hard link to another file); it was left as it is",
            path=path,
        )


def _link(path: str, what: str) -> PlantrailError:
    return error(
        "NOT_A_FILE",
        f"the {what} {path} is a symbolic link; plantrail does not follow links in a folder it does not own",
        path=path,
    )


def _refused(exc: OSError, path: str, what: str, *, folder: bool = False) -> PlantrailError:
    """The error for an open that met something other than what it expected (a link, a file for a folder)."""
    if exc.errno == errno.ELOOP:
        return _link(path, what)
    if folder and exc.errno in (errno.ENOTDIR, errno.EEXIST):
        return error("NOT_A_FILE", f"the {what} {path} is not a folder (a file or a link is in its place)", path=path)
    if exc.errno == errno.ENXIO:  # a FIFO without a reader, a socket: not a regular file either way
        return error("NOT_A_FILE", f"the {what} {path} is not a regular file; it was left as it is", path=path)
    return os_error(exc, path, what)
