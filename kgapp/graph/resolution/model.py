"""What resolution works on: entity and fact drafts, and the context of their episode.

A draft is made by extraction (ingest/extract.py, the offline extractor), then filled
in by resolution (which record it is, what it repeats or ends) and written by persist.
The stages take the ingest pipeline's context and episode (ingest.model's IngestContext
and EpisodeWork) through the two protocols at the end, which name what they use.
"""

from __future__ import annotations

import asyncio
import secrets
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from datetime import datetime
from typing import Literal, Protocol

from surrealdb.data.types.record_id import RecordID

from kgapp.graph.llm.client import LLMClient
from kgapp.graph.records import Entity, StoredFact
from kgapp.graph.store import TenantStore

EdgeType = Literal["semantic", "temporal", "causal", "entity"]


def new_key() -> str:
    """A random record key: time-ordered prefix (ms), then randomness."""
    return f"{int(time.time() * 1000):012x}{secrets.token_hex(6)}"


class Candidate(Entity):
    """An existing entity that may be a draft's: its row as the cache of name vectors
    holds it (resolution.vectors), with the cosine of their name vectors (`score`) and
    what proposed it (`method`). Persist reads it by key, to write a review candidate."""

    method: str


@dataclass
class EntityDraft:
    """An entity as extracted, then as resolved to a record."""

    name: str
    entity_type: str
    summary: str
    canonical: str = ""
    embedding: list[float] | None = None
    record: RecordID | None = None
    is_new: bool = True
    # Set when resolution matched another spelling: the alias to record for next time.
    alias: str | None = None
    # Existing entities that may be this one (embedding band or similar names), best
    # first, each with its `score` and the `method` that proposed it.
    candidates: list[Candidate] = field(default_factory=list)
    # Set when this name was merged into an existing entity automatically: recorded
    # (and undoable) as an `auto_merge` audit entry.
    merge: AutoMerge | None = None
    # False when it resolved through an alias or a merged entity's name: then its type
    # counts only after those of the entity's own names (persist.py).
    own_name: bool = True


@dataclass(frozen=True)
class AutoMerge:
    """Why an extracted name was merged into an existing entity without a person."""

    rule: str  # same_name | typo | llm
    score: float  # agreement of the names, 0..1
    cosine: float | None  # of the name embeddings, when they were compared
    survivor_name: str


@dataclass
class FactDraft:
    source: EntityDraft
    target: EntityDraft
    relation: str
    fact: str
    edge_type: EdgeType
    confidence: float
    valid_at: datetime
    invalid_at: datetime | None
    embedding: list[float] | None = None
    record: RecordID | None = None
    # Resolution outcome: an existing fact this one repeats, and existing facts it ends.
    duplicate_of: StoredFact | None = None
    contradicts: list[StoredFact] = field(default_factory=list)
    # When a newer fact already holds, this one ends where that one starts.
    closed_by: StoredFact | None = None


# Embeds the names it is given (and the episode's facts) into the context's name_vectors.
EmbedNames = Callable[[list[str]], Awaitable[None]]


class Timed(Protocol):
    def measure(self, stage: str) -> AbstractContextManager[None]: ...


class Relations(Protocol):
    def is_single_valued(self, relation: str) -> bool: ...


class Context(Protocol):
    """What a resolution stage reads of its episode's context (ingest.model.IngestContext)."""

    @property
    def store(self) -> TenantStore: ...
    @property
    def ontology(self) -> Relations: ...
    @property
    def llm(self) -> LLMClient | None: ...
    @property
    def counts(self) -> Counter[str]: ...
    @property
    def timings(self) -> Timed: ...
    @property
    def name_vectors(self) -> dict[str, list[float]]: ...


class Work(Protocol):
    """What a resolution stage reads and sets of one episode (ingest.model.EpisodeWork)."""

    @property
    def entities(self) -> list[EntityDraft]: ...

    facts: list[FactDraft]
    facts_ahead: asyncio.Future[dict[str, list[StoredFact]]] | None
