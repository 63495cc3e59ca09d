"""From the methods' candidate lists to the hits: fused by RRF, reranked as the request
asks (rerank.py's functions, or the model as a cross-encoder), and read back from the
database as far as the ranking needs."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Generic, TypeVar

from surrealdb.data.types.record_id import RecordID

from kgapp.graph import queries
from kgapp.graph.index.table import TableIndex
from kgapp.graph.llm.client import LLMClient
from kgapp.graph.llm.prompts import rank as rank_prompt
from kgapp.graph.records import Episode, Fact, record_key
from kgapp.graph.search import rerank
from kgapp.graph.search.model import EntityEnd, FoundEntity, Hit, SearchRequest
from kgapp.graph.search.reads import entity_distances
from kgapp.graph.store import TenantStore

# A scope's records, as ranking reads them: a fact, or an entity (EntityEnd covers both
# an entity read in full and one known by its name).
R = TypeVar("R", bound=Fact | EntityEnd)
T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Stub:
    """A search candidate the index found (its key and score), not yet read from the
    database."""

    key: str
    score: float


# Reads the stubs among the given keys: the rows the database has now, by key.
Hydrate = Callable[[list[str]], Awaitable[Mapping[str, R]]]


@dataclass(frozen=True, slots=True)
class Kind(Generic[R]):
    """What ranking needs to know of one scope's records."""

    # The request's type filters (rows lacking the field, such as breadth-first
    # endpoints, are checked when known).
    wanted: Callable[[SearchRequest, R], bool]
    # The entities a record stands at, for the distance from the center.
    ends: Callable[[R], tuple[RecordID, ...]]
    # The episodes mentioning each record, by key.
    mentions: Callable[[TenantStore, Mapping[str, R]], Awaitable[dict[str, int]]]


async def rank(
    store: TenantStore,
    request: SearchRequest,
    found: Mapping[str, Sequence[R | Stub]],
    vector: list[float] | None,
    *,
    kind: Kind[R],
    index: TableIndex,
    hydrate: Hydrate[R] | None = None,
) -> list[Hit[R]]:
    """Fuse the methods' lists, rerank, and keep `limit`. Stubs (a key and a score from
    the index) are read from the database only when a reranker needs their fields, or
    when they make the final cut."""
    wanted = {m: [r for r in rows if _wanted(request, kind, r)] for m, rows in found.items()}
    candidates = _Candidates(wanted, hydrate)
    fused = rerank.rrf([[_key(r) for r in rows] for rows in wanted.values()])
    order = [key for key, _ in fused]
    if request.reranker in ("node_distance", "episode_mentions"):
        await candidates.read(order)
        order = [key for key in order if key in candidates.records]
    if request.reranker == "cross_encoder":
        # The model reranks these afterwards, across all kinds at once.
        return await candidates.read_top(fused, rank_prompt.MAX_PASSAGES)
    records = candidates.read_ones()
    ranked = await _reranked(store, request, order, fused, records, vector, kind, index)
    ranked = [(key, score) for key, score in ranked if score >= request.min_score]
    return await candidates.read_top(ranked, request.limit)


def _key(candidate: Fact | EntityEnd | Stub) -> str:
    return candidate.key if isinstance(candidate, Stub) else record_key(candidate["id"])


class _Candidates(Generic[R]):
    """The methods' rows by key, and the methods that found each; a Stub stands for a
    record not read yet."""

    def __init__(self, found: Mapping[str, Sequence[R | Stub]], hydrate: Hydrate[R] | None) -> None:
        self.records: dict[str, R | Stub] = {}
        self.methods: dict[str, list[str]] = {}
        self._hydrate = hydrate
        for method, rows in found.items():
            for row in rows:
                key = _key(row)
                current = self.records.get(key)
                if current is None or isinstance(current, Stub):
                    self.records[key] = row
                self.methods.setdefault(key, []).append(method)

    def read_ones(self) -> dict[str, R]:
        """The records read, by key."""
        return {k: r for k, r in self.records.items() if not isinstance(r, Stub)}

    async def read(self, keys: Sequence[str]) -> None:
        """Read the stubs among `keys`; those the database no longer has are dropped."""
        stubs = [k for k in keys if isinstance(self.records.get(k), Stub)]
        if stubs and self._hydrate is not None:
            current = await self._hydrate(stubs)
            for key in stubs:
                if key in current:
                    self.records[key] = current[key]
                else:
                    self.records.pop(key)

    async def read_top(self, ranked: list[tuple[str, float]], limit: int) -> list[Hit[R]]:
        """The first `limit` hits, every one read back: a row gone from the database
        (the index had not heard yet) lets the next one up, which is read in turn. Only
        a scope with a `hydrate` has stubs."""
        while True:
            top = [(k, v) for k, v in ranked if k in self.records][:limit]
            hits = [
                Hit(k, v, self.methods[k], record)
                for k, v in top
                if not isinstance(record := self.records[k], Stub)
            ]
            if self._hydrate is None or len(hits) == len(top):
                return hits
            await self.read([k for k, _ in top])


async def _reranked(
    store: TenantStore,
    request: SearchRequest,
    order: list[str],
    fused: list[tuple[str, float]],
    records: dict[str, R],
    vector: list[float] | None,
    kind: Kind[R],
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
        return rerank.by_count(order, await kind.mentions(store, records), order)
    return fused


def _wanted(request: SearchRequest, kind: Kind[R], row: R | Stub) -> bool:
    """A stub passed the request's type filters in the index already."""
    return isinstance(row, Stub) or kind.wanted(request, row)


def _distance_of(kind: Kind[R], records: dict[str, R], distance: dict[str, int]) -> dict[str, int]:
    """Each record's distance from the center: that of its nearest end."""
    result = {}
    for key, record in records.items():
        ends = [distance.get(record_key(end)) for end in kind.ends(record)]
        known = [d for d in ends if d is not None]
        if known:
            result[key] = min(known)
    return result


# --- the two scopes ranked here ------------------------------------------------------


def _fact_wanted(request: SearchRequest, fact: Fact) -> bool:
    return (not request.relations or fact.get("relation") in request.relations) and (
        not request.edge_types or fact.get("edge_type") in request.edge_types
    )


async def _fact_mentions(store: TenantStore, facts: Mapping[str, Fact]) -> dict[str, int]:
    return {k: len(r.get("episodes") or []) for k, r in facts.items()}


def _entity_wanted(request: SearchRequest, entity: FoundEntity) -> bool:
    kind_of = entity.get("entity_type")
    return not request.entity_types or kind_of is None or kind_of in request.entity_types


async def _entity_mentions(
    store: TenantStore, entities: Mapping[str, FoundEntity]
) -> dict[str, int]:
    batch = queries.Batch()
    keys = list(entities)
    for key in keys:
        batch.add(queries.ENTITY_MENTION_COUNT, id=entities[key]["id"])
    counts = await store.query(batch.sql, batch.params) if keys else []
    return {key: int(count or 0) for key, count in zip(keys, counts, strict=True)}


FACTS: Kind[Fact] = Kind(
    wanted=_fact_wanted, ends=lambda fact: (fact["source"], fact["target"]), mentions=_fact_mentions
)
ENTITIES: Kind[FoundEntity] = Kind(
    wanted=_entity_wanted, ends=lambda entity: (entity["id"],), mentions=_entity_mentions
)


# --- the model as a cross-encoder ------------------------------------------------------


async def cross_encode(
    llm: LLMClient, request: SearchRequest, hits: list[Hit[T]], passage: Callable[[T], str]
) -> list[Hit[T]]:
    """Rerank the fused candidates by the model's relevance judgement (one call), each
    read as `passage` gives it."""
    if not hits:
        return hits
    candidates = hits[: rank_prompt.MAX_PASSAGES]
    answer = await llm.structured(
        task=rank_prompt.TASK,
        schema=rank_prompt.Ranking,
        system=rank_prompt.SYSTEM,
        user=rank_prompt.user_prompt(request.query, [passage(h.record) for h in candidates]),
    )
    relevance = {p.index: p.relevance for p in answer.passages if 0 <= p.index < len(candidates)}
    order = sorted(range(len(candidates)), key=lambda i: (-relevance.get(i, 0.0), i))
    ranked = [
        replace(
            candidates[i],
            score=relevance.get(i, 0.0),
            found_by=[*candidates[i].found_by, "cross_encoder"],
        )
        for i in order
    ]
    return [h for h in ranked if h.score >= request.min_score][: request.limit]


def fact_passage(fact: Fact) -> str:
    return str(fact.get("fact", ""))


def entity_passage(entity: FoundEntity) -> str:
    return f"{entity.get('name', '')}: {entity.get('summary', '')}"


def episode_passage(episode: Episode) -> str:
    return str(episode.get("content", ""))
