"""A system's graph and answers measured against the gold corpus.

- Entities: each entity a system holds is read by its names (its name and any aliases it
  keeps) as the gold entities those names are surface forms of. A gold entity held by
  more than one entity is a duplicate left (each extra one counts); two gold entities
  that end up in one entity are a wrong merge. A merge that leaves no trace in names
  (the survivor keeps only its own) shows in the facts instead: a fact whose sentence is
  gold fact g but whose endpoint is an entity named for another gold entity than g's
  was attached to the wrong one, and that pair counts as a wrong merge too.
- Facts wrongly current: gold facts that a later fact ended (in valid time) which the
  system still holds as true now; with it, the share of still-true gold facts the system
  holds as true (ending everything is no answer).
- Search: the gold fact's sentence among the top 5 returned.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from bench.compare.corpus import Corpus, Episode
from bench.compare.systems.base import SystemEntity, SystemFact


@dataclass
class EntityScore:
    gold_mentioned: int = 0
    held: int = 0  # entities the system holds
    duplicates_left: int = 0
    gold_with_duplicates: int = 0
    wrong_merges: set[frozenset[str]] = field(default_factory=set)
    not_gold: int = 0  # entities no gold name maps to
    missing: int = 0  # mentioned gold entities the system holds none of

    def as_dict(self) -> dict[str, object]:
        return {
            "gold_mentioned": self.gold_mentioned,
            "held": self.held,
            "duplicates_left": self.duplicates_left,
            "gold_with_duplicates": self.gold_with_duplicates,
            "wrong_merges": len(self.wrong_merges),
            "wrong_merge_pairs": sorted(" + ".join(sorted(p)) for p in self.wrong_merges),
            "not_gold": self.not_gold,
            "missing": self.missing,
        }


def entities(
    corpus: Corpus, episodes: list[Episode], held: list[SystemEntity], facts: list[SystemFact]
) -> EntityScore:
    score = EntityScore(held=len(held))
    mentioned = {m.entity for e in episodes for m in e.mentions}
    score.gold_mentioned = len(mentioned)
    nodes_of: dict[str, int] = defaultdict(int)
    for entity in held:
        golds = {g for g in (corpus.entity_of(n) for n in (entity.name, *entity.aliases)) if g}
        primary = corpus.entity_of(entity.name)
        if primary is None and not golds:
            score.not_gold += 1
            continue
        if primary is not None:
            nodes_of[primary] += 1
        for other in golds - {primary}:
            if primary is not None:
                score.wrong_merges.add(frozenset((primary, other)))
    for gold in mentioned:
        count = nodes_of.get(gold, 0)
        if count == 0:
            score.missing += 1
        elif count > 1:
            score.gold_with_duplicates += 1
            score.duplicates_left += count - 1
    for fact in facts:
        ends = {corpus.entity_of(fact.source), corpus.entity_of(fact.target)} - {None}
        for gold in corpus.facts_in(fact.text):
            expected = {gold.subject, gold.object}
            for wrong in ends - expected:
                # The endpoint stands for `wrong` where the sentence names one of `expected`.
                for right in expected - ends:
                    score.wrong_merges.add(frozenset((right, wrong)))
    return score


def currency(corpus: Corpus, episodes: list[Episode], facts: list[SystemFact]) -> dict[str, object]:
    stated = {fid for e in episodes for fid in e.facts}
    late = {fid for e in episodes if e.late for fid in e.facts}
    current: set[str] = set()
    stored: set[str] = set()
    for fact in facts:
        for gold in corpus.facts_in(fact.text):
            stored.add(gold.id)
            if fact.current:
                current.add(gold.id)
    ended = {fid for fid in stated if corpus.facts[fid].valid_to is not None}
    holding = stated - ended
    return {
        "facts_stated": len(stated),
        "gold_facts_stored": len(stored & stated),
        "ended": len(ended),
        "wrongly_current": len(ended & current),
        "wrongly_current_late": len(ended & current & late),
        "late_ended": len(ended & late),
        "holding": len(holding),
        "holding_current": len(holding & current),
    }
