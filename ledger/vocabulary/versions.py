"""What each log format version holds, and the JSON view of a value that leaves out what v1 never had.

Format v2 adds the executable plan contract (step priorities, typed checks, evidence records ...) as *added
fields*: each class that gained fields names them in its ``ADDED`` class attribute, each with a default that
means "not used". A v1 field that gained the value None in v2 (a step's ``max_attempts``: no limit) is named
in ``V2_NONE``: a value holding None there is a v2 value. A value whose added fields are all at their defaults
(and that holds no such None) is a v1 value: it is written with the bytes v1 gave it (the added fields are
omitted), and its line is a ``"v":1`` line. A line is v2 only when it holds something v1 cannot express. So:

- every v1 log reads as v2 models: a missing added field takes its default (the upcaster from v1 to v2 is
  exactly "fill in the defaults"), and re-encodes to the bytes it was read from;
- a v2 writer appending to a v1 log writes v1 lines until an event uses a v2 feature (docs/format-v2.md);
- the canonical state leaves out the added fields at their defaults too (:mod:`projections.canonical`), so a
  v1 log keeps the state hash it had.

Pure and small: no I/O, nothing imported from the rest of plantrail.
"""

from __future__ import annotations

import dataclasses
import itertools
import typing
from collections.abc import Callable
from typing import Any, Final

__all__ = ["V1", "V2", "added_defaults", "needs_v2", "never_v2", "plain", "v2_checker"]

#: The first format: the plan (goal, criteria, steps with id, title, depends_on, evidence, attempts).
V1: Final = 1
#: The executable plan contract, and what came with it (docs/format-v2.md).
V2: Final = 2

_NOTHING: Final = object()
_ADDED: dict[type[Any], tuple[tuple[str, Any], ...]] = {}
_FIELDS: dict[type[Any], tuple[str, ...]] = {}


def _default_of(cls: type[Any], name: str) -> Any:
    if dataclasses.is_dataclass(cls):
        for f in dataclasses.fields(cls):
            if f.name == name:
                if f.default is not dataclasses.MISSING:
                    return f.default
                if f.default_factory is not dataclasses.MISSING:
                    return f.default_factory()
        raise TypeError(f"{cls.__name__}.{name} is added in v2 but has no default")
    fields = cls.__struct_fields__
    defaults = cls.__struct_defaults__
    index = fields.index(name) - (len(fields) - len(defaults))
    if index < 0:
        raise TypeError(f"{cls.__name__}.{name} is added in v2 but has no default")
    value = defaults[index]
    import msgspec  # loaded by then: the class is a msgspec struct

    return value.factory() if isinstance(value, msgspec._core.Factory) else value


def _is_struct(cls: Any) -> bool:
    """Whether ``cls`` is a msgspec struct class (asked without importing msgspec: status never needs it)."""
    return isinstance(cls, type) and hasattr(cls, "__struct_fields__")


def added_defaults(cls: type[Any]) -> tuple[tuple[str, Any], ...]:
    """The fields ``cls`` gained after v1, each with its default (empty for a class v2 did not change)."""
    known = _ADDED.get(cls)
    if known is None:
        names = sorted(getattr(cls, "ADDED", ()))
        known = _ADDED[cls] = tuple((name, _default_of(cls, name)) for name in names)
    return known


def _field_names(cls: type[Any]) -> tuple[str, ...]:
    known = _FIELDS.get(cls)
    if known is None:
        if dataclasses.is_dataclass(cls):
            known = tuple(f.name for f in dataclasses.fields(cls))
        else:
            known = tuple(cls.__struct_fields__)
        _FIELDS[cls] = known
    return known


def plain(value: Any) -> dict[str, Any]:
    """A dataclass or msgspec struct as a dict in field order, without its added fields at their defaults.

    orjson's ``default`` (with ``OPT_PASSTHROUGH_DATACLASS``) for the writer, the re-encoding check and the
    canonical state alike, so all three agree on the bytes. It runs for every struct and dataclass every
    line holds, so each class gets its own function, generated once from its fields (:func:`_make_plain`)
    after a loop over them has served its first :data:`COMPILE_AFTER` values (:func:`_looping_plain`).
    """
    to_dict = _PLAIN.get(type(value))
    if to_dict is None:
        to_dict = _PLAIN[type(value)] = _looping_plain(type(value))
    return to_dict(value)


_PLAIN: dict[type[Any], Callable[[Any], dict[str, Any]]] = {}

#: How many values of one class :func:`plain` reads with a loop over its fields before it generates the class's
#: straight-line function: a process that writes a few records (an append, a hook call) compiles none (~0.1 ms
#: a class), and a replay pays the loop for 32 values of each class it meets.
COMPILE_AFTER: Final = 32


def _looping_plain(cls: type[Any]) -> Callable[[Any], dict[str, Any]]:
    """The :func:`plain` of one class for its first :data:`COMPILE_AFTER` values: the generated function's dict
    (the fields in order, an added field only when it is not equal to its default) from a loop over the names;
    the value that reaches the count puts the generated function in its place."""
    if not (dataclasses.is_dataclass(cls) or _is_struct(cls)):
        raise TypeError(f"Type is not JSON serializable: {cls.__name__}")
    names = _field_names(cls)
    added = dict(added_defaults(cls))
    left = [COMPILE_AFTER]

    def plain_loop(value: Any) -> dict[str, Any]:
        left[0] -= 1
        if left[0] <= 0 and _PLAIN.get(cls) is plain_loop:  # (threads may count past 0 together)
            _make_plain(cls)
        body: dict[str, Any] = {}
        for name in names:
            x = getattr(value, name)
            if name not in added or not (x == added[name]):  # noqa: SIM201 - as the generated code tests it
                body[name] = x
        return body

    return plain_loop


def _make_plain(cls: type[Any]) -> Callable[[Any], dict[str, Any]]:
    """The :func:`plain` of one class, generated as straight-line code: its fields in order, each added field
    only when it is not equal to its default (a loop over the field names costs three times as much)."""
    if not (dataclasses.is_dataclass(cls) or _is_struct(cls)):
        raise TypeError(f"Type is not JSON serializable: {cls.__name__}")
    added = {name: index for index, (name, _) in enumerate(added_defaults(cls))}
    names = _field_names(cls)
    lead = [name for name in itertools.takewhile(lambda name: name not in added, names)]
    body = ["def plain(v):", f"    b = {{{', '.join(f'{name!r}: v.{name}' for name in lead)}}}"]
    for name in names[len(lead) :]:
        if name in added:
            body += [f"    x = v.{name}", f"    if not (x == _d{added[name]}):", f"        b[{name!r}] = x"]
        else:
            body.append(f"    b[{name!r}] = v.{name}")
    body.append("    return b")
    namespace: dict[str, Any] = {f"_d{i}": default for i, (_, default) in enumerate(added_defaults(cls))}
    exec("\n".join(body), namespace)
    made = _PLAIN[cls] = typing.cast(Callable[[Any], dict[str, Any]], namespace["plain"])
    return made


def needs_v2(value: Any) -> bool:
    """Whether ``value`` (an event, or anything inside one) holds an added field away from its default."""
    checker = _CHECKERS.get(type(value))
    if checker is None:
        checker = _CHECKERS[type(value)] = _make_checker(type(value))
    return checker(value)


_CHECKERS: dict[type[Any], Callable[[Any], bool]] = {}


def v2_checker(cls: type[Any]) -> Callable[[Any], bool]:
    """:func:`needs_v2` for values of exactly class ``cls``, without the lookup (for a hot loop)."""
    checker = _CHECKERS.get(cls)
    if checker is None:
        checker = _CHECKERS[cls] = _make_checker(cls)
    return checker


def _never(value: Any) -> bool:
    return False


#: The checker of a class that cannot hold anything format v2 added (what :func:`v2_checker` gives for one): a
#: caller generating code may leave the call out.
never_v2: Final[Callable[[Any], bool]] = _never


def _any_item(value: tuple[Any, ...]) -> bool:
    for item in value:
        checker = _CHECKERS.get(type(item))
        if checker is None:
            checker = _CHECKERS[type(item)] = _make_checker(type(item))
        if checker(item):
            return True
    return False


def _make_checker(cls: type[Any]) -> Callable[[Any], bool]:
    """A checker for one class, generated as one boolean expression (every replayed plan event is checked:
    a closure looping over field names costs three times as much)."""
    if isinstance(cls, type) and issubclass(cls, tuple) and not hasattr(cls, "_fields"):
        return _any_item
    if not (dataclasses.is_dataclass(cls) or _is_struct(cls)):
        return _never
    added = added_defaults(cls)
    hints = typing.get_type_hints(cls)
    nested = [name for name in _field_names(cls) if _may_hold_object(hints[name])]
    terms = [f"v.{name} != _d{i}" for i, (name, _) in enumerate(added)]
    terms += [f"v.{name} is None" for name in sorted(getattr(cls, "V2_NONE", ()))]
    terms += [f"(v.{name} and _needs(v.{name}))" for name in nested]
    if not terms:
        return _never
    namespace: dict[str, Any] = {f"_d{i}": default for i, (_, default) in enumerate(added)} | {"_needs": needs_v2}
    exec(f"def check(v):\n    return bool({' or '.join(terms)})", namespace)
    return typing.cast(Callable[[Any], bool], namespace["check"])


def _may_hold_object(tp: Any) -> bool:
    """Whether a field of type ``tp`` can hold a dataclass or a struct (anything with fields of its own)."""
    if dataclasses.is_dataclass(tp) or _is_struct(tp):
        return True
    return any(_may_hold_object(arg) for arg in typing.get_args(tp))
