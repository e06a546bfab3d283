"""Where the plan server's plan records came from: the ``source`` it names itself by, as the hooks and the ACP
recorder name theirs.

Every plan version the plan server writes (``plan_set``'s create or replan, ``plan_extend``) carries a source
whose ``file`` is :data:`FILE`, whose ``tool`` is the tool called, whose ``timestamp`` is when the call came in,
and whose ``meta`` names the agent :data:`AGENT` (what ``plantrail runs --agent mcp`` and ``serve`` filter on,
:func:`plantrail.projections.runs.agent_of`), with the name and version the MCP client gave of itself in its
``initialize`` (``clientInfo``) as ``client`` and ``client_version`` when it gave them. The agent stays
``mcp`` whatever the client is called: a client names itself freely (``claude-code``, ``Claude Code``,
``mcp`` …), so its name is kept for whoever reads the run, never made into a filter's value. The other
records (a step started, completed …) carry no source: the same command written through the CLI or the
library writes the same record.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any, Final

from plantrail.ledger.vocabulary.cut import one_line

if TYPE_CHECKING:
    from plantrail.ledger.vocabulary.events import Source

__all__ = ["AGENT", "FILE", "NAME_LIMIT", "called_by", "client_of", "plan_source"]

#: The agent the plan server's runs name.
AGENT: Final = "mcp"
#: What a plan server record's source names as where it came from (no file: the server that took the call).
FILE: Final = "plantrail mcp"
#: The longest client name or version kept (a longer one is cut).
NAME_LIMIT: Final = 100

_CLIENT: ContextVar[tuple[str | None, str | None]] = ContextVar("plantrail_mcp_client", default=(None, None))


def client_of(context: Any) -> tuple[str | None, str | None]:
    """The name and version the MCP client gave in its ``initialize`` (``clientInfo``), of a tool call's
    ``context``; None for what it did not give (or a call made outside a request)."""
    try:
        info = context.request_context.session.client_params.client_info
    except (AttributeError, ValueError):  # no request, no session or no initialize params
        return None, None
    return _kept(getattr(info, "name", None)), _kept(getattr(info, "version", None))


def _kept(value: object) -> str | None:
    if not isinstance(value, str) or not value.strip():
        return None
    return one_line(value, NAME_LIMIT)


@contextmanager
def called_by(client: tuple[str | None, str | None]) -> Iterator[None]:
    """The client of the tool call being served, for the sources :func:`plan_source` makes within."""
    token = _CLIENT.set(client)
    try:
        yield
    finally:
        _CLIENT.reset(token)


def plan_source(tool: str, timestamp: str) -> Source:
    """The source of a plan record the plan server writes for ``tool``, called at ``timestamp``, by the client
    :func:`called_by` set."""
    from plantrail.ledger.vocabulary.events import Source

    name, version = _CLIENT.get()
    meta: dict[str, Any] = {"agent": AGENT}
    if name is not None:
        meta["client"] = name
    if version is not None:
        meta["client_version"] = version
    return Source(file=FILE, timestamp=timestamp, tool=tool, meta=meta)
