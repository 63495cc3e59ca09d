"""Job records: what a background task is doing, kept in the tenant's own namespace.
`job_run` is the one lifecycle every kind of job goes through (queued, running, then
completed, failed or paused).

While a worker runs a job it refreshes the job's `heartbeat_at` (`with_heartbeat`). A
job left `running` with an old heartbeat lost its worker to a crash or a SIGKILL, which
on the filesystem broker also loses the task's message: `requeue_stale` puts such jobs
back to `queued` so the edge can send their task again. Running a job twice is safe:
tasks are idempotent (a finished job is left alone; ingestion skips written episodes).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, TypedDict, TypeVar

from surrealdb.data.types.record_id import RecordID

from kgapp.graph import queries
from kgapp.graph.errors import GraphError, GraphUnavailable, NotFound
from kgapp.graph.llm.usage import UsageRow
from kgapp.graph.records import Job, JobFailure, JsonObject, as_job, record_key, to_json
from kgapp.graph.rerun import rerun_on_conflict
from kgapp.graph.store import Params, TenantStore

logger = logging.getLogger(__name__)

T = TypeVar("T")

JOB_STATUSES = ("queued", "running", "completed", "failed", "paused", "cancelled")


class JobNotFound(NotFound):
    pass


# What a job's work hands back: its counts and timings (the job completed) ...
Tally = tuple[dict[str, int], dict[str, float]]


@dataclass
class JobReport:
    """... or how it ended, in full: the status, counts and timings, the failures of its
    parts, notes for the user, the error, what its model calls used; a kind of job says
    what else it keeps as its `result`."""

    status: str = "completed"  # completed | failed | paused
    counts: dict[str, int] = field(default_factory=dict)
    timings: dict[str, float] = field(default_factory=dict)
    failures: list[JobFailure] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    error: str | None = None
    # What its model calls used, one row per model (`LLMUsage.rows()`).
    usage: list[UsageRow] = field(default_factory=list)

    # Free-form JSON: each kind of job keeps a shape of its own as its `result`.
    def result(self) -> JsonObject:
        return {}


@dataclass(frozen=True, slots=True)
class JobRef:
    """A job as the edge hands it to the task that runs it: its record id and its kind.
    It crosses the task queue's (JSON) message as the id's text, `key`."""

    id: RecordID
    kind: str

    @classmethod
    def of(cls, job: Job) -> JobRef:
        return cls(job["id"], job["kind"])

    @property
    def key(self) -> str:
        return record_key(self.id)


class _JobJsonFields(TypedDict):
    id: str
    kind: str
    status: str


class JobJson(_JobJsonFields, total=False):
    """A job record made fit for JSON (`to_json`): ids and moments as text. What a task
    answers and what the edges show; the record's other fields travel along."""

    progress: int
    total: int
    phase: str | None
    error: str | None
    document: str | None
    attempts: int
    created_by: str | None
    created_at: str
    started_at: str | None
    finished_at: str | None
    heartbeat_at: str | None
    updated_at: str


def job_json(job: Job) -> JobJson:
    """The job record as JSON."""
    answer: JobJson = to_json(job)
    return answer


async def job_create(
    store: TenantStore,
    *,
    kind: str,
    total: int = 1,
    created_by: str | None = None,
    params: JsonObject | None = None,  # each kind has its own
    document: RecordID | None = None,
) -> Job:
    return as_job(
        await store.query_one(
            queries.JOB_CREATE,
            {
                "kind": kind,
                "total": total,
                "created_by": created_by,
                "params": params or {},
                "document": document,
            },
        )
    )


# A running job's record has two writers in its worker, on two connections: the work
# (start, progress, the end) and its heartbeat; other workers' stale checks write it too.
# Of two that write it at once SurrealDB fails the later commit (rerun.py). Uncaught, it
# ended the task with the job left running until the stale check.
WRITE_ATTEMPTS = 6


# `params` are a SurrealDB query's raw parameters, as the store takes them.
async def job_write(store: TenantStore, sql: str, params: Params) -> Any:
    """Run one statement that writes a job record (its result), again while it loses a
    write conflict to a concurrent writer of the record."""
    return await rerun_on_conflict(store, sql, params, attempts=WRITE_ATTEMPTS)


async def job_get(store: TenantStore, job: RecordID) -> Job:
    row = await store.query_one(queries.JOB_GET, {"job": job})
    if not row:
        raise JobNotFound(f"no job {job}")
    return as_job(dict(row))


async def job_list(store: TenantStore, *, status: str | None, limit: int, offset: int) -> list[Job]:
    rows = await store.query_one(
        queries.JOB_LIST, {"status": status, "limit": limit, "offset": offset}
    )
    return [as_job(row) for row in rows or []]


async def job_start(store: TenantStore, job: RecordID) -> Job | None:
    """Mark running; None when the job is already finished (a redelivered task)."""
    row = await job_write(store, queries.JOB_START, {"job": job})
    return as_job(row) if row else None


async def job_finish(
    store: TenantStore, job: RecordID, *, counts: dict[str, int], timings: dict[str, float]
) -> None:
    await job_write(store, queries.JOB_FINISH, {"job": job, "counts": counts, "timings": timings})


async def job_fail(store: TenantStore, job: RecordID, *, error: str) -> None:
    await job_write(store, queries.JOB_FAIL, {"job": job, "error": error[:2000]})


async def job_report(store: TenantStore, job: RecordID, report: JobReport) -> None:
    await job_write(
        store,
        queries.JOB_REPORT,
        {
            "job": job,
            "status": report.status,
            "counts": report.counts,
            "timings": report.timings,
            "failures": report.failures,
            "notes": report.notes,
            "error": report.error,
            "result": report.result(),
            "usage": report.usage,
        },
    )


def failure_reason(error: BaseException) -> str:
    """How a failed job states an unexpected error: "ValueError: what it said"."""
    return f"{type(error).__name__}: {error}"


async def job_run(
    store: TenantStore,
    job: RecordID,
    work: Callable[[TenantStore], Awaitable[Tally | JobReport]],
    *,
    retried: tuple[type[Exception], ...] = (GraphUnavailable,),
    failed: Callable[[Exception], JobReport] | None = None,
    ended: Callable[[JobReport], Awaitable[None]] | None = None,
) -> Job:
    """Run `work` as job `job`: the one place a job goes from queued to running and on
    to completed, failed or paused. It is marked running; then completed with the
    counts and timings `work` returns, or as the JobReport it returns says.

    A job that already finished (a redelivered task) is returned as it is. An error of
    `retried` (the store being unreachable) leaves the job running and propagates, so
    the task can retry it. Any other error fails the job: with the report `failed`
    makes of it, the error then being handled; without `failed`, with the error's
    reason, the error propagating. `ended` runs once a report is written.
    """
    if await job_start(store, job) is None:
        return await job_get(store, job)
    try:
        outcome = await work(store)
    except retried:
        raise
    except Exception as error:
        if failed is None:
            await job_fail(store, job, error=failure_reason(error))
            raise
        outcome = failed(error)
    if isinstance(outcome, JobReport):
        await job_report(store, job, outcome)
        if ended is not None:
            await ended(outcome)
    else:
        counts, timings = outcome
        await job_finish(store, job, counts=counts, timings=timings)
    return await job_get(store, job)


async def _ping(store: TenantStore) -> tuple[dict[str, int], dict[str, float]]:
    started = time.perf_counter()
    await store.query(queries.PING)
    elapsed_ms = (time.perf_counter() - started) * 1000
    return {"pings": 1}, {"ping_ms": round(elapsed_ms, 3)}


async def health_check(store: TenantStore, job: RecordID) -> Job:
    """The health job: proves a worker can reach this tenant's graph and write to it."""
    return await job_run(store, job, _ping)


# --- liveness ------------------------------------------------------------------------


@contextlib.asynccontextmanager
async def heartbeat(store: TenantStore, job: RecordID, *, every: float) -> AsyncIterator[None]:
    """Refresh the job's heartbeat every `every` seconds while the block runs (job_start
    gives the first). A failed beat is logged, not raised: the work decides the outcome."""

    async def beat() -> None:
        while True:
            await asyncio.sleep(every)
            try:
                await job_write(store, queries.JOB_HEARTBEAT, {"job": job})
            except GraphError as error:
                logger.warning("heartbeat of %s failed: %s", job, error)

    beating = asyncio.create_task(beat())
    try:
        yield
    finally:
        beating.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await beating


async def with_heartbeat(
    store: TenantStore,
    job: RecordID,
    work: Callable[[TenantStore, RecordID], Awaitable[T]],
    *,
    every: float,
) -> T:
    """`await work(store, job)` with the job's heartbeat kept fresh meanwhile."""
    async with heartbeat(store, job, every=every):
        return await work(store, job)


async def requeue_stale(
    store: TenantStore, *, stale_after: float, kinds: Iterable[str]
) -> list[Job]:
    """The running jobs of `kinds` whose heartbeat is over `stale_after` seconds old, put
    back to `queued`; the caller sends their tasks again. A job another caller requeued
    (or a worker revived) meanwhile is not returned."""
    stale_ms = int(stale_after * 1000)
    rows = await store.query_one(queries.JOBS_STALE, {"stale_ms": stale_ms, "kinds": list(kinds)})
    requeued = []
    for row in rows or []:
        job = await store.query_one(
            queries.JOB_REQUEUE_STALE, {"job": row["id"], "stale_ms": stale_ms}
        )
        if job:
            requeued.append(as_job(dict(job)))
    return requeued


async def job_requeue(store: TenantStore, job: RecordID, *, stale_after: float) -> Job | None:
    """An ingest job back to queued when failed or paused, or running with no heartbeat
    for `stale_after` seconds (its worker died); None otherwise (a live job, say)."""
    row = await store.query_one(
        queries.JOB_REQUEUE, {"job": job, "stale_ms": int(stale_after * 1000)}
    )
    return as_job(row) if row else None
