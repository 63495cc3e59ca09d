"""The live WebSocket, through the real ASGI stack (origin check, session auth)
and the real SurrealDB server: SurrealDB -> LIVE SELECT hub -> Channels -> client."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from channels.testing import WebsocketCommunicator
from django.test import Client

from kgapp.asgi import application
from tenants import services
from tenants.models import Role
from tenants.wiring import tenant_graph

pytestmark = pytest.mark.django_db(transaction=True)

ORIGIN = (b"origin", b"http://127.0.0.1:8000")


def session_cookie(user: Any) -> tuple[bytes, bytes]:
    client = Client()
    client.force_login(user)
    return (b"cookie", f"sessionid={client.cookies['sessionid'].value}".encode())


async def open_socket(
    slug: str, headers: list[tuple[bytes, bytes]]
) -> tuple[WebsocketCommunicator, bool]:
    communicator = WebsocketCommunicator(application, f"/ws/t/{slug}/live/", headers=headers)
    connected, _ = await communicator.connect(timeout=15)
    return communicator, connected


async def next_change(communicator: WebsocketCommunicator, timeout: float = 5) -> dict[str, Any]:
    while True:
        message = await communicator.receive_json_from(timeout=timeout)
        if message["type"] == "change":
            return message


async def test_member_sees_changes_of_own_tenant_only(make_tenant, member) -> None:
    mine, other = await sync_to_async(make_tenant)(), await sync_to_async(make_tenant)()
    user = await sync_to_async(member)(mine, Role.VIEWER)
    cookie = await sync_to_async(session_cookie)(user)
    socket, connected = await open_socket(mine.slug, [ORIGIN, cookie])
    assert connected
    assert (await socket.receive_json_from(timeout=15))["type"] == "live.ready"

    create = "CREATE entity CONTENT {name: $name, canonical_name: $canonical}"
    await tenant_graph(other).aquery(create, {"name": "Other Co", "canonical": "other co"})
    await tenant_graph(mine).aquery(create, {"name": "Acme <b>", "canonical": "acme <b>"})
    change = await next_change(socket)
    assert change["action"] == "CREATE" and change["table"] == "entity"
    assert change["data"]["name"] == "Acme <b>"
    assert change["record"].startswith("entity:")
    assert await socket.receive_nothing(timeout=0.5)
    await socket.disconnect()


async def test_non_member_is_refused(make_tenant, make_user) -> None:
    tenant = await sync_to_async(make_tenant)()
    stranger = await sync_to_async(make_user)()
    cookie = await sync_to_async(session_cookie)(stranger)
    socket, connected = await open_socket(tenant.slug, [ORIGIN, cookie])
    assert not connected
    anonymous, connected = await open_socket(tenant.slug, [ORIGIN])
    assert not connected


async def test_foreign_origin_is_refused(make_tenant, member) -> None:
    tenant = await sync_to_async(make_tenant)()
    user = await sync_to_async(member)(tenant)
    cookie = await sync_to_async(session_cookie)(user)
    socket, connected = await open_socket(
        tenant.slug, [(b"origin", b"http://evil.example"), cookie]
    )
    assert not connected


async def test_removed_member_is_disconnected(make_tenant, member) -> None:
    tenant = await sync_to_async(make_tenant)()
    user = await sync_to_async(member)(tenant)
    cookie = await sync_to_async(session_cookie)(user)
    socket, connected = await open_socket(tenant.slug, [ORIGIN, cookie])
    assert connected
    await socket.receive_json_from(timeout=15)
    await sync_to_async(services.membership_remove)(tenant=tenant, user=user)
    output = await socket.receive_output(timeout=5)
    assert output == {"type": "websocket.close", "code": 4403}


async def test_job_changes_are_relayed(make_tenant, member) -> None:
    tenant = await sync_to_async(make_tenant)()
    user = await sync_to_async(member)(tenant, Role.EDITOR)
    cookie = await sync_to_async(session_cookie)(user)
    socket, connected = await open_socket(tenant.slug, [ORIGIN, cookie])
    assert connected
    await socket.receive_json_from(timeout=15)
    await tenant_graph(tenant).aquery(
        "CREATE job CONTENT {kind: 'probe', status: 'queued', total: 1, progress: 0, counts: {}, timings: {}}"
    )
    change = await asyncio.wait_for(next_change(socket), 5)
    assert change["table"] == "job" and change["data"]["kind"] == "probe"
    await socket.disconnect()


@pytest.mark.parametrize(
    "url", ["/ws/nope/", "/ws/t/a/../b/live/", "/ws/t//live/", "/ws/t/x/live/extra/", "/"]
)
async def test_unknown_socket_paths_are_refused_not_errors(url: str, make_user) -> None:
    """No login needed to ask: the socket is closed at once with 4404 ("no such socket";
    a refused handshake would reach a browser as HTTP 403), nothing sent, no exception
    inside. tests/web/test_slow_clients.py sees the same through the real server."""
    user = await sync_to_async(make_user)()
    member_cookie = await sync_to_async(session_cookie)(user)
    for headers in ([ORIGIN], [ORIGIN, member_cookie]):
        socket = WebsocketCommunicator(application, url, headers=headers)
        assert await socket.connect(timeout=5) == (True, None)
        assert await socket.receive_output(timeout=5) == {"type": "websocket.close", "code": 4404}
        assert await socket.receive_nothing()
