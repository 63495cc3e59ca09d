"""The passage unit vectors of episodes (schema/0011), read once per process
(`CoreConfig.unit_vectors` units at most)."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

import numpy as np

from kgapp.graph import queries
from kgapp.graph.config import core_config
from kgapp.graph.embeddings import unpack_vectors
from kgapp.graph.records import record_key
from kgapp.graph.store import TenantStore


class _UnitVectors:
    """The passage unit vectors of the episodes recently quoted (schema/0011), per
    tenant: an episode never changes once written, so its vectors are read once per
    process (decoding them is most of a query's time otherwise), within `budget_units`
    units (the configured budget when None), the least recently used going first."""

    def __init__(self, budget_units: int | None = None) -> None:
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
                vectors = unpack_vectors(row["vectors"], row.get("units"))
                key = (namespace, record_key(row["episode"]))
                found[key[1]] = vectors
                if key not in self._vectors:
                    self._vectors[key] = vectors
                    self._units += len(vectors)
            budget = core_config().unit_vectors if self.budget is None else self.budget
            while self._vectors and self._units > budget:
                _, dropped = self._vectors.popitem(last=False)
                self._units -= len(dropped)
        return found


_unit_vectors = _UnitVectors()


async def unit_vectors(store: TenantStore, episodes: Sequence[Any]) -> dict[str, np.ndarray]:
    """The passage unit vectors of `episodes` (records), by episode key."""
    return await _unit_vectors.get(store, episodes)
