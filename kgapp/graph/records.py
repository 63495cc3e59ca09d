"""Record ids that come from outside, and records made fit for JSON.

A record id from a URL or a request body is parsed here, checked against the table
allowlist and a plain-key pattern, and then travels as a query parameter; it is never
spliced into SurrealQL.
"""

from __future__ import annotations

import datetime as dt
import decimal
import re
import uuid
from datetime import datetime
from typing import Any, TypedDict, TypeVar, cast

from surrealdb.data.types.datetime import Datetime
from surrealdb.data.types.duration import Duration
from surrealdb.data.types.record_id import RecordID

from kgapp.graph import queries
from kgapp.graph.errors import GraphError, InvalidRecordId, NotFound

T = TypeVar("T")

_KEY = re.compile(r"^[A-Za-z0-9_]{1,64}$")


def parse_record_id(text: str, table: str | None = None) -> RecordID:
    """`"entity:abc"` (or `"abc"` when `table` is given) -> RecordID, or InvalidRecordId."""
    if not isinstance(text, str):
        raise InvalidRecordId("a record id is a string like 'entity:abc123'")
    name, sep, key = text.partition(":")
    if not sep:
        if table is None:
            raise InvalidRecordId(f"{text!r} is not a record id like 'entity:abc123'")
        name, key = table, text
    if name not in queries.GRAPH_TABLES or (table is not None and name != table):
        expected = f"a {table} id" if table else "a record id of a graph table"
        raise InvalidRecordId(f"{text!r} is not {expected}")
    if not _KEY.fullmatch(key):
        raise InvalidRecordId(f"{text!r} has a malformed key (letters, digits and _ only)")
    return RecordID(name, key)


def record_key(record: RecordID | str) -> str:
    """The plain 'table:key' text of a record id, as the API shows it."""
    if isinstance(record, RecordID):
        key = record.id.decode() if isinstance(record.id, bytes) else record.id
        return f"{record.table_name}:{key}"
    return str(record)


def to_json(value: Any) -> Any:
    """SDK values (record ids, datetimes, durations, decimals) as JSON-ready values."""
    if isinstance(value, dict):
        return {str(k): to_json(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set):
        return [to_json(v) for v in value]
    if isinstance(value, RecordID):
        return record_key(value)
    if isinstance(value, dt.datetime):
        return value.astimezone(dt.UTC).isoformat().replace("+00:00", "Z")
    if isinstance(value, Datetime):
        return to_json(value.dt)
    if isinstance(value, uuid.UUID):
        return str(value)
    if isinstance(value, decimal.Decimal):
        return float(value)
    if isinstance(value, Duration):
        return value.to_string()
    return value


def found(row: T | None, what: str, record: RecordID | str) -> T:
    """`row`, or NotFound("no {what} {record}") when the read found nothing."""
    if row is None or row == []:
        raise NotFound(f"no {what} {record_key(record)}")
    return row


# --- typed records ----------------------------------------------------------------------
# The graph's records as the core passes them around: rows as the store reads them (record
# ids as RecordID, moments as aware UTC datetimes), typed so that a misspelt field is a
# type error. Each is built from a row here, in one place, which checks the fields every
# such record has (its `_...Fields`); what a query adds beyond those travels along.


class _FactFields(TypedDict):
    id: RecordID
    source: RecordID
    target: RecordID
    relation: str
    edge_type: str
    fact: str
    confidence: float
    valid_at: datetime
    created_at: datetime


class Fact(_FactFields, total=False):
    """A fact, as retrieval reads it (queries._FACT_FIELDS): `source` -relation-> `target`,
    valid over [valid_at, invalid_at) and known over [created_at, expired_at)."""

    episodes: list[RecordID]
    invalid_at: datetime | None
    expired_at: datetime | None
    supersedes: RecordID | None
    superseded_by: RecordID | None
    revision_of: RecordID | None
    source_name: str
    target_name: str
    retrieval_count: float


class _EntityFields(TypedDict):
    id: RecordID
    name: str
    entity_type: str


class Entity(_EntityFields, total=False):
    summary: str
    degree: int
    merged_into: RecordID | None
    canonical_name: str
    labels: list[str]
    attributes: dict[str, Any]
    aliases: list[str]
    first_seen_at: datetime
    last_seen_at: datetime
    created_at: datetime
    pinned: bool


class _EpisodeFields(TypedDict):
    id: RecordID
    content: str
    source: str
    valid_at: datetime


class Episode(_EpisodeFields, total=False):
    name: str
    source_description: str
    created_at: datetime
    content_hash: str
    document: RecordID | None
    saga: RecordID | None


class _CommunityFields(TypedDict):
    id: RecordID
    name: str
    level: int
    member_count: int


class Community(_CommunityFields, total=False):
    summary: str
    fact_count: int
    resolution: float
    as_of: datetime | None
    fingerprint: str
    created_at: datetime
    updated_at: datetime
    members: list[dict[str, Any]]


class _JobFields(TypedDict):
    id: RecordID
    kind: str
    status: str


class Job(_JobFields, total=False):
    progress: int
    total: int
    phase: str | None
    params: dict[str, Any]
    counts: dict[str, Any]
    timings: dict[str, Any]
    failures: list[dict[str, Any]]
    notes: list[str]
    result: dict[str, Any]
    error: str | None
    document: RecordID | None
    attempts: int
    created_by: str | None
    created_at: datetime
    started_at: datetime | None
    finished_at: datetime | None
    heartbeat_at: datetime | None
    updated_at: datetime


def _built(row: Any, kind: type, what: str) -> Any:
    if not isinstance(row, dict):
        raise GraphError(f"a {what} read as {type(row).__name__}, not a record")
    missing = kind.__required_keys__ - row.keys()  # type: ignore[attr-defined]
    if missing:
        raise GraphError(f"a {what} read without {', '.join(sorted(missing))}")
    return row


def as_fact(row: Any) -> Fact:
    return cast(Fact, _built(row, Fact, "fact"))


def as_entity(row: Any) -> Entity:
    return cast(Entity, _built(row, Entity, "entity"))


def as_episode(row: Any) -> Episode:
    return cast(Episode, _built(row, Episode, "episode"))


def as_community(row: Any) -> Community:
    return cast(Community, _built(row, Community, "community"))


def as_job(row: Any) -> Job:
    return cast(Job, _built(row, Job, "job"))
