"""Commands that record: create, start, complete, block, fail, criterion, finish, replan.

Each parses its arguments, calls one library function, and renders the acknowledgement.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar, cast

import click

from plantrail.cli.common import (
    FilePath,
    emit,
    json_option,
    log_argument,
    new_log_argument,
    read_draft_file,
    read_json_file,
    read_text,
    readiness_lines,
    signing_options,
    trace_options,
)
from plantrail.ledger.rules.adoption import ADOPT
from plantrail.ledger.rules.attempts import BLOCK, COMPLETE, FAIL, START
from plantrail.ledger.rules.commands import ENVELOPE, REPORT, Declaration
from plantrail.ledger.rules.criteria import VERIFY_CRITERION
from plantrail.ledger.rules.outcomes import FINISH
from plantrail.ledger.rules.reconcile import CREATE, REPLAN
from plantrail.ledger.vocabulary.events import ACTORS as ACTOR_NAMES
from plantrail.ledger.vocabulary.events import OUTCOMES, REASON_CODES
from plantrail.ledger.vocabulary.limits import DRAFT, PATCH
from plantrail.ledger.vocabulary.limits import REPORT as REPORT_LIMIT

if TYPE_CHECKING:
    from plantrail.ledger.rules.commands import Field
    from plantrail.ledger.rules.decide import Command
    from plantrail.ledger.stores.values import Ack, FsyncPolicy
    from plantrail.ledger.vocabulary.events import Actor, Outcome, ReasonCode
    from plantrail.ledger.vocabulary.evidence import Report
    from plantrail.projections.model import PlanState

__all__ = ["record_commands"]

F = TypeVar("F", bound=Callable[..., Any])
ACTORS = click.Choice(ACTOR_NAMES)
REASONS = REASON_CODES


def _write_options(declaration: Declaration[Any]) -> Callable[[F], F]:
    """Options every recording command shares (declared once: :data:`~plantrail.ledger.rules.commands.ENVELOPE`):
    optimistic concurrency, idempotency, actor (its default the command's), the trace context, the signing
    policy."""

    def decorate(func: F) -> F:
        func = signing_options(trace_options(func))
        func = click.option(
            "--actor",
            type=ACTORS,
            default=declaration.defaults()["actor"],
            show_default=True,
            help=ENVELOPE["actor"].help,
        )(func)
        key = ENVELOPE["idempotency_key"]
        func = click.option("--idempotency-key", "key", metavar=key.metavar, help=key.help)(func)
        expected = ENVELOPE["expected_seq"]
        func = click.option("--expected-seq", type=_number(expected), metavar=expected.metavar, help=expected.help)(
            func
        )
        return json_option(func)

    return decorate


def _number(field: Field, kind: type[int] | type[float] = int) -> click.ParamType[Any]:
    """The click type of a number option with the limits ``field`` declares."""
    if kind is float:
        return click.FloatRange(min=field.minimum, max=field.maximum, min_open=field.open_minimum)
    low = None if field.minimum is None else int(field.minimum)
    high = None if field.maximum is None else int(field.maximum)
    return click.IntRange(min=low, max=high)


def _plan_version_option(declaration: Declaration[Any]) -> Callable[[F], F]:
    """--plan-version, saying what the command does with a version a replan has superseded (the declaration's
    ``superseded``; docs/semantics.md, on fencing)."""
    field = ENVELOPE["plan_version"]
    return click.option(
        "--plan-version",
        type=_number(field),
        metavar=field.metavar,
        help=f"{field.help} {declaration.superseded}",
    )


def _help(declaration: Declaration[Any], name: str) -> str:
    """The option help the declaration gives field ``name``."""
    return declaration.field(name).help


#: How a text option reads a file or standard input (shared by every option that takes evidence or a reason).
_FROM_FILE = (
    "the whole file, up to the most one event holds (16 MiB; larger is refused with EVENT_TOO_LARGE, never cut)"
)


def _text_input(value: str | None, path: str | None, what: str, options: str) -> str:
    """One text from ``--OPTION TEXT`` (``-`` reads standard input) or ``--OPTION-file FILE``: exactly one."""
    from plantrail.ledger.vocabulary.errors import error

    if (value is None) == (path is None):
        raise error("USAGE", f"give exactly one of {options}")
    if path is not None:
        return read_text(path, what)
    assert value is not None
    return read_text("-", what) if value == "-" else value


def _text_inputs(values: tuple[str, ...], paths: tuple[str, ...], what: str) -> tuple[str, ...]:
    """Texts from a repeatable option (``-`` reads standard input) followed by those from its files."""
    return tuple(read_text("-", what) if v == "-" else v for v in values) + tuple(read_text(p, what) for p in paths)


def _attempt_option(declaration: Declaration[Any]) -> Callable[[F], F]:
    """--attempt, and for a result --started-seq (the seq of the attempt's start, naming it exactly)."""
    field = declaration.field("attempt")
    attempt = click.option("--attempt", type=_number(field), metavar=field.metavar, help=field.help)
    if "started_seq" not in declaration.defaults():
        return attempt
    seq = declaration.field("started_seq")
    started = click.option("--started-seq", type=_number(seq), metavar=seq.metavar, help=seq.help)

    def decorate(func: F) -> F:
        return attempt(started(func))

    return decorate


def _report_option(func: F) -> F:
    return click.option("--report", "report_path", metavar=REPORT.metavar, help=REPORT.help)(func)


def _read_report(path: str | None) -> Report | None:
    from plantrail.ledger.vocabulary.evidence import parse_report

    return None if path is None else parse_report(read_json_file(path, REPORT_LIMIT))


def _run(log: str, command: Command, expected_seq: int | None, as_json: bool) -> None:
    from plantrail.ledger.api import Ledger
    from plantrail.ledger.rules.decide import Replan

    with Ledger.open(log) as ledger:
        ack = ledger.execute(command, expected_seq=expected_seq)
        _acknowledge(ledger.unread_state, command, ack, ledger.acknowledgement(ack), as_json)
        if isinstance(command, Replan) and not ack.duplicate:
            _coverage_warnings(ledger.unread_state)


def _strict_option(func: F) -> F:
    """--strict on create and replan: refuse a coverage gap instead of warning about it."""
    return click.option("--strict", is_flag=True, help=_help(CREATE, "strict"))(func)


def _coverage_warnings(state: PlanState) -> None:
    """Print the adopted plan's coverage warnings on stderr (``warning[CODE]: message``)."""
    from plantrail.ledger.vocabulary.coverage import coverage_warnings

    _print_warnings([w.as_dict() for w in ([] if state.plan is None else coverage_warnings(state.plan))])


def _print_warnings(warnings: list[dict[str, Any]]) -> None:
    """Print warnings (as :meth:`PlantrailError.as_dict` gives them) on stderr: ``warning[CODE]: message``."""
    from plantrail.cli.terminal import printable

    for warning in warnings:
        click.echo(f"warning[{warning['code']}]: {printable(warning['message'])}", err=True)


#: What the acknowledgement calls each command: the CLI's own command names.
_COMMAND_NAMES = {"VerifyCriterion": "criterion", "RequestApproval": "request-approval"}


def _describe(command: Command) -> str:
    fields = [getattr(command, name, None) for name in ("step", "criterion", "outcome", "request")]
    subject = next((f for f in fields if f), "")
    name = type(command).__name__
    if name == "Decide":
        name = "approve" if getattr(command, "granted", False) else "deny"
    return f"{_COMMAND_NAMES.get(name, name.lower())} {subject}".strip()


def _acknowledge(state: PlanState, command: Command, ack: Ack, data: dict[str, Any], as_json: bool) -> None:
    """Print the acknowledgement document ``data`` (JSON), or its rendering (the state after the command: the
    acknowledgement prints no evidence, so none is read)."""
    next_advice = data["advice"]
    held = data.get("scope_violation")

    def human() -> str:
        what = _describe(command)
        if ack.duplicate:
            lines = [f"seq {ack.seq}: {what} was already recorded under this idempotency key; nothing written"]
        elif ack.orphan:
            lines = [f"seq {ack.seq}: {what} is a late result: it landed on the orphan path ({ack.orphan})"]
            if ack.orphan == "AMBIGUOUS_ATTEMPT":
                lines.append(
                    "it named no attempt, and more than one could be its own (a replan cut one off): send it "
                    "again with --started-seq, the seq its start was acknowledged with"
                )
        elif held is not None:
            outside = ", ".join((*held["paths"], *held["tools"]))
            lines = [
                f"seq {ack.seq}: {what} recorded as the blocked attempt scope_violation (outside the step's scope: "
                f"{outside}); the run is paused until an approval widens the scope or a replan"
            ]
        elif "started_seq" in data:
            lines = [
                f"seq {ack.seq}: {what} recorded (plan v{state.version}, attempt {data['attempt']}); its result "
                f"names it with --started-seq {data['started_seq']}"
            ]
        else:
            lines = [f"seq {ack.seq}: {what} recorded (plan v{state.version})"]
        lines.append(f"anchor: {data['anchor']}")
        if ack.duplicate:
            return "\n".join(lines)
        if state.outcome:
            lines.append(f"run: {state.outcome}")
        if not state.finished:
            lines += readiness_lines(state)
        if next_advice:
            lines.append(f"advice: consider a replan ({next_advice})")
        return "\n".join(lines)

    emit(as_json, data, human)


@click.command(help=CREATE.cli["create"].text)
@new_log_argument
@click.option("--plan", "plan_path", required=True, metavar=CREATE.field("plan").metavar, help=_help(CREATE, "plan"))
@click.option("--run", "run_id", metavar="ID", help="The run id (default: the log's file name without .jsonl).")
@click.option(
    "--fsync",
    type=click.Choice(["always", "batch", "none"]),
    default="always",
    show_default=True,
    help="Durability policy recorded in the header (see docs/reliability.md).",
)
@click.option(
    "--actor", type=ACTORS, default=CREATE.defaults()["actor"], show_default=True, help=ENVELOPE["actor"].help
)
@click.option(
    "--observed",
    multiple=True,
    metavar="KEY=VERSION",
    help="An observation version the plan was made from (a repository HEAD ...; repeatable; format v2): "
    "status flags the plan as possibly stale when plantrail observe records another.",
)
@_strict_option
@signing_options
@trace_options
@json_option
def create(
    log: str,
    plan_path: str,
    run_id: str | None,
    fsync: str,
    actor: str,
    observed: tuple[str, ...],
    strict: bool,
    as_json: bool,
) -> None:
    from plantrail.ledger.api import Ledger
    from plantrail.ledger.rules.observations import with_observed
    from plantrail.ledger.vocabulary.plan import parse_draft

    draft = with_observed(parse_draft(read_draft_file(plan_path, DRAFT)), observed)
    with Ledger.create(
        log, draft, run=run_id, fsync=cast("FsyncPolicy", fsync), actor=cast("Actor", actor), strict=strict
    ) as ledger:
        state = ledger.state
        data = ledger.acknowledgement()
        _print_warnings(data.get("warnings", []))
        lines = [
            f"created {log}: run {state.run}, plan v1 with {len(state.steps)} steps",
            f"anchor: {data['anchor']}",
            *readiness_lines(state),
        ]
        emit(as_json, data, lambda: "\n".join(lines))


@click.command(help=START.cli["start"].text)
@log_argument
@click.argument("step")
@_plan_version_option(START)
@_write_options(START)
def start(
    log: str, step: str, plan_version: int | None, expected_seq: int | None, key: str | None, actor: str, as_json: bool
) -> None:
    from plantrail.ledger.rules.decide import Start

    _run(log, Start(step=step, plan_version=plan_version, key=key, actor=cast("Actor", actor)), expected_seq, as_json)


@click.command(help=COMPLETE.cli["complete"].text)
@log_argument
@click.argument("step")
@click.option(
    "--evidence",
    "-e",
    multiple=True,
    metavar=COMPLETE.field("evidence").metavar,
    help=_help(COMPLETE, "evidence"),
)
@click.option(
    "--evidence-file",
    "evidence_files",
    multiple=True,
    metavar="FILE",
    type=FilePath(dir_okay=False, path_type=str),
    help=f"One evidence item from a file (repeatable; - for standard input): {_FROM_FILE}.",
)
@click.option(
    "--artifact",
    "artifacts",
    multiple=True,
    metavar=COMPLETE.field("artifacts").metavar,
    help=_help(COMPLETE, "artifacts"),
)
@_plan_version_option(COMPLETE)
@_attempt_option(COMPLETE)
@_report_option
@_write_options(COMPLETE)
def complete(
    log: str,
    step: str,
    evidence: tuple[str, ...],
    evidence_files: tuple[str, ...],
    artifacts: tuple[str, ...],
    plan_version: int | None,
    attempt: int | None,
    started_seq: int | None,
    report_path: str | None,
    expected_seq: int | None,
    key: str | None,
    actor: str,
    as_json: bool,
) -> None:
    from plantrail.ledger.rules.decide import Complete
    from plantrail.ledger.vocabulary.artifacts import parse_artifact_option
    from plantrail.ledger.vocabulary.errors import error

    if not evidence and not evidence_files:
        raise error("USAGE", "complete needs evidence: --evidence TEXT (- for standard input) or --evidence-file FILE")
    command = Complete(
        step=step,
        evidence=_text_inputs(evidence, evidence_files, "evidence"),
        plan_version=plan_version,
        attempt=attempt,
        started_seq=started_seq,
        report=_read_report(report_path),
        artifacts=tuple(parse_artifact_option(a) for a in artifacts),
        key=key,
        actor=cast("Actor", actor),
    )
    _run(log, command, expected_seq, as_json)


@click.command(help=BLOCK.cli["block"].text)
@log_argument
@click.argument("step")
@click.option("--reason", metavar=BLOCK.field("reason").metavar, help=_help(BLOCK, "reason"))
@click.option(
    "--reason-file",
    metavar="FILE",
    type=FilePath(dir_okay=False, path_type=str),
    help=f"The reason from a file (- for standard input): {_FROM_FILE}.",
)
@_plan_version_option(BLOCK)
@_attempt_option(BLOCK)
@_report_option
@_write_options(BLOCK)
def block(
    log: str,
    step: str,
    reason: str | None,
    reason_file: str | None,
    plan_version: int | None,
    attempt: int | None,
    started_seq: int | None,
    report_path: str | None,
    expected_seq: int | None,
    key: str | None,
    actor: str,
    as_json: bool,
) -> None:
    from plantrail.ledger.rules.decide import Block

    text = _text_input(reason, reason_file, "reason", "--reason TEXT or --reason-file FILE")
    command = Block(
        step=step,
        reason=text,
        plan_version=plan_version,
        attempt=attempt,
        started_seq=started_seq,
        report=_read_report(report_path),
        key=key,
        actor=cast("Actor", actor),
    )
    _run(log, command, expected_seq, as_json)


@click.command(help=FAIL.cli["fail"].text)
@log_argument
@click.argument("step")
@click.option("--error", "error_text", metavar=FAIL.field("error").metavar, help=_help(FAIL, "error"))
@click.option(
    "--error-file",
    metavar="FILE",
    type=FilePath(dir_okay=False, path_type=str),
    help=f"The error from a file, e.g. a tool's output (- for standard input): {_FROM_FILE}.",
)
@_plan_version_option(FAIL)
@_attempt_option(FAIL)
@_report_option
@_write_options(FAIL)
def fail(
    log: str,
    step: str,
    error_text: str | None,
    error_file: str | None,
    plan_version: int | None,
    attempt: int | None,
    started_seq: int | None,
    report_path: str | None,
    expected_seq: int | None,
    key: str | None,
    actor: str,
    as_json: bool,
) -> None:
    from plantrail.ledger.rules.decide import Fail

    text = _text_input(error_text, error_file, "error", "--error TEXT or --error-file FILE")
    command = Fail(
        step=step,
        error=text,
        plan_version=plan_version,
        attempt=attempt,
        started_seq=started_seq,
        report=_read_report(report_path),
        key=key,
        actor=cast("Actor", actor),
    )
    _run(log, command, expected_seq, as_json)


@click.command(help=VERIFY_CRITERION.cli["criterion"].text)
@log_argument
@click.argument("criterion")
@click.option("--passed/--failed", "passed", required=True, help=_help(VERIFY_CRITERION, "passed"))
@click.option(
    "--evidence",
    "-e",
    metavar=VERIFY_CRITERION.field("evidence").metavar,
    help=_help(VERIFY_CRITERION, "evidence"),
)
@click.option(
    "--evidence-file",
    metavar="FILE",
    type=FilePath(dir_okay=False, path_type=str),
    help=f"The evidence from a file (- for standard input): {_FROM_FILE}.",
)
@_plan_version_option(VERIFY_CRITERION)
@_report_option
@_write_options(VERIFY_CRITERION)
def criterion(
    log: str,
    criterion: str,
    passed: bool,
    evidence: str | None,
    evidence_file: str | None,
    plan_version: int | None,
    report_path: str | None,
    expected_seq: int | None,
    key: str | None,
    actor: str,
    as_json: bool,
) -> None:
    from plantrail.ledger.rules.decide import VerifyCriterion

    text = _text_input(evidence, evidence_file, "evidence", "--evidence TEXT or --evidence-file FILE")
    command = VerifyCriterion(
        criterion=criterion,
        passed=passed,
        evidence=text,
        plan_version=plan_version,
        report=_read_report(report_path),
        key=key,
        actor=cast("Actor", actor),
    )
    _run(log, command, expected_seq, as_json)


@click.command(help=FINISH.cli["finish"].text)
@log_argument
@click.option("--outcome", required=True, type=click.Choice(OUTCOMES), help=_help(FINISH, "outcome"))
@click.option("--reason", required=True, metavar=FINISH.field("reason").metavar, help=_help(FINISH, "reason"))
@_plan_version_option(FINISH)
@_write_options(FINISH)
def finish(
    log: str,
    outcome: str,
    reason: str,
    plan_version: int | None,
    expected_seq: int | None,
    key: str | None,
    actor: str,
    as_json: bool,
) -> None:
    from plantrail.ledger.rules.decide import Finish

    command = Finish(
        outcome=cast("Outcome", outcome),
        reason=reason,
        plan_version=plan_version,
        key=key,
        actor=cast("Actor", actor),
    )
    _run(log, command, expected_seq, as_json)


@click.command(help=REPLAN.cli["replan"].text)
@log_argument
@click.option("--plan", "plan_path", metavar=REPLAN.field("plan").metavar, help=_help(REPLAN, "plan"))
@click.option("--patch", "patch_path", metavar=REPLAN.field("patch").metavar, help=_help(REPLAN, "patch"))
@click.option("--reason", required=True, type=click.Choice(REASONS), help=_help(REPLAN, "reason"))
@click.option("--why", required=True, metavar=REPLAN.field("why").metavar, help=_help(REPLAN, "why"))
@click.option(
    "--caused-by",
    "causes",
    multiple=True,
    type=_number(REPLAN.field("causes")),
    metavar=REPLAN.field("causes").metavar,
    help=_help(REPLAN, "causes"),
)
@click.option(
    "--caused-by-parent",
    "parent_causes",
    multiple=True,
    type=_number(REPLAN.field("parent_causes")),
    metavar=REPLAN.field("parent_causes").metavar,
    help=_help(REPLAN, "parent_causes"),
)
@click.option(
    "--observation",
    "observations",
    multiple=True,
    metavar=REPLAN.field("observations").metavar,
    help=_help(REPLAN, "observations"),
)
@click.option(
    "--observation-file",
    "observation_files",
    multiple=True,
    metavar="FILE",
    type=FilePath(dir_okay=False, path_type=str),
    help=f"One observation from a file (repeatable; - for standard input): {_FROM_FILE}.",
)
@click.option(
    "--observed",
    multiple=True,
    metavar="KEY=VERSION",
    help="An observation version the plan was made from (a repository HEAD ...; repeatable; format v2): "
    "status flags the plan as possibly stale when plantrail observe records another.",
)
@_plan_version_option(REPLAN)
@_strict_option
@_write_options(REPLAN)
def replan(
    log: str,
    plan_path: str | None,
    patch_path: str | None,
    reason: str,
    why: str,
    causes: tuple[int, ...],
    parent_causes: tuple[int, ...],
    observations: tuple[str, ...],
    observation_files: tuple[str, ...],
    observed: tuple[str, ...],
    plan_version: int | None,
    strict: bool,
    expected_seq: int | None,
    key: str | None,
    actor: str,
    as_json: bool,
) -> None:
    from plantrail.ledger.rules.decide import Replan
    from plantrail.ledger.rules.observations import with_observed
    from plantrail.ledger.vocabulary.errors import error
    from plantrail.ledger.vocabulary.plan import parse_draft, parse_patch

    if (plan_path is None) == (patch_path is None):
        raise error("USAGE", "give exactly one of --plan DRAFT or --patch PATCH")
    if observed and patch_path:
        raise error("USAGE", "--observed takes a whole draft (--plan DRAFT), not a patch")
    draft = with_observed(parse_draft(read_draft_file(plan_path, DRAFT)), observed) if plan_path else None
    patch = parse_patch(read_json_file(patch_path, PATCH)) if patch_path else None
    command = Replan(
        reason=cast("ReasonCode", reason),
        why=why,
        plan=draft,
        patch=patch,
        causes=causes,
        parent_causes=parent_causes,
        observations=_text_inputs(observations, observation_files, "observation"),
        plan_version=plan_version,
        key=key,
        actor=cast("Actor", actor),
        strict=strict,
    )
    _run(log, command, expected_seq, as_json)


@click.command(help=ADOPT.cli["adopt"].text)
@log_argument
@click.argument("seq", type=click.IntRange(min=0), metavar="SEQ")
@_plan_version_option(ADOPT)
@_write_options(ADOPT)
def adopt(
    log: str, seq: int, plan_version: int | None, expected_seq: int | None, key: str | None, actor: str, as_json: bool
) -> None:
    from plantrail.ledger.rules.adoption import Adopt

    command = Adopt(orphan_seq=seq, plan_version=plan_version, key=key, actor=cast("Actor", actor))
    _run(log, command, expected_seq, as_json)


record_commands = (create, start, complete, block, fail, criterion, finish, replan, adopt)
