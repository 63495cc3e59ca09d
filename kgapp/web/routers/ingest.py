"""Ingestion: episodes, documents, facts and the ontology of one tenant."""

from __future__ import annotations

from dataclasses import asdict

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
from kgapp.graph.records import Document, Episode, Job, parse_record_id, record_key
from kgapp.graph.store import TenantGraph
from kgapp.web import ratelimits
from kgapp.web.routers.shared import DENIED, LIMITED, graph_in
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
    EstimateOut,
    FactAddedOut,
    FactIn,
    FileEstimateOut,
    OntologyIO,
    OntologyOut,
    RemovalPreviewOut,
    RemovedOut,
    UploadEstimateOut,
)
from tenants.access import tenant_access
from tenants.models import Role
from tenants.wiring import embedder, llm_model, pdf_limits, tenant_graph

UPLOAD_ERRORS = {413: ErrorOut, 415: ErrorOut, 422: ErrorOut, **DENIED, **LIMITED}

router = Router(tags=["ingest"])
MAX_FILES = 50


@router.post("/t/{tenant}/episodes", response={202: EpisodeQueuedOut, 422: ErrorOut, **DENIED})
def episode_add(request: HttpRequest, tenant: str, payload: EpisodeIn) -> Status[EpisodeQueuedOut]:
    """Queue one episode. `message` content is one `speaker: text` per line."""
    access = tenant_access(request.user, tenant, Role.EDITOR)
    episode_id, job = tasks.queue_episode(
        access.tenant, payload.episode(), created_by=request.user.get_username()
    )
    return Status(202, EpisodeQueuedOut(episode_id=episode_id, job_id=job["id"]))


@router.get("/t/{tenant}/episodes", response={200: list[EpisodeOut], **DENIED}, exclude_unset=True)
def episode_list(request: HttpRequest, tenant: str, filters: Query[EpisodeFilter]) -> list[Episode]:
    return graph_in(request, tenant).run(
        service.episode_list, **filters.records(), limit=filters.limit, offset=filters.offset
    )


@router.delete(
    "/t/{tenant}/episodes/{episode_id}",
    response={200: RemovedOut, 422: ErrorOut, **DENIED},
    exclude_unset=True,
)
def episode_delete(request: HttpRequest, tenant: str, episode_id: str) -> RemovedOut:
    """Delete an episode and every fact or entity only it supported."""
    return RemovedOut.model_validate(
        graph_in(request, tenant, Role.EDITOR).run(
            service.episode_delete, parse_record_id(episode_id, "episode")
        )
    )


@router.post(
    "/t/{tenant}/documents",
    response={200: UploadEstimateOut, 202: list[DocumentQueuedOut], **UPLOAD_ERRORS},
)
def document_upload(
    request: HttpRequest,
    tenant: str,
    files: File[list[UploadedFile]],
    form: Form[DocumentUploadIn],
    dry_run: bool = False,
) -> Status[UploadEstimateOut] | Status[list[DocumentQueuedOut]]:
    """Upload files (.txt .md .pdf .html .json .csv, conversation exports). Every file is
    checked before any is stored: one bad file refuses the whole upload, saying which.
    `dry_run=true` is `POST documents/estimate` (kept for older clients)."""
    if dry_run:
        return Status(200, document_estimate(request, tenant, files))
    ratelimits.check(request, "upload")
    access = tenant_access(request.user, tenant, Role.EDITOR)
    uploads = _parsed_uploads(files)
    graph = tenant_graph(access.tenant)
    answers = [_submit(request, graph, upload, form) for upload in uploads]
    for _, job in answers:
        if job is not None:
            tasks.queue_ingest(access.tenant, job)
    return Status(202, [answer for answer, _ in answers])


@router.post("/t/{tenant}/documents/estimate", response={200: UploadEstimateOut, **UPLOAD_ERRORS})
def document_estimate(
    request: HttpRequest, tenant: str, files: File[list[UploadedFile]]
) -> UploadEstimateOut:
    """What ingesting the files would take (chunks, model calls, tokens, cost), per file
    and in total; nothing is stored (editor; limited apart from uploads). The files are
    checked as an upload checks them."""
    ratelimits.check(request, "estimate")
    return _estimate(graph_in(request, tenant, Role.EDITOR), _parsed_uploads(files))


def _submit(
    request: HttpRequest,
    graph: TenantGraph,
    upload: estimate.Upload,
    form: DocumentUploadIn,
    replaces: RecordID | None = None,
) -> tuple[DocumentQueuedOut, Job | None]:
    """Store one parsed upload as a document or a document's next version (409 while
    that document is still being ingested), and its job to queue (None: the same file
    was uploaded before)."""
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
    known = row.get("job")
    answer = DocumentQueuedOut(
        document_id=record_key(row["id"]),
        job_id=record_key(job["id"]) if job else (record_key(known) if known else None),
        duplicate=job is None,
        version=row.get("version") or 1,
    )
    return answer, job


@router.post(
    "/t/{tenant}/documents/{document_id}/versions",
    response={202: DocumentQueuedOut, 409: ErrorOut, **UPLOAD_ERRORS},
)
def document_replace(
    request: HttpRequest,
    tenant: str,
    document_id: str,
    files: File[list[UploadedFile]],
    form: Form[DocumentUploadIn],
) -> Status[DocumentQueuedOut]:
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


def _estimate(graph: TenantGraph, uploads: list[estimate.Upload]) -> UploadEstimateOut:
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
    return UploadEstimateOut(
        model=model,
        files=[
            FileEstimateOut(file_name=u.file_name, **asdict(e))
            for u, e in zip(uploads, each, strict=True)
        ],
        total=EstimateOut(**asdict(total)),
        confirm_above_tokens=settings.CONFIRM_ABOVE_TOKENS,
        needs_confirmation=total.input_tokens > settings.CONFIRM_ABOVE_TOKENS,
    )


@router.get(
    "/t/{tenant}/documents", response={200: list[DocumentOut], **DENIED}, exclude_unset=True
)
def document_list(
    request: HttpRequest, tenant: str, filters: Query[DocumentFilter]
) -> list[Document]:
    return graph_in(request, tenant).run(
        service.document_list, status=filters.status, limit=filters.limit, offset=filters.offset
    )


@router.get(
    "/t/{tenant}/documents/{document_id}",
    response={200: DocumentOut, 422: ErrorOut, **DENIED},
    exclude_unset=True,
)
def document_detail(request: HttpRequest, tenant: str, document_id: str) -> Document:
    return graph_in(request, tenant).run(
        service.document_get, parse_record_id(document_id, "document")
    )


@router.delete(
    "/t/{tenant}/documents/{document_id}",
    response={200: RemovedOut | RemovalPreviewOut, 422: ErrorOut, **DENIED},
    exclude_unset=True,
)
def document_delete(
    request: HttpRequest, tenant: str, document_id: str, dry_run: bool = False
) -> RemovedOut | RemovalPreviewOut:
    """Delete the document and withdraw its support: an episode, fact or entity goes
    only when nothing else holds it (another document, an API call, a curator).
    `dry_run=true`: change nothing, answer what would go and what would stay."""
    graph = graph_in(request, tenant, Role.EDITOR)
    record = parse_record_id(document_id, "document")
    if dry_run:
        return RemovalPreviewOut.model_validate(graph.run(service.document_removal_preview, record))
    return RemovedOut.model_validate(graph.run(service.document_delete, record))


@router.post(
    "/t/{tenant}/facts",
    response={200: FactAddedOut, 201: FactAddedOut, 409: ErrorOut, 422: ErrorOut, **DENIED},
    by_alias=True,
)
def fact_add(request: HttpRequest, tenant: str, payload: FactIn) -> Status[FactAddedOut]:
    """Add a fact as a triplet; resolution and supersession apply as for extracted facts.
    201: a new fact. 200: the fact was known (posted again, or stated before) and is
    given back, with this post as one more piece of its provenance when it is new."""
    graph = graph_in(request, tenant, Role.EDITOR)
    try:
        added = graph.run(payload.add, embedder=embedder(), created_by=request.user.get_username())
    except ValueError as error:
        raise HttpError(422, str(error)) from error
    return Status(201 if added.created else 200, FactAddedOut.model_validate(added.fact))


@router.get("/t/{tenant}/ontology", response={200: OntologyOut, **DENIED})
def ontology_get(request: HttpRequest, tenant: str) -> OntologyOut:
    """The entity and relation types; `notice` says when the default stands in for a
    stored ontology that no longer loads."""
    return OntologyOut.of(graph_in(request, tenant).run(ontology.ontology_load))


@router.put("/t/{tenant}/ontology", response={200: OntologyOut, 422: ErrorOut, **DENIED})
def ontology_put(request: HttpRequest, tenant: str, payload: OntologyIO) -> OntologyOut:
    """Replace the entity and relation types (curator); 422, with nothing saved, naming
    each problem when the ontology would not load."""
    graph = graph_in(request, tenant, Role.CURATOR)
    try:
        graph.run(ontology.ontology_save, payload.ontology())
    except ontology.OntologyInvalid as error:
        raise HttpError(422, str(error)) from error
    return OntologyOut.of(graph.run(ontology.ontology_load))
