"""stores.owned: a folder plantrail does not own is reached without following a link, opened without
blocking, and written only through names it created itself."""

from __future__ import annotations

import os
import stat
from collections.abc import Callable
from pathlib import Path

import pytest

from plantrail.ledger.stores.owned import Folder
from plantrail.ledger.vocabulary.errors import PlantrailError

#: What can be planted at a name, each made by a function of the path and a file outside.
PLANTS: dict[str, Callable[[Path, Path], None]] = {
    "a link to a file": lambda path, outside: path.symlink_to(outside),
    "a link to a folder": lambda path, outside: path.symlink_to(outside.parent, target_is_directory=True),
    "a dangling link": lambda path, outside: path.symlink_to(outside.parent / "nowhere"),
    "a FIFO": lambda path, outside: os.mkfifo(path),
}


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A file outside the folder, standing for anything the user can write."""
    (tmp_path / "outside").mkdir()
    victim = tmp_path / "outside" / "victim.txt"
    victim.write_text("precious\n")
    return victim


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    (tmp_path / "project").mkdir()
    return tmp_path / "project"


def _refused(call: Callable[[], object]) -> str:
    with pytest.raises(PlantrailError) as caught:
        call()
    return caught.value.code


@pytest.mark.parametrize("plant", list(PLANTS))
def test_a_sub_folder_is_never_reached_through_a_planted_entry(folder: Path, outside: Path, plant: str) -> None:
    """A link, a dangling link or a FIFO where a sub-folder goes is refused (NOT_A_FILE), with or without
    making it, and nothing is made through it."""
    PLANTS[plant](folder / "capture", outside)

    with Folder.open(str(folder)) as held:
        assert _refused(lambda: held.folder("capture", create=True)) == "NOT_A_FILE"
        assert _refused(lambda: held.folder("capture")) == "NOT_A_FILE"
    assert not (outside.parent / "nowhere").exists()


@pytest.mark.parametrize("plant", list(PLANTS))
def test_a_planted_entry_is_never_opened_written_or_replaced(folder: Path, outside: Path, plant: str) -> None:
    """A link or a FIFO at a file's name: open, append, create, read and replace all refuse it (NOT_A_FILE,
    never a wait), leave it as it is, and the file outside keeps its bytes."""
    PLANTS[plant](folder / "file", outside)
    before = (folder / "file").lstat()

    with Folder.open(str(folder)) as held:
        for call in (
            lambda: held.open_file("file"),
            lambda: held.open_file("file", append=True, create=True),
            lambda: held.read("file", 1 << 20),
            lambda: held.replace("file", b"new\n"),
        ):
            assert _refused(call) == "NOT_A_FILE"

    after = (folder / "file").lstat()
    assert (after.st_mode, after.st_ino) == (before.st_mode, before.st_ino)
    assert outside.read_text() == "precious\n"


def test_a_hard_link_is_not_written_in_place(folder: Path, outside: Path) -> None:
    """A file with another name (a hard link to a file elsewhere) is read, but not opened to be written."""
    os.link(outside, folder / "file")

    with Folder.open(str(folder)) as held:
        assert held.read("file", 1 << 20) == b"precious\n"
        assert _refused(lambda: held.open_file("file", append=True)) == "NOT_A_FILE"
    assert outside.read_text() == "precious\n"


def test_replace_writes_a_fresh_file_with_the_mode_given(folder: Path) -> None:
    """replace puts a new file (another inode) in place of a regular one, with the mode asked for, and leaves
    no temporary name behind."""
    (folder / "settings.json").write_text("old\n")
    old = (folder / "settings.json").stat().st_ino

    with Folder.open(str(folder)) as held:
        held.replace("settings.json", b"new\n", mode=0o600)

    assert (folder / "settings.json").read_text() == "new\n"
    assert (folder / "settings.json").stat().st_ino != old
    assert stat.S_IMODE((folder / "settings.json").stat().st_mode) == 0o600
    assert sorted(p.name for p in folder.iterdir()) == ["settings.json"]


def test_a_missing_file_is_created_exclusively_and_read_back(folder: Path) -> None:
    """A missing file is created (and then appended to); a missing one read is None; one past its limit is
    INPUT_TOO_LARGE."""
    with Folder.open(str(folder)) as held:
        assert held.read("journal", 10) is None
        fd = held.open_file("journal", append=True, create=True)
        os.write(fd, b"0123456789abc")
        os.close(fd)
        assert held.read("journal", 13) == b"0123456789abc"
        assert _refused(lambda: held.read("journal", 12)) == "INPUT_TOO_LARGE"


def test_a_folder_the_caller_names_is_made_with_its_parents(tmp_path: Path, outside: Path) -> None:
    """Folder.open makes a missing folder and its parents, and refuses a dangling link in a missing
    folder's place rather than making its target."""
    with Folder.open(str(tmp_path / "a" / "b"), create=True) as held:
        assert held.path == str(tmp_path / "a" / "b")
    assert (tmp_path / "a" / "b").is_dir()
    (tmp_path / "c").symlink_to(tmp_path / "nowhere")

    assert _refused(lambda: Folder.open(str(tmp_path / "c" / "d"), create=True)) == "NOT_A_FILE"
    assert not (tmp_path / "nowhere").exists()


@pytest.mark.parametrize("plant", [*PLANTS, "an empty file", "a folder"])
def test_create_file_makes_only_a_new_file(folder: Path, outside: Path, plant: str) -> None:
    """create_file makes a new regular file with the mode asked (less the umask) and returns its descriptor; with
    anything at the name (a link, a FIFO, an empty file, a folder) it returns None and nothing changes, not even
    what a link points at."""
    with Folder.open(str(folder)) as place:
        fd = place.create_file("new.key", mode=0o600)
        assert fd is not None
        os.write(fd, b"secret")
        os.close(fd)
        assert (folder / "new.key").read_bytes() == b"secret"
        assert stat.S_IMODE((folder / "new.key").stat().st_mode) & 0o077 == 0

        target = folder / "taken"
        if plant == "an empty file":
            target.write_bytes(b"")
        elif plant == "a folder":
            target.mkdir()
        else:
            PLANTS[plant](target, outside)
        before = os.lstat(target)
        assert place.create_file("taken") is None
        after = os.lstat(target)
        assert (after.st_ino, after.st_size, after.st_mode) == (before.st_ino, before.st_size, before.st_mode)
    assert outside.read_text() == "precious\n"
