"""Ingestion: episodes, documents, facts and the ontology of one tenant."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.http import HttpRequest
from ninja import File, Form, Query, Router, Status
from ninja.errors import HttpError
from ninja.files import UploadedFile
from surrealdb.data.types.record_id import RecordID

from kgapp import tasks
from kgapp.graph import ontology
from kgapp.graph.documents.errors import DocumentError
from kgapp.graph.documents.parse import parse_document
from kgapp.graph.ingest import estimate, service
from kgapp.graph.records import parse_record_id, to_json
from kgapp.graph.store import TenantGraph
from kgapp.web import ratelimits
from kgapp.web.routers.tenant import DENIED, LIMITED
from kgapp.web.schemas import (
    DocumentFilter,
    DocumentOut,
    DocumentQueuedOut,
    DocumentUploadIn,
    EpisodeFilter,
    EpisodeIn,
    EpisodeOut,
    EpisodeQueuedOut,
    ErrorOut,
    FactIn,
    FactOut,
    JobQueuedOut,
    OntologyIO,
    OntologyOut,
    RemovalPreviewOut,
    RemovedOut,
    UploadEstimateOut,
)
from tenants.access import tenant_access
from tenants.models import Role
from tenants.wiring import embedder, llm_model, pdf_limits, tenant_graph

router = Router(tags=["ingest"])
MAX_FILES = 50


@router.post("/t/{tenant}/episodes", response={202: EpisodeQueuedOut, 422: ErrorOut, **DENIED})
def episode_add(request: HttpRequest, tenant: str, payload: EpisodeIn) -> Status[dict[str, str]]:
    """Queue one episode. `message` content is one `speaker: text` per line."""
    access = tenant_access(request.user, tenant, Role.EDITOR)
    episode_id, job = tasks.queue_episode(
        access.tenant, payload.episode(), created_by=request.user.get_username()
    )
    return Status(202, {"episode_id": episode_id, "job_id": job["id"]})


@router.get("/t/{tenant}/episodes", response={200: list[EpisodeOut], **DENIED}, exclude_unset=True)
def episode_list(request: HttpRequest, tenant: str, filters: Query[EpisodeFilter]) -> Any:
    access = tenant_access(request.user, tenant)
    rows = tenant_graph(access.tenant).run(
        service.episode_list, **filters.records(), limit=filters.limit, offset=filters.offset
    )
    return to_json(rows)


@router.delete(
    "/t/{tenant}/episodes/{episode_id}",
    response={200: RemovedOut, 422: ErrorOut, **DENIED},
    exclude_unset=True,
)
def episode_delete(request: HttpRequest, tenant: str, episode_id: str) -> Any:
    """Delete an episode and every fact or entity only it supported."""
    access = tenant_access(request.user, tenant, Role.EDITOR)
    record = parse_record_id(episode_id, "episode")
    return tenant_graph(access.tenant).run(service.episode_delete, record).as_dict()


@router.post(
    "/t/{tenant}/documents",
    response={
        200: UploadEstimateOut, 202: list[DocumentQueuedOut], 413: ErrorOut, 415: ErrorOut,
        422: ErrorOut, **DENIED, **LIMITED,
    },
)
def document_upload(
    request: HttpRequest,
    tenant: str,
    files: File[list[UploadedFile]],
    form: Form[DocumentUploadIn],
    dry_run: bool = False,
) -> Status[Any]:
    """Upload files (.txt .md .pdf .html .json .csv, conversation exports). Every file is
    checked before any is stored: one bad file refuses the whole upload, saying which.
    `dry_run=true`: store nothing, answer 200 with what ingesting would take (chunks,
    model calls, tokens, cost) per file and in total (limited apart from uploads)."""
    ratelimits.check(request, "estimate" if dry_run else "upload")
    access = tenant_access(request.user, tenant, Role.EDITOR)
    uploads = _parsed_uploads(files)
    graph = tenant_graph(access.tenant)
    if dry_run:
        return Status(200, _estimate(graph, uploads))
    answers = [_submit(request, graph, upload, form) for upload in uploads]
    for _, job in answers:
        if job is not None:
            tasks.queue_ingest(access.tenant, job)
    return Status(202, [answer for answer, _ in answers])


def _submit(
    request: HttpRequest,
    graph: TenantGraph,
    upload: estimate.Upload,
    form: DocumentUploadIn,
    replaces: RecordID | None = None,
) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """Store one parsed upload as a document or a document's next version (409 while
    that document is still being ingested)."""
    try:
        row, job = graph.run(
            service.document_submit,
            upload.parsed,
            file_name=upload.file_name,
            data=upload.data,
            uploaded_by=request.user.get_username(),
            reference_time=form.reference_time,
            replaces=replaces,
        )
    except service.DocumentBusy as error:
        raise HttpError(409, str(error)) from error
    answer = {
        "document_id": row["id"],
        "job_id": job["id"] if job else row.get("job"),
        "duplicate": job is None,
        "version": row.get("version") or 1,
    }
    return answer, job


@router.post(
    "/t/{tenant}/documents/{document_id}/versions",
    response={
        202: DocumentQueuedOut, 409: ErrorOut, 413: ErrorOut, 415: ErrorOut, 422: ErrorOut,
        **DENIED, **LIMITED,
    },
)
def document_replace(
    request: HttpRequest,
    tenant: str,
    document_id: str,
    files: File[list[UploadedFile]],
    form: Form[DocumentUploadIn],
) -> Status[Any]:
    """Upload the next version of a document (one file): passages it shares with the
    current version are kept without extraction, new ones ingested, dropped ones
    withdrawn. The same file as the current version changes nothing (`duplicate`)."""
    ratelimits.check(request, "upload")
    access = tenant_access(request.user, tenant, Role.EDITOR)
    record = parse_record_id(document_id, "document")
    uploads = _parsed_uploads(files)
    if len(uploads) != 1:
        raise HttpError(422, "a new version is one file: attach exactly one")
    graph = tenant_graph(access.tenant)
    graph.run(service.document_get, record)  # 404 for a document that is not there
    answer, job = _submit(request, graph, uploads[0], form, replaces=record)
    if job is not None:
        tasks.queue_ingest(access.tenant, job)
    return Status(202, answer)


def _parsed_uploads(files: list[UploadedFile]) -> list[estimate.Upload]:
    """Every file read and parsed; the first bad one refuses them all (4xx, naming it)."""
    if not files:
        raise HttpError(422, "attach at least one file in the `files` field")
    if len(files) > MAX_FILES:
        raise HttpError(422, f"at most {MAX_FILES} files per upload; send the rest separately")
    parsed = []
    for upload in files:
        name = upload.name or "upload"
        if upload.size and upload.size > settings.UPLOAD_MAX_BYTES:
            raise HttpError(
                413,
                f"{name}: {upload.size} bytes is over the {settings.UPLOAD_MAX_BYTES} byte limit",
            )
        data = upload.read(settings.UPLOAD_MAX_BYTES + 1)
        try:
            document = parse_document(name, data, max_bytes=settings.UPLOAD_MAX_BYTES)
        except DocumentError as error:
            message = str(error) if name in str(error) else f"{name}: {error}"
            raise HttpError(error.status, message) from error
        parsed.append(estimate.Upload(file_name=name, data=data, parsed=document))
    return parsed


def _estimate(graph: TenantGraph, uploads: list[estimate.Upload]) -> dict[str, Any]:
    """What ingesting `uploads` would take, and whether the page should ask first."""
    model = llm_model()
    try:
        each = graph.run(
            estimate.upload_estimates,
            uploads,
            model=model,
            prices=settings.LLM_PRICES,
            pdf=pdf_limits(),
        )
    except DocumentError as error:  # a PDF the worker could not read either
        raise HttpError(error.status, str(error)) from error
    total = estimate.estimates_total(each)
    return {
        "model": model,
        "files": [
            {"file_name": u.file_name, **e.as_dict()} for u, e in zip(uploads, each, strict=True)
        ],
        "total": total.as_dict(),
        "confirm_above_tokens": settings.CONFIRM_ABOVE_TOKENS,
        "needs_confirmation": total.input_tokens > settings.CONFIRM_ABOVE_TOKENS,
    }


@router.get(
    "/t/{tenant}/documents", response={200: list[DocumentOut], **DENIED}, exclude_unset=True
)
def document_list(request: HttpRequest, tenant: str, filters: Query[DocumentFilter]) -> Any:
    access = tenant_access(request.user, tenant)
    return to_json(
        tenant_graph(access.tenant).run(
            service.document_list, status=filters.status, limit=filters.limit, offset=filters.offset
        )
    )


@router.get(
    "/t/{tenant}/documents/{document_id}",
    response={200: DocumentOut, 422: ErrorOut, **DENIED},
    exclude_unset=True,
)
def document_detail(request: HttpRequest, tenant: str, document_id: str) -> Any:
    access = tenant_access(request.user, tenant)
    record = parse_record_id(document_id, "document")
    return to_json(tenant_graph(access.tenant).run(service.document_get, record))


@router.delete(
    "/t/{tenant}/documents/{document_id}",
    response={200: RemovedOut | RemovalPreviewOut, 422: ErrorOut, **DENIED},
    exclude_unset=True,
)
def document_delete(
    request: HttpRequest, tenant: str, document_id: str, dry_run: bool = False
) -> Any:
    """Delete the document and withdraw its support: an episode, fact or entity goes
    only when nothing else holds it (another document, an API call, a curator).
    `dry_run=true`: change nothing, answer what would go and what would stay."""
    access = tenant_access(request.user, tenant, Role.EDITOR)
    record = parse_record_id(document_id, "document")
    graph = tenant_graph(access.tenant)
    if dry_run:
        return graph.run(service.document_removal_preview, record).as_dict()
    return graph.run(service.document_delete, record).as_dict()


@router.post(
    "/t/{tenant}/facts",
    response={200: FactOut, 201: FactOut, 409: ErrorOut, 422: ErrorOut, **DENIED},
)
def fact_add(request: HttpRequest, tenant: str, payload: FactIn) -> Status[dict[str, Any]]:
    """Add a fact as a triplet; resolution and supersession apply as for extracted facts.
    201: a new fact. 200: the fact was known (posted again, or stated before) and is
    given back, with this post as one more piece of its provenance when it is new."""
    access = tenant_access(request.user, tenant, Role.EDITOR)
    try:
        added = tenant_graph(access.tenant).run(
            payload.add, embedder=embedder(), created_by=request.user.get_username()
        )
    except ValueError as error:
        raise HttpError(422, str(error)) from error
    return Status(201 if added.created else 200, FactOut.of(added.fact))


@router.get("/t/{tenant}/ontology", response={200: OntologyOut, **DENIED})
def ontology_get(request: HttpRequest, tenant: str) -> Any:
    """The entity and relation types; `notice` says when the default stands in for a
    stored ontology that no longer loads."""
    access = tenant_access(request.user, tenant)
    current = tenant_graph(access.tenant).run(ontology.ontology_load)
    return _ontology_out(current)


@router.put("/t/{tenant}/ontology", response={200: OntologyOut, 422: ErrorOut, **DENIED})
def ontology_put(request: HttpRequest, tenant: str, payload: OntologyIO) -> Any:
    """Replace the entity and relation types (curator); 422, with nothing saved, naming
    each problem when the ontology would not load."""
    access = tenant_access(request.user, tenant, Role.CURATOR)
    rows = [
        {"kind": "entity_type", **t.dict(), "single_valued": False, "aliases": []}
        for t in payload.entity_types
    ]
    rows += [{"kind": "relation_type", **r.dict()} for r in payload.relation_types]
    graph = tenant_graph(access.tenant)
    try:
        graph.run(ontology.ontology_save, ontology.ontology_from_rows(rows))
    except ontology.OntologyInvalid as error:
        raise HttpError(422, str(error)) from error
    return _ontology_out(graph.run(ontology.ontology_load))


def _ontology_out(current: ontology.Ontology) -> dict[str, Any]:
    return {
        "entity_types": [
            {"name": t.name, "description": t.description} for t in current.entity_types
        ],
        "relation_types": [
            {
                "name": r.name,
                "description": r.description,
                "single_valued": r.single_valued,
                "aliases": list(r.aliases),
            }
            for r in current.relation_types
        ],
        "notice": current.fallback or None,
    }


@router.post(
    "/t/{tenant}/jobs/{job_id}/retry",
    response={202: JobQueuedOut, 409: ErrorOut, 422: ErrorOut, **DENIED},
)
def job_retry(request: HttpRequest, tenant: str, job_id: str) -> Status[dict[str, str]]:
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
    tasks.queue_ingest(access.tenant, to_json(job))
    return Status(202, {"job_id": job_id, "status": "queued"})
