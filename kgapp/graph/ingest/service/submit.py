"""Submitting: an episode or an uploaded document becomes a queued ingest job."""

from __future__ import annotations

import hashlib
from datetime import datetime
from typing import TypedDict

from surrealdb.data.types.record_id import RecordID

from kgapp.graph import jobs, queries
from kgapp.graph.documents.messages import Message
from kgapp.graph.documents.upload import ParsedDocument
from kgapp.graph.ingest.model import EpisodeInput, EpisodeParams
from kgapp.graph.ingest.prepare import episode_record
from kgapp.graph.records import Document, DocumentMessage, Job, as_document, record_key
from kgapp.graph.resolution.canonical import content_hash
from kgapp.graph.store import TenantStore


class _DocumentContent(TypedDict):
    """A new document's record, or a new version's content (queries.DOCUMENT_CREATE,
    DOCUMENT_NEW_VERSION)."""

    file_name: str
    mime: str
    size: int
    content_hash: str
    status: str
    uploaded_by: str | None
    kind: str
    title: str | None
    text: str | None
    messages: list[DocumentMessage] | None
    raw: bytes | None
    reference_time: datetime | None


async def episode_submit(
    store: TenantStore, episode: EpisodeInput, *, created_by: str | None
) -> tuple[str, Job]:
    """The episode's (deterministic) id and a queued job that will ingest it."""
    record = episode_record(episode, content_hash(episode.content))
    params = {"episodes": [_episode_params(episode)]}
    job = await jobs.job_create(store, kind="ingest_episode", created_by=created_by, params=params)
    return record_key(record), job


class DocumentBusy(ValueError):
    """A new version of a document whose job has not finished yet."""


async def document_submit(
    store: TenantStore,
    parsed: ParsedDocument,
    *,
    file_name: str,
    data: bytes,
    uploaded_by: str | None,
    reference_time: datetime | None = None,
    replaces: RecordID | None = None,
) -> tuple[Document, Job | None]:
    """The document record and its queued job; an identical file already uploaded gives
    back the existing document and no new job (uploading twice changes nothing).
    A file named like a document already uploaded (of the same kind), or one that
    `replaces` names, is that document's next version: its job keeps the passages the
    versions share and withdraws the ones it dropped (ingest/versions.py).
    `reference_time` (tz-aware) is when its content was true or said; None: the upload's
    time. DocumentBusy when the document to version is still being ingested."""
    digest = hashlib.sha256(data).hexdigest()
    existing = await store.query_one(queries.DOCUMENT_BY_HASH, {"hash": digest})
    if existing:
        return as_document(existing[0]), None
    content = _content(parsed, file_name, data, digest, uploaded_by, reference_time)
    version = {
        "content_hash": digest,
        "file_name": content["file_name"],
        "size": len(data),
        "uploaded_by": uploaded_by,
    }
    previous = replaces or await _named(store, content["file_name"], parsed.kind)
    if previous:
        record = previous
        document = await store.query_one(
            queries.DOCUMENT_NEW_VERSION, {"id": record, "data": content, "version": version}
        )
        document = document[0] if document else None
        if not document:
            raise DocumentBusy(
                f"{record_key(record)} is still being ingested: upload its next version "
                "once its job has finished"
            )
    else:
        record = RecordID("document", "d" + digest[:24])
        document = await store.query_one(
            queries.DOCUMENT_CREATE, {"id": record, "data": content, "version": version}
        )
    job = await jobs.job_create(
        store, kind="ingest_document", total=0, created_by=uploaded_by, document=record
    )
    await store.query(queries.DOCUMENT_LINK_JOB, {"id": record, "job": job["id"]})
    return as_document({**document, "job": job["id"]}), job


async def _named(store: TenantStore, file_name: str, kind: str) -> RecordID | None:
    """The first document uploaded under `file_name`, of a kind `kind` can version."""
    rows = (
        await store.query_one(queries.DOCUMENT_BY_NAME, {"name": file_name, "kinds": _kinds(kind)})
        or []
    )
    return min(rows, key=lambda r: (r["created_at"], str(r["id"])))["id"] if rows else None


def _kinds(kind: str) -> list[str]:
    """The kinds of stored document a new upload of `kind` can be a version of (a PDF
    is a text document once read)."""
    return ["conversation"] if kind == "conversation" else ["text", "pdf"]


def _content(
    parsed: ParsedDocument,
    file_name: str,
    data: bytes,
    digest: str,
    uploaded_by: str | None,
    reference_time: datetime | None,
) -> _DocumentContent:
    return {
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
        "reference_time": reference_time,
    }


def _episode_params(episode: EpisodeInput) -> EpisodeParams:
    """An episode posted through the API, as its job keeps it: its lines only (no
    messages or their keys)."""
    return {
        "content": episode.content,
        "source": episode.source,
        "reference_time": episode.reference_time.isoformat(),
        "name": episode.name,
        "source_description": episode.source_description,
        "saga": episode.saga,
        "document": None,
        "chunk_index": episode.chunk_index,
    }


def _message_row(message: Message) -> DocumentMessage:
    return {
        "speaker": message.speaker,
        "text": message.text,
        "timestamp": message.timestamp.isoformat() if message.timestamp else None,
    }
