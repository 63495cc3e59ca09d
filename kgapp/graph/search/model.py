"""What a search asks for (SearchRequest) and what it finds (SearchResults of Hits)."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from surrealdb.data.types.record_id import RecordID

from kgapp.graph.errors import GraphError
from kgapp.graph.time import Moment

# The search vocabulary, defined here once: the core, the recipes, the API schemas and
# the MCP tools all use these (a StrEnum member equals its string).


class Scope(StrEnum):
    """What a search returns."""

    FACTS = "facts"
    ENTITIES = "entities"
    EPISODES = "episodes"
    COMMUNITIES = "communities"


class Method(StrEnum):
    """How a search finds candidates."""

    BM25 = "bm25"
    COSINE = "cosine"
    BFS = "bfs"
    ACTIVATION = "activation"


class Reranker(StrEnum):
    """How a search orders what its methods found."""

    RRF = "rrf"
    MMR = "mmr"
    NODE_DISTANCE = "node_distance"
    EPISODE_MENTIONS = "episode_mentions"
    CROSS_ENCODER = "cross_encoder"


@dataclass(frozen=True)
class SearchRequest:
    query: str
    scopes: tuple[Scope, ...] = (Scope.FACTS, Scope.ENTITIES)
    methods: tuple[Method, ...] = (Method.BM25, Method.COSINE)
    reranker: Reranker = Reranker.RRF
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
