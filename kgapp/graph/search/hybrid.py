"""Hybrid search over one tenant's graph: facts, entities, episodes and communities,
each scope by its methods (BM25 and cosine from the tenant's search index, breadth first
from a center entity, spreading activation), the lists fused and reranked (ranking.py).

Every fact read goes through the bi-temporal filter: valid at `as_of`, as known at
`known_at`; both default to now, which is "current only" (valid now and not retired).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from kgapp.graph import queries
from kgapp.graph.embeddings import Embedder
from kgapp.graph.index import EntityIndex, FactIndex
from kgapp.graph.llm.client import LLMClient
from kgapp.graph.records import Community, Episode, Fact, as_community, as_episode, record_key
from kgapp.graph.search import rerank
from kgapp.graph.search.activation import Activated, activation_search
from kgapp.graph.search.model import (
    ActivatedEntity,
    FoundEntity,
    Hit,
    RerankerUnavailable,
    SearchRequest,
    SearchResults,
)
from kgapp.graph.search.ranking import (
    ENTITIES,
    FACTS,
    Stub,
    cross_encode,
    entity_passage,
    episode_passage,
    fact_passage,
    rank,
)
from kgapp.graph.search.reads import (
    Indexes,
    current_facts,
    entity_rows,
    fact_endpoints,
    facts_near,
)
from kgapp.graph.search.retrieval_counts import count_retrievals
from kgapp.graph.store import TenantStore


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
    indexes = indexes or Indexes(store)
    if "activation" in request.methods:
        activated = await activation_search(
            store, await indexes.entities(), request, embedder, vector
        )
    else:
        activated = Activated(facts=[], entities=[])
    facts: list[Hit[Fact]] = []
    entities: list[Hit[FoundEntity]] = []
    episodes: list[Hit[Episode]] = []
    communities: list[Hit[Community]] = []
    if "facts" in request.scopes:
        facts = await _facts(store, await indexes.facts(), request, vector, activated.facts)
    if "entities" in request.scopes:
        entity_index = await indexes.entities()
        entities = await _entities(store, entity_index, request, vector, activated.entities)
    if "episodes" in request.scopes:
        episodes = await _episodes(store, request, vector)
    if "communities" in request.scopes:
        communities = await _communities(store, request)
    if request.reranker == "cross_encoder" and llm is not None:
        facts = await cross_encode(llm, request, facts, fact_passage)
        entities = await cross_encode(llm, request, entities, entity_passage)
        episodes = await cross_encode(llm, request, episodes, episode_passage)
    await count_retrievals(store, facts)
    return SearchResults(facts, entities, episodes, communities, vector=vector)


async def _facts(
    store: TenantStore,
    index: FactIndex,
    request: SearchRequest,
    vector: list[float] | None,
    activated: list[Fact],
) -> list[Hit[Fact]]:
    pool = request.limit * 4
    found: dict[str, Sequence[Fact | Stub]] = {}
    ranked: dict[str, list[tuple[str, float]]] = {}
    if "bm25" in request.methods or ("cosine" in request.methods and vector is not None):
        moment = request.moment
        mask = index.visible(moment.as_of, moment.known_at, request.relations, request.edge_types)
        if "bm25" in request.methods:
            ranked["bm25"] = index.bm25(request.query, mask, pool)
        if "cosine" in request.methods and vector is not None:
            ranked["cosine"] = index.cosine(vector, mask, pool)
        for method, hits in ranked.items():  # read back only as far as ranking needs
            found[method] = [Stub(key, score) for key, score in hits]
    if "bfs" in request.methods and request.center_entity is not None:
        near = await facts_near(
            store, [request.center_entity], request.moment, depth=request.bfs_depth, limit=pool
        )
        found["bfs"] = [fact.copy() for fact in near]
    if activated:
        found["activation"] = activated

    async def current(keys: list[str]) -> dict[str, Fact]:
        rows = await current_facts(store, index, keys)
        return {k: row.copy() for k, row in rows.items() if request.moment.shows(row)}

    return await rank(store, request, found, vector, kind=FACTS, index=index, hydrate=current)


async def _entities(
    store: TenantStore,
    index: EntityIndex,
    request: SearchRequest,
    vector: list[float] | None,
    activated: list[ActivatedEntity],
) -> list[Hit[FoundEntity]]:
    pool = request.limit * 4
    found: dict[str, Sequence[FoundEntity]] = {}
    if "bm25" in request.methods or ("cosine" in request.methods and vector is not None):
        mask = index.of_types(request.entity_types)
        if "bm25" in request.methods:
            found["bm25"] = await entity_rows(store, index.bm25(request.query, mask, pool))
        if "cosine" in request.methods and vector is not None:
            found["cosine"] = await entity_rows(store, index.cosine(vector, mask, pool))
    if "bfs" in request.methods and request.center_entity is not None:
        facts = await facts_near(
            store, [request.center_entity], request.moment, depth=request.bfs_depth, limit=pool
        )
        found["bfs"] = fact_endpoints(facts)
    if activated:
        found["activation"] = activated
    return await rank(store, request, found, vector, kind=ENTITIES, index=index)


async def _episodes(
    store: TenantStore, request: SearchRequest, vector: list[float] | None
) -> list[Hit[Episode]]:
    """By full text, and by meaning when the query's vector is given (the episodes whose
    units are embedded, schema/0011), the two lists fused by RRF; in one round trip."""
    batch = queries.Batch()
    batch.add(queries.EPISODES_BM25, query=request.query, limit=request.limit)
    if vector is not None:
        batch.add(queries.EPISODES_NEAREST, vector=vector, limit=request.limit)
    read = await store.query(batch.sql, batch.params)
    found = [[as_episode(r) for r in rows or []] for rows in read]
    if len(found) == 1:
        return [Hit(record_key(r["id"]), float(r.get("score") or 0), ["bm25"], r) for r in found[0]]
    rows: dict[str, Episode] = {}
    methods: dict[str, list[str]] = {}
    for method, listed in zip(("bm25", "cosine"), found, strict=True):
        for row in listed:
            rows.setdefault(record_key(row["id"]), row)
            methods.setdefault(record_key(row["id"]), []).append(method)
    fused = rerank.rrf([[record_key(r["id"]) for r in listed] for listed in found])
    return [Hit(key, score, methods[key], rows[key]) for key, score in fused[: request.limit]]


async def _communities(store: TenantStore, request: SearchRequest) -> list[Hit[Community]]:
    """Current communities whose name or summary match (full text)."""
    rows = await store.query_one(
        queries.COMMUNITIES_BM25, {"query": request.query, "limit": request.limit}
    )
    found = [as_community(r) for r in rows or []]
    return [Hit(record_key(r["id"]), float(r.get("score") or 0), ["bm25"], r) for r in found]
