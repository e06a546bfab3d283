"""Arguments checked against their annotations at run time: a wrong type is refused, never coerced.

A library entry point's annotations say what it takes; :func:`checker` turns one annotation into a test and
a description, and :func:`check_arguments` refuses the first argument that fails its test with
``INVALID_ARGUMENT`` naming the parameter, what it takes and what it got. Nothing is taken by truthiness: a
``bool`` parameter takes ``True`` or ``False`` (not ``"false"``, not ``0``), an ``int`` takes no ``bool``, a
sequence of texts takes no text (``"abc"`` is no list of three one-letter texts), a mapping's keys are texts.

The tests are built once per annotation and are a few type comparisons each, so checking every call costs
next to nothing beside what the call does.
"""

from __future__ import annotations

import collections.abc
import functools
import inspect
import os
import types
import typing
from collections.abc import Callable, Mapping
from functools import cache
from typing import Any, Final, NamedTuple, TypeVar

from plantrail.ledger.vocabulary.errors import error

F = TypeVar("F", bound=Callable[..., Any])

__all__ = ["Check", "check_arguments", "checker", "described", "hints_of", "refuse", "strict"]

_TEXTS: Final = (str, bytes, bytearray)


class Check(NamedTuple):
    """What one annotation takes: a test of a value, and what it takes said for a person."""

    test: Callable[[Any], bool]
    expected: str


def described(value: Any) -> str:
    """What a value is, for an error message: its type and a short repr."""
    shown = repr(value)
    return f"{type(value).__name__} {shown if len(shown) <= 60 else shown[:57] + '...'}"


def refuse(parameter: str, value: Any, expected: str, *, where: str = "") -> Exception:
    """INVALID_ARGUMENT for ``parameter`` (of ``where``), which takes ``expected`` and got ``value``."""
    of = f" of {where}" if where else ""
    return error(
        "INVALID_ARGUMENT",
        f"argument {parameter}{of} takes {expected}, not {described(value)}",
        parameter=parameter,
        expected=expected,
        actual=type(value).__name__,
    )


def check_arguments(checks: Mapping[str, Check], arguments: Mapping[str, Any], *, where: str = "") -> None:
    """Refuse the first argument whose check fails (INVALID_ARGUMENT)."""
    for name, value in arguments.items():
        check = checks.get(name)
        if check is not None and not check.test(value):
            raise refuse(name, value, check.expected, where=where)


def hints_of(function: Callable[..., Any]) -> dict[str, Any]:
    """``function``'s annotations evaluated (``typing.get_type_hints``); one that names what only a type checker
    imports is taken as ``Any``."""
    try:
        return typing.get_type_hints(function, include_extras=True)
    except NameError:
        pass
    found: dict[str, Any] = {}
    namespace = getattr(function, "__globals__", {})
    for name, annotation in getattr(function, "__annotations__", {}).items():
        try:
            found[name] = eval(annotation, namespace) if isinstance(annotation, str) else annotation
        except NameError:
            found[name] = Any
    return found


def strict(function: F) -> F:
    """``function`` refusing an argument of another type than its annotation says (INVALID_ARGUMENT), checked
    before it runs. A call Python itself cannot bind (a missing or misspelt argument) is left to Python's own
    TypeError. The checks are built on the first call (importing a module pays nothing for them)."""
    where = function.__qualname__
    made: list[tuple[inspect.Signature, dict[str, Check]]] = []

    @functools.wraps(function)
    def checked(*args: Any, **kwargs: Any) -> Any:
        if not made:
            signature = inspect.signature(function)
            variadic = {p.name for p in signature.parameters.values() if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD)}
            hints = hints_of(function)
            made.append((signature, {n: checker(h) for n, h in hints.items() if n not in variadic | {"return"}}))
        signature, checks = made[0]
        try:
            bound = signature.bind(*args, **kwargs)
        except TypeError:
            return function(*args, **kwargs)
        check_arguments(checks, bound.arguments, where=where)
        return function(*args, **kwargs)

    return typing.cast(F, checked)


@cache
def checker(annotation: Any) -> Check:
    """The check of one resolved annotation (``typing.get_type_hints``): the types plantrail's entry points are
    annotated with. An annotation it does not know takes anything (``Any``)."""
    origin = typing.get_origin(annotation)
    arguments = typing.get_args(annotation)
    if annotation is Any or annotation is object:
        return Check(_anything, "anything")
    if annotation is None or annotation is type(None):
        return Check(_is_none, "None")
    if origin is typing.Annotated:
        return checker(arguments[0])
    if origin is typing.Literal:
        return _literal(arguments)
    if origin is typing.Union or origin is types.UnionType:
        return _union(arguments)
    if origin in (tuple,) and arguments:
        return _tuple(arguments)
    if origin in (collections.abc.Sequence, list, collections.abc.Iterable, collections.abc.Collection):
        return _sequence(checker(arguments[0]) if arguments else Check(_anything, "anything"), origin)
    if origin in (collections.abc.Mapping, dict):
        return _mapping(*(checker(part) for part in arguments) if arguments else ())
    if origin is collections.abc.Callable or annotation is collections.abc.Callable:
        return Check(callable, "a callable")
    if origin is os.PathLike or annotation is os.PathLike:
        return Check(lambda value: isinstance(value, os.PathLike), "a path")
    if annotation is bool:
        return Check(lambda value: value is True or value is False, "True or False")
    if annotation is int:
        return Check(
            lambda value: type(value) is int or (isinstance(value, int) and type(value) is not bool), "an integer"
        )
    if annotation is float:
        return Check(
            lambda value: isinstance(value, float | int) and not isinstance(value, bool), "a number (int or float)"
        )
    if annotation is str:
        return Check(lambda value: type(value) is str or isinstance(value, str), "a text (str)")
    if annotation is bytes:
        return Check(lambda value: isinstance(value, bytes), "bytes")
    if isinstance(annotation, type):
        return Check(lambda value: isinstance(value, annotation), f"a {annotation.__name__}")
    return Check(_anything, "anything")


def _literal(arguments: tuple[Any, ...]) -> Check:
    """One of the literal values, of its very type (``1`` is no ``True``); a set lookup, or for an unhashable value
    nothing (no literal is unhashable)."""
    allowed = frozenset((type(value), value) for value in arguments)
    shown = ", ".join(repr(value) for value in arguments)

    def literal(value: Any) -> bool:
        try:
            return (type(value), value) in allowed
        except TypeError:
            return False

    return Check(literal, f"one of {shown}" if len(arguments) > 1 else shown)


def _union(arguments: tuple[Any, ...]) -> Check:
    """Any of the parts; ``X | None`` (the common case) tests ``None`` first and then ``X`` alone."""
    parts = [checker(part) for part in arguments]
    shown = " or ".join(p.expected for p in parts)
    if len(parts) == 2 and type(None) in arguments:
        inner = parts[1 - arguments.index(type(None))].test
        return Check(lambda value: value is None or inner(value), shown)
    tests = tuple(part.test for part in parts)

    def union(value: Any) -> bool:
        return any(test(value) for test in tests)

    return Check(union, shown)


def _anything(value: Any) -> bool:
    return True


def _is_none(value: Any) -> bool:
    return value is None


def _sequence(item: Check, origin: Any) -> Check:
    """A list, tuple or other sequence (any iterable for ``Iterable``) that is no text and no mapping, each item
    checked when the value is a sequence (a generator is taken as it is: reading it would use it up). A set is no
    sequence: its order is not kept."""
    lazy = origin is collections.abc.Iterable

    def test(value: Any) -> bool:
        if type(value) is tuple or type(value) is list:  # the common value, without the abstract checks
            return all(item.test(part) for part in value)
        if isinstance(value, (*_TEXTS, Mapping)):
            return False
        if isinstance(value, collections.abc.Sequence):
            return all(item.test(part) for part in value)
        return lazy and isinstance(value, collections.abc.Iterable)

    return Check(test, f"a list of {item.expected}" if item.expected != "anything" else "a list")


def _mapping(key: Check | None = None, value: Check | None = None) -> Check:
    def test(found: Any) -> bool:
        if not isinstance(found, Mapping):
            return False
        return all((key is None or key.test(k)) and (value is None or value.test(v)) for k, v in found.items())

    shown = "a mapping" if key is None else f"a mapping of {key.expected} to {value.expected if value else 'anything'}"
    return Check(test, shown)


def _tuple(arguments: tuple[Any, ...]) -> Check:
    if len(arguments) == 2 and arguments[1] is Ellipsis:
        return _sequence(checker(arguments[0]), tuple)
    parts = tuple(checker(part) for part in arguments)

    def test(value: Any) -> bool:
        return (
            isinstance(value, tuple)
            and len(value) == len(parts)
            and all(part.test(item) for part, item in zip(parts, value, strict=True))
        )

    return Check(test, f"a pair ({', '.join(p.expected for p in parts)})" if len(parts) == 2 else "a tuple")
