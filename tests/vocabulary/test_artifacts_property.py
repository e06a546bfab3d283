"""A property of invalidation by digest, checked against an independent model: a completed consumer is never
kept once the digest it consumed is no longer its input's, and never made stale while it still is."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from plantrail import Ledger
from plantrail.ledger.vocabulary.errors import PlantrailError

DIGESTS = ("sha256:" + "a" * 64, "sha256:" + "b" * 64)
VERSIONS = ("r1", "r2", "r3")


def _draft(title: str) -> dict[str, Any]:
    """setup -> make (outputs out) -> use (consumes make/out); watch consumes the repo observation."""
    return {
        "goal": "g",
        "acceptance_criteria": [{"id": "c", "description": "d"}],
        "observed": {"repo": "r1"},
        "policy": {"max_in_progress": "unlimited"},
        "steps": [
            {"id": "setup", "title": title, "completion_evidence": "e"},
            {"id": "make", "title": "make", "completion_evidence": "e", "depends_on": ["setup"], "outputs": ["out"]},
            {
                "id": "use",
                "title": "use",
                "completion_evidence": "e",
                "depends_on": ["make"],
                "inputs": [{"step": "make", "output": "out"}],
            },
            {"id": "watch", "title": "watch", "completion_evidence": "e", "inputs": [{"observation": "repo"}]},
        ],
    }


ACTIONS = st.one_of(
    st.tuples(st.just("run"), st.sampled_from(("use", "watch"))),
    st.tuples(st.just("make"), st.sampled_from(DIGESTS)),
    st.tuples(st.just("observe"), st.sampled_from(VERSIONS)),
    st.tuples(st.just("replan"), st.integers(0, 3)),
    st.tuples(st.just("start"), st.sampled_from(("use", "watch"))),
    st.tuples(st.just("abandon"), st.sampled_from(("use", "watch"))),
)


class Model:
    """What each consumer consumed and what its input is now, kept without the library's lineage code."""

    def __init__(self) -> None:
        self.made: str | None = None  # the digest make's last completion produced (kept while it runs again)
        self.repo = "r1"  # the latest observed version (the plan's own to begin with)
        self.consumed: dict[str, str | None] = {}

    def current(self, step: str) -> str | None:
        return self.made if step == "use" else self.repo


def _apply(ledger: Ledger, model: Model, action: tuple[str, Any]) -> None:
    kind, arg = action
    try:
        if kind == "run":
            ledger.start(arg)
            ledger.complete(arg, "done")
            if arg in ("use", "watch"):
                model.consumed[arg] = model.current(arg)
        elif kind == "make":  # setup first when a replan reset it, so make can run again
            if ledger.state.steps["setup"].status != "completed":
                ledger.start("setup")
                ledger.complete("setup", "ready")
            ledger.start("make")
            ledger.complete("make", "made", artifacts=[f"out={arg}"])
            model.made = arg
        elif kind == "observe":
            ledger.observe("repo", arg)
            model.repo = arg
        elif kind == "replan":
            ledger.replan("agent_revision", "setup again", plan=_draft(f"setup {arg} {ledger.state.version}"))
        elif kind == "start":
            ledger.start(arg)
        else:
            ledger.abandon(arg, "gone")
    except PlantrailError:
        pass  # an action the rules refuse now: the log is unchanged, and so is the model


@settings(max_examples=100, deadline=None)
@given(st.lists(ACTIONS, max_size=25))
def test_invalidation_by_digest_keeps_exactly_the_completed_work_whose_inputs_did_not_change(
    actions: list[tuple[str, Any]],
) -> None:
    """After every action, a completed consumer's consumed digest is its input's current one; and a consumer
    completed before an action whose input is still the digest it consumed is completed after it."""
    with tempfile.TemporaryDirectory() as folder:
        ledger = Ledger.create(Path(folder) / "run.jsonl", _draft("setup"))
        model = Model()
        for action in actions:
            before = {s: ledger.state.steps[s].status for s in ("use", "watch")}
            _apply(ledger, model, action)
            for step in ("use", "watch"):
                status = ledger.state.steps[step].status
                if status == "completed":
                    assert model.consumed.get(step) == model.current(step), (step, action)
                if before[step] == "completed" and model.consumed.get(step) == model.current(step):
                    assert status == "completed", (step, action)
