"""The product's HTTP and WebSocket server: Daphne, with an HTTP channel that limits how
much a client may send before the app is called, and how slowly.

Twisted's HTTPChannel reads a whole request body (into a temporary file) before Daphne
calls the app, so the app's own size check (kgapp/web/request_size.py) comes after the
disk has filled, and twisted meets huge headers and stalled bodies by dropping the
connection without a word. GuardedChannel answers instead, in JSON `{"detail": ...}`
with `Connection: close`, then closes:

- 413 as the headers end when the declared Content-Length is over REQUEST_MAX_BYTES,
  before any of the body is read; 413 as soon as a chunked body passes it;
- 431 when the request line or one header line, or all header lines together, pass
  REQUEST_MAX_HEADER_BYTES;
- 408 when a request's headers and body are not all in REQUEST_READ_TIMEOUT seconds
  after its first byte, plus 1/REQUEST_READ_MIN_RATE s for every byte received (an
  upload that keeps arriving at least that fast is never cut, however big). The clock
  stops while the app answers; it does not run on a keep-alive connection idle between
  requests (twisted's idle timeout closes those) nor on a WebSocket after the upgrade;
- 400 for a malformed request, where twisted wrote a bare `400 Bad Request`.

Run it as Daphne, with Daphne's arguments:
`python -m kgapp.web.serve -b HOST -p PORT kgapp.asgi:application`.
"""

from __future__ import annotations

import enum
import json
import logging
from dataclasses import dataclass
from http import HTTPStatus
from typing import Any

# daphne.cli imports daphne.server first, which installs the asyncio reactor that
# twisted must not have chosen before.
from daphne.cli import CommandLineInterface
from daphne.http_protocol import HTTPFactory, WebRequest
from daphne.server import Server
from django.conf import settings
from twisted.internet.address import IPv4Address, IPv6Address
from twisted.internet.base import DelayedCall
from twisted.internet.protocol import connectionDone
from twisted.python.failure import Failure
from twisted.web.http import HTTPChannel
from twisted.web.http_headers import Headers

from kgapp.web.request_size import too_large_detail

# Named, not __name__: run with -m, this module is __main__.
logger = logging.getLogger("kgapp.web.serve")

# After a refusal the connection is half-closed and what still arrives is read and
# dropped for this long, then cut: closing a socket with unread input makes the kernel
# send a reset, which can destroy the answer before the client has read it.
LINGER_SECONDS = 2.0


@dataclass(frozen=True)
class RequestLimits:
    """What one request may send and how slowly; read from the settings once, at start."""

    max_body: int
    max_header: int
    read_timeout: float
    min_rate: int  # bytes a second that earn their own time; 0: no allowance

    @classmethod
    def from_settings(cls) -> RequestLimits:
        return cls(
            max_body=settings.REQUEST_MAX_BYTES,
            max_header=settings.REQUEST_MAX_HEADER_BYTES,
            read_timeout=settings.REQUEST_READ_TIMEOUT,
            min_rate=settings.REQUEST_READ_MIN_RATE,
        )

    def slow_detail(self) -> str:
        allowance = f" (plus 1 s per {self.min_rate} bytes received)" if self.min_rate else ""
        return (
            "The request did not arrive in time: its headers and body must all arrive within "
            f"{self.read_timeout:g} s of its first byte{allowance}. Send it faster, or "
            "upload fewer or smaller files per request."
        )


class _Phase(enum.Enum):
    IDLE = "idle"  # before a request's first byte: twisted's idle timeout applies
    READING = "reading"  # its headers or body are arriving: the read deadline runs
    ANSWERING = "answering"  # the app has it (or the socket became a WebSocket)
    CLOSING = "closing"  # refused: the answer is out, whatever arrives is dropped


class GuardedChannel(HTTPChannel):
    """Twisted's HTTP/1.1 channel, refusing what is too big or too slow (see the module).

    Precondition: `guard(limits)` is called before the connection's first byte.
    Invariant: once refused (CLOSING), no byte reaches twisted's parser or the app.
    """

    limits: RequestLimits
    _phase = _Phase.IDLE
    _header_bytes = 0
    _deadline: DelayedCall | None = None
    _linger: DelayedCall | None = None

    def guard(self, limits: RequestLimits) -> None:
        self.limits = limits
        # LineReceiver's cap on one line and HTTPChannel's on all header lines; ours are
        # checked first, so twisted's silent close and bare 400 never fire for them.
        self.MAX_LENGTH = self.totalHeadersSize = limits.max_header

    def refuse(self, status: HTTPStatus, detail: str) -> None:
        """Answer `status` with `detail` and close. Only the first refusal answers."""
        if self._phase is _Phase.CLOSING:
            return
        self._phase = _Phase.CLOSING
        self._stop_deadline()
        logger.info("%s refused %d: %s", _client(self.getPeer()), status, detail)
        body = json.dumps({"detail": detail}).encode()
        headers = Headers()
        for name, value in (
            (b"content-type", b"application/json"),
            (b"content-length", str(len(body)).encode()),
            (b"connection", b"close"),
        ):
            headers.addRawHeader(name, value)
        self.writeHeaders(b"HTTP/1.1", str(int(status)).encode(), status.phrase.encode(), headers)
        self.write(body)
        self._close_after_answer()

    def dataReceived(self, data: bytes) -> None:
        if self._phase is _Phase.CLOSING:
            return
        if self._phase is _Phase.IDLE:
            self._phase = _Phase.READING
            self._deadline = self.callLater(self.limits.read_timeout, self._too_slow)
        if self._deadline is not None and self.limits.min_rate:
            self._deadline.delay(len(data) / self.limits.min_rate)
        super().dataReceived(data)

    def lineReceived(self, line: bytes) -> None:
        if self._phase is _Phase.CLOSING:
            return  # the rest of a buffer that held the refused request
        self._header_bytes += len(line)
        if self._header_bytes > self.limits.max_header:
            self._refuse_headers("The headers")
            return
        super().lineReceived(line)

    def lineLengthExceeded(self, line: bytes) -> None:
        self._refuse_headers("One header line (or the request line)")

    def allHeadersReceived(self) -> None:
        self._header_bytes = 0
        # `length` is HTTPChannel's declared Content-Length (None when chunked).
        if self.length is not None and self.length > self.limits.max_body:
            self.refuse(
                HTTPStatus.REQUEST_ENTITY_TOO_LARGE,
                too_large_detail(self.length, self.limits.max_body),
            )
            return
        super().allHeadersReceived()

    def rawDataReceived(self, data: bytes) -> None:
        if self._phase is not _Phase.CLOSING:
            super().rawDataReceived(data)

    def allContentReceived(self) -> None:
        if self._phase is _Phase.CLOSING:
            return
        self._stop_deadline()
        self._phase = _Phase.ANSWERING
        super().allContentReceived()

    def requestDone(self, request: Any) -> None:
        # The next request's first byte starts its own deadline, whether twisted replays
        # it from its buffer (inside this call) or it comes later.
        self._phase = _Phase.IDLE
        super().requestDone(request)

    def connectionLost(self, reason: Failure = connectionDone) -> None:
        self._stop_deadline()
        if self._linger is not None and self._linger.active():
            self._linger.cancel()
        super().connectionLost(reason)

    def _respondToBadRequestAndDisconnect(self) -> None:
        # Twisted's private hook for a malformed request (and for more than maxHeaders
        # header lines), which writes a bare 400. Overridden so that it answers like the
        # other refusals, and says nothing after one of them.
        self.refuse(
            HTTPStatus.BAD_REQUEST,
            f"The request is not valid HTTP/1.1, or has over {self.maxHeaders} header lines.",
        )

    def _too_slow(self) -> None:
        self._deadline = None
        self.refuse(HTTPStatus.REQUEST_TIMEOUT, self.limits.slow_detail())

    def _stop_deadline(self) -> None:
        if self._deadline is not None and self._deadline.active():
            self._deadline.cancel()
        self._deadline = None

    def _refuse_headers(self, part: str) -> None:
        self.refuse(
            HTTPStatus.REQUEST_HEADER_FIELDS_TOO_LARGE,
            f"{part} of the request passed {self.limits.max_header} bytes, the limit. "
            "Send smaller headers (cookies, tokens) or fewer of them.",
        )

    def _close_after_answer(self) -> None:
        transport: Any = self.transport
        # The channel is the transport's producer; a registered producer holds the close.
        transport.unregisterProducer()
        # A half-close sends the answer and then end of stream; what the client still
        # sends is dropped (dataReceived) until it closes or LINGER_SECONDS pass.
        getattr(transport, "loseWriteConnection", transport.loseConnection)()
        self._linger = self.callLater(LINGER_SECONDS, transport.abortConnection)


def _client(peer: object) -> str:
    if isinstance(peer, IPv4Address | IPv6Address):
        return f"{peer.host}:{peer.port}"
    return str(peer)


class GuardedRequest(WebRequest):
    """Daphne's request, counting the body as twisted stores it, so that a chunked body is
    refused as soon as it passes the limit rather than after it has all been spooled."""

    _body_bytes = 0

    def handleContentChunk(self, data: bytes) -> None:
        channel: GuardedChannel = self.channel
        self._body_bytes += len(data)
        if self._body_bytes > channel.limits.max_body:
            channel.refuse(
                HTTPStatus.REQUEST_ENTITY_TOO_LARGE,
                too_large_detail(None, channel.limits.max_body),
            )
            return
        super().handleContentChunk(data)


class GuardedHTTPFactory(HTTPFactory):
    """Daphne's HTTP factory, building GuardedChannels that make GuardedRequests."""

    protocol = GuardedChannel

    def __init__(self, server: Server, limits: RequestLimits) -> None:
        super().__init__(server)
        self.limits = limits

    def buildProtocol(self, addr: Any) -> GuardedChannel:
        channel: GuardedChannel = super().buildProtocol(addr)  # sets daphne's WebRequest
        channel.requestFactory = GuardedRequest
        channel.guard(self.limits)
        return channel

    def acceptableProtocols(self) -> list[bytes]:
        # HTTP/1.1 only: an h2 connection (TLS with ALPN) would get twisted's
        # H2Connection, which has none of GuardedChannel's limits.
        return [b"http/1.1"]


class GuardedServer(Server):
    """Daphne's server with a GuardedHTTPFactory where `run()` builds its HTTPFactory.

    `run()` assigns `self.http_factory = HTTPFactory(self)` and then listens with
    whatever that attribute holds; the setter puts the guarded factory there instead, so
    nothing of daphne's is copied or patched.
    """

    _guarded_factory: GuardedHTTPFactory | None = None

    @property
    def http_factory(self) -> GuardedHTTPFactory | None:
        return self._guarded_factory

    @http_factory.setter
    def http_factory(self, factory: HTTPFactory) -> None:
        if not isinstance(factory, GuardedHTTPFactory):
            factory = GuardedHTTPFactory(self, RequestLimits.from_settings())
        self._guarded_factory = factory


class GuardedCommandLine(CommandLineInterface):
    """Daphne's command line, serving with GuardedServer."""

    server_class = GuardedServer


if __name__ == "__main__":
    GuardedCommandLine.entrypoint()
