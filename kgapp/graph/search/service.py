"""Hybrid search and point-in-time reads over one tenant's graph.

Every fact read goes through the bi-temporal filter: valid at `as_of`, as known at
`known_at`; both default to now, which is "current only" (valid now and not retired).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal

from surrealdb.data.types.record_id import RecordID

from kgapp.graph import queries
from kgapp.graph.embeddings import Embedder
from kgapp.graph.errors import GraphError, NotFound
from kgapp.graph.index import (
    EntityIndex,
    FactIndex,
    SearchIndex,
    entity_index,
    fact_index,
)
from kgapp.graph.llm.client import LLMClient
from kgapp.graph.llm.prompts import rank as rank_prompt
from kgapp.graph.records import record_key
from kgapp.graph.search import rerank
from kgapp.graph.search.activation import ActivationConfig, Link, effective_confidence, spread
from kgapp.graph.store import TenantStore
from kgapp.graph.text import canonical_name
from kgapp.graph.time import Moment

Scope = Literal["facts", "entities", "episodes", "communities"]
Method = Literal["bm25", "cosine", "bfs", "activation"]
Reranker = Literal["rrf", "mmr", "node_distance", "episode_mentions", "cross_encoder"]
HISTORY_HOPS = 64
STUB = "_stub"  # marks a search candidate not yet read from the database
ACTIVATION = ActivationConfig()
SEED_STRUCTURE = 0.3


@dataclass(frozen=True)
class SearchRequest:
    query: str
    scopes: tuple[Scope, ...] = ("facts", "entities")
    methods: tuple[Method, ...] = ("bm25", "cosine")
    reranker: Reranker = "rrf"
    moment: Moment = field(default_factory=Moment.of)
    center_entity: RecordID | None = None
    limit: int = 10
    min_score: float = 0.0
    mmr_lambda: float = 0.5
    bfs_depth: int = 2
    entity_types: tuple[str, ...] = ()
    relations: tuple[str, ...] = ()
    edge_types: tuple[str, ...] = ()


@dataclass
class Hit:
    id: str
    score: float
    found_by: list[str]
    record: dict[str, Any]


@dataclass
class SearchResults:
    facts: list[Hit] = field(default_factory=list)
    entities: list[Hit] = field(default_factory=list)
    episodes: list[Hit] = field(default_factory=list)
    communities: list[Hit] = field(default_factory=list)
    # The query's embedding, when a scope searched by meaning.
    vector: list[float] | None = None


class RerankerUnavailable(GraphError):
    """The cross-encoder reranker needs a model, and none is configured."""


class Indexes:
    """The tenant's in-process search indexes, each brought up to date with the database
    at most once: one per search or query (each refresh is a round trip)."""

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


async def search(
    store: TenantStore,
    request: SearchRequest,
    embedder: Embedder,
    llm: LLMClient | None = None,
    indexes: Indexes | None = None,
) -> SearchResults:
    if request.reranker == "cross_encoder" and llm is None:
        raise RerankerUnavailable(
            "the cross_encoder reranker needs a model: set OPENAI_BASE_URL or OPENAI_API_KEY,"
            " or choose rrf, mmr, node_distance or episode_mentions"
        )
    vector = None  # community search does not use the query's vector
    vector_scopes = {"facts", "entities", "episodes"} & set(request.scopes)
    if vector_scopes and ("cosine" in request.methods or request.reranker == "mmr"):
        vector = (await asyncio.to_thread(embedder.embed, [request.query]))[0]
    results = SearchResults(vector=vector)
    indexes = indexes or Indexes(store)
    if "activation" in request.methods:
        activated = await _activation(store, await indexes.entities(), request, embedder, vector)
    else:
        activated = {"facts": [], "entities": []}
    if "facts" in request.scopes:
        facts = await indexes.facts()
        results.facts = await _facts(store, facts, request, vector, activated["facts"])
    if "entities" in request.scopes:
        entities = await indexes.entities()
        results.entities = await _entities(store, entities, request, vector, activated["entities"])
    if "episodes" in request.scopes:
        results.episodes = await _episodes(store, request, vector)
    if "communities" in request.scopes:
        results.communities = await _communities(store, request)
    if request.reranker == "cross_encoder" and llm is not None:
        for kind in ("facts", "entities", "episodes"):
            hits = getattr(results, kind)
            setattr(results, kind, await _cross_encode(llm, request, hits, kind))
    await _count_retrievals(store, results.facts)
    return results


async def _cross_encode(
    llm: LLMClient, request: SearchRequest, hits: list[Hit], kind: str
) -> list[Hit]:
    """Rerank the fused candidates by the model's relevance judgement (one call)."""
    if not hits:
        return hits
    candidates = hits[: rank_prompt.MAX_PASSAGES]
    answer = await llm.structured(
        task=rank_prompt.TASK,
        schema=rank_prompt.Ranking,
        system=rank_prompt.SYSTEM,
        user=rank_prompt.user_prompt(request.query, [_passage(h, kind) for h in candidates]),
    )
    relevance = {p.index: p.relevance for p in answer.passages if 0 <= p.index < len(candidates)}
    order = sorted(range(len(candidates)), key=lambda i: (-relevance.get(i, 0.0), i))
    ranked = [candidates[i] for i in order]
    for i, hit in zip(order, ranked, strict=True):
        hit.score = relevance.get(i, 0.0)
        hit.found_by = [*hit.found_by, "cross_encoder"]
    return [h for h in ranked if h.score >= request.min_score][: request.limit]


def _passage(hit: Hit, kind: str) -> str:
    record = hit.record
    if kind == "facts":
        return str(record.get("fact", ""))
    if kind == "entities":
        return f"{record.get('name', '')}: {record.get('summary', '')}"
    return str(record.get("content", ""))


async def _count_retrievals(store: TenantStore, facts: list[Hit]) -> None:
    """Link weight evolution: every fact search returns counts one retrieval."""
    if facts:
        await store.query(queries.FACTS_RETRIEVED, {"ids": [hit.record["id"] for hit in facts]})


async def decay_retrieval_counts(store: TenantStore, *, lambda_: float = 0.01) -> None:
    """count x exp(-lambda x days since the last decay); run periodically."""
    await store.query(queries.RETRIEVAL_DECAY, {"lambda": lambda_, "now": datetime.now(UTC)})


async def _facts(
    store: TenantStore,
    index: FactIndex,
    request: SearchRequest,
    vector: list[float] | None,
    activated: list[dict[str, Any]],
) -> list[Hit]:
    pool = request.limit * 4
    found: dict[str, list[dict[str, Any]]] = {}
    ranked: dict[str, list[tuple[str, float]]] = {}
    if "bm25" in request.methods or ("cosine" in request.methods and vector is not None):
        moment = request.moment
        mask = index.visible(moment.as_of, moment.known_at, request.relations, request.edge_types)
        if "bm25" in request.methods:
            ranked["bm25"] = index.bm25(request.query, mask, pool)
        if "cosine" in request.methods and vector is not None:
            ranked["cosine"] = index.cosine(vector, mask, pool)
        for method, hits in ranked.items():  # read back only as far as ranking needs
            found[method] = [{"id": _record(k), "score": score, STUB: True} for k, score in hits]
    if "bfs" in request.methods and request.center_entity is not None:
        found["bfs"] = await facts_near(
            store, [request.center_entity], request.moment, depth=request.bfs_depth, limit=pool
        )
    if activated:
        found["activation"] = activated

    async def current(keys: list[str]) -> dict[str, dict[str, Any]]:
        rows = await _current_facts(store, index, keys)
        return {k: row for k, row in rows.items() if request.moment.shows(row)}

    return await _rank(store, request, found, vector, kind="facts", index=index, hydrate=current)


async def _entities(
    store: TenantStore,
    index: EntityIndex,
    request: SearchRequest,
    vector: list[float] | None,
    activated: list[dict[str, Any]],
) -> list[Hit]:
    pool = request.limit * 4
    found: dict[str, list[dict[str, Any]]] = {}
    if "bm25" in request.methods or ("cosine" in request.methods and vector is not None):
        mask = index.of_types(request.entity_types)
        if "bm25" in request.methods:
            found["bm25"] = _entity_rows(index, index.bm25(request.query, mask, pool))
        if "cosine" in request.methods and vector is not None:
            found["cosine"] = _entity_rows(index, index.cosine(vector, mask, pool))
    if "bfs" in request.methods and request.center_entity is not None:
        facts = await facts_near(
            store, [request.center_entity], request.moment, depth=request.bfs_depth, limit=pool
        )
        found["bfs"] = fact_endpoints(facts)
    if activated:
        found["activation"] = activated
    return await _rank(store, request, found, vector, kind="entities", index=index)


async def _current_facts(
    store: TenantStore, index: FactIndex, keys: Sequence[str]
) -> dict[str, dict[str, Any]]:
    """Facts as the database has them now, in one read (gone ones forgotten)."""
    if not keys:
        return {}
    rows = await store.query_one(queries.FACTS_BY_IDS, {"ids": [_record(k) for k in keys]}) or []
    current = {record_key(row["id"]): dict(row) for row in rows}
    index.forget(k for k in keys if k not in current)
    return current


def _entity_rows(index: EntityIndex, hits: list[tuple[str, float]]) -> list[dict[str, Any]]:
    return [{**index.row(key), "score": score} for key, score in hits]


async def _episodes(
    store: TenantStore, request: SearchRequest, vector: list[float] | None
) -> list[Hit]:
    """By full text, and by meaning when the query's vector is given (the episodes whose
    units are embedded, schema/0011), the two lists fused by RRF; in one round trip."""
    batch = queries.Batch()
    batch.add(queries.EPISODES_BM25, query=request.query, limit=request.limit)
    if vector is not None:
        batch.add(queries.EPISODES_NEAREST, vector=vector, limit=request.limit)
    found = [rows or [] for rows in await store.query(batch.sql, batch.params)]
    if len(found) == 1:
        return [Hit(record_key(r["id"]), float(r.get("score") or 0), ["bm25"], r) for r in found[0]]
    rows: dict[str, dict[str, Any]] = {}
    methods: dict[str, list[str]] = {}
    for method, listed in zip(("bm25", "cosine"), found, strict=True):
        for row in listed:
            rows.setdefault(record_key(row["id"]), row)
            methods.setdefault(record_key(row["id"]), []).append(method)
    fused = rerank.rrf([[record_key(r["id"]) for r in listed] for listed in found])
    return [Hit(key, score, methods[key], rows[key]) for key, score in fused[: request.limit]]


async def _communities(store: TenantStore, request: SearchRequest) -> list[Hit]:
    """Current communities whose name or summary match (full text)."""
    rows = await store.query_one(
        queries.COMMUNITIES_BM25, {"query": request.query, "limit": request.limit}
    )
    return [Hit(record_key(r["id"]), float(r.get("score") or 0), ["bm25"], r) for r in rows or []]


async def _rank(
    store: TenantStore,
    request: SearchRequest,
    found: dict[str, list[dict[str, Any]]],
    vector: list[float] | None,
    *,
    kind: str,
    index: SearchIndex,
    hydrate: Callable[[list[str]], Awaitable[dict[str, dict[str, Any]]]] | None = None,
) -> list[Hit]:
    """Fuse the methods' lists, rerank, and keep `limit`. Rows marked STUB (a key and a
    score from the index) are read from the database only when a reranker needs their
    fields, or when they make the final cut."""
    records: dict[str, dict[str, Any]] = {}
    methods: dict[str, list[str]] = {}
    found = {m: [r for r in rows if _wanted(request, kind, r)] for m, rows in found.items()}
    for method, rows in found.items():
        for row in rows:
            key = record_key(row["id"])
            if STUB in records.get(key, {STUB: True}):
                records[key] = row
            methods.setdefault(key, []).append(method)

    async def read(keys: Sequence[str]) -> None:
        stubs = [k for k in keys if STUB in records.get(k, {})]
        if stubs and hydrate is not None:
            current = await hydrate(stubs)
            for key in stubs:
                if key in current:
                    records[key] = current[key]
                else:
                    records.pop(key)

    async def read_top(ranked: list[tuple[str, float]], limit: int) -> list[Hit]:
        """The first `limit` hits, every one read back: a row gone from the database
        (the index had not heard yet) lets the next one up, which is read in turn."""
        while True:
            top = [(k, v) for k, v in ranked if k in records][:limit]
            if hydrate is None or not any(STUB in records[k] for k, _ in top):
                return [Hit(k, v, methods[k], records[k]) for k, v in top]
            await read([k for k, _ in top])

    fused = rerank.rrf([[record_key(r["id"]) for r in rows] for rows in found.values()])
    order = [key for key, _ in fused]
    if request.reranker in ("node_distance", "episode_mentions"):
        await read(order)
        order = [key for key in order if key in records]
    if request.reranker == "cross_encoder":
        # The model reranks these afterwards, across all kinds at once.
        return await read_top(fused, rank_prompt.MAX_PASSAGES)
    if request.reranker == "mmr" and vector is not None:
        ranked = rerank.mmr(
            vector, index.vectors_of(order), lambda_=request.mmr_lambda, limit=request.limit
        )
    elif request.reranker == "node_distance" and request.center_entity is not None:
        distance = await entity_distances(store, request.center_entity, request.moment, depth=3)
        ranked = rerank.by_distance(order, _distance_of(kind, records, distance), order)
    elif request.reranker == "episode_mentions":
        ranked = rerank.by_count(order, await _mentions(store, kind, records), order)
    else:
        ranked = fused
    ranked = [(key, score) for key, score in ranked if score >= request.min_score]
    return await read_top(ranked, request.limit)


def _wanted(request: SearchRequest, kind: str, row: dict[str, Any]) -> bool:
    """The request's type filters: entity types for entities, relations and edge types
    for facts (rows lacking the field, such as BFS endpoints, are checked when known)."""
    if kind == "entities":
        kind_of = row.get("entity_type")
        return not request.entity_types or kind_of is None or kind_of in request.entity_types
    if STUB in row:  # the index applied these filters already
        return True
    return (not request.relations or row.get("relation") in request.relations) and (
        not request.edge_types or row.get("edge_type") in request.edge_types
    )


def _distance_of(
    kind: str, records: dict[str, dict[str, Any]], distance: dict[str, int]
) -> dict[str, int]:
    if kind == "entities":
        return {k: distance[k] for k in records if k in distance}
    result = {}
    for key, fact in records.items():
        ends = [distance.get(record_key(fact["source"])), distance.get(record_key(fact["target"]))]
        known = [d for d in ends if d is not None]
        if known:
            result[key] = min(known)
    return result


async def _mentions(
    store: TenantStore, kind: str, records: dict[str, dict[str, Any]]
) -> dict[str, int]:
    if kind == "facts":
        return {k: len(r.get("episodes") or []) for k, r in records.items()}
    batch = queries.Batch()
    keys = list(records)
    for key in keys:
        batch.add(queries.ENTITY_MENTION_COUNT, id=records[key]["id"])
    counts = await store.query(batch.sql, batch.params) if keys else []
    return {key: int(count or 0) for key, count in zip(keys, counts, strict=True)}


async def _activation(
    store: TenantStore,
    index: EntityIndex,
    request: SearchRequest,
    embedder: Embedder,
    vector: list[float] | None,
) -> dict[str, list[dict[str, Any]]]:
    """Entities and facts reached by spreading activation from the query's seeds, best
    first (facts scored by the weaker end's activation times effective confidence)."""
    seeds = await activation_seeds(store, index, request, embedder, vector)
    seen: dict[str, dict[str, Any]] = {}
    names: dict[str, str] = {}

    async def neighbours(keys: Sequence[str]) -> list[Link]:
        rows = await store.query(
            queries.FACTS_NEAR,
            {**request.moment.params(), "entities": [_record(k) for k in keys], "limit": 500},
        )
        links = []
        for fact in (rows[0] or []) + (rows[1] or []):
            seen[record_key(fact["id"])] = fact
            names[record_key(fact["source"])] = fact["source_name"]
            names[record_key(fact["target"])] = fact["target_name"]
            links.append(
                Link(
                    record_key(fact["source"]),
                    record_key(fact["target"]),
                    float(fact["confidence"]),
                    float(fact.get("retrieval_count") or 0),
                    fact["valid_at"],
                )
            )
        return links

    levels = await spread(seeds, neighbours, ACTIVATION, datetime.now(UTC))
    for key in levels.keys() - names.keys():  # a seed with no visible fact
        names[key] = index.row(key)["name"] if key in index.positions else ""
    entities = [{"id": _record(k), "name": names[k], "activation": v} for k, v in levels.items()]
    scored = []
    for key, fact in seen.items():
        ends = [levels.get(record_key(fact["source"])), levels.get(record_key(fact["target"]))]
        if None in ends:
            continue
        weight = effective_confidence(
            float(fact["confidence"]), float(fact.get("retrieval_count") or 0)
        )
        scored.append((min(e for e in ends if e is not None) * weight, key))
    facts = [seen[key] for _, key in sorted(scored, key=lambda item: (-item[0], item[1]))]
    return {"facts": facts, "entities": entities}


async def activation_seeds(
    store: TenantStore,
    index: EntityIndex,
    request: SearchRequest,
    embedder: Embedder,
    vector: list[float] | None,
) -> dict[str, float]:
    """Full-text matches blended with structure (degree and edge-type diversity, weight
    0.3); by name embedding only when full text finds nothing."""
    rows = _entity_rows(index, index.bm25(request.query, index.of_types(), 20))
    if not rows:
        vector = vector or (await asyncio.to_thread(embedder.embed, [request.query]))[0]
        hits = index.cosine(vector, index.of_types(), 10)
        rows = [r for r in _entity_rows(index, hits) if r["score"] > 0.3]
    if not rows:
        return {}
    top = max(float(r.get("score") or 0) for r in rows) or 1.0
    top_degree = max(int(r.get("degree") or 0) for r in rows) or 1
    diversity = await _edge_type_diversity(store, [r["id"] for r in rows], request.moment)
    seeds = {}
    for row in rows:
        key = record_key(row["id"])
        structural = 0.5 * int(row.get("degree") or 0) / top_degree + 0.5 * diversity.get(key, 0.0)
        seeds[key] = (1 - SEED_STRUCTURE) * float(
            row.get("score") or 0
        ) / top + SEED_STRUCTURE * structural
    return seeds


async def _edge_type_diversity(
    store: TenantStore, entities: list[RecordID], moment: Moment
) -> dict[str, float]:
    rows = await store.query(
        queries.FACTS_NEAR, {**moment.params(), "entities": entities, "limit": 2000}
    )
    kinds: dict[str, set[str]] = {}
    for fact in (rows[0] or []) + (rows[1] or []):
        for end in (fact["source"], fact["target"]):
            kinds.setdefault(record_key(end), set()).add(fact["edge_type"])
    return {key: len(types) / 4 for key, types in kinds.items()}


def _record(key: str) -> RecordID:
    table, _, ident = key.partition(":")
    return RecordID(table, ident)


# --- graph reads ---------------------------------------------------------------------


def fact_endpoints(facts: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The entities at either end of `facts`, once each, in order of appearance."""
    ends: dict[str, dict[str, Any]] = {}
    for fact in facts:
        for end, name in (
            (fact["source"], fact["source_name"]),
            (fact["target"], fact["target_name"]),
        ):
            ends.setdefault(record_key(end), {"id": end, "name": name})
    return list(ends.values())


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
        start = await store.query_one(queries.GRAPH_ENTITY, {"id": seed})
        if not start:
            raise NotFound(f"no entity {record_key(seed)}")
        nodes = {record_key(seed): start}
        facts = await facts_near(store, [seed], moment or Moment.of(), depth=depth, limit=limit * 4)
        if moment is None:
            facts = await _all_facts(store, [f["source"] for f in facts] + [seed], limit * 4)
    else:
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
    ends = {record_key(e) for f in facts for e in (f["source"], f["target"])}
    batch = queries.Batch()
    missing = [key for key in ends if key not in nodes]
    for key in missing:
        batch.add(queries.GRAPH_ENTITY, id=_record(key))
    for row in await store.query(batch.sql, batch.params) if missing else []:
        if row:
            nodes[record_key(row["id"])] = row
    if entity_types:
        nodes = {k: n for k, n in nodes.items() if n["entity_type"] in entity_types}
    facts = [
        f for f in facts if record_key(f["source"]) in nodes and record_key(f["target"]) in nodes
    ]
    community = await _communities_of(store, list(nodes))
    return {
        "nodes": [
            {
                "data": {
                    "id": k,
                    "label": n["name"],
                    "type": n["entity_type"],
                    "degree": n.get("degree", 0),
                    "summary": n.get("summary", ""),
                    "created_at": n.get("created_at"),
                    "community": community.get(k),
                }
            }
            for k, n in nodes.items()
        ],
        "edges": [
            {
                "data": {
                    **f,
                    "id": record_key(f["id"]),
                    "source": record_key(f["source"]),
                    "target": record_key(f["target"]),
                }
            }
            for f in facts
        ],
    }


async def _communities_of(store: TenantStore, keys: list[str]) -> dict[str, str]:
    """The current community of each entity that has one (in one statement)."""
    if not keys:
        return {}
    rows = await store.query_one(
        queries.COMMUNITIES_OF_ENTITIES, {"entities": [_record(k) for k in keys]}
    )
    found: dict[str, str] = {}
    for row in rows or []:
        found.setdefault(record_key(row["entity"]), record_key(row["community"]))
    return found


async def _all_facts(store: TenantStore, entities: list[Any], limit: int) -> list[dict[str, Any]]:
    """Every fact out of or into the entities, history included, once each."""
    unique = list({record_key(e): e for e in entities}.values())
    out, into = await store.query(queries.GRAPH_FACTS, {"entities": unique, "limit": limit})
    facts = {record_key(f["id"]): f for f in (out or []) + (into or [])}
    return list(facts.values())[:limit]


async def facts_near(
    store: TenantStore, seeds: list[RecordID], moment: Moment, *, depth: int, limit: int
) -> list[dict[str, Any]]:
    """Visible facts within `depth` hops of the seeds, nearest first."""
    seen: dict[str, dict[str, Any]] = {}
    frontier = {record_key(s): s for s in seeds}
    visited = set(frontier)
    for _ in range(max(1, depth)):
        if not frontier or len(seen) >= limit:
            break
        rows = await store.query(
            queries.FACTS_NEAR,
            {**moment.params(), "entities": list(frontier.values()), "limit": limit},
        )
        nxt: dict[str, RecordID] = {}
        for fact in (rows[0] or []) + (rows[1] or []):
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
        rows = await store.query(
            queries.FACTS_NEAR, {**moment.params(), "entities": frontier, "limit": 10_000}
        )
        nxt = []
        for fact in (rows[0] or []) + (rows[1] or []):
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
) -> list[dict[str, Any]]:
    """Visible facts with an end among `entities` (LightRAG's one hop), those touching
    most of them first, then the most confident and recent; one read of the database,
    of no more facts than `budget` tokens could hold (see FactIndex.touching)."""
    index = await (indexes or Indexes(store)).facts()
    mask = index.visible(moment.as_of, moment.known_at)
    keys = index.touching(
        [record_key(e) for e in entities], mask, limit, budget=budget, per_fact=per_fact
    )
    rows = await _current_facts(store, index, keys)
    return [rows[k] for k in keys if k in rows and moment.shows(rows[k])]


async def entity_facts(
    store: TenantStore, entity: RecordID, moment: Moment
) -> list[dict[str, Any]]:
    outgoing, incoming = await store.query(
        queries.FACTS_OF_ENTITY, {**moment.params(), "entity": entity}
    )
    return sorted(
        (outgoing or []) + (incoming or []), key=lambda f: (f["valid_at"], record_key(f["id"]))
    )


async def entity_get(store: TenantStore, entity: RecordID) -> dict[str, Any]:
    row = await store.query_one(queries.ENTITY_GET, {"id": entity})
    if not row:
        raise NotFound(f"no entity {record_key(entity)}")
    return dict(row)


async def entity_episodes(
    store: TenantStore, entity: RecordID, *, limit: int = 20
) -> list[dict[str, Any]]:
    """Episodes that mention the entity (up to `limit`), newest first."""
    await entity_get(store, entity)  # 404 for an unknown entity
    times = await store.query_one(queries.ENTITY_EPISODE_TIMES, {"id": entity}) or []
    newest = sorted(times, key=lambda r: (r["valid_at"], record_key(r["id"])), reverse=True)
    batch = queries.Batch()
    for row in newest[:limit]:
        batch.add(queries.EPISODE_PASSAGE, id=row["id"])
    return [row for row in await store.query(batch.sql, batch.params) if row] if batch else []


async def entities_lookup(
    store: TenantStore, text: str, embedder: Embedder, *, limit: int
) -> list[dict[str, Any]]:
    """Entities whose name starts with `text`; by name similarity when none does."""
    prefix = canonical_name(text)
    rows = await store.query_one(
        queries.ENTITIES_PREFIX, {"prefix": prefix, "prefix_end": prefix + "\uffff", "limit": limit}
    )
    if rows:
        return list(rows)
    vector = (await asyncio.to_thread(embedder.embed, [text]))[0]
    index = await entity_index(store)
    hits = index.cosine(vector, index.of_types(), limit)
    return [row for row in _entity_rows(index, hits) if row["score"] >= 0.5]


async def fact_get(store: TenantStore, fact: RecordID) -> dict[str, Any]:
    row = await store.query_one(queries.FACT_BY_ID, {"id": fact})
    if not row:
        raise NotFound(f"no fact {record_key(fact)}")
    return dict(row)


async def fact_history(store: TenantStore, fact: RecordID) -> list[dict[str, Any]]:
    """The supersession chain through `fact`, oldest first, in both directions (at most
    64 hops each way). A retired fact is followed by its revision (the same fact with its
    validity closed), then by the fact that ended it."""
    start = await fact_get(store, fact)
    chain = [start]
    seen = {record_key(start["id"])}
    for backwards in (True, False):
        current = start
        for _ in range(HISTORY_HOPS):
            link = await _next_link(store, current, backwards=backwards)
            if link is None or record_key(link) in seen:
                break
            row = await fact_get(store, link)
            seen.add(record_key(link))
            chain.insert(0, row) if backwards else chain.append(row)
            current = row
    return chain


async def _next_link(store: TenantStore, fact: dict[str, Any], *, backwards: bool) -> Any:
    if backwards:
        return fact.get("revision_of") or fact.get("supersedes")
    revisions = await store.query_one(queries.FACT_REVISIONS, {"id": fact["id"]}) or []
    return revisions[0] if revisions else fact.get("superseded_by")
