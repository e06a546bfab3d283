"""Which plan update of a transcript an event records: the update's identity, and the keys made of it.

Live capture and ``import --append`` recognise what a log already holds by the transcript's own ids, never
by position, so that an update delivered twice (a retried hook, a hook and then the transcript) is recorded
once. An update's identity is, in order of preference:

* for a task created with the task tools, ``task-<id>-created`` (one identity whichever report of the
  creation comes first: the TaskCreate call or the TaskCreated hook);
* for a task update that completes it, ``task-<id>-completed-<n>`` (the n-th completion of that task:
  a TaskUpdate call or the TaskCompleted hook);
* for the plan a user edited before approving it (Claude Code ExitPlanMode), ``<call id>-edited``: the answer
  gives a second update of the same call, after the agent's proposal;
* else the call's own id (Claude Code's tool-use id, Codex's call id), as the events' ``source.id`` holds it;
* else ``<file>:<line>``, the line (or message) that holds the update, for the formats without call ids.

The commands of one update are written together (one group commit), each keyed
``<session>:<identity>:<n>`` (n its place in the update's batch); the first key says the update is recorded.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

import msgspec

from plantrail.ledger.importers.model import ListSnapshot, Observation, TaskEvent

__all__ = ["Identities", "batch_key", "identities", "identity_of_source"]


class Identities(msgspec.Struct):
    """Names updates one at a time, in order (the completions of each task counted so far); plain data, kept
    with live capture's state."""

    completions: Counter[str] = msgspec.field(default_factory=Counter)

    def of(self, file: str, observation: Observation) -> str:
        """The identity of the next update (see the module's rules)."""
        if isinstance(observation, TaskEvent) and observation.task_id is not None and observation.result != "error":
            if observation.kind == "created":
                return f"task-{observation.task_id}-created"
            if observation.status_to == "completed":
                self.completions[observation.task_id] += 1
                return f"task-{observation.task_id}-completed-{self.completions[observation.task_id]}"
        if isinstance(observation, ListSnapshot) and observation.user_verdict is not None and observation.native_id:
            return f"{observation.native_id}-edited"  # the user's edited plan, answering the agent's proposal
        return observation.native_id or f"{file}:{observation.line}"


def identities(observations: Sequence[tuple[str, Observation]]) -> tuple[str, ...]:
    """The identity of each (file, observation) pair, in order (see the module's rules)."""
    names = Identities()
    return tuple(names.of(file, observation) for file, observation in observations)


def identity_of_source(file: str, line: int | None, native_id: str | None) -> str:
    """The identity an event's source names (call id, else file and line): how a log without keys (a whole
    import) says which updates it holds."""
    return native_id if native_id is not None else f"{file}:{line}"


def batch_key(session: str, identity: str, place: int) -> str:
    """The idempotency key of the command at ``place`` in the batch of the update ``identity``."""
    return f"{session}:{identity}:{place}"
