"""From the methods' candidate lists to the hits: fused by RRF, reranked as the request
asks (rerank.py's functions, or the model as a cross-encoder), and read back from the
database as far as the ranking needs."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from kgapp.graph import queries
from kgapp.graph.index.table import TableIndex
from kgapp.graph.llm.client import LLMClient
from kgapp.graph.llm.prompts import rank as rank_prompt
from kgapp.graph.records import record_key
from kgapp.graph.search import rerank
from kgapp.graph.search.model import Hit, SearchRequest
from kgapp.graph.search.reads import entity_distances
from kgapp.graph.store import TenantStore

STUB = "_stub"  # marks a search candidate not yet read from the database
# Reads the stubs among the given keys: the rows the database has now, by key.
Hydrate = Callable[[list[str]], Awaitable[dict[str, dict[str, Any]]]]


async def rank(
    store: TenantStore,
    request: SearchRequest,
    found: dict[str, list[dict[str, Any]]],
    vector: list[float] | None,
    *,
    kind: str,
    index: TableIndex,
    hydrate: Hydrate | None = None,
) -> list[Hit]:
    """Fuse the methods' lists, rerank, and keep `limit`. Rows marked STUB (a key and a
    score from the index) are read from the database only when a reranker needs their
    fields, or when they make the final cut."""
    found = {m: [r for r in rows if _wanted(request, kind, r)] for m, rows in found.items()}
    candidates = _Candidates(found, hydrate)
    fused = rerank.rrf([[record_key(r["id"]) for r in rows] for rows in found.values()])
    order = [key for key, _ in fused]
    if request.reranker in ("node_distance", "episode_mentions"):
        await candidates.read(order)
        order = [key for key in order if key in candidates.records]
    if request.reranker == "cross_encoder":
        # The model reranks these afterwards, across all kinds at once.
        return await candidates.read_top(fused, rank_prompt.MAX_PASSAGES)
    ranked = await _reranked(store, request, order, fused, candidates.records, vector, kind, index)
    ranked = [(key, score) for key, score in ranked if score >= request.min_score]
    return await candidates.read_top(ranked, request.limit)


class _Candidates:
    """The methods' rows by key, and the methods that found each; a STUB row stands for
    a record not read yet."""

    def __init__(self, found: dict[str, list[dict[str, Any]]], hydrate: Hydrate | None) -> None:
        self.records: dict[str, dict[str, Any]] = {}
        self.methods: dict[str, list[str]] = {}
        self._hydrate = hydrate
        for method, rows in found.items():
            for row in rows:
                key = record_key(row["id"])
                if STUB in self.records.get(key, {STUB: True}):
                    self.records[key] = row
                self.methods.setdefault(key, []).append(method)

    async def read(self, keys: Sequence[str]) -> None:
        """Read the stubs among `keys`; those the database no longer has are dropped."""
        stubs = [k for k in keys if STUB in self.records.get(k, {})]
        if stubs and self._hydrate is not None:
            current = await self._hydrate(stubs)
            for key in stubs:
                if key in current:
                    self.records[key] = current[key]
                else:
                    self.records.pop(key)

    async def read_top(self, ranked: list[tuple[str, float]], limit: int) -> list[Hit]:
        """The first `limit` hits, every one read back: a row gone from the database
        (the index had not heard yet) lets the next one up, which is read in turn."""
        while True:
            top = [(k, v) for k, v in ranked if k in self.records][:limit]
            if self._hydrate is None or not any(STUB in self.records[k] for k, _ in top):
                return [Hit(k, v, self.methods[k], self.records[k]) for k, v in top]
            await self.read([k for k, _ in top])


async def _reranked(
    store: TenantStore,
    request: SearchRequest,
    order: list[str],
    fused: list[tuple[str, float]],
    records: dict[str, dict[str, Any]],
    vector: list[float] | None,
    kind: str,
    index: TableIndex,
) -> list[tuple[str, float]]:
    """The candidates (`order`, as fused) by the request's reranker; the fused ranking
    itself for rrf, or when the reranker lacks what it needs (a vector, a center)."""
    if request.reranker == "mmr" and vector is not None:
        return rerank.mmr(
            vector, index.vectors_of(order), lambda_=request.mmr_lambda, limit=request.limit
        )
    if request.reranker == "node_distance" and request.center_entity is not None:
        distance = await entity_distances(store, request.center_entity, request.moment, depth=3)
        return rerank.by_distance(order, _distance_of(kind, records, distance), order)
    if request.reranker == "episode_mentions":
        return rerank.by_count(order, await _mentions(store, kind, records), order)
    return fused


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


async def cross_encode(
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
