"""What a search asks for (SearchRequest) and what it finds (SearchResults of Hits)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from surrealdb.data.types.record_id import RecordID

from kgapp.graph.errors import GraphError
from kgapp.graph.time import Moment

Scope = Literal["facts", "entities", "episodes", "communities"]
Method = Literal["bm25", "cosine", "bfs", "activation"]
Reranker = Literal["rrf", "mmr", "node_distance", "episode_mentions", "cross_encoder"]


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
