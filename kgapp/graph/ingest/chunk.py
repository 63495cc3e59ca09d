"""Stage: a document read and cut into the episodes the other stages take one by one.

Text is cut by tokens (`chunking.chunk_text`); a conversation into windows of its
messages (`chunking.group_messages`). A PDF's text is extracted first, in the worker.
"""

from __future__ import annotations

from datetime import datetime
from typing import TypedDict

from surrealdb.data.types.record_id import RecordID

from kgapp.graph import queries
from kgapp.graph.chunking import chunk_text, group_messages
from kgapp.graph.documents.messages import Message, format_messages, message_keys
from kgapp.graph.documents.pdf import PdfLimits, pdf_text
from kgapp.graph.errors import NotFound
from kgapp.graph.ingest.model import EpisodeInput
from kgapp.graph.records import DocumentMessage, record_key
from kgapp.graph.store import TenantStore
from kgapp.graph.time import parse_when

CHUNK_TOKENS = 800
CHUNK_OVERLAP = 100


class _ContentFields(TypedDict):
    kind: str
    file_name: str
    created_at: datetime


class DocumentContent(_ContentFields, total=False):
    """A document as ingestion reads it (queries.DOCUMENT_CONTENT): its content, when it
    was true, and which version it is (`version_at`: when that was uploaded)."""

    text: str | None
    messages: list[DocumentMessage] | None
    raw: bytes | None
    title: str | None
    reference_time: datetime | None
    version: int | None
    version_at: datetime | None


async def read_document(store: TenantStore, document: RecordID, pdf: PdfLimits) -> DocumentContent:
    """The document's content, the document now `chunking`; a PDF's text is extracted
    within `pdf` and kept as the document's text (it is a text document from then on)."""
    row: DocumentContent | None = await store.query_one(queries.DOCUMENT_CONTENT, {"id": document})
    if not row:
        raise NotFound(f"document {document} is gone")
    await document_status(store, document, "chunking")
    if row["kind"] == "pdf":
        text = await pdf_text(row["file_name"], row.get("raw") or b"", pdf)
        await store.query(queries.DOCUMENT_TEXT_SET, {"id": document, "text": text})
        return {**row, "kind": "text", "text": text}
    return row


def chunk(document: RecordID, row: DocumentContent) -> list[EpisodeInput]:
    """The episodes of the document `row` (as `read_document` gives it), in order."""
    if row["kind"] == "conversation":
        return _conversation_episodes(document, row)
    return [
        EpisodeInput(
            content=piece.text,
            source="chunk",
            reference_time=_document_time(row),
            saga=record_key(document),
            source_description=f"document {row['file_name']}",
            document=document,
            chunk_index=piece.index,
            name=f"{row['file_name']} #{piece.index + 1}",
        )
        for piece in chunk_text(
            row.get("text") or "", max_tokens=CHUNK_TOKENS, overlap_tokens=CHUNK_OVERLAP
        )
    ]


def conversation_messages(row: DocumentContent) -> list[tuple[Message, str]]:
    """The messages of a conversation document, each with its key (`message_keys`)."""
    messages = [
        Message(m["speaker"], m["text"], parse_when(m.get("timestamp")))
        for m in row.get("messages") or []
    ]
    return list(zip(messages, message_keys(messages), strict=True))


def conversation_episodes(
    document: RecordID, row: DocumentContent, keyed: list[tuple[Message, str]], start: int = 0
) -> list[EpisodeInput]:
    """One episode per window of `keyed` messages, numbered from `start`; its time is its
    first message's, else the document's."""
    keys = dict((id(m), k) for m, k in keyed)
    episodes = []
    for index, group in enumerate(group_messages([m for m, _ in keyed]), start=start):
        when = next((m.timestamp for m in group if m.timestamp), None) or _document_time(row)
        episodes.append(
            EpisodeInput(
                content=format_messages(group),
                messages=group,
                message_keys=tuple(keys[id(m)] for m in group),
                source="message",
                reference_time=when,
                saga=record_key(document),
                source_description=f"document {row['file_name']}",
                document=document,
                chunk_index=index,
                name=f"{row['file_name']} #{index + 1}",
            )
        )
    return episodes


def _conversation_episodes(document: RecordID, row: DocumentContent) -> list[EpisodeInput]:
    return conversation_episodes(document, row, conversation_messages(row))


def _document_time(row: DocumentContent) -> datetime:
    """When the document's content was true: the reference time given with the upload,
    else the upload's own time."""
    return row.get("reference_time") or row["created_at"]


async def document_status(
    store: TenantStore,
    document: RecordID,
    status: str,
    *,
    chunks: int | None = None,
    error: str | None = None,
) -> None:
    await store.query(
        queries.DOCUMENT_STATUS,
        {"id": document, "status": status, "chunks": chunks, "error": error},
    )
