"""Reading what was ingested: a saga's or a document's episodes, the documents."""

from __future__ import annotations

from surrealdb.data.types.record_id import RecordID

from kgapp.graph import queries
from kgapp.graph.records import Document, Episode, as_document, as_episode, found
from kgapp.graph.store import TenantStore


async def episode_list(
    store: TenantStore, *, saga: RecordID | None, document: RecordID | None, limit: int, offset: int
) -> list[Episode]:
    rows = await store.query_one(
        queries.EPISODE_LIST,
        {"saga": saga, "document": document, "limit": limit, "offset": offset},
    )
    return [as_episode(row) for row in rows or []]


async def document_list(
    store: TenantStore, *, status: str | None, limit: int, offset: int
) -> list[Document]:
    rows = await store.query_one(
        queries.DOCUMENT_LIST, {"status": status, "limit": limit, "offset": offset}
    )
    return [as_document(row) for row in rows or []]


async def document_get(store: TenantStore, document: RecordID) -> Document:
    row = await store.query_one(queries.DOCUMENT_GET, {"id": document})
    return as_document(found(row, "document", document))
