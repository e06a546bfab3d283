"""One installed namespace: the wheel installs only ``plantrail``, and it lives beside other tools' top-level names."""

from __future__ import annotations

import importlib.util
import os
import pkgutil
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

import plantrail

ROOT = Path(__file__).resolve().parents[2]
OLD_NAMES = ("ledger", "projections", "cli")


def _build_wheel(project: Path, out: Path) -> Path:
    """``pip wheel`` of one project folder, without its dependencies; the wheel's path."""
    # With setuptools and wheel at hand, build against them; otherwise pip fetches the build backend.
    offline = all(importlib.util.find_spec(name) for name in ("setuptools", "wheel"))
    flags = ["--no-build-isolation"] if offline else []
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", *flags, "-w", str(out), str(project)],
        check=True,
        capture_output=True,
    )
    (wheel,) = out.glob(f"{project.name.replace('-', '_')}-*.whl")
    return wheel


@pytest.fixture(scope="module")
def wheels(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """plantrail's wheel, built from a copy of the sources, and a wheel of another tool with a top-level ``cli``."""
    work = tmp_path_factory.mktemp("wheels")
    source = work / "plantrail"
    ignore = shutil.ignore_patterns(".git", ".venv", "build", "*.egg-info", "__pycache__", ".*cache*", "tests")
    shutil.copytree(ROOT, source, ignore=ignore)
    other = work / "othertool"
    (other / "cli").mkdir(parents=True)
    (other / "cli" / "__init__.py").write_text("def main():\n    print('othertool 9.9')\n")
    (other / "ledger.py").write_text("OWNER = 'othertool'\n")
    (other / "pyproject.toml").write_text(
        '[build-system]\nrequires = ["setuptools>=61"]\nbuild-backend = "setuptools.build_meta"\n'
        '[project]\nname = "othertool"\nversion = "9.9"\n'
        '[project.scripts]\nothertool = "cli:main"\n'
        "[tool.setuptools]\npackages = ['cli']\npy-modules = ['ledger']\n"
    )
    out = work / "dist"
    return _build_wheel(source, out), _build_wheel(other, out)


def test_the_wheel_holds_one_top_level_package(wheels: tuple[Path, Path]) -> None:
    """plantrail's wheel holds only ``plantrail/``: no top-level ``cli``, ``ledger`` or ``projections``."""
    names = zipfile.ZipFile(wheels[0]).namelist()
    tops = {name.split("/")[0] for name in names if not name.split("/")[0].endswith(".dist-info")}
    assert tops == {"plantrail"}
    assert {"plantrail/ledger/api.py", "plantrail/projections/state.py", "plantrail/cli/main.py"} <= set(names)


def test_plantrail_works_beside_a_tool_with_a_top_level_cli(wheels: tuple[Path, Path], tmp_path: Path) -> None:
    """Both wheels in one site folder: each tool's command and modules are its own."""
    target = tmp_path / "site"
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-index", "--target", str(target), *wheels],
        check=True,
        capture_output=True,
    )
    env = {**os.environ, "PYTHONPATH": str(target)}
    version = subprocess.run(
        [str(target / "bin" / "plantrail"), "--version"], env=env, capture_output=True, text=True, check=True
    )
    assert version.stdout.strip() == f"plantrail, version {plantrail.__version__}"
    other = subprocess.run([str(target / "bin" / "othertool")], env=env, capture_output=True, text=True, check=True)
    assert other.stdout.strip() == "othertool 9.9"
    probe = (
        "import cli, ledger, plantrail, plantrail.ledger.api, plantrail.cli.main; "
        "from plantrail import Ledger; "
        f"print(ledger.OWNER, plantrail.__file__.startswith({str(target)!r}), Ledger.__module__)"
    )
    shown = subprocess.run([sys.executable, "-c", probe], env=env, cwd=tmp_path, capture_output=True, text=True)
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.split() == ["othertool", "True", "plantrail.ledger.api"]


def _all_modules() -> list[str]:
    """Every module of the installed package (walked per sub-package: an editable install maps each one)."""
    import plantrail.cli
    import plantrail.ledger
    import plantrail.projections

    names = ["plantrail"]
    for package in (plantrail.ledger, plantrail.projections, plantrail.cli):
        names.append(package.__name__)
        names += [info.name for info in pkgutil.walk_packages(package.__path__, package.__name__ + ".")]
    return names


def test_no_module_loads_under_its_old_top_level_name() -> None:
    """Loading every plantrail module imports nothing named ``ledger``, ``projections`` or ``cli``."""
    modules = _all_modules()
    assert len(modules) > 40 and "plantrail.ledger.stores.jsonl.log" in modules
    code = (
        "import importlib, sys\n"
        f"for name in {modules!r}:\n"
        "    importlib.import_module(name)\n"
        f"print(sorted(n for n in sys.modules if n.split('.')[0] in {OLD_NAMES!r}))\n"
    )
    shown = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert shown.stdout.strip() == "[]"


def test_the_front_door_exports_the_library() -> None:
    """``from plantrail import Ledger`` works, and ``plantrail`` exports exactly ``plantrail.ledger``'s API."""
    from plantrail import Ledger, ledger

    assert Ledger is ledger.Ledger
    assert plantrail.__all__ == ledger.__all__
    assert all(getattr(plantrail, name) is getattr(ledger, name) for name in plantrail.__all__)
    with pytest.raises(AttributeError):
        _ = plantrail.no_such_name


def test_python_dash_m_plantrail_runs_the_command() -> None:
    """``python -m plantrail`` is the ``plantrail`` command."""
    shown = subprocess.run([sys.executable, "-m", "plantrail", "--version"], capture_output=True, text=True, check=True)
    assert shown.stdout.strip() == f"plantrail, version {plantrail.__version__}"
