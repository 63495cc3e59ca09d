"""SYNAPSE spreading activation over the entity graph (Zeph's design, SA-INV-01..08).

Activation starts at seed entities and flows along visible facts, decaying per hop:
    spread = score x decay x effective_confidence x recency
with lateral inhibition (a node at or above `inhibition` receives nothing more, checked in
both the current and the next map), a clamped sum (never above 1.0), a per-hop cap on
active nodes, and a hard deadline after which whatever has been computed is returned.

The search method "activation" (`activation_search`) seeds it from the query's entity
matches, reads the neighbours of each hop's active entities as one statement, and ranks
the facts it reached by the weaker end's activation times effective confidence.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from surrealdb.data.types.record_id import RecordID

from kgapp.graph.embeddings import Embedder
from kgapp.graph.index import EntityIndex
from kgapp.graph.records import Fact, record_key
from kgapp.graph.search.model import ActivatedEntity, SearchRequest
from kgapp.graph.search.reads import entity_rows, facts_near_once, record_id
from kgapp.graph.store import TenantStore
from kgapp.graph.time import Moment


@dataclass(frozen=True)
class ActivationConfig:
    decay: float = 0.85
    max_hops: int = 3
    threshold: float = 0.1
    inhibition: float = 0.8
    max_active: int = 50
    deadline: float = 0.5  # seconds
    temporal_decay_rate: float = 0.0  # per day; 0 disables recency weighting

    def __post_init__(self) -> None:
        if self.max_hops < 1 or self.decay <= 0 or not self.threshold < self.inhibition:
            raise ValueError("need max_hops >= 1, decay > 0 and threshold < inhibition")


@dataclass(frozen=True)
class Link:
    """A visible fact seen from one of its ends."""

    source: str
    target: str
    confidence: float
    retrieval_count: float
    valid_at: datetime


Neighbours = Callable[[Sequence[str]], Awaitable[Sequence[Link]]]


def effective_confidence(confidence: float, retrieval_count: float) -> float:
    """A-MEM weight evolution, with its mandatory cap at 1.0; a never-retrieved fact
    keeps its confidence unchanged."""
    if retrieval_count <= 0:
        return confidence
    return confidence * min(1.0, 1.0 + 0.2 * math.log(1 + retrieval_count))


def recency(valid_at: datetime, now: datetime, rate: float) -> float:
    age_days = max(0.0, (now - valid_at).total_seconds() / 86400)
    return 1.0 / (1.0 + age_days * rate)


async def spread(
    seeds: dict[str, float], neighbours: Neighbours, config: ActivationConfig, now: datetime
) -> dict[str, float]:
    """Activation per entity, at or above the threshold; partial if the deadline passes."""
    started = time.monotonic()
    # SA-INV-01: seeds are anchors, but a seed below the threshold does not start.
    activation = {k: min(1.0, v) for k, v in seeds.items() if v >= config.threshold}
    for _ in range(config.max_hops):
        active = [k for k, v in activation.items() if v >= config.threshold]
        remaining = config.deadline - (time.monotonic() - started)
        if not active or remaining <= 0:
            break
        try:
            links = await asyncio.wait_for(neighbours(active), remaining)
        except TimeoutError:
            break  # SA-INV-07: return what there is
        following: dict[str, float] = {}
        for link in links:
            for origin, other in ((link.source, link.target), (link.target, link.source)):
                score = activation.get(origin)
                if score is None or score < config.threshold:
                    continue
                # SA-INV-03: inhibition looks at both maps.
                if (
                    activation.get(other, 0.0) >= config.inhibition
                    or following.get(other, 0.0) >= config.inhibition
                ):
                    continue
                amount = (
                    score
                    * config.decay
                    * effective_confidence(link.confidence, link.retrieval_count)
                    * recency(link.valid_at, now, config.temporal_decay_rate)
                )
                following[other] = min(1.0, following.get(other, 0.0) + amount)  # SA-INV-06
        for key, amount in following.items():
            activation[key] = min(1.0, activation.get(key, 0.0) + amount)
        if len(activation) > config.max_active:  # SA-INV-04
            kept = sorted(activation.items(), key=lambda item: -item[1])[: config.max_active]
            activation = dict(kept)
    return {
        k: v for k, v in sorted(activation.items(), key=lambda i: -i[1]) if v >= config.threshold
    }


# --- the search method -------------------------------------------------------------

ACTIVATION = ActivationConfig()
SEED_STRUCTURE = 0.3


@dataclass(frozen=True, slots=True)
class Activated:
    """What spreading activation reached, best first."""

    facts: list[Fact]
    entities: list[ActivatedEntity]


async def activation_search(
    store: TenantStore,
    index: EntityIndex,
    request: SearchRequest,
    embedder: Embedder,
    vector: list[float] | None,
) -> Activated:
    """Entities and facts reached by spreading activation from the query's seeds, best
    first (facts scored by the weaker end's activation times effective confidence)."""
    seeds, names = await activation_seeds(store, index, request, embedder, vector)
    seen: dict[str, Fact] = {}

    async def neighbours(keys: Sequence[str]) -> list[Link]:
        facts = await facts_near_once(store, [record_id(k) for k in keys], request.moment, 500)
        for fact in facts:
            seen[record_key(fact["id"])] = fact
            names[record_key(fact["source"])] = fact["source_name"]
            names[record_key(fact["target"])] = fact["target_name"]
        return [_link(fact) for fact in facts]

    levels = await spread(seeds, neighbours, ACTIVATION, datetime.now(UTC))
    entities = [
        ActivatedEntity(id=record_id(k), name=names.get(k, ""), activation=v)
        for k, v in levels.items()
    ]
    return Activated(facts=_reached(seen, levels), entities=entities)


def _link(fact: Fact) -> Link:
    return Link(
        record_key(fact["source"]),
        record_key(fact["target"]),
        float(fact["confidence"]),
        float(fact.get("retrieval_count") or 0),
        fact["valid_at"],
    )


def _reached(seen: dict[str, Fact], levels: dict[str, float]) -> list[Fact]:
    """The facts with both ends active, by the weaker end's activation times the fact's
    effective confidence, best first."""
    scored = []
    for key, fact in seen.items():
        ends = [levels.get(record_key(fact["source"])), levels.get(record_key(fact["target"]))]
        if None in ends:
            continue
        weight = effective_confidence(
            float(fact["confidence"]), float(fact.get("retrieval_count") or 0)
        )
        scored.append((min(e for e in ends if e is not None) * weight, key))
    return [seen[key].copy() for _, key in sorted(scored, key=lambda item: (-item[0], item[1]))]


async def activation_seeds(
    store: TenantStore,
    index: EntityIndex,
    request: SearchRequest,
    embedder: Embedder,
    vector: list[float] | None,
) -> tuple[dict[str, float], dict[str, str]]:
    """Full-text matches blended with structure (degree and edge-type diversity, weight
    0.3); by name embedding only when full text finds nothing. With the seeds' names."""
    rows = await entity_rows(store, index.bm25(request.query, index.of_types(), 20))
    if not rows:
        vector = vector or (await asyncio.to_thread(embedder.embed, [request.query]))[0]
        hits = [hit for hit in index.cosine(vector, index.of_types(), 10) if hit[1] > 0.3]
        rows = await entity_rows(store, hits)
    if not rows:
        return {}, {}
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
    return seeds, {record_key(row["id"]): str(row.get("name") or "") for row in rows}


async def _edge_type_diversity(
    store: TenantStore, entities: list[RecordID], moment: Moment
) -> dict[str, float]:
    kinds: dict[str, set[str]] = {}
    for fact in await facts_near_once(store, entities, moment, 2000):
        for end in (fact["source"], fact["target"]):
            kinds.setdefault(record_key(end), set()).add(fact["edge_type"])
    return {key: len(types) / 4 for key, types in kinds.items()}
