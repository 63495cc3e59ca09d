"""Loading an export into an empty tenant: check the whole file first, then write it.

`check_export` reads every line before anything is written: the header, each record
(its table in order, its id of that table, its values decodable), the trailer's counts
and the SHA-256 over everything before it. A file cut short, changed by hand or made by
a newer deployment is refused there, and the tenant is untouched.

`load_export` then writes the records in batches, table by table. Should a write still
fail (the graph went away, a record the engine refuses), every table the import writes
is cleared again: a failed import leaves the tenant empty, as it found it.
"""

from __future__ import annotations

import asyncio
import gzip
import hashlib
import json
import zlib
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TypedDict

from surrealdb.data.types.record_id import RecordID

from kgapp.graph import queries
from kgapp.graph.errors import GraphError
from kgapp.graph.export import codec
from kgapp.graph.export.jsonl import FORMAT, VERSION
from kgapp.graph.export.tables import BY_NAME, IMPORT_JOB_KIND, ORDER, TABLES
from kgapp.graph.records import JsonObject
from kgapp.graph.retention.policy import PolicyInvalid, RetentionPolicy
from kgapp.graph.schema import schema_version
from kgapp.graph.store import TenantStore

BATCH = 250  # records per INSERT
WRITERS = 2  # INSERTs in flight at once (bench/export.py: one more keeps the server busy)
TABLE_NAMES = frozenset(BY_NAME)
Progress = Callable[[int], Awaitable[None]]  # records written so far


class ImportRefused(GraphError):
    """The file cannot be imported as it is; nothing was written. The message says why."""


class TenantNotEmpty(ImportRefused):
    """The tenant already holds a graph; an import never mixes two."""


class ImportFailed(GraphError):
    """Writing failed part way; what was written has been cleared."""


@dataclass(frozen=True)
class ExportSummary:
    slug: str
    name: str
    exported_at: datetime
    schema_version: int
    embedding_dim: int
    retention: RetentionPolicy
    counts: dict[str, int]

    @property
    def records(self) -> int:
        return sum(self.counts.values())


def export_lines_of(path: Path) -> Iterator[bytes]:
    """The lines of an export file, gzip-compressed or not (by its first bytes)."""
    with path.open("rb") as probe:
        compressed = probe.read(2) == b"\x1f\x8b"
    opener = gzip.open if compressed else open
    try:
        with opener(path, "rb") as lines:
            yield from lines
    except (OSError, EOFError, zlib.error) as error:
        raise ImportRefused(f"the file could not be read as an export: {error}") from None


def check_export(lines: Iterator[bytes]) -> ExportSummary:
    """Read the whole file and say what it holds, or ImportRefused naming the line."""
    digest = hashlib.sha256()
    reader = _Reader()
    number = 0
    for number, raw in enumerate(lines, start=1):
        if reader.ended:
            raise ImportRefused(f"line {number}: the file goes on after its trailer")
        value = _parse(raw, number)
        if value.get("kind") == "trailer":
            reader.finish(value, digest.hexdigest(), number)
        else:
            digest.update(raw)
            reader.take(value, number)
    if number == 0:
        raise ImportRefused("the file is empty")
    if not reader.ended:
        raise ImportRefused(
            f"the file ends at line {number} without its trailer: it was cut short"
            " (download or copy it again)"
        )
    return reader.summary()


class _Line(TypedDict, total=False):
    """A line of the file as parsed (jsonl.py's docstring lists them): a JSON object
    whose fields are unchecked until `_Reader` has checked each one it reads."""

    kind: object
    format: object
    version: object
    schema_version: object
    embedding_dim: object
    tenant: object
    exported_at: object
    retention: object
    table: object
    data: object
    counts: object
    records: object
    sha256: object


def _parse(raw: bytes, number: int) -> _Line:
    try:
        value: _Line = json.loads(raw)
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise ImportRefused(f"line {number} is not JSON ({error.__class__.__name__})") from None
    if not isinstance(value, dict):  # JSON, but not an object
        raise ImportRefused(f"line {number} is not a JSON object")
    return value


@dataclass(frozen=True, slots=True)
class _Header:
    """What the header line says of the export, checked."""

    slug: str
    name: str
    exported_at: datetime
    schema_version: int
    embedding_dim: int


class _Reader:
    """The structure of the lines seen so far."""

    def __init__(self) -> None:
        self.header: _Header | None = None
        self.retention: RetentionPolicy | None = None
        self.counts: dict[str, int] = {table.name: 0 for table in TABLES}
        self.table = -1
        self.ended = False  # the trailer was read, and matched

    def take(self, value: _Line, number: int) -> None:
        kind = value.get("kind")
        if number == 1:
            self.header = _header(value)
        elif kind == "settings" and self.retention is None and self.table < 0:
            self.retention = _retention(value, number)
        elif kind == "record" and self.retention is not None:
            self._record(value, number)
        else:
            raise ImportRefused(f"line {number}: a {kind!r} line is not expected here")

    def _record(self, value: _Line, number: int) -> None:
        name, data = value.get("table"), value.get("data")
        if not isinstance(name, str) or name not in ORDER or not isinstance(data, dict):
            raise ImportRefused(f"line {number}: a record of an unknown table {name!r}")
        if ORDER[name] < self.table:
            raise ImportRefused(f"line {number}: a {name} record after later tables")
        self.table = ORDER[name]
        try:
            record = codec.decode(data)
        except codec.CodecError as error:
            raise ImportRefused(f"line {number}: {error}") from None
        record_id = record.get("id")
        if not isinstance(record_id, RecordID) or record_id.table_name != name:
            raise ImportRefused(f"line {number}: a {name} record needs an id of that table")
        if name == "job" and record.get("kind") == IMPORT_JOB_KIND:
            raise ImportRefused(f"line {number}: an import job is not part of an export")
        if BY_NAME[name].relation and not (
            isinstance(record.get("in"), RecordID) and isinstance(record.get("out"), RecordID)
        ):
            raise ImportRefused(f"line {number}: a {name} relation needs `in` and `out`")
        self.counts[name] += 1

    def finish(self, value: _Line, sha256: str, number: int) -> None:
        if self.retention is None:
            raise ImportRefused(f"line {number}: the trailer comes before the settings")
        if value.get("sha256") != sha256:
            raise ImportRefused(
                "the file's checksum does not match its content: it was changed after it"
                " was exported, or damaged in transit"
            )
        if value.get("counts") != self.counts:
            raise ImportRefused("the trailer's record counts do not match the records")
        self.ended = True

    def summary(self) -> ExportSummary:
        assert self.header is not None and self.retention is not None
        return ExportSummary(
            slug=self.header.slug,
            name=self.header.name,
            exported_at=self.header.exported_at,
            schema_version=self.header.schema_version,
            embedding_dim=self.header.embedding_dim,
            retention=self.retention,
            counts=dict(self.counts),
        )


def _header(value: _Line) -> _Header:
    if value.get("kind") != "header" or value.get("format") != FORMAT:
        raise ImportRefused("line 1 is not the header of a tenant export (kind 'header')")
    if value.get("version") != VERSION:
        raise ImportRefused(
            f"the export is format version {value.get('version')!r}; this deployment reads"
            f" version {VERSION}"
        )
    tenant, exported = value.get("tenant"), value.get("exported_at")
    schema, dimension = value.get("schema_version"), value.get("embedding_dim")
    try:
        assert isinstance(tenant, dict)
        assert isinstance(tenant.get("slug"), str) and isinstance(tenant.get("name"), str)
        assert isinstance(schema, int) and isinstance(dimension, int)
        assert isinstance(exported, str)
        moment = datetime.fromisoformat(exported)
    except (AssertionError, ValueError):
        raise ImportRefused("line 1: the header lacks its tenant, versions or date") from None
    return _Header(
        slug=tenant["slug"],
        name=tenant["name"],
        exported_at=moment,
        schema_version=schema,
        embedding_dim=dimension,
    )


def _retention(value: _Line, number: int) -> RetentionPolicy:
    try:
        fields = value["retention"]
        if not isinstance(fields, dict):
            raise TypeError("they are not a JSON object")
        return RetentionPolicy.from_dict(fields)
    except (KeyError, TypeError, PolicyInvalid) as error:
        raise ImportRefused(f"line {number}: the retention settings are invalid: {error}") from None


async def check_target(store: TenantStore, summary: ExportSummary, embedding_dim: int) -> None:
    """ImportRefused unless the tenant is empty and can hold what the export holds."""
    if summary.embedding_dim != embedding_dim:
        raise ImportRefused(
            f"the export's embeddings have {summary.embedding_dim} dimensions and this"
            f" tenant's have {embedding_dim}: import into a tenant made with"
            f" {summary.embedding_dim}"
        )
    here = await schema_version(store)
    if summary.schema_version > here:
        raise ImportRefused(
            f"the export was made at schema version {summary.schema_version}, newer than"
            f" this deployment's {here}: upgrade this deployment first"
        )
    await check_empty(store)


async def check_empty(store: TenantStore) -> None:
    """TenantNotEmpty when the tenant holds any record an import would write."""
    for table in TABLES:
        if await _holds_any(store, table.name):
            raise TenantNotEmpty(
                f"the tenant is not empty (it has {table.name} records): an export is"
                " imported into a new, empty tenant"
            )


async def _holds_any(store: TenantStore, table: str) -> bool:
    if table == "job":
        return bool(await store.query_one(queries.IMPORT_ANY_JOB, {"import_kind": IMPORT_JOB_KIND}))
    return bool(await store.query_one(queries.IMPORT_ANY, {"table": table}))


async def load_export(store: TenantStore, lines: Iterator[bytes], progress: Progress) -> int:
    """Write a checked export's records; returns how many. On failure: ImportFailed,
    with everything written cleared."""
    writes = _Writes(store, progress)
    batch: list[JsonObject] = []  # decoded records of one table, written as they are
    table = ""
    try:
        for raw in lines:
            value = json.loads(raw)
            if value.get("kind") != "record":
                continue
            if value["table"] != table or len(batch) >= BATCH:
                await writes.add(table, batch)
                batch, table = [], value["table"]
            batch.append(codec.decode(value["data"]))
        await writes.add(table, batch)
        await writes.drain()
    except Exception as error:
        await writes.cancel()
        reason = f"the import stopped after {writes.written} records: {error}"
        try:
            await clear_import(store)
        except GraphError as clearing:
            reason += (
                f"; clearing what it wrote failed too ({clearing}): delete the tenant and"
                " import into a new one"
            )
        raise ImportFailed(reason) from error
    return writes.written


class _Writes:
    """Batches in flight, WRITERS at most (one for a `serial` table), all of one table:
    a table's batches go out together, and every one is written before the next table's
    (a relation after both of its ends)."""

    def __init__(self, store: TenantStore, progress: Progress) -> None:
        self.store, self.progress = store, progress
        self.table = ""
        self.flying: set[asyncio.Task[int]] = set()
        self.written = 0

    async def add(self, table: str, rows: list[JsonObject]) -> None:  # decoded records
        if not rows:
            return
        if table != self.table:
            await self.drain()
            self.table = table
        while len(self.flying) >= (1 if BY_NAME[table].serial else WRITERS):
            await self._landed(asyncio.FIRST_COMPLETED)
        self.flying.add(asyncio.ensure_future(_write(self.store, table, rows)))

    async def drain(self) -> None:
        if self.flying:
            await self._landed(asyncio.ALL_COMPLETED)
            await self.progress(self.written)

    async def _landed(self, when: str) -> None:
        done, self.flying = await asyncio.wait(self.flying, return_when=when)
        for task in done:
            self.written += task.result()  # a failed write raises here

    async def cancel(self) -> None:
        for task in self.flying:
            task.cancel()
        await asyncio.gather(*self.flying, return_exceptions=True)
        self.flying = set()


# `rows`: decoded records of `table`, each field as the export held it (INSERT's input).
async def _write(store: TenantStore, table: str, rows: list[JsonObject]) -> int:
    if not rows:
        return 0
    sql = queries.import_rows(table, relation=BY_NAME[table].relation, allowed=TABLE_NAMES)
    await store.query(sql, {"rows": rows})
    return len(rows)


async def clear_import(store: TenantStore) -> None:
    """Remove every record an import writes (not the import's own job)."""
    for table in reversed(TABLES):
        if table.name == "job":
            await store.query(queries.IMPORT_CLEAR_JOBS, {"import_kind": IMPORT_JOB_KIND})
        else:
            await store.query(queries.IMPORT_CLEAR, {"table": table.name})
