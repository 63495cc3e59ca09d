"""WebSocket paths through the real server (kgapp.web.serve), as a browser meets them: an
unknown path is closed with 4404 (the code the README promises), where closing before the
handshake reached the client as HTTP 403; a tenant socket without access is still refused
at the handshake."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from websockets.exceptions import ConnectionClosed, InvalidStatus
from websockets.sync.client import connect

from tests.web_server import server_env, serving

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def base(django_db_setup: None, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    var: Path = tmp_path_factory.mktemp("sockets")
    with serving(server_env(var), var / "web.log") as url:
        yield url


@pytest.mark.parametrize("path", ["/ws/nope/", "/ws/t/x/live/extra/", "/ws/t//live/", "/"])
def test_an_unknown_socket_path_is_closed_with_4404(base: str, path: str) -> None:
    url = base.replace("http://", "ws://") + path
    with (
        connect(url, origin=base, open_timeout=10) as socket,  # type: ignore[arg-type]
        pytest.raises(ConnectionClosed) as closed,
    ):
        socket.recv(timeout=5)
    assert closed.value.rcvd is not None and closed.value.rcvd.code == 4404


def test_a_tenant_socket_without_access_is_refused_at_the_handshake(base: str) -> None:
    url = base.replace("http://", "ws://") + "/ws/t/no-such-tenant/live/"
    with pytest.raises(InvalidStatus) as refused:
        connect(url, origin=base, open_timeout=10)  # type: ignore[arg-type]
    assert refused.value.response.status_code == 403
