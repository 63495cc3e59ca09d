"""WebSockets of a member's live view of their tenant's graph tables:
/ws/t/<slug>/live/ (changes as they commit) and /ws/t/<slug>/graph/ (the explorer's:
the same, plus a replay of what a reconnecting client missed). Each change carries its
change-feed versionstamp (a decimal string), which is the replay cursor."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, Literal, TypedDict
from urllib.parse import parse_qs

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncJsonWebsocketConsumer

from kgapp.graph import live
from kgapp.graph.errors import GraphError
from kgapp.web.live import (
    ChangeJson,
    ChangesEvent,
    LiveHub,
    change_json,
    hub_acquire,
    hub_release,
    live_payload,
)
from tenants.access import tenant_access
from tenants.errors import TenantAccessError
from tenants.events import tenant_group
from tenants.wiring import tenant_graph

# Close codes a browser can act on: 4403 not logged in / not a member; 4409 the socket fell
# behind the tenant's changes, 4503 the store could not replay what was missed (both:
# reconnect later, with the cursor on the explorer's socket).
CLOSE_FORBIDDEN = 4403
CLOSE_BEHIND = 4409
CLOSE_UNAVAILABLE = 4503
READY_TIMEOUT = 10.0


class AccessRevoked(TypedDict):
    """A member's access ended (tenants.events.send_access_revoked)."""

    type: Literal["access.revoked"]
    user_id: int


class LiveConsumer(AsyncJsonWebsocketConsumer):
    hub: LiveHub | None = None
    seq: int | None = None  # the number of the last batch of changes from the hub
    behind = False

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
        await self.channel_layer.group_add(tenant_group(self.tenant.namespace), self.channel_name)
        await self.channel_layer.group_add(self.hub.group, self.channel_name)
        await self.accept()
        if await self.hub.wait_ready(READY_TIMEOUT):
            # The cursor of a client that has had nothing yet: changes after it reach it.
            ready = {"type": "live.ready", "versionstamp": self.hub.cursor}
            await self.send_json({**ready, "at": _now()})
        else:
            await self.send_json({"type": "live.unavailable", "at": _now()})
        await self.connected()

    async def connected(self) -> None:
        """After the socket is open and live."""

    async def disconnect(self, code: int) -> None:
        if self.hub is not None:
            await self.channel_layer.group_discard(self.hub.group, self.channel_name)
            await self.channel_layer.group_discard(
                tenant_group(self.tenant.namespace), self.channel_name
            )
            hub_release(self.hub)
            self.hub = None

    async def receive_json(self, content: Any, **kwargs: Any) -> None:
        if isinstance(content, dict) and content.get("type") == "ping":
            await self.send_json({"type": "pong"})

    async def graph_changes(self, event: ChangesEvent) -> None:
        seq = int(event["seq"])
        if self.behind or (self.seq is not None and seq <= self.seq):
            return  # closing, or a batch published again after a channel-layer error
        if self.seq is not None and seq > self.seq + 1:
            self.behind = True  # the channel layer dropped a batch: a full queue
            await self.close(code=CLOSE_BEHIND)
            return
        self.seq = seq
        for change in event["changes"]:
            if self.shows(change):
                await self.send_json({**live_payload(change), "at": event.get("at")})

    def shows(self, change: ChangeJson) -> bool:
        return True

    async def access_revoked(self, event: AccessRevoked) -> None:
        if event.get("user_id") == self.user_id:
            await self.close(code=CLOSE_FORBIDDEN)


class GraphConsumer(LiveConsumer):
    """The explorer's socket. `?since=<versionstamp>` (of the last change the client
    had) asks for every change the feed recorded after it. The replay is sent inside
    `connect`, and a consumer handles one message at a time, so live changes arriving
    meanwhile wait in the channel layer and follow it; those the replay already sent are
    dropped, so each change reaches the client once. Too much missed: `replay.reload`."""

    replayed: frozenset[str | None] = frozenset()

    async def connect(self) -> None:
        self.since = _since(self.scope.get("query_string", b""))
        await super().connect()

    async def connected(self) -> None:
        if self.since is None:
            return
        try:
            changes = await tenant_graph(self.tenant).arun(live.changes_since, self.since)
        except live.ReplayTooLong:
            await self.send_json({"type": "replay.reload"})
        except GraphError:
            await self.send_json({"type": "live.unavailable", "at": _now()})
            await self.close(code=CLOSE_UNAVAILABLE)  # the replay is owed: come back for it
        else:
            sent = [change_json(change) for change in changes]
            for change in sent:
                await self.send_json({**live_payload(change), "replayed": True})
            self.replayed = frozenset(change["versionstamp"] for change in sent)
            await self.send_json({"type": "replay.done", "count": len(changes)})

    def shows(self, change: ChangeJson) -> bool:
        return change.get("versionstamp") not in self.replayed


def _since(query_string: bytes) -> int | None:
    """The cursor, or None (live only: the client reloads its view) when unreadable."""
    values = parse_qs(query_string.decode("latin-1")).get("since")
    if not values or not (values[0].isascii() and values[0].isdigit()) or len(values[0]) > 20:
        return None
    stamp = int(values[0])
    return stamp if stamp < 2**64 else None


def _now() -> str:
    return datetime.now(UTC).isoformat()
