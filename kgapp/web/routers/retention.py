"""Retention: a tenant's policy for dropping aged records, its preview, runs and archives."""

from __future__ import annotations

from django.http import FileResponse, HttpRequest
from ninja import Query, Router, Status

from kgapp import tasks
from kgapp.graph.retention import RetentionPolicy
from kgapp.graph.retention.archive import ArchiveFile
from kgapp.web.auth import AuthenticatedHttpRequest
from kgapp.web.routers.shared import DENIED, queued
from kgapp.web.schemas import (
    ErrorOut,
    JobQueuedOut,
    RetentionArchiveOut,
    RetentionOut,
    RetentionPolicyIO,
    RetentionPreviewOut,
)
from tenants import retention
from tenants.access import tenant_access

router = Router(tags=["retention"])


class PreviewQuery(RetentionPolicyIO):
    """A policy to preview; with no `mode`, the tenant's saved one."""

    mode: str | None = None  # type: ignore[assignment]


@router.get("/t/{tenant}/retention", response={200: RetentionOut, **DENIED})
def retention_get(request: HttpRequest, tenant: str) -> RetentionOut:
    """The tenant's retention policy and its history (policy changes and runs)."""
    access = tenant_access(request.user, tenant)
    return RetentionOut.model_validate(
        {
            "policy": retention.retention_policy(access.tenant),
            "history": retention.retention_history(access.tenant),
        }
    )


@router.put("/t/{tenant}/retention", response={200: RetentionPolicyIO, 422: ErrorOut, **DENIED})
def retention_set(
    request: AuthenticatedHttpRequest, tenant: str, payload: RetentionPolicyIO
) -> RetentionPolicy:
    """Set the policy (owner); audited. Preview it first: once saved, beat applies it."""
    access = tenant_access(request.user, tenant, retention.RETENTION_ROLE)
    policy = RetentionPolicy(**payload.dict())
    return retention.retention_policy_set(
        tenant=access.tenant, actor=request.user.get_username(), policy=policy
    )


@router.get(
    "/t/{tenant}/retention/preview",
    response={200: RetentionPreviewOut, 422: ErrorOut, **DENIED},
)
def retention_preview(
    request: HttpRequest, tenant: str, query: Query[PreviewQuery]
) -> RetentionPreviewOut:
    """What a policy (the query's, or the saved one) would remove now: counts and a sample.
    Nothing is changed. Owner."""
    access = tenant_access(request.user, tenant, retention.RETENTION_ROLE)
    policy = RetentionPolicy(**query.dict()) if query.mode else None
    return RetentionPreviewOut.model_validate(retention.retention_preview(access.tenant, policy))


@router.post("/t/{tenant}/retention/run", response={202: JobQueuedOut, 422: ErrorOut, **DENIED})
def retention_run(
    request: AuthenticatedHttpRequest, tenant: str
) -> Status[ErrorOut] | Status[JobQueuedOut]:
    """Apply the saved policy now, as a job (owner): archive, then remove, audited."""
    access = tenant_access(request.user, tenant, retention.RETENTION_ROLE)
    if not retention.retention_policy(access.tenant).drops:
        refusal = "the policy keeps everything: save one that drops first"
        return Status(422, ErrorOut(detail=refusal))
    job = tasks.queue_retention(access.tenant, created_by=request.user.get_username())
    return queued(job["id"], job["status"])


@router.get("/t/{tenant}/retention/archives", response={200: list[RetentionArchiveOut], **DENIED})
def retention_archives(request: HttpRequest, tenant: str) -> list[ArchiveFile]:
    """The tenant's retention archives, newest first (owner)."""
    access = tenant_access(request.user, tenant, retention.RETENTION_ROLE)
    return list(retention.archive_files(access.tenant))


@router.get("/t/{tenant}/retention/archives/{archive_name}", response={200: None, **DENIED})
def retention_archive(request: HttpRequest, tenant: str, archive_name: str) -> FileResponse:
    """Download one archive (gzipped JSON Lines; owner). Only names the list shows."""
    access = tenant_access(request.user, tenant, retention.RETENTION_ROLE)
    path = retention.archive_file(access.tenant, archive_name)
    return FileResponse(
        path.open("rb"), as_attachment=True, filename=path.name, content_type="application/gzip"
    )
