"""The plan server's tool inputs: each parameter's JSON Schema and its type check, generated from the command
declarations the library validates with (the field's JSON type, else the method's; its limits; its enum) and
from the agent's draft (:mod:`plantrail.ledger.vocabulary.agent_draft`).

A schema states what the library refuses: a parameter without a default is required, a ``Literal`` lists its
values, a :class:`~plantrail.ledger.rules.commands.Field`'s limits become ``minimum``, ``exclusiveMinimum`` and
``maximum`` (on the items of a list). Schemas are kept small (no titles, an optional parameter is not said to
take null), because every tool's definition is read by the model on every turn. The check refuses a wrong type
with INVALID_ARGUMENT, never coerces it; an argument the tool does not take is refused the same way.
"""

from __future__ import annotations

import inspect
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any, NamedTuple

from plantrail.ledger.vocabulary.arguments import Check, checker, refuse

if TYPE_CHECKING:
    from plantrail.ledger.rules.commands import Method

__all__ = ["Param", "check_given", "compact", "declared", "input_schema", "plain", "unknown_argument"]


class Param(NamedTuple):
    """One parameter of a tool: its name, its JSON Schema, its type check, and whether it is required."""

    name: str
    schema: dict[str, Any]
    check: Check
    required: bool = False


def declared(
    method: Method[Any, Any],
    name: str,
    *,
    as_name: str | None = None,
    kind: Any = None,
    required: bool | None = None,
    description: str | None = None,
) -> Param:
    """The parameter ``name`` of a declared method: the declaration's JSON type for the field (``kind`` when the
    tool narrows it), else the method's; required when the method gives it no default (``required`` says
    otherwise for a tool that records several commands, not all of which take it); with the field's limits."""
    given = kind or method.declaration.field(name).json or method.types()[name]
    if required is None:
        required = next(p.default for p in method.parameters() if p.name == name) is inspect.Parameter.empty
    field = method.declaration.field(name)
    schema = _limited(_schema_of(given), field.minimum, field.maximum, field.open_minimum)
    if description:
        schema["description"] = description
    return Param(as_name or name, schema, checker(given if required else given | None), required)


def plain(
    name: str,
    kind: Any,
    *,
    schema: Mapping[str, Any] | None = None,
    required: bool = False,
    description: str | None = None,
    **limits: Any,
) -> Param:
    """A parameter no declaration holds (a tool's own choice, or the agent's draft): ``schema`` when given, else
    the schema of ``kind``, with ``limits`` (``minimum``, ``maximum``, ``default``…) added."""
    made = dict(schema) if schema is not None else _schema_of(kind)
    made |= limits
    if description:
        made["description"] = description
    return Param(name, made, checker(kind if required else kind | None), required)


def input_schema(params: Iterable[Param]) -> dict[str, Any]:
    """A tool's input schema: an object of ``params``, the required ones listed, nothing else taken."""
    listed = list(params)
    schema: dict[str, Any] = {"type": "object", "properties": {p.name: p.schema for p in listed}}
    required = [p.name for p in listed if p.required]
    if required:
        schema["required"] = required
    schema["additionalProperties"] = False
    return schema


def check_given(params: Iterable[Param], arguments: Mapping[str, Any], *, where: str) -> None:
    """Refuse an argument the tool does not take, a required one missing, or one of the wrong type
    (INVALID_ARGUMENT naming it)."""
    from plantrail.ledger.vocabulary.errors import error

    known = {p.name: p for p in params}
    for name in arguments:
        if name not in known:
            raise unknown_argument(name, where, list(known))
    for param in known.values():
        if param.name not in arguments:
            if param.required:
                expected = param.check.expected
                raise error("INVALID_ARGUMENT", f"{where} needs {param.name}", parameter=param.name, expected=expected)
            continue
        value = arguments[param.name]
        if not param.check.test(value):
            raise refuse(param.name, value, param.check.expected, where=where)


def unknown_argument(name: str, where: str, takes: list[str]) -> Exception:
    """INVALID_ARGUMENT for an argument ``name`` that ``where`` does not take (it takes ``takes``)."""
    from plantrail.ledger.vocabulary.errors import error

    return error(
        "INVALID_ARGUMENT",
        f"{where} takes no argument {name} (it takes {', '.join(takes)})",
        parameter=name,
        takes=takes,
    )


def compact(schema: Any) -> Any:
    """``schema`` without titles, with an optional member's ``anyOf [X, null]`` as ``X`` and a null default
    left out: what a model needs, in fewer characters."""
    if isinstance(schema, list):
        return [compact(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    made = {k: compact(v) for k, v in schema.items() if k != "title" and not (k == "default" and v is None)}
    options = made.get("anyOf")
    if isinstance(options, list):
        kept = [o for o in options if o != {"type": "null"}]
        if len(kept) == 1:
            made.pop("anyOf")
            made = {**kept[0], **made}
        else:
            made["anyOf"] = kept
    return made


def _schema_of(kind: Any) -> dict[str, Any]:
    from pydantic import TypeAdapter

    made = compact(TypeAdapter(kind).json_schema())
    assert isinstance(made, dict)
    return made


def _limited(
    schema: dict[str, Any], minimum: float | None, maximum: float | None, open_minimum: bool
) -> dict[str, Any]:
    """``schema`` with a field's limits: on its items when it is a list."""
    if minimum is None and maximum is None:
        return schema
    if schema.get("type") == "array" and isinstance(schema.get("items"), dict):
        return {**schema, "items": _limited(dict(schema["items"]), minimum, maximum, open_minimum)}
    if "anyOf" in schema:
        return {**schema, "anyOf": [_limited(dict(o), minimum, maximum, open_minimum) for o in schema["anyOf"]]}
    if schema.get("type") not in ("integer", "number"):
        return schema
    made = dict(schema)
    if minimum is not None:
        made["exclusiveMinimum" if open_minimum else "minimum"] = _number(minimum)
    if maximum is not None:
        made["maximum"] = _number(maximum)
    return made


def _number(value: float) -> float | int:
    return int(value) if float(value).is_integer() else value
