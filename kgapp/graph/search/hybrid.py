"""Hybrid search over one tenant's graph: facts, entities, episodes and communities,
each scope by its methods (BM25 and cosine from the tenant's search index, breadth first
from a center entity, spreading activation), the lists fused and reranked (ranking.py).

Every fact read goes through the bi-temporal filter: valid at `as_of`, as known at
`known_at`; both default to now, which is "current only" (valid now and not retired).
"""

from __future__ import annotations

import asyncio
from typing import Any

from kgapp.graph import queries
from kgapp.graph.embeddings import Embedder
from kgapp.graph.index import EntityIndex, FactIndex
from kgapp.graph.llm.client import LLMClient
from kgapp.graph.records import record_key
from kgapp.graph.search import rerank
from kgapp.graph.search.activation import activation_search
from kgapp.graph.search.model import Hit, RerankerUnavailable, SearchRequest, SearchResults
from kgapp.graph.search.ranking import STUB, cross_encode, rank
from kgapp.graph.search.reads import (
    Indexes,
    current_facts,
    entity_rows,
    fact_endpoints,
    facts_near,
    record_id,
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
    results = SearchResults(vector=vector)
    indexes = indexes or Indexes(store)
    if "activation" in request.methods:
        activated = await activation_search(
            store, await indexes.entities(), request, embedder, vector
        )
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
            setattr(results, kind, await cross_encode(llm, request, hits, kind))
    await count_retrievals(store, results.facts)
    return results


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
            found[method] = [{"id": record_id(k), "score": score, STUB: True} for k, score in hits]
    if "bfs" in request.methods and request.center_entity is not None:
        near = await facts_near(
            store, [request.center_entity], request.moment, depth=request.bfs_depth, limit=pool
        )
        found["bfs"] = [dict(fact) for fact in near]
    if activated:
        found["activation"] = activated

    async def current(keys: list[str]) -> dict[str, dict[str, Any]]:
        rows = await current_facts(store, index, keys)
        return {k: dict(row) for k, row in rows.items() if request.moment.shows(row)}

    return await rank(store, request, found, vector, kind="facts", index=index, hydrate=current)


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
    return await rank(store, request, found, vector, kind="entities", index=index)


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
