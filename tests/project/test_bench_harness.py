"""Fast tests of the benchmark harness logic (no timing assertions)."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from bench.harness import (
    Row,
    Sample,
    _ratio_text,
    compare,
    format_quantity,
    format_size,
    interleave,
    measure,
    parse_target,
    peak_rss_mb,
    render_table,
    subprocess_time,
)


def test_median_of_odd_and_even_counts() -> None:
    assert Sample((3.0, 1.0, 2.0)).median == 2.0
    assert Sample((4.0, 1.0, 3.0, 2.0)).median == 2.5


def test_interleave_alternates_candidate_then_baseline() -> None:
    calls: list[str] = []

    def probe(tag: str, value: float) -> Callable[[], float]:
        def run() -> float:
            calls.append(tag)
            return value + len(calls)

        return run

    cand, base = interleave(probe("c", 0.0), probe("b", 100.0), repeats=3)
    assert calls == ["c", "b", "c", "b", "c", "b"]
    assert cand.values == (1.0, 3.0, 5.0)
    assert base.values == (102.0, 104.0, 106.0)


def test_compare_runs_each_setup_right_before_its_own_side() -> None:
    calls: list[str] = []
    row = compare(
        "fig",
        lambda: calls.append("c"),
        lambda: calls.append("b"),
        candidate_setup=lambda: calls.append("cs"),
        baseline_setup=lambda: calls.append("bs"),
        repeats=2,
        target="<=2x",
        size=10,
        events=10,
    )
    assert calls == ["cs", "c", "bs", "b"] * 2
    assert row.candidate is not None and len(row.candidate.values) == 2
    assert row.baseline is not None and len(row.baseline.values) == 2


def test_measure_keeps_every_run_and_runs_setup_each_time() -> None:
    calls: list[str] = []
    result = measure(lambda: calls.append("run"), repeats=4, setup=lambda: calls.append("setup"))
    assert calls == ["setup", "run"] * 4
    assert len(result.values) == 4 and all(v >= 0 for v in result.values)


def test_repeats_must_be_positive() -> None:
    with pytest.raises(ValueError):
        interleave(lambda: 1.0, lambda: 1.0, repeats=0)


def test_ratio_is_candidate_over_baseline_and_drives_ratio_targets() -> None:
    row = Row("fig", 100, "s", Sample((2.0,)), Sample((1.0,)), target="<=3x", events=100)
    assert row.ratio == 2.0
    assert row.met is True
    assert Row("fig", 100, "s", Sample((2.0,)), Sample((1.0,)), target="<=1.5x").met is False
    assert row.per_event(row.candidate) == pytest.approx(0.02)


def test_absolute_target_bounds_the_candidate_median() -> None:
    row = Row("mem", None, "MB", Sample((120.0,)), Sample((30.0,)), target="<150")
    assert row.met is True
    assert Row("mem", None, "MB", Sample((160.0,)), Sample((30.0,)), target="<150").met is False


def test_met_is_undecided_without_target_or_candidate() -> None:
    assert Row("fig", 1, "s", Sample((1.0,)), Sample((1.0,))).met is None
    pending = Row("fig", 1, "s", None, Sample((1.0,)), target="<=2x")
    assert pending.ratio is None and pending.met is None


@pytest.mark.parametrize("text", ["2x", "<= x", "about 3", "<=3y"])
def test_bad_targets_are_rejected(text: str) -> None:
    with pytest.raises(ValueError):
        parse_target(text)


def test_formatting_of_quantities_and_sizes() -> None:
    assert format_quantity(1.5e-3, "s") == "1.5 ms"
    assert format_quantity(2.5e-8, "s") == "25 ns"
    assert format_quantity(27.04, "MB") == "27 MB"
    assert format_size(1_000_000) == "10^6"
    assert format_size(2_500) == "2,500"
    assert format_size(None) == "—"


def test_render_table_has_header_and_one_line_per_row() -> None:
    rows = [
        Row("replay", 100_000, "s", Sample((0.2,)), Sample((0.1,)), target="<=3x", events=100_000),
        Row("fsync", 1_000, "s", None, Sample((0.1,)), events=1_000),
        Row("memory", 10, "MB", Sample((200.0,)), Sample((30.0,)), target="<=150"),
    ]
    lines = render_table(rows).splitlines()
    assert lines[0] == "| figure | size | plantrail median | baseline median | ratio | target | met |"
    assert len(lines) == 2 + len(rows)
    assert lines[2] == "| replay | 10^5 | 200 ms (2 µs/ev) | 100 ms (1 µs/ev) | 2.00x | <=3x | yes |"
    assert lines[3] == "| fsync | 10^3 | pending | 100 ms (100 µs/ev) | — | — | — |"
    assert lines[4] == "| memory | 10 | 200 MB | 30 MB | 6.67x | <=150 MB | **no** |"


def test_peak_rss_mb_of_a_trivial_interpreter_is_positive() -> None:
    assert peak_rss_mb([sys.executable, "-c", "pass"]) > 0


def test_peak_rss_mb_ignores_the_parents_own_rss() -> None:
    ballast = b"\x01" * (150 * 1024 * 1024)  # touched pages, so the parent's RSS grows
    assert peak_rss_mb([sys.executable, "-c", "pass"]) < 100
    del ballast


def test_peak_rss_mb_raises_when_the_child_fails() -> None:
    with pytest.raises(subprocess.CalledProcessError):
        peak_rss_mb([sys.executable, "-c", "raise SystemExit(3)"])


def test_subprocess_time_returns_one_value_per_repeat() -> None:
    result = subprocess_time([sys.executable, "-c", "pass"], repeats=2)
    assert len(result.values) == 2 and result.median > 0


def test_small_ratios_keep_three_significant_digits() -> None:
    """A resume that takes 1.43 % of a replay reads 0.0143x, not 0.01x (which hides a missed <0.01x target)."""
    assert (_ratio_text(0.0143), _ratio_text(0.000352), _ratio_text(5.234), _ratio_text(0.1)) == (
        "0.0143x",
        "0.000352x",
        "5.23x",
        "0.10x",
    )


def test_a_recorded_script_replays_one_command_at_a_time_and_in_batches(tmp_path: Path) -> None:
    """The benchmark's script replays as the append rows replay it: one command per append writes exactly the
    recorded lines, and batches of 100 (a group commit adds its begin and end records) are all accepted."""
    from bench.sides import append_batches, append_each, script

    recorded = script(tmp_path, 400)
    each = tmp_path / "each.jsonl"
    append_each(each, recorded)()
    assert each.read_bytes().splitlines(keepends=True)[2:] == recorded.lines
    batched = tmp_path / "batched.jsonl"
    append_batches(batched, recorded)()
    assert len(batched.read_bytes().splitlines()) > len(recorded.lines) + 2


def test_versus_times_each_install_against_the_loop(capsys: pytest.CaptureFixture[str]) -> None:
    """`python -m bench.versus` runs each install's commands on the log, beside the orjson loop, and prints the
    medians as ratios to the loop's."""
    from bench import versus

    if not Path(sys.prefix, "bin", "plantrail").exists():
        pytest.skip("plantrail is not installed in this interpreter's environment")
    log = Path(__file__).parents[2] / "samples" / "login-fix-replans.jsonl"
    assert versus.main([str(log), f"here={sys.prefix}", "--command", "verify", "--repeats", "2"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert "medians of 2, interleaved · load " in lines[0] and lines[-1].startswith("load at the end ")
    assert [line.split()[0:2] for line in lines[1:-1]] == [["orjson", "loop"], ["here:", "verify"]]
    assert all("x)  CPU" in line for line in lines[1:-1])


def test_versus_times_the_hook_call_and_an_append_of_each_install(capsys: pytest.CaptureFixture[str]) -> None:
    """`--hook` times a hook call on a session each install captured itself, `--append N` the CPU an event of
    N starts and completions; with two installs each row also gets its ratio to the first's."""
    from bench import versus

    if not Path(sys.prefix, "bin", "plantrail").exists():
        pytest.skip("plantrail is not installed in this interpreter's environment")
    log = Path(__file__).parents[2] / "samples" / "login-fix-replans.jsonl"
    argv = [str(log), f"a={sys.prefix}", f"b={sys.prefix}", "--hook", "--append", "20", "--repeats", "2"]
    assert versus.main(argv) == 0
    lines = capsys.readouterr().out.splitlines()
    timed = [line.split("  ")[0].split(":")[0] for line in lines[1:] if "wall" in line and "x)" in line]
    assert timed == ["orjson loop", "a", "b"]  # no command asked: the loop and the hook calls
    assert sum("hook call  wall" in line for line in lines) == 2
    assert [line.split()[0] for line in lines if "append, fsync none  CPU" in line] == ["a:", "b:"]
    ratios = lines[lines.index("ratios to a (medians; below 1 is faster):") + 1 :]
    assert ratios[0].startswith("  b hook call: wall ")
    assert ratios[1].startswith("  b append, fsync none: CPU an event ")


def test_imports_parse_names_each_modules_importer() -> None:
    """bench.imports reads `-X importtime` lines: each module's own and cumulative time, and the module it was
    imported under (the next one listed less indented), none for a top-level import."""
    from bench.imports import Cost, parse

    text = (
        "import time: self [us] | cumulative | imported package\n"
        "import time:        10 |         10 |     leaf\n"
        "import time:        20 |         30 |   middle\n"
        "import time:         5 |          5 |   sibling\n"
        "import time:       100 |        135 | top\n"
    )
    assert parse(text) == [
        Cost("leaf", 10, 10, "middle"),
        Cost("middle", 20, 30, "top"),
        Cost("sibling", 5, 5, "top"),
        Cost("top", 100, 135, None),
    ]
