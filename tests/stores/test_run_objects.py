"""Run and store objects: what names a run becomes one object of its store, which answers every read alike in
every store, reads from any seq (inside a group commit too), and reads a file once for one question."""

from __future__ import annotations

import copy
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest
from click.testing import CliRunner

from plantrail import Ledger, as_run, open_run, open_store
from plantrail.cli.main import plantrail as group
from plantrail.ledger.rules.decide import Complete, Start
from plantrail.ledger.stores.jsonl.run import FileRun, FolderStore
from plantrail.ledger.stores.postgres_run import DatabaseRun, DatabaseStore
from plantrail.ledger.vocabulary.errors import PlantrailError
from plantrail.projections.canonical import state_hash
from plantrail.projections.state import fold
from tests.conftest import LOGIN_DRAFT
from tests.helpers.stores import JsonlTarget, PostgresTarget, unique_run

Target = JsonlTarget | PostgresTarget


def _grouped(location: str) -> None:
    """A run whose records 2-5 are one group commit: begin, start, complete, end; then a start at seq 6."""
    with Ledger.create(location, copy.deepcopy(LOGIN_DRAFT), fsync="none") as ledger:
        ledger.execute_many([Start(step="reproduce"), Complete(step="reproduce", evidence=["it fails"])])
        ledger.start("diagnose")


def test_a_name_becomes_a_run_of_its_store(tmp_path: Path) -> None:
    """A path is a file run, a database run's URL a database run; a run id with a store is that store's run; a
    run object given is taken as it is; a store's location names its store."""
    path = tmp_path / "a.jsonl"
    assert isinstance(open_run(str(path)), FileRun) and open_run(path).location == str(path)
    url = "postgresql://u@localhost/db"
    assert isinstance(open_run(f"{url}#r1"), DatabaseRun)
    assert open_run("r1", store=url).location == f"{url}#r1"
    assert open_run("r1", store=str(tmp_path)).location == str(tmp_path / "r1.jsonl")
    run = FileRun(path)
    assert as_run(run) is run
    assert isinstance(open_store(url), DatabaseStore) and isinstance(open_store(tmp_path), FolderStore)
    assert open_store(tmp_path).run("r2").location == str(tmp_path / "r2.jsonl")
    with pytest.raises(PlantrailError) as caught:
        open_store(tmp_path).run("../escape")
    assert caught.value.code == "INVALID_ID"


def test_every_read_from_every_seq_answers_alike_in_every_store(target: Target) -> None:
    """records(after=k) is the run's records after k for every k, a group commit's inner seqs included; up to a
    seq cuts them; past the end there are none; the current state, the versions and a version's state agree
    with a fold of the records."""
    location = target.location(unique_run())
    _grouped(location)
    everything = target.records(location)
    assert [r.type for r in everything[2:6]] == ["log.batch", "step.started", "step.completed", "log.batch"]
    with as_run(location) as run:
        for after in range(-1, len(everything) + 2):
            assert [r.seq for r in run.records(after=after)] == [r.seq for r in everything if r.seq > after], after
        assert [r.seq for r in run.records(after=2, upto=4)] == [3, 4]
        assert [r.seq for r in run.records()] == [r.seq for r in everything] and run.torn is None
        assert run.header().type == "log.opened" and run.record_at(4).type == "step.completed"
        now = run.current().state
        assert state_hash(now) == state_hash(fold(everything))
        assert run.versions().total == now.version == 1
        assert state_hash(run.version_state(1)[0]) == state_hash(now)
        tail, torn = run.tail(2, lambda r: not r.type.startswith("log."))
        assert ([r.seq for r in tail], torn) == ([4, 6], None)
        assert run.exists()
    assert not as_run(target.location(unique_run("missing"))).exists()


def test_a_follower_from_inside_a_group_commit_gets_what_follows_it(target: Target) -> None:
    """follow(after=k) for a seq inside a group commit yields the group's records after k, then the rest."""
    location = target.location(unique_run())
    _grouped(location)
    with as_run(location) as run:
        batches: Iterator[list] = run.follow(after=3, poll=0.01, stop=lambda: True)
        assert [r.seq for batch in batches for r in batch] == [4, 5, 6]


def test_a_store_lists_its_runs_and_opens_them(target: Target, tmp_path: Path) -> None:
    """A store's run ids include a run created in it, its run by id is that run, and its rows say where each
    stands."""
    run_id = unique_run()
    location = target.location(run_id)
    _grouped(location)
    store = open_store(tmp_path if isinstance(target, JsonlTarget) else target.url)
    assert run_id in store.run_ids()
    assert store.run(run_id).location == location
    [row] = [row for row in store.summaries() if row.run == run_id]
    assert (row.plan_version, row.last_seq) == (1, 6)
    assert store.with_reasons(row).reasons == ()


def test_log_from_a_seq_inside_a_group_commit_lists_from_that_seq(tmp_path: Path) -> None:
    """``plantrail log --from-seq`` inside a group commit lists from that seq (it used to fail: the read began
    between the group's bounds), and past the end it lists nothing (it used to list the whole file)."""
    path = tmp_path / "g.jsonl"
    _grouped(str(path))
    runner = CliRunner()
    for start, seqs in [(3, [3, 4, 5, 6]), (5, [5, 6]), (99, [])]:
        done = runner.invoke(group, ["log", str(path), "--from-seq", str(start), "--json"])
        assert done.exit_code == 0, done.output
        assert [event["seq"] for event in orjson.loads(done.output)] == seqs


@pytest.mark.parametrize(
    "command",
    [["why"], ["versions"], ["orphans"], ["brief"], ["resume", "--json"], ["replay", "--version", "1"], ["diff"]],
)
def test_one_audit_question_opens_a_log_once(tmp_path: Path, command: list[str]) -> None:
    """An audit read goes through one run object: one open of the log file (strace), its cache aside."""
    strace = "/usr/bin/strace"
    if not os.path.exists(strace):
        if os.environ.get("CI") == "true":
            pytest.fail("strace is missing (.ci/run installs it)")
        pytest.skip("strace is not installed")
    sample = Path(__file__).resolve().parents[2] / "samples" / "login-fix-replans.jsonl"
    log = tmp_path / "replans.jsonl"
    log.write_bytes(sample.read_bytes())
    trace = tmp_path / "trace"
    argv = [command[0], str(log), *command[1:], *(["1", "2"] if command == ["diff"] else [])]
    script = "import sys\nfrom plantrail.cli.entry import main\nsys.argv = ['plantrail', *sys.argv[1:]]\nmain()"
    done = subprocess.run(
        [strace, "-f", "-e", "trace=openat", "-o", str(trace), sys.executable, "-c", script, *argv],
        capture_output=True,
    )
    assert done.returncode in (0, 10, 11, 12, 13, 14, 15, 16), done.stderr
    opens = [line for line in trace.read_text().splitlines() if f'"{log}"' in line and "ENOENT" not in line]
    assert len(opens) == 1, opens


def test_a_file_run_says_its_read_ended_on_a_torn_tail(tmp_path: Path) -> None:
    """After a read of a log that a crash left torn, the run says where the torn bytes are; the records before
    them are read whole."""
    path = tmp_path / "torn.jsonl"
    _grouped(str(path))
    whole = path.read_bytes()
    path.write_bytes(whole + b'{"v":1,"seq":7,"ts"')
    with FileRun(path) as run:
        assert [r.seq for r in run.records()][-1] == 6
        assert run.torn is not None and (run.torn.offset, run.torn.length) == (len(whole), 19)
