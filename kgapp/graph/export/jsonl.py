"""A whole tenant as JSON lines, streamed a page at a time.

The file, one JSON object per line:
1. `{"kind": "header", "format": "kgapp-tenant", "version": 1, "schema_version": ..,
   "embedding_dim": .., "tenant": {"slug": .., "name": ..}, "exported_at": ..}`
2. `{"kind": "settings", "retention": {..}}`: what the deployment keeps outside the graph
3. `{"kind": "record", "table": .., "data": {..}}` for every record, table by table in the
   order of `tables.TABLES`, each table in id order (values typed by `codec`)
4. `{"kind": "trailer", "counts": {table: n}, "records": n, "sha256": ..}`: the SHA-256
   of every byte before the trailer line, so a file cut short or changed is refused.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import UTC, datetime

from kgapp.graph import queries
from kgapp.graph.export import codec
from kgapp.graph.export.tables import IMPORT_JOB_KIND, TABLES, ExportTable
from kgapp.graph.records import JsonObject
from kgapp.graph.retention.policy import RetentionPolicy
from kgapp.graph.schema import schema_version
from kgapp.graph.store import TenantStore

FORMAT = "kgapp-tenant"
VERSION = 1
PAGE = 500  # records read per round trip


@dataclass(frozen=True)
class TenantMeta:
    """What the deployment knows of the tenant beside its graph."""

    slug: str
    name: str
    embedding_dim: int
    retention: RetentionPolicy


def line(value: JsonObject) -> bytes:  # one JSON object of the file (see the top)
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode() + b"\n"


async def export_lines(store: TenantStore, meta: TenantMeta) -> AsyncIterator[bytes]:
    """The export, line by line; holds one page of records at a time."""
    digest = hashlib.sha256()
    counts: dict[str, int] = {}
    opening = {
        "kind": "header",
        "format": FORMAT,
        "version": VERSION,
        "schema_version": await schema_version(store),
        "embedding_dim": meta.embedding_dim,
        "tenant": {"slug": meta.slug, "name": meta.name},
        "exported_at": datetime.now(UTC).isoformat(),
    }
    settings = {"kind": "settings", "retention": meta.retention.as_dict()}
    for value in (opening, settings):
        digest.update(encoded := line(value))
        yield encoded
    for table in TABLES:
        counts[table.name] = 0
        async for row in table_rows(store, table):
            digest.update(encoded := line(record_line(table, row)))
            counts[table.name] += 1
            yield encoded
    total = sum(counts.values())
    trailer = {"kind": "trailer", "counts": counts, "records": total}
    yield line({**trailer, "sha256": digest.hexdigest()})


# A row of any exported table, as stored: every field of it goes into the file.
async def table_rows(store: TenantStore, table: ExportTable) -> AsyncIterator[JsonObject]:
    """A table's rows in id order, read a page of ids at a time."""
    if table.name == "job":
        ids = await store.query_one(queries.EXPORT_JOB_IDS, {"import_kind": IMPORT_JOB_KIND})
    else:
        ids = await store.query_one(queries.EXPORT_IDS, {"table": table.name})
    ids = ids or []
    for first in range(0, len(ids), PAGE):
        rows = await store.query_one(queries.EXPORT_ROWS, {"ids": ids[first : first + PAGE]})
        for row in rows or []:
            yield row


def record_line(table: ExportTable, row: JsonObject) -> JsonObject:  # a stored row
    data = {
        key: codec.encode(value, vector=key in table.vectors)
        for key, value in sorted(row.items())
        if value is not None
    }
    return {"kind": "record", "table": table.name, "data": data}
