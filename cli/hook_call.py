"""One agent hook call without click: stdin to the library's hook function, and the JSON the agent reads.

``plantrail hook claude`` (and ``gemini``, ``opencode``) runs once per agent event, so the installed form,
with no options, is answered by :func:`run` straight from :mod:`plantrail.cli.entry`, without loading click or
the command table; ``plantrail hook AGENT --json`` / ``--store`` go through :mod:`plantrail.cli.hooks`, which
calls the same :func:`record` and :func:`agent_output`.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager, nullcontext
from typing import TYPE_CHECKING

from plantrail.ledger.collector import paused

if TYPE_CHECKING:
    from plantrail.ledger.capture.hook import HookResult

__all__ = [
    "AGENTS",
    "CONTEXT_CAP",
    "agent_output",
    "environment",
    "load_msgspec",
    "record",
    "run",
]

#: The agents whose hooks ``plantrail hook AGENT`` takes.
AGENTS = ("claude", "gemini", "opencode")

#: Claude Code's cap on a hook's output strings.
CONTEXT_CAP = 10_000


def record(agent: str, store: str | None) -> HookResult:
    """Take one hook call of ``agent`` from stdin (with ``store`` as ``--store`` gives it); never raises for
    what the payload holds (the library writes its errors down)."""
    from plantrail.ledger.capture import hook

    takes: Mapping[str, Callable[..., HookResult]] = {
        "claude": hook.claude_hook,
        "gemini": hook.gemini_hook,
        "opencode": hook.opencode_hook,
    }
    env = environment(store)
    with _hook_trace(env), _hook_signing(env):
        return takes[agent](_stdin(), env=env)


def _hook_signing(env: Mapping[str, str]) -> AbstractContextManager[object]:
    """The signing policy ``$PLANTRAIL_SIGN_KEY`` and ``$PLANTRAIL_SIGN_EVERY`` give, for the logs the call
    appends to (:func:`plantrail.ledger.signing.signing`). A hook never fails its agent: a bad value is handed
    on as the refusal it is, which the log the call opens raises before writing, and the hook writes it down
    with its other errors."""
    from plantrail.ledger.signing_policy import SIGN_EVERY_ENV, SIGN_KEY_ENV

    if not env.get(SIGN_KEY_ENV) and not env.get(SIGN_EVERY_ENV):
        return nullcontext()
    from plantrail.ledger.signing_policy import policy_from_env, signing
    from plantrail.ledger.vocabulary.errors import PlantrailError

    try:
        return signing(policy_from_env(env))
    except PlantrailError as exc:
        return signing(exc)


def _hook_trace(env: Mapping[str, str]) -> AbstractContextManager[object]:
    """The W3C trace context the hook process was started in (``$TRACEPARENT``, ``$TRACESTATE``), set for the
    events the call appends (:func:`plantrail.ledger.tracing.traced`). A hook never fails its agent: an invalid
    one is left out, and the events are appended without it."""
    traceparent = env.get("TRACEPARENT") or None
    if traceparent is None:
        return nullcontext()
    from plantrail.ledger.tracing import traced
    from plantrail.ledger.vocabulary.errors import PlantrailError
    from plantrail.ledger.vocabulary.trace_context import trace_context

    try:
        trace_context(traceparent, env.get("TRACESTATE") or None)
    except PlantrailError:
        return nullcontext()
    return traced(traceparent, env.get("TRACESTATE") or None)


def agent_output(result: HookResult) -> str | None:
    """What the agent reads on stdout for this call, as Claude Code takes it: on SessionStart, where the plan
    stands (:func:`plantrail.cli.hook_texts.session_start_text`); on PreCompact, what the summary must keep;
    else nothing."""
    import os

    from plantrail.cli.hook_texts import LAUNCHER_ENV, compaction_instructions, session_start_text

    if result.run is None:
        return None
    if result.event == "SessionStart":
        launched = os.environ.get(LAUNCHER_ENV)
        text = session_start_text(result.run, result.receipt, result.source, launched, result.unreadable)
        return _hook_output("SessionStart", "additionalContext", text)
    if result.event == "PreCompact":
        return _hook_output("PreCompact", "customInstructions", compaction_instructions(result.run, result.receipt))
    return None


def _hook_output(event: str, name: str, text: str) -> str:
    """The JSON Claude Code reads from a hook: ``text`` under ``hookSpecificOutput.<name>``, within its cap."""
    import orjson

    if len(text) > CONTEXT_CAP:
        text = text[: CONTEXT_CAP - 60] + "\n... (cut; call plan_status for the whole plan)"
    return orjson.dumps({"hookSpecificOutput": {"hookEventName": event, name: text}}).decode()


def run(agent: str) -> int:
    """``plantrail hook AGENT`` with no options: the call, its output, exit code 0 (a failure outside the
    library's hook, such as stdout closed, is reported as :func:`plantrail.cli.main.main` reports it).

    The call runs with Python's cyclic garbage collector off: it is one short process, most of whose time is
    the import of the modules it uses, and the collector's passes over the objects those imports make (a
    tenth of the call's CPU time) free nothing; what a call frees, reference counting frees as always, and
    what a cycle holds is given back when the process ends."""
    with paused():
        load_msgspec()
        return _answer(agent)


def load_msgspec() -> None:
    """Import msgspec without typing_extensions, which msgspec imports only for ``get_type_hints``,
    ``Required`` and ``NotRequired`` and which takes longer to import than msgspec itself (~11 ms of a hook
    call). msgspec falls back to :mod:`typing`'s when it cannot import them, and on Python 3.11+ they resolve
    the same types: typing_extensions' ``Required`` and ``NotRequired`` are typing's own, and its
    ``get_type_hints(..., include_extras=True)`` returns what ``typing.get_type_hints`` does (plantrail's
    classes use nothing of typing_extensions). The module is blocked only while msgspec loads (a ``None``
    entry in ``sys.modules``): whatever imports typing_extensions later in the process gets it. Nothing is
    done when either module is loaded already, and a msgspec that would not load without it is loaded with it.
    """
    if "msgspec" in sys.modules or "typing_extensions" in sys.modules:
        return
    sys.modules["typing_extensions"] = None  # type: ignore[assignment]  # its import raises ImportError
    try:
        importlib.import_module("msgspec")
    except ImportError:  # a msgspec that needs it: the hook's modules load it with it
        for name in [m for m in sys.modules if m == "msgspec" or m.startswith("msgspec.")]:
            del sys.modules[name]
    finally:
        del sys.modules["typing_extensions"]


def _answer(agent: str) -> int:
    try:
        text = agent_output(record(agent, None))
        if text is not None:
            sys.stdout.write(text + "\n")
            sys.stdout.flush()
    except BrokenPipeError:
        return 0
    except (Exception, KeyboardInterrupt) as exc:
        from plantrail.cli.main import failed

        return failed(exc, as_json=False)
    return 0


def environment(store: str | None) -> dict[str, str]:
    """The environment a hook call sees, with the store (``--store``, else ``$PLANTRAIL_STORE``) in it."""
    import os

    from plantrail.ledger.stores.targets import STORE_ENV

    found = dict(os.environ)
    if store:
        found[STORE_ENV] = store
    return found


def _stdin() -> bytes:
    from plantrail.ledger.vocabulary.limits import HOOK_PAYLOAD

    return sys.stdin.buffer.read(HOOK_PAYLOAD.cap() + 1)
