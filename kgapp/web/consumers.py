"""WebSocket /ws/t/<slug>/live/: a member's live view of their tenant's graph tables."""

from __future__ import annotations

from typing import Any

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncJsonWebsocketConsumer

from kgapp.web.live import LiveHub, hub_acquire, hub_release, live_payload
from tenants.access import tenant_access
from tenants.errors import TenantAccessError

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
        self.hub = hub_acquire(access.tenant.namespace)
        await self.channel_layer.group_add(self.hub.group, self.channel_name)
        await self.accept()
        ready = await self.hub.wait_ready(READY_TIMEOUT)
        await self.send_json({"type": "live.ready" if ready else "live.unavailable"})

    async def disconnect(self, code: int) -> None:
        if self.hub is not None:
            await self.channel_layer.group_discard(self.hub.group, self.channel_name)
            hub_release(self.hub)
            self.hub = None

    async def receive_json(self, content: Any, **kwargs: Any) -> None:
        if isinstance(content, dict) and content.get("type") == "ping":
            await self.send_json({"type": "pong"})

    async def graph_change(self, event: dict[str, Any]) -> None:
        await self.send_json(live_payload(event["change"]))

    async def access_revoked(self, event: dict[str, Any]) -> None:
        if event.get("user_id") == self.user_id:
            await self.close(code=CLOSE_FORBIDDEN)
