"""Name embeddings of a tenant's entities, held in the worker process.

Resolution compares every new name with every entity. SurrealDB 3.0.2 offers no
isolated vector index (schema/0003), and an exact scan in the database costs
milliseconds per name per thousand entities; here it is one matrix product. The copy
is topped up before each lookup with the entities created since the last one (with an
overlap, as concurrent writers commit out of order), so it is never staler than the
last committed episode.
"""

from __future__ import annotations

from collections import OrderedDict
from datetime import datetime, timedelta

import numpy as np
from rapidfuzz import fuzz, process
from surrealdb.data.types.record_id import RecordID

from kgapp.graph import queries
from kgapp.graph.records import Entity
from kgapp.graph.resolution.names import match_key
from kgapp.graph.store import TenantStore

# Writers commit out of created_at order (an episode's transaction takes milliseconds);
# re-read this far back on every top-up.
OVERLAP = timedelta(seconds=1)
CACHED_TENANTS = 16


class EntityVectors:
    def __init__(self) -> None:
        self._rows: dict[str, Entity] = {}
        self._order: list[str] = []
        self._keys: list[str] = []  # match keys (names.match_key), aligned with _order
        self._matrix = np.zeros((0, 0), dtype=np.float32)
        self._since: datetime | None = None
        self._gone: set[str] = set()  # deleted since cached: never offered again
        # Rows read (merged or without a vector too) that were created within OVERLAP of
        # the newest: not read again.
        self._recent: dict[str, tuple[RecordID, datetime]] = {}

    async def refresh(self, store: TenantStore) -> None:
        rows: list[Entity]
        if self._since is None:
            rows = await store.query_one(queries.ENTITY_VECTORS_ALL) or []
        else:
            rows = await self._new_rows(store)
        added: list[Entity] = []
        for row in rows:
            self._recent[str(row["id"])] = (row["id"], row["created_at"])
            if row.get("name_embedding") is None or row.get("merged_into") is not None:
                continue  # never offered
            key = str(row["id"])
            if key not in self._rows:
                added.append(row)
            # Kept without its vector, which lives in the matrix.
            self._rows[key] = {**row, "name_embedding": None}
            self._since = max(self._since or row["created_at"], row["created_at"])
        if self._since is not None:
            horizon = self._since - OVERLAP
            self._recent = {k: v for k, v in self._recent.items() if v[1] > horizon}
        if added:
            vectors = np.asarray([row["name_embedding"] for row in added], dtype=np.float32)
            self._matrix = vectors if not len(self._matrix) else np.vstack([self._matrix, vectors])
            self._order.extend(str(row["id"]) for row in added)
            self._keys.extend(match_key(row["name"], row["entity_type"]) for row in added)

    async def _new_rows(self, store: TenantStore) -> list[Entity]:
        assert self._since is not None
        since = self._since - OVERLAP
        params = {"since": since, "held": [record for record, _ in self._recent.values()]}
        return [row for row in await store.query_one(queries.ENTITY_VECTORS_SINCE, params) if row]

    def forget(self, ids: set[str]) -> None:
        """Entities deleted since they were cached."""
        self._gone |= ids

    def nearest(
        self, vector: list[float], limit: int, *, spelled: str = "", spelled_limit: int = 0
    ) -> list[Entity]:
        """The closest entities by cosine (vectors are unit-normalised), best first; then
        up to `spelled_limit` more whose match key is spelled like `spelled` (a typo
        moves a name's vector far, not its spelling). `score` is the cosine."""
        if not len(self._matrix):
            return []
        scores = self._matrix @ np.asarray(vector, dtype=np.float32)
        best = [int(i) for i in np.argsort(-scores)[:limit]]
        if spelled and spelled_limit:
            found = process.extract(
                spelled, self._keys, scorer=fuzz.ratio, limit=spelled_limit, score_cutoff=80
            )
            best.extend(i for _, _, i in found if i not in best)
        return [
            {**self._rows[self._order[i]], "score": float(scores[i])}
            for i in best
            if self._order[i] not in self._gone
        ]


_tenants: OrderedDict[str, EntityVectors] = OrderedDict()


def entity_vectors(namespace: str | None) -> EntityVectors:
    """This process's copy for one namespace (a few tenants kept, least recent dropped)."""
    key = namespace or ""
    vectors = _tenants.pop(key, None) or EntityVectors()
    _tenants[key] = vectors
    while len(_tenants) > CACHED_TENANTS:
        _tenants.popitem(last=False)
    return vectors
