"""The history index: versions, why and diff read from it give exactly what a fold of the whole log gives."""

from __future__ import annotations

import copy
import random
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from plantrail.ledger.api import Ledger
from plantrail.ledger.stores.jsonl import cache, reads
from plantrail.ledger.stores.jsonl.log import LogReader
from plantrail.ledger.vocabulary.errors import PlantrailError
from plantrail.projections.history import (
    diff_view,
    history,
    replay_versions,
    shown_versions,
    version_items,
    versions_view,
    why_view,
)
from plantrail.projections.model import PlanState
from plantrail.projections.views import ready_steps
from tests.conftest import CliResult
from tests.strategies import commands, plans, simulate

DRAFT: dict[str, Any] = {
    "goal": "ship it",
    "acceptance_criteria": [{"id": "c1", "description": "tests pass"}, {"id": "c2", "description": "docs"}],
    "steps": [
        {"id": "a", "title": "do a", "completion_evidence": "output"},
        {"id": "b", "title": "do b", "depends_on": ["a"], "completion_evidence": "output"},
        {"id": "c", "title": "do c", "depends_on": ["a"], "completion_evidence": "output"},
        {"id": "d", "title": "do d", "depends_on": ["b", "c"], "completion_evidence": "output"},
    ],
    "policy": {"max_in_progress": 2},
}


def _replanned(state: PlanState, rng: random.Random) -> dict[str, Any]:
    """The active plan with one step retitled, sometimes a criterion reworded, a step added or dropped."""
    assert state.plan is not None
    steps = [
        {"id": s.id, "title": s.title, "depends_on": list(s.depends_on), "completion_evidence": "output"}
        for s in state.plan.steps
    ]
    rng.choice(steps)["title"] += "'"
    criteria = [{"id": c.id, "description": c.description} for c in state.plan.acceptance_criteria]
    if rng.random() < 0.3:
        rng.choice(criteria)["description"] += "!"
    if rng.random() < 0.3:
        steps.append({"id": f"x{state.version}", "title": "extra", "depends_on": ["a"], "completion_evidence": "o"})
    elif len(steps) > 4 and rng.random() < 0.5:
        steps.pop()
    return {"goal": "ship it", "acceptance_criteria": criteria, "steps": steps, "policy": {"max_in_progress": 2}}


def _move(ledger: Ledger, rng: random.Random) -> None:
    """One legal-looking command chosen against the ledger's state (a refusal is simply skipped)."""
    state = ledger.state
    running = [s.id for s in state.steps.values_in_order() if s.status == "in_progress"]
    kind = rng.randrange(8)
    try:
        if kind < 2 and ready_steps(state):
            ledger.start(rng.choice(ready_steps(state)))
        elif kind < 4 and running:
            ledger.complete(rng.choice(running), [f"done {rng.randrange(100)}"])
        elif kind == 4 and running:
            ledger.fail(rng.choice(running), "boom")
        elif kind == 5 and state.version > 1:
            step = rng.choice([s.id for s in state.plan.steps]) if state.plan else "a"
            ledger.complete(step, ["late"], plan_version=state.version - 1, attempt=1)
        elif kind == 6:
            ledger.verify_criterion(rng.choice(["c1", "c2"]), rng.random() < 0.7, f"seen {rng.randrange(9)}")
        elif kind == 7:
            ledger.replan(
                reason=rng.choice(["new_constraint", "failed_assumption"]),
                why=f"replan {state.version}",
                plan=_replanned(state, rng),
                causes=(state.last_seq,),
            )
    except PlantrailError:
        pass


def _recorded(path: Path, seed: int, moves: int) -> list[bytes]:
    """The lines of a run of ``moves`` seeded commands recorded through the ledger."""
    rng = random.Random(seed)
    ledger = Ledger.create(path, copy.deepcopy(DRAFT), run="r", fsync="none", nonce="0" * 32, cache=False)
    with ledger:
        for _ in range(moves):
            _move(ledger, rng)
    lines = path.read_bytes().splitlines(keepends=True)
    path.unlink()
    return lines


Logs = st.builds(lambda plan, cmds: simulate(plan, cmds).lines, plans(), st.lists(commands(), max_size=40))


def _write(path: Path, lines: list[bytes]) -> Path:
    path.write_bytes(b"".join(lines))
    return path


def _full_diff(path: Path, old: int, new: int) -> dict[str, Any]:
    with LogReader(str(path)) as reader:
        ends = {v: span.state for v, span in replay_versions(reader.records(), range(old, new + 1)).items()}
    with LogReader(str(path)) as again:
        versions = history(again.records()).versions
    return diff_view(ends, versions, old, new)


def _full_why(path: Path, version: int) -> dict[str, Any]:
    with LogReader(str(path)) as reader:
        final = history(reader.records())
    with LogReader(str(path)) as reader:
        return why_view(reader.records(), final, version)


def _folded(path: Path) -> tuple[PlanState, list[dict[str, Any]]]:
    with LogReader(str(path)) as reader:
        log = history(reader.records())
    return log.state, versions_view(log)


def _indexed_views(path: Path) -> dict[str, Any]:
    """Every view the index answers, as JSON bytes' worth of data."""
    found = reads.read_versions(str(path))
    views: dict[str, Any] = {"count": found.total, "run": found.run}
    entries = found.entries(1, found.total)
    views["versions"] = reads_items(entries)
    views["diffs"] = {
        f"{old}-{new}": reads.version_diff(str(path), old, new)[0]
        for old in range(1, found.total)
        for new in range(old + 1, min(found.total, old + 3) + 1)
    }
    views["whys"] = {v: reads.replan_audit(str(path), v)[0] for v in range(2, found.total + 1)}
    return views


def reads_items(entries: list[reads.VersionEntry]) -> list[dict[str, Any]]:
    """The versions view of index entries, as if the last were the active version."""
    return version_items([e.info for e in entries], None)


def _full_views(path: Path) -> dict[str, Any]:
    state, items = _folded(path)
    count = len(items)
    return {
        "count": count,
        "run": state.run,
        "versions": items,
        "diffs": {
            f"{old}-{new}": _full_diff(path, old, new)
            for old in range(1, count)
            for new in range(old + 1, min(count, old + 3) + 1)
        },
        "whys": {v: _full_why(path, v) for v in range(2, count + 1)},
    }


def _same(a: dict[str, Any], b: dict[str, Any]) -> None:
    dump = orjson.dumps(a, option=orjson.OPT_NON_STR_KEYS), orjson.dumps(b, option=orjson.OPT_NON_STR_KEYS)
    assert dump[0] == dump[1]


@pytest.fixture(autouse=True)
def _index_small_logs(monkeypatch: pytest.MonkeyPatch) -> None:
    """Rebuilds of a version use the version index at any size (as they do past 1 MB)."""
    monkeypatch.setattr(reads, "INDEX_FROM_BYTES", 0)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(lines=Logs, cut=st.floats(min_value=0, max_value=1))
def test_indexed_answers_are_the_full_folds_even_as_the_log_grows(
    tmp_path_factory: pytest.TempPathFactory, lines: list[bytes], cut: float
) -> None:
    """versions, why and diff from the history index equal the full fold's, built on a prefix of the log and
    extended after the rest is appended, and again after the cache is deleted."""
    path = tmp_path_factory.mktemp("log") / "run.jsonl"
    _write(path, lines[: max(2, int(len(lines) * cut))])
    _same(_indexed_views(path), _full_views(path))
    _write(path, lines)
    _same(_indexed_views(path), _full_views(path))
    shutil.rmtree(cache.cache_dir(str(path)))
    _same(_indexed_views(path), _full_views(path))


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    seed=st.integers(min_value=0, max_value=2**32), moves=st.integers(min_value=5, max_value=120), cut=st.floats(0, 1)
)
def test_recorded_runs_answer_alike_from_the_index_and_the_fold(
    tmp_path_factory: pytest.TempPathFactory, seed: int, moves: int, cut: float
) -> None:
    """On runs with completions, late results, verdicts and replans that reset work, the indexed versions, why
    and diff equal the full fold's, on a prefix, after the rest is appended, and without the cache."""
    path = tmp_path_factory.mktemp("run") / "run.jsonl"
    lines = _recorded(path, seed, moves)
    _write(path, lines[: max(2, int(len(lines) * cut))])
    _same(_indexed_views(path), _full_views(path))
    _write(path, lines)
    _same(_indexed_views(path), _full_views(path))
    shutil.rmtree(cache.cache_dir(str(path)))
    _same(_indexed_views(path), _full_views(path))


def test_without_the_cache_the_answers_come_from_a_fold(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """PLANTRAIL_NO_CACHE reads the versions from a fold and writes no index."""
    monkeypatch.setenv("PLANTRAIL_NO_CACHE", "1")
    path = _write(tmp_path / "run.jsonl", _replanned_lines())
    found = reads.read_versions(str(path))
    assert found.total == 3
    assert not Path(cache.cache_dir(str(path)), "history.meta").exists()
    assert reads_items(found.entries(1, 3)) == _folded(path)[1]


def _replanned_lines() -> list[bytes]:
    """A log of three plan versions, the second retitling the step the first started."""
    from plantrail.ledger.rules.decide import Replan, Start
    from plantrail.ledger.vocabulary.plan import CriterionSpec, PlanSpec, Policy, StepSpec

    def plan(title: str) -> PlanSpec:
        steps = (StepSpec("a", title, (), "output", 3), StepSpec("b", "then b", ("a",), "output", 3))
        return PlanSpec("ship it", (CriterionSpec("c", "works"),), steps, Policy(1))

    cmds = [
        Start(step="a"),
        Replan(reason="new_constraint", why="one", plan=plan("a again"), causes=(1,)),
        Replan(reason="user_request", why="two", plan=plan("a once more"), causes=(2,)),
    ]
    return simulate(plan("do a"), cmds).lines


def test_an_edited_index_is_not_believed(tmp_path: Path) -> None:
    """A history blob changed on disk fails its digest, an entry changed fails the idx hash the sealed meta
    vouches for, and a meta rewritten without this user's key is not read: each time the answer is the
    fold's, never an error and never the edit."""
    path = _write(tmp_path / "run.jsonl", _replanned_lines())
    expected = _folded(path)[1]
    folder = Path(cache.cache_dir(str(path)))
    reads.read_versions(str(path))
    assert _loaded(path)
    bin_path = folder / "history.bin"
    data = bytearray(bin_path.read_bytes())
    data[5] ^= 0xFF
    bin_path.write_bytes(bytes(data))
    assert reads_items(reads.read_versions(str(path)).entries(1, 3)) == expected
    shutil.rmtree(folder)
    reads.read_versions(str(path))
    idx_path = folder / "history.idx"
    entries = bytearray(idx_path.read_bytes())
    entries[0] ^= 0x01  # version 1's entry now claims another number
    idx_path.write_bytes(bytes(entries))
    assert not _loaded(path)
    assert reads_items(reads.read_versions(str(path)).entries(1, 3)) == expected
    meta = folder / "history.meta"
    sealed = meta.read_bytes()
    payload = sealed[sealed.index(b"{") :]
    meta.write_bytes(payload)  # the same content, not sealed: what a writer without the key could leave
    assert not _loaded(path)
    assert reads_items(reads.read_versions(str(path)).entries(1, 3)) == expected


def test_names_planted_in_the_cache_folder_are_never_followed(tmp_path: Path) -> None:
    """A symlink planted at a history file's name is neither read nor written through: its target is unchanged
    and the answers are the fold's."""
    path = _write(tmp_path / "run.jsonl", _replanned_lines())
    expected = _folded(path)[1]
    folder = Path(cache.cache_dir(str(path)))
    folder.mkdir(mode=0o700)
    outside = tmp_path / "outside.txt"
    outside.write_bytes(b"not plantrail's")
    for name in ("history.idx", "history.bin", "history.lock"):
        (folder / name).symlink_to(outside)
    assert reads_items(reads.read_versions(str(path)).entries(1, 3)) == expected
    assert outside.read_bytes() == b"not plantrail's"


def _loaded(path: Path) -> bool:
    """True when the log's history index checks out (its sealed meta, the idx it vouches for, the log)."""
    with path.open("rb") as log:
        return cache.load_history(str(path), log.fileno()) is not None


def test_a_torn_tail_is_reported_and_the_valid_part_answers(tmp_path: Path) -> None:
    """A log ending in a torn line gives the valid part's versions and names the torn tail."""
    lines = _replanned_lines()
    path = _write(tmp_path / "run.jsonl", [*lines, lines[-1][:20]])
    found = reads.read_versions(str(path))
    assert found.torn is not None
    assert found.total == 3


@pytest.mark.parametrize(
    ("count", "options", "shown"),
    [
        (30, {}, range(11, 31)),
        (5, {}, range(1, 6)),
        (30, {"everything": True}, range(1, 31)),
        (30, {"limit": 3}, range(28, 31)),
        (30, {"since": 25}, range(25, 31)),
        (30, {"since": 5, "limit": 2}, range(5, 7)),
        (0, {}, range(1, 1)),
    ],
)
def test_versions_shows_the_latest_twenty_unless_told_otherwise(
    count: int, options: dict[str, Any], shown: range
) -> None:
    """The default view is the latest 20 versions; --all, --limit and --since-version choose others."""
    assert shown_versions(count, **options) == shown


@pytest.fixture
def many_versions(tmp_path: Path) -> Path:
    """A recorded run with more than 20 plan versions, its history index built on first read."""
    path = tmp_path / "run.jsonl"
    lines = _recorded(path, 1, 260)
    assert sum(b'"plan.replanned"' in line for line in lines) > 21
    path.write_bytes(b"".join(lines))
    return path


def test_versions_command_shows_the_latest_twenty_by_default(
    many_versions: Path, run_cli: Callable[..., CliResult]
) -> None:
    """versions --json lists the latest 20 versions, --all every one, as the fold lists them."""
    state, items = _folded(many_versions)
    default = run_cli("versions", many_versions, "--json").json()
    assert default == {"run": state.run, "active_version": state.version, "versions": items[-20:]}
    assert run_cli("versions", many_versions, "--all", "--json").json()["versions"] == items
    since = run_cli("versions", many_versions, "--since-version", "3", "--limit", "2", "--json").json()
    assert since["versions"] == items[2:4]
    human = run_cli("versions", many_versions).out
    assert f"showing v{state.version - 19} to v{state.version}" in human


def test_versions_command_refuses_what_cannot_mean_anything(
    many_versions: Path, run_cli: Callable[..., CliResult]
) -> None:
    """--all with --limit is a usage error; a --since-version past the log is UNKNOWN_PLAN_VERSION."""
    assert run_cli("versions", many_versions, "--all", "--limit", "3").code == 2
    beyond = run_cli("versions", many_versions, "--since-version", "999")
    assert beyond.code == 1
    assert "error[UNKNOWN_PLAN_VERSION]" in beyond.err


def test_why_and_diff_commands_answer_as_the_fold(many_versions: Path, run_cli: Callable[..., CliResult]) -> None:
    """why --json and diff --json from the index equal the fold's views."""
    count = len(_folded(many_versions)[1])
    assert run_cli("why", many_versions, "--json").json() == orjson.loads(orjson.dumps(_full_why(many_versions, count)))
    assert run_cli("diff", many_versions, "3", "7", "--json").json() == orjson.loads(
        orjson.dumps(_full_diff(many_versions, 3, 7))
    )


def _with_extensions(cmds: list[Any]) -> list[Any]:
    """``cmds`` with an extension in place at the start and right after every replan (when the version is new)."""
    from plantrail.ledger.rules.decide import Extend, Replan
    from plantrail.ledger.vocabulary.plan import CriterionSpec, StepSpec

    def extension(n: int) -> Extend:
        step = StepSpec(f"x{n}", f"more work {n}", ("a",) if n % 2 else (), "evidence of more", 3)
        return Extend(steps=(step,), criteria=(CriterionSpec(f"c{n + 10}", "also works"),) if n % 3 == 0 else ())

    out: list[Any] = [extension(0)]
    for n, command in enumerate(cmds, start=1):
        out.append(command)
        if isinstance(command, Replan):
            out.append(extension(n))
    return out


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(plan=plans(), cmds=st.lists(commands(), max_size=40), cut=st.floats(min_value=0, max_value=1))
def test_versions_extended_in_place_answer_alike_from_the_index_and_the_fold(
    tmp_path_factory: pytest.TempPathFactory, plan: Any, cmds: list[Any], cut: float
) -> None:
    """With versions extended in place (plan.extended), the indexed versions, why and diff equal the full fold's,
    on a prefix (which may end before an extension), after the rest is appended, and without the cache."""
    lines = simulate(plan, _with_extensions(cmds)).lines
    path = tmp_path_factory.mktemp("log") / "run.jsonl"
    _write(path, lines[: max(2, int(len(lines) * cut))])
    _same(_indexed_views(path), _full_views(path))
    _write(path, lines)
    _same(_indexed_views(path), _full_views(path))
    shutil.rmtree(cache.cache_dir(str(path)))
    _same(_indexed_views(path), _full_views(path))


def test_an_entry_made_before_an_extension_is_rebuilt(tmp_path: Path) -> None:
    """A history index written while the active version had one step says two once the version is extended."""
    from plantrail.ledger.vocabulary.plan import StepSpec

    path = tmp_path / "run.jsonl"
    with Ledger.create(path, copy.deepcopy(DRAFT), fsync="none") as ledger:
        assert reads.read_versions(str(path)).entry(1).info.plan.steps[-1].id == "d"  # the index is written
        ledger.extend(steps=StepSpec("e", "do e", ("d",), "output"))
    found = reads.read_versions(str(path))

    assert [s.id for s in found.entry(1).info.plan.steps] == ["a", "b", "c", "d", "e"]
    assert found.entry(1).info.extended == (2,)
    assert reads_items(found.entries(1, 1)) == _folded(path)[1]
