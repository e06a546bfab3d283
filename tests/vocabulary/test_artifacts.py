"""Artifacts and lineage by digest (format v2): declared outputs and inputs, dangling inputs, produced artifacts,
invalidation by digest and the ``stale`` status, observation versions."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from plantrail import Ledger
from plantrail.ledger.vocabulary.artifacts import Artifact, check_digest, parse_artifact_option
from plantrail.ledger.vocabulary.errors import PlanInvalid, PlantrailError
from plantrail.ledger.vocabulary.plan import build_plan, parse_draft
from plantrail.projections.canonical import state_hash
from plantrail.projections.state_json import decode_state, encode_state
from plantrail.projections.views import next_view, ready_steps, status_view
from tests.conftest import CliResult

Cli = Callable[..., CliResult]


def digest(char: str) -> str:
    """A sha256 digest made of one repeated hex digit."""
    return "sha256:" + char * 64


def draft() -> dict[str, Any]:
    """A task whose steps consume an initial input, an upstream output and the repository observation."""
    return {
        "goal": "Fix the folder bug",
        "acceptance_criteria": [{"id": "works", "description": "creating a folder works"}],
        "inputs": [{"name": "spec", "digest": digest("a")}],
        "observed": {"repo": "r1"},
        "policy": {"max_in_progress": "unlimited"},
        "steps": [
            {
                "id": "inspect",
                "title": "Inspect",
                "completion_evidence": "notes",
                "outputs": [{"name": "notes", "media_type": "text/markdown"}],
                "inputs": [{"initial": "spec"}],
            },
            {
                "id": "edit",
                "title": "Edit",
                "completion_evidence": "the patch",
                "depends_on": ["inspect"],
                "outputs": ["patch"],
                "inputs": [{"step": "inspect", "output": "notes"}],
            },
            {
                "id": "test",
                "title": "Test",
                "completion_evidence": "green",
                "depends_on": ["edit"],
                "inputs": [{"step": "edit", "output": "patch"}],
            },
            {"id": "docs", "title": "Docs", "completion_evidence": "written", "depends_on": ["inspect"]},
            {
                "id": "survey",
                "title": "Survey the repo",
                "completion_evidence": "listed",
                "inputs": [{"observation": "repo"}],
            },
        ],
    }


def ran(ledger: Ledger, step: str, *artifacts: str) -> None:
    """Start and complete ``step`` with ``artifacts`` (NAME=DIGEST)."""
    ledger.start(step)
    ledger.complete(step, f"{step} done", artifacts=list(artifacts))


def statuses(ledger: Ledger) -> dict[str, str]:
    """Each step's status."""
    return {s.id: s.status for s in ledger.state.steps.values_in_order()}


def codes(exc: PlanInvalid) -> list[tuple[str, str]]:
    """Every problem's code and message."""
    return [(e.code, e.message) for e in exc.errors]


# --------------------------------------------------------------------------- declared


def test_a_draft_with_artifacts_parses_into_the_steps_terms_and_the_tasks_artifacts() -> None:
    """Outputs, inputs, initial inputs and observed versions land where the format puts them."""
    plan = build_plan(parse_draft(draft()))
    edit = next(s for s in plan.steps if s.id == "edit")
    assert [o.name for o in edit.outputs] == ["patch"]
    assert [i.key for i in edit.inputs] == ["inspect/notes"]
    assert plan.artifacts is not None
    assert [(i.name, i.digest) for i in plan.artifacts.inputs] == [("spec", digest("a"))]
    assert [(o.key, o.version) for o in plan.artifacts.observed] == [("repo", "r1")]


def test_a_dangling_input_is_refused_naming_step_and_input() -> None:
    """Each kind of dangling inputRef (unknown step, undeclared output, undeclared initial input, a step not
    upstream) is its own INPUT_DANGLING problem naming the step and the input, all listed at once."""
    raw = draft()
    raw["steps"][2]["inputs"] = [
        {"step": "ghost", "output": "x"},
        {"step": "inspect", "output": "nope"},
        {"initial": "missing"},
        {"step": "docs", "output": "notes"},
        {"step": "survey", "output": "anything"},
    ]
    raw["steps"][3]["outputs"] = ["notes"]
    with pytest.raises(PlanInvalid) as caught:
        build_plan(parse_draft(raw))
    found = codes(caught.value)
    assert [c for c, _ in found] == ["INPUT_DANGLING"] * 5
    assert all("step test: input" in m for _, m in found)
    assert "ghost/x names unknown step ghost" in found[0][1]
    assert "output nope, which step inspect does not declare" in found[1][1]
    assert "initial input missing, which the task does not declare" in found[2][1]
    assert "step docs, which is not upstream" in found[3][1]
    assert "survey/anything names output anything" in found[4][1]
    assert caught.value.fields.get("step") == "test"


def test_an_input_from_a_transitive_ancestor_is_upstream() -> None:
    """An output of a step reached through depends_on (not only a direct dependency) is a sound input."""
    raw = draft()
    raw["steps"][2]["inputs"] = [{"step": "inspect", "output": "notes"}]
    plan = build_plan(parse_draft(raw))
    assert [i.key for i in plan.steps[2].inputs] == ["inspect/notes"]


def test_a_required_artifact_must_be_a_declared_output() -> None:
    """required_artifacts naming an output no step declares is ARTIFACT_UNKNOWN."""
    raw = draft() | {"required_artifacts": [{"step": "edit", "output": "patch"}, {"step": "edit", "output": "x"}]}
    with pytest.raises(PlanInvalid) as caught:
        build_plan(parse_draft(raw))
    assert [c for c, _ in codes(caught.value)] == ["ARTIFACT_UNKNOWN"]


def test_a_schema_check_names_a_declared_output_and_passes_on_a_true_observation(tmp_path: Path) -> None:
    """The schema check kind validates its artifact and is met only by an observation of value true."""
    raw = draft()
    raw["steps"][1]["checks"] = [{"id": "diff", "kind": "schema", "artifact": "patch", "schema_id": "unified-diff"}]
    ledger = Ledger.create(tmp_path / "run.jsonl", raw)
    ran(ledger, "inspect", f"notes={digest('b')}")
    ledger.start("edit")
    with pytest.raises(PlantrailError) as caught:
        ledger.complete("edit", "patched", artifacts=[f"patch={digest('c')}"], report={"observations": []})
    assert caught.value.code == "CHECK_NOT_MET"
    report = {"observations": [{"check": "diff", "value": True}]}
    ledger.complete("edit", "patched", artifacts=[f"patch={digest('c')}"], report=report)
    assert statuses(ledger)["edit"] == "completed"
    raw["steps"][1]["checks"][0]["artifact"] = "notes"
    with pytest.raises(PlanInvalid) as refused:
        build_plan(parse_draft(raw))
    assert refused.value.code == "ARTIFACT_UNKNOWN"


def test_a_digest_is_algo_colon_hex_with_the_known_lengths() -> None:
    """sha256 needs 64 lower-case hex digits; other algorithms take 8 to 128; anything else is refused."""
    assert check_digest(digest("f"), "d") == digest("f")
    assert check_digest("blake3:" + "0" * 16, "d")
    for bad in ("sha256:12", "SHA256:" + "a" * 64, "sha256:" + "G" * 64, "nohex", "sha1:" + "a" * 64, 7):
        with pytest.raises(PlanInvalid) as caught:
            check_digest(bad, "d")
        assert caught.value.code == "DIGEST_INVALID"


def test_an_artifact_option_splits_name_digest_and_uri() -> None:
    """NAME=DIGEST@URI gives the three parts; a missing = is a usage error."""
    assert parse_artifact_option(f"patch={digest('a')}@out/fix.diff") == Artifact("patch", digest("a"), "out/fix.diff")
    assert parse_artifact_option(f"patch={digest('a')}").uri is None
    with pytest.raises(PlantrailError) as caught:
        parse_artifact_option("patch")
    assert caught.value.code == "USAGE"


# --------------------------------------------------------------------------- produced


def test_a_completion_records_its_artifacts_and_the_digests_it_consumed(tmp_path: Path) -> None:
    """The state holds each completion's artifacts and each consumer's consumed digests."""
    ledger = Ledger.create(tmp_path / "run.jsonl", draft())
    ran(ledger, "inspect", f"notes={digest('b')}@notes.md")
    ran(ledger, "edit", f"patch={digest('c')}")
    inspect, edit = ledger.state.steps["inspect"], ledger.state.steps["edit"]
    assert inspect.artifacts == (Artifact("notes", digest("b"), "notes.md"),)
    assert [(c.input, c.digest) for c in inspect.consumed] == [("initial:spec", digest("a"))]
    assert [(c.input, c.digest) for c in edit.consumed] == [("inspect/notes", digest("b"))]
    line = json.loads((tmp_path / "run.jsonl").read_text().splitlines()[3])
    assert line["data"]["artifacts"] == [{"name": "notes", "digest": digest("b"), "uri": "notes.md"}]


@pytest.mark.parametrize(
    ("artifacts", "code"),
    [
        ([], "ARTIFACT_MISSING"),
        ([f"notes={digest('b')}", f"extra={digest('b')}"], "ARTIFACT_UNDECLARED"),
        ([Artifact("notes", digest("b")), Artifact("notes", digest("c"))], "DUPLICATE_ARTIFACT"),
        ([Artifact("notes", "md5:zz")], "DIGEST_INVALID"),
    ],
)
def test_a_completion_whose_artifacts_do_not_fit_the_declared_outputs_is_refused(
    artifacts: list[Any], code: str, tmp_path: Path
) -> None:
    """A missing declared output, an undeclared one, one given twice or a bad digest is refused, writing nothing."""
    ledger = Ledger.create(tmp_path / "run.jsonl", draft())
    ledger.start("inspect")
    before = (tmp_path / "run.jsonl").read_bytes()
    with pytest.raises(PlantrailError) as caught:
        ledger.complete("inspect", "done", artifacts=artifacts)
    assert caught.value.code == code
    assert (tmp_path / "run.jsonl").read_bytes() == before


def test_a_step_without_outputs_refuses_an_artifact(tmp_path: Path) -> None:
    """A step that declares no outputs takes no artifact (ARTIFACT_UNDECLARED)."""
    ledger = Ledger.create(tmp_path / "run.jsonl", draft())
    ran(ledger, "inspect", f"notes={digest('b')}")
    ledger.start("docs")
    with pytest.raises(PlantrailError) as caught:
        ledger.complete("docs", "written", artifacts=[f"notes={digest('b')}"])
    assert caught.value.code == "ARTIFACT_UNDECLARED"


# --------------------------------------------------------------------------- invalidation by digest


def test_a_producer_rerun_with_a_new_digest_makes_its_completed_consumer_stale(tmp_path: Path) -> None:
    """After a replan resets the producer, its completion with another digest makes the completed consumer stale;
    unrelated completed work (docs, survey) is kept."""
    ledger = Ledger.create(tmp_path / "run.jsonl", draft())
    ran(ledger, "inspect", f"notes={digest('b')}")
    ran(ledger, "edit", f"patch={digest('c')}")
    ran(ledger, "docs")
    ran(ledger, "survey")
    raw = draft()
    raw["steps"][0]["title"] = "Inspect again"  # the producer's contract changes: it is replaced
    ledger.replan("failed_assumption", "the notes were wrong", plan=raw)
    state = ledger.state
    assert statuses(ledger) == {
        "inspect": "pending",
        "edit": "stale",
        "test": "pending",
        "docs": "pending",
        "survey": "completed",
    }
    assert state.steps["edit"].reason is not None and "inspect/notes" in state.steps["edit"].reason
    assert state.adopted is not None and state.adopted.changes is not None
    assert ("edit", "input_changed", (f"inspect/notes: {digest('b')[:23]}… -> replaced",)) in [
        (c.step, c.cause, c.fields) for c in state.adopted.changes.reset
    ]
    assert "edit" not in ready_steps(state)
    ran(ledger, "inspect", f"notes={digest('d')}")
    assert statuses(ledger)["edit"] == "stale"
    assert "edit" in ready_steps(ledger.state)
    ran(ledger, "edit", f"patch={digest('e')}")
    assert (ledger.state.steps["edit"].attempt, ledger.state.steps["edit"].charged) == (2, 1)


def test_a_late_result_of_an_attempt_before_the_step_went_stale_is_an_orphan(tmp_path: Path) -> None:
    """A stale step's attempts reset without giving their numbers back: its re-run is attempt 2 (one charged), and
    a late duplicate of attempt 1's result, sent while the re-run is in progress or after it went stale, lands on
    the orphan path (STALE_ATTEMPT) instead of completing the new attempt."""
    ledger = Ledger.create(tmp_path / "run.jsonl", draft())
    ran(ledger, "survey")
    ledger.observe("repo", "r2")
    assert statuses(ledger)["survey"] == "stale"
    late = ledger.complete("survey", "the first survey, resent", attempt=1)
    assert late.orphan == "STALE_ATTEMPT" and statuses(ledger)["survey"] == "stale"
    ledger.start("survey")
    survey = ledger.state.steps["survey"]
    assert (survey.status, survey.attempt, survey.charged) == ("in_progress", 2, 1)
    again = ledger.complete("survey", "the first survey, resent again", attempt=1)
    assert again.orphan == "STALE_ATTEMPT" and statuses(ledger)["survey"] == "in_progress"
    ledger.complete("survey", "surveyed r2")
    assert [(o.step, o.attempt, o.why) for o in ledger.state.orphans] == [
        ("survey", 1, "STALE_ATTEMPT"),
        ("survey", 1, "STALE_ATTEMPT"),
    ]


def test_a_producer_rerun_with_the_same_digest_keeps_the_completed_consumer(tmp_path: Path) -> None:
    """A replan that resets the producer (its upstream changed) keeps the consumer completed; the producer's
    completion with the same digest keeps it, one with another digest makes it stale."""
    raw = draft()
    raw["steps"].insert(0, {"id": "setup", "title": "Setup", "completion_evidence": "ready"})
    raw["steps"][1]["depends_on"] = ["setup"]
    del raw["steps"][1]["inputs"]  # inspect follows depends_on: a changed setup resets it
    ledger = Ledger.create(tmp_path / "run.jsonl", raw)
    ran(ledger, "setup")
    ran(ledger, "inspect", f"notes={digest('b')}")
    ran(ledger, "edit", f"patch={digest('c')}")
    ran(ledger, "test")
    raw["steps"][0]["title"] = "Setup again"
    ledger.replan("failed_assumption", "setup again", plan=raw)
    assert statuses(ledger)["inspect"] == "pending"
    assert statuses(ledger)["edit"] == "completed"  # it consumed notes, which may come out the same
    ran(ledger, "setup")
    ran(ledger, "inspect", f"notes={digest('b')}")
    assert statuses(ledger)["edit"] == "completed"
    assert statuses(ledger)["test"] == "completed"
    raw["steps"][0]["title"] = "Setup a third time"
    ledger.replan("failed_assumption", "setup once more", plan=raw)
    ran(ledger, "setup")
    ran(ledger, "inspect", f"notes={digest('9')}")
    assert statuses(ledger)["edit"] == "stale"
    assert statuses(ledger)["test"] == "completed"  # it consumed edit's patch, which has not changed (yet)


def test_a_stale_step_never_satisfies_a_dependency(tmp_path: Path) -> None:
    """A step depending on a stale step is not ready, and finish complete is refused while one is stale."""
    ledger = Ledger.create(tmp_path / "run.jsonl", draft())
    ran(ledger, "inspect", f"notes={digest('b')}")
    ran(ledger, "edit", f"patch={digest('c')}")
    raw = draft()
    raw["steps"][0]["title"] = "Inspect again"
    ledger.replan("failed_assumption", "the notes were wrong", plan=raw)
    ran(ledger, "inspect", f"notes={digest('d')}")
    assert statuses(ledger)["edit"] == "stale"
    with pytest.raises(PlantrailError) as caught:
        ledger.start("test")
    assert caught.value.code == "STEP_NOT_READY"


def test_a_consumer_in_progress_is_cancelled_and_its_late_result_is_an_orphan(tmp_path: Path) -> None:
    """An observation change marks the consumer in progress for cancellation: next and resume list it, its result
    lands on the orphan path, abandon makes it stale, and it can start again on the current version."""
    ledger = Ledger.create(tmp_path / "run.jsonl", draft())
    ledger.start("survey")
    ledger.observe("repo", "r2", dirty=["src/app.py"])
    state = ledger.state
    assert state.steps["survey"].cancel is not None
    assert next_view(state)["cancel"] == ["survey"]
    from plantrail.projections.history import resume_receipt

    assert [c["step"] for c in resume_receipt(state)["cancel"]] == ["survey"]
    ack = ledger.complete("survey", "listed the old tree")
    assert ack.orphan == "STALE_ATTEMPT"
    assert [o.step for o in ledger.state.orphans] == ["survey"]
    assert statuses(ledger)["survey"] == "in_progress"
    ledger.abandon("survey", "its input changed")
    assert statuses(ledger)["survey"] == "stale"
    assert "survey" in ready_steps(ledger.state)
    ran(ledger, "survey")
    assert [(c.input, c.digest) for c in ledger.state.steps["survey"].consumed] == [("observation:repo", "r2")]


def test_an_observation_change_flags_the_plan_and_stales_its_completed_consumers(tmp_path: Path) -> None:
    """A new repository version makes status and next say possibly stale, and the completed step that consumed
    the old version stale; recording the version the plan was made from changes nothing."""
    ledger = Ledger.create(tmp_path / "run.jsonl", draft())
    ran(ledger, "survey")
    ledger.observe("repo", "r1")
    assert statuses(ledger)["survey"] == "completed"
    assert status_view(ledger.state)["possibly_stale"] is False
    ledger.observe("repo", "r2", dirty=["b.py", "a.py"])
    view = status_view(ledger.state)
    assert view["possibly_stale"] is True
    assert view["drift"] == [{"key": "repo", "planned": "r1", "current": "r2", "dirty": ["a.py", "b.py"], "seq": 5}]
    assert next_view(ledger.state)["possibly_stale"] is True
    assert statuses(ledger)["survey"] == "stale"
    assert ledger.state.steps["survey"].reason == "input observation:repo changed: r1 -> r2"


def test_a_pending_consumer_becomes_stale_when_its_producer_is_replaced(tmp_path: Path) -> None:
    """A replan that replaces the producer makes a pending consumer stale; it is ready once the new producer
    completes."""
    ledger = Ledger.create(tmp_path / "run.jsonl", draft())
    ran(ledger, "inspect", f"notes={digest('b')}")
    raw = draft()
    raw["steps"][0]["completion_evidence"] = "better notes"
    ledger.replan("failed_assumption", "notes need more", plan=raw)
    assert statuses(ledger)["edit"] == "stale"
    ran(ledger, "inspect", f"notes={digest('b')}")
    assert "edit" in ready_steps(ledger.state)


def test_a_plan_without_inputs_behaves_as_before(tmp_path: Path) -> None:
    """A step declaring outputs but consumed by nobody records artifacts, and replans reset by depends_on."""
    raw = draft()
    for step in raw["steps"]:
        step.pop("inputs", None)
    ledger = Ledger.create(tmp_path / "run.jsonl", raw)
    ran(ledger, "inspect", f"notes={digest('b')}")
    ran(ledger, "edit", f"patch={digest('c')}")
    raw["steps"][0]["title"] = "Inspect again"
    ledger.replan("failed_assumption", "again", plan=raw)
    assert statuses(ledger)["edit"] == "pending"
    assert "stale" not in statuses(ledger).values()


# --------------------------------------------------------------------------- the state's other forms


def test_the_snapshot_round_trips_artifacts_consumed_cancel_and_observations(tmp_path: Path) -> None:
    """encode_state/decode_state keep every lineage field, so the state hash is the same."""
    ledger = Ledger.create(tmp_path / "run.jsonl", draft())
    ran(ledger, "inspect", f"notes={digest('b')}@n.md")
    ran(ledger, "edit", f"patch={digest('c')}")
    ledger.start("survey")
    ledger.observe("repo", "r2", dirty=["x"])
    state = ledger.state
    again = decode_state(encode_state(state))
    assert again == state
    assert state_hash(again) == state_hash(state)


def test_a_fork_carries_the_lineage_state(tmp_path: Path) -> None:
    """A fork of a run with artifacts and observations folds to the parent's state there."""
    ledger = Ledger.create(tmp_path / "run.jsonl", draft())
    ran(ledger, "inspect", f"notes={digest('b')}")
    ledger.observe("repo", "r2")
    forked = Ledger.fork(tmp_path / "run.jsonl", tmp_path / "fork.jsonl", at_seq=ledger.state.last_seq)
    assert forked.state.steps["inspect"].artifacts == ledger.state.steps["inspect"].artifacts
    assert forked.state.observations == ledger.state.observations


def test_a_fresh_fold_agrees_with_the_cached_one(tmp_path: Path) -> None:
    """Reopening the log (reading every byte) gives the same lineage state as the writer's."""
    ledger = Ledger.create(tmp_path / "run.jsonl", draft())
    ran(ledger, "inspect", f"notes={digest('b')}")
    ledger.start("survey")
    ledger.observe("repo", "r2")
    with Ledger.open(tmp_path / "run.jsonl") as reopened:
        assert state_hash(reopened.state) == state_hash(ledger.state)


# --------------------------------------------------------------------------- the CLI


def test_complete_takes_artifacts_and_status_json_shows_them(tmp_path: Path, run_cli: Cli) -> None:
    """--artifact NAME=DIGEST@URI records the artifact; status --json lists it with the consumed digests."""
    plan, log = tmp_path / "draft.json", tmp_path / "run.jsonl"
    plan.write_text(json.dumps(draft()))
    assert run_cli("create", log, "--plan", plan).code == 0
    assert run_cli("start", log, "inspect").code == 0
    done = run_cli("complete", log, "inspect", "-e", "notes", "--artifact", f"notes={digest('b')}@n.md")
    assert done.code == 0, done.err
    steps = {s["id"]: s for s in run_cli("status", log, "--json").json()["steps"]}
    assert steps["inspect"]["artifacts"] == [{"name": "notes", "digest": digest("b"), "uri": "n.md"}]
    assert steps["inspect"]["consumed"] == [{"input": "initial:spec", "digest": digest("a")}]
    assert "artifacts" not in steps["docs"]


def test_observe_flags_the_plan_in_status_next_and_resume(tmp_path: Path, run_cli: Cli) -> None:
    """plantrail observe records the version; status, next and resume say the plan is possibly stale."""
    plan, log = tmp_path / "draft.json", tmp_path / "run.jsonl"
    plan.write_text(json.dumps(draft()))
    run_cli("create", log, "--plan", plan)
    run_cli("start", log, "survey")
    observed = run_cli("observe", log, "repo", "r2", "--dirty", "src/a.py")
    assert observed.code == 0, observed.err
    for command, cancel in (("status", "cancel: survey"), ("next", "cancel: survey"), ("resume", "cancel (1)")):
        text = run_cli(command, log).out
        assert "possibly stale: the plan was made from other observations (repo r1 -> r2)" in text, command
        assert cancel in text, command
    assert run_cli("next", log, "--json").json()["cancel"] == ["survey"]


CASES: dict[str, tuple[list[list[str]], list[str]]] = {
    "ARTIFACT_MISSING": ([["start", "LOG", "inspect"]], ["complete", "LOG", "inspect", "-e", "done"]),
    "ARTIFACT_UNDECLARED": (
        [["start", "LOG", "inspect"]],
        ["complete", "LOG", "inspect", "-e", "done", "--artifact", f"other={digest('b')}"],
    ),
    "DIGEST_INVALID": (
        [["start", "LOG", "inspect"]],
        ["complete", "LOG", "inspect", "-e", "done", "--artifact", "notes=sha256:beef"],
    ),
    "INPUT_DANGLING": ([], ["replan", "LOG", "--plan", "DANGLING", "--reason", "agent_revision", "--why", "x"]),
    "BLANK_FIELD": ([], ["observe", "LOG", "repo", " "]),
    "INVALID_ID": ([], ["observe", "LOG", "no spaces", "r2"]),
}


@pytest.mark.parametrize("code", sorted(CASES))
def test_every_new_lineage_refusal_leaves_the_log_byte_identical(code: str, tmp_path: Path, run_cli: Cli) -> None:
    """Each refusal of artifacts, inputs and observations exits 1 with its code and writes no byte."""
    plan, log, dangling = tmp_path / "draft.json", tmp_path / "run.jsonl", tmp_path / "dangling.json"
    plan.write_text(json.dumps(draft()))
    bad = draft()
    bad["steps"][4]["inputs"] = [{"step": "edit", "output": "patch"}]
    dangling.write_text(json.dumps(bad))
    assert run_cli("create", log, "--plan", plan).code == 0
    setup, refused = CASES[code]

    def fill(argv: list[str]) -> list[str]:
        return [str(log) if a == "LOG" else str(dangling) if a == "DANGLING" else a for a in argv]

    for argv in setup:
        done = run_cli(*fill(argv))
        assert done.code == 0, done.err
    before = log.read_bytes()
    result = run_cli(*fill(refused))
    assert (result.code, result.err.splitlines()[0].split(":")[0]) == (1, f"error[{code}]")
    assert log.read_bytes() == before


def test_the_brief_lists_completed_steps_with_their_artifacts_and_the_stale_steps(tmp_path: Path) -> None:
    """plantrail brief's document carries each completion's artifacts, the stale steps and the plan's drift."""
    from plantrail.projections.brief import brief_view

    ledger = Ledger.create(tmp_path / "run.jsonl", draft())
    ran(ledger, "inspect", f"notes={digest('b')}")
    ran(ledger, "survey")
    ledger.observe("repo", "r2")
    brief = brief_view(ledger.state)
    completed = {c["id"]: c for c in brief["completed"]}
    assert completed["inspect"]["artifacts"] == [{"name": "notes", "digest": digest("b")}]
    assert completed["inspect"]["step"]["outputs"] == [{"name": "notes", "media_type": "text/markdown"}]
    assert [(s["id"], s["invalidated_by"]) for s in brief["stale"]] == [("survey", "observation:repo")]
    assert brief["stale"][0]["step"]["inputs"] == [{"observation": "repo"}]
    assert brief["possibly_stale"] is True


def test_create_and_replan_take_the_observed_versions_their_plan_was_made_from(tmp_path: Path, run_cli: Cli) -> None:
    """--observed KEY=VERSION records the baseline; a newer observation flags the plan until a replan made from
    it; a malformed pair is a usage error."""
    raw = draft()
    del raw["observed"]
    plan, log = tmp_path / "draft.json", tmp_path / "run.jsonl"
    plan.write_text(json.dumps(raw))
    assert run_cli("create", log, "--plan", plan, "--observed", "repo=r1").code == 0
    assert run_cli("observe", log, "repo", "r2").code == 0
    assert run_cli("status", log, "--json").json()["possibly_stale"] is True
    again = run_cli(
        "replan", log, "--plan", plan, "--reason", "new_constraint", "--why", "rebased", "--observed", "repo=r2"
    )
    assert again.code == 0, again.err
    assert run_cli("status", log, "--json").json()["possibly_stale"] is False
    before = log.read_bytes()
    bad = run_cli("replan", log, "--plan", plan, "--reason", "new_constraint", "--why", "x", "--observed", "repo")
    assert (bad.code, bad.err.split(":")[0]) == (2, "error[USAGE]")
    assert log.read_bytes() == before


def test_why_and_diff_say_which_input_digest_a_replan_changed(tmp_path: Path, run_cli: Cli) -> None:
    """A replan that replaces a producer lists its consumer as reset because an input's digest changed, naming
    the input and the digest it had consumed, in why and diff (text and JSON)."""
    plan, log = tmp_path / "draft.json", tmp_path / "run.jsonl"
    plan.write_text(json.dumps(draft()))
    run_cli("create", log, "--plan", plan)
    run_cli("start", log, "inspect")
    run_cli("complete", log, "inspect", "-e", "notes", "--artifact", f"notes={digest('b')}")
    run_cli("start", log, "edit")
    run_cli("complete", log, "edit", "-e", "patched", "--artifact", f"patch={digest('c')}")
    raw = draft()
    raw["steps"][0]["title"] = "Inspect again"
    plan.write_text(json.dumps(raw))
    assert run_cli("replan", log, "--plan", plan, "--reason", "failed_assumption", "--why", "wrong notes").code == 0
    said = f"an input's digest changed, from inspect (inspect/notes: {digest('b')[:23]}… -> replaced)"
    assert said in run_cli("why", log).out
    assert said in run_cli("diff", log, "1", "2").out
    resets = run_cli("why", log, "--json").json()["changes"]["reset"]
    assert {"step": "edit", "cause": "input_changed"}.items() <= next(r for r in resets if r["step"] == "edit").items()


def test_completed_work_gone_stale_drops_the_criteria_verdicts(tmp_path: Path) -> None:
    """Evidence must be current: when a completed step goes stale (a new observation, or a replan replacing its
    producer), every criterion verdict returns to unverified (work_invalidated)."""
    ledger = Ledger.create(tmp_path / "run.jsonl", draft())
    ran(ledger, "survey")
    ledger.verify_criterion("works", True, "it works")
    ledger.observe("repo", "r2")
    assert (ledger.state.criteria["works"].status, ledger.state.criteria["works"].reset) == (
        "unverified",
        "work_invalidated",
    )
    ran(ledger, "inspect", f"notes={digest('b')}")
    ran(ledger, "edit", f"patch={digest('c')}")
    ledger.verify_criterion("works", True, "it works again")
    raw = draft()
    raw["steps"][0]["title"] = "Inspect again"
    raw["observed"] = {"repo": "r2"}
    ledger.replan("failed_assumption", "wrong notes", plan=raw)
    state = ledger.state
    assert state.criteria["works"].status == "unverified"
    assert state.adopted is not None and state.adopted.changes is not None
    assert [c.step for c in state.adopted.changes.criteria_reset] == ["works"]


def test_a_consumer_kept_by_a_replan_keeps_the_digests_it_consumed(tmp_path: Path) -> None:
    """A completed consumer that had once been stale, kept by a replan, still compares what it consumed: the
    producer running again with the same digest keeps it (found by the property test)."""
    raw = draft()
    raw["steps"].insert(0, {"id": "setup", "title": "Setup", "completion_evidence": "ready"})
    raw["steps"][1]["depends_on"] = ["setup"]
    del raw["steps"][1]["inputs"]
    ledger = Ledger.create(tmp_path / "run.jsonl", raw)
    ran(ledger, "setup")
    ran(ledger, "inspect", f"notes={digest('a')}")
    for title, notes in (("Setup 2", "b"), ("Setup 3", "b")):
        if statuses(ledger)["edit"] in ("pending", "stale"):
            ran(ledger, "edit", f"patch={digest('c')}")
        raw["steps"][0]["title"] = title
        ledger.replan("agent_revision", "setup again", plan=raw)
        ran(ledger, "setup")
        ran(ledger, "inspect", f"notes={digest(notes)}")
    assert statuses(ledger)["edit"] == "completed"
    assert [(c.input, c.digest) for c in ledger.state.steps["edit"].consumed] == [("inspect/notes", digest("b"))]


def test_a_heartbeat_of_an_attempt_marked_for_cancellation_is_refused(tmp_path: Path) -> None:
    """The worker of an attempt whose input changed is told to stop (STALE_ATTEMPT); abandon still ends it."""
    ledger = Ledger.create(tmp_path / "run.jsonl", draft())
    ledger.start("survey")
    ledger.heartbeat("survey", lease_s=30)
    ledger.observe("repo", "r2")
    with pytest.raises(PlantrailError) as caught:
        ledger.heartbeat("survey", lease_s=30)
    assert caught.value.code == "STALE_ATTEMPT" and "cancelled" in caught.value.message
    ledger.abandon("survey", "its input changed")
    assert statuses(ledger)["survey"] == "stale"


def test_plantrail_brief_shows_the_artifacts_and_the_stale_steps(tmp_path: Path, run_cli: Cli) -> None:
    """The brief's text lists each completed step's artifacts and a section of stale steps with why."""
    plan, log = tmp_path / "draft.json", tmp_path / "run.jsonl"
    plan.write_text(json.dumps(draft()))
    run_cli("create", log, "--plan", plan)
    run_cli("start", log, "inspect")
    run_cli("complete", log, "inspect", "-e", "notes", "--artifact", f"notes={digest('b')}")
    run_cli("start", log, "survey")
    run_cli("complete", log, "survey", "-e", "listed")
    run_cli("observe", log, "repo", "r2")
    text = run_cli("brief", log).out
    assert f"inspect: Inspect · notes; notes={digest('b')[:20]}" in text
    assert (
        "stale (an input changed: run them again)\n  survey: Survey the repo · input observation:repo changed" in text
    )
