"""Stage: map each extracted entity onto an existing entity or a new record.

In order: exact canonical name (types compatible), alias table, then embedding
similarity of the name: >= MERGE_AT merges, [ASK_FROM, MERGE_AT) is ambiguous and is
decided by the batched LLM call (or queued for review without a model), below is new.
A new entity's record key derives from (type, canonical name), so two workers that
create the same entity at once write the same record and the loser retries.
"""

from __future__ import annotations

import asyncio
from typing import Any

from surrealdb.data.types.record_id import RecordID

from kgapp.graph import queries
from kgapp.graph.ingest.model import EntityDraft, EpisodeWork, IngestContext
from kgapp.graph.ingest.normalize import entity_key
from kgapp.graph.ingest.ontology import GENERIC_ENTITY_TYPE

MERGE_AT = 0.85
ASK_FROM = 0.70
NEIGHBOURS = 3


def types_compatible(a: str, b: str) -> bool:
    return a == b or GENERIC_ENTITY_TYPE in (a, b)


def new_record(draft: EntityDraft) -> RecordID:
    return RecordID("entity", entity_key(draft.entity_type, draft.canonical))


async def resolve_entities(ctx: IngestContext, work: EpisodeWork) -> None:
    if not work.entities:
        return
    with ctx.timings.measure("resolve_entities"):
        names = [d.canonical for d in work.entities]
        by_name = await _existing_by_name(ctx, names)
        aliases = await _aliases(ctx, names)
        unresolved = []
        for draft in work.entities:
            match = _exact(draft, by_name.get(draft.canonical, [])) or _alias(draft, aliases)
            if match is not None:
                draft.record, draft.is_new = match, False
                ctx.counts["entities_matched"] += 1
            else:
                unresolved.append(draft)
        if unresolved:
            # Only names not matched exactly need a vector: known entities have theirs.
            with ctx.timings.measure("embed"):
                vectors = await asyncio.to_thread(ctx.embedder.embed, [d.name for d in unresolved])
            for draft, vector in zip(unresolved, vectors, strict=True):
                draft.embedding = vector
        await _by_embedding(ctx, unresolved)


async def _existing_by_name(
    ctx: IngestContext, names: list[str]
) -> dict[str, list[dict[str, Any]]]:
    rows = await ctx.store.query_one(queries.ENTITIES_BY_CANONICAL, {"names": names}) or []
    grouped: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        grouped.setdefault(row["canonical_name"], []).append(row)
    return grouped


async def _aliases(ctx: IngestContext, names: list[str]) -> dict[str, list[dict[str, Any]]]:
    rows = await ctx.store.query_one(queries.ALIASES_BY_NAME, {"names": names}) or []
    grouped: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        grouped.setdefault(row["name"], []).append(row)
    return grouped


def _exact(draft: EntityDraft, rows: list[dict[str, Any]]) -> RecordID | None:
    # Prefer the same type, then a generic one on either side.
    for wanted in (
        lambda r: r["entity_type"] == draft.entity_type,
        lambda r: types_compatible(r["entity_type"], draft.entity_type),
    ):
        for row in rows:
            if wanted(row):
                return row.get("merged_into") or row["id"]
    return None


def _alias(draft: EntityDraft, aliases: dict[str, list[dict[str, Any]]]) -> RecordID | None:
    for row in aliases.get(draft.canonical, []):
        if types_compatible(row["entity_type"], draft.entity_type):
            return row.get("merged_into") or row["entity"]
    return None


async def _by_embedding(ctx: IngestContext, drafts: list[EntityDraft]) -> None:
    if not drafts:
        return
    batch = queries.Batch()
    for draft in drafts:
        batch.add(queries.ENTITY_NEAREST, vector=draft.embedding, limit=NEIGHBOURS)
    with ctx.timings.measure("entity_knn"):
        results = await ctx.store.query(batch.sql, batch.params)
    for draft, rows in zip(drafts, results, strict=True):
        draft.record = new_record(draft)
        candidates = [
            r
            for r in rows or []
            if r["score"] is not None
            and r["score"] >= ASK_FROM
            and types_compatible(r["entity_type"], draft.entity_type)
            and r["id"] != draft.record
        ]
        best = candidates[0] if candidates else None
        if best is not None and best["score"] >= MERGE_AT:
            draft.record, draft.is_new, draft.alias = best["id"], False, draft.canonical
            ctx.counts["entities_merged"] += 1
        elif candidates:
            draft.candidates = candidates
            ctx.counts["entities_ambiguous"] += 1
        else:
            ctx.counts["entities_new"] += 1


def apply_entity_decision(
    ctx: IngestContext, draft: EntityDraft, chosen: dict[str, Any] | None
) -> None:
    """The batched LLM call's answer for an ambiguous draft."""
    if chosen is None:
        ctx.counts["entities_new"] += 1
        return
    draft.record, draft.is_new, draft.alias = chosen["id"], False, draft.canonical
    draft.candidates = []
    ctx.counts["entities_merged"] += 1
