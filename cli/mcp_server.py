"""``plantrail mcp``: an MCP server over stdio where agents keep their plan in a plantrail ledger.

Every tool is one library call: the plan set or revised (``plan_set``: created, or replanned with a reason code,
its causes and observations; ``plan_extend``: steps added in place), a step started, a step's attempt updated
(``step_update``: complete, fail, block, heartbeat or abandon, with evidence and an evidence record), an approval
requested and waited for, a side effect recorded, a criterion's verdict, the run finished (every outcome), a late
completion adopted, and four reads (``plan_status``, ``plan_why``, ``run_resume``, ``plan_brief``). The ledger's
rules hold as they do for the command line.

Each tool's input schema is generated from the declarations the library validates with
(:mod:`plantrail.cli.mcp_schemas`); a wrong type is refused, never coerced. A refused call is a tool error
``error[CODE]: message. Next: …`` saying what to do next in the model's terms (:mod:`plantrail.cli.mcp_hints`),
and the log is unchanged. ``run`` is optional on every tool: with none, or an id that names no run, the server
uses the run the session-start hook announced for its project (:mod:`plantrail.cli.mcp_runs`); every answer
names the run it used.

Writing tools take an optional ``expected_seq`` (refused unless the log still ends there) and
``idempotency_key`` (a retried call answers the first one's ack), and return the new seq and head hash. Runs are
``<runs folder>/<run id>.jsonl`` (see :mod:`plantrail.ledger.stores.locations`), or a database's runs; a run id
never leaves its folder.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, NamedTuple

import click

from plantrail.cli.common import STORE_ENV, store_option

if TYPE_CHECKING:
    from mcp.server.mcpserver import MCPServer
    from mcp.server.mcpserver.tools import Tool

    from plantrail.cli.mcp_schemas import Param
    from plantrail.ledger.api import Ledger
    from plantrail.ledger.rules.commands import Method
    from plantrail.ledger.stores.values import Ack
    from plantrail.projections.model import PlanState

__all__ = ["INSTRUCTIONS", "TOOL_COMMANDS", "build_server", "mcp_command"]

INSTRUCTIONS = (
    "Keep your plan in plantrail instead of a todo list. plan_set creates the plan (goal, criteria, steps) or "
    "replans it (reason, why, and the causes: seqs the answers gave); start only a step plan_status lists in "
    "can_start; end each attempt with step_update and concrete evidence. Pass the run id you were given (or any "
    "id you choose) as run on every call; each answer names the run it used. A refusal says what to do next."
)

Arguments = dict[str, Any]
Answer = dict[str, Any]

#: What the tools that record several commands, or none, say of themselves.
DESCRIPTIONS = {
    "plan_set": "Create the run's plan, or replan it (reason and why required then; the goal stays). "
    "Other contract terms go in terms (plan_brief gives its shape).",
    "step_update": "End or renew a step's attempt: complete (evidence), fail or block (reason), heartbeat "
    "(renew the lease), abandon (worker gone). A result for a superseded version goes to the orphan path.",
    "approval_wait": "Wait up to timeout_s for a person's answer to an approval request: granted, denied or pending.",
    "step_effect": "A side effect of the step's attempt by its key: requested (target, summary: the state before) "
    "before acting, committed (summary: the result) after.",
    "plan_status": "The plan now: every step's status, what can start now and why the rest waits, criteria, late "
    "results.",
    "plan_why": "Why each replan happened (or one version's): reason, causes, observations, what changed.",
    "run_resume": "Where to go on after a crash or a new session: what is done, in doubt, and next.",
    "plan_brief": "The replan brief (what is done, failed, remaining) and the shape of plan_set's terms.",
}


class Spec(NamedTuple):
    """One tool: its name, description, parameters after ``run``, what it does with the run and the arguments
    given, and whether it only reads."""

    name: str
    description: str
    params: Sequence[Param]
    call: Callable[[str, Arguments], Answer]
    read_only: bool = False


def build_server(folder: Path, store: str | None = None, project: Path | None = None) -> MCPServer:
    """The plan server for the runs in ``folder`` (created on the first plan), or, with ``store``, in that store
    (a database, ``postgresql://…/db``, or a runs folder); a run id is checked as an id either way. ``project``
    is the project's ``.plantrail`` folder when the runs live in it: the first write there makes its
    ``.gitignore`` (:mod:`plantrail.ledger.capture.ignored`)."""
    from mcp.server.mcpserver import MCPServer

    from plantrail import audit
    from plantrail._version import __version__
    from plantrail.cli.mcp_runs import chosen_run
    from plantrail.ledger.api import Ledger
    from plantrail.ledger.stores.opener import open_store
    from plantrail.ledger.vocabulary.errors import PlantrailError
    from plantrail.projections.views import next_view, status_document

    runs = open_store(store or folder)

    def log(run: str) -> str:
        return runs.run(run).location

    def written(run: str) -> str:
        """The log of a run about to be written to (the project's folder kept out of git first)."""
        if project is not None:
            from plantrail.ledger.capture.ignored import keep_project_folder_out_of_git

            keep_project_folder_out_of_git(project)
        return log(run)

    def exists(run: str) -> bool:
        return runs.run(run).exists()

    def state_of(run: str | None) -> PlanState | None:
        """The run's state as it stands now (None: no run, or none that can be read)."""
        if run is None:
            return None
        try:
            found = runs.run(run)
            return found.current().state if found.exists() else None
        except PlantrailError:
            return None

    def record(run: str, act: Callable[[Ledger], Ack]) -> Answer:
        with Ledger.open(written(run)) as ledger:
            return ledger.acknowledgement(act(ledger))

    kit = _Kit(log=log, record=record, state_of=state_of, written=written)
    tools = [_tool(spec, lambda given: chosen_run(given, exists), state_of) for spec in _specs(kit)]
    server: MCPServer = MCPServer("plantrail", version=__version__, instructions=INSTRUCTIONS, tools=tools)

    def status_of(run: str) -> Answer:
        with Ledger.open(log(run)) as ledger:
            state = ledger.state
        return status_document(state) | {"next": next_view(state)}

    def refused(call: Callable[[], Answer]) -> Answer:
        from mcp.server.mcpserver.exceptions import ToolError

        try:
            return call()
        except PlantrailError as exc:
            raise ToolError(f"error[{exc.code}]: {exc.message}") from None

    @server.resource("plantrail://runs/{run}/plan", mime_type="application/json")
    def plan_resource(run: str) -> Answer:
        """The run's plan and step states (the plan_status document)."""
        return refused(lambda: status_of(run))

    @server.resource("plantrail://runs/{run}/receipt", mime_type="application/json")
    def receipt_resource(run: str) -> Answer:
        """The run's resume receipt."""
        return refused(lambda: audit.resume(log(run)))

    return server


class _Kit(NamedTuple):
    """What the tools share: a run's log location, recording one command, and a run's state now."""

    log: Callable[[str], str]
    record: Callable[[str, Callable[[Ledger], Ack]], Answer]
    state_of: Callable[[str | None], PlanState | None]
    written: Callable[[str], str]


def _tool(spec: Spec, choose: Callable[[Any], str], state_of: Callable[[str | None], PlanState | None]) -> Tool:
    """The SDK tool serving ``spec``: it takes the arguments as they came (no coercion), checks them, chooses the
    run, calls, and answers the document with the run it used; a refusal is a tool error saying what next."""
    import orjson
    from mcp.server.mcpserver.exceptions import ToolError
    from mcp.server.mcpserver.tools import Tool
    from mcp.types import CallToolResult, TextContent, ToolAnnotations

    from plantrail.cli.mcp_hints import refusal_text
    from plantrail.cli.mcp_origin import called_by, client_of
    from plantrail.cli.mcp_schemas import check_given, input_schema
    from plantrail.ledger.vocabulary.errors import PlantrailError

    params = [_run_param(), *spec.params]

    def call(arguments: Arguments, context: Any = None) -> CallToolResult:
        run: str | None = None
        try:
            check_given(params, arguments, where=spec.name)
            given = dict(arguments)
            run = choose(given.pop("run", None))
            with _request_trace(context), called_by(client_of(context)):
                answer = {"run": run, **spec.call(run, given)}
        except PlantrailError as exc:
            raise ToolError(refusal_text(exc, state_of(run))) from None
        text = orjson.dumps(answer, option=orjson.OPT_NON_STR_KEYS).decode()
        return CallToolResult(content=[TextContent(type="text", text=text)], structured_content=answer)

    if spec.read_only:
        annotations = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True)
    else:
        annotations = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False)
    return Tool(
        fn=call,
        name=spec.name,
        title=None,
        description=spec.description,
        parameters=input_schema(params),
        fn_metadata=_raw_arguments(),
        is_async=False,
        context_kwarg="context",
        annotations=annotations,
    )


def _request_trace(context: Any) -> AbstractContextManager[Any]:
    """The W3C trace context a tool call's request carries in its ``_meta`` (``traceparent``, ``tracestate``: the
    MCP convention for OpenTelemetry's propagation), set for the commands the call records
    (:func:`plantrail.ledger.tracing.traced`; INVALID_TRACE_CONTEXT for an invalid one); none without it."""
    from plantrail.ledger.tracing import traced

    try:
        meta = context.request_context.meta
    except (AttributeError, ValueError):  # no request (a call made outside one)
        meta = None
    if not isinstance(meta, Mapping):
        return traced(None)
    return traced(meta.get("traceparent"), meta.get("tracestate"))


def _raw_arguments() -> Any:
    """The SDK's function metadata for a tool that takes its arguments whole, as the client sent them (the SDK's
    own would parse a text that looks like JSON and coerce by the schema)."""
    from mcp.server.mcpserver.utilities.func_metadata import ArgModelBase, FuncMetadata

    class RawArguments(FuncMetadata):
        def validate_arguments(self, arguments_to_validate: dict[str, Any]) -> dict[str, Any]:
            return {"arguments": dict(arguments_to_validate)}

    return RawArguments(arg_model=ArgModelBase)


#: The commands each writing tool records (what the refusal texts are held to).
TOOL_COMMANDS: dict[str, tuple[str, ...]] = {
    "plan_set": ("Create", "Replan"),
    "plan_extend": ("Extend",),
    "step_start": ("Start",),
    "step_update": ("Complete", "Fail", "Block", "Heartbeat", "Abandon"),
    "approval_request": ("RequestApproval",),
    "step_effect": ("RequestEffect", "CommitEffect"),
    "criterion_verdict": ("VerifyCriterion",),
    "run_finish": ("Finish",),
    "step_adopt": ("Adopt",),
}


def _run_param() -> Param:
    from plantrail.cli.mcp_schemas import plain

    return plain("run", str, description="run id (default: the session's)")


def _specs(kit: _Kit) -> list[Spec]:
    """Every tool, in the order the server lists them."""
    from plantrail import audit
    from plantrail.cli.mcp_hints import late_note
    from plantrail.cli.mcp_origin import plan_source
    from plantrail.cli.mcp_schemas import declared, plain, unknown_argument
    from plantrail.ledger.api import Ledger
    from plantrail.ledger.rules import (
        adoption,
        approvals,
        attempts,
        criteria,
        effects,
        extension,
        leases,
        outcomes,
        reconcile,
    )
    from plantrail.ledger.vocabulary.agent_draft import AGENT_CRITERION, AGENT_STEP, TERMS_SHAPE, with_terms
    from plantrail.ledger.vocabulary.clock import utc_now
    from plantrail.ledger.vocabulary.errors import PlantrailError, error
    from plantrail.projections.views import next_view, status_document

    steps = plain("steps", list[dict[str, Any]], schema={"type": "array", "items": AGENT_STEP, "minItems": 1})
    criteria_ = plain("criteria", list[dict[str, Any]], schema={"type": "array", "items": AGENT_CRITERION})
    terms = plain("terms", dict[str, Any], schema={"type": "object"}, description="other contract terms")
    envelope = [declared(reconcile.replan, "expected_seq"), declared(reconcile.replan, "idempotency_key")]

    def noted(run: str, answer: Answer) -> Answer:
        """An acknowledgement, with what the model needs to know of a late result."""
        if answer.get("orphan"):
            state = kit.state_of(run)
            if state is not None:
                answer["next"] = late_note(answer, state)
        return answer

    def plan_set(run: str, a: Arguments) -> Answer:
        source = plan_source("plan_set", utc_now())
        with Ledger.set_plan(kit.written(run), a.pop("steps"), run=run, source=source, **a) as ledger:
            return ledger.acknowledgement()

    def plan_extend(run: str, a: Arguments) -> Answer:
        additions = {"steps": a.pop("steps", []), "acceptance_criteria": a.pop("criteria", [])}
        drafted = with_terms(additions, a.pop("terms", None), allowed=("steps", "criteria"))
        expected, source = a.pop("expected_seq", None), plan_source("plan_extend", utc_now())
        command = extension.extend(drafted, source=source, **a)
        return kit.record(run, lambda ledger: ledger.execute(command, expected_seq=expected))

    def executes(method: Method[Any, Any]) -> Callable[[str, Arguments], Answer]:
        def go(run: str, a: Arguments) -> Answer:
            expected = a.pop("expected_seq", None)
            return noted(run, kit.record(run, lambda ledger: ledger.execute(method(**a), expected_seq=expected)))

        return go

    def step_update(run: str, a: Arguments) -> Answer:
        action, step, expected = a.pop("action"), a.pop("step"), a.pop("expected_seq", None)
        method, own = _ACTIONS[action]
        if action in ("fail", "block") and "reason" not in a and "evidence" in a:
            evidence = a.pop("evidence")  # the failure's evidence stands for its reason
            a["reason"] = evidence if isinstance(evidence, str) else "; ".join(evidence)
        taken = {p.name for p in method.parameters()} - {"actor", "source"} | set(own)
        for name in a:
            if name not in taken:
                raise unknown_argument(name, f"step_update with action {action}", sorted(taken))
        named = {own.get(name, name): value for name, value in a.items()}
        if action == "complete":
            named.setdefault("evidence", [])
        elif action != "heartbeat":
            named.setdefault(own["reason"], "")
        command = method(step, **named)
        return noted(run, kit.record(run, lambda ledger: ledger.execute(command, expected_seq=expected)))

    _ACTIONS: dict[str, tuple[Method[Any, Any], dict[str, str]]] = {
        "complete": (attempts.complete, {}),
        "fail": (attempts.fail, {"reason": "error"}),
        "block": (attempts.block, {"reason": "reason"}),
        "heartbeat": (leases.heartbeat, {}),
        "abandon": (leases.abandon, {"reason": "reason"}),
    }

    def approval_request(run: str, a: Arguments) -> Answer:
        return executes(approvals.request_approval)(run, a) | {"request": a.get("request")}

    def approval_wait(run: str, a: Arguments) -> Answer:
        return _wait(kit, run, a["request"], a.get("timeout_s", _WAIT_DEFAULT))

    def step_effect(run: str, a: Arguments) -> Answer:
        key, phase, target = a.pop("key"), a.pop("phase"), a.pop("target", None)
        summary, expected = a.pop("summary", ""), a.pop("expected_seq", None)
        if phase == "committed":
            command: Any = effects.commit_effect(effect=key, result=summary, actor="agent", **a)
        elif not target:
            raise error("USAGE", "a requested effect needs its target")
        else:
            command = effects.request_effect(effect=key, target=target, before=summary, actor="agent", **a)
        return kit.record(run, lambda ledger: ledger.execute(command, expected_seq=expected))

    def plan_status(run: str, a: Arguments) -> Answer:
        with Ledger.open(kit.log(run)) as ledger:
            state = ledger.state
        return status_document(state) | {"next": next_view(state)}

    def plan_brief(run: str, a: Arguments) -> Answer:
        try:
            brief: Any = audit.brief(Path(kit.log(run)))
        except PlantrailError as exc:
            if exc.code not in ("LOG_NOT_FOUND", "PLAN_NOT_CREATED"):
                raise
            brief = None
        return {"brief": brief, "terms": TERMS_SHAPE}

    start, complete, request = attempts.start, attempts.complete, effects.request_effect
    heartbeat = leases.heartbeat
    started_seq = "the seq step_start answered"
    return [
        Spec(
            "plan_set",
            DESCRIPTIONS["plan_set"],
            [
                plain("goal", str, required=True, minLength=1),
                plain("criteria", list[dict[str, Any]], schema={**criteria_.schema, "minItems": 1}, required=True),
                plain("steps", list[dict[str, Any]], schema=steps.schema, required=True),
                terms,
                declared(reconcile.replan, "reason", required=False),
                declared(reconcile.replan, "why", required=False),
                declared(reconcile.replan, "causes", kind=list[int], description="seqs behind a replan"),
                declared(reconcile.replan, "observations", kind=list[str]),
                plain("max_in_progress", int, minimum=1),
                *envelope,
            ],
            plan_set,
        ),
        Spec(
            "plan_extend",
            extension.EXTEND.tools["plan_extend"],
            [
                plain("steps", list[dict[str, Any]], schema={"type": "array", "items": AGENT_STEP}),
                criteria_,
                terms,
                declared(extension.extend, "observations", kind=list[str]),
                declared(extension.extend, "plan_version"),
                *envelope,
            ],
            plan_extend,
        ),
        Spec(
            "step_start",
            start.declaration.tools["step_start"],
            [declared(start, n) for n in ("step", "plan_version", "expected_seq", "idempotency_key")],
            executes(start),
        ),
        Spec(
            "step_update",
            DESCRIPTIONS["step_update"],
            [
                declared(complete, "step"),
                plain("action", Literal["complete", "fail", "block", "heartbeat", "abandon"], required=True),
                declared(complete, "evidence", required=False),
                declared(attempts.block, "reason", required=False),
                declared(complete, "report", kind=dict[str, Any], description="evidence record"),
                declared(complete, "artifacts"),
                declared(heartbeat, "lease_s"),
                declared(complete, "started_seq", description=started_seq),
                *(declared(complete, n) for n in ("attempt", "plan_version", "expected_seq", "idempotency_key")),
            ],
            step_update,
        ),
        Spec(
            "approval_request",
            approvals.REQUEST_APPROVAL.tools["approval_request"],
            [
                declared(approvals.request_approval, "request"),
                declared(approvals.request_approval, "question"),
                declared(approvals.request_approval, "steps", kind=list[str]),
                declared(approvals.request_approval, "writes", kind=list[str]),
                declared(approvals.request_approval, "tools", kind=list[str]),
                *(declared(approvals.request_approval, n) for n in ("plan_version", "expected_seq", "idempotency_key")),
            ],
            approval_request,
        ),
        Spec(
            "approval_wait",
            DESCRIPTIONS["approval_wait"],
            [
                declared(approvals.approve, "request"),
                plain("timeout_s", float, minimum=0, maximum=_WAIT_MAX, default=_WAIT_DEFAULT),
            ],
            approval_wait,
            read_only=True,
        ),
        Spec(
            "step_effect",
            DESCRIPTIONS["step_effect"],
            [
                declared(request, "step"),
                declared(request, "effect", as_name="key"),
                plain("phase", Literal["requested", "committed"], required=True),
                declared(request, "target", required=False),
                plain("summary", str),
                *(declared(request, n) for n in ("plan_version", "attempt", "expected_seq", "idempotency_key")),
            ],
            step_effect,
        ),
        Spec(
            "criterion_verdict",
            criteria.VERIFY_CRITERION.tools["criterion_verdict"],
            [
                declared(criteria.verify_criterion, n)
                for n in ("criterion", "passed", "evidence", "expected_seq", "idempotency_key")
            ],
            executes(criteria.verify_criterion),
        ),
        Spec(
            "run_finish",
            outcomes.FINISH.tools["run_finish"],
            [declared(outcomes.finish, n) for n in ("outcome", "reason", "expected_seq", "idempotency_key")],
            executes(outcomes.finish),
        ),
        Spec(
            "step_adopt",
            adoption.ADOPT.tools["step_adopt"],
            [declared(adoption.adopt, n) for n in ("orphan_seq", "expected_seq", "idempotency_key")],
            executes(adoption.adopt),
        ),
        Spec("plan_status", DESCRIPTIONS["plan_status"], [], plan_status, read_only=True),
        Spec(
            "plan_why",
            DESCRIPTIONS["plan_why"],
            [plain("version", int, minimum=1)],
            lambda run, a: audit.why(Path(kit.log(run)), version=a.get("version")),
            read_only=True,
        ),
        Spec(
            "run_resume",
            DESCRIPTIONS["run_resume"],
            [],
            lambda run, a: audit.resume(Path(kit.log(run))),
            read_only=True,
        ),
        Spec("plan_brief", DESCRIPTIONS["plan_brief"], [], plan_brief, read_only=True),
    ]


#: How long approval_wait waits by default, and at most (seconds).
_WAIT_DEFAULT = 30.0
_WAIT_MAX = 300.0
#: The first pause between two reads of the log while waiting, and the longest (seconds).
_POLL_FIRST = 0.05
_POLL_MAX = 1.0


def _wait(kit: _Kit, run: str, request: str, timeout_s: float) -> Answer:
    """Read the run until approval ``request`` is decided or ``timeout_s`` seconds passed: its answer, granted,
    denied or pending (APPROVAL_NOT_FOUND for a request the run does not hold). The log is read again only
    after a pause that doubles from :data:`_POLL_FIRST` up to :data:`_POLL_MAX`: each read takes the cached state
    and the records after it."""
    import time

    from plantrail.ledger.vocabulary.errors import error

    deadline = time.monotonic() + timeout_s
    pause = _POLL_FIRST
    while True:
        state = kit.state_of(run)
        if state is None:
            raise error("LOG_NOT_FOUND", f"run {run} has no log yet")
        authority = state.authority
        found = next((a for a in (() if authority is None else authority.approvals) if a.id == request), None)
        if found is None:
            raise error("APPROVAL_NOT_FOUND", f"run {run} holds no approval request {request}", request=request)
        left = deadline - time.monotonic()
        if found.status != "requested" or left <= 0:
            status = {"granted": "granted", "denied": "denied"}.get(found.status, "pending")
            return {
                "request": request,
                "status": status,
                "steps": list(found.steps),
                "plan_version": found.plan_version,
                "current_version": state.version,
                "by": found.by,
                "why": found.why,
            }
        time.sleep(min(pause, left))
        pause = min(pause * 2, _POLL_MAX)


@click.command("mcp")
@click.option(
    "--dir",
    "folder",
    metavar="DIR",
    help="The runs folder (default: $PLANTRAIL_HOME/runs, else .plantrail/runs in the working directory).",
)
@store_option
def mcp_command(folder: str | None, store: str | None) -> None:
    """Serve the plan tools over MCP on stdio (pip install 'plantrail[mcp]'). With $PLANTRAIL_SIGN_KEY (and
    $PLANTRAIL_SIGN_EVERY), every run the tools write to is signed as the recording commands' --sign-key
    (and --sign-every) sign it.

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
    import os
    from pathlib import Path

    from plantrail.ledger.signing_policy import policy_from_env, signing
    from plantrail.ledger.stores.locations import HOME_ENV, runs_folder

    own = folder is None and not store and not os.environ.get(HOME_ENV)
    project = Path.cwd() / ".plantrail" if own else None
    policy = policy_from_env(os.environ)  # a bad key or N is refused before the server starts
    with signing(policy):
        build_server(runs_folder(folder), None if folder is not None else store, project).run("stdio")


def _from_environment(store: str) -> bool:
    """True when ``store`` came from $PLANTRAIL_STORE (a --dir given on the command line then wins)."""
    import os

    return os.environ.get(STORE_ENV) == store
