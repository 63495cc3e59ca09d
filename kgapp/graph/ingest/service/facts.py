"""A fact added by hand: a triplet resolved and superseding exactly as extracted facts
are, recorded with an episode of source `json` for provenance."""

from __future__ import annotations

import asyncio
import random
from dataclasses import dataclass
from datetime import UTC, datetime

from surrealdb.data.types.record_id import RecordID

from kgapp.graph import queries
from kgapp.graph.embeddings import Embedder
from kgapp.graph.errors import UniqueViolation, WriteConflict
from kgapp.graph.ingest.extract import drafts_from
from kgapp.graph.ingest.model import EpisodeInput, EpisodeWork
from kgapp.graph.ingest.pipeline import ingest_context, resolve_and_persist
from kgapp.graph.ingest.prepare import episode_record
from kgapp.graph.llm.prompts.extract import ExtractedEntity, ExtractedFact, Extraction
from kgapp.graph.records import StoredFact, as_stored_fact
from kgapp.graph.resolution.canonical import content_hash
from kgapp.graph.store import TenantStore

FACT_ADD_ATTEMPTS = 4


@dataclass(frozen=True)
class FactAdded:
    fact: StoredFact
    created: bool  # False: the fact was known already (posted again, or a duplicate)


async def fact_add(
    store: TenantStore,
    *,
    source: tuple[str, str | None],
    relation: str,
    target: tuple[str, str | None],
    fact: str | None,
    valid_at: datetime | None,
    invalid_at: datetime | None,
    confidence: float,
    embedder: Embedder,
    created_by: str | None,
) -> FactAdded:
    """A triplet added by hand, resolved and superseding exactly as extracted facts are.
    It is recorded with an episode of source `json` for provenance, whose id follows from
    its content: posting the same fact again gives back the one recorded. A write that
    conflicts with a concurrent one is re-read and retried; WriteConflict after that."""
    now = datetime.now(UTC)
    extraction = _triplet(
        source,
        relation,
        target,
        fact=fact or f"{source[0]} {relation} {target[0]}",
        confidence=confidence,
        valid_at=valid_at or now,
        invalid_at=invalid_at,
    )
    episode = EpisodeInput(
        content=extraction.model_dump_json(),
        source="json",
        reference_time=valid_at or now,
        source_description=f"fact added through the API by {created_by or 'unknown'}",
    )
    for attempt in range(FACT_ADD_ATTEMPTS):
        added = await _fact_add_once(store, episode, extraction, embedder)
        if added is not None:
            return added
        if attempt < FACT_ADD_ATTEMPTS - 1:
            await asyncio.sleep(random.uniform(0.02, 0.1) * 2**attempt)
    raise WriteConflict("the fact conflicted with concurrent writes to the same entities; retry it")


def _triplet(
    source: tuple[str, str | None],
    relation: str,
    target: tuple[str, str | None],
    *,
    fact: str,
    confidence: float,
    valid_at: datetime,
    invalid_at: datetime | None,
) -> Extraction:
    """The triplet as an extractor's answer: its two entities and the one fact."""
    return Extraction(
        entities=[
            ExtractedEntity(name=source[0], entity_type=source[1] or "", summary=""),
            ExtractedEntity(name=target[0], entity_type=target[1] or "", summary=""),
        ],
        facts=[
            ExtractedFact(
                source=source[0],
                relation=relation,
                target=target[0],
                fact=fact,
                edge_type="semantic",
                confidence=confidence,
                valid_at=valid_at.isoformat(),
                invalid_at=invalid_at.isoformat() if invalid_at else None,
            )
        ],
    )


async def _fact_add_once(
    store: TenantStore, episode: EpisodeInput, extraction: Extraction, embedder: Embedder
) -> FactAdded | None:
    """The fact the episode recorded before, or the one resolved and written now; None
    when the write conflicted with a concurrent one (it is worth another try)."""
    digest = content_hash(episode.content)
    record = episode_record(episode, digest)
    existing = await _fact_of_episode(store, record)
    if existing is not None:
        return FactAdded(existing, created=False)
    ctx = await ingest_context(store, embedder=embedder, llm=None)
    work = EpisodeWork(input=episode, record=record, content_hash=digest, extraction=extraction)
    drafts_from(ctx, work, extraction)
    if not work.facts:
        raise ValueError("the fact needs two different entities")
    try:
        await resolve_and_persist(ctx, work)
    except UniqueViolation:
        return None
    draft = work.facts[0]
    added = draft.record if draft.duplicate_of is None else draft.duplicate_of["id"]
    fact_row = as_stored_fact(await store.query_one(queries.FACT_GET, {"id": added}))
    return FactAdded(fact_row, created=draft.duplicate_of is None)


async def _fact_of_episode(store: TenantStore, episode: RecordID) -> StoredFact | None:
    """The fact an API episode recorded, if that episode exists. Its fact may have been
    deleted or merged away since: that is a conflict, not a new fact."""
    exists, facts = await store.query(
        queries.RECORD_EXISTS + queries.FACTS_OF_EPISODE, {"id": episode}
    )
    if not exists:
        return None
    if not facts:
        raise WriteConflict(
            "this exact fact was posted before and its record has since been deleted or"
            " merged; change valid_at to post it again"
        )
    return facts[0]
