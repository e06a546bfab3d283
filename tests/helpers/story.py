"""The story a log tells, without when, by whom or from where: for comparing two ways of recording a session."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import orjson

__all__ = ["story"]

_PLACE = re.compile(r"\b(line|message) \d+( of \S+)?")


def _placeless(text: str) -> str:
    """A text with its transcript citations ("line 12", "line 3 of f.jsonl") made the same."""
    return _PLACE.sub(r"\1 N", text)


def story(path: Path) -> list[tuple[Any, ...]]:
    """Each event of the log as (type, plan version, what it says): plans as their steps (id, title, status
    rule), step events as step and evidence (citations cut), finishes as outcome; log.* records left out."""
    told: list[tuple[Any, ...]] = []
    for line in path.read_bytes().splitlines():
        record = orjson.loads(line)
        kind, data = record["type"], record["data"]
        if kind.startswith("log."):
            continue
        if kind in ("plan.created", "plan.replanned"):
            plan = data["plan"]
            steps = tuple((s["id"], s["title"], _placeless(s["completion_evidence"])) for s in plan["steps"])
            told.append((kind, record["plan_version"], steps))
        elif kind == "step.completed":
            evidence = tuple(_placeless(e) for e in data["evidence"])
            told.append((kind, record["plan_version"], data["step"], evidence))
        elif kind.startswith("step."):
            told.append((kind, record["plan_version"], data["step"]))
        else:
            told.append((kind, record["plan_version"], data.get("outcome")))
    return told
