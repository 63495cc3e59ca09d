"""Keeps a tenant's search index up to date with its database: one pass applies what
the change feed recorded since the last (or rebuilds the index when there is none, or
the namespace was made again), commits, and writes the manifest.

One process writes a tenant's index at a time (`directories.writer_lock`). On a machine
that runs the indexer (`manage.py search_indexer`, `Indexer`), it is the only writer and
every other process only reads. Without one (tests, a single process), each process
that searches runs a pass first (`sync`), so it reads what it wrote.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import os
import shutil
import time
from collections import OrderedDict
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timedelta
from pathlib import Path
from typing import IO, Any

from kgapp.graph import live, queries
from kgapp.graph.errors import GraphError
from kgapp.graph.index import directories
from kgapp.graph.index import vectors as nearest_vectors
from kgapp.graph.index.directories import Manifest
from kgapp.graph.index.entities import ENTITIES
from kgapp.graph.index.facts import FACTS
from kgapp.graph.index.table import TableSpec
from kgapp.graph.index.writer import TableWriter
from kgapp.graph.records import record_key
from kgapp.graph.store import TenantStore

log = logging.getLogger(__name__)

TABLES: tuple[TableSpec, ...] = (FACTS, ENTITIES)
FEED_LOOKBACK = 1.0  # seconds: commits visible late are read again (live.FeedTail)
# A pass reads back FEED_LOOKBACK at most this often: a commit seen a millisecond late
# (live.py) is still read back in time, and passes close together (an episode every
# 100 ms) do not each read the last second's changes again.
SWEEP_EVERY = FEED_LOOKBACK / 2
# Whatever commits after a rebuild's read has a later versionstamp; the margin covers the
# engine's coarse mapping of times to versionstamps (re-reads change nothing).
CURSOR_MARGIN = timedelta(seconds=10)
# The graph tables keep their changefeed for a day (schema/0001): an index whose cursor
# is older than this is rebuilt rather than trust a trimmed feed.
STALE_CURSOR = timedelta(hours=20)
REBUILD_PAGE = 1000  # records read per round trip while rebuilding
# The indexer commits tantivy (a dozen synced files a table) when the tail of text put
# since its last commit (tail.py) is this old or this long, or when a pass finds
# nothing new; the passes between publish the tail for readers. Elsewhere (`sync`)
# every pass commits.
CHECKPOINT_EVERY = 2.0  # seconds
CHECKPOINT_ENTRIES = 2000
INLINE_WAIT = 60.0  # seconds a process waits for another's pass before reading as is


class TenantWriter:
    """One tenant's index as its writer holds it between passes."""

    def __init__(
        self, directory: Path, namespace: str, *, threads: int = 0, checkpoint_every: float = 0
    ) -> None:
        self.directory, self.namespace, self.threads = directory, namespace, threads
        self.checkpoint_every = checkpoint_every  # 0: every pass commits tantivy
        self.manifest: Manifest | None = None
        self.tables: dict[str, TableWriter] = {}
        self.tail: live.FeedTail | None = None
        self.swept = -math.inf  # when a pass last read back (time.monotonic)
        # When a pass first committed without syncing since the last that synced (a
        # tail published); -inf: the next pass must sync.
        self.unsynced_since: float | None = None

    async def run_pass(self, store: TenantStore) -> Manifest:
        # The feed's first page is asked for with the state, one round trip, when the
        # index is open; it is used only if the index needs no rebuild and no other
        # process wrote it since.
        sweep = time.monotonic() - self.swept >= SWEEP_EVERY
        first: list[Any] | None = None
        if self.tail is None:
            epoch, now = await store.query(queries.SEARCH_INDEX_STATE)
        else:
            start = self.tail.start(sweep=sweep)
            sql = queries.SEARCH_INDEX_STATE + queries.feed_since(start, live.FEED_PAGE)
            epoch, now, first = await store.query(sql)
            first = first or []
        epoch = str(epoch)
        on_disk = directories.read_manifest(self.directory, self.namespace)
        if (
            on_disk is None
            or on_disk.epoch != epoch
            or _stale(on_disk, now)
            or not on_disk.trusted
            or not (self.directory / on_disk.build).is_dir()
        ):
            return await self.rebuild(store, epoch, now, on_disk)
        if self.manifest is None or on_disk.generation != self.manifest.generation:
            try:
                self._open(on_disk)  # another process wrote since: start from the disk
            except (OSError, ValueError) as error:  # its tail lost: rebuilt
                log.warning("search index of %s: %s", self.namespace, error)
                return await self.rebuild(store, epoch, now, on_disk)
            first = None
        assert self.manifest is not None and self.tail is not None
        changed = await self._follow(store, sweep, first)
        return self._commit(now, changed)

    async def rebuild(
        self, store: TenantStore, epoch: str, now: datetime, previous: Manifest | None
    ) -> Manifest:
        """A new index of every record, in a new build directory; the old one is removed
        once the manifest names the new."""
        self.close()
        build = f"b{int(time.time() * 1000)}-{os.getpid()}"
        generation = previous.generation + 1 if previous else 1
        self.manifest = Manifest(self.namespace, epoch, build, generation=generation)
        self.tables = {
            spec.table: TableWriter(
                self.directory / build / spec.table, spec, directories.TableState()
            )
            for spec in TABLES
        }
        start = now - CURSOR_MARGIN
        self.tail = live.FeedTail(start, FEED_LOOKBACK, _TABLE_NAMES, vectors=True)
        self.unsynced_since = -math.inf
        for spec in TABLES:
            await self._read_all(store, spec)
        self.manifest.cursor = live.position(start)
        manifest = self._commit(now, True)
        for old in self.directory.iterdir():
            if old.is_dir() and old.name != build:
                shutil.rmtree(old, ignore_errors=True)
        return manifest

    async def _read_all(self, store: TenantStore, spec: TableSpec) -> None:
        """Every record of the table, a page at a time, the next page read while this one
        is written; with more than EXACT_ROWS, each page's vectors go into the graph in a
        thread meanwhile."""
        writer = self.tables[spec.table]
        ids = await store.query_one(spec.ids) or []
        pages = [ids[first : first + REBUILD_PAGE] for first in range(0, len(ids), REBUILD_PAGE)]
        reading = None
        if pages:
            reading = asyncio.ensure_future(store.query_one(spec.rows, {"ids": pages[0]}))
        graphing: asyncio.Future[None] | None = None
        try:
            for number in range(len(pages)):
                assert reading is not None
                rows, reading = await reading, None
                if number + 1 < len(pages):
                    page = {"ids": pages[number + 1]}
                    reading = asyncio.ensure_future(store.query_one(spec.rows, page))
                if graphing is not None:
                    await graphing
                written = [writer.put(row) for row in rows or []]
                del rows
                if len(ids) > nearest_vectors.EXACT_ROWS:
                    graphing = asyncio.ensure_future(
                        asyncio.to_thread(writer.graph_rows, written, self.threads)
                    )
            if graphing is not None:
                await graphing
        finally:
            if reading is not None:
                reading.cancel()

    def _open(self, manifest: Manifest) -> None:
        self.close()
        self.manifest = manifest
        build = self.directory / manifest.build
        self.tables = {
            spec.table: TableWriter(build / spec.table, spec, manifest.table(spec.table))
            for spec in TABLES
        }
        # From a little before the cursor: re-applying a change changes nothing.
        cursor = manifest.cursor or 0
        start = max(0, cursor - (int(FEED_LOOKBACK * 1000) << 16))
        self.tail = live.FeedTail(start, FEED_LOOKBACK, _TABLE_NAMES, vectors=True)
        # A tail it names is in tantivy again, uncommitted: the first pass commits it.
        self.unsynced_since = None if manifest.synced else -math.inf

    async def _follow(self, store: TenantStore, sweep: bool, first: list[Any] | None) -> bool:
        """Apply the feed: the look back if `sweep` (at most every SWEEP_EVERY), then on
        while behind; `first` is the first page of that, if read already."""
        assert self.tail is not None
        changed = False
        if sweep:
            self.swept = time.monotonic()
        while True:
            for change in await self.tail.read(store, sweep=sweep, first=first):
                writer = self.tables[change.table]
                if change.action == "DELETE":
                    writer.delete(record_key(change.record))
                else:
                    writer.put(change.data)
                changed = True
            if not self.tail.behind:
                return changed
            sweep, first = False, None

    def _commit(self, now: datetime, changed: bool) -> Manifest:
        assert self.manifest is not None and self.tail is not None
        manifest = self.manifest
        durable = self._durable(changed)
        if changed or durable:
            manifest.generation += 1

            def commit(writer: TableWriter) -> directories.TableState:
                return writer.commit(manifest.generation, durable=durable, threads=self.threads)

            if durable:  # side by side: each table's commit waits mostly on the disk
                with ThreadPoolExecutor(len(self.tables)) as pool:
                    states = list(pool.map(commit, self.tables.values()))
            else:
                states = [commit(writer) for writer in self.tables.values()]
            manifest.tables.update(zip(self.tables, states, strict=True))
        if isinstance(self.tail.cursor, int):
            manifest.cursor = self.tail.cursor
        manifest.applied = now.isoformat()
        manifest.synced = self.unsynced_since is None
        directories.write_manifest(self.directory, manifest)
        return manifest

    def _durable(self, changed: bool) -> bool:
        """Whether this pass commits tantivy and syncs the columns: when what it
        published without that is due (CHECKPOINT_EVERY, CHECKPOINT_ENTRIES), or the
        pass found nothing new."""
        if not changed and self.unsynced_since is None:
            return False
        now = time.monotonic()
        if self.unsynced_since is None:
            self.unsynced_since = now
        entries = sum(writer.tail_entries for writer in self.tables.values())
        due = (
            not changed
            or self.checkpoint_every <= 0
            or now - self.unsynced_since >= self.checkpoint_every
            or entries >= CHECKPOINT_ENTRIES
        )
        if due:
            self.unsynced_since = None
        return due

    def checkpoint(self) -> None:
        """Commit and sync what passes published without (a writer that stops)."""
        if self.manifest is not None and self.unsynced_since is not None:
            self._commit(datetime.fromisoformat(self.manifest.applied), False)

    def close(self) -> None:
        for writer in self.tables.values():
            writer.close()
        self.tables = {}
        self.manifest = None


_TABLE_NAMES = frozenset(spec.table for spec in TABLES)


def _stale(manifest: Manifest, now: datetime) -> bool:
    if manifest.cursor is None:
        return True
    written = datetime.fromtimestamp((manifest.cursor >> 16) / 1000, tz=now.tzinfo)
    return now - written > STALE_CURSOR


# --- without an indexer: each process keeps what it reads up to date -------------------

_inline: OrderedDict[str, TenantWriter] = OrderedDict()
_INLINE_TENANTS = 4


async def sync(store: TenantStore, base: Path | None = None) -> None:
    """Run one pass for the store's tenant in this process, under the tenant's writer
    lock (waiting for another process's pass to end)."""
    namespace = store.namespace or ""
    directory = directories.tenant_dir(namespace, base)
    handle = await _lock(directory, INLINE_WAIT)
    if handle is None:
        log.warning("search index of %s: another process kept it locked", namespace)
        return
    try:
        writer = _inline.pop(str(directory), None) or TenantWriter(directory, namespace)
        try:
            await writer.run_pass(store)
        except BaseException:
            writer.close()
            raise
        finally:
            for table in writer.tables.values():
                table.text.close()  # tantivy's own lock: another process may write next
        _inline[str(directory)] = writer
        while len(_inline) > _INLINE_TENANTS:
            _inline.popitem(last=False)[1].close()
    finally:
        directories.release(handle)


async def _lock(directory: Path, wait: float) -> IO[str] | None:
    deadline = time.monotonic() + wait
    while (handle := directories.try_writer_lock(directory)) is None:
        if time.monotonic() >= deadline:
            return None
        await asyncio.sleep(0.01)
    return handle


# --- the indexer process ------------------------------------------------------------------


class Indexer:
    """This machine's indexer: passes over every tenant `stores()` names, every `poll`
    seconds, holding each tenant's writer lock for good."""

    def __init__(
        self,
        stores: Callable[[], dict[str, TenantStore]],
        base: Path | None = None,
        *,
        poll: float = 0.2,
        threads: int = 0,
        checkpoint_every: float = CHECKPOINT_EVERY,
    ) -> None:
        self.stores, self.base, self.poll, self.threads = stores, base, poll, threads
        self.checkpoint_every = checkpoint_every
        self.writers: dict[str, tuple[TenantWriter, IO[str]]] = {}

    async def run(self, stop: asyncio.Event) -> None:
        handle = directories.hold_indexer_lock(self.base)
        try:
            while not stop.is_set():
                started = time.monotonic()
                await self.run_once()
                delay = self.poll - (time.monotonic() - started)
                if delay > 0:
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(stop.wait(), delay)
        finally:
            self.close()
            handle.close()

    def close(self) -> None:
        """Commit what each tenant's writer published without syncing, then let go of
        every writer and lock."""
        for namespace in list(self.writers):
            try:
                self.writers[namespace][0].checkpoint()
            except OSError as error:  # its tail stays, committed by the next writer
                log.warning("search index of %s: %s", namespace, error)
            self._drop(namespace)

    async def run_once(self) -> None:
        stores = self.stores()
        for namespace in list(self.writers.keys() - stores.keys()):
            self._drop(namespace)
            directories.remove(namespace, self.base)  # the tenant is gone
        for namespace, store in stores.items():
            try:
                writer = await self._writer(namespace)
                if writer is not None:
                    await writer.run_pass(store)
            except (GraphError, OSError) as error:
                log.warning("search index of %s: %s", namespace, error)
                self._drop(namespace)  # opened again from the disk next time

    async def _writer(self, namespace: str) -> TenantWriter | None:
        found = self.writers.get(namespace)
        if found is None:
            directory = directories.tenant_dir(namespace, self.base)
            handle = await _lock(directory, INLINE_WAIT)
            if handle is None:  # a process's pass that does not end
                log.warning("search index of %s stays locked", namespace)
                return None
            writer = TenantWriter(
                directory, namespace, threads=self.threads, checkpoint_every=self.checkpoint_every
            )
            found = self.writers[namespace] = (writer, handle)
        return found[0]

    def _drop(self, namespace: str) -> None:
        writer, handle = self.writers.pop(namespace)
        writer.close()
        directories.release(handle)
