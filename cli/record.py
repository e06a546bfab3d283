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
    read_json_file,
    read_text,
    readiness_lines,
)
from plantrail.ledger.vocabulary.events import ACTORS as ACTOR_NAMES
from plantrail.ledger.vocabulary.events import REASON_CODES
from plantrail.ledger.vocabulary.limits import DRAFT, PATCH, REPORT

if TYPE_CHECKING:
    from plantrail.ledger.rules.decide import Command
    from plantrail.ledger.stores.protocol import Ack, FsyncPolicy
    from plantrail.ledger.vocabulary.events import Actor, Outcome, ReasonCode
    from plantrail.ledger.vocabulary.evidence import Report
    from plantrail.projections.model import PlanState

__all__ = ["record_commands"]

F = TypeVar("F", bound=Callable[..., Any])
ACTORS = click.Choice(ACTOR_NAMES)
REASONS = REASON_CODES


def _write_options(default_actor: str) -> Callable[[F], F]:
    """Options every recording command shares: fencing, optimistic concurrency, idempotency, actor."""

    def decorate(func: F) -> F:
        func = click.option(
            "--actor", type=ACTORS, default=default_actor, show_default=True, help="Who issued the command."
        )(func)
        func = click.option(
            "--idempotency-key",
            "key",
            metavar="KEY",
            help="Retry-safe key: the same key and content returns the original seq; "
            "other content is IDEMPOTENCY_CONFLICT.",
        )(func)
        func = click.option(
            "--expected-seq",
            type=click.IntRange(min=0),
            metavar="N",
            help="Refuse (STALE_EXPECTED_SEQ) unless the log still ends at seq N.",
        )(func)
        return json_option(func)

    return decorate


#: What each command does with a --plan-version that a replan has superseded (docs/semantics.md, on fencing).
_LATE_RESULT = "A result for a superseded version is still recorded, on the orphan path: never lost, never applied."
_LATE_REFUSED = "A superseded version is refused (STALE_PLAN_VERSION) and nothing is recorded"


def _plan_version_option(when_superseded: str) -> Callable[[F], F]:
    return click.option(
        "--plan-version",
        type=click.IntRange(min=1),
        metavar="V",
        help=f"The plan version the worker was on (default: the active one). {when_superseded}",
    )


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


def _attempt_option(func: F) -> F:
    return click.option(
        "--attempt",
        type=click.IntRange(min=1),
        metavar="N",
        help="The attempt this result belongs to (default: the step's current one).",
    )(func)


def _report_option(func: F) -> F:
    return click.option(
        "--report",
        "report_path",
        metavar="FILE",
        help="The runtime's evidence record (JSON file, - for stdin): command, exit_code, started, truncated, "
        "changed_paths, observations (one per check), tools, usage, duration_s, meta. Format v2.",
    )(func)


def _read_report(path: str | None) -> Report | None:
    from plantrail.ledger.vocabulary.evidence import parse_report

    return None if path is None else parse_report(read_json_file(path, REPORT))


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
    return click.option(
        "--strict",
        is_flag=True,
        help="Refuse (COVERAGE_GAP) a plan with a task criterion that no step covers and no typed check covers.",
    )(func)


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
        elif held is not None:
            outside = ", ".join((*held["paths"], *held["tools"]))
            lines = [
                f"seq {ack.seq}: {what} recorded as the blocked attempt scope_violation (outside the step's scope: "
                f"{outside}); the run is paused until an approval widens the scope or a replan"
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


@click.command()
@new_log_argument
@click.option("--plan", "plan_path", required=True, metavar="DRAFT", help="The plan draft (JSON file, - for stdin).")
@click.option("--run", "run_id", metavar="ID", help="The run id (default: the log's file name without .jsonl).")
@click.option(
    "--fsync",
    type=click.Choice(["always", "batch", "none"]),
    default="always",
    show_default=True,
    help="Durability policy recorded in the header (see docs/reliability.md).",
)
@click.option("--actor", type=ACTORS, default="planner", show_default=True, help="Who issued the command.")
@click.option(
    "--observed",
    multiple=True,
    metavar="KEY=VERSION",
    help="An observation version the plan was made from (a repository HEAD ...; repeatable; format v2): "
    "status flags the plan as possibly stale when plantrail observe records another.",
)
@_strict_option
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
    """Create LOG with a validated plan draft as version 1 (never overwrites a file). A task criterion that no
    step covers (a step's "covers") and no typed check covers is a warning on stderr ("warnings" in JSON), or
    with --strict a refusal (COVERAGE_GAP); a plan that declares no coverage at all is warned only by --strict.

    \b
    Example:
      plantrail create run.jsonl --plan samples/cli-name-flag.draft.json
      plantrail create run.jsonl --plan draft.json --strict
    """
    from plantrail.ledger.api import Ledger
    from plantrail.ledger.rules.observations import with_observed
    from plantrail.ledger.vocabulary.plan import parse_draft

    draft = with_observed(parse_draft(read_json_file(plan_path, DRAFT)), observed)
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


@click.command()
@log_argument
@click.argument("step")
@_plan_version_option(f"{_LATE_REFUSED}: start the step in the active version.")
@_write_options("agent")
def start(
    log: str, step: str, plan_version: int | None, expected_seq: int | None, key: str | None, actor: str, as_json: bool
) -> None:
    """Start STEP's next attempt (it must be pending, ready, and within max_in_progress).

    \b
    Example:
      plantrail start run.jsonl inspect
    """
    from plantrail.ledger.rules.decide import Start

    _run(log, Start(step=step, plan_version=plan_version, key=key, actor=cast("Actor", actor)), expected_seq, as_json)


@click.command()
@log_argument
@click.argument("step")
@click.option(
    "--evidence",
    "-e",
    multiple=True,
    metavar="TEXT",
    help="What shows the step is done (repeatable; - reads standard input; must not be blank).",
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
    metavar="NAME=DIGEST[@URI]",
    help="An artifact the step produced: a declared output's name, its digest (ALGO:HEX, e.g. sha256:...) and "
    "optionally where it is (repeatable; format v2).",
)
@_plan_version_option(_LATE_RESULT)
@_attempt_option
@_report_option
@_write_options("agent")
def complete(
    log: str,
    step: str,
    evidence: tuple[str, ...],
    evidence_files: tuple[str, ...],
    artifacts: tuple[str, ...],
    plan_version: int | None,
    attempt: int | None,
    report_path: str | None,
    expected_seq: int | None,
    key: str | None,
    actor: str,
    as_json: bool,
) -> None:
    """Complete STEP's attempt with evidence (text, a file, or standard input: real tool output of any size
    up to the event limit is recorded whole). Items from --evidence come first, then those from files.

    A step with typed checks completes only when the --report's observations satisfy every one of them
    (CHECK_NOT_MET otherwise: report the attempt as fail with the same record). A step that declares outputs
    completes only with an --artifact for each (ARTIFACT_MISSING).

    \b
    Example:
      plantrail complete run.jsonl inspect --evidence "read src/cli.py, tests/test_cli.py, package.json"
      pytest -q 2>&1 | plantrail complete run.jsonl validate -e -
      plantrail complete run.jsonl reproduce -e "the new test fails with 200" --report observed.json
      plantrail complete run.jsonl edit -e "patched" --artifact patch=sha256:<64 hex>@out/fix.diff
    """
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
        report=_read_report(report_path),
        artifacts=tuple(parse_artifact_option(a) for a in artifacts),
        key=key,
        actor=cast("Actor", actor),
    )
    _run(log, command, expected_seq, as_json)


@click.command()
@log_argument
@click.argument("step")
@click.option("--reason", metavar="TEXT", help="Why the step cannot continue (- reads standard input).")
@click.option(
    "--reason-file",
    metavar="FILE",
    type=FilePath(dir_okay=False, path_type=str),
    help=f"The reason from a file (- for standard input): {_FROM_FILE}.",
)
@_plan_version_option(_LATE_RESULT)
@_attempt_option
@_report_option
@_write_options("agent")
def block(
    log: str,
    step: str,
    reason: str | None,
    reason_file: str | None,
    plan_version: int | None,
    attempt: int | None,
    report_path: str | None,
    expected_seq: int | None,
    key: str | None,
    actor: str,
    as_json: bool,
) -> None:
    """Block STEP's attempt with a reason (a replan is needed to go on).

    \b
    Example:
      plantrail block run.jsonl implement --reason "needs write access to src/auth"
    """
    from plantrail.ledger.rules.decide import Block

    text = _text_input(reason, reason_file, "reason", "--reason TEXT or --reason-file FILE")
    command = Block(
        step=step,
        reason=text,
        plan_version=plan_version,
        attempt=attempt,
        report=_read_report(report_path),
        key=key,
        actor=cast("Actor", actor),
    )
    _run(log, command, expected_seq, as_json)


@click.command()
@log_argument
@click.argument("step")
@click.option("--error", "error_text", metavar="TEXT", help="What went wrong (- reads standard input).")
@click.option(
    "--error-file",
    metavar="FILE",
    type=FilePath(dir_okay=False, path_type=str),
    help=f"The error from a file, e.g. a tool's output (- for standard input): {_FROM_FILE}.",
)
@_plan_version_option(_LATE_RESULT)
@_attempt_option
@_report_option
@_write_options("agent")
def fail(
    log: str,
    step: str,
    error_text: str | None,
    error_file: str | None,
    plan_version: int | None,
    attempt: int | None,
    report_path: str | None,
    expected_seq: int | None,
    key: str | None,
    actor: str,
    as_json: bool,
) -> None:
    """Record a failed attempt of STEP: back to pending while attempts remain, else blocked.

    \b
    Example:
      plantrail fail run.jsonl validate --error "pytest exited 1: test_name_flag failed"
      plantrail fail run.jsonl validate --error-file pytest.log
    """
    from plantrail.ledger.rules.decide import Fail

    text = _text_input(error_text, error_file, "error", "--error TEXT or --error-file FILE")
    command = Fail(
        step=step,
        error=text,
        plan_version=plan_version,
        attempt=attempt,
        report=_read_report(report_path),
        key=key,
        actor=cast("Actor", actor),
    )
    _run(log, command, expected_seq, as_json)


@click.command()
@log_argument
@click.argument("criterion")
@click.option("--passed/--failed", "passed", required=True, help="The verdict.")
@click.option("--evidence", "-e", metavar="TEXT", help="What shows the verdict (- reads standard input).")
@click.option(
    "--evidence-file",
    metavar="FILE",
    type=FilePath(dir_okay=False, path_type=str),
    help=f"The evidence from a file (- for standard input): {_FROM_FILE}.",
)
@_plan_version_option(
    f"{_LATE_REFUSED}: a verdict on a superseded version is not kept anywhere; verify the criterion again "
    "in the active version."
)
@_report_option
@_write_options("agent")
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
    """Record that acceptance CRITERION passed or failed, with evidence.

    \b
    Example:
      plantrail criterion run.jsonl name-success --passed --evidence "node cli.js --name Lin printed Lin"
    """
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


@click.command()
@log_argument
@click.option(
    "--outcome",
    required=True,
    type=click.Choice(["complete", "paused", "failed", "cancelled", "partial", "budget_exhausted"]),
    help="complete needs every step completed and every criterion passed; paused is not final; partial "
    "(the plan must set allowed_partial) lists done, not done and where to resume; budget_exhausted lists "
    "what is unmet.",
)
@click.option("--reason", required=True, metavar="TEXT", help="Why the run ends or pauses.")
@_plan_version_option(f"{_LATE_REFUSED}.")
@_write_options("agent")
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
    """Finish the run (complete, failed, cancelled; format v2: partial, budget_exhausted) or pause it.

    \b
    Example:
      plantrail finish run.jsonl --outcome complete --reason "all criteria passed"
      plantrail finish run.jsonl --outcome budget_exhausted --reason "turn budget spent; lint still fails"
    """
    from plantrail.ledger.rules.decide import Finish

    command = Finish(
        outcome=cast("Outcome", outcome),
        reason=reason,
        plan_version=plan_version,
        key=key,
        actor=cast("Actor", actor),
    )
    _run(log, command, expected_seq, as_json)


@click.command()
@log_argument
@click.option("--plan", "plan_path", metavar="DRAFT", help="The whole new draft (JSON file, - for stdin).")
@click.option(
    "--patch",
    "patch_path",
    metavar="PATCH",
    help='A patch {"base_version": N, "operations": [...]} instead of a whole draft.',
)
@click.option("--reason", required=True, type=click.Choice(REASONS), help="Why, as a code.")
@click.option("--why", required=True, metavar="TEXT", help="Why, in words: what was observed.")
@click.option(
    "--caused-by",
    "causes",
    multiple=True,
    type=click.IntRange(min=0),
    metavar="SEQ",
    help="Seq of an event in the log that caused the replan (repeatable); any other seq is UNKNOWN_CAUSE.",
)
@click.option(
    "--observation",
    "observations",
    multiple=True,
    metavar="TEXT",
    help="A free-text observation behind the replan (repeatable; - reads standard input).",
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
@_plan_version_option(f"{_LATE_REFUSED}: read the active version and replan from it.")
@_strict_option
@_write_options("planner")
def replan(
    log: str,
    plan_path: str | None,
    patch_path: str | None,
    reason: str,
    why: str,
    causes: tuple[int, ...],
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
    """Adopt a new plan version; completed work is kept only where its contract and lineage are unchanged.
    Coverage gaps of the new plan are warnings on stderr, or with --strict a refusal (see create).

    \b
    Example:
      plantrail replan run.jsonl --plan v2.json --reason failed_assumption \\
          --why "auth service returns 500, not 401" --caused-by 6
    """
    from plantrail.ledger.rules.decide import Replan
    from plantrail.ledger.rules.observations import with_observed
    from plantrail.ledger.vocabulary.errors import error
    from plantrail.ledger.vocabulary.plan import parse_draft, parse_patch

    if (plan_path is None) == (patch_path is None):
        raise error("USAGE", "give exactly one of --plan DRAFT or --patch PATCH")
    if observed and patch_path:
        raise error("USAGE", "--observed takes a whole draft (--plan DRAFT), not a patch")
    draft = with_observed(parse_draft(read_json_file(plan_path, DRAFT)), observed) if plan_path else None
    patch = parse_patch(read_json_file(patch_path, PATCH)) if patch_path else None
    command = Replan(
        reason=cast("ReasonCode", reason),
        why=why,
        plan=draft,
        patch=patch,
        causes=causes,
        observations=_text_inputs(observations, observation_files, "observation"),
        plan_version=plan_version,
        key=key,
        actor=cast("Actor", actor),
        strict=strict,
    )
    _run(log, command, expected_seq, as_json)


record_commands = (create, start, complete, block, fail, criterion, finish, replan)
