"""Who "she", "its" and "the company" are: the entity in focus.

The reader notes every named mention in reading order. A personal pronoun is the
latest person named before it, a neuter one ("it", "its") the latest organisation,
product or project, never someone the same verb already has as its subject ("Kari Lund
replaced her": not Kari Lund). "The company" (the firm, the startup, ...) is the
organisation the text names most, "the city" the latest place. In a conversation the
speakers are I and you, so a pronoun reaches back only over the last two turns.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from kgapp.graph.ingest.offline.entities import Mention
from kgapp.graph.ingest.offline.vocabulary import GROUP_HEADS, ORGANIZATION_HEADS

if TYPE_CHECKING:
    from spacy.tokens import Token

PERSONAL = frozenset({"he", "him", "his", "himself", "she", "her", "hers", "herself"})
NEUTER = frozenset({"it", "its", "itself"})
NEUTER_TYPES = frozenset({"Organization", "Product", "Project"})
COMPANY_WORDS = frozenset(
    {"company", "firm", "startup", "business", "corporation", "enterprise", "organisation",
     "organization", "employer", "agency"}
)  # fmt: skip
PLACE_WORDS = frozenset({"city", "town", "village", "country", "region"})
TURNS_BACK = {True: 1, False: 3}  # conversation: this turn and the one before


@dataclass(frozen=True)
class Noted:
    turn: int
    position: int
    mention: Mention
    verb: int | None  # the verb it is the subject of, in its turn


class Focus:
    def __init__(self, conversation: bool) -> None:
        self.notes: list[Noted] = []
        self.counts: Counter[str] = Counter()
        self.turn = -1
        self.reach = TURNS_BACK[conversation]
        self.speakers: set[str] = set()
        self.groups: frozenset[str] = frozenset()  # casefolded names of bands, clubs
        self.titles: set[str] = set()  # organisations a heading names: always near

    def next_turn(self) -> None:
        self.turn += 1

    def note(self, token: Token, mention: Mention, *, title: bool = False) -> None:
        """A named mention; in a title it counts thrice (the text is about it)."""
        verb = token.head.i if token.dep_ in ("nsubj", "nsubjpass") else None
        self.notes.append(Noted(self.turn, token.i, mention, verb))
        if mention.entity_type == "Organization":
            self.counts[mention.name] += 3 if title else 1
            if title:
                self.titles.add(mention.name)

    def settle(self) -> None:
        """This turn's notes in reading order, however they were found."""
        first = next((i for i, n in enumerate(self.notes) if n.turn == self.turn), len(self.notes))
        self.notes[first:] = sorted(self.notes[first:], key=lambda n: n.position)

    def pronoun(self, token: Token, other_than: str = "") -> Mention | None:
        """Whom a third-person pronoun stands for; `other_than`: not this name (the
        clause's subject)."""
        lower = token.lower_
        if lower in PERSONAL:  # a person; else a name NER left untyped, or mistyped
            found = self._latest(token, frozenset({"Person"}), other_than) or self._latest(
                token, frozenset({"Person", "Entity"}), other_than, first_names=True
            )
            return replace(found, entity_type="Person") if found is not None else None
        if lower in NEUTER:
            return self._latest(token, NEUTER_TYPES, other_than)
        return None

    def description(self, root: Token) -> Mention | None:
        """ "the company" as the organisation in focus; "the city" as the latest place."""
        if not any(c.dep_ == "det" and c.lower_ == "the" for c in root.children):
            return None
        if any(c.dep_ in ("amod", "compound", "prep", "poss") for c in root.children):
            return None  # "the shipping company", "the company of ...": another one
        lemma = root.lemma_.lower()
        if lemma in GROUP_HEADS:  # "the band": the group named most; no company
            if not self.groups:
                return None
            return self._organization_near(root, self.groups) or self.top_organization(self.groups)
        if lemma in COMPANY_WORDS or lemma in GROUP_HEADS or lemma in ORGANIZATION_HEADS:
            return self._organization_near(root) or self.top_organization()
        if lemma in PLACE_WORDS:
            return self._latest(root, frozenset({"Location"}))
        return None

    def _organization_near(
        self, token: Token, among: frozenset[str] | None = None
    ) -> Mention | None:
        """The organisation named most among those of this turn and the one before,
        before `token` ("she joined Holm & Friis ... In 2001 she left the firm")."""
        near: Counter[str] = Counter()
        for noted in self._candidates(token, frozenset({"Organization"}), ""):
            name = noted.mention.name
            close = noted.turn >= self.turn - 1 or name in self.titles
            if close and (among is None or name.casefold() in among):
                near[name] += self.counts[name]
        if not near:
            return None
        best = near.most_common(1)[0][0]
        return next(n.mention for n in reversed(self.notes) if n.mention.name == best)

    def top_organization(self, among: frozenset[str] | None = None) -> Mention | None:
        """The organisation the text names most (the latest of those named as often)."""
        counts = {n: c for n, c in self.counts.items() if among is None or n.casefold() in among}
        if not counts:
            return None
        most = max(counts.values())
        return next(n.mention for n in reversed(self.notes) if counts.get(n.mention.name) == most)

    def _latest(
        self, token: Token, types: frozenset[str], other_than: str = "", first_names: bool = False
    ) -> Mention | None:
        """The latest mention of `types` before `token`; for a subject pronoun, the
        latest that was a subject too, when there is one ("Corran no longer owns a
        vessel; it charters boats from ...": Corran, not the vessel's buyer)."""
        found = list(self._candidates(token, types, other_than, first_names))
        if token.dep_ in ("nsubj", "nsubjpass"):
            subject = next((n for n in found if n.verb is not None), None)
            if subject is not None:
                return subject.mention
        return found[0].mention if found else None

    def _candidates(
        self, token: Token, types: frozenset[str], other_than: str, first_names: bool = False
    ) -> Iterator[Noted]:
        governor = token.head.head.i if token.dep_ == "pobj" else token.head.i
        for noted in reversed(self.notes):
            if noted.turn < self.turn - self.reach:
                return
            if noted.turn == self.turn and noted.position >= token.i:
                continue
            name = noted.mention.name
            kind = noted.mention.entity_type
            # A first name NER took for an organisation ("Ines") can still be she.
            first_name = first_names and kind == "Organization" and " " not in name
            if (
                (kind not in types and not first_name)
                or name in self.speakers
                or name == other_than
            ):
                continue
            if noted.turn == self.turn and noted.verb == governor:
                continue  # the same verb's subject: "Lund replaced her" is not Lund
            yield noted
