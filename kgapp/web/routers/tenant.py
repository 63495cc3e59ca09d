"""Routes inside one tenant: /api/v1/t/{tenant}/... Each resolves access first."""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.http import HttpRequest
from ninja import Query, Router, Status
from ninja.errors import HttpError

from kgapp import tasks
from kgapp.graph import jobs, stats
from kgapp.graph.records import parse_record_id, to_json
from kgapp.web.auth import AuthenticatedHttpRequest
from kgapp.web.schemas import (
    ErrorOut,
    JobFilter,
    JobOut,
    JobQueuedOut,
    MemberIn,
    MemberOut,
    TenantDetailOut,
)
from tenants import selectors, services
from tenants.access import tenant_access
from tenants.models import Invitation, Membership, Role
from tenants.wiring import tenant_graph

router = Router(tags=["tenant"])
DENIED = {400: ErrorOut, 403: ErrorOut, 404: ErrorOut, 503: ErrorOut}
LIMITED = {429: ErrorOut}  # routes with a rate limit (kgapp/web/ratelimits.py)


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
    """Members, then the usernames invited and not yet joined."""
    access = tenant_access(request.user, tenant)
    members = selectors.memberships_of_tenant(access.tenant)
    invited = selectors.invitations_of_tenant(access.tenant)
    return [_member(m) for m in members] + [_member(i) for i in invited]


@router.put(
    "/t/{tenant}/members",
    response={200: MemberOut, 202: MemberOut, 409: ErrorOut, 422: ErrorOut, **DENIED},
)
def member_set(
    request: AuthenticatedHttpRequest, tenant: str, payload: MemberIn
) -> Status[dict[str, Any]]:
    """Change a member's role (200), or invite a username (202, the same answer whether
    or not such a user exists: they join when they accept). Owner."""
    access = tenant_access(request.user, tenant, Role.OWNER)
    done = services.member_invite(
        tenant=access.tenant,
        username=payload.username,
        role=Role(payload.role),
        invited_by=request.user,
    )
    return Status(202 if isinstance(done, Invitation) else 200, _member(done))


@router.delete("/t/{tenant}/members/{username}", response={204: None, 409: ErrorOut, **DENIED})
def member_remove(request: HttpRequest, tenant: str, username: str) -> Status[None]:
    """Remove a member or withdraw an invitation (owner); a removed member's open
    explorer sockets are closed. The only owner cannot be removed (409)."""
    access = tenant_access(request.user, tenant, Role.OWNER)
    user = get_user_model().objects.filter(
        username=username, memberships__tenant=access.tenant
    ).first()
    if user is not None:
        services.membership_remove(tenant=access.tenant, user=user)
    elif not services.member_uninvite(tenant=access.tenant, username=username):
        raise HttpError(404, f"{username!r} is neither a member of nor invited to {tenant!r}")
    return Status(204, None)


def _member(row: Membership | Invitation) -> dict[str, Any]:
    if isinstance(row, Invitation):
        return {
            "username": row.username,
            "role": row.role,
            "status": "invited",
            "created_at": row.created_at,
        }
    return {
        "username": row.user.get_username(),
        "role": row.role,
        "status": "member",
        "created_at": row.created_at,
    }


@router.post("/t/{tenant}/jobs/health-check", response={202: JobQueuedOut, **DENIED})
def job_health_check(request: HttpRequest, tenant: str) -> Status[dict[str, str]]:
    """Queue a job that proves a worker can write to this tenant's graph (editor)."""
    access = tenant_access(request.user, tenant, Role.EDITOR)
    job = tasks.queue_health_check(access.tenant, created_by=request.user.get_username())
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
