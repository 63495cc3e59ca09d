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

# Free-form JSON: an object whose keys the code does not know in advance (an upload's
# JSON, a JSON Schema, a model's answer, a job kind's own result, a row of any table
# where a function serves every table). Every record of a known shape has its own type
# below; this one marks the boundaries where JSON stays JSON.
JsonObject = dict[str, Any]

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
    match_key: str | None
    name_embedding: list[float] | None
    labels: list[str]
    attributes: JsonObject  # free-form, as extraction or a curator gave them
    aliases: list[str]
    first_seen_at: datetime
    last_seen_at: datetime
    created_at: datetime
    pinned: bool
    mentions: int
    score: float


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
    score: float


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
    members: list[CommunityMember]
    score: float


class CommunityMember(TypedDict):
    """An entity of a community, as community_get reads it (queries.COMMUNITY_GET)."""

    id: RecordID
    name: str
    entity_type: str
    degree: int


class JobFailure(TypedDict):
    """One part of a job that failed (an episode of an ingest job): which, and why."""

    index: int
    reason: str


class _JobFields(TypedDict):
    id: RecordID
    kind: str
    status: str


class Job(_JobFields, total=False):
    progress: int
    total: int
    phase: str | None
    params: JsonObject  # each kind of job has its own (jobs.job_create)
    counts: dict[str, int]
    timings: dict[str, float]
    failures: list[JobFailure]
    notes: list[str]
    result: JsonObject  # each kind of job has its own (jobs.JobReport.result)
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


# --- rows of ingestion -----------------------------------------------------------------
# A fact as stored (relates_to), a document, and the parts of them that ingestion reads
# and writes.


class Statement(TypedDict):
    """What one episode said of a fact (relates_to.statements)."""

    episode: RecordID
    fact: str
    valid_at: datetime
    confidence: float


# `in` is a Python keyword: a stored fact's own fields are named in the functional form.
_StoredFactFields = TypedDict(
    "_StoredFactFields",
    {
        "id": RecordID,
        "in": RecordID,
        "out": RecordID,
        "relation": str,
        "fact": str,
        "valid_at": datetime,
    },
)


class StoredFact(_StoredFactFields, total=False):
    """A fact as stored, `in` -relation-> `out` (`SELECT *`, its vector often left out):
    what resolution compares a new fact with, and what a revision copies."""

    edge_type: str
    fact_embedding: list[float] | None
    episodes: list[RecordID]
    statements: list[Statement] | None
    confidence: float
    invalid_at: datetime | None
    created_at: datetime
    expired_at: datetime | None
    supersedes: RecordID | None
    superseded_by: RecordID | None
    revision_of: RecordID | None
    retrieval_count: float
    updated_at: datetime
    attributes: JsonObject  # free-form, as the fact's source gave them


class _MessageFields(TypedDict):
    speaker: str
    text: str


class DocumentMessage(_MessageFields, total=False):
    """One message of a conversation document, its time as the upload gave it."""

    timestamp: str | None


class _DocumentFields(TypedDict):
    id: RecordID
    file_name: str
    kind: str
    status: str


class Document(_DocumentFields, total=False):
    """A document as read and listed (queries.DOCUMENT_GET, DOCUMENT_LIST: without its
    text, messages and file; with its versions and its job's model usage, and in a list
    its counts)."""

    mime: str
    size: int
    content_hash: str
    title: str | None
    error: str | None
    chunk_count: int
    uploaded_by: str | None
    saga: RecordID | None
    job: RecordID | None
    reference_time: datetime | None
    version: int
    created_at: datetime
    updated_at: datetime
    episode_count: int
    fact_count: int


def as_document(row: Any) -> Document:
    return cast(Document, _built(row, Document, "document"))


# --- search's rows ----------------------------------------------------------------------


class DocumentName(TypedDict):
    """What a document is called (queries.SOURCE_NAMES): its title, if any, and file name."""

    id: RecordID
    title: str | None
    file_name: str


# --- rows that curation and ingestion write -------------------------------------------


def as_stored_fact(row: Any) -> StoredFact:
    return cast(StoredFact, _built(row, StoredFact, "fact"))


class EpisodeRow(TypedDict):
    """An episode as ingestion writes it (queries.EPISODE_CREATE; the id is the statement's)."""

    name: str
    content: str
    source: str
    source_description: str
    valid_at: datetime
    content_hash: str
    saga: RecordID | None
    document: RecordID | None
    documents: list[RecordID]
    message_keys: list[str] | None
    chunk_index: int | None
    screened_out: list[str] | None


class EntityRow(TypedDict):
    """An entity as ingestion writes it when first seen (queries.ENTITY_CREATE)."""

    name: str
    canonical_name: str
    entity_type: str
    summary: str
    match_key: str | None
    name_embedding: list[float] | None
    first_seen_at: datetime
    last_seen_at: datetime
