"""One live hub per tenant per web process, fanned out through a Channels group.

The hub follows the tenant's change feed (kgapp/graph/live.py `FeedTail`): it reads
what committed since its last read every `LIVE_FEED_INTERVAL` seconds, whichever
SurrealDB node took the write, and sooner when a LIVE SELECT on this node rings the
doorbell (`LIVE_SELECT`). Every change it publishes comes from the feed, with its
versionstamp: the explorer's replay cursor.

The feed reads and the live queries run on the graph runtime's loop (which owns the
SurrealDB sockets); changes cross to the web loop through a queue and are published in
the order they were read, in numbered batches, to a group of this hub's own (every web
process has its hub, and each socket listens to its process's). A channel layer drops
messages to a socket that has 100 waiting; a socket that finds a number missing closes
with CLOSE_BEHIND, and the explorer reconnects and replays from its cursor.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import uuid
import weakref
from concurrent.futures import Future
from datetime import UTC, datetime
from typing import Any, Literal, TypedDict

from channels.layers import BaseChannelLayer, get_channel_layer
from django.conf import settings

from kgapp.graph import queries
from kgapp.graph.errors import GraphError
from kgapp.graph.live import Change, FeedTail, LiveSubscription, position, server_now
from kgapp.graph.records import JsonObject, to_json
from tenants.events import tenant_group
from tenants.wiring import graph_runtime

logger = logging.getLogger(__name__)


class ChangeJson(TypedDict):
    """A change as browsers get it (`change_json`)."""

    action: str
    table: str
    record: str
    data: JsonObject  # the record's fields as JSON: a row of any watched table
    versionstamp: str | None


class ChangeMessage(ChangeJson):
    """A change as a socket sends it (`live_payload`)."""

    type: Literal["change"]


class ChangesEvent(TypedDict):
    """A numbered batch of changes, as a hub publishes it to its group."""

    type: Literal["graph.changes"]
    seq: int
    changes: list[ChangeJson]
    at: str


RECONNECT_MIN, RECONNECT_MAX = 0.5, 10.0
BATCH = 200  # changes per group message at most


class LiveHub:
    def __init__(self, namespace: str, tables: frozenset[str] = queries.LIVE_TABLES):
        self.namespace = namespace
        self.group = f"{tenant_group(namespace)}.{uuid.uuid4().hex[:16]}"
        self.users = 0
        self._tables = tables
        self._interval = float(settings.LIVE_FEED_INTERVAL)
        self._lookback = float(settings.LIVE_FEED_LOOKBACK)
        self._ready = asyncio.Event()
        self._web_loop = asyncio.get_running_loop()
        self._changes: asyncio.Queue[list[Change]] = asyncio.Queue()
        self._doorbell = asyncio.Event()  # set and awaited on the runtime loop only
        self._tail: FeedTail | None = None  # the runtime loop's; read here, never changed
        runtime = graph_runtime()
        self._runtime = runtime
        self._tasks: list[Future[None]] = [runtime.submit(self._follow())]
        if settings.LIVE_SELECT:
            self._tasks += [runtime.submit(self._ring(table)) for table in tables]
        self._publisher = asyncio.create_task(self._publish())

    async def wait_ready(self, timeout: float) -> bool:
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(timeout):
                await self._ready.wait()
        return self._ready.is_set()

    @property
    def cursor(self) -> str | None:
        """A replay cursor from which every change reaches a socket that joined the group
        before this was read (the explorer's first, before any change), or None."""
        tail = self._tail
        return None if tail is None else str(position(tail.cursor))

    def stop(self) -> None:
        for task in self._tasks:
            task.cancel()
        self._publisher.cancel()

    async def _follow(self) -> None:
        """On the runtime loop: read the feed forever; sweep back once per interval."""
        store = self._runtime.store(self.namespace)
        tail: FeedTail | None = None
        swept = 0.0
        delay = RECONNECT_MIN
        while True:
            try:
                if tail is None:
                    tail = FeedTail(await server_now(store), self._lookback, self._tables)
                    self._tail = tail
                sweep = time.monotonic() - swept >= self._interval
                changes = await tail.read(store, sweep=sweep)
            except Exception as error:  # the store is down, or a bug: never stop following
                log = logger.info if isinstance(error, GraphError) else logger.exception
                log("feed of %s: %s; retrying in %.1fs", self.namespace, error, delay)
                self._on_web(self._mark_ready, False)
                await asyncio.sleep(delay)
                delay = min(RECONNECT_MAX, delay * 2)
                continue
            delay = RECONNECT_MIN
            if sweep:
                swept = time.monotonic()
            self._on_web(self._mark_ready, True)
            if changes:
                self._on_web(self._changes.put_nowait, changes)
            if not tail.behind:
                await self._wait_doorbell(self._interval - (time.monotonic() - swept))

    async def _wait_doorbell(self, timeout: float) -> None:
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(max(0.0, timeout)):
                await self._doorbell.wait()
        self._doorbell.clear()

    async def _ring(self, table: str) -> None:
        """On the runtime loop: a live query on `table` whose notifications only say that
        something committed on this node, so that the feed is read now."""
        delay = RECONNECT_MIN
        while True:
            try:
                async with LiveSubscription(self._runtime.config, self.namespace, table) as notes:
                    delay = RECONNECT_MIN
                    async for _ in notes:
                        self._doorbell.set()
            except GraphError as error:
                logger.info(
                    "live %s.%s lost (%s); retrying in %.1fs", self.namespace, table, error, delay
                )
            await asyncio.sleep(delay)
            delay = min(RECONNECT_MAX, delay * 2)

    def _on_web(self, callback: Any, *args: Any) -> None:
        with contextlib.suppress(RuntimeError):  # the web loop has closed
            self._web_loop.call_soon_threadsafe(callback, *args)

    def _mark_ready(self, ready: bool) -> None:
        (self._ready.set if ready else self._ready.clear)()

    async def _publish(self) -> None:
        layer = get_channel_layer()
        assert layer is not None, "CHANNEL_LAYERS must be configured"
        seq = 0
        while True:
            changes = await self._changes.get()
            while len(changes) < BATCH and not self._changes.empty():
                changes += self._changes.get_nowait()
            for start in range(0, len(changes), BATCH):
                seq += 1
                batch = [change_json(change) for change in changes[start : start + BATCH]]
                event: ChangesEvent = {
                    "type": "graph.changes",
                    "seq": seq,
                    "changes": batch,
                    "at": _now(),
                }
                await self._send(layer, event)

    async def _send(self, layer: BaseChannelLayer, event: ChangesEvent) -> None:
        delay = RECONNECT_MIN
        while True:
            try:
                await layer.group_send(self.group, event)
                return
            except Exception as error:  # the channel layer's server (Redis) is down
                # Keep the batch and the order: sockets ignore a number they had, and
                # those that lost their channel meanwhile reconnect and replay.
                logger.warning("live %s: publishing failed (%s)", self.namespace, error)
                await asyncio.sleep(delay)
                delay = min(RECONNECT_MAX, delay * 2)


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


def change_json(change: Change) -> ChangeJson:
    """A change as browsers get it. The versionstamp is a string: it is above 2**53, which
    JavaScript numbers cannot hold exactly."""
    return ChangeJson(
        action=change.action,
        table=change.table,
        record=change.record,
        data=to_json(change.data),
        versionstamp=None if change.versionstamp is None else str(change.versionstamp),
    )


def live_payload(change: ChangeJson) -> ChangeMessage:
    return {"type": "change", **change}


def _now() -> str:
    return datetime.now(UTC).isoformat()
