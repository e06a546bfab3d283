"""The progress bar: drawn on a terminal for long reads (report, verify), never into a pipe or under --json."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from bench.scenario import record_run
from plantrail.cli.progress import EVERY, bar_line, progress_bar, progress_for
from plantrail.ledger.api import Ledger
from plantrail.ledger.stores.jsonl.log import LogReader
from plantrail.ledger.verify import verify_log
from tests.conftest import SAMPLES, CliResult


class Stream:
    """A stderr stand-in that says whether it is a terminal and keeps what was written."""

    def __init__(self, tty: bool) -> None:
        self.text, self.tty = "", tty

    def isatty(self) -> bool:
        return self.tty

    def write(self, text: str) -> int:
        self.text += text
        return len(text)

    def flush(self) -> None:
        pass


def test_bar_line_shows_the_share_done() -> None:
    """The bar fills in proportion and never runs past 100%."""
    assert bar_line("verify", 50, 100, width=10) == "verify [#####.....]  50%"
    assert bar_line("verify", 300, 100, width=4) == "verify [####] 100%"
    assert bar_line("verify", 0, 0, width=4) == "verify [....]   0%"


def test_the_bar_is_drawn_only_on_a_terminal(make_ledger: Callable[..., Ledger], tmp_path: Path) -> None:
    """On a terminal the bar is drawn and erased at the end; into a pipe, or disabled, nothing is written."""
    make_ledger()
    for tty, enabled, drawn in ((True, True, True), (False, True, False), (True, False, False)):
        out = Stream(tty)
        with progress_bar("read", 100, out, show_from=0, enabled=enabled) as show:  # type: ignore[arg-type]
            show(50)
        assert ("read [" in out.text) is drawn and out.text.endswith("\r\x1b[K") is drawn
    out = Stream(True)
    with LogReader(str(tmp_path / "run.jsonl")) as reader, progress_for(reader, "read", out, show_from=0) as tick:  # type: ignore[arg-type]
        for record in reader.records():
            for _ in range(EVERY):
                tick(record)
    assert "read [" in out.text


def test_verify_reports_its_progress(tmp_path: Path) -> None:
    """verify tells its callback how far it is, in growing byte offsets within the file."""
    log = record_run(tmp_path / "run.jsonl", 9000)
    seen: list[int] = []
    verify_log(log, on_progress=seen.append)
    assert len(seen) >= 2 and seen == sorted(seen) and 0 < seen[-1] <= log.stat().st_size


def test_verify_in_a_pipe_prints_no_bar(run_cli: Callable[..., CliResult], tmp_path: Path) -> None:
    """Into a pipe, verify's stderr stays empty and --json stays one document."""
    log = record_run(tmp_path / "run.jsonl", 9000)
    result = run_cli("verify", log, "--json")
    assert result.code == 0 and result.err == "" and result.json()["ok"] is True


def test_import_reports_its_progress(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """import tells its callback how many of its batches it has written, of how many."""
    from plantrail.ledger.importers import importer

    monkeypatch.setattr(importer, "_PROGRESS_EVERY", 1)
    seen: list[tuple[int, int]] = []
    importer.import_transcript(
        SAMPLES / "claude-session.jsonl", tmp_path / "run.jsonl", on_progress=lambda d, t: seen.append((d, t))
    )
    assert seen and [d for d, _ in seen] == sorted(d for d, _ in seen) and {t for _, t in seen} == {seen[0][1]}
    assert seen[-1][0] <= seen[0][1]
