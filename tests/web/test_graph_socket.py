"""The explorer's socket /ws/t/<slug>/graph/: live changes stamped with their
change-feed versionstamp, and a replay from the change feed of what a reconnecting
client missed (tests/web/test_live_feed.py counts it exactly)."""

from __future__ import annotations

from urllib.parse import quote

import pytest
from asgiref.sync import sync_to_async
from channels.testing import WebsocketCommunicator

from kgapp.asgi import application
from tenants.models import Role
from tenants.wiring import tenant_graph
from tests.web.test_live_socket import ORIGIN, session_cookie

pytestmark = pytest.mark.django_db(transaction=True)

CREATE = (
    "CREATE entity CONTENT {name: $name, canonical_name: $canonical, name_embedding: [0.5, 0.5]}"
)


async def graph_socket(slug: str, headers, since: str | None = None):
    path = f"/ws/t/{slug}/graph/" + (f"?since={quote(since)}" if since else "")
    communicator = WebsocketCommunicator(application, path, headers=headers)
    connected, _ = await communicator.connect(timeout=15)
    return communicator, connected


async def messages_until(socket, kind: str, timeout: float = 10) -> list[dict]:
    seen = []
    while True:
        message = await socket.receive_json_from(timeout=timeout)
        seen.append(message)
        if message["type"] == kind:
            return seen


async def test_reconnecting_client_gets_what_it_missed_and_nothing_of_others(
    make_tenant, member
) -> None:
    mine, other = await sync_to_async(make_tenant)(), await sync_to_async(make_tenant)()
    user = await sync_to_async(member)(mine, Role.VIEWER)
    headers = [ORIGIN, await sync_to_async(session_cookie)(user)]
    socket, connected = await graph_socket(mine.slug, headers)
    assert connected
    ready = await socket.receive_json_from(timeout=15)
    assert ready["type"] == "live.ready" and ready["at"]
    await tenant_graph(mine).aquery(CREATE, {"name": "Seen Live", "canonical": "seen live"})
    live = (await messages_until(socket, "change"))[-1]
    assert live["data"]["name"] == "Seen Live" and live["at"]
    assert live["versionstamp"].isdigit()  # a string: JavaScript numbers stop at 2**53
    assert "name_embedding" not in live["data"]  # vectors are not sent to browsers
    await socket.disconnect()

    # While away: one change here, one in another tenant.
    await tenant_graph(mine).aquery(CREATE, {"name": "Missed", "canonical": "missed"})
    await tenant_graph(other).aquery(CREATE, {"name": "Not Mine", "canonical": "not mine"})
    socket, connected = await graph_socket(mine.slug, headers, since=live["versionstamp"])
    assert connected
    replay = await messages_until(socket, "replay.done")
    names = [m["data"].get("name") for m in replay if m["type"] == "change"]
    assert names == ["Missed"]  # after the cursor only, and nothing of the other tenant
    assert all(m.get("replayed") for m in replay if m["type"] == "change")
    assert all("name_embedding" not in m["data"] for m in replay if m["type"] == "change")
    # Live again after the replay.
    await tenant_graph(mine).aquery(CREATE, {"name": "After", "canonical": "after"})
    after = (await messages_until(socket, "change"))[-1]
    assert after["data"]["name"] == "After" and not after.get("replayed")
    await socket.disconnect()


async def test_graph_socket_refuses_strangers_and_foreign_origins(
    make_tenant, member, make_user
) -> None:
    tenant = await sync_to_async(make_tenant)()
    stranger = await sync_to_async(make_user)()
    _, connected = await graph_socket(
        tenant.slug, [ORIGIN, await sync_to_async(session_cookie)(stranger)]
    )
    assert not connected
    user = await sync_to_async(member)(tenant)
    cookie = await sync_to_async(session_cookie)(user)
    _, connected = await graph_socket(tenant.slug, [(b"origin", b"http://evil.example"), cookie])
    assert not connected


async def test_unreadable_cursor_means_live_only(make_tenant, member) -> None:
    tenant = await sync_to_async(make_tenant)()
    user = await sync_to_async(member)(tenant)
    headers = [ORIGIN, await sync_to_async(session_cookie)(user)]
    socket, connected = await graph_socket(tenant.slug, headers, since="yesterday'; DROP")
    assert connected
    assert (await socket.receive_json_from(timeout=15))["type"] == "live.ready"
    assert await socket.receive_nothing(timeout=0.5)
    await socket.disconnect()


async def test_removed_member_is_disconnected_from_the_graph_socket(make_tenant, member) -> None:
    from tenants import services

    tenant = await sync_to_async(make_tenant)()
    user = await sync_to_async(member)(tenant)
    socket, connected = await graph_socket(
        tenant.slug, [ORIGIN, await sync_to_async(session_cookie)(user)]
    )
    assert connected
    await socket.receive_json_from(timeout=15)
    await sync_to_async(services.membership_remove)(tenant=tenant, user=user)
    assert await socket.receive_output(timeout=5) == {"type": "websocket.close", "code": 4403}
