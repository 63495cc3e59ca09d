"""Communities follow ingestion, one detection per burst of ingest jobs.

Every ingest job that ends asks for detection (`follow_ask`) and checks its request a
short while later (`follow_check`, from a delayed task). Only the tenant's latest
request is due, and only once none of its ingest jobs is queued or running: the job
still going asks again when it ends. The latest request is a token on a board that
every worker shares. Detection itself is `communities.rebuild`, whose fingerprints keep
the communities the new facts left as they were, with no model call.
"""

from __future__ import annotations

import secrets
from typing import Any, Literal, Protocol

from surrealdb.data.types.record_id import RecordID

from kgapp.graph import jobs
from kgapp.graph.store import TenantStore


class Board(Protocol):
    """A key-value store that every worker of the deployment reads and writes (the edge
    passes Django's cache: Redis, or files on the one machine of the file broker)."""

    def get(self, key: str) -> Any: ...

    def set(self, key: str, value: Any, timeout: float | None = ...) -> None: ...


# What becomes of a request: detect now; drop it (a later request superseded it, or an
# ingest job still going asks when it ends); or check again later (a detection runs,
# which may have read the graph before this job's writes).
FollowVerdict = Literal["due", "superseded", "ingesting", "detecting"]

# A request outlives any burst; should one still expire, the next ingest job asks again.
FOLLOW_REQUEST_TTL = 7 * 86400
# Jobs read per status to tell what is going on (more than this are never active).
ACTIVE_JOBS_READ = 500


def follow_ask(board: Board, namespace: str) -> str:
    """Ask for detection in `namespace` once its ingestion has gone quiet: a new token,
    which supersedes every one asked for before in that namespace."""
    token = secrets.token_hex(8)
    board.set(_follow_key(namespace), token, FOLLOW_REQUEST_TTL)
    return token


async def follow_check(
    store: TenantStore, board: Board, job: RecordID, token: str
) -> FollowVerdict:
    """What to do with the request `token`, asked for when ingest job `job` ended: due
    when it is the tenant's latest, none of its ingest jobs is queued or running and no
    detection runs. A job of another tenant is refused (JobNotFound)."""
    await jobs.job_get(store, job)
    if board.get(_follow_key(store.namespace)) != token:
        return "superseded"
    kinds = await _active_kinds(store)
    if any(kind.startswith("ingest") for kind in kinds):
        return "ingesting"
    return "detecting" if kinds.get("communities") == "running" else "due"


async def _active_kinds(store: TenantStore) -> dict[str, str]:
    """The kinds of the queued and running jobs: kind -> "running" if one of them runs."""
    kinds: dict[str, str] = {}
    for status in ("queued", "running"):
        listed = await jobs.job_list(store, status=status, limit=ACTIVE_JOBS_READ, offset=0)
        kinds.update((row["kind"], status) for row in listed)
    return kinds


def _follow_key(namespace: str | None) -> str:
    return f"communities-follow:{namespace}"
