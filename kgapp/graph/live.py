"""Live queries (LIVE SELECT) on one table of one namespace, as an async stream of changes.

A live query belongs to the connection that opened it, so each subscription has a
connection of its own, outside the query pool. LIVE SELECT only reports what commits
while it is open; callers that must not miss changes reconnect and replay the table's
CHANGEFEED (the explorer does).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

from kgapp.graph import queries
from kgapp.graph.errors import GraphUnavailable
from kgapp.graph.store import Connection, StoreConfig, check_response, open_connection

# How often a quiet subscription checks that its socket is still alive.
_WATCH_INTERVAL = 1.0


@dataclass(frozen=True)
class Change:
    action: str  # CREATE | UPDATE | DELETE
    table: str
    record: str  # "table:key"
    data: dict[str, Any]


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
        data=data if isinstance(data, dict) else {},
    )
