"""What a log's torn bytes read as: its torn tail, and the quarantine files its repairs left beside it.

Each is described by :func:`plantrail.ledger.vocabulary.fragments.read_fragment` (the records the bytes
hold as far as they go). A quarantine file is read only when it is a regular file owned by this user, opened
without following a link or blocking, and only its first :data:`LOOKED_AT` bytes: anything else planted at
such a name is left out, as a writer leaves it.
"""

from __future__ import annotations

import glob
import os
import re
import stat
from typing import Final

from plantrail.ledger.stores.values import Quarantined, TornTail
from plantrail.ledger.vocabulary.fragments import TornRecord, read_fragment

__all__ = ["LOOKED_AT", "quarantine_records", "quarantined", "torn_records"]

#: The most bytes of a torn tail or a quarantine file that are read to describe it.
LOOKED_AT: Final = 1 << 20
_QUARANTINE: Final = re.compile(r"\.quarantine\.(\d+)\..+")


def _described(data: bytes, whole: bool) -> tuple[TornRecord, ...]:
    """``data`` described; when it is only the first part of the bytes (``whole`` False), the line the cap cut
    is left out unless it is the only one."""
    records = read_fragment(data)
    if not whole and len(records) > 1 and not data.endswith(b"\n"):
        return records[:-1]
    return records


def torn_records(fd: int, torn: TornTail) -> tuple[TornRecord, ...]:
    """What the torn tail ``torn`` of the log open as ``fd`` reads as."""
    data = os.pread(fd, min(torn.length, LOOKED_AT), torn.offset)
    return _described(data, len(data) >= torn.length)


def _owned_bytes(path: str) -> tuple[bytes, int] | None:
    """The first LOOKED_AT bytes of ``path`` and its size, when it is a regular file owned by this user."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_uid != os.geteuid():
            return None
        return os.pread(fd, LOOKED_AT, 0), st.st_size
    except OSError:
        return None
    finally:
        os.close(fd)


def quarantine_records(path: str) -> tuple[TornRecord, ...]:
    """What the quarantine file at ``path`` reads as (nothing when it is not one this user's repair wrote)."""
    read = _owned_bytes(path)
    return () if read is None else _described(read[0], len(read[0]) >= read[1])


def quarantined(path: str) -> tuple[Quarantined, ...]:
    """Every quarantine file beside the log at ``path`` that a repair of this user's could have left, by the
    offset its bytes were cut at, each with what its bytes read as."""
    found = []
    for name in glob.glob(glob.escape(path) + ".quarantine.*"):
        match = _QUARANTINE.fullmatch(name[len(path) :])
        read = None if match is None else _owned_bytes(name)
        if match is None or read is None:
            continue
        data, size = read
        found.append(Quarantined(name, int(match[1]), size, _described(data, len(data) >= size)))
    return tuple(sorted(found, key=lambda q: (q.offset, q.name)))
