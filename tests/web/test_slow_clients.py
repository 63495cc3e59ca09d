"""The product's server (kgapp.web.serve) against clients that send too much or too
slowly (issue 29): each gets a JSON answer at once and its connection is closed, where
plain Daphne spooled the body, waited, or dropped the connection without a word. Ordinary
and keep-alive requests, and uploads that keep arriving, still reach the app.

Each test prints how long its answer took (`pytest -s`)."""

from __future__ import annotations

import http.client
import json
import select
import socket
import time
from collections.abc import Iterator
from dataclasses import dataclass
from http import HTTPStatus
from urllib.parse import urlsplit

import pytest

from tests.web_server import server_env, serving

READ_TIMEOUT = 2.0
MIN_RATE = 4096  # bytes a second that earn their own time
MAX_BYTES = 64 * 1024
MAX_HEADER = 16 * 1024  # the default
AT_ONCE = 1.0  # seconds within which a refusal that needs no waiting must come
SLACK = 1.5  # seconds an answer may come after it is due, on a busy machine

# What the API answers an anonymous POST (CSRF, auth, validation): the app's answer, not
# the server's 408 or 413.
APP_REFUSALS = {HTTPStatus.UNAUTHORIZED, HTTPStatus.FORBIDDEN, HTTPStatus.UNPROCESSABLE_ENTITY}

Address = tuple[str, int]

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def address(django_db_setup: None, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Address]:
    var = tmp_path_factory.mktemp("slow-clients")
    env = server_env(
        var,
        KG_REQUEST_READ_TIMEOUT=str(READ_TIMEOUT),
        KG_REQUEST_READ_MIN_RATE=str(MIN_RATE),
        KG_REQUEST_MAX_BYTES=str(MAX_BYTES),
    )
    with serving(env, var / "web.log") as url:
        parts = urlsplit(url)
        assert parts.hostname and parts.port
        yield parts.hostname, parts.port


@dataclass(frozen=True)
class Answer:
    status: int
    headers: dict[str, str]
    body: bytes
    seconds: float  # from the request's first byte to the end of the answer

    def detail(self) -> str:
        return str(json.loads(self.body)["detail"])


def head(method: str, path: str, *lines: str) -> bytes:
    fields = "".join(f"{line}\r\n" for line in ("Host: 127.0.0.1", *lines))
    return f"{method} {path} HTTP/1.1\r\n{fields}\r\n".encode()


def read_answer(sock: socket.socket, started: float, case: str, timeout: float) -> Answer:
    """One answer from `sock`, read within `timeout` s; its time is printed."""
    sock.settimeout(timeout)
    response = http.client.HTTPResponse(sock)
    try:
        response.begin()
        body = response.read()
    except TimeoutError:
        raise AssertionError(f"{case}: no answer within {timeout} s") from None
    except (http.client.RemoteDisconnected, ConnectionError):
        raise AssertionError(f"{case}: the connection closed without an answer") from None
    answer = Answer(
        status=response.status,
        headers={name.lower(): value for name, value in response.getheaders()},
        body=body,
        seconds=time.monotonic() - started,
    )
    print(f"\n[slow clients] {case}: {answer.status} after {answer.seconds:.3f} s")
    return answer


def assert_refused(answer: Answer, status: HTTPStatus, sock: socket.socket) -> None:
    """A refusal: JSON detail, `Connection: close`, and the connection then closed."""
    assert answer.status == status, answer
    assert answer.headers["content-type"] == "application/json"
    assert answer.headers["connection"] == "close"
    sock.settimeout(AT_ONCE)
    assert sock.recv(1) == b""


def test_a_declared_10_gib_body_is_answered_413_before_any_of_it_is_read(address: Address) -> None:
    with socket.create_connection(address) as sock:
        started = time.monotonic()
        sock.sendall(head("POST", "/api/v1/health", f"Content-Length: {10 * 1024**3}") + b"x")
        answer = read_answer(sock, started, "Content-Length 10 GiB + 1 byte", READ_TIMEOUT + SLACK)
        assert_refused(answer, HTTPStatus.REQUEST_ENTITY_TOO_LARGE, sock)
    assert answer.seconds < AT_ONCE
    assert f"{10 * 1024**3} bytes" in answer.detail()
    assert f"the limit is {MAX_BYTES} bytes" in answer.detail()


def test_a_chunked_body_is_answered_413_as_soon_as_it_passes_the_limit(address: Address) -> None:
    chunk = b"2000\r\n" + b"c" * 0x2000 + b"\r\n"  # 8 KiB; nine pass the limit
    with socket.create_connection(address) as sock:
        started = time.monotonic()
        sock.sendall(head("POST", "/api/v1/health", "Transfer-Encoding: chunked"))
        sock.sendall(chunk * 9)  # and never the last chunk
        answer = read_answer(sock, started, "chunked body over the limit", READ_TIMEOUT + SLACK)
        assert_refused(answer, HTTPStatus.REQUEST_ENTITY_TOO_LARGE, sock)
    assert answer.seconds < AT_ONCE
    assert f"the limit is {MAX_BYTES} bytes" in answer.detail()


def test_a_60_kb_authorization_header_is_answered_431(address: Address) -> None:
    with socket.create_connection(address) as sock:
        started = time.monotonic()
        sock.sendall(head("GET", "/api/v1/health", "Authorization: Bearer " + "a" * 60_000))
        answer = read_answer(sock, started, "60 KB Authorization header", READ_TIMEOUT + SLACK)
        assert_refused(answer, HTTPStatus.REQUEST_HEADER_FIELDS_TOO_LARGE, sock)
    assert answer.seconds < AT_ONCE
    assert f"{MAX_HEADER} bytes" in answer.detail()


def test_200_headers_over_the_total_limit_are_answered_431(address: Address) -> None:
    lines = [f"X-Filler-{n:03}: {'f' * 100}" for n in range(200)]  # each short, ~23 KB in all
    with socket.create_connection(address) as sock:
        started = time.monotonic()
        sock.sendall(head("GET", "/api/v1/health", *lines))
        answer = read_answer(sock, started, "200 headers, 23 KB in all", READ_TIMEOUT + SLACK)
        assert_refused(answer, HTTPStatus.REQUEST_HEADER_FIELDS_TOO_LARGE, sock)
    assert answer.seconds < AT_ONCE
    assert f"{MAX_HEADER} bytes" in answer.detail()


def test_a_malformed_request_is_answered_400_with_a_detail(address: Address) -> None:
    with socket.create_connection(address) as sock:
        started = time.monotonic()
        sock.sendall(b"NOT AN HTTP REQUEST LINE\r\n\r\n")
        answer = read_answer(sock, started, "malformed request line", READ_TIMEOUT + SLACK)
        assert_refused(answer, HTTPStatus.BAD_REQUEST, sock)
    assert answer.seconds < AT_ONCE
    assert "not valid HTTP/1.1" in answer.detail()


def test_half_a_body_then_silence_is_answered_408(address: Address) -> None:
    sent = head("POST", "/api/v1/health", "Content-Length: 2000") + b"h" * 1000
    due = READ_TIMEOUT + len(sent) / MIN_RATE
    with socket.create_connection(address) as sock:
        started = time.monotonic()
        sock.sendall(sent)
        answer = read_answer(sock, started, "half a body, then silence", due + SLACK)
        assert_refused(answer, HTTPStatus.REQUEST_TIMEOUT, sock)
    assert due - 0.2 < answer.seconds < due + SLACK
    assert f"{READ_TIMEOUT:g} s of its first byte" in answer.detail()


def test_headers_sent_one_byte_every_half_second_are_answered_408(address: Address) -> None:
    request = head("GET", "/api/v1/health")
    with socket.create_connection(address) as sock:
        started = time.monotonic()
        sent = 0
        while sent < len(request) and not select.select([sock], [], [], 0)[0]:
            sock.sendall(request[sent : sent + 1])
            sent += 1
            select.select([sock], [], [], 0.5)  # until the next byte, or an answer
        answer = read_answer(sock, started, "headers at one byte per 0.5 s", AT_ONCE)
        assert_refused(answer, HTTPStatus.REQUEST_TIMEOUT, sock)
    assert sent < len(request)
    due = READ_TIMEOUT + sent / MIN_RATE
    assert due - 0.2 < answer.seconds < due + SLACK


def test_two_requests_on_one_keep_alive_connection_are_answered_200(address: Address) -> None:
    with socket.create_connection(address) as sock:
        for n in (1, 2):
            started = time.monotonic()
            sock.sendall(head("GET", "/api/v1/health"))
            answer = read_answer(sock, started, f"keep-alive GET /api/v1/health #{n}", 10)
            assert answer.status == HTTPStatus.OK, answer


def test_a_keep_alive_connection_idle_past_the_read_timeout_is_not_answered_408(
    address: Address,
) -> None:
    with socket.create_connection(address) as sock:
        sock.sendall(head("GET", "/api/v1/health"))
        assert read_answer(sock, time.monotonic(), "GET before idling", 10).status == HTTPStatus.OK
        # Nothing at all while idle: no 408, and the connection stays open.
        assert not select.select([sock], [], [], READ_TIMEOUT + SLACK)[0]
        started = time.monotonic()
        sock.sendall(head("GET", "/api/v1/health"))
        answer = read_answer(sock, started, f"GET after {READ_TIMEOUT + SLACK:g} s idle", 10)
    assert answer.status == HTTPStatus.OK, answer


def test_a_body_just_under_the_limit_reaches_the_app(address: Address) -> None:
    body = json.dumps({"text": "u" * (MAX_BYTES - 100)}).encode()
    assert len(body) <= MAX_BYTES
    with socket.create_connection(address) as sock:
        started = time.monotonic()
        sock.sendall(
            head(
                "POST",
                "/api/v1/t/nobody/episodes",
                "Content-Type: application/json",
                f"Content-Length: {len(body)}",
            )
            + body
        )
        answer = read_answer(sock, started, f"POST of {len(body)} bytes", 10)
    assert answer.status in APP_REFUSALS, answer


def test_an_upload_that_keeps_arriving_past_the_read_timeout_reaches_the_app(
    address: Address,
) -> None:
    body = json.dumps({"text": "k" * 16_000}).encode()  # 512 bytes every 0.1 s: over 3 s
    with socket.create_connection(address) as sock:
        started = time.monotonic()
        sock.sendall(
            head(
                "POST",
                "/api/v1/t/nobody/episodes",
                "Content-Type: application/json",
                f"Content-Length: {len(body)}",
            )
        )
        for offset in range(0, len(body), 512):
            time.sleep(0.1)
            sock.sendall(body[offset : offset + 512])
        answer = read_answer(sock, started, "upload arriving for over 3 s at 5 KB/s", 10)
    assert answer.seconds > READ_TIMEOUT
    assert answer.status in APP_REFUSALS, answer
