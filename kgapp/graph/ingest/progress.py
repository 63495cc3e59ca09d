"""A job's progress as ingestion writes it after each episode: inside the episode's own
transaction where the episode is written (persist.py), so that progress never counts
an episode that did not commit and costs no write of its own; alone after an episode
that failed or was skipped (pipeline.py)."""

from __future__ import annotations

from collections import Counter
from typing import TypedDict

from surrealdb.data.types.record_id import RecordID

from kgapp.graph import queries
from kgapp.graph.ingest.model import IngestContext, Progress
from kgapp.graph.llm.usage import UsageRow


def counts_of(ctx: IngestContext, gained: Counter[str] | None = None) -> dict[str, int]:
    """The job's counts (with what the episode in hand adds once written: `gained`) and
    its model calls'."""
    counts = dict(ctx.counts)
    for name, more in (gained or {}).items():
        counts[name] = counts.get(name, 0) + more
    if ctx.llm is not None:
        counts.update({f"llm_{k}": v for k, v in ctx.llm.usage.as_dict().items()})
    return counts


def usage_of(ctx: IngestContext) -> list[UsageRow]:
    return ctx.llm.usage.rows() if ctx.llm is not None else []


def add_progress(
    batch: queries.Batch, ctx: IngestContext, progress: Progress, gained: Counter[str]
) -> None:
    """The progress write, for the episode's transaction."""
    batch.add(queries.JOB_PROGRESS, **progress_params(ctx, progress, gained))


class ProgressParams(TypedDict):
    """The parameters of queries.JOB_PROGRESS."""

    job: RecordID
    progress: int
    total: int
    counts: dict[str, int]
    timings: dict[str, float]
    usage: list[UsageRow]
    phase: str


def progress_params(
    ctx: IngestContext, progress: Progress, gained: Counter[str] | None = None
) -> ProgressParams:
    """The progress write's parameters: where the job stands, its counts (with `gained`),
    timings and model usage."""
    return {
        "job": progress.job,
        "progress": progress.done,
        "total": progress.total,
        "counts": counts_of(ctx, gained),
        "timings": dict(ctx.timings.totals),
        "usage": usage_of(ctx),
        "phase": "extracting",
    }
