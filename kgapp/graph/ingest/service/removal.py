"""Deleting what was ingested: episodes, or a document with its episodes, and every fact
or entity only they supported (facts they ended are restored)."""

from __future__ import annotations

from surrealdb.data.types.record_id import RecordID

from kgapp.graph import queries
from kgapp.graph.records import found
from kgapp.graph.store import TenantStore


async def episodes_remove(store: TenantStore, episodes: list[RecordID]) -> dict[str, int]:
    if not episodes:
        return {
            "facts_deleted": 0,
            "facts_restored": 0,
            "entities_deleted": 0,
            "episodes_deleted": 0,
        }
    results = await store.transaction(queries.EPISODES_REMOVE, {"episodes": episodes})
    removed = next(dict(r) for r in reversed(results) if isinstance(r, dict))
    await store.query(queries.ENTITY_DEGREE_RECOUNT, {"ids": removed.pop("endpoints")})
    return removed


async def episode_delete(store: TenantStore, episode: RecordID) -> dict[str, int]:
    await _existing(store, "episode", episode)
    return await episodes_remove(store, [episode])


async def document_delete(store: TenantStore, document: RecordID) -> dict[str, int]:
    """Remove the document, its episodes, and every fact or entity only it supported."""
    await _existing(store, "document", document)
    episodes = await store.query_one(queries.EPISODES_OF_DOCUMENT, {"document": document}) or []
    removed = await episodes_remove(store, list(episodes))
    await store.transaction(queries.DOCUMENT_REMOVE, {"document": document})
    return removed


async def _existing(store: TenantStore, what: str, record: RecordID) -> None:
    """NotFound ("no episode episode:...") unless `record` exists."""
    exists = await store.query_one(queries.RECORD_EXISTS, {"id": record})
    found(exists or None, what, record)
