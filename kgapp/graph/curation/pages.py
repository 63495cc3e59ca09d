"""What the admin's graph pages read: facts filtered, an entity with all of its, the
episodes behind a fact, and the audit log."""

from __future__ import annotations

from datetime import datetime
from typing import TypedDict

from surrealdb.data.types.record_id import RecordID

from kgapp.graph import queries
from kgapp.graph.audit import AliasRow, AuditEntry, as_audit
from kgapp.graph.curation.common import CurationRefused, record_of
from kgapp.graph.index.analysis import terms
from kgapp.graph.index.cache import fact_index
from kgapp.graph.records import (
    Entity,
    Episode,
    Fact,
    as_entity,
    as_episode,
    as_fact,
    found,
    parse_record_id,
)
from kgapp.graph.store import TenantStore

FACT_STATES = ("current", "invalidated", "expired")
# The facts a word filter considers, the best matches first: past this many, the list
# shows those, newest first (a filter of words that common is no filter).
MATCHES = 10_000


class CommunityBrief(TypedDict):
    """A community an entity belongs to, as its page names it."""

    id: RecordID
    name: str
    member_count: int


class EntityPage(TypedDict):
    """An entity and everything of its that its admin page shows."""

    entity: Entity
    aliases: list[AliasRow]
    communities: list[CommunityBrief]
    merged: list[Entity]
    audits: list[AuditEntry]
    facts_out: list[Fact]
    facts_in: list[Fact]


async def facts_page(
    store: TenantStore,
    *,
    q: str | None = None,
    relation: str | None = None,
    entity: RecordID | None = None,
    state: str | None = None,
    valid_from: datetime | None = None,
    valid_to: datetime | None = None,
    known_at: datetime | None = None,
    limit: int = 50,
    offset: int = 0,
) -> list[Fact]:
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
        return [as_fact(row) for row in await store.query_one(queries.ADMIN_FACTS, params) or []]
    index = await fact_index(store, fresh=True)
    ids = [parse_record_id(key, "relates_to") for key in index.matching(q, MATCHES)]
    rows = await store.query_one(queries.ADMIN_FACTS_AMONG, {**params, "ids": ids}) or []
    return [as_fact(row) for row in rows]


async def relations(store: TenantStore) -> list[str]:
    return sorted(await store.query_one(queries.ADMIN_RELATIONS) or [])


async def episodes_of(store: TenantStore, episodes: list[RecordID]) -> list[Episode]:
    batch = queries.Batch()
    for episode in episodes:
        batch.add(queries.EPISODE_BRIEF, id=episode)
    rows = await store.query(batch.sql, batch.params) if episodes else []
    return [as_episode(row) for row in rows if row]


async def entity_page(store: TenantStore, entity: RecordID) -> EntityPage:
    """An entity with its aliases, communities, merged-in entities, audit entries and
    every fact in and out, history included."""
    row, aliases, communities, merged, audits = await store.query(
        queries.ADMIN_ENTITY, {"id": entity}
    )
    row = found(row, "entity", entity)
    out, into = await store.query(queries.ENTITY_ALL_FACTS, {"id": entity})
    return EntityPage(
        entity=as_entity(row),
        aliases=aliases or [],
        communities=communities or [],
        merged=[as_entity(e) for e in merged or []],
        audits=[as_audit(a) for a in audits or []],
        facts_out=[as_fact(f) for f in out or []],
        facts_in=[as_fact(f) for f in into or []],
    )


async def audit_page(
    store: TenantStore,
    *,
    action: str | None = None,
    actor: str | None = None,
    limit: int = 50,
    offset: int = 0,
) -> list[AuditEntry]:
    params = {"action": action, "actor": actor, "limit": limit, "offset": offset}
    return [as_audit(row) for row in await store.query_one(queries.AUDIT_LIST, params) or []]


async def audit_get(store: TenantStore, entry: RecordID) -> AuditEntry:
    return await record_of(store, entry, "audit", "audit entry", as_audit)
