"""What the curation modules share: the refusal a person can act on, records read back
by id, and the bookkeeping after moving facts."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, Literal, TypeVar

from surrealdb.data.types.record_id import RecordID

from kgapp.graph import queries
from kgapp.graph.audit import AliasRow, Candidate
from kgapp.graph.errors import GraphError
from kgapp.graph.records import Entity, JsonObject, StoredFact, found, record_key
from kgapp.graph.store import TenantStore

T = TypeVar("T")

# A fact's supersession links, each naming another fact (or none).
LINKS: tuple[Literal["supersedes", "superseded_by", "revision_of"], ...] = (
    "supersedes",
    "superseded_by",
    "revision_of",
)


class CurationRefused(GraphError):
    """The change cannot be made as asked (a person can act on the message)."""


# A query parameter: the fields of a record of any of these tables.
def content(row: StoredFact | Entity | AliasRow | Candidate) -> JsonObject:
    """A record's fields for `UPDATE ... CONTENT` (the id is the statement's): a query
    parameter, whichever table the record is of."""
    return {k: v for k, v in row.items() if k != "id"}


def new_id(old: RecordID, suffix: str) -> RecordID:
    """A new id in `old`'s table: its key with `_suffix` added (a record made again)."""
    return RecordID(old.table_name, f"{record_key(old).partition(':')[2]}_{suffix}")


async def records(store: TenantStore, ids: list[RecordID]) -> dict[str, StoredFact]:
    """The facts of `ids` that exist, by key, in one round trip (one statement per
    record: `FROM $ids` sometimes fails on 3.0.2, docs/surrealdb-notes.md)."""
    batch = queries.Batch()
    for record in ids:
        batch.add(queries.RECORD_GET, id=record)
    rows = await store.query(batch.sql, batch.params) if ids else []
    return {record_key(row["id"]): row for row in rows if row}


async def record_of(
    store: TenantStore, record: RecordID, table: str, what: str, build: Callable[[Any], T]
) -> T:
    """One record of `table`, built by `build` (records.as_...), or NotFound naming it
    as `what`."""
    row = None
    if record.table_name == table:
        row = await store.query_one(queries.RECORD_GET, {"id": record})
    return build(dict(found(row, what, record)))


async def referrers(store: TenantStore, facts: list[RecordID]) -> dict[str, StoredFact]:
    """The facts whose supersession links point at any of `facts`, by key."""
    batch = queries.Batch()
    for fact in facts:
        batch.add(queries.FACT_REFERRERS, id=fact)
    by_key: dict[str, StoredFact] = {}
    for rows in await store.query(batch.sql, batch.params) if facts else []:
        for row in rows or []:
            by_key.setdefault(record_key(row["id"]), row)
    return by_key


def relink(row: StoredFact, new_ids: dict[str, RecordID]) -> None:
    """Point `row`'s supersession links at the new ids of the facts they name."""
    for link in LINKS:
        target = row.get(link)
        if target is not None and record_key(target) in new_ids:
            row[link] = new_ids[record_key(target)]


async def recount(store: TenantStore, endpoints: Iterable[str]) -> None:
    """Recount the degree of the entities (by key) whose facts changed."""
    ids = [RecordID(*key.split(":", 1)) for key in sorted(endpoints)]
    if ids:
        await store.query(queries.ENTITY_DEGREE_RECOUNT, {"ids": ids})
