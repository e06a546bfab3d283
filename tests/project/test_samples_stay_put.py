"""The recording scripts (samples/record_*.sh) write where they are told: into OUT, never into samples/ unless
--update asks them to replace the samples."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.logs import read_records

SAMPLES = Path(__file__).resolve().parents[2] / "samples"
SCRIPTS = sorted(SAMPLES.glob("record_*.sh"))


def _listing(folder: Path) -> dict[str, tuple[int, int]]:
    """Every file under ``folder`` (hidden and ignored ones too) with its size and modification time."""
    return {
        str(path.relative_to(folder)): (path.stat().st_size, path.stat().st_mtime_ns)
        for path in folder.rglob("*")
        if path.is_file()
    }


def _env() -> dict[str, str]:
    return os.environ | {"PLANTRAIL": f"{sys.executable} -m plantrail"}


def test_there_are_recording_scripts() -> None:
    assert len(SCRIPTS) >= 6


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.name)
def test_a_script_without_out_or_update_refuses_and_writes_nothing(script: Path, tmp_path: Path) -> None:
    """With no argument, or an option it does not know, a script prints its usage and exits 2 before it runs a
    command: samples/ is left as it was."""
    before = _listing(SAMPLES)
    for args in ([], ["--force"]):
        done = subprocess.run(["bash", str(script), *args], env=_env(), capture_output=True, text=True, cwd=tmp_path)
        assert done.returncode == 2, done.stderr
        assert done.stderr.startswith("usage: ") and "--update" in done.stderr
    assert _listing(SAMPLES) == before


def test_a_script_given_out_writes_only_there(tmp_path: Path) -> None:
    """record_login_fix.sh OUT records the login-fix run into OUT (the same events as the committed sample, times
    and hashes aside), from any working directory, and leaves samples/ as it was."""
    before = _listing(SAMPLES)
    out = tmp_path / "elsewhere" / "login.jsonl"
    out.parent.mkdir()
    subprocess.run(
        ["bash", str(SAMPLES / "record_login_fix.sh"), "login.jsonl"],
        check=True,
        env=_env(),
        capture_output=True,
        cwd=out.parent,
    )
    assert _listing(SAMPLES) == before

    def events(path: Path) -> list[tuple[object, ...]]:
        return [(r.seq, r.type, r.actor, r.plan_version, r.data) for r in read_records(path)[1:]]

    assert events(out) == events(SAMPLES / "login-fix.jsonl")
