"""The explorer's graph: a bounded subgraph as Cytoscape elements (nodes with their
community, edges with their timestamps)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from surrealdb.data.types.record_id import RecordID

from kgapp.graph import queries
from kgapp.graph.records import Fact, as_fact, found, record_key
from kgapp.graph.search.reads import facts_near, record_id
from kgapp.graph.store import TenantStore
from kgapp.graph.time import Moment


async def graph_elements(
    store: TenantStore,
    *,
    seed: RecordID | None,
    entity_types: Sequence[str],
    limit: int,
    moment: Moment | None,
    depth: int = 2,
) -> dict[str, list[dict[str, Any]]]:
    """A bounded subgraph as Cytoscape elements: around `seed` (`depth` hops), or the most
    connected entities. Without a moment every fact comes with its four timestamps (the
    explorer filters in time itself); with one, only the facts visible then."""
    if seed is not None:
        nodes, facts = await _around(store, seed, limit=limit, moment=moment, depth=depth)
    else:
        nodes, facts = await _most_connected(store, entity_types, limit=limit, moment=moment)
    await _read_ends(store, nodes, facts)
    if entity_types:
        nodes = {k: n for k, n in nodes.items() if n["entity_type"] in entity_types}
    facts = [
        f for f in facts if record_key(f["source"]) in nodes and record_key(f["target"]) in nodes
    ]
    community = await _communities_of(store, list(nodes))
    return {
        "nodes": [_node(k, n, community.get(k)) for k, n in nodes.items()],
        "edges": [_edge(f) for f in facts],
    }


async def _around(
    store: TenantStore, seed: RecordID, *, limit: int, moment: Moment | None, depth: int
) -> tuple[dict[str, dict[str, Any]], list[Fact]]:
    """The seed, and the facts within `depth` hops of it (all of its neighbours' facts,
    history included, without a moment)."""
    start = found(await store.query_one(queries.GRAPH_ENTITY, {"id": seed}), "entity", seed)
    nodes = {record_key(seed): start}
    facts = await facts_near(store, [seed], moment or Moment.of(), depth=depth, limit=limit * 4)
    if moment is None:
        facts = await _all_facts(store, [f["source"] for f in facts] + [seed], limit * 4)
    return nodes, facts


async def _most_connected(
    store: TenantStore, entity_types: Sequence[str], *, limit: int, moment: Moment | None
) -> tuple[dict[str, dict[str, Any]], list[Fact]]:
    """The `limit` most connected entities (of `entity_types`, when given) and their
    facts (those visible at `moment`, when given)."""
    rows = (
        await store.query_one(
            queries.GRAPH_TOP_ENTITIES, {"types": list(entity_types) or None, "limit": limit}
        )
        or []
    )
    nodes = {record_key(r["id"]): r for r in rows}
    facts = await _all_facts(store, [r["id"] for r in rows], limit * 4)
    if moment is not None:
        facts = [f for f in facts if moment.shows(f)]
    return nodes, facts


async def _read_ends(
    store: TenantStore, nodes: dict[str, dict[str, Any]], facts: list[Fact]
) -> None:
    """Add to `nodes` the entities at the facts' ends not among them (in one round trip)."""
    ends = {record_key(e) for f in facts for e in (f["source"], f["target"])}
    batch = queries.Batch()
    missing = [key for key in ends if key not in nodes]
    for key in missing:
        batch.add(queries.GRAPH_ENTITY, id=record_id(key))
    for row in await store.query(batch.sql, batch.params) if missing else []:
        if row:
            nodes[record_key(row["id"])] = row


def _node(key: str, node: dict[str, Any], community: str | None) -> dict[str, Any]:
    return {
        "data": {
            "id": key,
            "label": node["name"],
            "type": node["entity_type"],
            "degree": node.get("degree", 0),
            "summary": node.get("summary", ""),
            "created_at": node.get("created_at"),
            "community": community,
        }
    }


def _edge(fact: Fact) -> dict[str, Any]:
    return {
        "data": {
            **fact,
            "id": record_key(fact["id"]),
            "source": record_key(fact["source"]),
            "target": record_key(fact["target"]),
        }
    }


async def _communities_of(store: TenantStore, keys: list[str]) -> dict[str, str]:
    """The current community of each entity that has one (in one statement)."""
    if not keys:
        return {}
    rows = await store.query_one(
        queries.COMMUNITIES_OF_ENTITIES, {"entities": [record_id(k) for k in keys]}
    )
    found: dict[str, str] = {}
    for row in rows or []:
        found.setdefault(record_key(row["entity"]), record_key(row["community"]))
    return found


async def _all_facts(store: TenantStore, entities: list[Any], limit: int) -> list[Fact]:
    """Every fact out of or into the entities, history included, once each."""
    unique = list({record_key(e): e for e in entities}.values())
    out, into = await store.query(queries.GRAPH_FACTS, {"entities": unique, "limit": limit})
    facts = {record_key(f["id"]): as_fact(f) for f in (out or []) + (into or [])}
    return list(facts.values())[:limit]
