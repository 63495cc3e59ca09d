"""Facts as the reader writes them: once per episode, their endpoints typed by the
relation, and ended in place when the episode ends what it began."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING

from kgapp.graph.ingest.offline.dating import Dating
from kgapp.graph.ingest.offline.entities import Entities, Mention
from kgapp.graph.ingest.offline.mentions import MentionReader
from kgapp.graph.ingest.offline.vocabulary import (
    ROLES,
)
from kgapp.graph.llm.prompts.extract import (
    ExtractedFact,
)
from kgapp.graph.ontology import DEFAULT_ONTOLOGY

if TYPE_CHECKING:
    from spacy.tokens import Doc


class FactRecorder(MentionReader):
    """The entities and facts of one episode so far."""

    def __init__(
        self,
        reference_time: datetime,
        speakers: list[str],
        docs: list[Doc],
        modifier_words: frozenset[str],
    ) -> None:
        super().__init__(reference_time, speakers, docs, modifier_words)
        self.entities = Entities()
        self.facts: list[ExtractedFact] = []
        self.seen: set[tuple[str, str, str]] = set()
        self.dating = Dating(reference_time)
        # (subject, folded relation, object) -> index in facts; positions held, in order.
        self.opened: dict[tuple[str, str, str], int] = {}
        self.held: dict[str, list[tuple[str, str, Mention]]] = {}
        self.unnamed_kin: list[tuple[ExtractedFact, Mention, str]] = []
        for speaker in speakers:
            self.entities.add(speaker, "Person", 0, fixed=True)
            self.entities.describe(speaker, f"{speaker} is a participant of the conversation.")

    def _record(
        self,
        subject: Mention,
        relation: str,
        obj: Mention,
        sentence: str,
        when: datetime | None,
        *,
        ended: bool = False,
        until: datetime | None = None,
    ) -> None:
        """A fact, once per episode: begun at `when` (and over at `until`), or,
        `ended`, over by then."""
        key = (subject.name.casefold(), relation, obj.name.casefold())
        if key in self.seen:
            return
        self.seen.add(key)
        folded = DEFAULT_ONTOLOGY.relation(relation)
        if folded == "LIVES_IN" and subject.named and subject.entity_type == "Organization":
            relation = folded = "LOCATED_IN"  # "the firm moved to Leeds": where it is
        subject_type, object_type = ROLES.get(folded, (None, None))
        if _contradicts(subject, subject_type) or _contradicts(obj, object_type):
            return  # "the festival lives in", "works at Copenhagen": a misread clause
        if folded == "LIVES_IN" and not obj.named:
            return  # "moved to the Utrecht office", "a bigger flat": no place of the graph
        if folded == "IS_A" and obj.named:
            return  # a kind is no name: "Tagus Digital is Fergus's" is a misread clause
        self._add_endpoint(subject, subject_type, sentence)
        self._add_endpoint(obj, object_type, sentence)
        self.opened[(key[0], folded, key[2])] = len(self.facts)
        self.facts.append(
            ExtractedFact(
                source=subject.name,
                relation=relation,
                target=obj.name,
                fact=sentence[:1000],
                edge_type="temporal" if when or ended else "semantic",
                confidence=0.6 if subject.weak or obj.weak else 0.8,
                valid_at=None if ended else (when.isoformat() if when else None),
                invalid_at=_end(when, until, self.reference_time, ended),
            )
        )

    def _close(self, subject: Mention, relation: str, obj: Mention, when: datetime | None) -> bool:
        """End a fact this episode has begun ("joined Acme in 2020 ... left it in 2023");
        False when there is none."""
        key = (subject.name.casefold(), DEFAULT_ONTOLOGY.relation(relation), obj.name.casefold())
        index = self.opened.get(key)
        if index is None or self.facts[index].invalid_at is not None:
            return False
        fact = self.facts[index]
        end = (when or self.reference_time).isoformat()
        if fact.valid_at is not None and fact.valid_at >= end:
            return False
        self.facts[index] = fact.model_copy(update={"invalid_at": end, "edge_type": "temporal"})
        return True

    def _add_endpoint(self, mention: Mention, role_type: str | None, sentence: str) -> None:
        entity_type = mention.entity_type
        # A name's guessed type gives way to the relation's; a noun phrase never becomes
        # a Person, nor a person's relative anything else.
        if role_type and (mention.named or "Person" not in (role_type, entity_type)):
            entity_type = role_type
        self.entities.add(mention.name, entity_type, 1)
        self.entities.describe(mention.name, sentence)


def _contradicts(mention: Mention, role_type: str | None) -> bool:
    """A named thing that cannot take this part: an event or a place where the relation
    wants a person ("the festival lives in"). Between person and organisation the name
    takes the relation's type: NER mistakes one for the other both ways ("joined Door
    Dash", "Alice" an organisation)."""
    if role_type != "Person" or not mention.named:
        return False
    return mention.entity_type in ("Event", "Location", "Product", "Document")


def _end(
    when: datetime | None, until: datetime | None, reference: datetime, ended: bool
) -> str | None:
    if ended:
        return (when or reference).isoformat()
    if until is not None and (when is None or until > when):
        return until.isoformat()
    return None
