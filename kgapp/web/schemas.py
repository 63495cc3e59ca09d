"""Request and response bodies of the REST API."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from ninja import Schema
from pydantic import Field

RoleName = Literal["viewer", "editor", "curator", "owner"]


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
    counts: dict[str, Any] = {}
    timings: dict[str, Any] = {}
    error: str | None = None
    created_at: datetime | None = None
    started_at: datetime | None = None
    finished_at: datetime | None = None


class JobQueuedOut(Schema):
    job_id: str
    status: str
