"""The run report as text, and the graph and report commands: one self-contained page built from one read."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from collections.abc import Callable
from pathlib import Path

from plantrail.cli.common import run_records
from plantrail.cli.report_page import read_embedded, render_report
from plantrail.ledger.api import Ledger
from plantrail.projections.report import CHANGE_FIELDS, VERSION_FIELDS, report_data
from tests.conftest import SAMPLES, CliResult
from tests.pictures import HOSTILE_TITLE, record_replanned_run
from tests.project.test_packaging import wheels

__all__ = ["wheels"]  # the packaging tests' wheel, built once per module

REPLANS = SAMPLES / "login-fix-replans.jsonl"
PASSED = {"ok": True, "code": None, "message": "checked"}


def _data(path: Path) -> dict[str, object]:
    with run_records(str(path)) as (_, records):
        return report_data(records, verify=PASSED)


def test_report_data_holds_every_version_from_one_read() -> None:
    """A one-shot stream of records gives the whole report: every version, the timeline and the orphans."""
    with run_records(str(REPLANS)) as (_, records):
        once = iter(records)
        data = report_data(once, verify=PASSED)
        assert next(once, None) is None
    versions = [dict(zip(VERSION_FIELDS, row, strict=True)) for row in data["versions"]]  # type: ignore[attr-defined]
    assert [v["v"] for v in versions] == [1, 2, 3]
    assert versions[0]["ch"] is None and len(versions[1]["ch"]) == len(CHANGE_FIELDS)
    assert [v["sup"] for v in versions] == [versions[1]["seq"], versions[2]["seq"], None]
    assert len(data["orphans"]) == 1 and data["timeline"]["replans"]  # type: ignore[arg-type,index]
    assert data["receipt"]["verdict"] == "finished"  # type: ignore[index]


def test_the_page_embeds_its_data_and_requests_nothing() -> None:
    """The page round-trips its data, holds one inline style and two scripts, and names no outside resource."""
    data = _data(REPLANS)
    page = render_report(data)
    assert read_embedded(page) == data
    assert page.count("<script") == 2 and page.count("</script>") == 2
    assert "default-src 'none'" in page
    assert not re.search(r"\b(src|href)\s*=|@import|https?://(?!www\.w3\.org/2000/svg)", page)
    assert re.findall(r"url\(([^)]*)\)", page) == ["#arrow"] * page.count("url(")


def test_hostile_text_cannot_break_out_of_the_page(make_ledger: Callable[..., Ledger], tmp_path: Path) -> None:
    """A title holding ``</script>``, ``<!--`` and markup stays inside the data; the page's own markup is intact."""
    record_replanned_run(make_ledger, title=HOSTILE_TITLE)
    data = _data(tmp_path / "run.jsonl")
    page = render_report(data)
    assert page.count("</script>") == 2 and "<!--" not in page and "onload=" not in page
    assert HOSTILE_TITLE in read_embedded(page)["S"]


def test_report_is_deterministic() -> None:
    """The same log gives the same page, byte for byte (the compressed data carries no timestamp)."""
    assert render_report(_data(REPLANS)) == render_report(_data(REPLANS))


def test_graph_command_writes_each_format(run_cli: Callable[..., CliResult], tmp_path: Path) -> None:
    """graph writes SVG to a file and DOT and Mermaid to stdout, for a past version or a seq."""
    out = tmp_path / "v1.svg"
    assert run_cli("graph", REPLANS, "--version", "1", "-o", out).code == 0
    assert out.read_text().startswith("<svg") and 'data-version="1"' in out.read_text()
    dot = run_cli("graph", REPLANS, "--format", "dot")
    assert dot.code == 0 and dot.out.startswith('digraph "plan v3"')
    mermaid = run_cli("graph", REPLANS, "--format", "mermaid", "--at-seq", "5")
    assert mermaid.code == 0 and mermaid.out.startswith("flowchart LR")


def test_graph_command_refuses_bad_choices(run_cli: Callable[..., CliResult]) -> None:
    """Both --version and --at-seq is a usage error; a version the log lacks is UNKNOWN_PLAN_VERSION."""
    both = run_cli("graph", REPLANS, "--version", "1", "--at-seq", "3")
    assert (both.code, both.err.strip()) == (2, "error[USAGE]: give --version V or --at-seq N, not both")
    missing = run_cli("graph", REPLANS, "--version", "9")
    assert missing.code == 1 and missing.err.startswith("error[UNKNOWN_PLAN_VERSION]")


def test_report_command_writes_one_file_and_no_bar_into_a_pipe(
    run_cli: Callable[..., CliResult], tmp_path: Path
) -> None:
    """report writes the page; with stderr not a terminal it prints one summary line and no progress bar."""
    out = tmp_path / "run.html"
    result = run_cli("report", REPLANS, "-o", out)
    assert result.code == 0 and result.out == ""
    assert result.err == f"wrote {out}: 3 plan versions, 31 events\n"
    page = out.read_text(encoding="utf-8")
    assert read_embedded(page)["verify"]["ok"] is True


def test_report_of_a_torn_log_says_verify_failed(run_cli: Callable[..., CliResult], tmp_path: Path) -> None:
    """A log ending in a torn line still gets the report of its valid part, whose header says verify failed
    (TORN_TAIL); the command then reports the torn tail (exit 3)."""
    log = tmp_path / "torn.jsonl"
    log.write_bytes(REPLANS.read_bytes() + b'{"v":1,"seq":32,"ts":"2026')
    out = tmp_path / "r.html"
    result = run_cli("report", log, "-o", out)
    assert result.code == 3 and "error[TORN_TAIL]" in result.err
    data = read_embedded(out.read_text(encoding="utf-8"))
    assert data["verify"]["ok"] is False and data["verify"]["code"] == "TORN_TAIL" and data["last_seq"] == 31


def test_the_installed_wheel_renders_a_report(wheels: tuple[Path, Path], tmp_path: Path) -> None:
    """Installed from its wheel (the page's CSS and script are package data), plantrail writes a whole report."""
    target = tmp_path / "site"
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-index", "--target", str(target), wheels[0]],
        check=True,
        capture_output=True,
    )
    out = tmp_path / "run.html"
    env = {**os.environ, "PYTHONPATH": str(target)}
    done = subprocess.run(
        [str(target / "bin" / "plantrail"), "report", str(REPLANS), "-o", str(out)],
        env=env,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    page = out.read_text(encoding="utf-8")
    assert "DecompressionStream" in page and ".lane{" in page and read_embedded(page)["run"] == "login-fix-replans"


def test_graph_and_report_speak_json(run_cli: Callable[..., CliResult], tmp_path: Path) -> None:
    """graph --json is the laid-out graph; report --json describes the page it wrote."""
    shown = run_cli("graph", REPLANS, "--json").json()
    assert [n["id"] for n in shown["nodes"]][:2] == ["reproduce", "capture-fixture"] and shown["version"] == 3
    assert {"source", "target", "kind", "critical"} <= set(shown["edges"][0]) and shown["critical"] == []
    out = tmp_path / "run.html"
    result = run_cli("report", REPLANS, "-o", out, "--json")
    body = result.json()
    assert result.code == 0 and result.err == ""
    assert (body["ok"], body["bytes"], body["versions"], body["verify"]["ok"]) == (True, out.stat().st_size, 3, True)


def _late_marks(svg: str) -> dict[str, str]:
    root = ET.fromstring(svg)
    return {g.get("data-step-id", ""): g.get("data-late", "") for g in root.iter() if g.get("data-late") is not None}


def test_graph_marks_late_results_as_of_its_point(run_cli: Callable[..., CliResult]) -> None:
    """Version 1 drawn whole carries the late result that arrived at seq 12; drawn at seq 10 it does not yet."""
    whole = run_cli("graph", REPLANS, "--version", "1")
    early = run_cli("graph", REPLANS, "--at-seq", "10")
    assert whole.code == early.code == 0
    assert _late_marks(whole.out)["check-config"] == "1" and _late_marks(early.out)["check-config"] == "0"


def test_an_unwritable_output_is_an_error_not_a_traceback(run_cli: Callable[..., CliResult], tmp_path: Path) -> None:
    """Writing into a folder that does not exist fails with a stable code and leaves no partial file behind."""
    result = run_cli("graph", REPLANS, "-o", tmp_path / "missing" / "g.svg")
    assert result.code == 4 and result.err.startswith("error[") and "Traceback" not in result.err
    assert list(tmp_path.iterdir()) == []
