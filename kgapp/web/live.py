"""One LIVE SELECT hub per tenant per web process, fanned out through a Channels group.

The subscriptions run on the graph runtime's loop (which owns SurrealDB sockets);
changes cross to the web loop through a queue and are published to the tenant's
group in the order they arrived.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import weakref
from concurrent.futures import Future
from dataclasses import asdict
from datetime import UTC, datetime
from typing import Any

from channels.layers import get_channel_layer

from kgapp.graph import queries
from kgapp.graph.errors import GraphUnavailable
from kgapp.graph.live import Change, LiveSubscription
from kgapp.graph.records import to_json
from tenants.events import tenant_group
from tenants.graph import graph_runtime

logger = logging.getLogger(__name__)

RECONNECT_MIN, RECONNECT_MAX = 0.5, 10.0


class LiveHub:
    def __init__(self, namespace: str, tables: frozenset[str] = queries.LIVE_TABLES):
        self.namespace = namespace
        self.group = tenant_group(namespace)
        self.users = 0
        self._tables = tables
        self._open: set[str] = set()
        self._ready = asyncio.Event()
        self._web_loop = asyncio.get_running_loop()
        self._changes: asyncio.Queue[Change] = asyncio.Queue()
        runtime = graph_runtime()
        self._config = runtime.config
        self._pumps: list[Future[None]] = [runtime.submit(self._pump(t)) for t in tables]
        self._publisher = asyncio.create_task(self._publish())

    async def wait_ready(self, timeout: float) -> bool:
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(timeout):
                await self._ready.wait()
        return self._ready.is_set()

    def stop(self) -> None:
        for pump in self._pumps:
            pump.cancel()
        self._publisher.cancel()

    async def _pump(self, table: str) -> None:
        """On the runtime loop: keep a live query open on `table`, forever."""
        delay = RECONNECT_MIN
        while True:
            try:
                async with LiveSubscription(self._config, self.namespace, table) as changes:
                    self._on_web(self._mark_open, table, True)
                    delay = RECONNECT_MIN
                    async for change in changes:
                        self._on_web(self._changes.put_nowait, change)
            except GraphUnavailable as error:
                logger.info(
                    "live %s.%s lost (%s); retrying in %.1fs", self.namespace, table, error, delay
                )
            self._on_web(self._mark_open, table, False)
            await asyncio.sleep(delay)
            delay = min(RECONNECT_MAX, delay * 2)

    def _on_web(self, callback: Any, *args: Any) -> None:
        with contextlib.suppress(RuntimeError):  # the web loop has closed
            self._web_loop.call_soon_threadsafe(callback, *args)

    def _mark_open(self, table: str, is_open: bool) -> None:
        (self._open.add if is_open else self._open.discard)(table)
        if self._open == set(self._tables):
            self._ready.set()
        else:
            self._ready.clear()

    async def _publish(self) -> None:
        layer = get_channel_layer()
        assert layer is not None, "CHANNEL_LAYERS must be configured"
        while True:
            change = await self._changes.get()
            await layer.group_send(
                self.group,
                {
                    "type": "graph.change",
                    "change": to_json(asdict(change)),
                    "at": datetime.now(UTC).isoformat(),
                },
            )


_hubs: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[str, LiveHub]] = (
    weakref.WeakKeyDictionary()
)


def hub_acquire(namespace: str) -> LiveHub:
    hubs = _hubs.setdefault(asyncio.get_running_loop(), {})
    hub = hubs.get(namespace)
    if hub is None:
        hub = hubs[namespace] = LiveHub(namespace)
    hub.users += 1
    return hub


def hub_release(hub: LiveHub) -> None:
    hub.users -= 1
    if hub.users <= 0:
        hub.stop()
        hubs = _hubs.get(asyncio.get_running_loop(), {})
        if hubs.get(hub.namespace) is hub:
            del hubs[hub.namespace]


def live_payload(change: dict[str, Any]) -> dict[str, Any]:
    return {"type": "change", **change}
