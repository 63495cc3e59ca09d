"""What the edges call: submit episodes and documents as jobs, run a job, add a fact
directly, delete what was ingested. All bound to one tenant's store."""

from __future__ import annotations

import asyncio
import hashlib
import random
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from typing import Any

from surrealdb.data.types.record_id import RecordID

from kgapp.graph import jobs, queries
from kgapp.graph.documents.errors import DocumentError
from kgapp.graph.documents.messages import Message
from kgapp.graph.documents.pdf import PdfLimits
from kgapp.graph.documents.upload import ParsedDocument
from kgapp.graph.embeddings import Embedder
from kgapp.graph.errors import GraphError, NotFound, UniqueViolation, WriteConflict
from kgapp.graph.ingest.chunk import document_status
from kgapp.graph.ingest.extract import drafts_from
from kgapp.graph.ingest.model import EpisodeInput, EpisodeWork
from kgapp.graph.ingest.offline.extractor import OfflineExtractor
from kgapp.graph.ingest.pipeline import (
    IngestReport,
    ingest_context,
    ingest_document,
    ingest_job,
    resolve_and_persist,
)
from kgapp.graph.ingest.prepare import episode_record, saga_record
from kgapp.graph.llm.client import LLMClient
from kgapp.graph.llm.prompts.extract import ExtractedEntity, ExtractedFact, Extraction
from kgapp.graph.records import record_key, to_json
from kgapp.graph.store import TenantStore
from kgapp.graph.text import content_hash
from kgapp.graph.time import parse_when

# --- submitting --------------------------------------------------------------------------


async def episode_submit(
    store: TenantStore, episode: EpisodeInput, *, created_by: str | None
) -> tuple[str, dict[str, Any]]:
    """The episode's (deterministic) id and a queued job that will ingest it."""
    record = episode_record(episode, content_hash(episode.content))
    params = {"episodes": [_episode_params(episode)]}
    job = await jobs.job_create(store, kind="ingest_episode", created_by=created_by, params=params)
    return record_key(record), to_json(job)


async def document_submit(
    store: TenantStore,
    parsed: ParsedDocument,
    *,
    file_name: str,
    data: bytes,
    uploaded_by: str | None,
) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """The document record and its queued job; an identical file already uploaded gives
    back the existing document and no new job (uploading twice changes nothing)."""
    digest = hashlib.sha256(data).hexdigest()
    existing = await store.query_one(queries.DOCUMENT_BY_HASH, {"hash": digest})
    if existing:
        return to_json(existing[0]), None
    record = RecordID("document", "d" + digest[:24])
    document = await store.query_one(
        queries.DOCUMENT_CREATE,
        {
            "id": record,
            "data": {
                "file_name": file_name[:255],
                "mime": parsed.mime,
                "size": len(data),
                "content_hash": digest,
                "status": "pending",
                "uploaded_by": uploaded_by,
                "kind": parsed.kind,
                "title": parsed.title,
                "text": parsed.text if parsed.kind == "text" else None,
                "messages": [_message_row(m) for m in parsed.messages] or None,
                "raw": data if parsed.kind == "pdf" else None,  # read by the worker
            },
        },
    )
    job = await jobs.job_create(
        store, kind="ingest_document", total=0, created_by=uploaded_by, document=record
    )
    await store.query(queries.DOCUMENT_LINK_JOB, {"id": record, "job": job["id"]})
    return to_json({**document, "job": job["id"]}), to_json(job)


def _episode_params(episode: EpisodeInput) -> dict[str, Any]:
    row = asdict(episode)
    row["reference_time"] = episode.reference_time.isoformat()
    row["document"] = None
    del row["messages"]  # an episode posted through the API has its lines only
    return row


def _message_row(message: Message) -> dict[str, Any]:
    return {
        "speaker": message.speaker,
        "text": message.text,
        "timestamp": message.timestamp.isoformat() if message.timestamp else None,
    }


# --- running -----------------------------------------------------------------------------


async def ingest_run(
    store: TenantStore,
    job: RecordID,
    *,
    embedder: Embedder,
    llm: LLMClient | None,
    extractor: OfflineExtractor | None = None,
    pdf: PdfLimits | None = None,
) -> dict[str, Any]:
    """Run an ingest job to its end, through `jobs.job_run` (queued, running, then
    completed, failed or paused). Idempotent: a finished job is left as it is, and a
    retried one skips the episodes it already wrote. Without `llm`, `extractor` extracts
    (None: the default spaCy pipeline). A PDF document is read here, within `pdf` (None:
    the defaults); one it cannot read fails the job, saying why. The store failing
    leaves the job running, for the task to retry."""
    run = _IngestRun(store, job, embedder, llm, extractor, pdf or PdfLimits())
    return await jobs.job_run(
        store, job, run.work, retried=(GraphError,), failed=run.failed, ended=run.ended
    )


@dataclass
class _IngestRun:
    """One run of an ingest job: its work, the report of a failure, and its document's
    status once the job's report is written."""

    store: TenantStore
    job: RecordID
    embedder: Embedder
    llm: LLMClient | None
    extractor: OfflineExtractor | None
    pdf: PdfLimits
    document: RecordID | None = None

    async def work(self, store: TenantStore) -> IngestReport:
        row = await jobs.job_get(store, self.job)
        self.document = row.get("document")
        if self.document is not None:
            return await ingest_document(
                store,
                self.job,
                self.document,
                embedder=self.embedder,
                llm=self.llm,
                extractor=self.extractor,
                pdf=self.pdf,
            )
        episodes = [_episode_from_params(p) for p in row["params"]["episodes"]]
        return await ingest_job(
            store,
            self.job,
            episodes,
            embedder=self.embedder,
            llm=self.llm,
            extractor=self.extractor,
        )

    def failed(self, error: Exception) -> IngestReport:
        # A DocumentError's message is for the user as it is.
        reason = str(error) if isinstance(error, DocumentError) else jobs.failure_reason(error)
        return IngestReport(status="failed", error=reason)

    async def ended(self, report: jobs.JobReport) -> None:
        if self.document is not None:
            status = {"completed": "completed", "paused": "extracting"}.get(report.status, "failed")
            await document_status(self.store, self.document, status, error=report.error)


def _episode_from_params(params: dict[str, Any]) -> EpisodeInput:
    fields = dict(params)
    fields["reference_time"] = parse_when(fields["reference_time"]) or datetime.now(UTC)
    return EpisodeInput(**fields)


# --- facts directly ----------------------------------------------------------------------


@dataclass(frozen=True)
class FactAdded:
    fact: dict[str, Any]
    created: bool  # False: the fact was known already (posted again, or a duplicate)


FACT_ADD_ATTEMPTS = 4


async def fact_add(
    store: TenantStore,
    *,
    source: tuple[str, str | None],
    relation: str,
    target: tuple[str, str | None],
    fact: str | None,
    valid_at: datetime | None,
    invalid_at: datetime | None,
    confidence: float,
    embedder: Embedder,
    created_by: str | None,
) -> FactAdded:
    """A triplet added by hand, resolved and superseding exactly as extracted facts are.
    It is recorded with an episode of source `json` for provenance, whose id follows from
    its content: posting the same fact again gives back the one recorded. A write that
    conflicts with a concurrent one is re-read and retried; WriteConflict after that."""
    now = datetime.now(UTC)
    sentence = fact or f"{source[0]} {relation} {target[0]}"
    extraction = Extraction(
        entities=[
            ExtractedEntity(name=source[0], entity_type=source[1] or "", summary=""),
            ExtractedEntity(name=target[0], entity_type=target[1] or "", summary=""),
        ],
        facts=[
            ExtractedFact(
                source=source[0],
                relation=relation,
                target=target[0],
                fact=sentence,
                edge_type="semantic",
                confidence=confidence,
                valid_at=(valid_at or now).isoformat(),
                invalid_at=invalid_at.isoformat() if invalid_at else None,
            )
        ],
    )
    episode = EpisodeInput(
        content=extraction.model_dump_json(),
        source="json",
        reference_time=valid_at or now,
        source_description=f"fact added through the API by {created_by or 'unknown'}",
    )
    digest = content_hash(episode.content)
    record = episode_record(episode, digest)
    for attempt in range(FACT_ADD_ATTEMPTS):
        existing = await _fact_of_episode(store, record)
        if existing is not None:
            return FactAdded(existing, created=False)
        ctx = await ingest_context(store, embedder=embedder, llm=None)
        work = EpisodeWork(input=episode, record=record, content_hash=digest, extraction=extraction)
        drafts_from(ctx, work, extraction)
        if not work.facts:
            raise ValueError("the fact needs two different entities")
        try:
            await resolve_and_persist(ctx, work)
        except UniqueViolation:
            if attempt == FACT_ADD_ATTEMPTS - 1:
                break
            await asyncio.sleep(random.uniform(0.02, 0.1) * 2**attempt)
            continue
        draft = work.facts[0]
        added = draft.record if draft.duplicate_of is None else draft.duplicate_of["id"]
        fact_row = to_json(await store.query_one(queries.FACT_GET, {"id": added}))
        return FactAdded(fact_row, created=draft.duplicate_of is None)
    raise WriteConflict(
        "the fact conflicted with concurrent writes to the same entities; retry it"
    )


async def _fact_of_episode(store: TenantStore, episode: RecordID) -> dict[str, Any] | None:
    """The fact an API episode recorded, if that episode exists. Its fact may have been
    deleted or merged away since: that is a conflict, not a new fact."""
    exists, facts = await store.query(
        queries.RECORD_EXISTS + queries.FACTS_OF_EPISODE, {"id": episode}
    )
    if not exists:
        return None
    if not facts:
        raise WriteConflict(
            "this exact fact was posted before and its record has since been deleted or"
            " merged; change valid_at to post it again"
        )
    return to_json(facts[0])


# --- deleting ----------------------------------------------------------------------------


async def episodes_remove(store: TenantStore, episodes: list[RecordID]) -> dict[str, int]:
    if not episodes:
        return {
            "facts_deleted": 0,
            "facts_restored": 0,
            "entities_deleted": 0,
            "episodes_deleted": 0,
        }
    results = await store.transaction(queries.EPISODES_REMOVE, {"episodes": episodes})
    removed = next(dict(r) for r in reversed(results) if isinstance(r, dict))
    await store.query(queries.ENTITY_DEGREE_RECOUNT, {"ids": removed.pop("endpoints")})
    return removed


async def episode_delete(store: TenantStore, episode: RecordID) -> dict[str, int]:
    if not await store.query_one(queries.RECORD_EXISTS, {"id": episode}):
        raise NotFound(f"no episode {record_key(episode)}")
    return await episodes_remove(store, [episode])


async def document_delete(store: TenantStore, document: RecordID) -> dict[str, int]:
    """Remove the document, its episodes, and every fact or entity only it supported."""
    if not await store.query_one(queries.RECORD_EXISTS, {"id": document}):
        raise NotFound(f"no document {record_key(document)}")
    episodes = await store.query_one(queries.EPISODES_OF_DOCUMENT, {"document": document}) or []
    removed = await episodes_remove(store, list(episodes))
    await store.transaction(queries.DOCUMENT_REMOVE, {"document": document})
    return removed


# --- reading -----------------------------------------------------------------------------


def saga_of(name: str) -> RecordID:
    return saga_record(name)


async def episode_list(
    store: TenantStore, *, saga: RecordID | None, document: RecordID | None, limit: int, offset: int
) -> list[dict[str, Any]]:
    return list(
        await store.query_one(
            queries.EPISODE_LIST,
            {"saga": saga, "document": document, "limit": limit, "offset": offset},
        )
        or []
    )


async def document_list(
    store: TenantStore, *, status: str | None, limit: int, offset: int
) -> list[dict[str, Any]]:
    return list(
        await store.query_one(
            queries.DOCUMENT_LIST, {"status": status, "limit": limit, "offset": offset}
        )
        or []
    )


async def document_get(store: TenantStore, document: RecordID) -> dict[str, Any]:
    row = await store.query_one(queries.DOCUMENT_GET, {"id": document})
    if not row:
        raise NotFound(f"no document {record_key(document)}")
    return dict(row)


async def job_requeue(
    store: TenantStore, job: RecordID, *, stale_after: float
) -> dict[str, Any] | None:
    """Back to queued when failed or paused, or running with no heartbeat for
    `stale_after` seconds (its worker died); None otherwise (a live job, say)."""
    return await store.query_one(
        queries.JOB_REQUEUE, {"job": job, "stale_ms": int(stale_after * 1000)}
    )
