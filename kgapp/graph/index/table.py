"""One table's rows held in the process (SearchIndex): kept up to date with the database
by following its change feed, and ranked by BM25 and by cosine."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable, Sequence
from datetime import timedelta
from typing import Any, ClassVar

import numpy as np

from kgapp.graph import live, queries
from kgapp.graph.index.analyzer import terms
from kgapp.graph.index.columns import Column
from kgapp.graph.index.postings import Postings
from kgapp.graph.records import record_key
from kgapp.graph.store import TenantStore

FEED_LOOKBACK = 1.0  # seconds: commits visible late are read again (live.FeedTail)
CURSOR_MARGIN = timedelta(seconds=10)
# The graph tables keep their changefeed for a day (schema/0001): a copy left idle
# longer than this loads everything again rather than trust a trimmed feed.
IDLE_RELOAD = 20 * 3600.0
# Start a fresh copy once this share of the rows are superseded text or deleted.
REBUILD_DEAD_SHARE = 0.25


class SearchIndex:
    """Rows of one table: BM25 per text field, a vector per row, and subclass columns.

    A row is addressed by position; a record whose text changes gets a new position
    (the old one is marked dead), anything else is updated in place.
    """

    table: ClassVar[str]
    text_fields: ClassVar[tuple[str, ...]]
    vector_field: ClassVar[str]
    load_all: ClassVar[str]

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.epoch: Any = None
        self.tail: live.FeedTail | None = None  # follows the change feed once loaded
        self.refreshed = 0.0
        self._reset()

    def _reset(self) -> None:
        self.keys: list[str] = []
        self.positions: dict[str, int] = {}
        self.postings = {name: Postings() for name in self.text_fields}
        self.vectors = Column(np.float32)
        self.has_vector = Column(np.bool_, False)
        self.alive = Column(np.bool_, False)
        self._text_hashes: dict[str, int] = {}
        self.dead = 0

    # --- keeping up with the database ------------------------------------------------

    async def refresh(self, store: TenantStore) -> None:
        """Apply what was committed since the last refresh (or load everything).

        The database's change feed is followed as the live hub follows it (live.FeedTail):
        whole entries, and a look back for commits that became visible late."""
        if self.tail is None or time.monotonic() - self.refreshed > IDLE_RELOAD:
            await self._load(store)
            return
        epoch = await store.query_one(queries.SEARCH_INDEX_EPOCH)
        if epoch != self.epoch or self._worn_out():
            await self._load(store)
            return
        sweep = True  # once: the look back; then on from the cursor while behind
        while True:
            self._take(await self.tail.read(store, sweep=sweep))
            if not self.tail.behind:
                break
            sweep = False
        self.refreshed = time.monotonic()

    async def _load(self, store: TenantStore) -> None:
        epoch, now, rows = await store.query(queries.SEARCH_INDEX_STATE + self.load_all)
        with self.lock:
            self._reset()
            self.epoch = epoch
            for row in rows or []:
                self._apply(row)
            # Whatever commits after the read has a later versionstamp; the margin covers
            # the engine's coarse mapping of times to versionstamps (re-reads are no-ops).
            self.tail = live.FeedTail(
                now - CURSOR_MARGIN, FEED_LOOKBACK, frozenset({self.table}), vectors=True
            )
            self.refreshed = time.monotonic()

    def _take(self, changes: list[live.Change]) -> None:
        """Apply the table's changes in commit order: creates, updates and deletes."""
        with self.lock:
            for change in changes:
                if change.action == "DELETE":
                    self._forget(record_key(change.record))
                else:
                    self._apply(change.data)

    def _worn_out(self) -> bool:
        return self.dead > 1000 and self.dead > REBUILD_DEAD_SHARE * len(self.keys)

    def _apply(self, row: dict[str, Any]) -> None:
        key = record_key(row["id"])
        texts = tuple(str(row.get(name) or "") for name in self.text_fields)
        position = self.positions.get(key)
        if position is not None and self._text_hashes[key] != hash(texts):
            self._kill(position)
            position = None
        if position is None:
            position = len(self.keys)
            self.keys.append(key)
            self.positions[key] = position
            self._text_hashes[key] = hash(texts)
            for name, text in zip(self.text_fields, texts, strict=True):
                self.postings[name].add(position, text)
            self._grow(position + 1)
        vector = row.get(self.vector_field)
        if vector:
            unit = np.asarray(vector, dtype=np.float32)
            self.vectors.ensure(position + 1, len(unit))
            if len(unit) == self.vectors.width:  # a vector of another model: unsearchable
                norm = float(np.linalg.norm(unit)) or 1.0
                self.vectors.data[position] = unit / norm
                self.has_vector.data[position] = True
        self.alive.data[position] = self._columns(position, row)

    def _grow(self, size: int) -> None:
        self.vectors.ensure(size)
        self.has_vector.ensure(size)
        self.alive.ensure(size)

    def _kill(self, position: int) -> None:
        self.alive.data[position] = False
        self.dead += 1

    def forget(self, keys: Iterable[str]) -> None:
        """Records that no longer exist (read back as nothing)."""
        with self.lock:
            for key in keys:
                self._forget(key)

    def _forget(self, key: str) -> None:
        position = self.positions.pop(key, None)
        if position is not None:
            self._kill(position)

    def _columns(self, position: int, row: dict[str, Any]) -> bool:
        """Store the subclass's columns of a row; whether the row can be found."""
        raise NotImplementedError

    # --- ranking ---------------------------------------------------------------------

    def bm25(self, text: str, mask: np.ndarray, limit: int) -> list[tuple[str, float]]:
        query = terms(text)
        with self.lock:
            size = len(self.keys)
            scores = sum(
                (p.scores(query, size) for p in self.postings.values()),
                start=np.zeros(size, dtype=np.float32),
            )
            return self._top(scores, mask[:size] & (scores > 0), limit)

    def cosine(
        self, vector: Sequence[float], mask: np.ndarray, limit: int
    ) -> list[tuple[str, float]]:
        query = np.asarray(vector, dtype=np.float32)
        with self.lock:
            size = len(self.keys)
            if not size or len(query) != self.vectors.width:
                return []
            usable = mask[:size] & self.has_vector.data[:size]
            # One product over every row beats gathering the usable rows first (a copy of
            # most of the matrix): 100k x 384 floats in a few milliseconds.
            scores = self.vectors.data[:size] @ query
            return self._top(scores, usable, limit)

    def _top(self, scores: np.ndarray, usable: np.ndarray, limit: int) -> list[tuple[str, float]]:
        rows = np.flatnonzero(usable)
        if len(rows) > limit:
            rows = rows[np.argpartition(-scores[rows], limit - 1)[:limit]]
        rows = rows[np.lexsort((rows, -scores[rows]))]
        return [(self.keys[i], float(scores[i])) for i in rows]

    def vectors_of(self, keys: Iterable[str]) -> dict[str, np.ndarray]:
        """The unit vectors of those keys that have one."""
        with self.lock:
            rows = {k: self.positions.get(k) for k in keys}
            return {
                k: self.vectors.data[i].copy()
                for k, i in rows.items()
                if i is not None and self.has_vector.data[i]
            }

    def base_mask(self) -> np.ndarray:
        return self.alive.data[: len(self.keys)].copy()

    @property
    def nbytes(self) -> int:
        columns = sum(v.data.nbytes for v in vars(self).values() if isinstance(v, Column))
        return columns + sum(p.nbytes for p in self.postings.values()) + 200 * len(self.keys)
