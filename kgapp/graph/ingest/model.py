"""The data that flows through the ingestion pipeline, stage to stage."""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from functools import cached_property
from typing import Any, Literal, TypedDict

from surrealdb.data.types.record_id import RecordID

from kgapp.graph.documents.messages import Message, parse_message_lines
from kgapp.graph.embeddings import Embedder
from kgapp.graph.ingest.offline.extractor import OfflineExtractor
from kgapp.graph.llm.client import LLMClient
from kgapp.graph.ontology import Ontology
from kgapp.graph.records import StoredFact
from kgapp.graph.resolution.model import EntityDraft, FactDraft
from kgapp.graph.store import TenantStore

Source = Literal["message", "text", "json", "chunk"]


@dataclass(frozen=True)
class EpisodeInput:
    """One episode to ingest, as the API or the document splitter hands it over.

    A conversation's window (source `message`) keeps its `messages` (speaker, text,
    time) as well as their `speaker: text` lines in `content`, which is what is stored
    and what a model is shown."""

    content: str
    source: Source
    reference_time: datetime
    name: str = ""
    source_description: str = ""
    saga: str | None = None
    document: RecordID | None = None
    chunk_index: int | None = None
    messages: tuple[Message, ...] = ()
    # A conversation window's message keys (documents.messages.message_keys), by which a
    # later export of the same conversation recognises these messages.
    message_keys: tuple[str, ...] = ()

    @cached_property
    def turns(self) -> tuple[Message, ...]:
        """The messages of a `message` episode that say something: those its document
        gave, or else those of its `speaker: text` lines (an episode posted through the
        API), read once; none for other sources. DocumentError (a ValueError) when the
        lines are no messages."""
        if self.source != "message":
            return ()
        if not self.messages:
            return parse_message_lines(self.content)
        return tuple(m for m in self.messages if m.text.strip())


class _ParamsFields(TypedDict):
    content: str
    source: Source
    reference_time: str  # ISO 8601


class EpisodeParams(_ParamsFields, total=False):
    """An episode as an ingest job's params keep it (service.submit, service.run)."""

    name: str
    source_description: str
    saga: str | None
    document: RecordID | None
    chunk_index: int | None


@dataclass
class Timings:
    totals: dict[str, float] = field(default_factory=dict)

    @contextmanager
    def measure(self, stage: str) -> Iterator[None]:
        started = time.perf_counter()
        try:
            yield
        finally:
            elapsed = (time.perf_counter() - started) * 1000
            self.totals[stage] = round(self.totals.get(stage, 0.0) + elapsed, 3)


@dataclass(frozen=True)
class Progress:
    """Where job `job` will stand once the episode in hand is done (ingest/progress.py)."""

    job: RecordID
    done: int
    total: int


@dataclass
class IngestContext:
    """What every stage of one episode works with. The store is bound to one tenant."""

    store: TenantStore
    ontology: Ontology
    embedder: Embedder
    llm: LLMClient | None
    now: datetime
    # Extraction without an LLM; None: the default spaCy pipeline (offline.DEFAULT_MODEL).
    extractor: OfflineExtractor | None = None
    counts: Counter[str] = field(default_factory=Counter)
    timings: Timings = field(default_factory=Timings)
    notes: list[str] = field(default_factory=list)
    # Offline extractions started ahead of their episode (extract.extract_ahead), by
    # episode, and the name vectors computed with them, by name.
    ahead: dict[str, asyncio.Future[Any]] = field(default_factory=dict)
    name_vectors: dict[str, list[float]] = field(default_factory=dict)
    # The text of each document's chunk last sent to the offline extractor: the next
    # chunk is read after it (who "she" is, which company "the company" is).
    previous_text: dict[str, str] = field(default_factory=dict)
    # What the job's indexing phase embeds (ingest/indexing.py): its episodes written
    # without their vectors, the facts it wrote without theirs, and those of the
    # episodes an earlier run of it wrote (`earlier`).
    episodes: list[RecordID] = field(default_factory=list)
    facts: list[RecordID] = field(default_factory=list)
    earlier: list[RecordID] = field(default_factory=list)
    # The job's progress once the episode in hand is done: written with the episode
    # (persist.py), which then clears it; still set, it is written on its own.
    progress: Progress | None = None


@dataclass
class EpisodeWork:
    """One episode on its way through the stages."""

    input: EpisodeInput
    record: RecordID
    content_hash: str
    screened_out: tuple[str, ...] = ()
    context: list[str] = field(default_factory=list)
    previous: RecordID | None = None
    # The extractor's answer, kept so that a retry re-resolves without asking again.
    extraction: Any = None
    entities: list[EntityDraft] = field(default_factory=list)
    facts: list[FactDraft] = field(default_factory=list)
    # Its passage units' vectors (indexing.embed_episode), written with it; kept so
    # that a retry does not embed them again. Its facts' vectors by text, where the
    # offline extraction embedded them ahead (extract.extract_ahead).
    unit_vectors: list[list[float]] | None = None
    fact_vectors: dict[str, list[float]] = field(default_factory=dict)
    # The passage units being embedded aside while the model extracts and the names
    # resolve (indexing.embed_units_aside); persist waits for it.
    units_embedding: asyncio.Future[None] | None = None
    # The current facts of the subjects resolved by their names, read while the other
    # names resolve (resolve_facts.read_facts_ahead), by subject; existing_facts takes it.
    facts_ahead: asyncio.Future[dict[str, list[StoredFact]]] | None = None
