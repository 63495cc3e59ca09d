"""A scripted OpenAI-compatible HTTP server on loopback, so tests drive the real
`openai` client over real HTTP without reaching the API.

Chat answers come from `queue(...)` first, then from the `on_chat` handler; embeddings
are deterministic unit vectors derived from a hash of each text. A chat request with
`"stream": true` is answered as the API streams: server-sent events, one
`chat.completion.chunk` per piece of the reply's text, a usage chunk when
`stream_options.include_usage` asks for one, then `data: [DONE]`.
"""

from __future__ import annotations

import base64
import hashlib
import json
import math
import re
import struct
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any

DEFAULT_DIMENSIONS = 384

_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "invalid_request_error",
    403: "permission_error",
    404: "invalid_request_error",
    422: "invalid_request_error",
    429: "requests",
}


@dataclass
class Reply:
    """One scripted chat answer.

    `content`: a dict or list is sent as JSON text, a str verbatim (malformed JSON
    tests), None as a null content. With a non-200 `status` the reply is an
    OpenAI-style error body instead; a str `content` is then its message.

    Streamed (the request asked for a stream): the text goes out in `pieces` (by default
    the content cut after each space), `pause` seconds apart; with `break_after`, an
    error event (`break_message`) follows that many pieces and the stream ends there.
    """

    content: Any = None
    refusal: str | None = None
    status: int = 200
    error_code: str | None = None
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0
    finish_reason: str = "stop"
    pieces: list[str] | None = None
    pause: float = 0.0
    break_after: int | None = None
    break_message: str = "the model server went away"


ChatHandler = Callable[[dict[str, Any]], Reply | dict[str, Any] | None]


def _tokens(text: str) -> int:
    return max(1, len(text) // 4) if text else 0


def embedding_of(text: str, dimensions: int = DEFAULT_DIMENSIONS) -> list[float]:
    """The unit vector the server returns for `text` (same text, same vector)."""
    raw = hashlib.shake_256(text.encode("utf-8")).digest(4 * dimensions)
    values = [n / 2**32 - 0.5 for n in struct.unpack(f"<{dimensions}I", raw)]
    norm = math.sqrt(sum(v * v for v in values)) or 1.0
    return [v / norm for v in values]


def error_body(status: int, message: str, code: str | None) -> dict[str, Any]:
    kind = "insufficient_quota" if code == "insufficient_quota" else None
    kind = kind or _ERROR_TYPES.get(status, "server_error" if status >= 500 else "api_error")
    return {"error": {"message": message, "type": kind, "param": None, "code": code}}


class ScriptedLLM:
    """The server; `base_url` is valid between `start()` and `stop()`."""

    def __init__(self) -> None:
        self.base_url = ""
        self.requests: list[dict[str, Any]] = []
        self._paths: list[str] = []
        self._replies: deque[Reply] = deque()
        self._handler: ChatHandler | None = None
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._server: ThreadingHTTPServer | None = None

    def start(self) -> ScriptedLLM:
        server = ThreadingHTTPServer(("127.0.0.1", 0), _handler_class(self))
        server.daemon_threads = True
        self._stopping.clear()
        self._server = server
        self.base_url = f"http://127.0.0.1:{server.server_address[1]}/v1"
        # A short poll interval keeps stop() (one per test) from costing half a second.
        serve = threading.Thread(
            target=server.serve_forever, args=(0.02,), name="scripted-llm", daemon=True
        )
        serve.start()
        return self

    def stop(self) -> None:
        self._stopping.set()  # wakes replies still sleeping out their delay
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> ScriptedLLM:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def queue(self, *replies: Reply) -> None:
        """Serve `replies` first, in order, to the next chat calls."""
        with self._lock:
            self._replies.extend(replies)

    def on_chat(self, handler: ChatHandler) -> None:
        """Answer chat calls with `handler(body)` once the queue is empty.

        A dict return means Reply(content=dict); None means a 500 "no scripted answer".
        """
        with self._lock:
            self._handler = handler

    def chat_requests(self, task: str | None = None) -> list[dict[str, Any]]:
        """Chat request bodies, optionally only those whose json_schema name is `task`."""
        with self._lock:
            chats = [b for p, b in zip(self._paths, self.requests, strict=True) if p == "chat"]
        if task is None:
            return chats
        return [body for body in chats if _task_of(body) == task]

    def embedding_requests(self) -> list[dict[str, Any]]:
        with self._lock:
            pairs = list(zip(self._paths, self.requests, strict=True))
        return [body for path, body in pairs if path == "embeddings"]

    def _record(self, path: str, body: dict[str, Any]) -> None:
        with self._lock:
            self._paths.append(path)
            self.requests.append(body)

    def _chat_reply(self, body: dict[str, Any]) -> Reply:
        with self._lock:
            queued = self._replies.popleft() if self._replies else None
            handler = self._handler
        if queued is not None:
            return queued
        answer = handler(body) if handler is not None else None
        if answer is None:
            return Reply(status=500, content="no scripted answer")
        return answer if isinstance(answer, Reply) else Reply(content=answer)


def _task_of(body: dict[str, Any]) -> str | None:
    response_format = body.get("response_format") or {}
    return (response_format.get("json_schema") or {}).get("name")


def _prompt_text(body: dict[str, Any]) -> str:
    return "".join(str(m.get("content") or "") for m in body.get("messages", []))


def _chat_completion(body: dict[str, Any], reply: Reply) -> dict[str, Any]:
    if isinstance(reply.content, str) or reply.content is None:
        content = reply.content
    else:
        content = json.dumps(reply.content)
    prompt, completion = _tokens(_prompt_text(body)), _tokens(content or reply.refusal or "")
    message = {"role": "assistant", "content": content, "refusal": reply.refusal}
    return {
        "id": f"chatcmpl-{uuid.uuid4().hex[:24]}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": body.get("model", "scripted"),
        "choices": [
            {"index": 0, "message": message, "finish_reason": reply.finish_reason, "logprobs": None}
        ],
        "usage": {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
        },
    }


def _text_of(reply: Reply) -> str:
    if isinstance(reply.content, str) or reply.content is None:
        return reply.content or ""
    return json.dumps(reply.content)


def _pieces(reply: Reply) -> list[str]:
    """The streamed reply's text deltas: as scripted, or its words (each with the space
    that follows it)."""
    if reply.pieces is not None:
        return list(reply.pieces)
    return re.findall(r"\S+\s*|\s+", _text_of(reply))


def _chunk(
    body: dict[str, Any], delta: dict[str, Any], finish: str | None = None
) -> dict[str, Any]:
    return {
        "id": "chatcmpl-stream",
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": body.get("model", "scripted"),
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish, "logprobs": None}],
    }


def _stream_events(body: dict[str, Any], reply: Reply) -> list[tuple[float, dict[str, Any]]]:
    """(seconds to wait first, event) for each event of a streamed reply, [DONE] aside."""
    pieces = _pieces(reply)
    events: list[tuple[float, dict[str, Any]]] = [(0.0, _chunk(body, {"role": "assistant"}))]
    for number, piece in enumerate(pieces):
        if reply.break_after is not None and number == reply.break_after:
            return [*events, (reply.pause, error_body(500, reply.break_message, None))]
        events.append((reply.pause if number else 0.0, _chunk(body, {"content": piece})))
    if reply.refusal:
        events.append((0.0, _chunk(body, {"refusal": reply.refusal})))
    events.append((0.0, _chunk(body, {}, reply.finish_reason)))
    if (body.get("stream_options") or {}).get("include_usage"):
        prompt, completion = _tokens(_prompt_text(body)), _tokens("".join(pieces))
        usage = {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
        }
        events.append((0.0, {**_chunk(body, {}), "choices": [], "usage": usage}))
    return events


def _embeddings(body: dict[str, Any]) -> dict[str, Any]:
    texts = body.get("input", [])
    texts = [texts] if isinstance(texts, str) else [str(t) for t in texts]
    dimensions = int(body.get("dimensions") or DEFAULT_DIMENSIONS)
    as_base64 = body.get("encoding_format") == "base64"
    data = []
    for index, text in enumerate(texts):
        vector: Any = embedding_of(text, dimensions)
        if as_base64:
            packed = struct.pack(f"<{dimensions}f", *vector)
            vector = base64.b64encode(packed).decode("ascii")
        data.append({"object": "embedding", "index": index, "embedding": vector})
    tokens = sum(_tokens(t) for t in texts)
    return {
        "object": "list",
        "data": data,
        "model": body.get("model", "scripted"),
        "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
    }


def _models() -> dict[str, Any]:
    names = ("gpt-4o-mini", "text-embedding-3-small")
    return {
        "object": "list",
        "data": [{"id": n, "object": "model", "created": 0, "owned_by": "scripted"} for n in names],
    }


def _handler_class(llm: ScriptedLLM) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:  # keep test output clean
            pass

        def do_GET(self) -> None:
            if self.path.rstrip("/") == "/v1/models":
                self._send(200, _models())
            else:
                self._send(404, error_body(404, f"no route GET {self.path}", None))

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            try:
                body = json.loads(self.rfile.read(length) or b"{}")
            except ValueError:
                self._send(400, error_body(400, "request body is not JSON", None))
                return
            if self.path == "/v1/chat/completions":
                llm._record("chat", body)
                self._chat(body)
            elif self.path == "/v1/embeddings":
                llm._record("embeddings", body)
                self._send(200, _embeddings(body))
            else:
                self._send(404, error_body(404, f"no route POST {self.path}", None))

        def _chat(self, body: dict[str, Any]) -> None:
            try:
                reply = llm._chat_reply(body)
            except Exception as exc:  # a broken handler shows up as a 500, not a hang
                reply = Reply(status=500, content=f"on_chat handler raised {exc!r}")
            if reply.delay and llm._stopping.wait(reply.delay):
                return
            if reply.status != 200:
                message = reply.content if isinstance(reply.content, str) else "scripted error"
                payload = error_body(reply.status, message, reply.error_code)
                self._send(reply.status, payload, reply.headers)
            elif body.get("stream"):
                self._stream(_stream_events(body, reply), reply.headers)
            else:
                self._send(200, _chat_completion(body, reply), reply.headers)

        def _stream(
            self, events: list[tuple[float, dict[str, Any]]], headers: dict[str, str]
        ) -> None:
            """Server-sent events, each written as it is due; the connection closes after
            the last (HTTP/1.0: no length, the end of the body is the close)."""
            try:
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                for name, value in headers.items():
                    self.send_header(name, value)
                self.end_headers()
                for wait, event in events:
                    if wait and llm._stopping.wait(wait):
                        return
                    self.wfile.write(f"data: {json.dumps(event)}\n\n".encode())
                    self.wfile.flush()
                    if "error" in event:
                        return
                self.wfile.write(b"data: [DONE]\n\n")
                self.wfile.flush()
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client stopped reading

        def _send(self, status: int, payload: Any, headers: dict[str, str] | None = None) -> None:
            data = json.dumps(payload).encode("utf-8")
            try:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for name, value in (headers or {}).items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(data)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up (a timeout test); nothing to tell it

    return Handler
