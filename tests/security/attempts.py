"""One attack or probe request, how it is sent, and what came of it."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote, urlencode

from asgiref.sync import async_to_sync
from django.test import Client

from tests.security.conftest import Sides


@dataclass
class Attempt:
    area: str  # api, admin, websocket, mcp, task
    target: str  # the operation, route, socket or task attacked
    how: str
    method: str = "GET"
    url: str = ""
    query: dict[str, Any] | None = None
    body: Any = None
    kind: str = "json"  # json, multipart, form
    auth: str = "token"  # token, api_key, session, curator


@dataclass
class Outcome:
    attempt: Attempt
    status: int
    leaked: bool
    b_changed: list[str] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def succeeded(self) -> bool:
        return bool(self.b_changed) or (200 <= self.status < 300 and self.leaked)


def clients(sides: Sides) -> dict[str, Client]:
    a = sides.a
    return {
        "token": a.client,
        "api_key": Client(HTTP_X_API_KEY=a.secret),
        "session": a.session(),
        "curator": a.session(a.curator),
    }


def send(client: Client, attempt: Attempt) -> Any:
    url = attempt.url
    if attempt.query:
        url += "?" + urlencode(attempt.query, doseq=True)
    method = attempt.method.lower()
    if attempt.kind == "multipart" and attempt.body is not None:
        form = multipart(attempt.body["files"], attempt.body.get("field", "files"))
        return client.generic("POST", url, data=form, content_type=MULTIPART)
    if attempt.kind == "form":
        return getattr(client, method)(url, attempt.body or {})
    if attempt.body is None or method == "get":
        return client.generic(attempt.method, url)
    return client.generic(
        attempt.method, url, data=json.dumps(attempt.body), content_type="application/json"
    )


BOUNDARY = "kgapp-attack-boundary"
MULTIPART = f"multipart/form-data; boundary={BOUNDARY}"


def multipart(files: list[tuple[str, bytes]], form_field: str = "files") -> bytes:
    """A form of files in `form_field`, each file's name sent exactly (RFC 2231 `filename*`),
    which the test client's own encoder would refuse or shorten for names like `../x`."""
    parts = [
        (
            f'--{BOUNDARY}\r\nContent-Disposition: form-data; name="{form_field}";'
            f" filename*=UTF-8''{quote(name, safe='')}\r\n"
            "Content-Type: application/octet-stream\r\n\r\n"
        ).encode()
        + data
        + b"\r\n"
        for name, data in files
    ]
    return b"".join(parts) + f"--{BOUNDARY}--\r\n".encode()


def streamed(response: Any) -> bytes:
    """A streamed answer's bytes, from a sync or an async iterator (an export)."""
    content = response.streaming_content
    if not hasattr(content, "__aiter__"):
        return b"".join(content)

    async def gather() -> bytes:
        return b"".join([chunk async for chunk in content])

    return async_to_sync(gather)()


def body_text(response: Any) -> str:
    """The answer's body and headers, as text."""
    body = streamed(response) if response.streaming else response.content
    return body.decode("utf-8", "replace") + "".join(f"{k}: {v}" for k, v in response.items())
