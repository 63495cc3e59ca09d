"""Job records: what a background task is doing, kept in the tenant's own namespace."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import Any

from surrealdb.data.types.record_id import RecordID

from kgapp.graph import queries
from kgapp.graph.errors import GraphUnavailable, NotFound
from kgapp.graph.store import TenantStore

JOB_STATUSES = ("queued", "running", "completed", "failed", "paused", "cancelled")


class JobNotFound(NotFound):
    pass


async def job_create(
    store: TenantStore,
    *,
    kind: str,
    total: int = 1,
    created_by: str | None = None,
    params: dict[str, Any] | None = None,
    document: RecordID | None = None,
) -> dict[str, Any]:
    return await store.query_one(
        queries.JOB_CREATE,
        {
            "kind": kind,
            "total": total,
            "created_by": created_by,
            "params": params or {},
            "document": document,
        },
    )


async def job_get(store: TenantStore, job: RecordID) -> dict[str, Any]:
    row = await store.query_one(queries.JOB_GET, {"job": job})
    if not row:
        raise JobNotFound(f"no job {job}")
    return dict(row)


async def job_list(
    store: TenantStore, *, status: str | None, limit: int, offset: int
) -> list[dict[str, Any]]:
    rows = await store.query_one(
        queries.JOB_LIST, {"status": status, "limit": limit, "offset": offset}
    )
    return list(rows or [])


async def job_start(store: TenantStore, job: RecordID) -> dict[str, Any] | None:
    """Mark running; None when the job is already finished (a redelivered task)."""
    return await store.query_one(queries.JOB_START, {"job": job})


async def job_finish(
    store: TenantStore, job: RecordID, *, counts: dict[str, int], timings: dict[str, float]
) -> None:
    await store.query(queries.JOB_FINISH, {"job": job, "counts": counts, "timings": timings})


async def job_fail(store: TenantStore, job: RecordID, *, error: str) -> None:
    await store.query(queries.JOB_FAIL, {"job": job, "error": error[:2000]})


async def job_run(
    store: TenantStore,
    job: RecordID,
    work: Callable[[TenantStore], Awaitable[tuple[dict[str, int], dict[str, float]]]],
) -> dict[str, Any]:
    """Run `work` as job `job`: mark it running, then completed with the counts and
    timings `work` returns, or failed with the reason.

    A job that already finished (a redelivered task) is returned as it is. When the
    store is unreachable the job stays running and the error propagates, so the task
    can retry it.
    """
    if await job_start(store, job) is None:
        return await job_get(store, job)
    try:
        counts, timings = await work(store)
    except GraphUnavailable:
        raise
    except Exception as error:
        await job_fail(store, job, error=f"{type(error).__name__}: {error}")
        raise
    await job_finish(store, job, counts=counts, timings=timings)
    return await job_get(store, job)


async def _ping(store: TenantStore) -> tuple[dict[str, int], dict[str, float]]:
    started = time.perf_counter()
    await store.query(queries.PING)
    elapsed_ms = (time.perf_counter() - started) * 1000
    return {"pings": 1}, {"ping_ms": round(elapsed_ms, 3)}


async def health_check(store: TenantStore, job: RecordID) -> dict[str, Any]:
    """The health job: proves a worker can reach this tenant's graph and write to it."""
    return await job_run(store, job, _ping)
