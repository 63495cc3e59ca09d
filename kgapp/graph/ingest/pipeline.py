"""The ingestion pipeline: a document's stage (read, chunk into episodes), the ordered
stages for one episode (prepare, extract, resolve, decide, persist), and a job's loop
over its episodes with progress, per-episode failures and pausing on exhausted quota."""

from __future__ import annotations

import asyncio
import logging
import math
import random
import statistics
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import partial

from surrealdb.data.types.record_id import RecordID

from kgapp.graph import jobs, queries
from kgapp.graph.documents.pdf import PdfLimits
from kgapp.graph.embeddings import Embedder
from kgapp.graph.errors import GraphUnavailable, QueryFailed, UniqueViolation
from kgapp.graph.ingest.chunk import document_status, read_document
from kgapp.graph.ingest.extract import drafts_from, extract, extract_ahead
from kgapp.graph.ingest.indexing import embed_episode, index_pending
from kgapp.graph.ingest.model import EpisodeInput, EpisodeWork, IngestContext, Progress
from kgapp.graph.ingest.offline.extractor import OfflineExtractor
from kgapp.graph.ingest.persist import persist
from kgapp.graph.ingest.prepare import prepare
from kgapp.graph.ingest.progress import counts_of, progress_params, usage_of
from kgapp.graph.ingest.versions import DocumentPlan, document_plan
from kgapp.graph.llm.client import LLMClient
from kgapp.graph.llm.errors import LLMError, LLMQuotaExceeded
from kgapp.graph.ontology import ontology_load
from kgapp.graph.records import JsonObject, record_key
from kgapp.graph.resolution.decide import decide
from kgapp.graph.resolution.entities import resolve_entities
from kgapp.graph.resolution.facts import (
    drop_facts_ahead,
    existing_facts,
    llm_candidates,
    resolve_facts,
)
from kgapp.graph.store import TenantStore

logger = logging.getLogger(__name__)

PERSIST_ATTEMPTS = 6
# Writers that conflicted on one record would collide again if they all retried at once:
# each waits a random while, up to this times 2 to the attempt's number, first.
PERSIST_BACKOFF = 0.01  # seconds
# Episodes whose offline extraction runs ahead of the one being written.
EXTRACT_AHEAD = 1


@dataclass
class IngestReport(jobs.JobReport):
    """An ingest job's report, with the episodes it wrote and what extracted them."""

    episodes: list[str] = field(default_factory=list)
    extractor: str = ""  # what extracted: the model's name, or the offline pipeline
    plan: DocumentPlan | None = None  # a document's: what it brought, kept and dropped

    def result(self) -> JsonObject:  # a job's result: JSON of its kind's own (JobReport)
        document = {"document": self.plan.as_dict()} if self.plan is not None else {}
        return {"episodes": self.episodes[:1000], "extractor": self.extractor, **document}


async def ingest_episode(ctx: IngestContext, episode: EpisodeInput) -> RecordID | None:
    """Run every stage for one episode; returns its record, None if already ingested."""
    ctx.now = datetime.now(UTC)
    work = await prepare(ctx, episode)
    if work is None:
        return None
    try:
        return await _extracted_and_written(ctx, work)
    finally:
        if work.units_embedding is not None:
            work.units_embedding.cancel()  # the episode failed before persist waited


async def _extracted_and_written(ctx: IngestContext, work: EpisodeWork) -> RecordID | None:
    await extract(ctx, work)
    # Counts of a failed attempt must not add up with the retry's.
    baseline = Counter(ctx.counts)
    for attempt in range(PERSIST_ATTEMPTS):
        try:
            await resolve_and_persist(ctx, work)
            return work.record
        except UniqueViolation:
            # Another worker wrote the same entity or fact a moment ago: re-read and redo
            # resolution from the same extraction (no second LLM call for it).
            if attempt == PERSIST_ATTEMPTS - 1:
                raise
            await asyncio.sleep(random.uniform(0, PERSIST_BACKOFF * 2**attempt))
            ctx.counts = baseline + Counter(persist_retries=attempt + 1)
            if await ctx.store.query_one(queries.RECORD_EXISTS, {"id": work.record}):
                ctx.counts["episodes_skipped"] += 1
                return None
            if work.extraction is not None:
                drafts_from(ctx, work, work.extraction)
    return None


async def resolve_and_persist(ctx: IngestContext, work: EpisodeWork) -> None:
    ctx.now = datetime.now(UTC)
    try:
        await resolve_entities(ctx, work, partial(embed_episode, ctx, work))
        known, summaries = await existing_facts(ctx, work)
    finally:
        drop_facts_ahead(work)  # read ahead, not taken: resolution failed
    changed, decisions = await decide(ctx, work, llm_candidates(ctx, work, known))
    if changed:
        known, summaries = await existing_facts(ctx, work)
    resolve_facts(ctx, work, known, decisions)
    await persist(ctx, work, summaries)


async def ingest_context(
    store: TenantStore,
    *,
    embedder: Embedder,
    llm: LLMClient | None,
    extractor: OfflineExtractor | None = None,
) -> IngestContext:
    """What the stages of a job share: the store, the tenant's ontology, the models
    (`extractor` extracts when there is no LLM; None: the default spaCy pipeline)."""
    ctx = IngestContext(
        store=store,
        ontology=await ontology_load(store),
        embedder=embedder,
        llm=llm,
        now=datetime.now(UTC),
        extractor=extractor,
    )
    if ctx.ontology.fallback:
        ctx.notes.append(ctx.ontology.fallback)
    return ctx


async def ingest_document(
    store: TenantStore,
    job: RecordID,
    document: RecordID,
    *,
    embedder: Embedder,
    llm: LLMClient | None,
    extractor: OfflineExtractor | None = None,
    pdf: PdfLimits,
) -> IngestReport:
    """Ingest document `document` as job `job`: read it (a PDF's text extracted within
    `pdf`), chunk it into episodes, keep those the graph holds already (versions.py),
    then ingest the others as `ingest_job` does."""
    plan = await document_plan(store, document, await read_document(store, document, pdf))
    await document_status(store, document, "extracting", chunks=plan.episodes)
    report = await ingest_job(store, job, plan.new, embedder=embedder, llm=llm, extractor=extractor)
    report.plan = plan
    report.notes.insert(0, plan.summary())
    return report


async def ingest_job(
    store: TenantStore,
    job: RecordID,
    episodes: Sequence[EpisodeInput],
    *,
    embedder: Embedder,
    llm: LLMClient | None,
    extractor: OfflineExtractor | None = None,
    offset: int = 0,
) -> IngestReport:
    """Ingest `episodes` as job `job`, writing progress after each one.

    An episode that fails is recorded with its reason and leaves no trace in the graph;
    the others go on. Exhausted LLM quota pauses the job. The store being unreachable
    propagates, so the task can retry (episodes already written are skipped then).
    """
    ctx = await ingest_context(store, embedder=embedder, llm=llm, extractor=extractor)
    report = IngestReport(
        extractor=f"model {llm.config.model}"
        if llm is not None
        else (ctx.extractor or OfflineExtractor()).label
    )
    clock = _Clock()
    try:
        await _ingest_episodes(ctx, job, episodes, offset, report, clock)
    finally:
        for unused in ctx.ahead.values():  # the job stopped early
            unused.cancel()
    await index_pending(ctx, episodes=ctx.episodes)
    _conclude(ctx, report, clock, len(episodes))
    return report


@dataclass
class _Clock:
    """The time of each episode that ran to its end, in ms, and the same without the
    extraction stage."""

    episode_ms: list[float] = field(default_factory=list)
    without_extraction_ms: list[float] = field(default_factory=list)


async def _ingest_episodes(
    ctx: IngestContext,
    job: RecordID,
    episodes: Sequence[EpisodeInput],
    offset: int,
    report: IngestReport,
    clock: _Clock,
) -> None:
    """Each episode in turn, its failure recorded, until the end or exhausted quota."""
    total = offset + len(episodes)
    for index, episode in enumerate(episodes, start=offset):
        ctx.progress = Progress(job, index + 1, total)
        try:
            upcoming = episodes[index - offset + 1 : index - offset + 1 + EXTRACT_AHEAD]
            record = await _timed_episode(ctx, episode, upcoming, clock)
            if record is not None:
                report.episodes.append(record_key(record))
        except LLMQuotaExceeded as error:
            report.status, report.error = "paused", f"LLM quota exhausted: {error}"
            break
        except GraphUnavailable:
            raise
        except (LLMError, QueryFailed, ValueError) as error:
            ctx.counts["episodes_failed"] += 1
            report.failures.append(
                {"index": index, "reason": f"{type(error).__name__}: {error}"[:500]}
            )
            logger.warning("episode %s of %s failed: %s", index, job, error)
        if ctx.progress is not None:  # not written with an episode
            params = progress_params(ctx, ctx.progress)
            await jobs.job_write(ctx.store, queries.JOB_PROGRESS, {**params})  # a plain dict
            ctx.progress = None


async def _timed_episode(
    ctx: IngestContext,
    episode: EpisodeInput,
    upcoming: Sequence[EpisodeInput],
    clock: _Clock,
) -> RecordID | None:
    started = time.perf_counter()
    # The next episode is parsed while this one is resolved and written.
    for later in upcoming:
        extract_ahead(ctx, later)
    extracting = ctx.timings.totals.get("extract", 0.0)
    record = await ingest_episode(ctx, episode)
    elapsed = (time.perf_counter() - started) * 1000
    clock.episode_ms.append(elapsed)
    extract_ms = ctx.timings.totals.get("extract", 0.0) - extracting
    clock.without_extraction_ms.append(elapsed - extract_ms)
    return record


def _conclude(ctx: IngestContext, report: IngestReport, clock: _Clock, episodes: int) -> None:
    """The report's counts, timings and notes; failed when every episode failed."""
    report.counts = counts_of(ctx)
    report.timings = (
        dict(ctx.timings.totals)
        | _episode_timings(clock.episode_ms)
        | _episode_timings(clock.without_extraction_ms, "_without_extraction")
    )
    report.notes = ctx.notes[:200]
    report.usage = usage_of(ctx)
    if report.failures and len(report.failures) == episodes:
        report.status = "failed"
        report.error = report.failures[0]["reason"]


def _episode_timings(episode_ms: list[float], suffix: str = "") -> dict[str, float]:
    """Median and p90 (nearest rank) of the episodes that ran to their end, in ms; with
    a model, LLM time is included. `suffix` names a variant: "_without_extraction" is
    the time outside the extraction stage (the model's call, or the time spent waiting
    for the offline parse, which runs ahead of its episode)."""
    if not episode_ms:
        return {}
    ordered = sorted(episode_ms)
    p90 = ordered[math.ceil(0.9 * len(ordered)) - 1]
    return {
        f"episode_median_ms{suffix}": round(statistics.median(ordered), 3),
        f"episode_p90_ms{suffix}": round(p90, 3),
    }
