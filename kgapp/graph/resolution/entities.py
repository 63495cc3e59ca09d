"""Stage: map each extracted entity onto an existing entity or a new record.

Embeddings propose, names decide (kgapp/graph/resolution/names.py):
1. the same canonical name, or a name in the alias table, whatever type extraction gave
   it: the same entity, as decided before (a name has one type per tenant, the one most
   of its mentions give: kgapp/graph/ontology.py). Different things of one name and
   different types are rare in one tenant; a person can split them;
2. the same match key (legal form, honorific, punctuation, diacritics aside) as exactly
   one entity: merged automatically, rule `same_name`;
3. the nearest names by embedding and the names spelled most alike, each judged by its
   name: one edit in one long word is merged, rule `typo`; a pair whose
   names differ in a distinguishing token (a number, a qualifier...) is never proposed;
   a pair in the embedding band [ASK_FROM, 1) or with similar names goes to the batched
   LLM call, or without a model to the review queue. Nothing else merges.
Every automatic merge is recorded as an `auto_merge` audit entry and can be undone.
A new entity's record key derives from its canonical name, so two workers that create
the same entity at once write the same record and the loser retries.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable
from typing import TypedDict, TypeVar

from surrealdb.data.types.record_id import RecordID

from kgapp.graph import queries
from kgapp.graph.records import Entity
from kgapp.graph.resolution import names
from kgapp.graph.resolution.canonical import entity_key
from kgapp.graph.resolution.facts import read_facts_ahead
from kgapp.graph.resolution.model import (
    AutoMerge,
    Candidate,
    Context,
    EmbedNames,
    EntityDraft,
    Work,
)
from kgapp.graph.resolution.vectors import entity_vectors

ASK_FROM = 0.70
NEIGHBOURS = 10
SPELLED_LIKE = 5
MOST_CANDIDATES = 3

R = TypeVar("R")


class _Alias(TypedDict):
    """A name in the alias table, with its entity (queries.ALIASES_BY_NAME)."""

    name: str
    entity_type: str
    entity: RecordID
    merged_into: RecordID | None


def new_record(draft: EntityDraft) -> RecordID:
    return RecordID("entity", entity_key(draft.canonical))


async def resolve_entities(ctx: Context, work: Work, embed: EmbedNames) -> None:
    """`embed` is the pipeline's (ingest.indexing.embed_episode, for this episode): it
    embeds the names it is given and the episode's facts in one call."""
    if not work.entities:
        await embed([])
        return
    with ctx.timings.measure("resolve_entities"):
        # The cached name vectors are topped up while the names are looked up.
        refreshing = asyncio.ensure_future(entity_vectors(ctx.store.namespace).refresh(ctx.store))
        try:
            await _resolve(ctx, work, refreshing, embed)
        finally:
            await asyncio.wait({refreshing})
            refreshing.exception()  # raised where it was needed; else nothing waits on it


async def _resolve(
    ctx: Context,
    work: Work,
    refreshing: asyncio.Future[None],
    embed: EmbedNames,
) -> None:
    """Each name to an entity: its own, an alias's, one of the same match key, or one
    whose vector is near and whose name agrees (`_by_embedding`); else a new one."""
    keys = [names.match_key(d.name, d.entity_type) for d in work.entities]
    by_name, aliases, by_key = await _known_names(
        ctx, [d.canonical for d in work.entities], [k for k in keys if k]
    )
    unresolved = []
    for draft, key in zip(work.entities, keys, strict=True):
        draft.record, draft.is_new, draft.merge, draft.candidates = None, True, None, []
        draft.own_name = True
        match = _exact(draft, by_name.get(draft.canonical, [])) or _alias(draft, aliases)
        if match is not None:
            draft.record, draft.is_new = match, False
            # Only the entity's own name says what type it is, not a merged one's.
            draft.own_name = any(
                r["id"] == match and r.get("merged_into") is None
                for r in by_name.get(draft.canonical, [])
            )
            ctx.counts["entities_matched"] += 1
            continue
        same = _compatible(draft, key, by_key.get(key, [])) if key else []
        if len(same) == 1:  # two entities with this key: a person decides
            _merge_into(ctx, draft, same[0], names.Evidence("same", "same_name", 1.0), None)
            continue
        unresolved.append(draft)
    # The facts of the subjects known by name are read meanwhile (in LoCoMo, the
    # speakers': the longest read of an episode's resolution).
    read_facts_ahead(ctx, work)
    # Only names not matched exactly need a vector: known entities have theirs. Those
    # embedded with their episode's extraction (extract_ahead) are not embedded again.
    # The same call embeds the episode's facts (its passage units are embedded aside).
    missing = dict.fromkeys(d.name for d in unresolved if d.name not in ctx.name_vectors)
    await embed(list(missing))
    for draft in unresolved:
        draft.embedding = ctx.name_vectors[draft.name]
    await _by_embedding(ctx, unresolved, refreshing)


async def _known_names(
    ctx: Context, canonicals: list[str], keys: list[str]
) -> tuple[dict[str, list[Entity]], dict[str, list[_Alias]], dict[str, list[Entity]]]:
    """Entities by canonical name, aliases, and entities by match key: one round trip."""
    batch = queries.Batch()
    batch.add(queries.ENTITIES_BY_CANONICAL, names=canonicals)
    batch.add(queries.ALIASES_BY_NAME, names=canonicals)
    batch.add(queries.ENTITIES_BY_MATCH_KEY, keys=keys)
    results = await ctx.store.query(batch.sql, batch.params)
    entities: list[Entity] = results[0] or []
    aliases: list[_Alias] = results[1] or []
    keyed: list[Entity] = results[2] or []
    return (
        _group(entities, lambda r: r["canonical_name"]),
        _group(aliases, lambda r: r["name"]),
        _group(keyed, lambda r: r["match_key"] or ""),  # read by key: never without one
    )


def _group(rows: Iterable[R], key: Callable[[R], str]) -> dict[str, list[R]]:
    grouped: dict[str, list[R]] = {}
    for row in rows:
        grouped.setdefault(key(row), []).append(row)
    return grouped


def _exact(draft: EntityDraft, rows: list[Entity]) -> RecordID | None:
    """The entity of the draft's canonical name, of any type. Where a name has several
    (written before one type per name, or split by a person): the same type, then a
    generic one on either side, then any, the same whatever order the store reads them."""
    ordered = sorted(rows, key=lambda r: str(r["id"]))
    return _first_fitting(
        draft, [(r["entity_type"], r.get("merged_into") or r["id"]) for r in ordered]
    )


def _alias(draft: EntityDraft, aliases: dict[str, list[_Alias]]) -> RecordID | None:
    rows = aliases.get(draft.canonical, [])
    return _first_fitting(
        draft, [(r["entity_type"], r.get("merged_into") or r["entity"]) for r in rows]
    )


def _first_fitting(draft: EntityDraft, named: list[tuple[str, RecordID]]) -> RecordID | None:
    """Of (type, the entity it names now), the first of the draft's type, else of a
    compatible type, else the first."""
    for wanted in (
        lambda t: t == draft.entity_type,
        lambda t: names.types_compatible(t, draft.entity_type),
        lambda t: True,
    ):
        for entity_type, record in named:
            if wanted(entity_type):
                return record
    return None


def _compatible(draft: EntityDraft, key: str, rows: list[Entity]) -> list[Entity]:
    """Distinct current entities among `rows` whose type fits the draft's, and whose
    name has `key` as resolution reads names now (a key stored before the rules
    changed, or before the entity's type did, is not evidence)."""
    found = {
        str(row["id"]): row
        for row in rows
        if row.get("merged_into") is None
        and names.types_compatible(row["entity_type"], draft.entity_type)
        and names.match_key(row["name"], row["entity_type"]) == key
    }
    return list(found.values())


def _merge_into(
    ctx: Context,
    draft: EntityDraft,
    entity: Entity,
    evidence: names.Evidence,
    cosine: float | None,
) -> None:
    draft.own_name = False
    draft.merge = AutoMerge(
        rule=evidence.rule,
        score=round(evidence.score, 4),
        cosine=None if cosine is None else round(cosine, 4),
        survivor_name=entity["name"],
    )
    draft.record, draft.is_new, draft.alias = entity["id"], False, draft.canonical
    draft.candidates = []
    ctx.counts["entities_merged"] += 1


async def _by_embedding(
    ctx: Context, drafts: list[EntityDraft], refreshing: asyncio.Future[None]
) -> None:
    if not drafts:
        return
    with ctx.timings.measure("entity_knn"):
        vectors = entity_vectors(ctx.store.namespace)
        await refreshing
        found = []
        for draft in drafts:
            assert draft.embedding is not None
            own = new_record(draft)
            neighbours = [
                row
                for row in vectors.nearest(
                    draft.embedding,
                    NEIGHBOURS,
                    spelled=names.match_key(draft.name, draft.entity_type),
                    spelled_limit=SPELLED_LIKE,
                )
                if row["id"] != own
                and names.types_compatible(row["entity_type"], draft.entity_type)
            ]
            found.append(neighbours)
        now = await _follow_merges(ctx, [row for neighbours in found for row in neighbours])
        gone = {key for key, row in now.items() if row is None}
        if gone:  # deleted since they were cached (a document withdrawn): never matched
            vectors.forget(gone)
        # Types as they are now: a cached generic type may have been refined since.
        found = [
            [
                current
                for row in rows
                if (current := now[str(row["id"])]) is not None
                and names.types_compatible(current["entity_type"], draft.entity_type)
            ]
            for rows, draft in zip(found, drafts, strict=True)
        ]
        for draft, neighbours in zip(drafts, found, strict=True):
            own = new_record(draft)
            _judge(ctx, draft, [row for row in neighbours if row["id"] != own])
            if draft.record is None:
                draft.record = own
                if draft.candidates:
                    ctx.counts["entities_ambiguous"] += 1
                else:
                    ctx.counts["entities_new"] += 1


def _judge(ctx: Context, draft: EntityDraft, neighbours: list[Entity]) -> None:
    """Merge on name evidence, or keep the neighbours worth asking about (`score`: the
    cosine of their name vectors)."""
    proposed: dict[str, Candidate] = {}
    for row in neighbours:
        cosine = float(row["score"])
        evidence = names.compare(draft.name, draft.entity_type, row["name"], row["entity_type"])
        if evidence.verdict == "same":
            _merge_into(ctx, draft, row, evidence, cosine)
            return
        if evidence.verdict == "blocked":
            ctx.counts["entities_merge_blocked"] += int(cosine >= ASK_FROM)
            continue
        if cosine >= ASK_FROM or evidence.verdict in ("same", "similar"):
            method = "embedding_band" if cosine >= ASK_FROM else f"name_{evidence.rule}"
            proposed.setdefault(
                str(row["id"]), {**row, "score": round(cosine, 4), "method": method}
            )
    draft.candidates = list(proposed.values())[:MOST_CANDIDATES]


async def _follow_merges(ctx: Context, candidates: list[Entity]) -> dict[str, Entity | None]:
    """A cached candidate may have been merged or retyped since: each one as it is now,
    by its cached id (the survivor's id with its type now; None: deleted since it was
    cached). One round trip for all of them."""
    if not candidates:
        return {}
    batch = queries.Batch()
    for candidate in candidates:
        batch.add(queries.ENTITY_CURRENT, id=candidate["id"])
    now: dict[str, Entity | None] = {}
    for candidate, rows in zip(
        candidates, await ctx.store.query(batch.sql, batch.params), strict=True
    ):
        current = rows[0] if rows else None
        now[str(candidate["id"])] = (
            None
            if current is None
            else {**candidate, "id": current["id"], "entity_type": current["entity_type"]}
        )
    return now


def apply_entity_decision(ctx: Context, draft: EntityDraft, chosen: Candidate | None) -> None:
    """The batched LLM call's answer for an ambiguous draft."""
    if chosen is None:
        ctx.counts["entities_new"] += 1
        return
    evidence = names.compare(draft.name, draft.entity_type, chosen["name"], chosen["entity_type"])
    _merge_into(ctx, draft, chosen, names.Evidence("same", "llm", evidence.score), chosen["score"])
