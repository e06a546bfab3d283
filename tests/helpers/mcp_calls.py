"""Calling the MCP plan server's tools from the SDK's in-process client, for the MCP tests."""

from __future__ import annotations

from typing import Any

from mcp import Client

__all__ = ["call", "refused", "result"]


def result(outcome: Any) -> dict[str, Any]:
    """A successful tool call's structured result."""
    assert not outcome.is_error, outcome.content
    structured = outcome.structured_content
    assert isinstance(structured, dict)
    return structured.get("result", structured)


def refused(outcome: Any, code: str) -> bool:
    """True when the call was refused as a tool error carrying ``error[CODE]: message``."""
    text = " ".join(part.text for part in outcome.content)
    return bool(outcome.is_error) and f"error[{code}]: " in text


async def call(client: Client, tool: str, **arguments: Any) -> Any:
    """Call ``tool`` with ``arguments``."""
    return await client.call_tool(tool, arguments)
