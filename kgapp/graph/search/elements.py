"""The explorer's graph: a bounded subgraph as Cytoscape elements (nodes with their
community, edges with their timestamps)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any, TypedDict

from surrealdb.data.types.record_id import RecordID

from kgapp.graph import queries
from kgapp.graph.records import Entity, Fact, as_entity, as_fact, found, record_key
from kgapp.graph.search.reads import record_id
from kgapp.graph.search.salience import Standing, most_salient
from kgapp.graph.store import TenantStore
from kgapp.graph.time import Moment


class NodeData(TypedDict):
    """An entity as a node: its standing (salience.py) and its current community."""

    id: str
    label: str
    type: str
    degree: int
    mentions: int
    named: bool
    pinned: bool
    salience: float
    summary: str
    created_at: datetime | None
    community: str | None


class EdgeData(TypedDict, total=False):
    """A fact as an edge: the fact's fields as read (records.Fact, kept in step with it),
    its id and ends as text."""

    id: str
    source: str
    target: str
    relation: str
    edge_type: str
    fact: str
    confidence: float
    valid_at: datetime
    created_at: datetime
    episodes: list[RecordID]
    invalid_at: datetime | None
    expired_at: datetime | None
    supersedes: RecordID | None
    superseded_by: RecordID | None
    revision_of: RecordID | None
    source_name: str
    target_name: str
    retrieval_count: float


class Node(TypedDict):
    data: NodeData


class Edge(TypedDict):
    data: EdgeData


class Elements(TypedDict):
    """Cytoscape elements."""

    nodes: list[Node]
    edges: list[Edge]


async def graph_elements(
    store: TenantStore,
    *,
    seed: RecordID | None,
    entity_types: Sequence[str],
    limit: int,
    moment: Moment | None,
    depth: int = 2,
) -> Elements:
    """A bounded subgraph as Cytoscape elements: around `seed` (`depth` hops), or the most
    salient entities (salience.py). Without a moment every fact comes with its four timestamps (the
    explorer filters in time itself); with one, only the facts visible then."""
    if seed is not None:
        nodes, facts = await _around(store, seed, limit=limit, moment=moment, depth=depth)
    else:
        nodes, facts = await _most_salient(store, entity_types, limit=limit, moment=moment)
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
) -> tuple[dict[str, Entity], list[Fact]]:
    """The seed, and the facts within `depth` hops of it, `limit` * 4 at most (history
    included; only those visible at `moment`, when given). Each hop reads the facts of
    the entities it reached through the index of their ends (`_all_facts`, a fair share
    each): a hub's thousands of facts cost no more than its share, and `IN` a list of
    entities would scan the whole table (docs/surrealdb-notes.md)."""
    start = as_entity(
        found(await store.query_one(queries.GRAPH_ENTITY, {"id": seed}), "entity", seed)
    )
    nodes = {record_key(seed): start}
    facts: dict[str, Fact] = {}
    frontier, reached = [seed], {record_key(seed)}
    for _ in range(max(1, depth)):
        room = limit * 4 - len(facts)
        if not frontier or room <= 0:
            break
        step = await _all_facts(store, frontier, room)
        frontier = []
        for fact in step:
            if moment is not None and not moment.shows(fact):
                continue
            facts.setdefault(record_key(fact["id"]), fact)
            for end in (fact["source"], fact["target"]):
                if record_key(end) not in reached:
                    reached.add(record_key(end))
                    frontier.append(end)
    return nodes, list(facts.values())


async def _most_salient(
    store: TenantStore, entity_types: Sequence[str], *, limit: int, moment: Moment | None
) -> tuple[dict[str, Entity], list[Fact]]:
    """The `limit` most salient entities (of `entity_types`, when given: see salience.py)
    and their facts (those visible at `moment`, when given)."""
    entities, counts = await store.query(
        queries.GRAPH_STANDINGS, {"types": list(entity_types) or None}
    )
    mentions = {record_key(row["entity"]): int(row["mentions"]) for row in counts or []}
    standings = [Standing.of(row, mentions.get(record_key(row["id"]), 0)) for row in entities or []]
    chosen = [record_id(s.key) for s in most_salient(standings, limit)]
    facts = await _all_facts(store, chosen, limit * 4)
    if moment is not None:
        facts = [f for f in facts if moment.shows(f)]
    nodes: dict[str, Entity] = {}
    await _read_ends(store, nodes, facts, first=chosen)
    return nodes, facts


async def _read_ends(
    store: TenantStore,
    nodes: dict[str, Entity],
    facts: list[Fact],
    first: Sequence[RecordID] = (),
) -> None:
    """Add to `nodes` the entities `first`, then those at the facts' ends not among them
    (in one round trip)."""
    ends = [record_key(e) for e in first]
    ends += [record_key(e) for f in facts for e in (f["source"], f["target"])]
    missing = [record_id(key) for key in dict.fromkeys(ends) if key not in nodes]
    rows = await store.query_one(queries.GRAPH_ENTITIES, {"ids": missing}) if missing else []
    for row in rows or []:
        if row:
            nodes[record_key(row["id"])] = as_entity(row)


def _node(key: str, node: Entity, community: str | None) -> Node:
    standing = Standing.of(node)
    return {
        "data": {
            "id": key,
            "label": node["name"],
            "type": node["entity_type"],
            "degree": standing.degree,
            "mentions": standing.mentions,
            "named": standing.named,
            "pinned": standing.pinned,
            "salience": standing.salience,
            "summary": node.get("summary", ""),
            "created_at": node.get("created_at"),
            "community": community,
        }
    }


def _edge(fact: Fact) -> Edge:
    return {
        "data": {
            **fact,
            "id": record_key(fact["id"]),
            "source": record_key(fact["source"]),
            "target": record_key(fact["target"]),
        }
    }


async def _communities_of(store: TenantStore, keys: list[str]) -> dict[str, str]:
    """The current community of each entity that has one (in one round trip; the
    first in record order when it has several)."""
    if not keys:
        return {}
    size = queries.IN_INDEXED
    lists = [[record_id(k) for k in keys[i : i + size]] for i in range(0, len(keys), size)]
    rows = await store.query_one(queries.COMMUNITIES_OF_ENTITIES, {"lists": lists})
    found: dict[str, str] = {}
    for row in rows or []:
        found.setdefault(record_key(row["entity"]), record_key(row["community"]))
    return found


async def _all_facts(store: TenantStore, entities: list[RecordID], limit: int) -> list[Fact]:
    """Every fact out of or into the entities, history included, once each: the facts
    out of them in record order, then those into them, `limit` at most. Each entity's
    facts are read through the index of its end, a fair share (`limit` / entities) each
    first, then more of those that had more while fewer than `limit` were found; past
    the limit, the facts are taken from each entity's in turn."""
    unique = {record_key(e): e for e in entities}
    wanted = {end: list(unique) for end in _ENDS}
    found: dict[tuple[str, str], list[Any]] = {}
    ask = -(-limit // max(1, len(unique)))  # a fair share, rounded up
    while any(wanted.values()):
        asked = {end: [unique[key] for key in keys] for end, keys in wanted.items()}
        lists = await store.query_one(queries.GRAPH_FACTS, {**asked, "limit": ask})
        for (end, keys), read in zip(wanted.items(), lists or [[], []], strict=True):
            found.update({(end, key): rows or [] for key, rows in zip(keys, read, strict=True)})
        seen = {record_key(row["id"]) for rows in found.values() for row in rows}
        if len(seen) >= limit or ask >= limit:
            break
        for end, keys in wanted.items():  # those that gave all they were asked may have more
            wanted[end] = [key for key in keys if len(found[end, key]) == ask]
        ask = min(limit, ask * 4)
    chosen = _in_turn(list(found.values()), limit)
    facts: dict[str, Fact] = {}
    for end in _ENDS:
        rows = [row for (of, _), read in found.items() if of == end for row in read]
        for row in sorted(rows, key=lambda row: _record_order(row["id"])):
            if (key := record_key(row["id"])) in chosen:
                facts.setdefault(key, as_fact(row))
    return list(facts.values())


_ENDS = ("outs", "intos")  # the facts out of the entities, then those into them


def _in_turn(reads: list[list[Any]], limit: int) -> set[str]:
    """The keys of `limit` facts at most, taken in turn from each read: all of them when
    they fit."""
    keys: dict[str, None] = {}
    for rank in range(max(map(len, reads), default=0)):
        for rows in reads:
            if rank < len(rows):
                keys.setdefault(record_key(rows[rank]["id"]))
                if len(keys) == limit:
                    return set(keys)
    return set(keys)


def _record_order(record: RecordID) -> tuple[int, Any]:
    """A record's place in its table (numbers before strings), as a scan returns them."""
    key = record.id
    return (0, key) if isinstance(key, int | float) else (1, str(key))
