"""The reader: the parsed turns of one episode read into entities and facts, clause by
clause. Mentions are `mentions.MentionReader`'s, fact writing `record.FactRecorder`'s,
positions and sites `positions.PositionReader`'s."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from kgapp.graph.ingest.offline.dating import vague_past
from kgapp.graph.ingest.offline.entities import Mention
from kgapp.graph.ingest.offline.phrases import modifiers, phrase_tokens
from kgapp.graph.ingest.offline.positions import PositionReader
from kgapp.graph.ingest.offline.roles import (
    EMPLOYMENT,
    appointed,
    kin_relation,
    role_of,
    sited,
    successor,
)
from kgapp.graph.ingest.offline.sentence import fact_sentence
from kgapp.graph.ingest.offline.syntax import (
    asserted,
    copula,
    dropped_first_person,
    future,
    is_let,
    is_predicate,
    is_question,
    lemma_of,
    no_longer,
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
    ORGANIZATION_HEADS,
    PERSONAL_VERBS,
    PLACE_HEADS,
    RELATIONAL,
)
from kgapp.graph.llm.prompts.extract import (
    MAX_ENTITIES,
    MAX_FACTS,
    ExtractedFact,
    Extraction,
)
from kgapp.graph.resolution.canonical import relation_name

if TYPE_CHECKING:
    from spacy.tokens import Doc, Token


class Reader(PositionReader):
    """Reads the parsed turns of one episode into entities and facts."""

    def extraction(self) -> Extraction:
        for fact, person, owner in self.unnamed_kin:
            if person.name.casefold() in self.entities.found:
                self._kin(fact, person, owner)
        return Extraction(
            entities=self.entities.ranked()[:MAX_ENTITIES], facts=self.facts[:MAX_FACTS]
        )

    def read(self, doc: Doc, turn: Turn) -> None:
        self.turn = turn
        self.dating.enter(turn)
        self.focus.next_turn()
        names = [(span, named) for span in doc.ents if (named := self._named(span)) is not None]
        for span, named in names:
            if not turn.context:
                self.entities.add(named.name, named.entity_type, 2)
            self.focus.note(span.root, named, title=turn.heading)
        for chunk in doc.noun_chunks:  # names NER missed ("Ivo Rask joined the band")
            root = chunk.root
            if root.pos_ == "PROPN" and not root.ent_type_:
                found = self._phrase(root)
                if found is not None and found.named:  # no entity until a fact needs it
                    self.focus.note(root, found, title=turn.heading)
        self.focus.settle()
        if turn.context:
            for sentence in doc.sents:
                self.dating.sentence(sentence)
            return
        if turn.heading:
            return
        for span, named in names:
            if not is_question(span.sent):
                self._appositions(span, named)
        for chunk in doc.noun_chunks:
            if chunk.root.lower_ not in RELATIONAL:
                continue  # a noun phrase is an entity only when a fact needs it
            mention = self._phrase(chunk.root)
            if mention is not None:
                self._kinship(chunk.root, mention)
        for sentence in doc.sents:
            self.dating.sentence(sentence)
            if is_question(sentence) or vague_past(sentence.text):
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
        relation = kin_relation(root.lemma_)
        key = (person.name.casefold(), relation, owner.casefold())
        if key in self.seen:
            return
        self.seen.add(key)
        word = root.text.lower()
        sentence = f"{person.name} is {owner}'s {word}."
        if person.name.startswith(f"{owner}'s "):
            sentence = f"{owner} has {word}." if root.tag_ == "NNS" else f"{owner} has a {word}."
        fact = ExtractedFact(
            source=person.name,
            relation=relation,
            target=owner,
            fact=sentence,
            edge_type="semantic",
            confidence=0.8,
            valid_at=None,
            invalid_at=None,
        )
        if person.named:
            self._kin(fact, person, owner)
        else:  # "Dana's dad is Dana's dad" says nothing until something else is said of him
            self.unnamed_kin.append((fact, person, owner))

    def _kin(self, fact: ExtractedFact, person: Mention, owner: str) -> None:
        self._add_endpoint(person, "Person", fact.fact)
        self._add_endpoint(Mention(owner, "Person", owner), "Person", fact.fact)
        self.facts.append(fact)

    def _clause(self, verb: Token) -> None:
        if not asserted(verb) or is_let(verb) or object_relative(verb):
            return
        subjects = [m for t in subjects_of(verb) if (m := self._agent(t)) is not None]
        if not subjects and dropped_first_person(verb) and self.turn.speaker:
            speaker = self.turn.speaker
            subjects = [Mention(speaker, "Person", speaker, speaker_pronoun=True, weak=True)]
        chosen = appointed(verb)  # "the members elected Tobias Rennard as chair"
        if not subjects and chosen is not None and (holder := self._mention(chosen)):
            self._position(verb, holder)
            return
        if not subjects or self._position(verb, subjects[0]):
            return
        if future(verb) and not all(s.speaker_pronoun for s in subjects):
            return  # a prediction, or someone else's plan: "you'll love Lisbon"
        places = sited(verb)
        if places:
            self._sites(verb, subjects, places)
        agent = successor(verb)
        if agent is not None:
            self._by(verb, agent, subjects)
            return
        for relation, target, pieces in self._predicates(verb):
            if target in places:
                continue
            for subject in subjects:
                self._fact(verb, subject, relation, target, pieces)

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
        if obj is None or obj.name.casefold() == subject.name.casefold() or role_of(target):
            return
        if obj.speaker_pronoun and lemma_of(verb) not in PERSONAL_VERBS:
            return  # "tell you", "see you", "thank you": talk, not facts
        if any(c.dep_ == "det" and c.lower_ == "no" for c in target.children):
            return
        if not self._says_something(verb, subject, obj, target):
            return
        group = obj.name.casefold() in self.groups or target.lemma_.lower() in GROUP_HEADS
        name = _joined(relation_name(relation), obj, group)
        ending = _ended(name, obj, group) or (name if no_longer(verb) else None)
        when, until = self._times(verb)
        if ending == EMPLOYMENT:  # leaving a job ends the positions held there
            for relation, _, place in self.held.get(subject.name.casefold(), []):
                if place.name == obj.name:
                    self._close(subject, relation, obj, when)
        if ending and self._close(subject, ending, obj, when):
            return
        sentence = fact_sentence(verb, subject, obj, target, pieces, self.turn)
        self._record(subject, ending or name, obj, sentence, when, ended=bool(ending), until=until)


def _ended(relation: str, obj: Mention, group: bool) -> str | None:
    """The relation a leaving verb ends, by what is left: a club's membership, a
    company's job, a city's residence; None for any other verb."""
    ends = ENDINGS.get(relation)
    if ends is None:
        return None
    if obj.entity_type in ("Organization", "Entity") and group:
        return "MEMBER_OF"
    return ends.get(obj.entity_type) or ends.get("*")


def _joined(name: str, obj: Mention, group: bool) -> str:
    """Relations named by what the verb means here: joining a class or a club is no
    employment (JOIN folds onto WORKS_AT); starting or teaching at a company is; "a band
    from Galway", "a city in Norway" say where a thing is."""
    company = obj.named and obj.entity_type in ("Organization", "Entity")
    if name == "JOIN" and (not company or group):
        return "PARTICIPATED_IN" if obj.entity_type == "Event" else "MEMBER_OF"
    if name in EMPLOYING and company:
        return "WORKS_AT"
    head, _, preposition = name.partition("_")
    kind = head.lower()
    placed = kind in ORGANIZATION_HEADS | GROUP_HEADS | PLACE_HEADS
    if placed and preposition in ("FROM", "IN", "BASED_IN") and obj.entity_type == "Location":
        return "LOCATED_IN"
    return name


EMPLOYING = frozenset(
    {"START_AT", "BEGIN_AT", "START_WORK_AT", "START_JOB_AT", "TEACH_AT", "LECTURE_AT"}
)
