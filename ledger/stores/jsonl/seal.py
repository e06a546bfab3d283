"""Cache files that only this user's plantrail can have written: a per-user key, safe opens, sealed bytes.

Every file in a log's cache folder goes through this layer (snapshots, the version index, any index added
later), so a cache that another user, or a process without the key, wrote or planted is never believed:

* **The key** is 32 random bytes in ``$XDG_STATE_HOME/plantrail/cache.key`` (else
  ``~/.local/state/plantrail/cache.key``), created on first use in an owner-only folder, with owner-only
  permissions. A key that is not a regular file owned by this user with no group or other bits is not
  used (and then no cache is read or written). The key lives outside the log's folder: whoever holds it
  could rewrite the log itself anyway.
* **The folder** ``<log>.plantrail-cache`` is used only when it is a real directory (not a symlink) owned
  by this user; otherwise it is ignored and never written through. Files in it are opened relative to the
  folder's descriptor with ``O_NOFOLLOW`` (a planted symlink is refused, never followed) and
  ``O_NONBLOCK`` (a planted FIFO cannot hang a read); only regular files owned by this user, no larger
  than the caller's limit, are read.
* **Writes** go to a fresh temporary name created with ``O_CREAT | O_EXCL | O_NOFOLLOW`` (nothing planted
  at a temporary name is opened) and are renamed into place (a rename replaces a planted name itself, never
  what it points to).
* **Sealing**: a sealed file is ``MAGIC``, an HMAC-SHA256 over (kind, payload) under the key, then the
  payload. A file of another kind, edited, or sealed under another key reads as absent.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import os
import secrets
import stat
import time
from typing import Final, NamedTuple

from plantrail.ledger.stores.files import read_regular

__all__ = [
    "KEY_FILE",
    "MAX_CACHE_FILE",
    "STATE_ENV",
    "CacheFolder",
    "FileId",
    "cache_key",
    "mac",
    "seal",
    "unseal",
]

STATE_ENV: Final = "XDG_STATE_HOME"
KEY_FILE: Final = "cache.key"
#: No cache file is read past this size (a planted endless file cannot exhaust memory).
MAX_CACHE_FILE: Final = 1 << 30
_MAGIC: Final = b"plantrail-sealed/1\n"
_TAG: Final = 32
_KEY_BYTES: Final = 32
_NOFOLLOW: Final = os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK


def _state_dir() -> str:
    base = os.environ.get(STATE_ENV) or os.path.join(os.path.expanduser("~"), ".local", "state")
    return os.path.join(base, "plantrail")


def _private_dir(path: str) -> bool:
    """Make ``path`` an owner-only directory if it is missing; True when it is a real one owned by this user."""
    with contextlib.suppress(FileExistsError):
        os.makedirs(path, mode=0o700)
    try:
        st = os.lstat(path)
    except OSError:
        return False
    return stat.S_ISDIR(st.st_mode) and st.st_uid == os.geteuid()


def cache_key(*, create: bool = True) -> bytes | None:
    """This user's cache key, created on first use (None when there is no usable one: then no cache is used)."""
    folder = _state_dir()
    path = os.path.join(folder, KEY_FILE)
    key = read_regular(path, 4096, private=True)
    if key is not None:
        return key if len(key) == _KEY_BYTES else None
    if not create:
        return None
    try:
        if not _private_dir(folder):
            return None
        tmp = os.path.join(folder, f".{KEY_FILE}.{secrets.token_hex(8)}")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW, 0o600)
        try:
            os.write(fd, secrets.token_bytes(_KEY_BYTES))
            os.fsync(fd)
        finally:
            os.close(fd)
        try:
            os.link(tmp, path)  # never replaces a key another process created first
        except FileExistsError:
            pass
        finally:
            os.unlink(tmp)
    except OSError:
        return None
    key = read_regular(path, 4096, private=True)
    return key if key is not None and len(key) == _KEY_BYTES else None


def _tag(key: bytes, kind: str, payload: bytes) -> bytes:
    mac = hmac.new(key, kind.encode("utf-8") + b"\n", hashlib.sha256)
    mac.update(payload)
    return mac.digest()


def mac(key: bytes, kind: str, data: bytes) -> bytes:
    """The HMAC-SHA256 of ``data`` as a ``kind`` under ``key``: for a file beside the log that says it is ours by a
    tag in its name (a quarantine file), not by a sealed header."""
    return _tag(key, kind, data)


def seal(key: bytes, kind: str, payload: bytes) -> bytes:
    """``payload`` as a sealed file of ``kind``."""
    return _MAGIC + _tag(key, kind, payload) + payload


def unseal(key: bytes, kind: str, blob: bytes) -> bytes | None:
    """The payload of a sealed file of ``kind`` under ``key``; None when it is not one."""
    if not blob.startswith(_MAGIC) or len(blob) < len(_MAGIC) + _TAG:
        return None
    tag = blob[len(_MAGIC) : len(_MAGIC) + _TAG]
    payload = blob[len(_MAGIC) + _TAG :]
    return payload if hmac.compare_digest(tag, _tag(key, kind, payload)) else None


class FileId(NamedTuple):
    """A cache file as :meth:`CacheFolder.file_id` tells it from another written under its name."""

    ino: int
    size: int
    mtime_ns: int


#: How old a temporary file left in a cache folder must be before a writer removes it (:meth:`CacheFolder.write`).
STALE_TMP_SECONDS: Final = 600
_HEX: Final = frozenset("0123456789abcdef")


def _left_tmp(name: str) -> bool:
    """Whether ``name`` is one :meth:`CacheFolder.write` or :meth:`CacheFolder.stamp` gives its temporary file:
    ``.NAME.<16 hex digits>.tmp``."""
    return (
        len(name) >= 23 and name[0] == "." and name.endswith(".tmp") and name[-21] == "." and set(name[-20:-4]) <= _HEX
    )


class CacheFolder:
    """A log's cache folder, opened safely, or nothing (:meth:`open` returns None when it must not be used).

    Use as a context manager; every name is a plain file name inside the folder.
    """

    def __init__(self, fd: int, key: bytes) -> None:
        self._fd = fd
        self._key = key
        self._swept = False

    @classmethod
    def open(cls, path: str, *, create: bool) -> CacheFolder | None:
        """The folder at ``path`` if it is a real directory owned by this user (made owner-only when ``create``
        and missing) and a cache key is at hand; else None."""
        key = cache_key(create=create)
        if key is None:
            return None
        if create:
            with contextlib.suppress(OSError):
                os.mkdir(path, 0o700)
        try:
            fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | _NOFOLLOW)
        except OSError:
            return None
        return cls._owned(fd, key)

    @classmethod
    def adopt(cls, fd: int, *, create: bool) -> CacheFolder | None:
        """The folder the caller opened (no link followed: :class:`plantrail.ledger.stores.owned.Folder`) and
        hands over with its descriptor ``fd``, if it is a directory owned by this user and a cache key is at
        hand (made when ``create``); else None, the descriptor closed."""
        key = cache_key(create=create)
        if key is None:
            os.close(fd)
            return None
        return cls._owned(fd, key)

    @classmethod
    def _owned(cls, fd: int, key: bytes) -> CacheFolder | None:
        try:
            st = os.fstat(fd)
        except OSError:
            os.close(fd)
            return None
        if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.geteuid():
            os.close(fd)
            return None
        return cls(fd, key)

    def __enter__(self) -> CacheFolder:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Release the folder."""
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def open_file(self, name: str, *, create: bool) -> int | None:
        """A descriptor for the data file ``name`` (read-write; created owner-only when ``create``), opened as
        safely as :meth:`read` opens (no symlink followed, no FIFO waited on, only a regular file owned by this
        user); None when it is missing or unsafe. For files read and extended in place (an index whose entries
        are checked against a sealed file): their bytes are not sealed themselves."""
        flags = os.O_RDWR | _NOFOLLOW | (os.O_CREAT if create else 0)
        try:
            fd = os.open(name, flags, 0o600, dir_fd=self._fd)
        except OSError:
            return None
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode) or st.st_uid != os.geteuid():
                os.close(fd)
                return None
            os.set_blocking(fd, True)
        except OSError:
            os.close(fd)
            return None
        return fd

    def stamp(self) -> tuple[int, int] | None:
        """The file system's clock now, as the change time of a fresh file in the folder, and the folder's device:
        a timestamp on the same clock and granularity as a log beside the folder (the racy-git rule compares
        the two); None when no file can be made.

        The file's change time is looked at, then changed once more (its mode set to what it is) and read
        again. Where the file system keeps multigrain timestamps (Linux 6.13 and later: ext4, XFS, Btrfs,
        tmpfs), a change to a file whose change time was looked at gets a fine-grained time, past every
        change time given before on any file, and every later change of any file gets one at or past it: so
        the stamp is past the log's own last change at once, and a writer need not wait for the coarse clock
        to tick (:func:`plantrail.ledger.stores.jsonl.cache.save_snapshot`). Elsewhere both changes read the
        same coarse clock, and the later one is the stamp, as good as the first."""
        tmp = f".stamp.{secrets.token_hex(8)}.tmp"
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW, 0o600, dir_fd=self._fd)
        except OSError:
            return None
        try:
            os.fstat(fd)  # looked at: on a multigrain file system its next change gets a fine-grained time
            os.fchmod(fd, 0o600)
            st = os.fstat(fd)
        except OSError:
            return None
        finally:
            os.close(fd)
            with contextlib.suppress(OSError):
                os.unlink(tmp, dir_fd=self._fd)
        return st.st_ctime_ns, st.st_dev

    def mac(self, kind: str, data: bytes) -> bytes:
        """The HMAC-SHA256 of ``data`` as a ``kind`` under this user's key: for a file whose parts are checked
        one at a time (an index entry read without the rest of its file), each part carrying its own."""
        return _tag(self._key, kind, data)

    def read(self, name: str, kind: str, limit: int = MAX_CACHE_FILE) -> bytes | None:
        """The payload of sealed file ``name`` of ``kind``; None when it is missing, unsafe or not sealed by us."""
        read = self.read_tagged(name, kind, limit)
        return None if read is None else read[0]

    def read_tagged(self, name: str, kind: str, limit: int = MAX_CACHE_FILE) -> tuple[bytes, bytes] | None:
        """:meth:`read`'s payload and the seal's tag, the HMAC over it (which names these bytes as a SHA-256 of
        them would, to anyone without the key: a file that refers to another can name it by its tag)."""
        blob = read_regular(name, limit + len(_MAGIC) + _TAG, dir_fd=self._fd)
        payload = None if blob is None else unseal(self._key, kind, blob)
        return None if payload is None or blob is None else (payload, blob[len(_MAGIC) : len(_MAGIC) + _TAG])

    def file_id(self, name: str) -> FileId | None:
        """What tells the file ``name`` from any other written under that name (its inode, size and write time:
        every write renames a new file into place), without reading it; None when it is missing or not a
        regular file."""
        try:
            st = os.stat(name, dir_fd=self._fd, follow_symlinks=False)
        except OSError:
            return None
        return FileId(st.st_ino, st.st_size, st.st_mtime_ns) if stat.S_ISREG(st.st_mode) else None

    def write(self, name: str, kind: str, payload: bytes) -> FileId | None:
        """Seal ``payload`` into ``name`` atomically (exclusive temporary file, then rename); the written file's
        :class:`FileId` (as :meth:`file_id` gives it while nobody replaced it since), None on failure."""
        written = self.write_tagged(name, kind, payload)
        return None if written is None else written[0]

    def write_tagged(self, name: str, kind: str, payload: bytes) -> tuple[FileId, bytes] | None:
        """:meth:`write`, and the seal's tag (:meth:`read_tagged` gives the same one back)."""
        tmp = f".{name}.{secrets.token_hex(8)}.tmp"
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW, 0o600, dir_fd=self._fd)
        except OSError:
            return None
        try:
            try:
                sealed = seal(self._key, kind, payload)
                blob = memoryview(sealed)
                while blob:
                    blob = blob[os.write(fd, blob) :]
                st = os.fstat(fd)
            finally:
                os.close(fd)
            os.rename(tmp, name, src_dir_fd=self._fd, dst_dir_fd=self._fd)
        except OSError:
            with contextlib.suppress(OSError):
                os.unlink(tmp, dir_fd=self._fd)
            return None
        if not self._swept:
            self._swept = True
            self._sweep()
        return FileId(st.st_ino, st.st_size, st.st_mtime_ns), sealed[len(_MAGIC) : len(_MAGIC) + _TAG]

    def _sweep(self) -> None:
        """Remove the temporary files a writer killed between making one and renaming or removing it left behind
        (:meth:`write`'s and :meth:`stamp`'s): only those last changed :data:`STALE_TMP_SECONDS` ago or more, so
        another writer's file in use is never touched. Once per opened folder, on its first write."""
        try:
            entries = list(os.scandir(self._fd))
        except OSError:
            return
        before = time.time() - STALE_TMP_SECONDS
        for entry in entries:
            if not _left_tmp(entry.name):
                continue
            with contextlib.suppress(OSError):
                if entry.stat(follow_symlinks=False).st_mtime < before:
                    os.unlink(entry.name, dir_fd=self._fd)
