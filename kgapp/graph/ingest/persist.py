"""Stage: write one episode and everything it changes in ONE SurrealDB transaction.

Either all of it is in the graph afterwards or none of it: a failure anywhere (a
concurrent writer, a schema check) rolls the whole episode back.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from surrealdb.data.types.record_id import RecordID

from kgapp.graph import communities, queries
from kgapp.graph.audit import AutoMergeAfter, MentionRow
from kgapp.graph.chunking import split_sentences
from kgapp.graph.errors import QueryFailed, UniqueViolation
from kgapp.graph.ingest.indexing import add_units, units_embedded
from kgapp.graph.ingest.model import EpisodeWork, IngestContext
from kgapp.graph.ingest.prepare import saga_record
from kgapp.graph.ingest.progress import add_progress
from kgapp.graph.ontology import mention_type
from kgapp.graph.records import EntityRow, EpisodeRow, Statement
from kgapp.graph.resolution.canonical import alias_key
from kgapp.graph.resolution.entities import new_record
from kgapp.graph.resolution.facts import fact_record, revision_row
from kgapp.graph.resolution.model import EntityDraft, FactDraft
from kgapp.graph.resolution.names import match_key

SUMMARY_LIMIT = 1000
# The audit actor of merges that resolution made without a person.
AUTO_MERGE_ACTOR = "resolution"


def merge_summary(old: str, new: str, limit: int = SUMMARY_LIMIT) -> str:
    """Bounded concatenation: the sentences of `new` not already said are appended
    ("Gina is a participant of the conversation." once, however many episodes say it);
    the oldest sentences give way first when over the limit."""
    fresh = " ".join(s for s in split_sentences(new) if s not in old)
    if not fresh:
        return old[-limit:]
    merged = f"{old} {fresh}".strip() if old else fresh
    if len(merged) <= limit:
        return merged
    # Whole sentences give way, oldest first; a last one too long is cut at a word.
    tail = merged[-limit:]
    rest = split_sentences(tail, maxsplit=1)
    return rest[1] if len(rest) == 2 else tail.split(" ", 1)[-1]


async def persist(ctx: IngestContext, work: EpisodeWork, summaries: dict[str, str]) -> None:
    """Write the episode, its entities and facts in one transaction, with the job's
    progress (ctx.progress, then cleared) and the community each new entity joins."""
    await units_embedded(work)
    batch = _episode_statements(work)
    degree = _new_facts_of(work)
    _entities(ctx, batch, work, summaries, degree)
    for draft in work.facts:
        _fact(ctx, batch, work, draft)
    _auto_merges(batch, work)
    gained = _gained(work)
    if ctx.progress is not None:
        add_progress(batch, ctx, ctx.progress, gained)
    new = list({str(d.record): d.record for d in work.entities if d.is_new and d.record}.values())
    joins = communities.join_neighbours(batch, new)  # last: their answers are counted
    with ctx.timings.measure("persist"):
        results = await _commit(ctx, batch)
    ctx.progress = None
    ctx.counts.update(gained)
    joined = communities.joined(results, joins)
    if joined:  # new entities join their neighbours' community until the next detection
        ctx.counts["community_joins"] += joined
    if work.unit_vectors is None:
        ctx.episodes.append(work.record)  # for the job's indexing phase


def _episode_statements(work: EpisodeWork) -> queries.Batch:
    batch = queries.Batch()
    episode = work.input
    batch.add(queries.EPISODE_CREATE, id=work.record, data=_episode_row(work))
    if work.unit_vectors is not None:
        add_units(batch, work.record, work.unit_vectors)
    if episode.message_keys:
        batch.add(queries.MESSAGE_KEYS_SET, keys=list(episode.message_keys), episode=work.record)
    if episode.saga:
        batch.add(
            queries.SAGA_UPSERT,
            saga=saga_record(episode.saga),
            name=episode.saga,
            episode=work.record,
        )
    if work.previous is not None:
        batch.add(queries.EPISODE_FOLLOWS, episode=work.record, previous=work.previous)
    return batch


def _gained(work: EpisodeWork) -> Counter[str]:
    """What the job's counts gain once the episode is written."""
    gained = Counter(episodes=1)
    if work.unit_vectors is not None:
        gained["passages_indexed"] = len(work.unit_vectors)
    gained["facts_indexed"] = sum(
        1 for d in work.facts if d.duplicate_of is None and d.embedding is not None
    )
    return gained


async def _commit(ctx: IngestContext, batch: queries.Batch) -> list[Any]:
    try:
        return await ctx.store.transaction(batch.sql, batch.params)
    except QueryFailed as error:
        if isinstance(error, UniqueViolation) or not queries.is_missing_record(str(error)):
            raise
        # An entity this episode resolved to was merged away or deleted by another writer
        # since it was read: the caller re-reads and resolves again, as after a conflict.
        raise UniqueViolation(str(error), kind=error.kind, statement=error.statement) from error


def _episode_row(work: EpisodeWork) -> EpisodeRow:
    episode = work.input
    return EpisodeRow(
        name=episode.name,
        content=episode.content,
        source=episode.source,
        source_description=episode.source_description,
        valid_at=episode.reference_time,
        content_hash=work.content_hash,
        saga=saga_record(episode.saga) if episode.saga else None,
        document=episode.document,
        documents=[episode.document] if episode.document else [],
        message_keys=list(episode.message_keys) or None,
        chunk_index=episode.chunk_index,
        screened_out=list(work.screened_out) or None,
    )


def _new_facts_of(work: EpisodeWork) -> Counter[str]:
    """How many new facts this episode gives each entity, by record: the rise of its
    degree, which counts current facts. A fact the graph holds already adds none; one
    that ends another adds one, as the old one's revision replaces it one for one."""
    degree: Counter[str] = Counter()
    for draft in work.facts:
        if draft.duplicate_of is None:
            degree.update((str(draft.source.record), str(draft.target.record)))
    return degree


def _entities(
    ctx: IngestContext,
    batch: queries.Batch,
    work: EpisodeWork,
    summaries: dict[str, str],
    degree: Counter[str],
) -> None:
    """Each entity's statements: a new one created with its `degree`, an existing one
    seen again with it added, and the episode's mention of each."""
    touched: set[str] = set()
    mentions: list[MentionRow] = []
    seen_at = work.input.reference_time
    spelled, typed = _said(work)
    for draft in work.entities:
        assert draft.record is not None
        _name_statements(batch, draft, seen_at)
        key = str(draft.record)
        if key in touched:
            continue
        touched.add(key)
        vote = mention_type(typed[key])
        if draft.is_new:
            row = _entity_row(draft, draft.summary, seen_at, vote)
            batch.add(queries.ENTITY_CREATE, id=draft.record, row={**row, "degree": degree[key]})
        else:
            seen = _Seen(seen_at, vote, _own_name(work, draft.record), degree[key])
            _seen_again(batch, draft, summaries.get(key, ""), seen)
        mentions.append(
            {
                "in": work.record,
                "out": draft.record,
                "name": draft.name,
                "entity_type": vote,
                "names": spelled[key],
                "entity_types": typed[key],
                "summary": draft.summary,
                "seen_at": seen_at,
            }
        )
    if mentions:  # what each entity loses when this episode goes (schema/0016)
        batch.add(queries.MENTIONS_INSERT, rows=mentions)


def _name_statements(batch: queries.Batch, draft: EntityDraft, seen_at: datetime) -> None:
    """What resolution decided of the name: an alias to keep, a record of its own merged
    into the entity, candidates a person is to review."""
    if draft.alias:
        batch.add(
            queries.ALIAS_WRITE,
            id=alias_record(draft),
            name=draft.alias,
            type=draft.entity_type,
            entity=draft.record,
        )
    if draft.merge is not None:  # the name keeps a record of its own, merged
        row = _entity_row(draft, draft.summary, seen_at)
        batch.add(
            queries.ENTITY_CREATE,
            id=new_record(draft),
            row={**row, "merged_into": draft.record},
        )
    for candidate in draft.candidates:  # no model decided: a person will
        batch.add(
            queries.CANDIDATE_ADD,
            a=draft.record,
            b=candidate["id"],
            score=float(candidate["score"]),
            method=candidate.get("method", "embedding_band"),
        )


@dataclass(frozen=True)
class _Seen:
    """What an episode tells of an existing entity it mentions: when, the type its
    mention gives, its own name as spelled there (None: not said), its new facts."""

    at: datetime
    vote: str
    named: str | None
    new_facts: int


def _seen_again(batch: queries.Batch, draft: EntityDraft, old: str, seen: _Seen) -> None:
    """An existing entity mentioned again: still not merged, seen then, of the type its
    mentions give with this one's vote (and the match key of its name as that type,
    where the episode said its name), its summary extended, its degree raised."""
    summary = merge_summary(old, draft.summary)
    batch.add(
        queries.ENTITY_SEEN,
        id=draft.record,
        seen=seen.at,
        embedding=draft.embedding,
        vote=seen.vote,
        key=(match_key(seen.named, seen.vote) or None) if seen.named else None,
        summary=summary if summary != old else None,
        delta=seen.new_facts,
    )


def _said(work: EpisodeWork) -> tuple[dict[str, list[str]], dict[str, list[str]]]:
    """Every name and type this episode gave each entity, by record (its one mention
    keeps them all, and gives the most specific type, its own names' first)."""
    spelled: dict[str, dict[str, None]] = {}
    typed: dict[str, dict[str, None]] = {}
    for draft in work.entities:
        spelled.setdefault(str(draft.record), {})[draft.name] = None
    for draft in sorted(work.entities, key=lambda d: not d.own_name):
        typed.setdefault(str(draft.record), {})[draft.entity_type] = None
    return (
        {key: list(names) for key, names in spelled.items()},
        {key: list(types) for key, types in typed.items()},
    )


def _own_name(work: EpisodeWork, record: RecordID | None) -> str | None:
    """The entity's own name as this episode spelled it (its canonical name, not an
    alias or a merged name's), if it did."""
    return next(
        (d.name for d in work.entities if d.record == record and d.own_name and not d.merge),
        None,
    )


def alias_record(draft: EntityDraft) -> RecordID:
    assert draft.alias is not None
    return RecordID("alias", alias_key(draft.entity_type, draft.alias))


def _auto_merges(batch: queries.Batch, work: EpisodeWork) -> None:
    """One audit entry per name merged without a person: the rule and its scores, and
    the facts this episode attached through that name (what an undo moves back)."""
    for draft in work.entities:
        merge = draft.merge
        if merge is None:
            continue
        assert draft.record is not None  # resolved before it is written
        facts = [
            f.record
            for f in work.facts
            if f.record is not None
            and f.duplicate_of is None
            and (f.source is draft or f.target is draft)
        ]
        cosine = "" if merge.cosine is None else f", embedding {merge.cosine:.2f}"
        batch.add(
            queries.AUDIT_CREATE,
            actor=AUTO_MERGE_ACTOR,
            action="auto_merge",
            target=draft.record,
            before=None,
            after=AutoMergeAfter(
                survivor=draft.record,
                merged=new_record(draft),
                name=draft.name,
                survivor_name=merge.survivor_name,
                rule=merge.rule,
                score=merge.score,
                cosine=merge.cosine,
                episode=work.record,
                facts=facts,
                alias=alias_record(draft),
            ),
            reason=f"{merge.rule}: {draft.name!r} = {merge.survivor_name!r} "
            f"(names {merge.score:.2f}{cosine})",
        )


def _entity_row(
    draft: EntityDraft, summary: str, seen_at: datetime, entity_type: str | None = None
) -> EntityRow:
    entity_type = entity_type or draft.entity_type
    return EntityRow(
        name=draft.name,
        canonical_name=draft.canonical,
        entity_type=entity_type,
        summary=summary,
        match_key=match_key(draft.name, entity_type) or None,
        name_embedding=draft.embedding,
        first_seen_at=seen_at,
        last_seen_at=seen_at,
    )


def _fact(ctx: IngestContext, batch: queries.Batch, work: EpisodeWork, draft: FactDraft) -> None:
    """Add the statements for one fact."""
    if draft.duplicate_of is not None:
        batch.add(
            queries.FACT_REPEATED,
            id=draft.duplicate_of["id"],
            episode=work.record,
            confidence=draft.confidence,
            said=_statement(work, draft),
        )
        return
    draft.record = fact_record()
    supersedes = None
    for old in draft.contradicts:
        revision = revision_row(old, ends_at=draft.valid_at, by=draft.record, now=ctx.now)
        batch.add(queries.FACT_RETIRE, id=old["id"], now=ctx.now, by=draft.record)
        batch.add(queries.FACT_CREATE, row=revision)
        if revision["fact_embedding"] is None:  # read without it: the server copies it
            batch.add(queries.FACT_VECTOR_COPY, id=revision["id"], source=old["id"])
        ctx.facts.append(revision["id"])
        supersedes = revision["id"]
    row = {
        "id": draft.record,
        "in": draft.source.record,
        "out": draft.target.record,
        "relation": draft.relation,
        "edge_type": draft.edge_type,
        "fact": draft.fact,
        "fact_embedding": draft.embedding,
        "episodes": [work.record],
        "statements": [_statement(work, draft)],
        "confidence": draft.confidence,
        "valid_at": draft.valid_at,
        "invalid_at": draft.invalid_at,
        "created_at": ctx.now,
        "supersedes": supersedes,
        "superseded_by": draft.closed_by["id"] if draft.closed_by else None,
    }
    batch.add(queries.FACT_CREATE, row=row)
    if draft.embedding is None:
        ctx.facts.append(draft.record)
    if draft.closed_by is not None:
        batch.add(queries.FACT_RELINK, id=draft.closed_by["id"], supersedes=draft.record)


def _statement(work: EpisodeWork, draft: FactDraft) -> Statement:
    """What this episode said of the fact (kept so that its wording can go with it)."""
    return Statement(
        episode=work.record,
        fact=draft.fact,
        valid_at=draft.valid_at,
        confidence=draft.confidence,
    )
