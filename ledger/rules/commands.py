"""The command vocabulary: every command declared once, in the feature module that owns its rules.

A :class:`Declaration` says everything about one command (a ``msgspec.Struct`` of this layer): its fields
(the struct's, with what the front doors say about them in :attr:`Declaration.fields`: help, limits, the JSON
type an MCP tool takes), how it becomes its event and the plan version it is issued against (``build``), the
rules that judge that event (``rules``, by the event's class: ``check`` replays them over a whole log), the
error codes its refusals carry (their exit codes follow from the codes), and the texts the command line and
the MCP server show. The options every recording command shares (plan version, attempt, idempotency key,
expected seq, actor, source) are declared once, here: :class:`Envelope`, :class:`Attempted` and
:data:`ENVELOPE`.

A library method that records the command is its declaration's :class:`Method`: the *arguments function*,
whose signature is the method's own (its parameters, then ``**envelope: Unpack[Envelope]``, or
``Unpack[Attempted]`` for a command with an ``attempt``) and whose body turns the arguments into the command
(parsing what the method accepts beyond the struct's types: a report mapping, artifact strings, a draft
mapping). ``Ledger`` builds each recording method from one of these (:mod:`plantrail.ledger.api`), so its
signature, defaults and docstring are declared here once, and stay visible to a type checker::

    START = declare(Start, build=_build_start, rules={StepStarted: _start_rules}, cli=..., tools=...)

    @START.method
    def start(step: str, **envelope: Unpack[Envelope]) -> Start:
        \"""Start the next attempt of ``step`` (``plantrail start``).\"""
        return Start(step=step, **fields(envelope))

Each feature module declares its commands when it is imported; :mod:`plantrail.ledger.rules.decide` imports
every one, so that its ``decide`` finds a command's declaration by the command's class (one dict lookup) and
its ``check`` an event's rules by the event's class.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Final, Generic, ParamSpec, TypedDict, TypeVar

import msgspec

from plantrail.ledger.vocabulary.arguments import Check, checker, refuse
from plantrail.ledger.vocabulary.errors import CODES
from plantrail.ledger.vocabulary.events import Actor, Source, Trace

if TYPE_CHECKING:
    from plantrail.ledger.vocabulary.events import Event
    from plantrail.projections.model import OrphanWhy
    from plantrail.projections.state import StateView

__all__ = [
    "ENVELOPE",
    "LATE_RECORDED",
    "LATE_REFUSED",
    "REPORT",
    "RULES",
    "SIGNING",
    "UNPLANNED_RULES",
    "Attempted",
    "Declaration",
    "Envelope",
    "Field",
    "Help",
    "Issued",
    "Method",
    "Rules",
    "declaration_of",
    "declarations",
    "declare",
    "fields",
    "lookup",
    "timeless",
]

P = ParamSpec("P")
C = TypeVar("C")


class Issued(msgspec.Struct, frozen=True, kw_only=True):
    """The envelope fields of a command: who issued it, where an event taken from elsewhere came from, and its
    idempotency key (a command that declares its own fields in full, as the v2 features' do, has these three)."""

    actor: Actor = "agent"
    source: Source | None = None
    key: str | None = None


class Envelope(TypedDict, total=False):
    """The options every recording method takes besides its command's own, keyword-only and named as the
    command line names them: the plan version the worker was on, the retry-safe idempotency key (the command's
    ``key``), the seq the log must still end at, who issued the command, where an event taken from elsewhere
    came from, and the W3C trace context it was issued in (a traceparent, or a :class:`Trace`; by default the one
    :func:`plantrail.ledger.tracing.traced` set, or the current OpenTelemetry span's)."""

    plan_version: int | None
    idempotency_key: str | None
    expected_seq: int | None
    actor: Actor
    source: Source | None
    trace: Trace | str | None


class Attempted(Envelope, total=False):
    """:class:`Envelope` with the attempt the command belongs to (for a command on a step's attempt): its number,
    and, for a result, the seq of its start (which names it exactly: attempt numbers restart after a replan)."""

    attempt: int | None
    started_seq: int | None


class Field(msgspec.Struct, frozen=True, kw_only=True):
    """What the front doors say about one field of a command, or one envelope option: the command line's option
    help and metavar, its limits (inclusive; the minimum open with ``open_minimum``), and the JSON type an MCP
    tool takes it as when that is not the method's type (None: the method's)."""

    help: str = ""
    metavar: str | None = None
    minimum: float | None = None
    maximum: float | None = None
    open_minimum: bool = False
    json: Any = None


class Help(msgspec.Struct, frozen=True):
    """A command line command's help: its summary (the first paragraph, whose first sentence ``--help`` lists),
    the paragraphs after it, and its examples (each a command, continued lines and all)."""

    summary: str
    details: str = ""
    examples: tuple[str, ...] = ()

    @property
    def text(self) -> str:
        """The help as click prints it (a ``\\b`` paragraph keeps its lines)."""
        parts = [self.summary, *([self.details] if self.details else [])]
        if self.examples:
            lines = "\n".join("  " + line for example in self.examples for line in example.split("\n"))
            parts.append(f"\b\nExample:\n{lines}")
        return "\n\n".join(parts)


#: The envelope options in the order every recording method takes them (``attempt`` only for a command that has
#: one), with what the command line says about each.
ENVELOPE: Final[Mapping[str, Field]] = {
    "plan_version": Field(help="The plan version the worker was on (default: the active one).", metavar="V", minimum=1),
    "attempt": Field(
        help="The attempt this command belongs to (default: for a result, the step's one attempt awaiting a "
        "result, as with --started-seq; otherwise the step's current one).",
        metavar="N",
        minimum=1,
    ),
    "started_seq": Field(
        help="The seq of the start of the attempt this result belongs to, as the start's acknowledgement gave it: "
        "names the attempt exactly, in whichever plan version it ran. Without it (nor --plan-version) the result "
        "belongs to the step's one attempt awaiting a result; when an attempt a replan cut off and a later one "
        "both could be its own, it is kept on the orphan path as AMBIGUOUS_ATTEMPT.",
        metavar="SEQ",
        minimum=1,
    ),
    "idempotency_key": Field(
        help="Retry-safe key: the same key and content returns the original seq; other content is "
        "IDEMPOTENCY_CONFLICT.",
        metavar="KEY",
    ),
    "expected_seq": Field(
        help="Refuse (STALE_EXPECTED_SEQ) unless the log still ends at seq N.", metavar="N", minimum=0
    ),
    "actor": Field(help="Who issued the command."),
    "source": Field(),
    "trace": Field(
        help="The W3C traceparent of the trace the command was issued in (00-<trace id>-<span id>-<flags>), "
        "recorded with its event; an invalid one is refused (INVALID_TRACE_CONTEXT).",
        metavar="TRACEPARENT",
    ),
}


#: The signing policy every recording front door takes (``--sign-key``, ``--sign-every``, their environment
#: variables; :mod:`plantrail.ledger.signing`): no command's field, the writer's, as ``expected_seq`` is.
SIGNING: Final[Mapping[str, Field]] = {
    "sign_key": Field(
        help="Sign checkpoints with this private key (a .key file from keygen): after the turn that finishes "
        "the run, and with --sign-every after every N records; a bad key is refused (SIGNING_KEY_INVALID) "
        "before anything is written.",
        metavar="FILE",
    ),
    "sign_every": Field(
        help="With --sign-key, sign after every turn that leaves N or more records since the log's last signed "
        "checkpoint (default: at the finish only).",
        metavar="N",
        minimum=1,
    ),
}


#: What the ``--plan-version`` help says of a command a superseded version refuses, and of a result it records late.
LATE_REFUSED: Final = "A superseded version is refused (STALE_PLAN_VERSION) and nothing is recorded"
LATE_RECORDED: Final = (
    "A result for a superseded version is still recorded, on the orphan path: never lost, never applied."
)

#: The evidence record a result or a verdict may carry (format v2), as the command line reads it.
REPORT: Final = Field(
    help="The runtime's evidence record (JSON file, - for stdin): command, exit_code, started, truncated, "
    "changed_paths, observations (one per check), tools, usage, duration_s, meta. Format v2.",
    metavar="FILE",
)


def fields(envelope: Envelope) -> dict[str, Any]:
    """The command's fields among a method's envelope options: ``idempotency_key`` is the command's ``key``, and
    ``expected_seq`` and ``trace`` belong to the execution, not to the command."""
    given: dict[str, Any] = dict(envelope)
    given.pop("expected_seq", None)
    given.pop("trace", None)
    if "idempotency_key" in given:
        given["key"] = given.pop("idempotency_key")
    return given


#: The rules of one kind of event: (state, event, its plan version, its timestamp) -> why it is late, or None.
Rules = Callable[["StateView", Any, int, "str | None"], "OrphanWhy | None"]
#: Why an event a declaration built is recorded late (its rules let it through): (state, event, plan version).
Late = Callable[["StateView", Any, int], "OrphanWhy | None"]


def timeless(rules: Callable[[Any, Any, int], OrphanWhy | None]) -> Rules:
    """Rules that do not read the event's timestamp, as :data:`RULES` calls them."""

    def judge(state: StateView, data: Any, plan_version: int, now: str | None) -> OrphanWhy | None:
        return rules(state, data, plan_version)

    return judge


class Method(Generic[P, C]):
    """A library method that records a command: its arguments function (its signature and docstring are the
    method's; see the module) and the declaration it builds a command of. Calling it builds the command."""

    __slots__ = ("arguments", "declaration", "name")

    def __init__(self, declaration: Declaration[C], arguments: Callable[P, C]) -> None:
        self.declaration = declaration
        self.arguments = arguments
        self.name: str = arguments.__name__

    def __call__(self, *args: P.args, **kwargs: P.kwargs) -> C:
        return self.arguments(*args, **kwargs)

    @property
    def doc(self) -> str:
        """The method's docstring."""
        return self.arguments.__doc__ or ""

    def types(self) -> dict[str, Any]:
        """The type of each of the method's parameters (its annotations evaluated), the envelope's included."""
        import typing

        own = typing.get_type_hints(self.arguments, include_extras=True)
        for name in ("return", *(p.name for p in self._own() if p.kind is p.VAR_KEYWORD)):
            own.pop(name, None)
        return {**typing.get_type_hints(Attempted), **own}

    def _own(self) -> list[inspect.Parameter]:
        return list(inspect.signature(self.arguments).parameters.values())

    def parameters(self) -> list[inspect.Parameter]:
        """The method's parameters after ``self``: its own, then the envelope options its command takes (each
        with the default the command gives it), then its own that the declaration puts after them."""
        own = [p for p in self._own() if p.kind is not p.VAR_KEYWORD]
        trailing = self.declaration.trailing
        keyword = inspect.Parameter.KEYWORD_ONLY
        defaults = self.declaration.defaults()
        envelope = [
            inspect.Parameter(name, keyword, default=defaults.get(name), annotation=_ANNOTATIONS[name])
            for name in ENVELOPE
            if name not in _ATTEMPTED or name in defaults
        ]
        return [
            *(p for p in own if p.name not in trailing),
            *envelope,
            *(p for p in own if p.name in trailing),
        ]


#: The envelope options only a command on a step's attempt takes (when its struct has the field).
_ATTEMPTED: Final = ("attempt", "started_seq")

#: Each envelope option's annotation as the methods show it (the source text of :class:`Attempted`'s).
_ANNOTATIONS: Final[Mapping[str, str]] = {
    name: getattr(kind, "__forward_arg__", str(kind)) for name, kind in Attempted.__annotations__.items()
}


class Declaration(Generic[C]):
    """One command, declared once (see the module): made by :func:`declare`."""

    __slots__ = (
        "_checks",
        "_holds",
        "build",
        "cli",
        "command",
        "fields",
        "late",
        "methods",
        "planned",
        "refusals",
        "rules",
        "superseded",
        "tools",
        "trailing",
    )

    def __init__(
        self,
        command: type[C],
        *,
        build: Callable[[StateView, C], tuple[Event, int]],
        rules: Mapping[type[Any], Rules],
        planned: bool = True,
        late: Late | None = None,
        fields: Mapping[str, Field] | None = None,
        trailing: tuple[str, ...] = (),
        superseded: str = "",
        refusals: tuple[str, ...] = (),
        cli: Mapping[str, Help] | None = None,
        tools: Mapping[str, str] | None = None,
    ) -> None:
        self.command = command
        self.build = build
        self.rules = dict(rules)
        self.planned = planned
        self.late = late
        self.fields: Mapping[str, Field] = dict(fields or {})
        self.trailing = trailing
        self.superseded = superseded
        self.refusals = refusals
        self.cli: Mapping[str, Help] = dict(cli or {})
        self.tools: Mapping[str, str] = dict(tools or {})
        self.methods: list[Method[Any, C]] = []
        self._checks: dict[str, Check] | None = None
        self._holds: Callable[[Any], bool] | None = None  # every field's check at once (made on first use)

    def __repr__(self) -> str:
        return f"<declaration of {getattr(self.command, '__name__', self.command)}>"

    def method(self, arguments: Callable[P, C]) -> Method[P, C]:
        """Declare a library method that records this command (a decorator of its arguments function)."""
        made = Method(self, arguments)
        self.methods.append(made)
        return made

    @property
    def events(self) -> tuple[type[Any], ...]:
        """The classes of the events the command records (the ones its rules judge)."""
        return tuple(self.rules)

    def field(self, name: str) -> Field:
        """What the front doors say about field ``name`` (the command's own, else the envelope's)."""
        found = self.fields.get(name)
        return found if found is not None else ENVELOPE.get(name, Field())

    def defaults(self) -> dict[str, Any]:
        """The default of each envelope option the command takes (``attempt`` only when it has one)."""
        given = {f.name: f.default for f in msgspec.structs.fields(self.command)}  # type: ignore[arg-type]
        names = ("plan_version", "attempt", "started_seq", "actor", "source")
        found = {name: given[name] for name in names if name in given}
        return found | {"idempotency_key": given["key"], "expected_seq": None, "trace": None}

    def check_fields(self, command: C) -> None:
        """Refuse a command whose field holds a value of another type than the field's (INVALID_ARGUMENT): a
        struct built by hand is not checked when it is made."""
        holds = self._holds
        if holds is None:
            holds = self._made_checks()
        if holds(command):
            return
        for name, check in (self._checks or {}).items():
            value = getattr(command, name)
            if not check.test(value):
                raise refuse(name, value, check.expected, where=type(command).__name__)

    def _made_checks(self) -> Callable[[Any], bool]:
        """Each field's check, and one function that tests them all (generated from the field names: a loop
        over them costs about twice as much, on every command recorded)."""
        import typing

        hints = typing.get_type_hints(self.command, include_extras=True)
        names = self.command.__struct_fields__  # type: ignore[attr-defined]
        checks = self._checks = {name: checker(hints[name]) for name in names}
        terms = [f"_t{i}(c.{name})" for i, name in enumerate(checks)]
        namespace: dict[str, Any] = {f"_t{i}": check.test for i, check in enumerate(checks.values())}
        exec(f"def holds(c):\n    return {' and '.join(terms) or 'True'}", namespace)  # generated from field names
        holds: Callable[[Any], bool] = namespace["holds"]
        self._holds = holds
        return holds

    def exit_codes(self) -> dict[str, int]:
        """The exit code of each refusal the command's rules give (as the command line exits with it)."""
        return {code: CODES[code][0].exit_code for code in self.refusals}


#: The declarations, by their command's class.
_DECLARED: Final[dict[type[Any], Declaration[Any]]] = {}
#: The rules of each event judged against a plan, by the event's class (a derived class: the first of these it
#: derives from). A result returns why it is late (None: it applies); the rest return None.
RULES: Final[dict[type[Any], Rules]] = {}
#: The rules of each event judged before the log has a plan (the plan's creation).
UNPLANNED_RULES: Final[dict[type[Any], Rules]] = {}


def declare(
    command: type[C],
    *,
    build: Callable[[StateView, C], tuple[Event, int]],
    rules: Mapping[type[Any], Rules],
    planned: bool = True,
    late: Late | None = None,
    fields: Mapping[str, Field] | None = None,
    trailing: tuple[str, ...] = (),
    superseded: str = "",
    refusals: tuple[str, ...] = (),
    cli: Mapping[str, Help] | None = None,
    tools: Mapping[str, str] | None = None,
) -> Declaration[C]:
    """Declare ``command`` and register it with its rules; TypeError when it is declared twice, when an event's
    rules are declared twice (an event has one rules function, whichever commands produce it), or for a refusal
    code that does not exist.

    - ``build``: (state, command) -> (the event, the plan version it is issued against); no rule judged there;
    - ``rules``: the rules of each event the command records, by the event's class: (state, event, plan version,
      timestamp) -> why it is late (None: it applies); ``planned=False`` for the events judged before the log
      has a plan (the plan's creation);
    - ``late``: why an event its rules let through is recorded late, beside the orphans (the effects');
    - ``fields``: what the front doors say about the command's fields (:class:`Field`), beside the envelope's;
    - ``trailing``: the method's own keyword parameters that come after the envelope options;
    - ``superseded``: what the ``--plan-version`` help says the command does with a superseded version;
    - ``refusals``: the codes its refusals carry (:meth:`Declaration.exit_codes` gives their exit codes);
    - ``cli``: the help of each command line command that records it, by its name;
    - ``tools``: the description of each MCP tool that records only it, by its name."""
    if command in _DECLARED:
        raise TypeError(f"{command.__name__} is declared twice")
    for code in refusals:
        if code not in CODES:
            raise TypeError(f"{command.__name__} declares an unknown refusal code {code}")
    table = RULES if planned else UNPLANNED_RULES
    for kind, judge in rules.items():
        if table.get(kind, judge) is not judge:
            raise TypeError(f"the rules of {kind.__name__} are declared twice")
    declared = Declaration(
        command,
        build=build,
        rules=rules,
        planned=planned,
        late=late,
        fields=fields,
        trailing=trailing,
        superseded=superseded,
        refusals=refusals,
        cli=cli,
        tools=tools,
    )
    table.update(rules)
    _DECLARED[command] = declared
    return declared


def declaration_of(command: object) -> Declaration[Any]:
    """The declaration of ``command`` (an instance of a declared class, or of a class derived from one);
    INVALID_ARGUMENT for anything else."""
    for kind in type(command).__mro__:
        found = _DECLARED.get(kind)
        if found is not None:
            return found
    raise refuse("command", command, "a plantrail command (Start, Complete, ...)")


def declarations() -> tuple[Declaration[Any], ...]:
    """Every declaration made so far, in the order they were made (every command's once
    :mod:`plantrail.ledger.rules.decide` is imported)."""
    return tuple(_DECLARED.values())


def lookup() -> Mapping[type[Any], Declaration[Any]]:
    """The registry itself, by command class (what ``decide`` reads; do not change it)."""
    return _DECLARED
