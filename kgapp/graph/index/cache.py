"""The indexes of this process, per tenant, within a memory budget
(KG_SEARCH_INDEX_MB)."""

from __future__ import annotations

import os
import threading
from collections import OrderedDict

from kgapp.graph.index.entities import EntityIndex
from kgapp.graph.index.facts import FactIndex
from kgapp.graph.index.table import SearchIndex
from kgapp.graph.store import TenantStore


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
