"""Read-only summaries of a tenant's graph."""

from __future__ import annotations

from kgapp.graph import queries
from kgapp.graph.store import TenantStore


async def graph_counts(store: TenantStore) -> dict[str, int]:
    counts: dict[str, int | float] = await store.query_one(queries.TABLE_COUNTS) or {}
    return {name: int(value) for name, value in counts.items()}


async def entity_count(store: TenantStore) -> int:
    return int(await store.query_one(queries.ENTITY_COUNT) or 0)
