"""The plan one scripted agent keeps through the plan server, whichever framework drives it.

Each turn reads the answer to the previous tool call (a dict, as the server's structured result) and that call's
arguments, and gives the next call, so the model really depends on what the server said: the replan names the
seq of the failure the server acknowledged, and every start names the step the server said can start.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

RUN = "agent-run-1"
CRITERIA = [{"id": "tests-pass", "description": "the test suite passes"}]
STEPS = [
    {"id": "reproduce", "title": "Reproduce the failure", "completion_evidence": "the failing output"},
    {"id": "fix", "title": "Fix it", "depends_on": ["reproduce"], "completion_evidence": "the diff"},
]
PLAN = {"run": RUN, "goal": "fix the login redirect", "criteria": CRITERIA, "steps": STEPS}
OBSERVATION = "the service answers 500, not 401"
FINAL = "The login redirect is fixed; the plan is finished."

Turn = Callable[[dict[str, Any], dict[str, Any]], tuple[str, dict[str, Any]]]


def _first_ready(answer: dict[str, Any]) -> str:
    ready = answer["can_start"]
    assert ready, answer
    return str(ready[0])


TURNS: list[Turn] = [
    lambda _, __: ("plan_set", PLAN),
    lambda answer, _: ("step_start", {"run": RUN, "step": _first_ready(answer)}),
    lambda _, started: (
        "step_update",
        {"run": RUN, "step": started["step"], "action": "fail", "reason": "the 401 does not reproduce"},
    ),
    lambda answer, _: (
        "plan_set",
        {
            **PLAN,
            "reason": "failed_assumption",
            "why": "the failure is a 500 from the service",
            "causes": [answer["seq"]],
            "observations": [OBSERVATION],
        },
    ),
    lambda answer, _: ("step_start", {"run": RUN, "step": _first_ready(answer)}),
    lambda _, started: (
        "step_update",
        {"run": RUN, "step": started["step"], "action": "complete", "evidence": ["500 reproduced"]},
    ),
    lambda answer, _: ("step_start", {"run": RUN, "step": _first_ready(answer)}),
    lambda _, started: (
        "step_update",
        {"run": RUN, "step": started["step"], "action": "complete", "evidence": ["fix.diff"]},
    ),
    lambda _, __: (
        "criterion_verdict",
        {"run": RUN, "criterion": "tests-pass", "passed": True, "evidence": "pytest: 212 passed"},
    ),
    lambda _, __: ("run_finish", {"run": RUN, "outcome": "complete", "reason": "both steps done and checked"}),
]


def answer_of(content: Any) -> dict[str, Any]:
    """A tool's answer as the framework hands it back to the model: a dict, or its JSON text."""
    if isinstance(content, dict) and content.get("type") in ("text", "input_text"):
        return answer_of(content["text"])  # a content part carrying the answer's JSON text
    if isinstance(content, dict):
        return content.get("result", content)  # type: ignore[no-any-return]
    if isinstance(content, list) and len(content) == 1:
        return answer_of(content[0])
    if isinstance(content, str):
        return answer_of(json.loads(content))
    text = getattr(content, "text", None)
    if isinstance(text, str):
        return answer_of(json.loads(text))
    raise AssertionError(f"not a plan server answer: {content!r}")
