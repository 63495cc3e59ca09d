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
from kgapp.graph.ingest.vectors import entity_vectors

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
        by_name, aliases = await _known_names(ctx, [d.canonical for d in work.entities])
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


async def _known_names(
    ctx: IngestContext, names: list[str]
) -> tuple[dict[str, list[dict[str, Any]]], dict[str, list[dict[str, Any]]]]:
    """Entities and aliases with these canonical names, in one round trip."""
    batch = queries.Batch()
    batch.add(queries.ENTITIES_BY_CANONICAL, names=names)
    batch.add(queries.ALIASES_BY_NAME, names=names)
    entities, aliases = await ctx.store.query(batch.sql, batch.params)
    return _group(entities or [], "canonical_name"), _group(aliases or [], "name")


def _group(rows: list[dict[str, Any]], key: str) -> dict[str, list[dict[str, Any]]]:
    grouped: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        grouped.setdefault(row[key], []).append(row)
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
    with ctx.timings.measure("entity_knn"):
        vectors = entity_vectors(ctx.store.namespace)
        await vectors.refresh(ctx.store)
        for draft in drafts:
            assert draft.embedding is not None
            draft.record = new_record(draft)
            candidates = [
                row
                for row in vectors.nearest(draft.embedding, NEIGHBOURS)
                if row["score"] >= ASK_FROM
                and row["id"] != draft.record
                and types_compatible(row["entity_type"], draft.entity_type)
            ]
            await _follow_merges(ctx, candidates)
            best = candidates[0] if candidates else None
            if best is not None and best["score"] >= MERGE_AT:
                draft.record, draft.is_new, draft.alias = best["id"], False, draft.canonical
                ctx.counts["entities_merged"] += 1
            elif candidates:
                draft.candidates = candidates
                ctx.counts["entities_ambiguous"] += 1
            else:
                ctx.counts["entities_new"] += 1


async def _follow_merges(ctx: IngestContext, candidates: list[dict[str, Any]]) -> None:
    """A cached candidate may have been merged since: point it at the survivor."""
    for candidate in candidates:
        survivor = await ctx.store.query_one(queries.ENTITY_MERGED_INTO, {"id": candidate["id"]})
        if survivor:
            candidate["id"] = survivor


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
