"""Which entities matter first: the explorer's first view shows the most salient ones.

Degree alone (how many facts an entity has) draws a chat as two stars around its
speakers: every fact is a speaker's, so the generic nouns at the ends of their facts
("need", "mix") outrank the places and books they talked about but that no fact names
(Bali, Sapiens). Salience weighs, beside the facts:
- how many episodes mention the entity (the `entity_mentions` view, schema/0020): a
  thing talked about in many messages or paragraphs matters even without a fact;
- whether its name is a proper name (a word capitalised as names are): a named place
  outranks a common noun mentioned as often;
- a curator's pin, which puts it first whatever else it has.
Both counts are taken on a log scale, so that a speaker with hundreds of mentions does
not make every other difference invisible.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from kgapp.graph.records import record_key

NAMED_WEIGHT = 2.0  # as much as three more mentions of a thing mentioned once
PINNED_WEIGHT = 1000.0  # above anything counts can give: pins come first


def is_named(name: str) -> bool:
    """Whether `name` reads as a proper name: one of its words begins with a capital
    (Bali, Pomodoro Technique, van Gogh) and it is not the pronoun "I". Scripts without
    case name nothing this way: their entities rank by their counts alone."""
    words = name.split()
    return any(word[:1].isupper() for word in words) and words != ["I"]


@dataclass(frozen=True)
class Standing:
    """An entity as the ranking sees it: its name, its facts, its mentions, its pin."""

    key: str
    name: str
    degree: int = 0
    mentions: int = 0
    pinned: bool = False

    @classmethod
    def of(cls, row: Mapping[str, Any], mentions: int | None = None) -> Standing:
        """The standing of an entity row (`id`, `name`, `degree`, `pinned`), its mentions
        given or on the row."""
        return cls(
            key=record_key(row["id"]),
            name=row["name"],
            degree=int(row.get("degree") or 0),
            mentions=int(row.get("mentions") or 0) if mentions is None else mentions,
            pinned=bool(row.get("pinned")),
        )

    @property
    def named(self) -> bool:
        return is_named(self.name)

    @property
    def salience(self) -> float:
        score = math.log2(1 + max(0, self.mentions)) + math.log2(1 + max(0, self.degree))
        if self.named:
            score += NAMED_WEIGHT
        if self.pinned:
            score += PINNED_WEIGHT
        return round(score, 3)


def most_salient(standings: Iterable[Standing], limit: int) -> list[Standing]:
    """The `limit` most salient, most salient first; ties by degree, then by name (so the
    same graph always gives the same view)."""
    ranked = sorted(standings, key=lambda s: (-s.salience, -s.degree, s.name, s.key))
    return ranked[: max(0, limit)]
