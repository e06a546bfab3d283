"""What an evidence pack holds, mapped to the record-keeping duties it serves, in plain words.

The manifest's ``duties`` section (:func:`duties`) is drawn from the records of every run in the pack, read
already checked; nothing here reads a file. Four duties, each a short text saying what the pack holds for it and
the figures:

* **period of use**: each run's first and last event time (the log's own records left out; none for a run
  imported from a transcript that recorded no times);
* **inputs and outputs**: the evidence and the results each run recorded, named by their SHA-256 (over the
  text's UTF-8 bytes) and size, the artifacts by the digest the run recorded for them, and the payloads its
  store kept by their names. The texts themselves are not repeated here, but the logs in the pack hold them in
  full: formats 1 and 2 write evidence inline, and the manifest says so;
* **people**: who approved or denied an approval, who recorded a criterion's verdict, who repaired a log, who
  signed a checkpoint;
* **retention**: what the pack holds and since when.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from typing import Any, NamedTuple

from plantrail.ledger.times import time_recorded
from plantrail.ledger.vocabulary.events import (
    ApprovalDenied,
    ApprovalGranted,
    CriterionVerified,
    EffectCommitted,
    LogRepaired,
    LogSigned,
    Record,
    StepCompleted,
)

__all__ = ["RunFacts", "duties", "run_facts"]

_PERIOD = (
    "When each run was in use: the time of its first and of its last event (plans, steps, criteria, approvals, "
    "effects, observations, the run's end), as the run's clock wrote them (UTC). The log's own records (its "
    "header, checkpoints, repairs) are left out. A run imported from a transcript that recorded no times has "
    "none here (null, times_recorded false): its records keep the transcript's order only."
)
_IO = (
    "What each run took in and gave out, by digest: every piece of evidence and every result it recorded, each "
    "named by the SHA-256 of its text (UTF-8) and its size; every artifact by the digest the run recorded; every "
    "payload its store kept, by its salted name. This section never repeats a text, but the logs in this pack "
    "hold every record in full, evidence and results included (plantrail formats 1 and 2 write them inline): "
    "anyone given the pack can read them. The pack is not redacted."
)
_PEOPLE = (
    "Who took part in the oversight the runs recorded: who granted or denied each approval (as the approval "
    "named them), which actor recorded each acceptance criterion's verdict, which actor repaired a log (a torn "
    "tail cut off), and which key signed each signed checkpoint."
)
_RETENTION = (
    "What this pack keeps and since when: every run's log byte for byte, the payloads its store kept, the public "
    "keys given, and a verification report per run. The runs' events span the earliest time below to the latest; "
    "the pack was made at the time the manifest names. Keep the pack itself for as long as the records must be "
    "kept: plantrail verify --pack checks it, offline, at any later time."
)


class RunFacts(NamedTuple):
    """What the duties section says of one run (``first`` and ``last``: None when no event's time was recorded)."""

    run: str
    first: str | None
    last: str | None
    times_recorded: bool
    inputs_and_outputs: dict[str, Any]
    people: list[dict[str, Any]]


def _text_digest(text: str) -> dict[str, Any]:
    data = text.encode()
    return {"sha256": hashlib.sha256(data).hexdigest(), "size": len(data)}


def run_facts(run: str, records: Sequence[Record], payloads: Iterable[tuple[str, int]]) -> RunFacts:
    """The facts of one run, from its checked records and its payloads (name, size)."""
    evidence: list[dict[str, Any]] = []
    results: list[dict[str, Any]] = []
    artifacts: list[dict[str, Any]] = []
    people: list[dict[str, Any]] = []
    plan = records[1] if len(records) > 1 else None
    log_recorded = plan is None or time_recorded(plan)
    times = []
    for record in records:
        data = record.data
        ts = record.ts if time_recorded(record, log_recorded=log_recorded) else None
        if ts is not None and not record.type.startswith("log."):
            times.append(ts)
        where = {"seq": record.seq, "ts": ts}
        if isinstance(data, StepCompleted):
            evidence += [{**where, "step": data.step, **_text_digest(text)} for text in data.evidence]
            artifacts += [{**where, "step": data.step, "name": a.name, "digest": a.digest} for a in data.artifacts]
        elif isinstance(data, CriterionVerified):
            evidence.append({**where, "criterion": data.criterion, **_text_digest(data.evidence)})
            people.append({**where, "role": f"criterion {data.verdict}", "who": record.actor, "of": data.criterion})
        elif isinstance(data, EffectCommitted):
            results.append({**where, "step": data.step, "effect": data.key, **_text_digest(data.result)})
        elif isinstance(data, ApprovalGranted | ApprovalDenied):
            role = "approval granted" if isinstance(data, ApprovalGranted) else "approval denied"
            people.append({**where, "role": role, "who": data.by, "of": data.request})
        elif isinstance(data, LogRepaired):
            people.append({**where, "role": "log repaired", "who": record.actor, "of": data.kind})
        elif isinstance(data, LogSigned):
            people.append({**where, "role": "checkpoint signed", "who": f"{data.signer}+{data.key_id}", "of": None})
    held = {
        "evidence": evidence,
        "results": results,
        "artifacts": artifacts,
        "payloads": [{"name": name, "size": size} for name, size in payloads],
    }
    first, last = (min(times), max(times)) if times else (None, None)
    return RunFacts(run, first, last, log_recorded, held, people)


def duties(facts: Sequence[RunFacts], made: str) -> dict[str, Any]:
    """The manifest's ``duties`` section for the runs ``facts`` describe, in a pack made at ``made``."""
    return {
        "period_of_use": {
            "says": _PERIOD,
            "runs": [
                {"run": f.run, "first": f.first, "last": f.last, "times_recorded": f.times_recorded} for f in facts
            ],
        },
        "inputs_and_outputs": {
            "says": _IO,
            "texts_in_logs": True,
            "runs": [{"run": f.run, **f.inputs_and_outputs} for f in facts],
        },
        "people": {"says": _PEOPLE, "entries": [{"run": f.run, **entry} for f in facts for entry in f.people]},
        "retention": {
            "says": _RETENTION,
            "records_since": min((f.first for f in facts if f.first is not None), default=None),
            "records_until": max((f.last for f in facts if f.last is not None), default=None),
            "made": made,
        },
    }
