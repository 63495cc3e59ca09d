"""A cap on the size of every HTTP request body, applied before Django reads it.

Two layers enforce REQUEST_MAX_BYTES. Under the product's server (kgapp/web/serve.py) the
HTTP channel refuses an oversize body before any of it is read, and answers huge headers
(431) and slow requests (408) too: twisted would otherwise spool the whole body to disk
before the app is called. This ASGI middleware is the second layer, for any other ASGI
server and for the test client: Django's ASGI handler reads the whole body (spooling it
past FILE_UPLOAD_MAX_MEMORY_SIZE) before any view runs, so it answers 413 at once when
the declared Content-Length is over the limit, and stops reading a body without one
(chunked) as soon as it passes it. `too_large_detail` is the one wording of that 413.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from django.conf import settings

Scope = dict[str, Any]  # an ASGI scope: free-form (each server and middleware adds keys)
Message = Mapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


class _TooLarge(Exception):
    pass


class RequestSizeLimit:
    """ASGI middleware for `http` scopes; other scopes pass through untouched."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        limit: int = settings.REQUEST_MAX_BYTES
        declared = _content_length(scope)
        if declared is not None and declared > limit:
            await _refuse(send, declared, limit)
            return
        received = 0

        async def counted() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > limit:
                    raise _TooLarge
            return message

        try:
            await self.app(scope, counted, send)
        except _TooLarge:
            # Raised while Django reads the body, before anything was sent.
            await _refuse(send, None, limit)


def _content_length(scope: Scope) -> int | None:
    for name, value in scope.get("headers", ()):
        if name.lower() == b"content-length":
            try:
                return int(value)
            except ValueError:
                return None  # Django answers a malformed header itself
    return None


def too_large_detail(size: int | None, limit: int) -> str:
    """The 413 message; `size` is None when the body has no declared length."""
    told = f"{size} bytes" if size is not None else "over the limit"
    return (
        f"The request body is {told}; the limit is {limit} bytes. "
        "Upload fewer or smaller files per request."
    )


async def _refuse(send: Send, size: int | None, limit: int) -> None:
    body = json.dumps({"detail": too_large_detail(size, limit)}).encode()
    await send(
        {
            "type": "http.response.start",
            "status": 413,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                (b"connection", b"close"),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})
