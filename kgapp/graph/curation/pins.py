"""A curator's pins: a pinned entity is always in the explorer's first view, whatever
its counts (kgapp/graph/search/salience.py)."""

from __future__ import annotations

from surrealdb.data.types.record_id import RecordID

from kgapp.graph import queries
from kgapp.graph.records import Entity, as_entity, found
from kgapp.graph.store import TenantStore


async def pin_entity(store: TenantStore, entity: RecordID, pinned: bool) -> Entity:
    """Pin the entity (or unpin it). A missing entity, or one merged into another, is
    not found: the curator pins the one it was merged into."""
    rows = await store.query_one(queries.PIN_ENTITY, {"id": entity, "pinned": pinned})
    return as_entity(dict(found(rows[0] if rows else None, "entity", entity)))
