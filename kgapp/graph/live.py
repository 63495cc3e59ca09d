"""A namespace's graph changes as they commit: its change feed, followed, and LIVE SELECT.

The change feed (`SHOW CHANGES FOR DATABASE`) is the source of truth. It records every
commit of a CHANGEFEED table, whichever server node took the write, under a versionstamp
that orders it; a LIVE SELECT only hears the writes of the node it was opened on
(distributed live queries are not in SurrealDB's community edition). So watchers are fed
from the feed (`FeedTail`), and a live query only rings a doorbell that says "read the
feed now" (`LiveSubscription`): on one node it cuts the wait, and it never delivers a
change itself, so nothing reaches a watcher twice.

Facts about SurrealDB 3.0.2 this relies on (docs/surrealdb-notes.md):
- a versionstamp is a hybrid clock (milliseconds << 16 | counter), one per transaction,
  the same for every table the transaction wrote;
- LIMIT counts keys, one per table per versionstamp, and the engine caps it at 1000; a
  page that ends on a full LIMIT may have cut its last versionstamp in two;
- the versionstamp is minted just before the commit, so a transaction can become
  visible after one with a higher versionstamp was read (4 and 8 of 3,600 concurrent
  transactions in a run on mem:// and rocksdb://, all within a millisecond).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections import deque
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any, TypedDict

from surrealdb.data.types.record_id import RecordID

from kgapp.graph import queries
from kgapp.graph.errors import GraphError, GraphUnavailable
from kgapp.graph.records import JsonObject
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
# Keys (one per table per versionstamp) one SHOW CHANGES returns at most (3.0.2's cap).
FEED_PAGE = 1000

Cursor = int | datetime  # a versionstamp, or a server time before the first one


@dataclass(frozen=True)
class Change:
    action: str  # CREATE | UPDATE | DELETE
    table: str
    record: str  # "table:key"
    data: JsonObject  # the record's fields as stored: a row of any watched table
    versionstamp: int | None = None  # the commit's place in the change feed


class _FeedChange(TypedDict, total=False):
    """One table's change in a feed entry, as SHOW CHANGES (INCLUDE ORIGINAL) gives it:
    each value is what the engine wrote (a table's definition, a record, a patch),
    checked before it is read."""

    define_table: object
    delete: object
    current: object
    update: object


class _FeedRow(TypedDict, total=False):
    """One entry of the change feed: a transaction's changes, by versionstamp."""

    versionstamp: int
    changes: list[_FeedChange]


class ReplayTooLong(GraphError):
    """More changes were missed than a replay sends: reload instead."""


# --- the change feed -------------------------------------------------------------------


@dataclass(frozen=True)
class FeedEntry:
    versionstamp: int
    changes: tuple[Change, ...]  # of the watched tables only; may be empty


@dataclass(frozen=True)
class FeedRead:
    entries: list[FeedEntry]
    cursor: Cursor  # where to read next
    more: bool  # stopped at its budget, not at the feed's end


async def read_feed(
    store: TenantStore,
    since: Cursor,
    tables: frozenset[str] = queries.LIVE_TABLES,
    *,
    most: int = REPLAY_MOST,
    vectors: bool = False,
    first: list[Any] | None = None,
) -> FeedRead:
    """Whole feed entries from `since` on, in versionstamp order.

    Stops after the page in which `most` changes were passed. An entry is never split:
    a full page holds back its last versionstamp, which the next page starts with.
    Records come without their `*_embedding` vectors unless `vectors`. `first`: the
    first page, read already (`queries.feed_since(since, FEED_PAGE)`, sent with another
    query).
    """
    entries: list[FeedEntry] = []
    found = 0
    cursor = since
    while True:
        if first is not None:
            page, first = first, None
        else:
            page = await store.query_one(queries.feed_since(cursor, FEED_PAGE)) or []
        full = sum(_keys(entry) for entry in page) >= FEED_PAGE and len(page) > 1
        if full:
            page = page[:-1]
        for raw in page:
            entry = _entry(raw, tables, vectors)
            entries.append(entry)
            found += len(entry.changes)
            cursor = entry.versionstamp + 1
        if not full or found >= most:
            return FeedRead(entries, cursor, more=full)


async def changes_since(
    store: TenantStore,
    since: int,
    tables: frozenset[str] = queries.LIVE_TABLES,
    *,
    most: int = REPLAY_MOST,
) -> list[Change]:
    """What the feed recorded after versionstamp `since`, as a watcher would have got it.

    Raises ReplayTooLong when that is more than `most` changes."""
    read = await read_feed(store, since + 1, tables, most=most + 1)
    changes = [change for entry in read.entries for change in entry.changes]
    if len(changes) > most:
        raise ReplayTooLong(f"more than {most} changes after versionstamp {since}")
    return changes


async def server_now(store: TenantStore) -> datetime:
    """The server's clock: a feed cursor before anything committed from now on."""
    now = await store.query_one(queries.SERVER_NOW)
    if not isinstance(now, datetime):
        raise GraphError(f"time::now() answered {now!r}")
    return now


def position(cursor: Cursor) -> int:
    """The versionstamp just before `cursor`: the replay cursor of a watcher that has had
    everything before it. A time maps to its millisecond's first versionstamp, as the
    engine maps `SINCE d'...'` (a hybrid clock: milliseconds << 16 | counter)."""
    if isinstance(cursor, datetime):
        return max(0, (int(cursor.timestamp() * 1000) << 16) - 1)
    return max(0, cursor - 1)


class FeedTail:
    """Follows a namespace's change feed; each `read` gives the changes no read gave.

    `read(store)` reads from the cursor: what committed since the last read. Because a
    commit can become visible after a later versionstamp was read (see the module
    docstring), `read(store, sweep=True)` reads again from where the cursor stood
    `lookback` seconds ago and gives such late entries, once. A commit that becomes
    visible more than `lookback` after a later one was read is missed.
    """

    def __init__(
        self,
        start: Cursor,
        lookback: float,
        tables: frozenset[str] = queries.LIVE_TABLES,
        clock: Callable[[], float] = time.monotonic,
        *,
        vectors: bool = False,
    ):
        self.cursor: Cursor = start
        self._vectors = vectors
        self.lookback = lookback
        self._tables = tables
        self._clock = clock
        self._marks: deque[tuple[float, Cursor]] = deque([(clock(), start)])
        self._given: set[int] = set()  # versionstamps given, at or above the floor
        self.behind = False  # the last read stopped at its budget: read again at once

    def start(self, *, sweep: bool = False) -> Cursor:
        """Where `read(store, sweep=sweep)` reads from."""
        return self._floor() if sweep else self.cursor

    async def read(
        self, store: TenantStore, *, sweep: bool = False, first: list[Any] | None = None
    ) -> list[Change]:
        """`first`: the first page from `start(sweep=sweep)`, read already."""
        since = self.start(sweep=sweep)
        read = await read_feed(store, since, self._tables, vectors=self._vectors, first=first)
        changes: list[Change] = []
        for entry in read.entries:
            if entry.versionstamp in self._given:
                continue
            self._given.add(entry.versionstamp)
            changes.extend(entry.changes)
        after = read.cursor
        if isinstance(after, int) and (isinstance(self.cursor, datetime) or after > self.cursor):
            self.cursor = after
        self.behind = read.more
        self._mark()
        return changes

    def _floor(self) -> Cursor:
        horizon = self._clock() - self.lookback
        floor = self._marks[0][1]
        for moment, cursor in self._marks:
            if moment > horizon:
                break
            floor = cursor
        return floor

    def _mark(self) -> None:
        now = self._clock()
        self._marks.append((now, self.cursor))
        horizon = now - self.lookback
        while len(self._marks) > 1 and self._marks[1][0] <= horizon:
            self._marks.popleft()
        floor = self._marks[0][1]
        if isinstance(floor, int):
            self._given = {stamp for stamp in self._given if stamp >= floor}


def _entry(raw: _FeedRow, tables: frozenset[str], vectors: bool = False) -> FeedEntry:
    stamp = int(raw["versionstamp"])
    changes = []
    for change in raw.get("changes") or []:
        found = _from_feed(change, stamp, vectors)
        if found is not None and found.table in tables:
            changes.append(found)
    return FeedEntry(stamp, tuple(changes))


def _keys(raw: _FeedRow) -> int:
    """How many feed keys (tables) one entry was read from: what LIMIT counts."""
    return len({_table_of(change) for change in raw.get("changes") or []}) or 1


def _table_of(change: _FeedChange) -> str:
    definition = change.get("define_table")
    if isinstance(definition, dict):
        return str(definition.get("name"))
    for value in (change.get("delete"), change.get("current"), change.get("update")):
        if isinstance(value, dict) and isinstance(value.get("id"), RecordID):
            return str(value["id"].table_name)
    return ""


def _from_feed(change: _FeedChange, stamp: int, vectors: bool = False) -> Change | None:
    """A feed change as a watcher gets it. With INCLUDE ORIGINAL (every watched table) a
    create is `{update: record}` and an update `{current: record, update: patch}`."""
    gone = change.get("delete")
    if isinstance(gone, dict):
        return Change("DELETE", _table_of(change), str(gone.get("id")), _shown(gone), stamp)
    shown = dict if vectors else _shown
    current = change.get("current")
    action = "UPDATE"
    if not isinstance(current, dict):
        current, action = change.get("update"), "CREATE"
    if isinstance(current, dict) and isinstance(current.get("id"), RecordID):
        return Change(action, _table_of(change), str(current["id"]), shown(current), stamp)
    return None  # a schema change


def _shown(data: Any) -> JsonObject:  # a row of any watched table (Change.data)
    """A record as watchers get it: without its vectors (kilobytes nobody draws)."""
    if not isinstance(data, dict):
        return {}
    return {k: v for k, v in data.items() if not k.endswith("_embedding")}


# --- LIVE SELECT -------------------------------------------------------------------------


class LiveSubscription:
    """`async with LiveSubscription(...) as changes: async for change in changes: ...`

    A live query belongs to the connection that opened it, so each subscription has a
    connection of its own, outside the query pool. LIVE SELECT only reports what commits
    on this server node while it is open. Iteration raises GraphUnavailable when the
    connection drops; open a new one.
    """

    def __init__(self, config: StoreConfig, namespace: str, table: str):
        self._config = config
        self._namespace = queries.check_namespace(namespace)
        self._table = queries.check_table(table, queries.LIVE_TABLES)
        self._connection: Connection | None = None
        self._queue: asyncio.Queue[JsonObject] | None = None  # the SDK's notifications
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


def to_change(table: str, note: JsonObject) -> Change:  # a notification, as the SDK gives it
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
