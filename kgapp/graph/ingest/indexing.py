"""An episode's vectors: those of its new names and its facts, in one model call at
resolution (`embed_episode`), and its passage units, embedded aside from the start
(`embed_units_aside`), written with the episode; and the indexing
phase after a job's episodes, for what that left (episodes an earlier run of the job
wrote, revisions, a failed call), in batches, one model call and one write a batch."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Sequence
from itertools import zip_longest
from typing import TypedDict

import numpy as np
from surrealdb.data.types.record_id import RecordID

from kgapp.graph import queries
from kgapp.graph.chunking import passage_units
from kgapp.graph.embeddings import EmbeddingError, embed_aside, pack_vectors
from kgapp.graph.errors import UniqueViolation
from kgapp.graph.ingest.model import EpisodeWork, IngestContext
from kgapp.graph.records import record_key

# Conflicting batches (another worker indexing the same rows) before the sweep leaves
# the rest to its next run.
INDEX_CONFLICTS = 4
FACT_BATCH = 64
EPISODE_BATCH = 16


class _FactText(TypedDict):
    """A fact without its vector (queries.UNEMBEDDED, UNEMBEDDED_OF)."""

    id: RecordID
    fact: str


class _EpisodeText(TypedDict):
    """An episode without its vector (queries.UNEMBEDDED, UNEMBEDDED_OF)."""

    id: RecordID
    source: str
    content: str


async def embed_episode(ctx: IngestContext, work: EpisodeWork, names: Sequence[str]) -> None:
    """Embed `names` (into ctx.name_vectors), the episode's facts and its passage units
    in one call, so that persist writes the vectors with the episode and the indexing
    phase has nothing left of it. Facts the offline extraction embedded ahead
    (`work.fact_vectors`), and units it embedded or that are being embedded aside
    (`embed_units_aside`), are not embedded again."""
    for draft in work.facts:
        if draft.embedding is None:
            draft.embedding = work.fact_vectors.get(draft.fact)
    facts = [draft for draft in work.facts if draft.embedding is None]
    units = episode_units(work.input.source, work.input.content)
    if work.unit_vectors is not None or work.units_embedding is not None:
        units = ()  # embedded, or being embedded aside
    texts = [*names, *(draft.fact for draft in facts), *units]
    if not texts:
        return
    with ctx.timings.measure("embed"):
        vectors = await asyncio.to_thread(ctx.embedder.embed, texts)
    ctx.name_vectors.update(zip(names, vectors[: len(names)], strict=True))
    for draft, vector in zip(facts, vectors[len(names) :], strict=False):
        draft.embedding = vector
    if units:
        work.unit_vectors = vectors[len(names) + len(facts) :]


def embed_units_aside(ctx: IngestContext, work: EpisodeWork) -> None:
    """Start embedding the episode's passage units on a core of their own, beside the
    model's call and the resolution of its names, which need the vectors of names and
    facts first; persist waits for them (`units_embedded`). A failure leaves them to the
    job's indexing phase (`index_pending`)."""
    if work.unit_vectors is not None or work.units_embedding is not None:
        return
    units = list(episode_units(work.input.source, work.input.content))

    async def embedded() -> None:
        with contextlib.suppress(EmbeddingError):
            work.unit_vectors = await asyncio.to_thread(embed_aside, ctx.embedder, units)

    work.units_embedding = asyncio.ensure_future(embedded())


async def units_embedded(work: EpisodeWork) -> None:
    """Wait for the units `embed_units_aside` started, if any."""
    if work.units_embedding is not None:
        await work.units_embedding


def episode_units(source: str, content: str) -> tuple[str, ...]:
    """The texts of an episode's unit vectors: its passage units, or its whole content
    where it has none (blank), so that it counts as indexed all the same."""
    return passage_units(source, content) or (content,)


def add_units(batch: queries.Batch, episode: RecordID, vectors: Sequence[Sequence[float]]) -> None:
    """Write an episode's unit vectors, and their normalised mean as its own vector."""
    batch.add(
        queries.EPISODE_UNITS_SET,
        units=RecordID("episode_units", record_key(episode)),
        episode=episode,
        vectors=pack_vectors(vectors),
        count=len(vectors),
        mean=_mean_direction(vectors),
    )


async def index_pending(
    ctx: IngestContext,
    *,
    episodes: Sequence[RecordID] | None,
    fact_batch: int = FACT_BATCH,
    episode_batch: int = EPISODE_BATCH,
) -> None:
    """Embed the facts written without a vector, and the units of the episodes written
    without (chunking.passage_units) for the dense half of passage retrieval
    (search/query.py): each episode's unit vectors, and their normalised mean as the
    episode's own vector. Nothing during resolution needs these, and one batch costs far
    less than many small calls.

    A job's (`episodes`): the facts it wrote (`ctx.facts`), those an earlier run of it
    wrote for the episodes it found there (`ctx.earlier`, by index), and its episodes.
    None: every such row of the tenant (`index_stragglers`), a scan of both tables."""
    if episodes is not None and not (ctx.facts or ctx.earlier or episodes):
        return  # every episode went with its vectors (embed_episode)
    with ctx.timings.measure("index"):
        if episodes is None:
            await _sweep(ctx, fact_batch, episode_batch)
            return
        facts = list(ctx.facts)
        if ctx.earlier:
            found = queries.Batch()
            for episode in ctx.earlier:
                found.add(queries.EPISODE_FACT_IDS, episode=episode)
            facts += [
                fact for rows in await ctx.store.query(found.sql, found.params) for fact in rows
            ]
        fact_chunks = [facts[i : i + fact_batch] for i in range(0, len(facts), fact_batch)]
        episode_chunks = [
            list(episodes[i : i + episode_batch]) for i in range(0, len(episodes), episode_batch)
        ]
        for fact_chunk, episode_chunk in zip_longest(fact_chunks, episode_chunks):
            params = {"facts": fact_chunk or [], "episodes": episode_chunk or []}
            rows, episode_rows = await ctx.store.query(queries.UNEMBEDDED_OF, params)
            # Another worker indexing the same rows: it will have written them.
            await _embed_and_write(ctx, rows, episode_rows)


async def index_stragglers(ctx: IngestContext) -> int:
    """The sweep (periodic, kgapp.index_stragglers): embed what no job's indexing phase
    did (a job that failed for good after writing episodes, a revision written outside a
    job, episodes written before passages were embedded). Returns the number of vectors
    written."""
    before = ctx.counts["facts_indexed"] + ctx.counts["passages_indexed"]
    await index_pending(ctx, episodes=None)
    return ctx.counts["facts_indexed"] + ctx.counts["passages_indexed"] - before


async def _sweep(ctx: IngestContext, fact_batch: int, episode_batch: int) -> None:
    conflicts = 0
    while conflicts < INDEX_CONFLICTS:
        params = {"facts": fact_batch, "units": episode_batch}
        facts, episodes = await ctx.store.query(queries.UNEMBEDDED, params)
        if not facts and not episodes:
            return
        if not await _embed_and_write(ctx, facts, episodes):
            conflicts += 1  # another worker is indexing the same rows
        elif len(facts) < fact_batch and len(episodes) < episode_batch:
            return  # that was all of them


async def _embed_and_write(
    ctx: IngestContext, facts: list[_FactText], episodes: list[_EpisodeText]
) -> bool:
    """Embed and write one batch; False if another worker wrote a row of it first."""
    if not facts and not episodes:
        return True
    units = [episode_units(row["source"], row["content"]) for row in episodes]
    texts = [row["fact"] for row in facts] + [unit for own in units for unit in own]
    vectors = await asyncio.to_thread(ctx.embedder.embed, texts)
    batch = _writes(facts, episodes, units, vectors)
    try:
        await ctx.store.query(batch.sql, batch.params)
    except UniqueViolation:
        return False
    ctx.counts["facts_indexed"] += len(facts)
    ctx.counts["passages_indexed"] += len(texts) - len(facts)
    return True


def _writes(
    facts: list[_FactText],
    episodes: list[_EpisodeText],
    units: list[tuple[str, ...]],
    vectors: list[list[float]],
) -> queries.Batch:
    batch = queries.Batch()
    for row, vector in zip(facts, vectors[: len(facts)], strict=True):
        batch.add(queries.FACT_EMBEDDING_SET, id=row["id"], vector=vector)
    start = len(facts)
    for episode, own in zip(episodes, units, strict=True):
        add_units(batch, episode["id"], vectors[start : start + len(own)])
        start += len(own)
    return batch


def _mean_direction(vectors: Sequence[Sequence[float]]) -> list[float]:
    """The unit-length mean of `vectors` (the first one where they cancel out)."""
    mean = np.mean(np.asarray(vectors, dtype=np.float32), axis=0)
    norm = float(np.linalg.norm(mean))
    return [float(x) for x in (mean / norm if norm > 0 else vectors[0])]
