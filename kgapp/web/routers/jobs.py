"""A tenant's jobs: /api/v1/t/{tenant}/jobs (listed, read, retried, a health check)."""

from __future__ import annotations

from django.conf import settings
from django.http import HttpRequest
from ninja import Query, Router, Status
from ninja.errors import HttpError

from kgapp import tasks
from kgapp.graph import jobs
from kgapp.graph.ingest import service
from kgapp.graph.records import Job, parse_record_id
from kgapp.web.routers.shared import DENIED, graph_in, moved, queued
from kgapp.web.schemas import ErrorOut, JobFilter, JobOut, JobQueuedOut
from tenants.access import tenant_access
from tenants.models import Role
from tenants.wiring import tenant_graph

router = Router(tags=["tenant"])


@router.post(
    "/t/{tenant}/jobs/health-check",
    response={202: JobQueuedOut, **DENIED},
    operation_id=moved("tenant", "job_health_check"),
)
def job_health_check(request: HttpRequest, tenant: str) -> Status[JobQueuedOut]:
    """Queue a job that proves a worker can write to this tenant's graph (editor)."""
    access = tenant_access(request.user, tenant, Role.EDITOR)
    job = tasks.queue_health_check(access.tenant, created_by=request.user.get_username())
    return queued(job["id"], job["status"])


@router.get(
    "/t/{tenant}/jobs",
    response={200: list[JobOut], **DENIED},
    operation_id=moved("tenant", "job_list"),
)
def job_list(request: HttpRequest, tenant: str, filters: Query[JobFilter]) -> list[Job]:
    return graph_in(request, tenant).run(
        jobs.job_list, status=filters.status, limit=filters.limit, offset=filters.offset
    )


@router.get(
    "/t/{tenant}/jobs/{job_id}",
    response={200: JobOut, 422: ErrorOut, **DENIED},
    operation_id=moved("tenant", "job_detail"),
)
def job_detail(request: HttpRequest, tenant: str, job_id: str) -> Job:
    return graph_in(request, tenant).run(jobs.job_get, parse_record_id(job_id, "job"))


@router.post(
    "/t/{tenant}/jobs/{job_id}/retry",
    response={202: JobQueuedOut, 409: ErrorOut, 422: ErrorOut, **DENIED},
    tags=["ingest"],
    operation_id=moved("ingest", "job_retry"),
)
def job_retry(request: HttpRequest, tenant: str, job_id: str) -> Status[JobQueuedOut]:
    """Queue a failed or paused ingest job again, or a running one whose worker died (no
    heartbeat for JOB_STALE_AFTER seconds); episodes already written are skipped."""
    access = tenant_access(request.user, tenant, Role.EDITOR)
    record = parse_record_id(job_id, "job")
    stale_after = settings.JOB_STALE_AFTER
    job = tenant_graph(access.tenant).run(service.job_requeue, record, stale_after=stale_after)
    if job is None:
        raise HttpError(
            409,
            "only failed or paused ingest jobs can be retried, or running ones whose worker"
            f" stopped (no heartbeat for {stale_after:g} s)",
        )
    tasks.queue_ingest(access.tenant, job)
    return queued(job_id, "queued")
