"""The tenants' indexes as this process reads them (the most recently searched, as many
as `CoreConfig.search_tenants`), brought up to date before each use: by running a pass
here when no indexer runs on this machine, else by taking up what the indexer last
committed (waiting for it to pass the present moment when the caller must read its own
writes).
"""

from __future__ import annotations

import asyncio
import logging
import os
import threading
from collections import OrderedDict
from datetime import datetime
from pathlib import Path

from kgapp.graph import live
from kgapp.graph.config import core_config
from kgapp.graph.index import directories, indexer
from kgapp.graph.index.entities import EntityIndex
from kgapp.graph.index.facts import FactIndex
from kgapp.graph.store import TenantStore

log = logging.getLogger(__name__)

FRESH_WAIT = 10.0  # seconds a reader waits for the indexer to pass the present


class TenantIndex:
    """A tenant's fact and entity indexes, as of the manifest last read."""

    def __init__(self, directory: Path, namespace: str) -> None:
        self.directory, self.namespace = directory, namespace
        self.manifest: directories.Manifest | None = None
        self.facts, self.entities = FactIndex(None), EntityIndex(None)
        self._stamp: tuple[int, int, int] | None = None
        self._lock = threading.Lock()

    def refresh(self) -> None:
        try:
            found = os.stat(self.directory / directories.MANIFEST)
        except FileNotFoundError:
            return
        stamp = (found.st_ino, found.st_mtime_ns, found.st_size)
        with self._lock:
            if stamp == self._stamp:
                return
            manifest = directories.read_manifest(self.directory, self.namespace)
            if manifest is None or not manifest.trusted:  # the indexer rebuilds it
                return
            try:
                if self.manifest is None or manifest.build != self.manifest.build:
                    build = self.directory / manifest.build
                    self.facts = FactIndex(build / "relates_to")
                    self.entities = EntityIndex(build / "entity")
                self.facts.update(manifest.table("relates_to"))
                self.entities.update(manifest.table("entity"))
            except (OSError, ValueError) as error:  # rebuilt meanwhile: next time
                log.info("search index of %s: %s", self.namespace, error)
                return
            self.manifest, self._stamp = manifest, stamp

    def applied(self) -> datetime | None:
        manifest = directories.read_manifest(self.directory, self.namespace)
        return datetime.fromisoformat(manifest.applied) if manifest and manifest.applied else None


_readers: OrderedDict[str, TenantIndex] = OrderedDict()
_readers_lock = threading.Lock()


async def tenant_index(store: TenantStore, *, fresh: bool = False) -> TenantIndex:
    """The store's tenant's indexes, up to date: with everything committed before this
    call when no indexer runs here or when `fresh`; else as the indexer last left them
    (within about a second)."""
    base = directories.root()
    directory = directories.tenant_dir(store.namespace, base)
    elsewhere = directories.indexer_running(base)
    if not elsewhere:
        await indexer.sync(store, base)
    with _readers_lock:
        reader = _readers.pop(str(directory), None) or TenantIndex(directory, store.namespace or "")
        _readers[str(directory)] = reader
        while len(_readers) > core_config().search_tenants:
            _readers.popitem(last=False)
    if fresh and elsewhere:
        await _caught_up(store, reader)
    reader.refresh()
    return reader


async def _caught_up(store: TenantStore, reader: TenantIndex) -> None:
    """Wait until the indexer's last pass began after now (FRESH_WAIT at most)."""
    now = await live.server_now(store)
    deadline = asyncio.get_running_loop().time() + FRESH_WAIT
    while (applied := reader.applied()) is None or applied < now:
        if asyncio.get_running_loop().time() > deadline:
            log.warning("search index of %s: the indexer is behind", reader.namespace)
            return
        await asyncio.sleep(0.02)


async def fact_index(store: TenantStore, *, fresh: bool = False) -> FactIndex:
    return (await tenant_index(store, fresh=fresh)).facts


async def entity_index(store: TenantStore, *, fresh: bool = False) -> EntityIndex:
    return (await tenant_index(store, fresh=fresh)).entities
