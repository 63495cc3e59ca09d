"""What the routes inside one tenant (/api/v1/t/{tenant}/...) share: the refusals every
one of them may answer, and the one way in to the tenant's graph."""

from __future__ import annotations

from django.http import HttpRequest
from ninja import Status
from surrealdb.data.types.record_id import RecordID

from kgapp.graph.records import record_key
from kgapp.graph.store import TenantGraph
from kgapp.web.schemas import ErrorOut, JobQueuedOut
from tenants.access import tenant_access
from tenants.models import Role
from tenants.wiring import tenant_graph

DENIED = {400: ErrorOut, 403: ErrorOut, 404: ErrorOut, 503: ErrorOut}
LIMITED = {429: ErrorOut}  # routes with a rate limit (kgapp/web/ratelimits.py)


def graph_in(request: HttpRequest, tenant: str, role: Role = Role.VIEWER) -> TenantGraph:
    """The graph of tenant `tenant`, once the caller is found to hold `role` in it (else
    TenantAccessError: 400, 403 or 404). A route's body is one call on it,
    `graph_in(request, tenant).run(core_call, ...)`: the access is checked before the
    call's arguments (ids from the path) are read, so a stranger learns nothing more than
    404."""
    return tenant_graph(tenant_access(request.user, tenant, role).tenant)


def queued(job_id: RecordID | str, status: str) -> Status[JobQueuedOut]:
    """202: the job `job_id` is queued (its `status`)."""
    return Status(202, JobQueuedOut(job_id=record_key(job_id), status=status))


def moved(module: str, view: str) -> str:
    """The operation id a route had in the router module it was first written in: clients
    generated from the OpenAPI schema call it by that name."""
    return f"kgapp_web_routers_{module}_{view}"
