"""The reader: the parsed turns of one episode read into entities and facts. Mentions
are `mentions.MentionReader`'s; the facts, clause by clause, are here."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime
from typing import TYPE_CHECKING

from kgapp.graph.ingest.offline.entities import Entities, Mention
from kgapp.graph.ingest.offline.mentions import MentionReader
from kgapp.graph.ingest.offline.phrases import modifiers, phrase_tokens
from kgapp.graph.ingest.offline.sentence import fact_sentence
from kgapp.graph.ingest.offline.syntax import (
    asserted,
    clause_text,
    copula,
    dropped_first_person,
    future,
    is_let,
    is_predicate,
    is_question,
    lemma_of,
    object_relative,
    objects,
    subjects_of,
    verb_relation,
)
from kgapp.graph.ingest.offline.turns import Turn
from kgapp.graph.ingest.offline.vocabulary import (
    AMOUNTS,
    ENDINGS,
    GROUP_HEADS,
    LIGHT_VERBS,
    PERSONAL_VERBS,
    RELATIONAL,
    ROLES,
)
from kgapp.graph.llm.prompts.extract import (
    MAX_ENTITIES,
    MAX_FACTS,
    ExtractedFact,
    Extraction,
)
from kgapp.graph.ontology import DEFAULT_ONTOLOGY
from kgapp.graph.text import relation_name
from kgapp.graph.time import resolve_date

if TYPE_CHECKING:
    from spacy.tokens import Doc, Token

# A noun phrase that takes part in no fact is an entity when the episode names it this
# often: a topic people come back to ("the dance studio"), not a figure of speech said
# once ("a wild ride", "a balancing act"), which would be a dot with no edge.
PHRASE_MENTIONS = 2


class Reader(MentionReader):
    """Reads the parsed turns of one episode into entities and facts."""

    def __init__(
        self,
        reference_time: datetime,
        speakers: list[str],
        docs: list[Doc],
        modifier_words: frozenset[str],
    ) -> None:
        super().__init__(reference_time, speakers, docs, modifier_words)
        self.entities = Entities()
        # Noun phrases in no fact: an entity only when the episode comes back to them.
        self.phrases: dict[str, list[Mention]] = {}
        self.facts: list[ExtractedFact] = []
        self.seen: set[tuple[str, str, str]] = set()
        for speaker in speakers:
            self.entities.add(speaker, "Person", 0, fixed=True)
            self.entities.describe(speaker, f"{speaker} is a participant of the conversation.")

    def extraction(self) -> Extraction:
        for mentions in self.phrases.values():
            if len(mentions) >= PHRASE_MENTIONS:
                self.entities.add(mentions[0].name, mentions[0].entity_type, 3)
        return Extraction(
            entities=self.entities.ranked()[:MAX_ENTITIES], facts=self.facts[:MAX_FACTS]
        )

    def read(self, doc: Doc, turn: Turn) -> None:
        self.turn = turn
        for span in doc.ents:
            named = self._named(span)
            if named is not None:
                self.entities.add(named.name, named.entity_type, 2)
        for chunk in doc.noun_chunks:
            mention = self._phrase(chunk.root)
            if mention is not None and " " in mention.name:
                self.phrases.setdefault(mention.name.casefold(), []).append(mention)
            if mention is not None and chunk.root.lower_ in RELATIONAL:
                self._kinship(chunk.root, mention)
        for sentence in doc.sents:
            if is_question(sentence):
                continue
            for token in sentence:
                if is_predicate(token):
                    self._clause(token)

    # --- facts

    def _kinship(self, root: Token, person: Mention) -> None:
        """ "my friend Mel": Mel FRIEND_OF the speaker; "my mom": the speaker's mom
        MOM_OF the speaker (so that she hangs off the speaker in the graph)."""
        owner = self._owner(root)
        if owner is None or owner.casefold() == person.name.casefold():
            return
        relation = relation_name(f"{root.lemma_}_of")
        key = (person.name.casefold(), relation, owner.casefold())
        if key in self.seen:
            return
        self.seen.add(key)
        word = root.text.lower()
        sentence = f"{person.name} is {owner}'s {word}."
        if person.name.startswith(f"{owner}'s "):
            sentence = f"{owner} has {word}." if root.tag_ == "NNS" else f"{owner} has a {word}."
        self._add_endpoint(person, "Person", sentence)
        self._add_endpoint(Mention(owner, "Person", owner), "Person", sentence)
        self.facts.append(
            ExtractedFact(
                source=person.name,
                relation=relation,
                target=owner,
                fact=sentence,
                edge_type="semantic",
                confidence=0.8,
                valid_at=None,
                invalid_at=None,
            )
        )

    def _clause(self, verb: Token) -> None:
        if not asserted(verb) or is_let(verb) or object_relative(verb):
            return
        subjects = [m for t in subjects_of(verb) if (m := self._agent(t)) is not None]
        if not subjects and dropped_first_person(verb) and self.turn.speaker:
            speaker = self.turn.speaker
            subjects = [Mention(speaker, "Person", speaker, speaker_pronoun=True, weak=True)]
        if not subjects:
            return
        for relation, target, pieces in self._predicates(verb):
            for subject in subjects:
                self._fact(verb, subject, relation, target, pieces)

    def _agent(self, token: Token) -> Mention | None:
        """The subject `token` as an entity that can do or be something: a person, a
        name, an organization, place or event; not an idea ("dance is my passion")."""
        mention = self._mention(token)
        if mention is None or (mention.entity_type == "Concept" and not mention.named):
            return None
        return mention

    def _predicates(self, verb: Token) -> Iterator[tuple[str, Token, list[Token]]]:
        """(relation, object token, words of the sentence) of each object of `verb`."""
        if verb.lemma_ == "be":
            yield from copula(verb)
            return
        passive = any(c.dep_ == "auxpass" for c in verb.children)
        head = verb.lower_ if passive and verb.tag_ == "VBN" else verb_relation(verb)
        if not head:
            return
        direct = [c for c in verb.children if c.dep_ in ("dobj", "obj")]
        if any(d.pos_ == "PRON" for d in direct) and lemma_of(verb) not in PERSONAL_VERBS:
            # "what I did with it", "keep you in the loop": an unknown object, or talk.
            return
        said = [t for d in direct for t in phrase_tokens(d)]
        word = self._object_word(direct)
        verb_part = f"{head}_{word}" if word else head
        found = list(objects(verb))
        # "took my daughter to the aquarium": with a light verb, the place is the fact.
        light = lemma_of(verb) in LIGHT_VERBS and any(f.suffix for f in found)
        for each in found:
            if each.suffix:
                yield f"{verb_part}_{each.suffix}", each.token, [*said, *each.pieces]
            elif not passive and not light:
                yield head, each.token, []

    def _object_word(self, direct: list[Token]) -> str | None:
        """The direct object that joins a prepositional relation ("lost my job at"
        LOSE_JOB_AT, "took a trip to" TAKE_TRIP_TO): one common noun, not a person or a
        name, nor an amount ("put in a lot on")."""
        for noun in direct[:1]:
            if noun.pos_ != "NOUN" or noun.lemma_.lower() in AMOUNTS or modifiers(noun):
                return None
            mention = self._mention(noun)
            if mention is None or (mention.entity_type != "Person" and not mention.named):
                return noun.lemma_.lower()
        return None

    def _fact(
        self, verb: Token, subject: Mention, relation: str, target: Token, pieces: list[Token]
    ) -> None:
        obj = self._mention(target)
        if obj is None or obj.name.casefold() == subject.name.casefold():
            return
        if obj.speaker_pronoun and lemma_of(verb) not in PERSONAL_VERBS:
            return  # "tell you", "see you", "thank you": talk, not facts
        if any(c.dep_ == "det" and c.lower_ == "no" for c in target.children):
            return
        name = relation_name(relation)
        if name == "JOIN" and not (obj.named and obj.entity_type == "Organization"):
            # Joining a class or a club is not employment (JOIN folds onto WORKS_AT).
            name = "PARTICIPATED_IN" if obj.entity_type == "Event" else "MEMBER_OF"
        folded = DEFAULT_ONTOLOGY.relation(name)
        ending = _ended(name, obj, target)
        state = ending or folded
        subject_type, object_type = ROLES.get(DEFAULT_ONTOLOGY.relation(state), (None, None))
        key = (subject.name.casefold(), ending or name, obj.name.casefold())
        if key in self.seen:
            return
        self.seen.add(key)
        sentence = fact_sentence(verb, subject, obj, target, pieces, self.turn)
        when = resolve_date(clause_text(verb), self.reference_time, future=future(verb))
        self._add_endpoint(subject, subject_type, sentence)
        self._add_endpoint(obj, object_type, sentence)
        self.facts.append(
            ExtractedFact(
                source=subject.name,
                relation=ending or name,
                target=obj.name,
                fact=sentence[:1000],
                edge_type="temporal" if when or ending else "semantic",
                confidence=0.6 if subject.weak or obj.weak else 0.8,
                valid_at=None if ending else (when.isoformat() if when else None),
                invalid_at=(when or self.reference_time).isoformat() if ending else None,
            )
        )

    def _add_endpoint(self, mention: Mention, role_type: str | None, sentence: str) -> None:
        entity_type = mention.entity_type
        # A name's guessed type gives way to the relation's; a noun phrase never becomes
        # a Person, nor a person's relative anything else.
        if role_type and (mention.named or "Person" not in (role_type, entity_type)):
            entity_type = role_type
        self.entities.add(mention.name, entity_type, 1)
        self.entities.describe(mention.name, sentence)


def _ended(relation: str, obj: Mention, target: Token) -> str | None:
    """The relation a leaving verb ends, by what is left: a club's membership, a
    company's job, a city's residence; None for any other verb."""
    ends = ENDINGS.get(relation)
    if ends is None:
        return None
    if obj.entity_type == "Organization" and target.lemma_.lower() in GROUP_HEADS:
        return "MEMBER_OF"
    return ends.get(obj.entity_type) or ends.get("*")
