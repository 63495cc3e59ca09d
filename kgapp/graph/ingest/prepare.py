"""Stage: give the episode its record, skip it if already ingested, gather context."""

from __future__ import annotations

import hashlib
from datetime import datetime
from typing import TypedDict

from surrealdb.data.types.record_id import RecordID

from kgapp.graph import queries
from kgapp.graph.ingest.model import EpisodeInput, EpisodeWork, IngestContext
from kgapp.graph.records import record_key
from kgapp.graph.resolution.canonical import clean_text, content_hash

CONTEXT_EPISODES = 3


class _Earlier(TypedDict):
    """An earlier episode of the saga (queries.EPISODE_CONTEXT)."""

    id: RecordID
    content: str
    valid_at: datetime


def episode_record(episode: EpisodeInput, digest: str) -> RecordID:
    """Deterministic: the same content at the same place and time is the same episode, so
    ingesting it twice (or a retried job) writes nothing new."""
    document = record_key(episode.document) if episode.document else ""
    basis = "|".join(
        [
            document,
            str(episode.chunk_index),
            episode.saga or "",
            digest,
            episode.reference_time.isoformat(),
        ]
    )
    return RecordID("episode", "ep" + hashlib.sha256(basis.encode()).hexdigest()[:24])


def saga_record(name: str) -> RecordID:
    return RecordID("saga", "sg" + hashlib.sha256(clean_text(name).encode()).hexdigest()[:24])


async def prepare(ctx: IngestContext, episode: EpisodeInput) -> EpisodeWork | None:
    digest = content_hash(episode.content)
    record = episode_record(episode, digest)
    # Whether it exists, and the saga's episodes before it: one round trip.
    batch = queries.Batch()
    batch.add(queries.RECORD_EXISTS, id=record)
    if episode.saga:
        batch.add(
            queries.EPISODE_CONTEXT,
            saga=saga_record(episode.saga),
            at=episode.reference_time,
            id=record,
            limit=CONTEXT_EPISODES,
        )
    exists, *context = await ctx.store.query(batch.sql, batch.params)
    if exists:
        ctx.counts["episodes_skipped"] += 1
        ctx.earlier.append(record)
        ctx.episodes.append(record)  # that run may have stopped before indexing it
        return None
    work = EpisodeWork(input=episode, record=record, content_hash=digest)
    rows: list[_Earlier] = (context[0] if context else None) or []
    work.context = [row["content"] for row in reversed(rows)]
    work.previous = rows[0]["id"] if rows else None
    return work
