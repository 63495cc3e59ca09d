"""Export and import of a whole tenant."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Literal

from django.http import HttpRequest, StreamingHttpResponse
from ninja import File, Query, Router, Schema, Status
from ninja.files import UploadedFile
from pydantic import Field

from kgapp import tasks
from kgapp.graph.time import Moment
from kgapp.web import ratelimits
from kgapp.web.routers.shared import DENIED, LIMITED, queued
from kgapp.web.schemas import ErrorOut, Instant, JobQueuedOut
from tenants import transfer
from tenants.access import tenant_access
from tenants.models import Role

router = Router(tags=["export"])

_TYPES = {
    "jsonl": ("application/x-ndjson", "jsonl"),
    "graphml": ("application/graphml+xml", "graphml"),
    "csv": ("text/csv; charset=utf-8", "csv"),
}
_EXPORT_ANSWER = {
    "description": "the export, streamed as a download",
    "content": {kind: {"schema": {"type": "string"}} for kind, _ in _TYPES.values()},
}


class ExportIn(Schema):
    format: Literal["jsonl", "graphml", "csv"] = Field(
        default="jsonl",
        description="jsonl: the whole tenant, to import elsewhere (owners); graphml or csv:"
        " the graph at a moment (every member)",
    )
    part: Literal["facts", "entities"] = Field(
        default="facts", description="csv only: the facts, or the entities they join"
    )
    as_of: Instant | None = Field(default=None, description="graphml/csv: valid time; default now")
    known_at: Instant | None = Field(
        default=None, description="graphml/csv: system time; default now"
    )


@router.get(
    "/t/{tenant}/export",
    response={422: ErrorOut, **DENIED, **LIMITED},
    openapi_extra={"responses": {"200": _EXPORT_ANSWER}},
)
def export(request: HttpRequest, tenant: str, params: Query[ExportIn]) -> StreamingHttpResponse:
    """Download the tenant: `jsonl` holds everything needed to rebuild it (documents and
    their versions, episodes, entities, facts with their four timestamps, communities,
    ontology, audit log, curator decisions, retention policy) and is what `POST import`
    loads; `graphml` (Gephi, networkx) and `csv` hold the graph at a moment."""
    minimum = Role.OWNER if params.format == "jsonl" else Role.VIEWER
    access = tenant_access(request.user, tenant, minimum)
    ratelimits.check(request, "export")
    moment = Moment.of(params.as_of, params.known_at)
    stream = transfer.export_stream(access.tenant, params.format, moment, params.part)
    content_type, suffix = _TYPES[params.format]
    response = StreamingHttpResponse(stream, content_type=content_type)
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    part = f"-{params.part}" if params.format == "csv" else ""
    name = f"{access.tenant.slug}-{stamp}{part}.{suffix}"
    response["Content-Disposition"] = f'attachment; filename="{name}"'
    return response


@router.post(
    "/t/{tenant}/import",
    response={202: JobQueuedOut, 409: ErrorOut, 422: ErrorOut, **DENIED, **LIMITED},
)
def import_(request: HttpRequest, tenant: str, file: File[UploadedFile]) -> Status[JobQueuedOut]:
    """Load a JSONL export (gzip-compressed or not) into this tenant, which must be empty
    (owners). One job checks the whole file first, then writes it with progress; a
    truncated or changed file, or any failure, leaves the tenant empty and the job failed
    with the reason. Larger files than an upload allows: `manage.py import_tenant`."""
    access = tenant_access(request.user, tenant, Role.OWNER)
    ratelimits.check(request, "upload")
    transfer.import_check_empty(access.tenant)
    job = tasks.queue_import(access.tenant, file, created_by=request.user.get_username())
    return queued(job["id"], job["status"])
