"""``plantrail mcp``: an MCP server over stdio where agents keep their plan in a plantrail ledger.

Every tool is one library call: a plan set or replanned, a step started, a result (complete, fail or block)
with evidence (and a completion's artifacts), a side effect requested or committed, a criterion verdict, the
run finished, and three read-only views (status with what to do next, why each replan happened, the resume
receipt: stale steps, cancel marks, effects in doubt and repair steps among them). The ledger's rules hold as
they do for the CLI: ready-only starts, evidence required, the focus limit, replans with a reason code, late
results on the orphan path. A refused call is a tool error ``error[CODE]: message`` and the log is unchanged.

Mutating tools take an optional ``expected_seq`` (refused unless the log still ends there) and an optional
``idempotency_key`` (a retried call answers the first one's ack), and return the new seq and head hash, so
parallel agents and retried calls are safe. Runs are ``<runs folder>/<run id>.jsonl`` (see
:mod:`plantrail.ledger.stores.locations`); a run id never leaves its folder.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal, TypeVar

import click

from plantrail.cli.common import STORE_ENV, store_option
from plantrail.ledger.vocabulary.events import ReasonCode as Reason

if TYPE_CHECKING:
    from mcp.server.mcpserver import MCPServer

    from plantrail.ledger.api import Ledger

__all__ = ["build_server", "mcp_command"]

T = TypeVar("T")

INSTRUCTIONS = (
    "Keep your plan in plantrail instead of a todo list. plan_set creates the run's plan (or replans it, "
    "with a reason code); start a step only when status lists it under can_start; finish each attempt with "
    "step_result and concrete evidence; late results for a superseded plan are kept on the orphan path. "
    "The plan object's full shape: `plantrail schema`."
)
_STEP_SHAPE = (
    "Steps: [{id, title, depends_on?: [id], completion_evidence?: what proves it done, max_attempts?, "
    "outputs?: [name], inputs?: [{step, output}], on_failure?: repair step id}]; "
    "criteria: [{id, description}]. Full shape: `plantrail schema`."
)
Run = Annotated[str, "the run id (letters, digits, ._:-)"]


def build_server(folder: Path, store: str | None = None) -> MCPServer:
    """The plan server for the runs in ``folder`` (created on the first plan), or, with ``store``, in that store
    (a database, ``postgresql://…/db``, or a runs folder); a run id is checked as an id either way."""
    from mcp.server.mcpserver import MCPServer
    from mcp.server.mcpserver.exceptions import ToolError
    from mcp.types import ToolAnnotations

    from plantrail import audit
    from plantrail.ledger.api import Ledger
    from plantrail.ledger.stores.opener import open_store
    from plantrail.ledger.vocabulary.errors import PlantrailError
    from plantrail.projections.views import next_view, status_document

    server: MCPServer = MCPServer("plantrail", instructions=INSTRUCTIONS)
    read_only = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True)
    writes = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False)

    def refusals(call: Callable[[], T]) -> T:
        try:
            return call()
        except PlantrailError as exc:
            raise ToolError(f"error[{exc.code}]: {exc.message}") from None

    runs = open_store(store or folder)

    def log(run: str) -> str:
        return runs.run(run).location

    def record(run: str, act: Callable[[Ledger], Any]) -> dict[str, Any]:
        def go() -> dict[str, Any]:
            with Ledger.open(log(run)) as ledger:
                return ledger.acknowledgement(act(ledger))

        return refusals(go)

    @server.tool(annotations=writes, description=f"Create the run's plan, or replan it. {_STEP_SHAPE}")
    def plan_set(
        run: Run,
        steps: list[dict[str, Any]],
        goal: str | None = None,
        criteria: list[dict[str, Any]] | None = None,
        reason: Reason | None = None,
        why: str | None = None,
        max_in_progress: int | None = None,
        expected_seq: int | None = None,
        idempotency_key: str | None = None,
    ) -> dict[str, Any]:
        """First call: goal and criteria required. Later calls replan: reason and why required; the goal stays, so do
        the criteria and the policy's budgets unless given."""

        def go() -> dict[str, Any]:
            with Ledger.set_plan(
                log(run),
                steps,
                run=run,
                goal=goal,
                criteria=criteria,
                reason=reason,
                why=why,
                max_in_progress=max_in_progress,
                expected_seq=expected_seq,
                idempotency_key=idempotency_key,
            ) as ledger:
                return ledger.acknowledgement()

        return refusals(go)

    @server.tool(annotations=writes)
    def step_start(
        run: Run,
        step: str,
        plan_version: int | None = None,
        expected_seq: int | None = None,
        idempotency_key: str | None = None,
    ) -> dict[str, Any]:
        """Start the next attempt of a step that can start now (ready, and within the focus limit)."""
        return record(
            run,
            lambda ledger: ledger.start(
                step, plan_version=plan_version, expected_seq=expected_seq, idempotency_key=idempotency_key
            ),
        )

    @server.tool(annotations=writes)
    def step_result(
        run: Run,
        step: str,
        result: Literal["complete", "fail", "block"],
        evidence: list[str] | str | None = None,
        reason: str | None = None,
        artifacts: list[str] | None = None,
        plan_version: int | None = None,
        attempt: int | None = None,
        expected_seq: int | None = None,
        idempotency_key: str | None = None,
    ) -> dict[str, Any]:
        """End a step's attempt: complete with evidence (what proves it) and its outputs as artifacts
        (NAME=ALGO:HEX[@URI]), or fail / block with a reason.
        A result for a superseded plan version is recorded on the orphan path, never applied."""
        if result == "complete":
            return record(
                run,
                lambda ledger: ledger.complete(
                    step,
                    evidence or [],
                    plan_version=plan_version,
                    attempt=attempt,
                    expected_seq=expected_seq,
                    idempotency_key=idempotency_key,
                    artifacts=artifacts or (),
                ),
            )
        text = reason or (evidence if isinstance(evidence, str) else "; ".join(evidence or []))
        end = {"fail": Ledger.fail, "block": Ledger.block}[result]
        return record(
            run,
            lambda ledger: end(
                ledger,
                step,
                text,
                plan_version=plan_version,
                attempt=attempt,
                expected_seq=expected_seq,
                idempotency_key=idempotency_key,
            ),
        )

    @server.tool(annotations=writes)
    def step_effect(
        run: Run,
        step: str,
        key: str,
        phase: Literal["requested", "committed"],
        target: str | None = None,
        summary: str = "",
        plan_version: int | None = None,
        attempt: int | None = None,
        expected_seq: int | None = None,
        idempotency_key: str | None = None,
    ) -> dict[str, Any]:
        """A side effect of the step's attempt, by its idempotency key: requested (with target and summary:
        the state before) before acting, committed (summary: the result) once it happened. One never known
        committed is in doubt: check its target before doing it again."""

        def act(ledger: Ledger) -> Any:
            if phase == "committed":
                return ledger.commit_effect(
                    step,
                    key,
                    result=summary,
                    plan_version=plan_version,
                    attempt=attempt,
                    expected_seq=expected_seq,
                    idempotency_key=idempotency_key,
                    actor="agent",
                )
            if not target:
                raise ToolError("error[USAGE]: a requested effect needs its target")
            return ledger.request_effect(
                step,
                key,
                target,
                before=summary,
                plan_version=plan_version,
                attempt=attempt,
                expected_seq=expected_seq,
                idempotency_key=idempotency_key,
                actor="agent",
            )

        return record(run, act)

    @server.tool(annotations=writes)
    def criterion_verdict(
        run: Run,
        criterion: str,
        passed: bool,
        evidence: str,
        expected_seq: int | None = None,
        idempotency_key: str | None = None,
    ) -> dict[str, Any]:
        """Record whether an acceptance criterion passed, with the evidence that shows it."""
        return record(
            run,
            lambda ledger: ledger.verify_criterion(
                criterion, passed, evidence, expected_seq=expected_seq, idempotency_key=idempotency_key
            ),
        )

    @server.tool(annotations=writes)
    def run_finish(
        run: Run,
        outcome: Literal["complete", "paused", "failed", "cancelled"],
        reason: str,
        expected_seq: int | None = None,
        idempotency_key: str | None = None,
    ) -> dict[str, Any]:
        """Finish the run (complete only when every step and criterion passed) or pause it (not final)."""
        return record(
            run,
            lambda ledger: ledger.finish(outcome, reason, expected_seq=expected_seq, idempotency_key=idempotency_key),
        )

    def status_of(run: str) -> dict[str, Any]:
        def go() -> dict[str, Any]:
            with Ledger.open(log(run)) as ledger:
                state = ledger.state
            return status_document(state) | {"next": next_view(state)}

        return refusals(go)

    @server.tool(annotations=read_only)
    def plan_status(run: Run) -> dict[str, Any]:
        """The plan now: every step's status, what can start now (and why the rest waits), criteria, late
        results, the advice, and the anchor (seq:hash)."""
        return status_of(run)

    @server.tool(annotations=read_only)
    def plan_why(run: Run, version: int | None = None) -> dict[str, Any]:
        """Why each replan happened (or one version's): reason, causes, what was kept, reset, added, removed."""
        return refusals(lambda: audit.why(log(run), version=version))

    @server.tool(annotations=read_only)
    def run_resume(run: Run) -> dict[str, Any]:
        """Where to go on after a crash or a new session: the verdict, what is in doubt, what to do next."""
        return refusals(lambda: audit.resume(log(run)))

    @server.resource("plantrail://runs/{run}/plan", mime_type="application/json")
    def plan_resource(run: str) -> dict[str, Any]:
        """The run's plan and step states (the plan_status document)."""
        return status_of(run)

    @server.resource("plantrail://runs/{run}/receipt", mime_type="application/json")
    def receipt_resource(run: str) -> dict[str, Any]:
        """The run's resume receipt."""
        return refusals(lambda: audit.resume(log(run)))

    return server


@click.command("mcp")
@click.option(
    "--dir",
    "folder",
    metavar="DIR",
    help="The runs folder (default: $PLANTRAIL_HOME/runs, else .plantrail/runs in the working directory).",
)
@store_option
def mcp_command(folder: str | None, store: str | None) -> None:
    """Serve the plan tools over MCP on stdio (pip install 'plantrail[mcp]').

    \b
    Example:
      claude mcp add --transport stdio plantrail -- plantrail mcp
      plantrail mcp --dir ~/agent-runs
      plantrail mcp --store postgresql://localhost/plantrail
    """
    from plantrail.ledger.vocabulary.errors import error

    if folder is not None and store is not None and not _from_environment(store):
        raise error("USAGE", "give a runs folder (--dir) or --store, not both")
    try:
        import mcp  # noqa: F401
    except ImportError:
        raise error("USAGE", "plantrail mcp needs the MCP SDK: pip install 'plantrail[mcp]'") from None
    from plantrail.ledger.stores.locations import runs_folder

    build_server(runs_folder(folder), None if folder is not None else store).run("stdio")


def _from_environment(store: str) -> bool:
    """True when ``store`` came from $PLANTRAIL_STORE (a --dir given on the command line then wins)."""
    import os

    return os.environ.get(STORE_ENV) == store
