"""Stage: the one batched LLM call per episode for what rules cannot settle.

It carries every ambiguous entity with its candidates (a name whose vector is at
least 0.70 cosine from an entity's, or whose spelling is like its name, and that the
names alone do not merge: resolution/entities.py), and every fact with existing facts
it might repeat or contradict. Without a model, ambiguous entities stay separate and go
to the merge review queue.
"""

from __future__ import annotations

from datetime import datetime

from kgapp.graph.llm.prompts import resolve as prompt
from kgapp.graph.llm.prompts.resolve import EntityCheck, FactCheck, FactDecision, Resolution
from kgapp.graph.records import StoredFact
from kgapp.graph.resolution.entities import apply_entity_decision
from kgapp.graph.resolution.model import Context, EntityDraft, FactDraft, Work

FactDecisions = dict[int, tuple[FactDecision, list[StoredFact]]]


async def decide(
    ctx: Context,
    work: Work,
    fact_checks: list[tuple[FactDraft, list[StoredFact]]],
) -> tuple[bool, FactDecisions]:
    """Returns (whether any entity changed record, decisions per fact index)."""
    ambiguous = [d for d in work.entities if d.candidates]
    if ctx.llm is None or (not ambiguous and not fact_checks):
        for draft in ambiguous:
            ctx.counts["entities_new"] += 1
            ctx.counts["dedup_candidates"] += len(draft.candidates)
        return False, {}
    with ctx.timings.measure("decide"):
        answer = await ctx.llm.structured(
            task=prompt.TASK,
            schema=Resolution,
            system=prompt.SYSTEM,
            user=prompt.user_prompt(_entity_payload(ambiguous), _fact_payload(fact_checks)),
        )
    changed = _apply_entities(ctx, ambiguous, answer)
    return changed, _fact_decisions(work, fact_checks, answer)


def _entity_payload(ambiguous: list[EntityDraft]) -> list[EntityCheck]:
    """Each ambiguous entity with the existing entities it may be, as the prompt lists
    them."""
    return [
        {
            "index": i,
            "name": d.name,
            "type": d.entity_type,
            "summary": d.summary,
            "candidates": [
                {
                    "index": j,
                    "name": c["name"],
                    "type": c["entity_type"],
                    "summary": c.get("summary", ""),
                }
                for j, c in enumerate(d.candidates)
            ],
        }
        for i, d in enumerate(ambiguous)
    ]


def _fact_payload(
    fact_checks: list[tuple[FactDraft, list[StoredFact]]],
) -> list[FactCheck]:
    """Each new fact with the existing facts it may repeat or contradict."""
    return [
        {
            "index": i,
            "fact": draft.fact,
            "valid_at": draft.valid_at.isoformat(),
            "existing": [
                {
                    "index": j,
                    "fact": e["fact"],
                    "valid_at": e["valid_at"].isoformat(),
                    "invalid_at": _iso(e.get("invalid_at")),
                }
                for j, e in enumerate(candidates)
            ],
        }
        for i, (draft, candidates) in enumerate(fact_checks)
    ]


def _iso(moment: datetime | None) -> str | None:
    return moment.isoformat() if moment else None


def _apply_entities(ctx: Context, ambiguous: list[EntityDraft], answer: Resolution) -> bool:
    """Each ambiguous entity merged into the candidate the answer picked, or kept new;
    whether any was merged."""
    changed = False
    chosen = {d.index: d.duplicate_of for d in answer.entities}
    for i, draft in enumerate(ambiguous):
        pick = chosen.get(i)
        candidate = (
            draft.candidates[pick]
            if pick is not None and 0 <= pick < len(draft.candidates)
            else None
        )
        apply_entity_decision(ctx, draft, candidate)
        changed = changed or candidate is not None
    return changed


def _fact_decisions(
    work: Work,
    fact_checks: list[tuple[FactDraft, list[StoredFact]]],
    answer: Resolution,
) -> FactDecisions:
    """The answer's decision on each checked fact, by the fact's place in the episode."""
    positions = {id(draft): n for n, draft in enumerate(work.facts)}
    decisions: FactDecisions = {}
    for decision in answer.facts:
        if 0 <= decision.index < len(fact_checks):
            fact, candidates = fact_checks[decision.index]
            decisions[positions[id(fact)]] = (decision, candidates)
    return decisions
