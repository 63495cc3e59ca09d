"""The MCP server's door: `/mcp/t/<slug>/` in front of Django, over streamable HTTP.

Each HTTP request is admitted on its own, before any MCP handling, as the API admits
its requests: the Host must be one ALLOWED_HOSTS names (400); an API token must be sent
(`Authorization: Bearer kg_...` or `X-API-Key`) and authenticate (401, with
WWW-Authenticate); its user must be a member of the tenant (404: an unknown tenant and
another's look the same; a malformed slug 400). Refusals are JSON `{"detail": ...}`.

The server is stateless: no MCP session outlives its request, so any web process can
answer any request and nothing is held per client. Daphne sends no ASGI lifespan
events, which the SDK's long-lived session manager needs to start; a stateless manager
holds nothing between requests, so each request gets its own.
"""

from __future__ import annotations

import io
import json
import logging
import re
from typing import Any

from channels.db import database_sync_to_async
from django.core.exceptions import DisallowedHost
from django.core.handlers.asgi import ASGIRequest
from django.db import OperationalError as DatabaseBusy
from django.http import HttpRequest
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

from kgapp.web import refusals
from kgapp.web.auth import TOKEN_AUTH, TokenRefused
from kgapp.web.mcp.calls import CALLER, Caller
from kgapp.web.mcp.server import SERVER
from kgapp.web.request_size import ASGIApp, Receive, Scope, Send
from tenants.access import tenant_access
from tenants.errors import TenantAccessError

logger = logging.getLogger(__name__)

PREFIX = "/mcp/"
_PATH = re.compile(r"/mcp/t/(?P<slug>[^/]+)/?")
NO_TOKEN = (
    "Send an API token: `Authorization: Bearer kg_...` (or `X-API-Key: kg_...`). Create"
    " one with POST /api/v1/tokens from a signed-in session (the API docs at /api/docs)."
)


class Refused(Exception):
    """The request is answered at the door, with `status` and a JSON detail."""

    def __init__(self, status: int, detail: str, headers: dict[str, str] | None = None):
        super().__init__(detail)
        self.status = status
        self.headers = headers or {}


def with_mcp(app: ASGIApp) -> ASGIApp:
    """`app` for everything but HTTP under /mcp/, which the MCP door answers."""

    async def route(scope: Scope, receive: Receive, send: Send) -> None:
        path = str(scope.get("path", ""))
        if scope["type"] == "http" and (path.startswith(PREFIX) or path == PREFIX[:-1]):
            await serve(scope, receive, send)
        else:
            await app(scope, receive, send)

    return route


async def serve(scope: Scope, receive: Receive, send: Send) -> None:
    try:
        caller = await database_sync_to_async(admit)(scope)
    except Refused as refused:
        await _answer(send, refused)
        return
    manager = StreamableHTTPSessionManager(
        SERVER._lowlevel_server,  # what the SDK's own in-process client connects to
        stateless=True,
        json_response=True,
    )
    async with manager.run():
        # Starlette types messages as MutableMapping, Django (and this app) as Mapping.
        await manager.handle_request({**scope, CALLER: caller}, receive, send)  # type: ignore[arg-type]


def admit(scope: Scope) -> Caller:
    """The caller of an MCP request: its token's user, admitted to the tenant its path
    names. Refused (400, 401, 404, 503) otherwise."""
    match = _PATH.fullmatch(str(scope["path"]))
    if match is None:
        raise Refused(404, "The MCP server of a tenant is at /mcp/t/<tenant slug>/.")
    request = ASGIRequest(scope, io.BytesIO())
    try:
        request.get_host()
        access = tenant_access(_token_user(request), match["slug"])
    except DisallowedHost as error:
        raise Refused(400, "The Host header names no host this server answers for.") from error
    except TokenRefused as error:
        headers = {"WWW-Authenticate": 'Bearer error="invalid_token"'}
        raise Refused(401, str(error), headers) from error
    except TenantAccessError as error:
        raise Refused(error.status, str(error)) from error
    except DatabaseBusy as error:
        logger.warning("database unavailable: %s", error)
        raise Refused(503, refusals.DATABASE_BUSY, {"Retry-After": "2"}) from error
    return Caller(request, access)


def _token_user(request: HttpRequest) -> Any:
    """The user of the request's API token (the API's own token schemes, which also set
    `request.user` and `request.api_token`); TokenRefused for one that does not
    authenticate, Refused (401) when none was sent."""
    for scheme in TOKEN_AUTH:
        user = scheme(request)
        if user is not None:
            return user
    raise Refused(401, NO_TOKEN, {"WWW-Authenticate": "Bearer"})


async def _answer(send: Send, refused: Refused) -> None:
    body = json.dumps({"detail": str(refused)}).encode()
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
        *((name.lower().encode(), value.encode()) for name, value in refused.headers.items()),
    ]
    await send({"type": "http.response.start", "status": refused.status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
