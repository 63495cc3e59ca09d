"""Live queries (LIVE SELECT) on one table of one namespace, as an async stream of changes.

A live query belongs to the connection that opened it, so each subscription has a
connection of its own, outside the query pool. LIVE SELECT only reports what commits
while it is open; callers that must not miss changes reconnect and replay the table's
CHANGEFEED (the explorer does).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from kgapp.graph import queries
from kgapp.graph.errors import GraphError, GraphUnavailable
from kgapp.graph.store import (
    Connection,
    StoreConfig,
    TenantStore,
    check_response,
    open_connection,
)

# How often a quiet subscription checks that its socket is still alive.
_WATCH_INTERVAL = 1.0
# A watcher that missed more than this reloads its view instead of replaying.
REPLAY_MOST = 5000


@dataclass(frozen=True)
class Change:
    action: str  # CREATE | UPDATE | DELETE
    table: str
    record: str  # "table:key"
    data: dict[str, Any]
    versionstamp: int | None = None  # set on changes replayed from a change feed


class LiveSubscription:
    """`async with LiveSubscription(...) as changes: async for change in changes: ...`

    Iteration raises GraphUnavailable when the connection drops; open a new one.
    """

    def __init__(self, config: StoreConfig, namespace: str, table: str):
        self._config = config
        self._namespace = queries.check_namespace(namespace)
        self._table = queries.check_table(table, queries.LIVE_TABLES)
        self._connection: Connection | None = None
        self._queue: asyncio.Queue[dict[str, Any]] | None = None
        self._live_id: Any = None

    async def __aenter__(self) -> LiveSubscription:
        self._connection = await open_connection(self._config, self._namespace)
        try:
            response = await self._connection.query_raw(queries.live_select(self._table), {})
            self._live_id = check_response(response)[-1]
        except BaseException:
            await self._connection.close()
            raise
        self._queue = await self._connection.subscribe_notifications(str(self._live_id))
        return self

    async def __aexit__(self, *exc: object) -> None:
        connection, self._connection = self._connection, None
        if connection is None:
            return
        with contextlib.suppress(Exception):
            if not connection.closed:
                async with asyncio.timeout(2):
                    await connection.query_raw(queries.KILL_LIVE, {"id": self._live_id})
        with contextlib.suppress(Exception):
            await connection.close()

    def __aiter__(self) -> AsyncIterator[Change]:
        return self._changes()

    async def _changes(self) -> AsyncIterator[Change]:
        assert self._queue is not None and self._connection is not None
        while True:
            if self._queue.empty() and self._connection.closed:
                raise GraphUnavailable("live connection to SurrealDB lost")
            try:
                note = await asyncio.wait_for(self._queue.get(), _WATCH_INTERVAL)
            except TimeoutError:
                continue
            yield to_change(self._table, note)


def to_change(table: str, note: dict[str, Any]) -> Change:
    data = note.get("result")
    record = note.get("record")
    if record is None and isinstance(data, dict):
        record = data.get("id")
    return Change(
        action=str(note.get("action", "")).upper(),
        table=table,
        record=str(record),
        data=_shown(data),
    )


def _shown(data: Any) -> dict[str, Any]:
    """A record as watchers get it: without its vectors (kilobytes nobody draws)."""
    if not isinstance(data, dict):
        return {}
    return {k: v for k, v in data.items() if not k.endswith("_embedding")}


class ReplayTooLong(GraphError):
    """More changes were missed than a replay sends: reload instead."""


FEED_PAGE = 500  # change-feed entries read per round trip


async def changes_since(
    store: TenantStore,
    since: datetime,
    tables: Iterable[str] = queries.LIVE_TABLES,
    *,
    most: int = REPLAY_MOST,
) -> list[Change]:
    """What the tables' change feeds recorded from `since` on, in commit order, as the
    changes a live watcher would have seen (an update carries the whole record)."""
    found: list[Change] = []
    for table in sorted(queries.check_table(t, queries.LIVE_TABLES) for t in tables):
        cursor: int | datetime = since
        while True:
            entries = await store.query_one(queries.changes_since(table, cursor, FEED_PAGE)) or []
            for entry in entries:
                stamp = int(entry["versionstamp"])
                for change in entry.get("changes") or []:
                    replayed = _from_feed(table, change, stamp)
                    if replayed is not None:
                        found.append(replayed)
                cursor = stamp + 1
            if len(found) > most:
                raise ReplayTooLong(f"more than {most} changes since {since.isoformat()}")
            if len(entries) < FEED_PAGE:
                break
    found.sort(key=lambda c: c.versionstamp or 0)
    return found


def _from_feed(table: str, change: dict[str, Any], stamp: int) -> Change | None:
    if isinstance(change.get("delete"), dict):
        gone = change["delete"]
        return Change("DELETE", table, str(gone.get("id")), _shown(gone), stamp)
    current = change.get("current")
    if not isinstance(current, dict):
        current = change.get("update")
    if isinstance(current, dict) and "id" in current:
        return Change("UPDATE", table, str(current["id"]), _shown(current), stamp)
    return None  # a schema change
