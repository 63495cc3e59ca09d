"""Routes inside one tenant: /api/v1/t/{tenant}/... Each resolves access first."""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.http import HttpRequest
from ninja import Query, Router, Schema, Status
from ninja.errors import HttpError
from pydantic import Field

from kgapp.graph import jobs, stats
from kgapp.graph.records import parse_record_id, to_json
from kgapp.web import enqueue
from kgapp.web.schemas import (
    ErrorOut,
    JobOut,
    JobQueuedOut,
    MemberIn,
    MemberOut,
    TenantDetailOut,
)
from tenants import selectors, services
from tenants.access import tenant_access
from tenants.graph import tenant_graph
from tenants.models import Role

router = Router(tags=["tenant"])
DENIED = {400: ErrorOut, 403: ErrorOut, 404: ErrorOut, 503: ErrorOut}


class JobFilter(Schema):
    status: str | None = Field(default=None, pattern="^(" + "|".join(jobs.JOB_STATUSES) + ")$")
    limit: int = Field(default=50, ge=1, le=500)
    offset: int = Field(default=0, ge=0)


@router.get("/t/{tenant}/", response={200: TenantDetailOut, **DENIED})
def tenant_detail(request: HttpRequest, tenant: str) -> dict[str, Any]:
    """The tenant, your role in it, and how big its graph is."""
    access = tenant_access(request.user, tenant)
    counts = tenant_graph(access.tenant).run(stats.graph_counts)
    t = access.tenant
    return {
        "slug": t.slug,
        "name": t.name,
        "namespace": t.namespace,
        "schema_version": t.schema_version,
        "embedding_dim": t.embedding_dim,
        "created_at": t.created_at,
        "role": access.role.value,
        "counts": counts,
    }


@router.get("/t/{tenant}/members", response={200: list[MemberOut], **DENIED})
def member_list(request: HttpRequest, tenant: str) -> list[dict[str, Any]]:
    access = tenant_access(request.user, tenant)
    return [
        {"username": m.user.username, "role": m.role, "created_at": m.created_at}
        for m in selectors.memberships_of_tenant(access.tenant)
    ]


@router.put("/t/{tenant}/members", response={200: MemberOut, 422: ErrorOut, **DENIED})
def member_set(request: HttpRequest, tenant: str, payload: MemberIn) -> dict[str, Any]:
    """Add a member or change their role (owner)."""
    access = tenant_access(request.user, tenant, Role.OWNER)
    user = get_user_model().objects.filter(username=payload.username).first()
    if user is None:
        raise HttpError(422, f"no user {payload.username!r}")
    m = services.membership_set(tenant=access.tenant, user=user, role=Role(payload.role))
    return {"username": user.username, "role": m.role, "created_at": m.created_at}


@router.delete("/t/{tenant}/members/{username}", response={204: None, **DENIED})
def member_remove(request: HttpRequest, tenant: str, username: str) -> Status[None]:
    """Remove a member (owner); their open explorer sockets are closed."""
    access = tenant_access(request.user, tenant, Role.OWNER)
    user = get_user_model().objects.filter(username=username).first()
    if user is None or not services.membership_remove(tenant=access.tenant, user=user):
        raise HttpError(404, f"{username!r} is not a member of {tenant!r}")
    return Status(204, None)


@router.post("/t/{tenant}/jobs/health-check", response={202: JobQueuedOut, **DENIED})
def job_health_check(request: HttpRequest, tenant: str) -> Status[dict[str, str]]:
    """Queue a job that proves a worker can write to this tenant's graph (editor)."""
    access = tenant_access(request.user, tenant, Role.EDITOR)
    job = enqueue.health_check(access.tenant, created_by=request.user.get_username())
    return Status(202, {"job_id": job["id"], "status": job["status"]})


@router.get("/t/{tenant}/jobs", response={200: list[JobOut], **DENIED})
def job_list(request: HttpRequest, tenant: str, filters: Query[JobFilter]) -> list[dict[str, Any]]:
    access = tenant_access(request.user, tenant)
    rows = tenant_graph(access.tenant).run(
        jobs.job_list, status=filters.status, limit=filters.limit, offset=filters.offset
    )
    return to_json(rows)


@router.get("/t/{tenant}/jobs/{job_id}", response={200: JobOut, 422: ErrorOut, **DENIED})
def job_detail(request: HttpRequest, tenant: str, job_id: str) -> dict[str, Any]:
    access = tenant_access(request.user, tenant)
    job = parse_record_id(job_id, "job")
    return to_json(tenant_graph(access.tenant).run(jobs.job_get, job))
