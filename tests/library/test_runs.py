"""``plantrail runs`` and :func:`plantrail.ledger.runs.list_runs`: one row per run of a runs folder or a
database, the same rows from either store, filters and sorting, and rows that say what the log says even
when a snapshot or a summary is stale, missing or forged."""

from __future__ import annotations

import copy
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from plantrail.ledger.api import Ledger
from plantrail.ledger.runs import RunRow, list_runs, parse_when
from plantrail.ledger.vocabulary.errors import PlantrailError
from tests.conftest import LOGIN_DRAFT, CliResult
from tests.helpers.stores import fresh_database, postgres_url


class DayClock:
    """A deterministic clock on one day of January 2026, one microsecond per reading."""

    def __init__(self, day: int) -> None:
        self.day, self.ticks = day, 0

    def __call__(self) -> str:
        self.ticks += 1
        return f"2026-01-{self.day:02d}T00:00:00.{self.ticks:06d}Z"


def _replanned() -> dict[str, Any]:
    draft = copy.deepcopy(LOGIN_DRAFT)
    draft["steps"].append(
        {"id": "fix", "title": "Fix it", "dependsOn": ["diagnose"], "completionEvidence": "the patch"}
    )
    return draft


def populate(location: Callable[[str], str]) -> None:
    """Three runs: alpha finished complete on Jan 3, beta replanned (failed_assumption) with a late result on
    Jan 2, gamma open since Jan 1 (each left by a writer that closed, so with a snapshot or a summary)."""
    with Ledger.create(location("gamma"), copy.deepcopy(LOGIN_DRAFT), clock=DayClock(1)):
        pass
    with Ledger.create(location("beta"), copy.deepcopy(LOGIN_DRAFT), clock=DayClock(2)) as beta:
        beta.start("reproduce")
        beta.replan("failed_assumption", "the bug is in the proxy", plan=_replanned())
        beta.complete("reproduce", "the 401 reproduces", plan_version=1)
    with Ledger.create(location("alpha"), copy.deepcopy(LOGIN_DRAFT), clock=DayClock(3)) as alpha:
        for step in ("reproduce", "diagnose"):
            alpha.start(step)
            alpha.complete(step, f"{step} done")
        alpha.verify_criterion("login-test-passes", True, "green")
        alpha.finish("complete", "all done")


@pytest.fixture(params=["jsonl", "postgres"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[str, Callable[[str], str]]]:
    """A runs folder or a fresh database, and how a run in it is named."""
    if request.param == "jsonl":
        yield str(tmp_path), lambda run: str(tmp_path / f"{run}.jsonl")
        return
    for url in fresh_database(postgres_url()):
        yield url, _in(url)


def _in(url: str) -> Callable[[str], str]:
    """How a run in the database at ``url`` is named."""
    return lambda run: f"{url}#{run}"


def _plain(rows: list[RunRow]) -> list[dict[str, Any]]:
    return [row.as_dict() | {"location": None} for row in rows]


EXPECTED = [
    {"run": "alpha", "outcome": "complete", "plan_version": 1, "replans": 0, "orphans": 0, "last_seq": 7},
    {"run": "beta", "outcome": None, "plan_version": 2, "replans": 1, "orphans": 1, "last_seq": 4},
    {"run": "gamma", "outcome": None, "plan_version": 1, "replans": 0, "orphans": 0, "last_seq": 1},
]


def test_every_run_has_a_row_newest_first(store: tuple[str, Callable[[str], str]]) -> None:
    """Each run is one row with its goal, outcome, version, last record's time, replans and late results,
    newest activity first."""
    where, location = store
    populate(location)
    rows = list_runs(where)
    assert [{k: r.as_dict()[k] for k in EXPECTED[0]} for r in rows] == EXPECTED
    assert {r.goal for r in rows} == {LOGIN_DRAFT["goal"]}
    assert [r.last_activity[:10] for r in rows if r.last_activity] == ["2026-01-03", "2026-01-02", "2026-01-01"]
    assert [r.damage for r in rows] == [None, None, None]
    assert rows[0].location == location("alpha")


def test_filters_sorting_and_limit(store: tuple[str, Callable[[str], str]]) -> None:
    """--outcome, --since, --reason and --has-orphans keep the runs they name; --sort and --limit order and cut."""
    where, location = store
    populate(location)

    def ids(**options: Any) -> list[str | None]:
        return [r.run for r in list_runs(where, **options)]

    assert ids(outcome="open") == ["beta", "gamma"]
    assert ids(outcome="complete") == ["alpha"]
    assert ids(outcome="failed") == []
    assert ids(since="2026-01-02") == ["alpha", "beta"]
    assert ids(since="2026-01-02T00:00:00.000003+00:00") == ["alpha", "beta"]
    assert ids(reason="failed_assumption") == ["beta"]
    assert ids(reason="new_constraint") == []
    assert ids(has_orphans=True) == ["beta"]
    assert ids(sort="run") == ["alpha", "beta", "gamma"]
    assert ids(sort="replans", limit=1) == ["beta"]
    assert ids(sort="plan_version", limit=2) == ["beta", "alpha"]


def test_agent_and_search_filters(store: tuple[str, Callable[[str], str]]) -> None:
    """--agent keeps the runs whose first plan event names that agent (its source's meta, adapter or plan tool);
    --search the runs whose goal or a step title holds the text, in any case; both page with an offset."""
    from plantrail.ledger.vocabulary.events import Source

    where, location = store
    populate(location)
    draft = copy.deepcopy(LOGIN_DRAFT) | {"goal": "Ship the release notes"}
    draft["steps"][0]["title"] = "Collect the MERGED pull requests"
    with Ledger.create(location("delta"), draft, source=Source("session.jsonl", tool="TodoWrite"), clock=DayClock(4)):
        pass
    acp = Source("acp", meta={"agent": "acp:gemini"})
    with Ledger.create(location("omega"), copy.deepcopy(LOGIN_DRAFT), source=acp, clock=DayClock(5)):
        pass

    def ids(**options: Any) -> list[str | None]:
        return [r.run for r in list_runs(where, **options)]

    assert ids(agent="claude-code") == ["delta"]
    assert ids(agent="acp:gemini") == ["omega"]
    assert ids(agent="codex") == []
    assert ids(search="release NOTES") == ["delta"]
    assert ids(search="merged pull") == ["delta"]  # a step title only
    assert ids(search="login", sort="run") == ["alpha", "beta", "gamma", "omega"]
    assert ids(search="login", sort="run", offset=1, limit=2) == ["beta", "gamma"]
    assert [(r.run, r.agent) for r in list_runs(where, details=True, limit=2)] == [
        ("omega", "acp:gemini"),
        ("delta", "claude-code"),
    ]
    assert list_runs(where, limit=1)[0].agent is None  # read only when asked


def test_malformed_filters_have_codes(tmp_path: Path) -> None:
    """A bad outcome, sort, limit or date is USAGE; an unknown reason code UNKNOWN_REASON_CODE; a missing
    folder FOLDER_NOT_FOUND."""
    for options, code in (
        ({"outcome": "done"}, "USAGE"),
        ({"sort": "size"}, "USAGE"),
        ({"limit": 0}, "USAGE"),
        ({"since": "last tuesday"}, "USAGE"),
        ({"until": "2h ago"}, "USAGE"),
        ({"reason": "because"}, "UNKNOWN_REASON_CODE"),
        ({"search": "  "}, "USAGE"),
        ({"agent": ""}, "USAGE"),
        ({"offset": -1}, "USAGE"),
    ):
        with pytest.raises(PlantrailError) as caught:
            list_runs(tmp_path, **options)
        assert caught.value.code == code
    with pytest.raises(PlantrailError) as missing:
        list_runs(tmp_path / "nowhere")
    assert missing.value.code == "FOLDER_NOT_FOUND"
    assert parse_when("2026-01-02") == "2026-01-02T00:00:00.000000Z"


def test_since_and_until_take_local_days_ages_and_iso(monkeypatch: pytest.MonkeyPatch) -> None:
    """today and yesterday start at local midnight (here UTC+5, so 19:00 UTC the day before), an age counts back
    from now, ISO without an offset is UTC; --until keeps what is before its moment."""
    import time
    from datetime import datetime

    monkeypatch.setenv("TZ", "XYZ-5")  # POSIX: a zone 5 hours east of UTC, no daylight saving
    time.tzset()
    try:
        now = datetime.fromisoformat("2026-12-04T02:30:00+00:00")  # 07:30 local on the 4th
        assert parse_when("yesterday", now=now) == "2026-12-02T19:00:00.000000Z"
        assert parse_when("Today", now=now) == "2026-12-03T19:00:00.000000Z"
        assert parse_when("2h", now=now) == "2026-12-04T00:30:00.000000Z"
        assert parse_when("3d", now=now) == "2026-12-01T02:30:00.000000Z"
        assert parse_when("2026-12-01", now=now) == "2026-12-01T00:00:00.000000Z"
        assert parse_when("2026-12-01T10:00+02:00", now=now) == "2026-12-01T08:00:00.000000Z"
        with pytest.raises(PlantrailError, match="until '2 hours'"):
            parse_when("2 hours", now=now, option="until")
    finally:
        monkeypatch.delenv("TZ")
        time.tzset()


def test_until_keeps_the_runs_before_it(tmp_path: Path) -> None:
    """--until is the other end of --since: a run whose last record is at or after it is left out."""
    populate(lambda run: str(tmp_path / f"{run}.jsonl"))
    every = {r.run for r in list_runs(tmp_path)}
    stamps = sorted(r.last_activity for r in list_runs(tmp_path) if r.last_activity)
    later = stamps[-1]
    before = {r.run for r in list_runs(tmp_path, until=later)}
    after = {r.run for r in list_runs(tmp_path, since=later)}
    assert before and after and before | after == every and not before & after


def test_a_folder_and_a_database_give_the_same_rows(tmp_path: Path) -> None:
    """The same runs in a runs folder and in a database list as the same rows (apart from where they live)."""
    populate(lambda run: str(tmp_path / f"{run}.jsonl"))
    for url in fresh_database(postgres_url()):
        populate(_in(url))
        assert _plain(list_runs(url)) == _plain(list_runs(tmp_path))
        assert _plain(list_runs(url, reason="failed_assumption")) == _plain(
            list_runs(tmp_path, reason="failed_assumption")
        )


def _cache_files(folder: Path) -> dict[str, tuple[int, int]]:
    return {
        str(p.relative_to(folder)): (p.stat().st_mtime_ns, p.stat().st_size)
        for p in folder.rglob("*")
        if p.is_file() and ".plantrail-cache" in str(p)
    }


def test_a_stale_or_missing_snapshot_reads_the_log_and_writes_nothing(tmp_path: Path) -> None:
    """A log appended to without a new snapshot, and one whose cache was removed, list what their records say,
    and listing writes no cache file."""
    populate(lambda run: str(tmp_path / f"{run}.jsonl"))
    with Ledger.open(tmp_path / "gamma.jsonl", cache=False, clock=DayClock(9)) as gamma:
        gamma.start("reproduce")
        gamma.finish("cancelled", "not needed")
    import shutil

    shutil.rmtree(tmp_path / "beta.jsonl.plantrail-cache")
    before = _cache_files(tmp_path)
    rows = {r.run: r for r in list_runs(tmp_path)}
    assert (rows["gamma"].outcome, rows["gamma"].last_seq, rows["gamma"].last_activity[:10]) == (
        "cancelled",
        3,
        "2026-01-09",
    )
    assert (rows["beta"].replans, rows["beta"].orphans) == (1, 1)
    assert [r.run for r in list_runs(tmp_path, reason="failed_assumption")] == ["beta"]
    assert _cache_files(tmp_path) == before


def test_damaged_and_foreign_files_are_rows_with_their_damage(tmp_path: Path) -> None:
    """A torn log lists its valid part with TORN_TAIL; a .jsonl that is no log lists with its code; neither
    stops the listing."""
    populate(lambda run: str(tmp_path / f"{run}.jsonl"))
    with open(tmp_path / "alpha.jsonl", "ab") as f:
        f.write(b'{"v":1,"seq":9,')
    (tmp_path / "notes.jsonl").write_text('{"hello": "world"}\n')
    rows = {r.location: r for r in list_runs(tmp_path, sort="run")}
    alpha = rows[str(tmp_path / "alpha.jsonl")]
    assert (alpha.run, alpha.damage, alpha.last_seq) == ("alpha", "TORN_TAIL", 7)
    foreign = rows[str(tmp_path / "notes.jsonl")]
    assert foreign.run is None and foreign.damage is not None
    assert len(rows) == 4


def test_a_stale_or_forged_summary_is_recomputed_from_the_rows() -> None:
    """A database run appended to without a new summary, one whose summary names another seq, and one with no
    summary list what their rows say, and the recomputed summaries are kept for the next listing."""
    psycopg = pytest.importorskip("psycopg")
    for url in fresh_database(postgres_url()):
        populate(_in(url))
        with Ledger.open(f"{url}#gamma", cache=False, clock=DayClock(9)) as gamma:
            gamma.start("reproduce")
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute("DELETE FROM plantrail_summaries WHERE run = 'alpha'")
            conn.execute("UPDATE plantrail_summaries SET seq = 99 WHERE run = 'beta'")
        rows = {r.run: r for r in list_runs(url)}
        assert (rows["gamma"].last_seq, rows["gamma"].last_activity[:10]) == (2, "2026-01-09")
        assert (rows["beta"].last_seq, rows["beta"].orphans) == (4, 1)
        with psycopg.connect(url, autocommit=True) as conn:
            kept = dict(conn.execute("SELECT run, seq FROM plantrail_summaries").fetchall())
        assert kept == {"alpha": 7, "beta": 4, "gamma": 2}
        assert (rows["alpha"].outcome, rows["alpha"].last_seq) == ("complete", 7)


#: How each type of a summary column is edited (a new column of another type fails the test below).
_EDITS = {
    "integer": "{c} = {c} + 1",
    "bigint": "{c} = {c} + 1",
    "text": "{c} = coalesce({c}, '') || 'x'",
    "ARRAY": "{c} = array_append({c}, 'forged')",
}


def _rows(url: str) -> dict[str, RunRow]:
    return {r.run: r for r in list_runs(url)}


def _folded(url: str, psycopg: Any) -> dict[str, RunRow]:
    """The rows as the runs' records say (every summary dropped first, so each run is folded)."""
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("DELETE FROM plantrail_summaries")
    return _rows(url)


def test_an_edited_summary_is_never_listed() -> None:
    """Any column of a run's summary row edited: `runs` lists what the run's records say (the row's digest no
    longer matches its values), and leaves a summary that checks out again."""
    psycopg = pytest.importorskip("psycopg")
    from psycopg import sql

    for url in fresh_database(postgres_url()):
        populate(_in(url))
        truth = _folded(url, psycopg)
        with psycopg.connect(url, autocommit=True) as conn:
            columns = conn.execute(
                "SELECT column_name, data_type FROM information_schema.columns WHERE table_name = "
                "'plantrail_summaries' AND table_schema = current_schema() AND column_name <> 'run'"
            ).fetchall()
            kept = conn.execute("SELECT to_jsonb(s) FROM plantrail_summaries s WHERE run = 'beta'").fetchone()[0]
        assert {"seq", "head", "goal", "outcome", "plan_version", "last_ts", "orphans", "reasons", "digest"} <= {
            name for name, _ in columns
        }
        for name, kind in columns:
            edit = sql.SQL(_EDITS[kind].replace("{c}", "{column}")).format(column=sql.Identifier(name))
            with psycopg.connect(url, autocommit=True) as conn:
                conn.execute(sql.SQL("UPDATE plantrail_summaries SET {} WHERE run = 'beta'").format(edit))
            assert _rows(url) == truth, f"an edited {name} was listed"
            with psycopg.connect(url, autocommit=True) as conn:
                again = conn.execute("SELECT to_jsonb(s) FROM plantrail_summaries s WHERE run = 'beta'").fetchone()[0]
            assert again == kept, f"the summary was not left whole again after an edit of {name}"


def test_a_summary_of_a_replaced_head_is_not_listed() -> None:
    """A run whose last record was replaced by another at the same seq, its summary left as it was, lists what its
    records say now: a summary counts only at the head (seq and hash) it was computed at."""
    psycopg = pytest.importorskip("psycopg")
    for url in fresh_database(postgres_url()):
        populate(_in(url))
        assert _rows(url)["alpha"].outcome == "complete"
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute("DELETE FROM plantrail_records WHERE run = 'alpha' AND seq = 7")
        with Ledger.open(f"{url}#alpha", cache=False, clock=DayClock(9)) as alpha:
            assert alpha.finish("paused", "another ending").seq == 7
        row = _rows(url)["alpha"]
        assert (row.outcome, row.last_seq, row.last_activity[:10]) == ("paused", 7, "2026-01-09")


def test_a_writer_never_carries_an_edited_summary_forward() -> None:
    """A writer closing after a run's summary was edited leaves no summary built on the edited one (its replan
    reasons are not in the state: it takes them from the summary only when that checks out)."""
    psycopg = pytest.importorskip("psycopg")
    for url in fresh_database(postgres_url()):
        populate(_in(url))
        reasons = _rows(url)["beta"].reasons
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute("UPDATE plantrail_summaries SET reasons = array['forged'] WHERE run = 'beta'")
        with Ledger.open(f"{url}#beta", clock=DayClock(9)) as beta:
            beta.finish("paused", "for the night")
        assert _rows(url)["beta"].reasons == reasons == ("failed_assumption",)


def test_summaries_made_before_their_head_columns_are_folded_and_upgraded_in_place() -> None:
    """A summaries table an earlier plantrail made (no head, no digest): its rows are not believed, the runs are
    folded, and the columns are added on the first summary written, the schema version staying 2 (earlier
    plantrails read and write the table as before)."""
    psycopg = pytest.importorskip("psycopg")
    from plantrail.ledger.stores import postgres

    for url in fresh_database(postgres_url()):
        populate(_in(url))
        truth = _rows(url)
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute("ALTER TABLE plantrail_summaries DROP COLUMN head, DROP COLUMN digest")
            conn.execute("UPDATE plantrail_summaries SET goal = 'an earlier summary'")
        postgres._schema_checked.clear()
        assert _rows(url) == truth
        with psycopg.connect(url, autocommit=True) as conn:
            digests = conn.execute("SELECT count(digest) FROM plantrail_summaries").fetchone()[0]
            version = conn.execute("SELECT value FROM plantrail_meta WHERE key = 'schema_version'").fetchone()[0]
        assert (digests, version) == (3, "2")


def test_store_init_upgrades_a_version_1_schema(tmp_path: Path) -> None:
    """A database with plantrail's schema v1 (no summaries) is upgraded by store init to the current version,
    and its runs then list."""
    psycopg = pytest.importorskip("psycopg")
    from plantrail.ledger.stores import postgres

    for url in fresh_database(postgres_url()):
        populate(_in(url))
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute("DROP TABLE plantrail_summaries")
            conn.execute("UPDATE plantrail_meta SET value = '1' WHERE key = 'schema_version'")
        postgres._schema_checked.clear()
        assert postgres.init_schema(url) == postgres.SCHEMA_VERSION == 2
        assert [r.run for r in list_runs(url)] == ["alpha", "beta", "gamma"]


def test_the_runs_command_prints_rows_and_json(
    tmp_path: Path, run_cli: Callable[..., CliResult], monkeypatch: pytest.MonkeyPatch
) -> None:
    """`plantrail runs DIR` prints a table, --json the rows; with no DIR it lists $PLANTRAIL_HOME/runs."""
    monkeypatch.delenv("PLANTRAIL_STORE", raising=False)
    folder = tmp_path / "home" / "runs"
    folder.mkdir(parents=True)
    populate(lambda run: str(folder / f"{run}.jsonl"))
    result = run_cli("runs", folder, "--has-orphans", "--json")
    assert result.code == 0, result.err
    [beta] = result.json()
    assert beta == {
        "run": "beta",
        "goal": LOGIN_DRAFT["goal"],
        "outcome": None,
        "plan_version": 2,
        "last_activity": beta["last_activity"],
        "replans": 1,
        "orphans": 1,
        "last_seq": 4,
        "location": str(folder / "beta.jsonl"),
        "reasons": {"failed_assumption": 1},
        "damage": None,
        "agent": None,
    }
    monkeypatch.setenv("PLANTRAIL_HOME", str(tmp_path / "home"))
    text = run_cli("runs", "--sort", "run")
    assert text.code == 0, text.err
    lines = text.out.splitlines()
    assert lines[0].split()[:3] == ["RUN", "GOAL", "OUTCOME"]
    assert [line.split()[0] for line in lines[2:-1]] == ["alpha", "beta", "gamma"]
    assert lines[-1] == "  3 runs"
    recent = run_cli("runs", folder, "--since", "2000-01-01T01:00+01:00", "--until", "2099-01-01")
    assert recent.code == 0, recent.err
    assert recent.out.splitlines()[-1] == (
        "  3 runs with last activity from 2000-01-01 00:00 UTC and before 2099-01-01 00:00 UTC"
    )
    none = run_cli("runs", folder, "--since", "2099-01-01")
    assert none.out == "no runs with last activity from 2099-01-01 00:00 UTC\n"
    crossed = run_cli("runs", folder, "--since", "today", "--until", "yesterday")
    assert crossed.code == 2 and "before it starts (today: " in crossed.err
    bad = run_cli("runs", folder, "--since", "soon")
    assert bad.code == 2 and "error[USAGE]" in bad.err
    assert os.path.isdir(folder)


def test_a_fresh_snapshot_answers_a_row_without_reading_the_records(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A log its writer closed lists from its snapshot's summary (the same row a fold gives); once the log grows
    past the snapshot, the summary no longer answers."""
    from plantrail.ledger.stores.jsonl.cache import load_summary
    from plantrail.ledger.stores.jsonl.run import _covered_row, _file_row

    populate(lambda run: str(tmp_path / f"{run}.jsonl"))
    beta = str(tmp_path / "beta.jsonl")
    with open(beta, "rb") as f:
        summary = load_summary(beta, f.fileno())
    assert summary is not None
    assert (summary.run, summary.version, summary.outcome, summary.orphans) == ("beta", 2, None, 1)
    assert summary.last_ts.startswith("2026-01-02")
    covered = _covered_row(beta)
    assert covered is not None
    with monkeypatch.context() as no_cache:
        no_cache.setenv("PLANTRAIL_NO_CACHE", "1")
        assert _covered_row(beta) is None
        folded = _file_row(beta, with_reasons=False)
    assert covered == folded
    with Ledger.open(beta, cache=False, clock=DayClock(5)) as ledger:
        ledger.start("reproduce")
    assert _covered_row(beta) is None
    assert _file_row(beta, with_reasons=False).last_seq == 5


def test_a_remembering_folder_reads_again_only_the_logs_that_changed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A folder store that remembers its rows (``plantrail serve``'s) reads a log again only when its size or
    times changed: an appended run shows its new row, a removed one goes, the others are not read."""
    from plantrail.ledger.stores.jsonl import run as jsonl_run

    populate(lambda run: str(tmp_path / f"{run}.jsonl"))
    store = jsonl_run.FolderStore(tmp_path, remember=True)
    read: list[str] = []
    real = jsonl_run._file_row
    monkeypatch.setattr(jsonl_run, "_file_row", lambda path, wanted: read.append(Path(path).stem) or real(path, wanted))
    assert [r.last_seq for r in list_runs(store, sort="run")] == [7, 4, 1]
    assert sorted(read) == ["alpha", "beta", "gamma"]
    read.clear()
    with Ledger.open(tmp_path / "gamma.jsonl", clock=DayClock(9)) as gamma:
        gamma.start("reproduce")
    (tmp_path / "alpha.jsonl").unlink()
    assert [(r.run, r.last_seq) for r in list_runs(store, sort="run")] == [("beta", 4), ("gamma", 2)]
    assert read == ["gamma"]
    read.clear()
    assert [r.run for r in list_runs(store)] == ["gamma", "beta"] and read == []
