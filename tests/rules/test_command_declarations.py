"""One command vocabulary: every command is declared once (``plantrail.ledger.rules.commands``), and the rules,
the library's recording methods, the command line and the MCP tools are built from the declarations."""

from __future__ import annotations

import ast
import inspect
import os
import typing
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec
import pytest

from plantrail.cli.main import all_commands
from plantrail.ledger.api import Ledger
from plantrail.ledger.rules import commands, decide
from plantrail.ledger.rules.attempts import Start
from plantrail.ledger.rules.commands import ENVELOPE, RULES, UNPLANNED_RULES, Method, declaration_of
from plantrail.ledger.rules.decide import DECLARATIONS, Command
from plantrail.ledger.stores.jsonl.log import LogReader
from plantrail.ledger.vocabulary.errors import CODES, PlantrailError
from plantrail.projections.state import initial

#: Every recording method of the Ledger, each built from one declared method.
RECORDING_METHODS = (
    "start",
    "complete",
    "block",
    "fail",
    "verify_criterion",
    "finish",
    "heartbeat",
    "abandon",
    "adopt",
    "observe",
    "replan",
    "extend",
    "request_approval",
    "approve",
    "deny",
    "request_effect",
    "commit_effect",
)
#: A method's own parameters that are no field of its command (parsed into fields by the method).
NOT_FIELDS = {"extend": {"additions"}}
#: Command fields a method sets itself (approve and deny are the two decisions of one command).
FIXED = {"approve": {"granted"}, "deny": {"granted"}}
#: The fields every command has that the envelope options give (``key`` is ``idempotency_key``).
ENVELOPE_FIELDS = {"actor", "source", "key", "plan_version", "attempt", "started_seq"}


def _methods() -> list[Method[Any, Any]]:
    return [method for declaration in DECLARATIONS for method in declaration.methods]


# --------------------------------------------------------------------------- declared once, registered


def test_every_command_is_declared_exactly_once_and_registered() -> None:
    """Each class of the Command union has one declaration, registered by its class; there is no other."""
    classes = typing.get_args(Command)
    assert [d.command for d in DECLARATIONS] == list(classes)
    assert set(commands.declarations()) == set(DECLARATIONS)
    for declaration in DECLARATIONS:
        assert commands.lookup()[declaration.command] is declaration
    with pytest.raises(TypeError, match="declared twice"):
        commands.declare(Start, build=lambda state, command: (None, 1), rules={})  # type: ignore[arg-type,return-value]


def test_every_event_has_its_rules_from_one_declaration() -> None:
    """The rules tables hold exactly the declarations' rules, each event's from one declaration."""
    declared: dict[type[Any], Any] = {}
    for declaration in DECLARATIONS:
        for kind, rules in declaration.rules.items():
            assert kind not in declared or declared[kind] is rules, kind
            declared[kind] = rules
    assert declared == {**RULES, **UNPLANNED_RULES}
    assert not set(RULES) & set(UNPLANNED_RULES)


def test_decide_holds_no_match_over_the_commands() -> None:
    """``decide`` finds a command's declaration by its class: its module has no ``match`` and names no command
    class in an ``isinstance``."""
    tree = ast.parse(Path(decide.__file__).read_text(encoding="utf-8"))
    assert not any(isinstance(node, ast.Match) for node in ast.walk(tree))
    names = {d.command.__name__ for d in DECLARATIONS}
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "isinstance":
            assert not {n.id for n in ast.walk(node.args[1]) if isinstance(n, ast.Name)} & names


def test_a_derived_command_is_decided_as_its_base_and_a_stranger_is_refused() -> None:
    """A subclass of a command is decided by its base's declaration; anything else is refused with INVALID_ARGUMENT."""

    class Mine(Start, frozen=True, kw_only=True):
        pass

    assert declaration_of(Mine(step="a")) is declaration_of(Start(step="a"))
    with pytest.raises(PlantrailError) as caught:
        decide.decide(initial(), object())  # type: ignore[arg-type]
    assert caught.value.code == "INVALID_ARGUMENT"


def test_every_declared_refusal_is_a_known_code_with_its_exit_code() -> None:
    """The refusals a declaration lists are error codes, each with its class's exit code (1 refused, 2 usage)."""
    for declaration in DECLARATIONS:
        assert declaration.refusals, declaration
        codes = declaration.exit_codes()
        assert set(codes) == set(declaration.refusals) <= set(CODES)
        assert set(codes.values()) <= {1, 2}, declaration


# --------------------------------------------------------------------------- commands reach their rules


DRAFT: dict[str, Any] = {
    "goal": "every command once",
    "acceptance_criteria": [{"id": "done", "description": "it is done"}],
    "steps": [
        {"id": "a", "title": "A", "completion_evidence": "output", "timeout_s": 60},
        {"id": "b", "title": "B", "completion_evidence": "output"},
    ],
}
EXTRA = {"steps": [{"id": "c", "title": "C", "completion_evidence": "output"}]}


def _every_command(ledger: Ledger) -> None:
    """One call of every recording method, each legal where it stands."""
    ledger.extend(EXTRA)
    ledger.observe("repo", "abc123")
    ledger.request_approval("go-a", "may a run?", "a")
    ledger.approve("go-a", by="ana", why="ok")
    ledger.start("a")
    ledger.heartbeat("a", lease_s=30)
    ledger.request_effect("a", "deploy-1", "prod", before="v1")
    ledger.commit_effect("a", "deploy-1", result="v2")
    ledger.complete("a", "it ran")
    ledger.start("b")
    ledger.fail("b", "it broke")
    ledger.start("b")
    ledger.abandon("b", "its worker is gone")
    late = ledger.complete("b", "it ran after all", attempt=2)  # the gone worker's result: on the orphan path
    ledger.adopt(late.seq)
    ledger.start("c")
    ledger.block("c", "it is stuck")
    ledger.verify_criterion("done", True, "checked")
    ledger.request_approval("go-c", "may c run?", "c")
    ledger.deny("go-c", by="ana", why="no")
    removal = {"base_version": 1, "operations": [{"op": "remove_step", "step_id": "c"}]}
    ledger.replan("user_request", "c is not needed", patch=removal)
    ledger.finish("cancelled", "enough")


def test_every_declared_command_reaches_its_build_and_its_rules_through_the_registry(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Recording every command through the Ledger calls its declaration's build and the rules its declaration
    registers for the event recorded, and records an event its declaration declares rules for."""
    built: list[type[Any]] = []
    judged: list[type[Any]] = []
    for declaration in DECLARATIONS:
        monkeypatch.setattr(declaration, "build", _spy(declaration.build, built, declaration.command))
        table = RULES if declaration.planned else UNPLANNED_RULES
        for kind, rules in declaration.rules.items():
            monkeypatch.setitem(table, kind, _spy(rules, judged, kind))

    with Ledger.create(tmp_path / "run.jsonl", DRAFT, fsync="none") as ledger:
        _every_command(ledger)
    with LogReader(tmp_path / "run.jsonl") as reader:
        recorded = [type(r.data) for r in reader.records() if not r.type.startswith("log.")]

    assert set(built) == {d.command for d in DECLARATIONS} and len(built) == len(recorded)
    assert judged == recorded
    owners = {kind: d for d in DECLARATIONS for kind in d.rules}
    assert set(recorded) == set(owners)


def _spy(function: Callable[..., Any], calls: list[type[Any]], kind: type[Any]) -> Callable[..., Any]:
    def spy(*args: Any, **kwargs: Any) -> Any:
        calls.append(kind)
        return function(*args, **kwargs)

    return spy


# --------------------------------------------------------------------------- the Ledger's methods


def test_every_recording_method_is_built_from_a_declared_method() -> None:
    """The Ledger's recording methods are exactly the declared methods, one each."""
    names = [method.name for method in _methods()]
    assert sorted(names) == sorted(RECORDING_METHODS)
    assert len(set(names)) == len(names)


@pytest.mark.parametrize("name", RECORDING_METHODS)
def test_every_recording_method_has_its_declarations_signature_and_docstring(name: str) -> None:
    """Each recording method's signature is its declared method's parameters after ``self``, returning an Ack;
    its envelope options are the declared ones (``attempt``, ``started_seq`` for a command with them), with the
    command's defaults (``trace``, like ``expected_seq``, is the execution's, not a field); its own parameters
    are its command's fields; its docstring is the declared method's."""
    method = next(m for m in _methods() if m.name == name)
    function = getattr(Ledger, name)
    signature = inspect.signature(function)
    parameters = list(signature.parameters.values())
    assert parameters[0].name == "self" and signature.return_annotation == "Ack"
    assert parameters[1:] == method.parameters()

    command = method.declaration.command
    fields = {f.name: f for f in msgspec.structs.fields(command)}
    envelope = [n for n in ENVELOPE if n not in ("attempt", "started_seq") or n in fields]
    keyword = [p for p in parameters if p.kind is p.KEYWORD_ONLY]
    assert [p.name for p in keyword if p.name in ENVELOPE] == envelope
    for parameter in keyword:
        if parameter.name in ENVELOPE and parameter.name not in ("idempotency_key", "expected_seq", "trace"):
            assert parameter.default == fields[parameter.name].default, parameter.name
    assert "trace" not in fields and signature.parameters["trace"].default is None  # the execution's, as expected_seq
    own = {p.name for p in parameters[1:] if p.name not in ENVELOPE}
    assert own - set(fields) == NOT_FIELDS.get(name, set())
    assert set(fields) - own - ENVELOPE_FIELDS == FIXED.get(name, set())
    assert inspect.cleandoc(function.__doc__) == inspect.cleandoc(method.doc)
    assert function.__qualname__ == f"Ledger.{name}" and function.__module__ == "plantrail.ledger.api"


def test_a_recording_method_builds_the_command_its_declared_method_builds(
    make_ledger: Callable[..., Ledger], tmp_path: Path
) -> None:
    """Calling a Ledger method records what executing its declared method's command records."""
    from plantrail.ledger.rules import attempts

    make_ledger().close()
    with Ledger.open(tmp_path / "run.jsonl", fsync="none") as ledger:
        direct = ledger.execute(attempts.start("reproduce", idempotency_key="s1", actor="runtime"))
        again = ledger.start("reproduce", idempotency_key="s1", actor="runtime")
    assert (again.seq, again.duplicate) == (direct.seq, True)
    assert attempts.start("x", idempotency_key="k", expected_seq=3) == Start(step="x", key="k")


# --------------------------------------------------------------------------- the command line


def test_the_recording_commands_take_their_help_from_the_declarations() -> None:
    """Each recording command's help is its declaration's, its --plan-version help ends with what the declaration
    says of a superseded version, its --actor defaults to the command's, and its options' help is the
    declaration's where the option is a field."""
    every = all_commands()
    options = {
        "evidence": "--evidence",
        "reason": "--reason",
        "error": "--error",
        "outcome": "--outcome",
        "why": "--why",
        "plan": "--plan",
        "patch": "--patch",
        "causes": "--caused-by",
        "observations": "--observation",
        "dirty": "--dirty",
        "lease_s": "--lease",
        "question": "--question",
        "steps": "--steps",
        "writes": "--writes",
        "tools": "--tool",
        "by": "--by",
        "target": "--target",
        "before": "--before",
        "result": "--result",
        "artifacts": "--artifact",
        "report": "--report",
        "strict": "--strict",
    }
    seen = set()
    for declaration in DECLARATIONS:
        for name, text in declaration.cli.items():
            seen.add(name)
            command = every[name]
            assert command.help == text.text, name
            flags = {opt: p for p in command.params for opt in p.opts}
            assert flags["--actor"].default == declaration.defaults()["actor"], name
            if "--plan-version" in flags:
                assert flags["--plan-version"].help.endswith(declaration.superseded), name  # type: ignore[attr-defined]
            for field, flag in options.items():
                if field in declaration.fields and flag in flags and declaration.fields[field].help:
                    assert flags[flag].help == declaration.fields[field].help, (name, flag)  # type: ignore[attr-defined]
    assert seen == {
        "create",
        "start",
        "complete",
        "block",
        "fail",
        "criterion",
        "finish",
        "replan",
        "extend",
        "heartbeat",
        "abandon",
        "adopt",
        "observe",
        "request-approval",
        "approve",
        "deny",
        "effect",
    }


# --------------------------------------------------------------------------- the MCP tools

if os.environ.get("CI") != "true":
    pytest.importorskip("mcp")


def _listed_tools(folder: Path) -> dict[str, Any]:
    import anyio
    from mcp import Client

    from plantrail.cli.mcp_server import build_server

    async def main() -> dict[str, Any]:
        async with Client(build_server(folder)) as client:
            return {t.name: t for t in (await client.list_tools()).tools}

    return anyio.run(main)


def test_every_mcp_tool_states_what_its_declarations_refuse(tmp_path: Path) -> None:
    """Each tool's schema is generated from the declarations it records: required what the method gives no default
    (and what creation needs), the Literal's values as an enum, the field's limits, nothing else taken."""
    from typing import get_args

    from plantrail.ledger.vocabulary.durations import MAX_SECONDS
    from plantrail.ledger.vocabulary.events import OUTCOMES, ReasonCode

    tools = {name: tool.input_schema for name, tool in _listed_tools(tmp_path).items()}
    required = {name: schema.get("required", []) for name, schema in tools.items()}
    assert required == {
        "plan_set": ["goal", "criteria", "steps"],
        "plan_extend": [],
        "step_start": ["step"],
        "step_update": ["step", "action"],
        "approval_request": ["request", "question", "steps"],
        "approval_wait": ["request"],
        "step_effect": ["step", "key", "phase"],
        "criterion_verdict": ["criterion", "passed", "evidence"],
        "run_finish": ["outcome", "reason"],
        "step_adopt": ["orphan_seq"],
        "plan_status": [],
        "plan_why": [],
        "run_resume": [],
        "plan_brief": [],
    }
    assert all(schema["additionalProperties"] is False for schema in tools.values())
    assert all("run" in schema["properties"] for schema in tools.values())
    assert tools["run_finish"]["properties"]["outcome"]["enum"] == list(OUTCOMES)
    assert tools["plan_set"]["properties"]["reason"]["enum"] == list(get_args(ReasonCode))
    update = tools["step_update"]["properties"]
    assert update["action"]["enum"] == ["complete", "fail", "block", "heartbeat", "abandon"]
    assert update["lease_s"] == {"type": "number", "exclusiveMinimum": 0, "maximum": MAX_SECONDS}
    assert update["plan_version"]["minimum"] == update["attempt"]["minimum"] == update["started_seq"]["minimum"] == 1
    assert update["expected_seq"]["minimum"] == 0
    assert tools["plan_set"]["properties"]["causes"]["items"] == {"type": "integer", "minimum": 0}
    step = tools["plan_set"]["properties"]["steps"]["items"]
    assert step["required"] == ["id", "title", "completion_evidence"]
    assert tools["plan_set"]["properties"]["criteria"]["items"]["required"] == ["id", "description"]
    assert tools["approval_wait"]["properties"]["timeout_s"] == {
        "type": "number",
        "minimum": 0,
        "maximum": 300.0,
        "default": 30.0,
    }


def test_a_tool_that_records_one_command_has_its_declarations_description(tmp_path: Path) -> None:
    """step_start, plan_extend, approval_request, criterion_verdict, run_finish and step_adopt are described by
    the declaration of the command they record."""
    from plantrail.ledger.rules.commands import declarations

    described = {name: text for d in declarations() for name, text in d.tools.items()}
    listed = _listed_tools(tmp_path)
    assert set(described) == {
        "step_start",
        "plan_extend",
        "approval_request",
        "criterion_verdict",
        "run_finish",
        "step_adopt",
    }
    for name, text in described.items():
        assert listed[name].description == text, name
