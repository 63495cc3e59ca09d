"""What the REST API (kgapp/web/api.py), the MCP tools (kgapp/web/mcp/calls.py) and the
browser pages (kgapp/web/middleware.py) answer for the same failure: one status and one
wording, whichever door it came through."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from django.db import OperationalError as DatabaseBusy

from kgapp.graph.errors import (
    GraphUnavailable,
    InvalidRecordId,
    NotFound,
    UniqueViolation,
    WriteConflict,
)
from kgapp.graph.export.load import ImportRefused, TenantNotEmpty
from kgapp.graph.retention import PolicyInvalid
from kgapp.graph.search.model import RerankerUnavailable
from kgapp.tasks import QueueUnavailable

GRAPH_DOWN = "The knowledge graph store is unavailable right now; retry in a moment."
DATABASE_BUSY = "The database is busy or unavailable; retry in a moment."
CONCURRENT_CHANGE = "The change conflicted with a concurrent change to the same records; retry it."


@dataclass(frozen=True, slots=True)
class Refusal:
    """How a kind of failure is answered: its HTTP status, its wording (None: the error's
    own message), after how many seconds to retry (None: no Retry-After), and whether it
    is logged (as a warning: the store or the database is down, not the caller wrong)."""

    status: int
    detail: str | None = None
    retry_after: int | None = None
    logged: bool = False

    def said(self, error: Exception) -> str:
        return self.detail or str(error)


REFUSALS: dict[type[Exception], Refusal] = {
    # The graph store or the relational database timed out or could not be reached: the
    # request changed nothing, and can be sent again.
    GraphUnavailable: Refusal(503, GRAPH_DOWN, retry_after=5, logged=True),
    DatabaseBusy: Refusal(503, DATABASE_BUSY, retry_after=2, logged=True),
    QueueUnavailable: Refusal(503, retry_after=5),
    RerankerUnavailable: Refusal(422),
    ImportRefused: Refusal(422),
    InvalidRecordId: Refusal(422),
    PolicyInvalid: Refusal(422),
    NotFound: Refusal(404),
    TenantNotEmpty: Refusal(409),
    WriteConflict: Refusal(409, retry_after=1),
    UniqueViolation: Refusal(409, CONCURRENT_CHANGE, retry_after=1),
}


def refusal_for(error: Exception) -> Refusal | None:
    """The refusal of `error`'s kind (its closest class in REFUSALS), or None."""
    for kind in type(error).__mro__:
        found = REFUSALS.get(kind)
        if found is not None:
            return found
    return None


def finding(where: Iterable[object], message: str) -> str:
    """One of pydantic's findings as a person reads it: `field.sub: what is wrong`."""
    path = ".".join(str(part) for part in where)
    said = message.removeprefix("Value error, ")
    return f"{path}: {said}" if path else said
