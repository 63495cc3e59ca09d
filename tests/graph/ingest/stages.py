"""Contexts, episodes and drafts for the tests of single ingestion stages, built as
extraction hands them over, and `write`: the stages after extraction, in the
pipeline's order, without a model."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime
from functools import partial

from kgapp.graph.embeddings import local_embedder
from kgapp.graph.ingest.indexing import embed_episode
from kgapp.graph.ingest.model import EpisodeInput, EpisodeWork, IngestContext
from kgapp.graph.ingest.persist import persist
from kgapp.graph.ingest.pipeline import ingest_context
from kgapp.graph.ingest.prepare import episode_record
from kgapp.graph.llm.client import LLMClient
from kgapp.graph.llm.transport import LLMConfig
from kgapp.graph.resolution.canonical import canonical_name, content_hash, display_name
from kgapp.graph.resolution.decide import decide
from kgapp.graph.resolution.entities import resolve_entities
from kgapp.graph.resolution.facts import existing_facts, llm_candidates, resolve_facts
from kgapp.graph.resolution.model import EntityDraft, FactDraft
from kgapp.graph.store import TenantStore

JAN = datetime(2024, 1, 15, tzinfo=UTC)
FEB = datetime(2024, 2, 1, tzinfo=UTC)
MAR = datetime(2024, 3, 10, tzinfo=UTC)
JUN = datetime(2024, 6, 1, tzinfo=UTC)


async def context(store: TenantStore, llm: LLMClient | None = None) -> IngestContext:
    return await ingest_context(store, embedder=local_embedder(), llm=llm)


def model(base_url: str) -> LLMClient:
    """The real client, pointed at the scripted server, retrying quickly."""
    return LLMClient(
        LLMConfig(
            base_url=base_url,
            api_key="test",
            model="scripted",
            timeout=5.0,
            max_retries=1,
            backoff_base=0.01,
            backoff_max=0.05,
        )
    )


def entity(name: str, entity_type: str = "Person", summary: str = "") -> EntityDraft:
    shown = display_name(name)
    return EntityDraft(
        name=shown, entity_type=entity_type, summary=summary, canonical=canonical_name(shown)
    )


def fact(
    source: EntityDraft,
    relation: str,
    target: EntityDraft,
    valid_at: datetime,
    invalid_at: datetime | None = None,
    confidence: float = 0.9,
) -> FactDraft:
    return FactDraft(
        source=source,
        target=target,
        relation=relation,
        fact=f"{source.name} {relation} {target.name}.",
        edge_type="semantic",
        confidence=confidence,
        valid_at=valid_at,
        invalid_at=invalid_at,
    )


def episode(
    text: str, when: datetime, entities: Iterable[EntityDraft] = (), facts: Iterable[FactDraft] = ()
) -> EpisodeWork:
    given = EpisodeInput(content=text, source="text", reference_time=when)
    digest = content_hash(text)
    return EpisodeWork(
        input=given,
        record=episode_record(given, digest),
        content_hash=digest,
        entities=list(entities),
        facts=list(facts),
    )


async def write(store: TenantStore, work: EpisodeWork) -> EpisodeWork:
    """`work` resolved and persisted as the pipeline does it, without a model."""
    ctx = await context(store)
    await resolve_entities(ctx, work, partial(embed_episode, ctx, work))
    known, summaries = await existing_facts(ctx, work)
    await decide(ctx, work, llm_candidates(ctx, work, known))
    resolve_facts(ctx, work, known)
    await persist(ctx, work, summaries)
    return work


async def said(
    store: TenantStore,
    subject: str,
    relation: str,
    target: str,
    valid_at: datetime,
    invalid_at: datetime | None = None,
    target_type: str = "Organization",
) -> FactDraft:
    """One fact written as an episode of its own; its draft, records filled in."""
    source, object_ = entity(subject), entity(target, target_type)
    draft = fact(source, relation, object_, valid_at, invalid_at)
    await write(store, episode(draft.fact, valid_at, [source, object_], [draft]))
    return draft
