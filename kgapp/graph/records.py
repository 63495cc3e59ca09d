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
from typing_extensions import ReadOnly

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
# such record has (its `_...Fields`); what a query adds beyond those travels along. Their
# fields are ReadOnly (PEP 705): mypy refuses code that changes a record in place; a
# changed record is a new one (`{**fact, "source_name": ...}`).


class _FactFields(TypedDict):
    id: ReadOnly[RecordID]
    source: ReadOnly[RecordID]
    target: ReadOnly[RecordID]
    relation: ReadOnly[str]
    edge_type: ReadOnly[str]
    fact: ReadOnly[str]
    confidence: ReadOnly[float]
    valid_at: ReadOnly[datetime]
    created_at: ReadOnly[datetime]


class FactBase(_FactFields, total=False):
    """A fact: `source` -relation-> `target`, valid over [valid_at, invalid_at) and known
    over [created_at, expired_at); without the names of its ends."""

    episodes: ReadOnly[list[RecordID]]
    invalid_at: ReadOnly[datetime | None]
    expired_at: ReadOnly[datetime | None]
    supersedes: ReadOnly[RecordID | None]
    superseded_by: ReadOnly[RecordID | None]
    revision_of: ReadOnly[RecordID | None]
    retrieval_count: ReadOnly[float]


class Fact(FactBase, total=False):
    """A fact as retrieval reads it (queries._FACT_FIELDS), with the names of its ends."""

    source_name: ReadOnly[str]
    target_name: ReadOnly[str]


class _EntityFields(TypedDict):
    id: ReadOnly[RecordID]
    name: ReadOnly[str]
    entity_type: ReadOnly[str]


class Entity(_EntityFields, total=False):
    summary: ReadOnly[str]
    degree: ReadOnly[int]
    merged_into: ReadOnly[RecordID | None]
    canonical_name: ReadOnly[str]
    match_key: ReadOnly[str | None]
    name_embedding: ReadOnly[list[float] | None]
    labels: ReadOnly[list[str]]
    attributes: ReadOnly[JsonObject]  # free-form, as extraction or a curator gave them
    aliases: ReadOnly[list[str]]
    first_seen_at: ReadOnly[datetime]
    last_seen_at: ReadOnly[datetime]
    created_at: ReadOnly[datetime]
    pinned: ReadOnly[bool]
    mentions: ReadOnly[int]
    score: ReadOnly[float]


class _EpisodeFields(TypedDict):
    id: ReadOnly[RecordID]
    content: ReadOnly[str]
    source: ReadOnly[str]
    valid_at: ReadOnly[datetime]


class Episode(_EpisodeFields, total=False):
    name: ReadOnly[str]
    source_description: ReadOnly[str]
    created_at: ReadOnly[datetime]
    content_hash: ReadOnly[str]
    document: ReadOnly[RecordID | None]
    saga: ReadOnly[RecordID | None]
    score: ReadOnly[float]


class _CommunityFields(TypedDict):
    id: ReadOnly[RecordID]
    name: ReadOnly[str]
    level: ReadOnly[int]
    member_count: ReadOnly[int]


class Community(_CommunityFields, total=False):
    summary: ReadOnly[str]
    fact_count: ReadOnly[int]
    resolution: ReadOnly[float]
    as_of: ReadOnly[datetime | None]
    fingerprint: ReadOnly[str]
    created_at: ReadOnly[datetime]
    updated_at: ReadOnly[datetime]
    members: ReadOnly[list[CommunityMember]]
    score: ReadOnly[float]


class CommunityMember(TypedDict):
    """An entity of a community, as community_get reads it (queries.COMMUNITY_GET)."""

    id: ReadOnly[RecordID]
    name: ReadOnly[str]
    entity_type: ReadOnly[str]
    degree: ReadOnly[int]


class JobFailure(TypedDict):
    """One part of a job that failed (an episode of an ingest job): which, and why."""

    index: ReadOnly[int]
    reason: ReadOnly[str]


class _JobFields(TypedDict):
    id: ReadOnly[RecordID]
    kind: ReadOnly[str]
    status: ReadOnly[str]


class Job(_JobFields, total=False):
    progress: ReadOnly[int]
    total: ReadOnly[int]
    phase: ReadOnly[str | None]
    params: ReadOnly[JsonObject]  # each kind of job has its own (jobs.job_create)
    counts: ReadOnly[dict[str, int]]
    timings: ReadOnly[dict[str, float]]
    failures: ReadOnly[list[JobFailure]]
    notes: ReadOnly[list[str]]
    result: ReadOnly[JsonObject]  # each kind of job has its own (jobs.JobReport.result)
    error: ReadOnly[str | None]
    document: ReadOnly[RecordID | None]
    attempts: ReadOnly[int]
    created_by: ReadOnly[str | None]
    created_at: ReadOnly[datetime]
    started_at: ReadOnly[datetime | None]
    finished_at: ReadOnly[datetime | None]
    heartbeat_at: ReadOnly[datetime | None]
    updated_at: ReadOnly[datetime]


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
    what resolution compares a new fact with, and what a revision copies. Unlike the
    records above, not read-only: a merge, its undo and a correction rewrite copies of
    these rows whole (curation/merge.py)."""

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

    timestamp: ReadOnly[str | None]


class _DocumentFields(TypedDict):
    id: ReadOnly[RecordID]
    file_name: ReadOnly[str]
    kind: ReadOnly[str]
    status: ReadOnly[str]


class Document(_DocumentFields, total=False):
    """A document as read and listed (queries.DOCUMENT_GET, DOCUMENT_LIST: without its
    text, messages and file; with its versions and its job's model usage, and in a list
    its counts)."""

    mime: ReadOnly[str]
    size: ReadOnly[int]
    content_hash: ReadOnly[str]
    title: ReadOnly[str | None]
    error: ReadOnly[str | None]
    chunk_count: ReadOnly[int]
    uploaded_by: ReadOnly[str | None]
    saga: ReadOnly[RecordID | None]
    job: ReadOnly[RecordID | None]
    reference_time: ReadOnly[datetime | None]
    version: ReadOnly[int]
    created_at: ReadOnly[datetime]
    updated_at: ReadOnly[datetime]
    episode_count: ReadOnly[int]
    fact_count: ReadOnly[int]


def as_document(row: Any) -> Document:
    return cast(Document, _built(row, Document, "document"))


# --- search's rows ----------------------------------------------------------------------


# --- rows that curation and ingestion write -------------------------------------------


def as_stored_fact(row: Any) -> StoredFact:
    return cast(StoredFact, _built(row, StoredFact, "fact"))


class EpisodeRow(TypedDict):
    """An episode as ingestion writes it (queries.EPISODE_CREATE; the id is the statement's)."""

    name: ReadOnly[str]
    content: ReadOnly[str]
    source: ReadOnly[str]
    source_description: ReadOnly[str]
    valid_at: ReadOnly[datetime]
    content_hash: ReadOnly[str]
    saga: ReadOnly[RecordID | None]
    document: ReadOnly[RecordID | None]
    documents: ReadOnly[list[RecordID]]
    message_keys: ReadOnly[list[str] | None]
    chunk_index: ReadOnly[int | None]
    screened_out: ReadOnly[list[str] | None]


class EntityRow(TypedDict):
    """An entity as ingestion writes it when first seen (queries.ENTITY_CREATE)."""

    name: ReadOnly[str]
    canonical_name: ReadOnly[str]
    entity_type: ReadOnly[str]
    summary: ReadOnly[str]
    match_key: ReadOnly[str | None]
    name_embedding: ReadOnly[list[float] | None]
    first_seen_at: ReadOnly[datetime]
    last_seen_at: ReadOnly[datetime]
