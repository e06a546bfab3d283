"""A log's payload shelf: the folder ``<run>.blobs/`` beside ``<run>.jsonl``, one file per payload.

A payload's file is named by the hex of its digest and holds its 32-byte salt followed by its bytes (see
:mod:`plantrail.ledger.stores.payloads`). Storing one writes a fresh temporary file in the folder (created
exclusive, never following a link), fsyncs it, renames it into place and fsyncs the folder (the fsyncs are
skipped under the fsync policy ``none``), so the payload is durable before any record names it. The folder is
opened without following a link, and every file in it through the folder's descriptor, so a link planted in
place of the folder or of a payload is never followed. Reading checks the bytes against the name.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import secrets
import stat
from typing import Final

from plantrail.ledger.stores.files import fsync_dir, os_error, read_upto
from plantrail.ledger.stores.payloads import SALT_BYTES, StoredPayload, check_digest, check_payload, missing, salted
from plantrail.ledger.vocabulary.errors import error
from plantrail.ledger.vocabulary.limits import PAYLOAD

__all__ = ["SUFFIX", "blobs_dir", "payload_names", "read_payload", "read_salted", "store_payload"]

SUFFIX: Final = ".blobs"
_DIR_FLAGS: Final = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_NAME: Final = re.compile(r"[0-9a-f]{64}")


def blobs_dir(log_path: str) -> str:
    """The payload folder of a log: ``run.jsonl`` keeps its payloads in ``run.blobs``."""
    stem = log_path[: -len(".jsonl")] if log_path.endswith(".jsonl") else log_path
    return stem + SUFFIX


def store_payload(log_path: str, data: bytes, *, durable: bool, salt: bytes | None = None) -> StoredPayload:
    """Keep ``data`` in the log's payload folder (created on first use) and return its name and size."""
    stored, salt = salted(data, salt)
    folder = blobs_dir(log_path)
    created = False
    try:
        os.mkdir(folder, 0o755)
        created = True
    except FileExistsError:
        pass
    except OSError as exc:
        raise os_error(exc, folder, "payload folder") from None
    try:
        dir_fd = _open_folder(folder)
    except FileNotFoundError as exc:  # removed since the mkdir above
        raise os_error(exc, folder, "payload folder") from None
    try:
        name = check_digest(stored.digest)
        tmp = f".{name}.tmp.{os.getpid()}.{secrets.token_hex(4)}"
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644, dir_fd=dir_fd)
        except OSError as exc:
            raise os_error(exc, f"{folder}/{tmp}", "payload") from None
        try:
            try:
                _write_all(fd, salt + data)
                if durable:
                    os.fsync(fd)
            finally:
                os.close(fd)
            os.replace(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
        except OSError as exc:
            with contextlib.suppress(OSError):
                os.unlink(tmp, dir_fd=dir_fd)
            raise os_error(exc, f"{folder}/{name}", "payload") from None
        if durable:
            os.fsync(dir_fd)
    finally:
        os.close(dir_fd)
    if created and durable:
        fsync_dir(folder)  # the folder's own entry, in the log's folder
    return stored


def read_payload(log_path: str, digest: str) -> bytes:
    """The bytes of payload ``digest`` of the log, checked against the name.

    PAYLOAD_MISSING when the folder holds no regular file by that name, PAYLOAD_ALTERED when its bytes do not
    hash to it, INPUT_TOO_LARGE when it is over the payload cap.
    """
    return read_salted(log_path, digest)[1]


def read_salted(log_path: str, digest: str) -> tuple[bytes, bytes]:
    """The salt and the bytes of payload ``digest`` of the log, checked against the name (as :func:`read_payload`)."""
    name = check_digest(digest)
    folder = blobs_dir(log_path)
    try:
        dir_fd = _open_folder(folder)
    except FileNotFoundError:
        raise missing(digest, folder) from None
    try:
        try:
            fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=dir_fd)
        except FileNotFoundError:
            raise missing(digest, folder) from None
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise error("NOT_A_FILE", f"payload {folder}/{name} is a link; plantrail never follows one") from None
            raise os_error(exc, f"{folder}/{name}", "payload") from None
    finally:
        os.close(dir_fd)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise missing(digest, folder)
        cap = PAYLOAD.cap() + SALT_BYTES
        if st.st_size > cap:
            raise error(
                "INPUT_TOO_LARGE",
                f"payload {digest} in {folder} is {st.st_size - SALT_BYTES} bytes, over the payload cap "
                f"(${PAYLOAD.env})",
                path=folder,
            )
        blob = read_upto(fd, cap + 1)
    except OSError as exc:
        raise os_error(exc, f"{folder}/{name}", "payload") from None
    finally:
        os.close(fd)
    salt = blob[:SALT_BYTES]
    return salt, check_payload(digest, salt, blob[SALT_BYTES:], where=folder)


def payload_names(log_path: str) -> list[str]:
    """The names of the payloads the log's payload folder holds, sorted: each regular file named by 64
    lower-case hex digits (a temporary file of a store that did not finish, or anything else, is no payload);
    none when there is no folder."""
    folder = blobs_dir(log_path)
    try:
        dir_fd = _open_folder(folder)
    except FileNotFoundError:
        return []
    try:
        names = []
        for name in os.listdir(dir_fd):
            if _NAME.fullmatch(name) is None:
                continue
            try:
                found = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
            except FileNotFoundError:
                continue
            if stat.S_ISREG(found.st_mode):
                names.append("sha256:" + name)
    except OSError as exc:
        raise os_error(exc, folder, "payload folder") from None
    finally:
        os.close(dir_fd)
    return sorted(names)


def _open_folder(folder: str) -> int:
    """The payload folder's descriptor; FileNotFoundError when it does not exist, NOT_A_FILE when a link or a
    file is in its place."""
    try:
        return os.open(folder, _DIR_FLAGS)
    except FileNotFoundError:
        raise
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR):
            raise error(
                "NOT_A_FILE", f"payload folder {folder} is not a folder (a link is never followed)", path=folder
            ) from None
        raise os_error(exc, folder, "payload folder") from None


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]
