"""Request and response bodies of the REST API."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Annotated, Any, Literal

from ninja import Schema
from pydantic import AfterValidator, BeforeValidator, Field

RoleName = Literal["viewer", "editor", "curator", "owner"]

# Paging: an offset past every row answers an empty page; past this it is refused (the
# store's START takes a 64-bit integer, and no tenant holds this many rows).
MAX_OFFSET = 100_000_000
Offset = Annotated[int, Field(ge=0, le=MAX_OFFSET, description="rows to skip")]

# --- moments ------------------------------------------------------------------------------
# Every moment the API takes is stored as a UTC instant with microsecond precision, from
# 0001-01-01T00:00:00Z to 9999-12-31T23:59:59.999999Z. An offset that carries a moment out
# of that range, or a fraction finer than a microsecond, is refused (not clipped or rounded:
# what is stored is what was sent).
MOMENT_RANGE = "0001-01-01T00:00:00Z to 9999-12-31T23:59:59.999999Z"
_FINE_FRACTION = re.compile(r"[T ]\d{2}:\d{2}:\d{2}[.,]\d{6}(\d*)")


def _no_finer_than_microseconds(value: Any) -> Any:
    if isinstance(value, str):
        match = _FINE_FRACTION.search(value)
        if match and match.group(1).strip("0"):
            raise ValueError(
                "moments are kept to the microsecond: give at most 6 fraction digits"
            )
    return value


def _in_utc(value: datetime) -> datetime:
    if value.tzinfo is None:
        return value.replace(tzinfo=UTC)
    try:
        return value.astimezone(UTC)
    except OverflowError:
        raise ValueError(f"in UTC this moment falls outside {MOMENT_RANGE}") from None


Instant = Annotated[
    datetime, BeforeValidator(_no_finer_than_microseconds), AfterValidator(_in_utc)
]
"""A moment given to the API: an ISO 8601 date-time, in UTC once read (no offset: UTC)."""


class ErrorOut(Schema):
    detail: str


class HealthOut(Schema):
    status: Literal["ok", "degraded"]
    graph: Literal["ok", "unavailable"]
    graph_version: str | None = None


class TenantIn(Schema):
    slug: str = Field(min_length=1, max_length=40, examples=["acme"])
    name: str = Field(default="", max_length=200)
    owner: str | None = Field(default=None, description="username of the first owner")


class TenantOut(Schema):
    slug: str
    name: str
    namespace: str
    schema_version: int
    embedding_dim: int
    created_at: datetime


class TenantDetailOut(TenantOut):
    role: RoleName
    counts: dict[str, int]


class DeleteConfirmIn(Schema):
    confirm: str = Field(description="the tenant's slug, typed again")


class MemberIn(Schema):
    username: str = Field(min_length=1, max_length=150)
    role: RoleName


class MemberOut(Schema):
    username: str
    role: RoleName
    status: Literal["member", "invited"] = Field(
        description="invited: asked to join, not yet accepted (whether or not the username exists)"
    )
    created_at: datetime


class InvitationOut(Schema):
    id: int
    tenant: str = Field(description="the tenant's slug")
    tenant_name: str
    role: RoleName
    invited_by: str | None
    created_at: datetime


class TokenIn(Schema):
    name: str = Field(min_length=1, max_length=100)


class TokenOut(Schema):
    id: int
    name: str
    prefix: str
    created_at: datetime
    last_used_at: datetime | None
    revoked_at: datetime | None


class TokenCreatedOut(TokenOut):
    token: str = Field(description="the secret; shown only now")


class JobOut(Schema):
    id: str
    kind: str
    status: str
    progress: int = 0
    total: int = 0
    phase: str | None = None
    counts: dict[str, Any] = {}
    timings: dict[str, Any] = {}
    failures: list[dict[str, Any]] = []
    notes: list[str] = []
    error: str | None = None
    document: str | None = None
    created_by: str | None = None
    created_at: datetime | None = None
    started_at: datetime | None = None
    finished_at: datetime | None = None


class JobQueuedOut(Schema):
    job_id: str
    status: str


# --- ingestion ------------------------------------------------------------------------


class EpisodeIn(Schema):
    content: str = Field(min_length=1, max_length=200_000)
    source: Literal["text", "message", "json"] = "text"
    reference_time: Instant | None = Field(
        default=None, description="When the content was true or said; default: now."
    )
    name: str = Field(default="", max_length=200)
    source_description: str = Field(default="", max_length=500)
    saga: str | None = Field(
        default=None, max_length=200, description="Group episodes (a conversation)."
    )


class EpisodeQueuedOut(Schema):
    episode_id: str
    job_id: str


class DocumentQueuedOut(Schema):
    document_id: str
    job_id: str | None = Field(description="null when the same file was already uploaded")
    duplicate: bool = False


class EntityRefIn(Schema):
    name: str = Field(min_length=1, max_length=300)
    type: str | None = Field(default=None, max_length=80)


class FactIn(Schema):
    source: EntityRefIn
    relation: str = Field(min_length=1, max_length=80)
    target: EntityRefIn
    fact: str | None = Field(default=None, max_length=1000)
    valid_at: Instant | None = None
    invalid_at: Instant | None = None
    confidence: float = Field(default=1.0, ge=0, le=1)


class EntityTypeIO(Schema):
    name: str = Field(min_length=1, max_length=80, pattern=r"^[A-Za-z][A-Za-z0-9_ ]*$")
    description: str = Field(default="", max_length=500)


class RelationTypeIO(Schema):
    name: str = Field(min_length=1, max_length=80)
    description: str = Field(default="", max_length=500)
    single_valued: bool = False
    aliases: list[str] = Field(default_factory=list, max_length=50)


class OntologyIO(Schema):
    entity_types: list[EntityTypeIO] = Field(max_length=200)
    relation_types: list[RelationTypeIO] = Field(max_length=500)


class FactOut(Schema):
    id: str
    source: str
    target: str
    relation: str
    edge_type: str
    fact: str
    episodes: list[str]
    confidence: float
    valid_at: datetime
    invalid_at: datetime | None = None
    created_at: datetime
    expired_at: datetime | None = None
    supersedes: str | None = None
    superseded_by: str | None = None
    revision_of: str | None = None

    @staticmethod
    def of(row: dict[str, Any]) -> dict[str, Any]:
        """A stored fact (JSON form) with its endpoints named source and target."""
        return {**row, "source": row["in"], "target": row["out"]}
