"""The MCP server: the SDK's `MCPServer`, with the tools of `reads` and `writes`, each
wrapped so that every refusal reaches the client as a tool error (`calls.refusing`)."""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp.types import ToolAnnotations

from kgapp.web.mcp import reads, writes
from kgapp.web.mcp.calls import refusing

INSTRUCTIONS = """\
A bi-temporal knowledge graph of one tenant: entities, and facts between them that
record when each was true (valid time) and when the graph held it (system time). Facts
are never overwritten: a newer fact supersedes an older one, and both stay readable.
Find things with search_facts and search_entities (ids in every answer), read them
with get_entity and get_fact, ask questions with ask, compare moments with diff.
Editors add with add_memory (text, then extraction in a job: see job_status) and
add_fact, and remove with delete_episode."""

_READ = ToolAnnotations(read_only_hint=True, open_world_hint=False)
_WRITE = ToolAnnotations(read_only_hint=False, destructive_hint=False, open_world_hint=False)
_DELETE = ToolAnnotations(read_only_hint=False, destructive_hint=True, open_world_hint=False)

TOOLS: list[tuple[Callable[..., Awaitable[Any]], ToolAnnotations]] = [
    (writes.add_memory, _WRITE),
    (writes.add_fact, _WRITE),
    (reads.search_facts, _READ),
    (reads.search_entities, _READ),
    (reads.get_entity, _READ),
    (reads.get_fact, _READ),
    (reads.get_episodes, _READ),
    (writes.delete_episode, _DELETE),
    (reads.ask, _READ),
    (reads.diff, _READ),
    (reads.job_status, _READ),
]


def build_server() -> MCPServer:
    server: MCPServer = MCPServer("kgapp", instructions=INSTRUCTIONS)
    for tool, hints in TOOLS:
        description = inspect.cleandoc(tool.__doc__ or "")
        server.add_tool(
            refusing(tool), name=tool.__name__, description=description, annotations=hints
        )
    return server


SERVER = build_server()
