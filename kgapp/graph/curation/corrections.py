"""Correcting facts by hand: one that stopped holding is invalidated, one that was wrong
is superseded by its corrected version. Nothing is deleted: the old row is retired (as
known from now on) and the change is audited, in one transaction."""

from __future__ import annotations

import asyncio
import secrets
from datetime import UTC, datetime

from surrealdb.data.types.record_id import RecordID

from kgapp.graph import queries
from kgapp.graph.audit import (
    AuditEntry,
    CorrectAfter,
    FactsBefore,
    InvalidateAfter,
    audit_written,
)
from kgapp.graph.curation.common import CurationRefused, new_id, record_of
from kgapp.graph.embeddings import Embedder
from kgapp.graph.records import StoredFact, as_stored_fact
from kgapp.graph.store import TenantStore


async def invalidate_fact(
    store: TenantStore,
    fact: RecordID,
    *,
    ended_at: datetime,
    actor: str,
    reason: str | None = None,
) -> AuditEntry:
    """The fact stopped holding at `ended_at`: its row is retired and a revision that
    ends then takes its place (as known from now on); nothing is deleted."""
    old = await _current_fact(store, fact)
    if ended_at < old["valid_at"]:
        raise CurationRefused("a fact cannot end before it began: pick a later end")
    revision: StoredFact = {
        **old,
        "id": new_id(old["id"], f"r{secrets.token_hex(3)}"),
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
        after=InvalidateAfter(revision=revision["id"], ended_at=ended_at),
        actor=actor,
        reason=reason,
    )


async def correct_fact(
    store: TenantStore,
    fact: RecordID,
    *,
    text: str,
    valid_at: datetime | None,
    embedder: Embedder | None,
    actor: str,
    reason: str | None = None,
) -> AuditEntry:
    """A corrected version of the fact supersedes it (the old one is retired, linked
    both ways); the ends and relation stay, the text and start may change. The new text
    is embedded with `embedder` (none: the fact has no vector until the indexer's)."""
    old = await _current_fact(store, fact)
    text = text.strip()
    if not text:
        raise CurationRefused("the corrected fact needs a text")
    embedding = (await asyncio.to_thread(embedder.embed, [text]))[0] if embedder else None
    now = datetime.now(UTC)
    new: StoredFact = {
        **old,
        "id": new_id(old["id"], f"c{secrets.token_hex(3)}"),
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
        after=CorrectAfter(fact=new["id"], text=text),
        actor=actor,
        reason=reason,
    )


async def _retire_into(
    store: TenantStore,
    old: StoredFact,
    new: StoredFact,
    *,
    superseded_by: RecordID | None,
    action: str,
    after: InvalidateAfter | CorrectAfter,
    actor: str,
    reason: str | None,
) -> AuditEntry:
    """Retire `old` (as known from `new`'s creation) and write `new`, audited, at once."""
    batch = queries.Batch()
    batch.add(queries.FACT_RETIRE, id=old["id"], now=new["created_at"], by=superseded_by)
    batch.add(queries.FACT_CREATE, row=new)
    batch.add(
        queries.AUDIT_CREATE,
        actor=actor,
        action=action,
        target=old["id"],
        before=FactsBefore(facts=[old]),
        after=after,
        reason=reason,
    )
    return audit_written(await store.transaction(batch.sql, batch.params))


async def _current_fact(store: TenantStore, fact: RecordID) -> StoredFact:
    """The fact as stored, less what is counted of it (its retrievals, its update)."""
    row = await record_of(store, fact, "relates_to", "fact", as_stored_fact)
    if row.get("expired_at") is not None:
        raise CurationRefused("this fact was already retired; correct the version that replaced it")
    row.pop("retrieval_count", None)
    row.pop("updated_at", None)
    return row
