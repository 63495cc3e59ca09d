"""The SDK's own MCP client against the product's MCP door (kgapp/web/mcp/): over real
HTTP to a served URL (tests/web/test_mcp.py), or in this process through the ASGI app
(tests/security/test_isolation_matrix.py, where the test database is this process's)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.types import CallToolResult

IN_PROCESS = "http://testserver"


def auth_headers(secret: str, api_key: bool = False) -> dict[str, str]:
    return {"X-API-Key": secret} if api_key else {"Authorization": f"Bearer {secret}"}


@asynccontextmanager
async def connected(
    address: str, headers: dict[str, str], app: Any = None
) -> AsyncIterator[Client]:
    """A connected client; with `app`, requests go to that ASGI app in this process
    (`address` then starts with IN_PROCESS)."""
    transport = httpx2.ASGITransport(app=app) if app is not None else None
    async with (
        httpx2.AsyncClient(headers=headers, timeout=120, transport=transport) as http,
        Client(streamable_http_client(address, http_client=http)) as client,
    ):
        yield client


async def tool_calls(
    address: str, headers: dict[str, str], made: list[tuple[str, dict[str, Any]]], app: Any = None
) -> list[CallToolResult]:
    """Each (tool, arguments) called in order, in one connection."""
    async with connected(address, headers, app) as client:
        return [await client.call_tool(name, arguments) for name, arguments in made]


def said(result: CallToolResult) -> str:
    """The text a model reads."""
    return "\n".join(getattr(block, "text", "") for block in result.content)
