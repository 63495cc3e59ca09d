"""Reading what was ingested: a saga's or a document's episodes, the documents."""

from __future__ import annotations

from typing import Any

from surrealdb.data.types.record_id import RecordID

from kgapp.graph import queries
from kgapp.graph.records import Episode, as_episode, found
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
) -> list[dict[str, Any]]:
    return list(
        await store.query_one(
            queries.DOCUMENT_LIST, {"status": status, "limit": limit, "offset": offset}
        )
        or []
    )


async def document_get(store: TenantStore, document: RecordID) -> dict[str, Any]:
    row = await store.query_one(queries.DOCUMENT_GET, {"id": document})
    return dict(found(row, "document", document))
