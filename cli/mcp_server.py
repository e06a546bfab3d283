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

import inspect
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal, NamedTuple, TypeVar

import click

from plantrail.cli.common import STORE_ENV, store_option
from plantrail.ledger.vocabulary.arguments import Check, check_arguments, checker

if TYPE_CHECKING:
    from mcp.server.mcpserver import MCPServer

    from plantrail.ledger.api import Ledger
    from plantrail.ledger.rules.commands import Method
    from plantrail.ledger.rules.effects import CommitEffect, RequestEffect
    from plantrail.ledger.stores.values import Ack

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
    from plantrail.ledger.rules import attempts, effects, reconcile
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

    def tool(
        name: str,
        description: str,
        parameters: Sequence[inspect.Parameter],
        act: Callable[[Ledger, Arguments], Ack] | None = None,
        answer: Callable[[str, Arguments], dict[str, Any]] | None = None,
    ) -> None:
        """Serve the writing tool ``name``: its input is the run and ``parameters`` (built from the commands'
        declarations: :func:`declared`); it answers the acknowledgement of the ack ``act`` returns for the
        arguments given (or what ``answer`` says)."""

        given = [_parameter("run", Run, how=inspect.Parameter.POSITIONAL_OR_KEYWORD), *parameters]
        kinds = {p.name: _takes(p) for p in given}

        def call(run: Any, **arguments: Any) -> dict[str, Any]:
            refusals(lambda: check_arguments(kinds, {"run": run, **arguments}, where=name))
            if answer is not None:
                return answer(run, arguments)
            assert act is not None
            return record(run, lambda ledger: act(ledger, arguments))

        call.__name__ = name
        call.__signature__ = inspect.Signature(given, return_annotation=dict[str, Any])  # type: ignore[attr-defined]
        server.tool(annotations=writes, description=description)(call)

    def plan_set(run: str, arguments: Arguments) -> dict[str, Any]:
        def go() -> dict[str, Any]:
            with Ledger.set_plan(log(run), arguments.pop("steps"), run=run, **arguments) as ledger:
                return ledger.acknowledgement()

        return refusals(go)

    tool(
        "plan_set",
        f"Create the run's plan, or replan it. {_STEP_SHAPE}",
        [
            _parameter("steps", list[dict[str, Any]]),
            _parameter("goal", str | None, None),
            _parameter("criteria", list[dict[str, Any]] | None, None),
            declared(reconcile.replan, "reason", optional=True),
            declared(reconcile.replan, "why", optional=True),
            _parameter("max_in_progress", int | None, None),
            declared(reconcile.replan, "expected_seq"),
            declared(reconcile.replan, "idempotency_key"),
        ],
        answer=plan_set,
    )

    singles = {name: (method, names, narrowed) for name, method, names, narrowed in _single_command_tools()}

    def single(name: str) -> None:
        method, names, narrowed = singles[name]
        parameters = [declared(method, field, kind=narrowed.get(field)) for field in names]
        tool(name, method.declaration.tools[name], parameters, executes(method))

    single("step_start")

    def step_result(ledger: Ledger, arguments: Arguments) -> Ack:
        result, evidence, reason = arguments.pop("result"), arguments.pop("evidence"), arguments.pop("reason")
        artifacts, expected_seq = arguments.pop("artifacts"), arguments.pop("expected_seq")
        if result == "complete":
            command = attempts.complete(evidence=evidence or [], artifacts=artifacts or (), **arguments)
            return ledger.execute(command, expected_seq=expected_seq)
        text = reason or (evidence if isinstance(evidence, str) else "; ".join(evidence or []))
        step = arguments.pop("step")
        ended = attempts.fail(step, text, **arguments) if result == "fail" else attempts.block(step, text, **arguments)
        return ledger.execute(ended, expected_seq=expected_seq)

    tool(
        "step_result",
        STEP_RESULT,
        [
            declared(attempts.complete, "step"),
            _parameter("result", Literal["complete", "fail", "block"]),
            declared(attempts.complete, "evidence", optional=True),
            declared(attempts.block, "reason", optional=True),
            declared(attempts.complete, "artifacts", optional=True),
            *(declared(attempts.complete, name) for name in ("plan_version", "attempt", "started_seq", "expected_seq")),
            declared(attempts.complete, "idempotency_key"),
        ],
        step_result,
    )

    def step_effect(ledger: Ledger, arguments: Arguments) -> Ack:
        key, phase, target = arguments.pop("key"), arguments.pop("phase"), arguments.pop("target")
        summary, expected_seq = arguments.pop("summary"), arguments.pop("expected_seq")
        command: CommitEffect | RequestEffect
        if phase == "committed":
            command = effects.commit_effect(effect=key, result=summary, actor="agent", **arguments)
        elif not target:
            raise ToolError("error[USAGE]: a requested effect needs its target")
        else:
            command = effects.request_effect(effect=key, target=target, before=summary, actor="agent", **arguments)
        return ledger.execute(command, expected_seq=expected_seq)

    tool(
        "step_effect",
        STEP_EFFECT,
        [
            declared(effects.request_effect, "step"),
            declared(effects.request_effect, "effect", as_name="key"),
            _parameter("phase", Literal["requested", "committed"]),
            declared(effects.request_effect, "target", optional=True),
            _parameter("summary", str, ""),
            *(declared(effects.request_effect, name) for name in ("plan_version", "attempt", "expected_seq")),
            declared(effects.request_effect, "idempotency_key"),
        ],
        step_effect,
    )
    single("criterion_verdict")
    single("run_finish")
    single("step_adopt")

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


Arguments = dict[str, Any]
#: What step_result and step_effect do (their parameters are built from the commands they record).
STEP_RESULT = """End a step's attempt: complete with evidence (what proves it) and its outputs as artifacts
        (NAME=ALGO:HEX[@URI]), or fail / block with a reason. Name the attempt with started_seq, the
        started_seq step_start answered with. A result for a superseded plan version is recorded on the orphan
        path, never applied."""
STEP_EFFECT = """A side effect of the step's attempt, by its idempotency key: requested (with target and summary:
        the state before) before acting, committed (summary: the result) once it happened. One never known
        committed is in doubt: check its target before doing it again."""


def _single_command_tools() -> tuple[tuple[str, Method[Any, Any], tuple[str, ...], dict[str, Any]], ...]:
    """The tools that record one command: the tool, the declared method it calls, the method's parameters it
    takes (in the tool's order), and the types it narrows (run_finish offers v1's outcomes)."""
    from plantrail.ledger.rules import adoption, attempts, criteria, outcomes

    envelope = ("expected_seq", "idempotency_key")
    return (
        ("step_start", attempts.start, ("step", "plan_version", *envelope), {}),
        ("step_adopt", adoption.adopt, ("orphan_seq", *envelope), {}),
        ("criterion_verdict", criteria.verify_criterion, ("criterion", "passed", "evidence", *envelope), {}),
        (
            "run_finish",
            outcomes.finish,
            ("outcome", "reason", *envelope),
            {"outcome": Literal["complete", "paused", "failed", "cancelled"]},
        ),
    )


def declared(
    method: Method[Any, Any], name: str, *, as_name: str | None = None, optional: bool = False, kind: Any = None
) -> inspect.Parameter:
    """The tool parameter built from parameter ``name`` of a declared method: its type is the JSON type the
    declaration gives the field, else the method's (``kind`` when a tool narrows it), its default the method's;
    ``optional`` makes it default to None (in a tool that records several commands, not all of which take it).
    """
    default = None if optional else next(p.default for p in method.parameters() if p.name == name)
    given = kind or method.declaration.field(name).json or method.types()[name]
    return _parameter(as_name or name, given | None if optional else given, default)


def _parameter(
    name: str, kind: Any, default: Any = inspect.Parameter.empty, *, how: Any = inspect.Parameter.KEYWORD_ONLY
) -> inspect.Parameter:
    """A tool's parameter whose input schema says ``kind`` and which the SDK passes on as it came: the tool
    checks it against ``kind`` itself (:func:`_takes`), so that a wrong type is refused with its code and never
    coerced (pydantic's lax mode would take ``"yes"`` for ``true``)."""
    from pydantic import TypeAdapter, WithJsonSchema

    schema = TypeAdapter(kind).json_schema()
    takes = _Takes(checker(kind))
    annotation = Annotated[kind, takes] if "$defs" in schema else Annotated[Any, WithJsonSchema(schema), takes]
    return inspect.Parameter(name, how, annotation=annotation, default=default)


class _Takes(NamedTuple):
    """What a tool parameter takes, kept in its annotation for the tool's own check."""

    check: Check


def _takes(parameter: inspect.Parameter) -> Check:
    found = [m for m in getattr(parameter.annotation, "__metadata__", ()) if isinstance(m, _Takes)]
    return found[0].check if found else checker(Any)


def executes(method: Method[Any, Any]) -> Callable[[Ledger, Arguments], Ack]:
    """A tool's call that records the command ``method`` builds from the tool's arguments."""

    def act(ledger: Ledger, arguments: Arguments) -> Ack:
        expected_seq = arguments.pop("expected_seq", None)
        return ledger.execute(method(**arguments), expected_seq=expected_seq)

    return act


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
