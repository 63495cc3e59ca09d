"""What the curation modules share: the refusal a person can act on, records read back
by id, the audit entry a transaction wrote, and the bookkeeping after moving facts."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from surrealdb.data.types.record_id import RecordID

from kgapp.graph import queries
from kgapp.graph.errors import GraphError
from kgapp.graph.records import found, record_key
from kgapp.graph.store import TenantStore


class CurationRefused(GraphError):
    """The change cannot be made as asked (a person can act on the message)."""


def audit_of(results: list[Any]) -> dict[str, Any]:
    """The audit entry a transaction created (its last statement before COMMIT)."""
    return dict(next(r for r in reversed(results) if isinstance(r, dict) and "action" in r))


def content(row: dict[str, Any]) -> dict[str, Any]:
    """A record's fields for `UPDATE ... CONTENT` (the id is the statement's)."""
    return {k: v for k, v in row.items() if k != "id"}


async def records(store: TenantStore, ids: list[RecordID]) -> dict[str, dict[str, Any]]:
    """The records of `ids` that exist, by key, in one round trip (one statement per
    record: `FROM $ids` sometimes fails on 3.0.2, docs/surrealdb-notes.md)."""
    batch = queries.Batch()
    for record in ids:
        batch.add(queries.RECORD_GET, id=record)
    rows = await store.query(batch.sql, batch.params) if ids else []
    return {record_key(row["id"]): row for row in rows if row}


async def record_of(store: TenantStore, record: RecordID, table: str, what: str) -> dict[str, Any]:
    """One record of `table`, or NotFound naming it as `what`."""
    row = None
    if record.table_name == table:
        row = await store.query_one(queries.RECORD_GET, {"id": record})
    return dict(found(row, what, record))


async def referrers(store: TenantStore, facts: list[RecordID]) -> dict[str, dict[str, Any]]:
    """The facts whose supersession links point at any of `facts`, by key."""
    batch = queries.Batch()
    for fact in facts:
        batch.add(queries.FACT_REFERRERS, id=fact)
    by_key: dict[str, dict[str, Any]] = {}
    for rows in await store.query(batch.sql, batch.params) if facts else []:
        for row in rows or []:
            by_key.setdefault(record_key(row["id"]), row)
    return by_key


def relink(row: dict[str, Any], new_ids: dict[str, RecordID]) -> None:
    """Point `row`'s supersession links at the new ids of the facts they name."""
    for link in ("supersedes", "superseded_by", "revision_of"):
        target = row.get(link)
        if target is not None and record_key(target) in new_ids:
            row[link] = new_ids[record_key(target)]


async def recount(store: TenantStore, endpoints: Iterable[str]) -> None:
    """Recount the degree of the entities (by key) whose facts changed."""
    ids = [RecordID(*key.split(":", 1)) for key in sorted(endpoints)]
    if ids:
        await store.query(queries.ENTITY_DEGREE_RECOUNT, {"ids": ids})
