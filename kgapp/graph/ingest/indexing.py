"""The indexing phase after a job's episodes: the vectors resolution did not need (the
facts' and the passage units' of episodes), in batches, one model call and one write
a batch."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

import numpy as np
from surrealdb.data.types.record_id import RecordID

from kgapp.graph import queries
from kgapp.graph.chunking import passage_units
from kgapp.graph.embeddings import pack_vectors
from kgapp.graph.errors import UniqueViolation
from kgapp.graph.ingest.model import IngestContext
from kgapp.graph.records import record_key

# Conflicting batches (another worker indexing the same rows) before a job leaves the
# rest to the next one.
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

    Those of `episodes` and `ctx.facts` (a job's: found by index, so a job run again
    finds what its first run left of its episodes'), or every one of the tenant when
    None (`index_stragglers`)."""
    if episodes is not None and not episodes:
        return
    sql = queries.UNEMBEDDED if episodes is None else queries.UNEMBEDDED_OF
    params = {
        "facts": fact_batch,
        "units": episode_batch,
        "episodes": list(episodes or ()),
        "written": list(ctx.facts),
    }
    conflicts = 0
    with ctx.timings.measure("index"):
        while conflicts < INDEX_CONFLICTS:
            *_, facts, episodes_left = await ctx.store.query(sql, params)
            if not facts and not episodes_left:
                return
            # An episode without a unit (blank content) is embedded whole, so that it is
            # marked as indexed all the same.
            units = [
                passage_units(row["source"], row["content"]) or (row["content"],)
                for row in episodes_left
            ]
            texts = [row["fact"] for row in facts] + [unit for own in units for unit in own]
            vectors = await asyncio.to_thread(ctx.embedder.embed, texts)
            batch = _writes(facts, episodes_left, units, vectors)
            try:
                await ctx.store.query(batch.sql, batch.params)
            except UniqueViolation:
                # Another worker is indexing the same rows; whatever is left when both
                # stop is picked up by the next job.
                conflicts += 1
                continue
            ctx.counts["facts_indexed"] += len(facts)
            ctx.counts["passages_indexed"] += len(texts) - len(facts)
            if len(facts) < fact_batch and len(episodes_left) < episode_batch:
                return  # that was all of them


async def index_stragglers(ctx: IngestContext) -> int:
    """The sweep (periodic, kgapp.index_stragglers): embed what no job's indexing phase
    did (a job that failed for good after writing episodes, one that lost every race to
    another worker, episodes written before passages were embedded). Returns the number
    of vectors written."""
    before = ctx.counts["facts_indexed"] + ctx.counts["passages_indexed"]
    await index_pending(ctx, episodes=None)
    return ctx.counts["facts_indexed"] + ctx.counts["passages_indexed"] - before


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
