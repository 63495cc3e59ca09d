"""What the admin's graph pages read: facts filtered, an entity with all of its, the
episodes behind a fact, and the audit log."""

from __future__ import annotations

from typing import Any

from surrealdb.data.types.record_id import RecordID

from kgapp.graph import queries
from kgapp.graph.curation.common import CurationRefused, record_of
from kgapp.graph.index.analysis import terms
from kgapp.graph.index.cache import fact_index
from kgapp.graph.records import found, parse_record_id
from kgapp.graph.store import TenantStore

FACT_STATES = ("current", "invalidated", "expired")
# The facts a word filter considers, the best matches first: past this many, the list
# shows those, newest first (a filter of words that common is no filter).
MATCHES = 10_000


async def facts_page(
    store: TenantStore,
    *,
    q: str | None = None,
    relation: str | None = None,
    entity: RecordID | None = None,
    state: str | None = None,
    valid_from: Any = None,
    valid_to: Any = None,
    known_at: Any = None,
    limit: int = 50,
    offset: int = 0,
) -> list[dict[str, Any]]:
    """Facts, newest first, filtered; `q` matches the fact's words (all of them, as the
    search index analyses them: stems, case and accents folded)."""
    if state is not None and state not in FACT_STATES:
        raise CurationRefused(f"state is one of {', '.join(FACT_STATES)}")
    params = {
        "relation": relation,
        "entity": entity,
        "state": state,
        "valid_from": valid_from,
        "valid_to": valid_to,
        "known_at": known_at,
        "limit": limit,
        "offset": offset,
        "q": q,
    }
    if not q or not terms(q):  # no words (punctuation only): no word filter
        return list(await store.query_one(queries.ADMIN_FACTS, params) or [])
    index = await fact_index(store, fresh=True)
    params["ids"] = [parse_record_id(key, "relates_to") for key in index.matching(q, MATCHES)]
    return list(await store.query_one(queries.ADMIN_FACTS_AMONG, params) or [])


async def relations(store: TenantStore) -> list[str]:
    return sorted(await store.query_one(queries.ADMIN_RELATIONS) or [])


async def episodes_of(store: TenantStore, episodes: list[RecordID]) -> list[dict[str, Any]]:
    batch = queries.Batch()
    for episode in episodes:
        batch.add(queries.EPISODE_BRIEF, id=episode)
    rows = await store.query(batch.sql, batch.params) if episodes else []
    return [row for row in rows if row]


async def entity_page(store: TenantStore, entity: RecordID) -> dict[str, Any]:
    """An entity with its aliases, communities, merged-in entities, audit entries and
    every fact in and out, history included."""
    row, aliases, communities, merged, audits = await store.query(
        queries.ADMIN_ENTITY, {"id": entity}
    )
    row = found(row, "entity", entity)
    out, into = await store.query(queries.ENTITY_ALL_FACTS, {"id": entity})
    return {
        "entity": row,
        "aliases": aliases or [],
        "communities": communities or [],
        "merged": merged or [],
        "audits": audits or [],
        "facts_out": out or [],
        "facts_in": into or [],
    }


async def audit_page(
    store: TenantStore,
    *,
    action: str | None = None,
    actor: str | None = None,
    limit: int = 50,
    offset: int = 0,
) -> list[dict[str, Any]]:
    params = {"action": action, "actor": actor, "limit": limit, "offset": offset}
    return list(await store.query_one(queries.AUDIT_LIST, params) or [])


async def audit_get(store: TenantStore, entry: RecordID) -> dict[str, Any]:
    return await record_of(store, entry, "audit", "audit entry")
