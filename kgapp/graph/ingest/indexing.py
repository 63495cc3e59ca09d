"""The indexing phase after a job's episodes: the vectors resolution did not need (the
facts' and the passage units' of episodes), in batches, one model call and one write
a batch."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from itertools import zip_longest
from typing import Any

import numpy as np
from surrealdb.data.types.record_id import RecordID

from kgapp.graph import queries
from kgapp.graph.chunking import passage_units
from kgapp.graph.embeddings import pack_vectors
from kgapp.graph.errors import UniqueViolation
from kgapp.graph.ingest.model import IngestContext
from kgapp.graph.records import record_key

# Conflicting batches (another worker indexing the same rows) before the sweep leaves
# the rest to its next run.
INDEX_CONFLICTS = 4
FACT_BATCH = 64
EPISODE_BATCH = 16


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
    with ctx.timings.measure("index"):
        if episodes is None:
            await _sweep(ctx, fact_batch, episode_batch)
            return
        facts = list(ctx.facts)
        if ctx.earlier:
            found = queries.Batch()
            for episode in ctx.earlier:
                found.add(queries.EPISODE_FACT_IDS, episode=episode)
            facts += [fact for rows in await ctx.store.query(found.sql, found.params)
                      for fact in rows]
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
    ctx: IngestContext, facts: list[dict[str, Any]], episodes: list[dict[str, Any]]
) -> bool:
    """Embed and write one batch; False if another worker wrote a row of it first."""
    if not facts and not episodes:
        return True
    # An episode without a unit (blank content) is embedded whole, so that it is marked
    # as indexed all the same.
    units = [passage_units(row["source"], row["content"]) or (row["content"],) for row in episodes]
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
    facts: list[dict[str, Any]],
    episodes: list[dict[str, Any]],
    units: list[tuple[str, ...]],
    vectors: list[list[float]],
) -> queries.Batch:
    batch = queries.Batch()
    for row, vector in zip(facts, vectors[: len(facts)], strict=True):
        batch.add(queries.FACT_EMBEDDING_SET, id=row["id"], vector=vector)
    start = len(facts)
    for row, own in zip(episodes, units, strict=True):
        mine = vectors[start : start + len(own)]
        start += len(own)
        batch.add(
            queries.EPISODE_UNITS_SET,
            units=RecordID("episode_units", record_key(row["id"])),
            episode=row["id"],
            vectors=pack_vectors(mine),
            count=len(mine),
            mean=_mean_direction(mine),
        )
    return batch


def _mean_direction(vectors: list[list[float]]) -> list[float]:
    """The unit-length mean of `vectors` (the first one where they cancel out)."""
    mean = np.mean(np.asarray(vectors, dtype=np.float32), axis=0)
    norm = float(np.linalg.norm(mean))
    return [float(x) for x in (mean / norm if norm > 0 else vectors[0])]
