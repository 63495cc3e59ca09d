"""The indexing phase after a job's episodes: the vectors resolution did not need, in
batches (facts, then the passage units of episodes)."""

from __future__ import annotations

import asyncio

import numpy as np
from surrealdb.data.types.record_id import RecordID

from kgapp.graph import queries
from kgapp.graph.chunking import passage_units
from kgapp.graph.errors import UniqueViolation
from kgapp.graph.ingest.model import IngestContext
from kgapp.graph.records import record_key

# Conflicting batches (another worker indexing the same rows) before a job leaves the
# rest to the next one.
INDEX_CONFLICTS = 4


async def index_facts(ctx: IngestContext, batch_size: int = 64) -> None:
    """Embed the facts written without a vector, in batches (the indexing phase): one
    batch of 64 costs far less than 64 single calls, and nothing during resolution needs
    fact vectors."""
    conflicts = 0
    with ctx.timings.measure("index"):
        while conflicts < INDEX_CONFLICTS:
            rows = await ctx.store.query_one(queries.FACTS_WITHOUT_EMBEDDING, {"limit": batch_size})
            if not rows:
                return
            vectors = await asyncio.to_thread(ctx.embedder.embed, [row["fact"] for row in rows])
            batch = queries.Batch()
            for row, vector in zip(rows, vectors, strict=True):
                batch.add(queries.FACT_EMBEDDING_SET, id=row["id"], vector=vector)
            try:
                await ctx.store.query(batch.sql, batch.params)
            except UniqueViolation:
                # Another worker is indexing the same facts; whatever is left when
                # both stop is picked up by the next job.
                conflicts += 1
                continue
            ctx.counts["facts_indexed"] += len(rows)


async def index_passages(ctx: IngestContext, batch_size: int = 16) -> None:
    """Embed the units of the episodes written without (chunking.passage_units), for the
    dense half of passage retrieval (search/query.py): each episode's unit vectors, and
    their normalised mean as the episode's own vector. Episodes written before passages
    were embedded are picked up here too, by whichever job of the tenant runs next."""
    conflicts = 0
    with ctx.timings.measure("index_passages"):
        while conflicts < INDEX_CONFLICTS:
            rows = await ctx.store.query_one(
                queries.EPISODES_WITHOUT_EMBEDDING, {"limit": batch_size}
            )
            if not rows:
                return
            # An episode without a unit (blank content) is embedded whole, so that it is
            # marked as indexed all the same.
            units = [
                passage_units(row["source"], row["content"]) or (row["content"],) for row in rows
            ]
            vectors = await asyncio.to_thread(
                ctx.embedder.embed, [unit for own in units for unit in own]
            )
            batch = queries.Batch()
            start = 0
            for row, own in zip(rows, units, strict=True):
                mine = vectors[start : start + len(own)]
                start += len(own)
                batch.add(
                    queries.EPISODE_UNITS_SET,
                    units=RecordID("episode_units", record_key(row["id"])),
                    episode=row["id"],
                    vectors=mine,
                    mean=_mean_direction(mine),
                )
            try:
                await ctx.store.query(batch.sql, batch.params)
            except UniqueViolation:
                conflicts += 1  # another worker indexes them: as for facts
                continue
            ctx.counts["passages_indexed"] += start


def _mean_direction(vectors: list[list[float]]) -> list[float]:
    """The unit-length mean of `vectors` (the first one where they cancel out)."""
    mean = np.mean(np.asarray(vectors, dtype=np.float32), axis=0)
    norm = float(np.linalg.norm(mean))
    return [float(x) for x in (mean / norm if norm > 0 else vectors[0])]
