"""In-process search indexes over one tenant's facts and entities.

SurrealDB 3.0.2 has no vector index isolated per namespace and its full-text search
reads every matching record before it can rank (tens of milliseconds at 10k facts,
docs/surrealdb-notes.md). Search therefore ranks from a copy held in the process:
BM25 postings (the `kg_text` analysis, see `analyzer`), unit vectors as one float32
matrix, and the four timestamps as int64 columns, so a point-in-time filter is a
vector comparison. The database stays the source of truth:

- every search first applies what the table's changefeed (schema/0001) recorded since
  the last one, in commit order: creates, updates (a retirement, an embedding added)
  and deletes, so a transaction that committed late is never missed;
- the ranked candidates are read back from the database, so a result is never a
  stale row, and a candidate that no longer exists is dropped from the copy;
- a namespace deleted and provisioned again has a new first migration record, which
  is the copy's epoch: a new epoch starts a new copy.
"""

from __future__ import annotations

import os
import threading
import time
from array import array
from collections import Counter, OrderedDict
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any, ClassVar

import numpy as np

from kgapp.graph import live, queries
from kgapp.graph.analyzer import terms
from kgapp.graph.records import record_key
from kgapp.graph.store import TenantStore

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
NEVER = np.iinfo(np.int64).max
FEED_LOOKBACK = 1.0  # seconds: commits visible late are read again (live.FeedTail)
CURSOR_MARGIN = timedelta(seconds=10)
# The graph tables keep their changefeed for a day (schema/0001): a copy left idle
# longer than this loads everything again rather than trust a trimmed feed.
IDLE_RELOAD = 20 * 3600.0
K1, B = 1.2, 0.75  # BM25, as SurrealDB's default
# Start a fresh copy once this share of the rows are superseded text or deleted.
REBUILD_DEAD_SHARE = 0.25


def micros(value: datetime | None) -> int:
    """A timestamp as int64 microseconds; a missing one (open interval) is NEVER."""
    if value is None:
        return int(NEVER)
    return (value - EPOCH) // timedelta(microseconds=1)


class _Column:
    """A growable one- or two-dimensional numpy array (rows appended, capacity doubled)."""

    def __init__(self, dtype: Any, fill: Any = 0, width: int = 0) -> None:
        self.dtype, self.fill, self.width = dtype, fill, width
        self.data = np.full((0, width) if width else 0, fill, dtype=dtype)

    def ensure(self, size: int, width: int = 0) -> None:
        if width and width != self.width:  # the first vector fixes the width
            self.width = width
            self.data = np.full((len(self.data), width), self.fill, dtype=self.dtype)
        if size <= len(self.data):
            return
        capacity = max(size, 2 * len(self.data), 256)
        shape = (capacity, self.width) if self.width else capacity
        grown = np.full(shape, self.fill, dtype=self.dtype)
        grown[: len(self.data)] = self.data
        self.data = grown


class Postings:
    """BM25 over one text field: term -> rows and term frequencies."""

    def __init__(self) -> None:
        self._rows: dict[str, array[int]] = {}
        self._counts: dict[str, array[int]] = {}
        self._frozen: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        self.lengths = _Column(np.float32)
        self._total_length = 0.0
        self._documents = 0
        self._entries = 0  # postings held (kept as they grow: read on every search)

    def add(self, row: int, text: str) -> None:
        counted = Counter(terms(text))
        self.lengths.ensure(row + 1)
        length = sum(counted.values())
        self.lengths.data[row] = length
        self._total_length += length
        self._documents += 1
        self._entries += len(counted)
        for term, count in counted.items():
            self._rows.setdefault(term, array("I")).append(row)
            self._counts.setdefault(term, array("H")).append(min(count, 65535))
            self._frozen.pop(term, None)

    def scores(self, query: Iterable[str], size: int) -> np.ndarray:
        """BM25 of every row for the query's terms (each counted once), 0 where none."""
        scores = np.zeros(size, dtype=np.float32)
        if not self._documents:
            return scores
        average = self._total_length / self._documents
        for term in set(query):
            if term not in self._rows:
                continue
            rows, counts = self._arrays(term)
            idf = np.log1p((self._documents - len(rows) + 0.5) / (len(rows) + 0.5))
            norm = K1 * (1 - B + B * self.lengths.data[rows] / average)
            scores[rows] += idf * counts * (K1 + 1) / (counts + norm)
        return scores

    def _arrays(self, term: str) -> tuple[np.ndarray, np.ndarray]:
        frozen = self._frozen.get(term)
        if frozen is None:
            frozen = (
                np.frombuffer(self._rows[term], dtype=np.uint32).astype(np.intp),
                np.frombuffer(self._counts[term], dtype=np.uint16).astype(np.float32),
            )
            self._frozen[term] = frozen
        return frozen

    @property
    def nbytes(self) -> int:
        return 6 * self._entries + self.lengths.data.nbytes


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
        self.vectors = _Column(np.float32)
        self.has_vector = _Column(np.bool_, False)
        self.alive = _Column(np.bool_, False)
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
        columns = sum(v.data.nbytes for v in vars(self).values() if isinstance(v, _Column))
        return columns + sum(p.nbytes for p in self.postings.values()) + 200 * len(self.keys)


class FactIndex(SearchIndex):
    table = "relates_to"
    text_fields = ("fact",)
    vector_field = "fact_embedding"
    load_all = queries.FACT_INDEX_ALL

    def _reset(self) -> None:
        super()._reset()
        self.times = {name: _Column(np.int64, NEVER) for name in _TIMES}
        self.relation = _Column(np.int32, -1)
        self.edge_type = _Column(np.int32, -1)
        self.source = _Column(np.int32, -1)
        self.target = _Column(np.int32, -1)
        self.confidence = _Column(np.float32)
        self.codes: dict[str, int] = {}
        self.ends: dict[str, int] = {}  # entity key -> code in source / target

    def _grow(self, size: int) -> None:
        super()._grow(size)
        for column in (*self.times.values(), self.relation, self.edge_type):
            column.ensure(size)
        for column in (self.source, self.target, self.confidence):
            column.ensure(size)

    def _columns(self, position: int, row: dict[str, Any]) -> bool:
        for name in _TIMES:
            self.times[name].data[position] = micros(row.get(name))
        self.relation.data[position] = self._code(str(row.get("relation") or ""))
        self.edge_type.data[position] = self._code(str(row.get("edge_type") or ""))
        for column, end in ((self.source, row.get("in")), (self.target, row.get("out"))):
            key = record_key(end) if end is not None else ""
            column.data[position] = self.ends.setdefault(key, len(self.ends))
        self.confidence.data[position] = float(row.get("confidence") or 0.0)
        return True

    def touching(
        self,
        entities: Iterable[str],
        mask: np.ndarray,
        limit: int,
        *,
        budget: int | None = None,
        per_fact: int = 0,
    ) -> list[str]:
        """Facts within `mask` with an end among `entities`: those touching most of them
        first, then the most confident, then the most recent. With a `budget`, only as
        many as could fit in it, counting each fact's words plus `per_fact` (a lower
        bound of its tokens: the caller truncates exactly afterwards)."""
        codes = [self.ends[k] for k in entities if k in self.ends]
        with self.lock:
            size = len(self.keys)
            source, target = self.source.data[:size], self.target.data[:size]
            ends = np.isin(source, codes).astype(np.int8) + np.isin(target, codes)
            rows = np.flatnonzero(mask[:size] & (ends > 0))
            order = np.lexsort(
                (
                    -self.times["valid_at"].data[rows],
                    -self.confidence.data[rows],
                    -ends[rows],
                )
            )
            chosen = rows[order[:limit]]
            if budget is not None:
                words = self.postings["fact"].lengths.data[chosen] + per_fact
                chosen = chosen[: int(np.searchsorted(np.cumsum(words), budget, "right")) + 1]
            return [self.keys[i] for i in chosen]

    def _code(self, value: str) -> int:
        return self.codes.setdefault(value, len(self.codes))

    def visible(
        self,
        as_of: datetime,
        known_at: datetime,
        relations: Sequence[str] = (),
        edge_types: Sequence[str] = (),
    ) -> np.ndarray:
        """Rows valid at `as_of` as known at `known_at` (DESIGN.md's visibility rule)."""
        size = len(self.keys)
        valid, known = micros(as_of), micros(known_at)
        t = {name: column.data[:size] for name, column in self.times.items()}
        mask = self.base_mask()
        mask &= (t["valid_at"] <= valid) & (t["invalid_at"] > valid)
        mask &= (t["created_at"] <= known) & (t["expired_at"] > known)
        for wanted, column in ((relations, self.relation), (edge_types, self.edge_type)):
            if wanted:
                codes = [self.codes[v] for v in wanted if v in self.codes]
                mask &= np.isin(column.data[:size], codes)
        return mask


_TIMES = ("valid_at", "invalid_at", "created_at", "expired_at")


class EntityIndex(SearchIndex):
    table = "entity"
    text_fields = ("name", "summary")
    vector_field = "name_embedding"
    load_all = queries.ENTITY_INDEX_ALL

    def _reset(self) -> None:
        super()._reset()
        self.rows: dict[int, dict[str, Any]] = {}
        self.entity_type = _Column(np.int32, -1)
        self.codes: dict[str, int] = {}

    def _grow(self, size: int) -> None:
        super()._grow(size)
        self.entity_type.ensure(size)

    def _columns(self, position: int, row: dict[str, Any]) -> bool:
        kind = str(row.get("entity_type") or "")
        self.entity_type.data[position] = self.codes.setdefault(kind, len(self.codes))
        self.rows[position] = {k: v for k, v in row.items() if k in _ENTITY_FIELDS}
        return row.get("merged_into") is None

    def of_types(self, entity_types: Sequence[str] = ()) -> np.ndarray:
        mask = self.base_mask()
        if entity_types:
            codes = [self.codes[v] for v in entity_types if v in self.codes]
            mask &= np.isin(self.entity_type.data[: len(self.keys)], codes)
        return mask

    def row(self, key: str) -> dict[str, Any]:
        return dict(self.rows[self.positions[key]])


_ENTITY_FIELDS = frozenset({"id", "name", "entity_type", "summary", "degree"})


class _Cache:
    """The indexes of the most recently searched tenants, within a memory budget."""

    def __init__(self, budget_bytes: int, tenants: int = 16) -> None:
        self.budget, self.tenants = budget_bytes, tenants
        self._indexes: OrderedDict[tuple[str, str], SearchIndex] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, namespace: str | None, kind: type[SearchIndex]) -> SearchIndex:
        key = (namespace or "", kind.table)
        with self._lock:
            index = self._indexes.pop(key, None) or kind()
            self._indexes[key] = index
            while len(self._indexes) > 1 and (
                len(self._indexes) > 2 * self.tenants
                or sum(i.nbytes for i in self._indexes.values()) > self.budget
            ):
                self._indexes.popitem(last=False)
            return index


_cache = _Cache(int(os.environ.get("KG_SEARCH_INDEX_MB", "1024")) * 2**20)


async def fact_index(store: TenantStore) -> FactIndex:
    """This process's fact index of the store's tenant, up to date with the database."""
    index = _cache.get(store.namespace, FactIndex)
    await index.refresh(store)
    assert isinstance(index, FactIndex)
    return index


async def entity_index(store: TenantStore) -> EntityIndex:
    index = _cache.get(store.namespace, EntityIndex)
    await index.refresh(store)
    assert isinstance(index, EntityIndex)
    return index


class _UnitVectors:
    """The passage unit vectors of the episodes recently quoted (schema/0011), per
    tenant: an episode never changes once written, so its vectors are read once per
    process (decoding them is most of a query's time otherwise), within `budget_units`
    units, the least recently used going first."""

    def __init__(self, budget_units: int) -> None:
        self.budget = budget_units
        self._vectors: OrderedDict[tuple[str, str], np.ndarray] = OrderedDict()
        self._units = 0
        self._lock = threading.Lock()

    async def get(self, store: TenantStore, episodes: Sequence[Any]) -> dict[str, np.ndarray]:
        """By episode key, the vectors of those of `episodes` (records) that have them."""
        namespace = store.namespace or ""
        found: dict[str, np.ndarray] = {}
        missing = []
        with self._lock:
            for episode in episodes:
                key = (namespace, record_key(episode))
                if key in self._vectors:
                    self._vectors.move_to_end(key)
                    found[key[1]] = self._vectors[key]
                else:
                    missing.append(episode)
        if not missing:
            return found
        rows = await store.query_one(queries.EPISODE_UNIT_VECTORS, {"episodes": missing}) or []
        with self._lock:
            for row in rows:
                vectors = np.asarray(row["vectors"], dtype=np.float32)
                key = (namespace, record_key(row["episode"]))
                found[key[1]] = vectors
                if key not in self._vectors:
                    self._vectors[key] = vectors
                    self._units += len(vectors)
            while self._vectors and self._units > self.budget:
                _, dropped = self._vectors.popitem(last=False)
                self._units -= len(dropped)
        return found


_unit_vectors = _UnitVectors(int(os.environ.get("KG_UNIT_VECTORS", "200000")))


async def unit_vectors(store: TenantStore, episodes: Sequence[Any]) -> dict[str, np.ndarray]:
    """The passage unit vectors of `episodes` (records), by episode key."""
    return await _unit_vectors.get(store, episodes)
