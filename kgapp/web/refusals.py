"""What the REST API (kgapp/web/api.py) and the MCP tools (kgapp/web/mcp/calls.py) say
for the same failure: one wording, whichever door it came through."""

from __future__ import annotations

from collections.abc import Iterable

GRAPH_DOWN = "The knowledge graph store is unavailable right now; retry in a moment."
DATABASE_BUSY = "The database is busy or unavailable; retry in a moment."
CONCURRENT_CHANGE = "The change conflicted with a concurrent change to the same records; retry it."


def finding(where: Iterable[object], message: str) -> str:
    """One of pydantic's findings as a person reads it: `field.sub: what is wrong`."""
    path = ".".join(str(part) for part in where)
    said = message.removeprefix("Value error, ")
    return f"{path}: {said}" if path else said
