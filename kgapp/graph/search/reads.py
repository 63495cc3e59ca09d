"""Point-in-time reads of one tenant's graph: records by id, an entity's facts and
episodes, the facts around entities (one hop, or breadth first), and the in-process
indexes as one search or query sees them.

Every fact read goes through the bi-temporal filter (`time.Moment`): valid at `as_of`,
as known at `known_at`; both default to now, which is "current only".
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from surrealdb.data.types.record_id import RecordID

from kgapp.graph import queries
from kgapp.graph.embeddings import Embedder
from kgapp.graph.index import EntityIndex, FactIndex, entity_index, fact_index
from kgapp.graph.records import (
    Entity,
    Episode,
    Fact,
    as_entity,
    as_episode,
    as_fact,
    found,
    record_key,
)
from kgapp.graph.resolution.canonical import canonical_name
from kgapp.graph.search.model import EntityEnd
from kgapp.graph.store import TenantStore
from kgapp.graph.time import Moment


class Indexes:
    """The tenant's search indexes, each brought up to date at most once: one per
    search or query."""

    def __init__(self, store: TenantStore) -> None:
        self._store = store
        self._facts: FactIndex | None = None
        self._entities: EntityIndex | None = None

    async def facts(self) -> FactIndex:
        if self._facts is None:
            self._facts = await fact_index(self._store)
        return self._facts

    async def entities(self) -> EntityIndex:
        if self._entities is None:
            self._entities = await entity_index(self._store)
        return self._entities


def record_id(key: str) -> RecordID:
    """The record id of a plain 'table:key' text (one the index or the database gave)."""
    table, _, ident = key.partition(":")
    return RecordID(table, ident)


async def current_facts(
    store: TenantStore, index: FactIndex, keys: Sequence[str]
) -> dict[str, Fact]:
    """Facts as the database has them now, in one read (gone ones left out: the index
    hears of their deletion on its next pass)."""
    if not keys:
        return {}
    rows = await store.query_one(queries.FACTS_BY_IDS, {"ids": [record_id(k) for k in keys]}) or []
    return {record_key(row["id"]): as_fact(dict(row)) for row in rows}


async def entity_rows(store: TenantStore, hits: list[tuple[str, float]]) -> list[Entity]:
    """The entities of index hits as the database has them now (id, name, entity_type,
    summary, degree) with their scores, in the hits' order; gone ones left out."""
    if not hits:
        return []
    ids = [record_id(key) for key, _ in hits]
    rows = await store.query_one(queries.ENTITY_HITS, {"ids": ids}) or []
    current = {record_key(row["id"]): as_entity(row) for row in rows}
    return [{**current[key], "score": score} for key, score in hits if key in current]


# --- records by id -----------------------------------------------------------------


async def entity_get(store: TenantStore, entity: RecordID) -> Entity:
    row = await store.query_one(queries.ENTITY_GET, {"id": entity})
    return as_entity(dict(found(row, "entity", entity)))


async def fact_get(store: TenantStore, fact: RecordID) -> Fact:
    row = await store.query_one(queries.FACT_BY_ID, {"id": fact})
    return as_fact(dict(found(row, "fact", fact)))


async def entity_facts(store: TenantStore, entity: RecordID, moment: Moment) -> list[Fact]:
    outgoing, incoming = await store.query(
        queries.FACTS_OF_ENTITY, {**moment.params(), "entity": entity}
    )
    facts = map(as_fact, (outgoing or []) + (incoming or []))
    return sorted(facts, key=lambda f: (f["valid_at"], record_key(f["id"])))


async def entity_episodes(
    store: TenantStore, entity: RecordID, *, limit: int = 20, offset: int = 0
) -> list[Episode]:
    """Episodes that mention the entity (up to `limit` after `offset`), newest first."""
    await entity_get(store, entity)  # 404 for an unknown entity
    times = await store.query_one(queries.ENTITY_EPISODE_TIMES, {"id": entity}) or []
    newest = sorted(times, key=lambda r: (r["valid_at"], record_key(r["id"])), reverse=True)
    batch = queries.Batch()
    for row in newest[offset : offset + limit]:
        batch.add(queries.EPISODE_PASSAGE, id=row["id"])
    rows = await store.query(batch.sql, batch.params) if batch else []
    return [as_episode(row) for row in rows if row]


async def entities_lookup(
    store: TenantStore, text: str, embedder: Embedder, *, limit: int
) -> list[Entity]:
    """Entities whose name starts with `text`; by name similarity when none does."""
    prefix = canonical_name(text)
    rows = await store.query_one(
        queries.ENTITIES_PREFIX, {"prefix": prefix, "prefix_end": prefix + "\uffff", "limit": limit}
    )
    if rows:
        return [as_entity(row) for row in rows]
    vector = (await asyncio.to_thread(embedder.embed, [text]))[0]
    index = await entity_index(store)
    hits = [hit for hit in index.cosine(vector, index.of_types(), limit) if hit[1] >= 0.5]
    return await entity_rows(store, hits)


# --- around entities ---------------------------------------------------------------


def fact_endpoints(facts: Sequence[Fact]) -> list[EntityEnd]:
    """The entities at either end of `facts`, once each, in order of appearance."""
    ends: dict[str, EntityEnd] = {}
    for fact in facts:
        for end, name in (
            (fact["source"], fact["source_name"]),
            (fact["target"], fact["target_name"]),
        ):
            ends.setdefault(record_key(end), {"id": end, "name": name})
    return list(ends.values())


async def facts_near_once(
    store: TenantStore, entities: Sequence[RecordID], moment: Moment, limit: int
) -> list[Fact]:
    """Visible facts out of or into `entities` (one hop, one statement): the outgoing
    ones, then the incoming ones, at most `limit` of each."""
    rows = await store.query(
        queries.FACTS_NEAR, {**moment.params(), "entities": list(entities), "limit": limit}
    )
    return [as_fact(row) for row in (rows[0] or []) + (rows[1] or [])]


async def facts_near(
    store: TenantStore, seeds: list[RecordID], moment: Moment, *, depth: int, limit: int
) -> list[Fact]:
    """Visible facts within `depth` hops of the seeds, nearest first."""
    seen: dict[str, Fact] = {}
    frontier = {record_key(s): s for s in seeds}
    visited = set(frontier)
    for _ in range(max(1, depth)):
        if not frontier or len(seen) >= limit:
            break
        nxt: dict[str, RecordID] = {}
        for fact in await facts_near_once(store, list(frontier.values()), moment, limit):
            seen.setdefault(record_key(fact["id"]), fact)
            for end in (fact["source"], fact["target"]):
                key = record_key(end)
                if key not in visited:
                    visited.add(key)
                    nxt[key] = end
        frontier = nxt
    return list(seen.values())[:limit]


async def entity_distances(
    store: TenantStore, center: RecordID, moment: Moment, *, depth: int
) -> dict[str, int]:
    """Hops from `center` to each entity reachable over visible facts."""
    distance = {record_key(center): 0}
    frontier = [center]
    for hop in range(1, depth + 1):
        if not frontier:
            break
        nxt = []
        for fact in await facts_near_once(store, frontier, moment, 10_000):
            for end in (fact["source"], fact["target"]):
                key = record_key(end)
                if key not in distance:
                    distance[key] = hop
                    nxt.append(end)
        frontier = nxt
    return distance


async def facts_touching(
    store: TenantStore,
    entities: Sequence[RecordID],
    moment: Moment,
    *,
    limit: int,
    budget: int | None = None,
    per_fact: int = 0,
    indexes: Indexes | None = None,
) -> list[Fact]:
    """Visible facts with an end among `entities` (LightRAG's one hop), those touching
    most of them first, then the most confident and recent; one read of the database,
    of no more facts than `budget` tokens could hold (see FactIndex.touching)."""
    index = await (indexes or Indexes(store)).facts()
    mask = index.visible(moment.as_of, moment.known_at)
    keys = index.touching(
        [record_key(e) for e in entities], mask, limit, budget=budget, per_fact=per_fact
    )
    rows = await current_facts(store, index, keys)
    return [rows[k] for k in keys if k in rows and moment.shows(rows[k])]
