"""Writers refuse logs on NFS or SMB, where O_APPEND and flock do not hold between machines."""

from __future__ import annotations

import copy
import os
from collections.abc import Callable
from pathlib import Path

import pytest

from plantrail.ledger.api import Ledger
from plantrail.ledger.stores.jsonl import log as jsonl_store
from plantrail.ledger.stores.jsonl.log import filesystem_type
from plantrail.ledger.vocabulary.errors import PlantrailError
from tests.conftest import LOGIN_DRAFT

MOUNTINFO = """\
22 27 0:21 / /proc rw,relatime - proc proc rw
27 1 253:1 / / rw,relatime - ext4 /dev/vda rw
88 27 0:52 / /mnt/share rw,relatime shared:40 - nfs4 server:/export rw,vers=4.2
"""


def test_filesystem_type_reads_mountinfo_by_device_number(tmp_path: Path) -> None:
    """The filesystem type is the one mountinfo gives for the file's major:minor; unknown devices give None."""
    mountinfo = tmp_path / "mountinfo"
    mountinfo.write_text(MOUNTINFO)
    assert filesystem_type(os.makedev(0, 52), str(mountinfo)) == "nfs4"
    assert filesystem_type(os.makedev(253, 1), str(mountinfo)) == "ext4"
    assert filesystem_type(os.makedev(9, 9), str(mountinfo)) is None
    assert filesystem_type(os.makedev(0, 52), str(tmp_path / "missing")) is None


def test_writers_refuse_a_network_filesystem_unless_allowed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Create and open refuse with NETWORK_FILESYSTEM on NFS; the library flag or the environment allows it."""
    path = tmp_path / "run.jsonl"
    Ledger.create(path, copy.deepcopy(LOGIN_DRAFT), fsync="none").close()
    monkeypatch.setattr(jsonl_store, "filesystem_type", lambda dev: "nfs")

    actions: list[Callable[[], Ledger]] = [
        lambda: Ledger.open(path),
        lambda: Ledger.create(tmp_path / "new.jsonl", LOGIN_DRAFT),
    ]
    for action in actions:
        with pytest.raises(PlantrailError) as caught:
            action()
        assert (caught.value.code, caught.value.fields["filesystem"]) == ("NETWORK_FILESYSTEM", "nfs")
    assert not (tmp_path / "new.jsonl").exists()

    Ledger.open(path, allow_network_fs=True).close()
    monkeypatch.setenv("PLANTRAIL_ALLOW_NETWORK_FS", "1")
    Ledger.open(path).close()
