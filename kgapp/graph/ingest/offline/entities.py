"""Entities as one clause mentions them, and the entities of an episode so far."""

from __future__ import annotations

from dataclasses import dataclass, field

from kgapp.graph.llm.prompts.extract import ExtractedEntity


@dataclass(frozen=True)
class Mention:
    """An entity as one clause refers to it."""

    name: str
    entity_type: str
    text: str  # as the fact sentence shows it: "the LGBTQ support group", "Caroline"
    speaker_pronoun: bool = False  # I/you/we stood here: the verb agrees again
    weak: bool = False  # "we": the speaker took part, with others
    named: bool = False  # a proper name (NER's, or the tagger's proper nouns)


@dataclass
class Entities:
    """The entities of one episode, first spelling kept, best type kept. A rank orders
    them for the cap on entities: 0 speaker, 1 used by a fact, 2 named, 3 noun phrase."""

    found: dict[str, ExtractedEntity] = field(default_factory=dict)
    rank: dict[str, int] = field(default_factory=dict)
    fixed: set[str] = field(default_factory=set)  # the speakers: always Person

    def add(self, name: str, entity_type: str, rank: int, *, fixed: bool = False) -> None:
        key = name.casefold()
        if key in self.fixed:
            self.rank[key] = min(self.rank[key], rank)
            return
        current = self.found.get(key)
        if (
            current is None
            or fixed
            or _more_specific(entity_type, current.entity_type, rank, self.rank[key])
        ):
            kept = current.name if current else name
            self.found[key] = ExtractedEntity(name=kept, entity_type=entity_type, summary="")
        self.rank[key] = min(self.rank.get(key, rank), rank)
        if fixed:
            self.fixed.add(key)

    def describe(self, name: str, sentence: str) -> None:
        key = name.casefold()
        entity = self.found.get(key)
        if entity is None or sentence in entity.summary or len(entity.summary) > 400:
            return
        summary = f"{entity.summary} {sentence}".strip()[:600]
        self.found[key] = entity.model_copy(update={"summary": summary})

    def ranked(self) -> list[ExtractedEntity]:
        order = sorted(self.found, key=lambda key: self.rank[key])  # stable: first seen
        return [self.found[key] for key in order]


def _more_specific(new: str, old: str, new_rank: int, old_rank: int) -> bool:
    if old in ("Concept", "Entity") and new not in ("Concept", "Entity"):
        return True
    return new_rank < old_rank and new != old and new_rank <= 1
