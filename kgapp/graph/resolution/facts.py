"""Stage: decide, for each extracted fact, whether it repeats, ends, or is ended by a
fact the graph already holds.

- Repeats: same subject, relation and object, and the existing fact holds at the new
  fact's start: the episode is appended and the confidence raised, nothing new is made.
  When the new fact only states an end ("resigned from Acme last week") and the
  existing one is open, it contradicts that one instead: the open fact is closed there.
- Single-valued relations (ontology): a different object ends the existing fact by
  rule: existing facts that hold at the new start are closed there; if a *later* fact
  already holds (this episode arrived late), the new fact is closed at that one's start
  instead, so an old episode never invalidates newer knowledge.
- Other relations: the batched LLM call may name duplicates and contradictions.
"""

from __future__ import annotations

import asyncio
from datetime import datetime
from typing import TypedDict

from surrealdb.data.types.record_id import RecordID

from kgapp.graph import queries
from kgapp.graph.llm.prompts.resolve import FactDecision
from kgapp.graph.records import JsonObject, Statement, StoredFact
from kgapp.graph.resolution.model import Context, FactDraft, Work, new_key
from kgapp.graph.time import holds_at

LLM_CANDIDATES_PER_FACT = 5


def _sources(work: Work) -> dict[str, RecordID]:
    """The episode's subjects that already exist, by their record's text (RecordID is
    not hashable)."""
    return {
        str(f.source.record): f.source.record
        for f in work.facts
        if f.source.record is not None and not f.source.is_new
    }


def _read_facts(batch: queries.Batch, sources: dict[str, RecordID]) -> None:
    """The current facts of each subject: one statement each, answered in order."""
    for source in sources.values():
        batch.add(queries.FACTS_OF_SOURCE, source=source)


async def _facts_of(ctx: Context, sources: dict[str, RecordID]) -> dict[str, list[StoredFact]]:
    batch = queries.Batch()
    _read_facts(batch, sources)
    results = await ctx.store.query(batch.sql, batch.params)
    return {key: rows or [] for key, rows in zip(sources, results, strict=True)}


def read_facts_ahead(ctx: Context, work: Work) -> None:
    """Start reading the current facts of the subjects resolved so far, while the rest
    of resolution runs; `existing_facts` takes what it read."""
    sources = _sources(work)
    if sources and work.facts_ahead is None:
        work.facts_ahead = asyncio.ensure_future(_facts_of(ctx, sources))


def drop_facts_ahead(work: Work) -> None:
    """Let go of a read ahead that was not taken (resolution failed first)."""
    ahead, work.facts_ahead = work.facts_ahead, None
    if ahead is None:
        return
    if ahead.done() and not ahead.cancelled():
        ahead.exception()  # retrieved: the failure that counts is resolution's
    else:
        ahead.cancel()


async def existing_facts(ctx: Context, work: Work) -> tuple[list[StoredFact], dict[str, str]]:
    """The current facts of the episode's subjects (those read ahead, and the others),
    and the summaries of its entities that already exist, in one round trip."""
    read: dict[str, list[StoredFact]] = {}
    if work.facts_ahead is not None:
        ahead, work.facts_ahead = work.facts_ahead, None
        read = await ahead
    wanted = _sources(work)
    sources = {k: v for k, v in wanted.items() if k not in read}
    batch = queries.Batch()
    _read_facts(batch, sources)
    known = {str(d.record): d.record for d in work.entities if d.record and not d.is_new}
    for record in known.values():
        batch.add(queries.ENTITY_SUMMARY, id=record)
    results = await ctx.store.query(batch.sql, batch.params) if len(batch) else []
    read.update(zip(sources, (rows or [] for rows in results[: len(sources)]), strict=True))
    facts = [row for key in wanted for row in read[key]]
    summaries = {str(r["id"]): r.get("summary") or "" for r in results[len(sources) :] if r}
    return facts, summaries


def llm_candidates(
    ctx: Context, work: Work, existing: list[StoredFact]
) -> list[tuple[FactDraft, list[StoredFact]]]:
    """Facts the rules cannot settle and the existing facts the model should compare."""
    checks = []
    for draft in work.facts:
        if ctx.ontology.is_single_valued(draft.relation):
            continue
        related = [
            e
            for e in existing
            if e["in"] == draft.source.record
            and (e["out"] == draft.target.record or e["relation"] == draft.relation)
            and not (e["out"] == draft.target.record and e["relation"] == draft.relation)
        ]
        if related:
            checks.append((draft, related[:LLM_CANDIDATES_PER_FACT]))
    return checks


def resolve_facts(
    ctx: Context,
    work: Work,
    existing: list[StoredFact],
    decisions: dict[int, tuple[FactDecision, list[StoredFact]]] | None = None,
) -> None:
    with ctx.timings.measure("resolve_facts"):
        unique = _dedupe_within_episode(work.facts)
        for index, draft in unique:
            same = [
                e
                for e in existing
                if e["in"] == draft.source.record and e["relation"] == draft.relation
            ]
            repeat = next(
                (e for e in same if e["out"] == draft.target.record and _repeats(e, draft)), None
            )
            if repeat is not None and _ends(repeat, draft):
                # Kept as the statement of the end, which closes the open fact (and is
                # undone with its episode, like any contradiction).
                draft.contradicts.append(repeat)
                repeat = None
            if repeat is not None:
                draft.duplicate_of = repeat
                ctx.counts["facts_duplicate"] += 1
                continue
            if ctx.ontology.is_single_valued(draft.relation):
                _apply_single_valued(draft, [e for e in same if e["out"] != draft.target.record])
            elif decisions and index in decisions:
                _apply_decision(ctx, draft, *decisions[index])
            if draft.duplicate_of is None:
                ctx.counts["facts_created"] += 1
        work.facts = [draft for _, draft in unique]
        _end_each_once(work.facts)
        ctx.counts["facts_invalidated"] += sum(
            len(d.contradicts) for d in work.facts if d.duplicate_of is None
        )


def _end_each_once(facts: list[FactDraft]) -> None:
    """An existing fact contradicted by several facts of one episode is ended once, by
    the one that starts first: it no longer held after that (two endings would leave two
    current versions of it, with different ends)."""
    first: dict[str, FactDraft] = {}
    for draft in facts:
        if draft.duplicate_of is not None:
            continue
        for old in draft.contradicts:
            kept = first.get(str(old["id"]))
            if kept is None or _starts_before(draft, kept):
                first[str(old["id"])] = draft
    for draft in facts:
        draft.contradicts = [o for o in draft.contradicts if first.get(str(o["id"])) is draft]


def _starts_before(draft: FactDraft, other: FactDraft) -> bool:
    if draft.valid_at is None:
        return False
    return other.valid_at is None or draft.valid_at < other.valid_at


def _dedupe_within_episode(facts: list[FactDraft]) -> list[tuple[int, FactDraft]]:
    """(original index, draft) of the first of each (subject, relation, object, start)."""
    seen: dict[tuple[str, str, str, datetime], tuple[int, FactDraft]] = {}
    for index, draft in enumerate(facts):
        key = (str(draft.source.record), draft.relation, str(draft.target.record), draft.valid_at)
        if key in seen:
            kept = seen[key][1]
            kept.confidence = max(kept.confidence, draft.confidence)
        else:
            seen[key] = (index, draft)
    return list(seen.values())


def _repeats(existing: StoredFact, draft: FactDraft) -> bool:
    return (
        existing["valid_at"] == draft.valid_at
        or holds_at(existing, draft.valid_at)
        or (existing.get("invalid_at") is None and existing["valid_at"] > draft.valid_at)
    )


def _ends(existing: StoredFact, draft: FactDraft) -> bool:
    """The draft states when an open fact stopped holding, after it began."""
    return (
        draft.invalid_at is not None
        and existing.get("invalid_at") is None
        and draft.invalid_at > existing["valid_at"]
    )


def _apply_single_valued(draft: FactDraft, rivals: list[StoredFact]) -> None:
    for rival in rivals:
        if holds_at(rival, draft.valid_at):
            draft.contradicts.append(rival)
    later = [r for r in rivals if r["valid_at"] > draft.valid_at]
    if later:
        first = min(later, key=lambda r: r["valid_at"])
        if draft.invalid_at is None or draft.invalid_at > first["valid_at"]:
            draft.invalid_at = first["valid_at"]
            draft.closed_by = first


def _apply_decision(
    ctx: Context, draft: FactDraft, decision: FactDecision, candidates: list[StoredFact]
) -> None:
    if decision.duplicate_of is not None and 0 <= decision.duplicate_of < len(candidates):
        draft.duplicate_of = candidates[decision.duplicate_of]
        ctx.counts["facts_duplicate"] += 1
        return
    for index in decision.contradicts:
        if 0 <= index < len(candidates) and holds_at(candidates[index], draft.valid_at):
            draft.contradicts.append(candidates[index])


def fact_record() -> RecordID:
    return RecordID("relates_to", "f" + new_key())


# The fields of a revision (`in` is a Python keyword: named in the functional form): the
# old fact's content as read (None where it had none), closed and learned anew.
FactRevision = TypedDict(
    "FactRevision",
    {
        "relation": str,
        "edge_type": str | None,
        "fact": str,
        "fact_embedding": list[float] | None,
        "episodes": list[RecordID] | None,
        "statements": list[Statement] | None,
        "confidence": float | None,
        "valid_at": datetime,
        "invalid_at": datetime,
        "supersedes": RecordID | None,
        "attributes": JsonObject | None,  # free-form, as the fact's source gave them
        "id": RecordID,
        "created_at": datetime,
        "expired_at": None,
        "revision_of": RecordID,
        "superseded_by": RecordID,
        "in": RecordID,
        "out": RecordID,
    },
)


def revision_row(
    old: StoredFact, *, ends_at: datetime, by: RecordID, now: datetime
) -> FactRevision:
    """The old fact as now believed: same content, validity closed at `ends_at` by the
    fact `by`, learned `now`."""
    return {
        "relation": old["relation"],
        "edge_type": old.get("edge_type"),
        "fact": old["fact"],
        "fact_embedding": old.get("fact_embedding"),
        "episodes": old.get("episodes"),
        "statements": old.get("statements"),
        "confidence": old.get("confidence"),
        "valid_at": old["valid_at"],
        "invalid_at": ends_at,
        "supersedes": old.get("supersedes"),
        "attributes": old.get("attributes"),
        "id": fact_record(),
        "created_at": now,
        "expired_at": None,
        "revision_of": old["id"],
        "superseded_by": by,
        "in": old["in"],
        "out": old["out"],
    }
