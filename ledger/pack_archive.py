"""An evidence pack's zip archive: written deterministically, read in memory with every unsafe archive refused.

Writing (:func:`zip_bytes`): the members sorted by name, each with the same fixed timestamp (1980-01-01, the
earliest a zip can hold), the same permissions and the same compression, so the same members give the same
bytes on every machine (the time a pack was made lives only inside its manifest).

Reading (:func:`read_members`) never touches the disk: the archive is read from bytes, each member into memory.
What could harm a reader that extracts, or one that trusts the sizes an archive declares, is refused before a
member is read, each with the code PACK_UNSAFE (PACK_NOT_ZIP for bytes that are no zip archive):

* a member name that is empty, absolute, holds a ``..`` or ``.`` part, a backslash, a drive letter (a colon in
  its first part), a NUL or a control character, or names a folder;
* a member that is a link (its Unix mode says so), is encrypted, or is compressed by anything but deflate or
  nothing;
* two members of the same name (a reader would see one, an extractor the other), or bytes before the first
  member (a file that is something else too);
* more than :data:`MAX_MEMBERS` members, a member over the pack cap, or members that together expand past it
  (a zip bomb): the declared sizes are checked first, and a member is never read past its declared size
  (``zipfile`` checks the CRC and the size at its end).
"""

from __future__ import annotations

import io
import re
import stat
import zipfile
from collections.abc import Mapping
from typing import Final

from plantrail.ledger.vocabulary.errors import PlantrailError, error

__all__ = ["MAX_MEMBERS", "read_members", "zip_bytes"]

#: The most members a pack may hold.
MAX_MEMBERS: Final = 100_000
#: Every member's timestamp: the earliest a zip can hold, so that a pack's bytes say nothing of when it was made.
_EPOCH: Final = (1980, 1, 1, 0, 0, 0)
_MODE: Final = (stat.S_IFREG | 0o644) << 16
_PART: Final = re.compile(r"[A-Za-z0-9._:+@=-]+")


def zip_bytes(members: Mapping[str, bytes]) -> bytes:
    """The zip archive of ``members`` (name -> bytes), sorted by name, with fixed timestamps and modes."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED, allowZip64=True) as archive:
        for name in sorted(members):
            check_name(name, "the pack")
            info = zipfile.ZipInfo(name, date_time=_EPOCH)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = _MODE
            info.create_system = 3  # Unix: the mode above is read as one
            archive.writestr(info, members[name], compresslevel=6)
    return out.getvalue()


def check_name(name: str, where: str) -> None:
    """PACK_UNSAFE unless ``name`` is a relative path of plain parts (letters, digits and ``._:+@=-``)."""
    parts = name.split("/")
    if (
        not name
        or ":" in parts[0]  # a drive letter (C:) or a stream: absolute, or another file, on Windows
        or any(part in ("", ".", "..") or _PART.fullmatch(part) is None for part in parts)
    ):
        raise _unsafe(where, f"the member name {name!r} is not a plain relative path", member=name)


def read_members(data: bytes, where: str, *, cap: int) -> dict[str, bytes]:
    """Every member of the zip archive ``data`` (``where`` names it in messages), read in memory; PACK_NOT_ZIP
    when it is no zip archive, PACK_UNSAFE for an archive no reader should trust (see the module's text).
    ``cap`` bounds each member and their sum once expanded."""
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
    except (zipfile.BadZipFile, zipfile.LargeZipFile, ValueError, EOFError, OSError) as exc:
        raise error("PACK_NOT_ZIP", f"{where} is not a zip archive ({exc})", path=where) from None
    with archive:
        infos = archive.infolist()
        _check_infos(infos, where, cap)
        members: dict[str, bytes] = {}
        for info in infos:
            members[info.filename] = _read(archive, info, where)
    return members


def _check_infos(infos: list[zipfile.ZipInfo], where: str, cap: int) -> None:
    """Refuse an archive by what its directory declares, before any member is read."""
    if len(infos) > MAX_MEMBERS:
        raise _unsafe(where, f"it holds {len(infos)} members, more than {MAX_MEMBERS}")
    if infos and min(info.header_offset for info in infos) != 0:
        raise _unsafe(where, "bytes that belong to no member come before its first member")
    seen: set[str] = set()
    total = 0
    for info in infos:
        name = info.filename
        if name in seen:
            raise _unsafe(where, f"the member name {name!r} is there twice", member=name)
        seen.add(name)
        if info.is_dir():
            raise _unsafe(where, f"the member {name!r} is a folder", member=name)
        check_name(name, where)
        mode = info.external_attr >> 16
        if info.create_system == 3 and stat.S_IFMT(mode) not in (0, stat.S_IFREG):  # 0: a mode with no type
            raise _unsafe(where, f"the member {name!r} is a link or a special file, not a file", member=name)
        if info.flag_bits & 0x1:
            raise _unsafe(where, f"the member {name!r} is encrypted", member=name)
        if info.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
            raise _unsafe(where, f"the member {name!r} is compressed by method {info.compress_type}", member=name)
        if info.file_size > cap:
            raise _unsafe(where, f"the member {name!r} expands to {info.file_size:,} bytes, past {cap:,}", member=name)
        total += info.file_size
        if total > cap:
            raise _unsafe(where, f"its members expand to more than {cap:,} bytes (a zip bomb?)", member=name)


def _read(archive: zipfile.ZipFile, info: zipfile.ZipInfo, where: str) -> bytes:
    """One member's bytes, never more than it declares (a member whose bytes or CRC differ is PACK_UNSAFE)."""
    try:
        with archive.open(info) as stream:
            body = stream.read(info.file_size + 1)
    except (zipfile.BadZipFile, zipfile.LargeZipFile, ValueError, EOFError, OSError, NotImplementedError) as exc:
        raise _unsafe(where, f"the member {info.filename!r} cannot be read ({exc})", member=info.filename) from None
    except RuntimeError as exc:  # zipfile's word for an encrypted member
        raise _unsafe(where, f"the member {info.filename!r} cannot be read ({exc})", member=info.filename) from None
    if len(body) != info.file_size:
        raise _unsafe(where, f"the member {info.filename!r} is not the size it declares", member=info.filename)
    return body


def _unsafe(where: str, why: str, *, member: str | None = None) -> PlantrailError:
    return error("PACK_UNSAFE", f"{where} is refused: {why}", path=where, member=member)
