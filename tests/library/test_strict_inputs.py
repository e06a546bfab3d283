"""Wrong types thrown at every public entry point: each is refused INVALID_ARGUMENT naming the parameter, before
anything is written; nothing is coerced, and nothing else escapes but plantrail's own errors.

Which values are of a wrong type is judged by pydantic's strict mode over the same annotations (a text is also
no collection of texts): an implementation independent of the one under test. The table of calls lists every
public method of ``Ledger`` and every public function of ``plantrail``: a new one fails
:func:`test_every_public_entry_point_is_in_the_table` until it is added here.
"""

from __future__ import annotations

import collections.abc
import copy
import inspect
import os
import typing
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import ConfigDict, TypeAdapter, ValidationError

import plantrail
from plantrail import Ledger
from plantrail.ledger.rules.decide import Start
from plantrail.ledger.signing import Signer
from plantrail.ledger.vocabulary.arguments import hints_of
from plantrail.ledger.vocabulary.errors import PlantrailError
from plantrail.ledger.vocabulary.plan import StepSpec
from tests.conftest import LOGIN_DRAFT

#: Values of many types, some of them what a careless caller passes (a text for a flag, a number for a text).
WRONG = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-3, max_value=3),
    st.floats(allow_nan=False, min_value=-3, max_value=3),
    st.sampled_from(["", "false", "0", "reproduce", "agent", "always", "new_constraint", "complete", "x" * 5]),
    st.binary(max_size=4),
    st.lists(st.sampled_from(["a", "reproduce", 1, None]), max_size=2),
    st.tuples(st.integers(0, 3), st.sampled_from(["h", "0" * 64])),
    st.dictionaries(st.sampled_from(["goal", "a", "steps"]), st.sampled_from([1, "x", None]), max_size=2),
    st.just(object()),
    st.just(Path("run.jsonl")),
    st.just(Start(step="reproduce")),
)

_STRICT = ConfigDict(strict=True, arbitrary_types_allowed=True)
_COLLECTIONS = (collections.abc.Sequence, collections.abc.Iterable, list, tuple)


def wrong_for(annotation: Any, value: Any) -> bool:
    """Whether ``value`` is of a wrong type for ``annotation``, by pydantic's strict mode (and no text is a
    collection of texts)."""
    if isinstance(value, str | bytes) and _collection_only(annotation):
        return True
    try:
        TypeAdapter(annotation, config=_STRICT).validate_python(value)
    except ValidationError:
        return True
    except Exception:  # an annotation pydantic cannot judge: not used as a wrong value
        return False
    return False


def _collection_only(annotation: Any) -> bool:
    parts = typing.get_args(annotation) if typing.get_origin(annotation) in (typing.Union, type(int | str)) else ()
    if parts:
        return all(_collection_only(part) or part is type(None) for part in parts) and any(
            _collection_only(part) for part in parts
        )
    return typing.get_origin(annotation) in _COLLECTIONS


@pytest.fixture
def log(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A run with a plan whose first step is started (so every command has something to act on), in a working
    folder of the test's own: a drawn text is a right type for a path, and a log it names is made there."""
    monkeypatch.chdir(tmp_path)
    path = str(tmp_path / "run.jsonl")
    with Ledger.create(path, copy.deepcopy(LOGIN_DRAFT), fsync="none") as ledger:
        ledger.start("reproduce")
    yield path


#: Every public method of Ledger: a call that its types accept (``None``: the method takes no argument worth
#: throwing at), made on an open ledger.
METHODS: dict[str, dict[str, Any] | None] = {
    "start": {"step": "diagnose"},
    "complete": {"step": "reproduce", "evidence": ["it fails"]},
    "block": {"step": "reproduce", "reason": "no access"},
    "fail": {"step": "reproduce", "error": "exit 1"},
    "verify_criterion": {"criterion": "login-test-passes", "passed": True, "evidence": "green"},
    "finish": {"outcome": "paused", "reason": "lunch"},
    "replan": {"reason": "new_constraint", "why": "logs", "plan": copy.deepcopy(LOGIN_DRAFT)},
    "extend": {"steps": [StepSpec("more", "more", (), "x")]},
    "heartbeat": {"step": "reproduce", "lease_s": 30.0},
    "abandon": {"step": "reproduce", "reason": "worker gone"},
    "adopt": {"orphan_seq": 3},
    "observe": {"name": "repo", "version": "abc"},
    "request_approval": {"request": "r1", "question": "may I?", "steps": ["reproduce"]},
    "approve": {"request": "r1", "by": "ann", "why": "fine"},
    "deny": {"request": "r1", "by": "ann", "why": "no"},
    "request_effect": {"step": "reproduce", "effect": "e1", "target": "prod"},
    "commit_effect": {"step": "reproduce", "effect": "e1", "result": "done"},
    "execute": {"command": Start(step="diagnose")},
    "execute_many": {"commands": [Start(step="diagnose")]},
    "checkpoint": {"key": b"k" * 16},
    "sign_checkpoint": {"signer": Signer("k", bytes(4), Ed25519PrivateKey.generate())},
    "sign_on": {"signer": Signer("k", bytes(4), Ed25519PrivateKey.generate()), "every": 3},
    "recorded": {"keys": ["k"]},
    "acknowledgement": {},
    "refresh": None,
    "sync": None,
    "close": None,
}
#: The class methods that open a ledger, with a call their types accept (``path`` filled in by the test).
OPENERS: dict[str, dict[str, Any]] = {
    "create": {"plan": copy.deepcopy(LOGIN_DRAFT)},
    "open": {},
    "fork": {"at_seq": 1, "reason": "try"},
    "set_plan": {
        "steps": [{"id": "one", "title": "one", "completion_evidence": "x"}],
        "goal": "g",
        "criteria": [{"id": "c", "description": "works"}],
    },
}
#: The public functions of ``plantrail``, each with a call its types accept (``path``: the log).
FUNCTIONS: dict[str, dict[str, Any] | None] = {
    "open_run": {"name": "path"},
    "as_run": {"target": "path"},
    "open_store": {"location": "folder"},
    "default_run_id": {"path": "path"},
    "verify_log": {"path": "path"},
    "repair": {"path": "path"},
    "parse_draft": {"raw": copy.deepcopy(LOGIN_DRAFT)},
    "parse_patch": {"raw": {"base_version": 1, "ops": []}},
    "decide": {"state": "initial", "command": Start(step="diagnose")},
    "check": {"state": "initial", "data": "started", "plan_version": 1},
    "traced": {"traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"},
}


def test_every_public_entry_point_is_in_the_table() -> None:
    """Each public method of Ledger and each public function of plantrail is one the test throws at."""
    methods = {n for n, v in vars(Ledger).items() if not n.startswith("_") and callable(getattr(Ledger, n))}
    methods |= {n for n in dir(Ledger) if not n.startswith("_") and inspect.isfunction(getattr(Ledger, n))}
    methods -= set(OPENERS)
    assert methods == set(METHODS)
    functions = {n for n in plantrail.__all__ if inspect.isfunction(getattr(plantrail, n))}
    assert functions == set(FUNCTIONS)


def _parameters(function: Callable[..., Any]) -> list[tuple[str, Any]]:
    hints = hints_of(function)
    skip = {"self", "cls", "return"}
    return [
        (name, hints[name]) for name in inspect.signature(function).parameters if name in hints and name not in skip
    ]


CASES = [
    (name, parameter)
    for name, call in METHODS.items()
    if call is not None
    for parameter, _ in _parameters(getattr(Ledger, name))
]
CASES += [(name, parameter) for name in OPENERS for parameter, _ in _parameters(getattr(Ledger, name))]


@pytest.mark.parametrize(("method", "parameter"), CASES, ids=[f"{m}-{p}" for m, p in CASES])
@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(value=WRONG)
def test_a_wrong_type_for_any_parameter_of_a_ledger_method_is_refused(
    log: str, tmp_path: Path, method: str, parameter: str, value: Any
) -> None:
    """Given a value of a wrong type for one parameter (the others right), a ledger method refuses it with
    INVALID_ARGUMENT naming that parameter, and the log keeps its bytes; given one of a right type, it answers or
    refuses with one of plantrail's errors, never another exception."""
    hint = dict(_parameters(getattr(Ledger, method)))[parameter]
    before = Path(log).read_bytes()
    if method in OPENERS:
        arguments = {"path": log if method == "open" else str(tmp_path / "new.jsonl"), **OPENERS[method]}
        if method == "fork":
            arguments["parent"], arguments["path"] = log, str(tmp_path / "fork.jsonl")
        arguments[parameter] = value
        call: Callable[[], Any] = lambda: getattr(Ledger, method)(**_for(Ledger, method, arguments))  # noqa: E731
    else:
        arguments = {**(METHODS[method] or {}), parameter: value}
        ledger = Ledger.open(log)

        def call() -> Any:
            try:
                return getattr(ledger, method)(**arguments)
            finally:
                ledger.close()

    try:
        opened = call()
    except PlantrailError as exc:
        if wrong_for(hint, value):
            assert (exc.code, exc.fields.get("parameter")) == ("INVALID_ARGUMENT", parameter), exc
            assert Path(log).read_bytes() == before
        return
    assert not wrong_for(hint, value), f"{method}({parameter}={value!r}) was taken"
    if isinstance(opened, Ledger):
        opened.close()
    for leftover in ("new.jsonl", "fork.jsonl"):
        for path in tmp_path.glob(f"{leftover}*"):
            if path.is_dir():
                import shutil

                shutil.rmtree(path)
            else:
                path.unlink()


def _for(owner: Any, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """``arguments`` limited to the parameters the callable takes (a table entry may name one it lacks)."""
    taken = inspect.signature(getattr(owner, name)).parameters
    return {k: v for k, v in arguments.items() if k in taken}


FUNCTION_CASES = [
    (name, parameter)
    for name, call in FUNCTIONS.items()
    if call is not None
    for parameter, _ in _parameters(getattr(plantrail, name))
]


@pytest.mark.parametrize(("function", "parameter"), FUNCTION_CASES, ids=[f"{f}-{p}" for f, p in FUNCTION_CASES])
@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(value=WRONG)
def test_a_wrong_type_for_any_parameter_of_a_public_function_is_refused(
    log: str, tmp_path: Path, function: str, parameter: str, value: Any
) -> None:
    """The same for the public functions of plantrail."""
    target = getattr(plantrail, function)
    hint = dict(_parameters(target))[parameter]
    from plantrail.ledger.vocabulary.events import StepStarted
    from plantrail.projections.state import initial

    places = {"path": log, "folder": str(tmp_path), "initial": initial(), "started": StepStarted(step="a", attempt=1)}
    arguments = {k: places.get(v, v) if isinstance(v, str) else v for k, v in (FUNCTIONS[function] or {}).items()}
    arguments[parameter] = value
    before = Path(log).read_bytes()
    try:
        target(**arguments)
    except PlantrailError as exc:
        if wrong_for(hint, value):
            assert (exc.code, exc.fields.get("parameter")) == ("INVALID_ARGUMENT", parameter), exc
        assert Path(log).read_bytes() == before or function == "repair"
        return
    assert not wrong_for(hint, value), f"{function}({parameter}={value!r}) was taken"


def test_a_closed_ledger_and_one_made_from_a_path_say_so(log: str) -> None:
    """Recording on a closed ledger, or on one made with Ledger(path), is LEDGER_NOT_OPEN; closing twice is
    fine; the ledger's location is known after close."""
    ledger = Ledger.open(log)
    ledger.close()
    ledger.close()
    for action in (lambda: ledger.start("diagnose"), ledger.refresh, ledger.sync):
        with pytest.raises(PlantrailError) as caught:
            action()
        assert caught.value.code == "LEDGER_NOT_OPEN"
    assert ledger.location == log
    with pytest.raises(PlantrailError) as caught:
        Ledger(log)  # type: ignore[arg-type]
    assert caught.value.code == "LEDGER_NOT_OPEN" and "Ledger.open" in caught.value.message


def test_a_flag_given_as_text_is_never_taken_for_its_truth(log: str) -> None:
    """verify_criterion(…, "false", …) used to record the criterion as passed: it is refused, and nothing is
    written."""
    before = Path(log).read_bytes()
    with Ledger.open(log) as ledger, pytest.raises(PlantrailError) as caught:
        ledger.verify_criterion("login-test-passes", "false", "p99 +9 ms")  # type: ignore[arg-type]
    assert (caught.value.code, caught.value.fields["parameter"]) == ("INVALID_ARGUMENT", "passed")
    assert Path(log).read_bytes() == before


def test_the_first_thing_wrong_is_what_is_said(log: str, tmp_path: Path) -> None:
    """A replan with a bad reason code names the reason, not the plan; creating over an existing log says
    LOG_EXISTS, not what is wrong with the draft."""
    with Ledger.open(log) as ledger, pytest.raises(PlantrailError) as caught:
        ledger.replan("because", "why", plan={"steps": []})  # type: ignore[arg-type]
    assert (caught.value.code, caught.value.fields["parameter"]) == ("INVALID_ARGUMENT", "reason")
    before = (Path(log).read_bytes(), sorted(os.listdir(tmp_path)))
    with pytest.raises(PlantrailError) as caught:
        Ledger.create(log, {})
    assert caught.value.code == "LOG_EXISTS"
    assert (Path(log).read_bytes(), sorted(os.listdir(tmp_path))) == before
