"""Correcting facts by hand: one that stopped holding is invalidated, one that was wrong
is superseded by its corrected version. Nothing is deleted: the old row is retired (as
known from now on) and the change is audited, in one transaction."""

from __future__ import annotations

import secrets
from datetime import UTC, datetime
from typing import Any

from surrealdb.data.types.record_id import RecordID

from kgapp.graph import queries
from kgapp.graph.curation.common import CurationRefused, audit_of, record_of
from kgapp.graph.store import TenantStore


async def invalidate_fact(
    store: TenantStore,
    fact: RecordID,
    *,
    ended_at: datetime,
    actor: str,
    reason: str | None = None,
) -> dict[str, Any]:
    """The fact stopped holding at `ended_at`: its row is retired and a revision that
    ends then takes its place (as known from now on); nothing is deleted."""
    old = await _current_fact(store, fact)
    if ended_at < old["valid_at"]:
        raise CurationRefused("a fact cannot end before it began: pick a later end")
    revision = {
        **old,
        "id": RecordID("relates_to", f"{old['id'].id}_r{secrets.token_hex(3)}"),
        "invalid_at": ended_at,
        "created_at": datetime.now(UTC),
        "expired_at": None,
        "revision_of": old["id"],
        "superseded_by": None,
    }
    return await _retire_into(
        store,
        old,
        revision,
        superseded_by=None,
        action="invalidate",
        after={"revision": revision["id"], "ended_at": ended_at},
        actor=actor,
        reason=reason,
    )


async def correct_fact(
    store: TenantStore,
    fact: RecordID,
    *,
    text: str,
    valid_at: datetime | None,
    embedding: list[float] | None,
    actor: str,
    reason: str | None = None,
) -> dict[str, Any]:
    """A corrected version of the fact supersedes it (the old one is retired, linked
    both ways); the ends and relation stay, the text and start may change."""
    old = await _current_fact(store, fact)
    text = text.strip()
    if not text:
        raise CurationRefused("the corrected fact needs a text")
    now = datetime.now(UTC)
    new = {
        **old,
        "id": RecordID("relates_to", f"{old['id'].id}_c{secrets.token_hex(3)}"),
        "fact": text,
        "fact_embedding": embedding,
        "valid_at": valid_at or old["valid_at"],
        "created_at": now,
        "expired_at": None,
        "supersedes": old["id"],
        "superseded_by": None,
        "revision_of": None,
        "confidence": 1.0,
    }
    return await _retire_into(
        store,
        old,
        new,
        superseded_by=new["id"],
        action="correct",
        after={"fact": new["id"], "text": text},
        actor=actor,
        reason=reason,
    )


async def _retire_into(
    store: TenantStore,
    old: dict[str, Any],
    new: dict[str, Any],
    *,
    superseded_by: RecordID | None,
    action: str,
    after: dict[str, Any],
    actor: str,
    reason: str | None,
) -> dict[str, Any]:
    """Retire `old` (as known from `new`'s creation) and write `new`, audited, at once."""
    batch = queries.Batch()
    batch.add(queries.FACT_RETIRE, id=old["id"], now=new["created_at"], by=superseded_by)
    batch.add(queries.FACT_CREATE, row=new)
    batch.add(
        queries.AUDIT_CREATE,
        actor=actor,
        action=action,
        target=old["id"],
        before={"facts": [old]},
        after=after,
        reason=reason,
    )
    return audit_of(await store.transaction(batch.sql, batch.params))


async def _current_fact(store: TenantStore, fact: RecordID) -> dict[str, Any]:
    row = await record_of(store, fact, "relates_to", "fact")
    if row.get("expired_at") is not None:
        raise CurationRefused("this fact was already retired; correct the version that replaced it")
    return {k: v for k, v in row.items() if k not in ("retrieval_count", "updated_at")}
