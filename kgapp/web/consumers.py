"""WebSockets of a member's live view of their tenant's graph tables:
/ws/t/<slug>/live/ (changes as they commit) and /ws/t/<slug>/graph/ (the explorer's:
the same, plus a replay of what a reconnecting client missed)."""

from __future__ import annotations

from dataclasses import asdict
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import parse_qs

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncJsonWebsocketConsumer

from kgapp.graph import live
from kgapp.graph.errors import GraphError
from kgapp.graph.records import to_json
from kgapp.web.live import LiveHub, hub_acquire, hub_release, live_payload
from tenants.access import tenant_access
from tenants.errors import TenantAccessError
from tenants.graph import tenant_graph

# Close codes a browser can act on: 4401 not logged in / not a member, 4503 store down.
CLOSE_FORBIDDEN = 4403
READY_TIMEOUT = 10.0


class LiveConsumer(AsyncJsonWebsocketConsumer):
    hub: LiveHub | None = None

    async def connect(self) -> None:
        slug = self.scope["url_route"]["kwargs"]["slug"]
        try:
            access = await database_sync_to_async(tenant_access)(self.scope["user"], slug)
        except TenantAccessError:
            await self.close(code=CLOSE_FORBIDDEN)  # before accept: the handshake fails
            return
        self.user_id = self.scope["user"].pk
        self.tenant = access.tenant
        self.hub = hub_acquire(access.tenant.namespace)
        await self.channel_layer.group_add(self.hub.group, self.channel_name)
        await self.accept()
        ready = await self.hub.wait_ready(READY_TIMEOUT)
        await self.send_json({"type": "live.ready" if ready else "live.unavailable", "at": _now()})
        await self.connected()

    async def connected(self) -> None:
        """After the socket is open and live."""

    async def disconnect(self, code: int) -> None:
        if self.hub is not None:
            await self.channel_layer.group_discard(self.hub.group, self.channel_name)
            hub_release(self.hub)
            self.hub = None

    async def receive_json(self, content: Any, **kwargs: Any) -> None:
        if isinstance(content, dict) and content.get("type") == "ping":
            await self.send_json({"type": "pong"})

    async def graph_change(self, event: dict[str, Any]) -> None:
        await self.send_json({**live_payload(event["change"]), "at": event.get("at")})

    async def access_revoked(self, event: dict[str, Any]) -> None:
        if event.get("user_id") == self.user_id:
            await self.close(code=CLOSE_FORBIDDEN)


REPLAY_MARGIN = timedelta(seconds=10)


class GraphConsumer(LiveConsumer):
    """The explorer's socket. `?since=<ISO time>` (the `at` of the last message the
    client had) asks for what the change feeds recorded from a little before then. The
    replay is sent inside `connect`, and a consumer handles one message at a time, so
    live changes arriving meanwhile wait in the channel layer and follow it: the client
    ends with every record's latest state. Too much missed: `replay.reload`."""

    async def connect(self) -> None:
        self.since = _since(self.scope.get("query_string", b""))
        await super().connect()

    async def connected(self) -> None:
        if self.since is None:
            return
        try:
            changes = await tenant_graph(self.tenant).arun(
                live.changes_since, self.since - REPLAY_MARGIN
            )
        except live.ReplayTooLong:
            await self.send_json({"type": "replay.reload"})
        except GraphError:
            await self.send_json({"type": "live.unavailable", "at": _now()})
        else:
            for change in changes:
                await self.send_json({**live_payload(to_json(asdict(change))), "replayed": True})
            await self.send_json({"type": "replay.done", "count": len(changes)})


def _since(query_string: bytes) -> datetime | None:
    values = parse_qs(query_string.decode("latin-1")).get("since")
    if not values:
        return None
    try:
        moment = datetime.fromisoformat(values[0])  # a trailing Z reads as UTC
    except ValueError:
        return None  # an unreadable cursor: live only (the client reloads its view)
    return moment.astimezone(UTC) if moment.tzinfo else moment.replace(tzinfo=UTC)


def _now() -> str:
    return datetime.now(UTC).isoformat()
