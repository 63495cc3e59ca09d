"""What a search asks for (SearchRequest) and what it finds (SearchResults of Hits)."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Generic, TypedDict, TypeVar

from surrealdb.data.types.record_id import RecordID
from typing_extensions import ReadOnly

from kgapp.graph.errors import GraphError
from kgapp.graph.records import Community, Entity, Episode, Fact
from kgapp.graph.time import Moment

R = TypeVar("R")

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


class EntityEnd(TypedDict):
    """An entity known by its id and name alone: an end of a fact, named as the fact's
    row names it."""

    id: ReadOnly[RecordID]
    name: ReadOnly[str]


class ActivatedEntity(EntityEnd):
    """An entity that spreading activation reached, with its activation."""

    activation: float


# An entity as a search finds it: read in full (with its score), or named by a fact's
# row (breadth first) or by spreading activation (ActivatedEntity).
FoundEntity = Entity | EntityEnd


@dataclass(frozen=True, slots=True)
class Hit(Generic[R]):
    """A record found, its key, its score and the methods that found it."""

    id: str
    score: float
    found_by: list[str]
    record: R


@dataclass(frozen=True, slots=True)
class SearchResults:
    facts: list[Hit[Fact]] = field(default_factory=list)
    entities: list[Hit[FoundEntity]] = field(default_factory=list)
    episodes: list[Hit[Episode]] = field(default_factory=list)
    communities: list[Hit[Community]] = field(default_factory=list)
    # The query's embedding, when a scope searched by meaning.
    vector: list[float] | None = None


class RerankerUnavailable(GraphError):
    """The cross-encoder reranker needs a model, and none is configured."""
