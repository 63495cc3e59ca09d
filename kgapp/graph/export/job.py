"""An import as a job: check the file, check the tenant, write, with progress; the
job ends completed with the counts, or failed with the reason and the tenant empty."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator

from surrealdb.data.types.record_id import RecordID

from kgapp.graph import jobs, queries
from kgapp.graph.errors import GraphError
from kgapp.graph.export.load import ExportSummary, check_export, check_target, load_export
from kgapp.graph.jobs import JobReport, Tally
from kgapp.graph.records import Job
from kgapp.graph.store import TenantStore

Lines = Callable[[], Iterator[bytes]]  # opens the file afresh: it is read twice


async def import_job(
    store: TenantStore, job: RecordID, lines: Lines, *, embedding_dim: int, every: float = 30.0
) -> tuple[Job, ExportSummary | None]:
    """Run import job `job`, its heartbeat refreshed every `every` seconds; the summary of
    what was loaded, None when it failed."""
    loaded: list[ExportSummary] = []

    async def work(store: TenantStore) -> Tally:
        started = time.perf_counter()
        summary = check_export(lines())
        await check_target(store, summary, embedding_dim)
        checked = time.perf_counter()

        async def progress(done: int) -> None:
            params = {"job": job, "progress": done, "total": summary.records, "phase": "writing"}
            await jobs.job_write(store, queries.IMPORT_PROGRESS, params)

        await progress(0)
        written = await load_export(store, lines(), progress)
        loaded.append(summary)
        counts = {"records": written, **{name: n for name, n in summary.counts.items() if n}}
        timings = {"check": checked - started, "write": time.perf_counter() - checked}
        return counts, timings

    async with jobs.heartbeat(store, job, every=every):
        finished = await jobs.job_run(store, job, work, retried=(), failed=_failed)
    return finished, (loaded[0] if loaded else None)


def _failed(error: Exception) -> JobReport:
    reason = str(error) if isinstance(error, GraphError) else jobs.failure_reason(error)
    return JobReport(status="failed", error=reason)
