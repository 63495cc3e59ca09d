"""The reader: the parsed turns of one episode read into entities and facts. Mentions
are `mentions.MentionReader`'s; the facts, clause by clause, are here."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from datetime import datetime
from typing import TYPE_CHECKING

from kgapp.graph.ingest.offline.dating import Dating, vague_past
from kgapp.graph.ingest.offline.entities import Entities, Mention
from kgapp.graph.ingest.offline.mentions import MentionReader
from kgapp.graph.ingest.offline.phrases import modifiers, phrase_tokens, specific
from kgapp.graph.ingest.offline.roles import (
    EMPLOYMENT,
    Role,
    predecessor,
    role_of,
    role_sentence,
    sited,
    stated_role,
    successor,
)
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
    no_longer,
    object_relative,
    objects,
    subjects_of,
    verb_relation,
)
from kgapp.graph.ingest.offline.turns import Turn
from kgapp.graph.ingest.offline.vocabulary import (
    ACTIVITY_VERBS,
    AMOUNTS,
    ENDINGS,
    GROUP_HEADS,
    LIGHT_VERBS,
    PERSONAL_VERBS,
    RELATION_VERBS,
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

if TYPE_CHECKING:
    from spacy.tokens import Doc, Token


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
        for span in doc.ents:
            named = self._named(span)
            if named is not None:
                self.entities.add(named.name, named.entity_type, 2)
                self.focus.note(span.root, named)
        if turn.heading:
            return
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
        relation = relation_name(f"{root.lemma_}_of")
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
        if not subjects or self._position(verb, subjects[0]):
            return
        if future(verb) and not all(s.speaker_pronoun for s in subjects):
            return  # a prediction, or someone else's plan: "you'll love Lisbon"
        places = sited(verb)
        if places:
            self._sites(verb, subjects, places)
        for relation, target, pieces in self._predicates(verb):
            if target in places:
                continue
            for subject in subjects:
                self._fact(verb, subject, relation, target, pieces)

    # --- positions and sites (roles.py)

    def _when(self, verb: Token) -> datetime | None:
        named = self.dating.clause(clause_text(verb), future=future(verb))
        return named.start if named else None

    def _position(self, verb: Token, holder: Mention) -> bool:
        """A clause about a position held (roles.py): True when it said nothing else."""
        stated = stated_role(verb)
        if stated is None:
            return False
        if holder.entity_type != "Person" or not (holder.named or holder.speaker_pronoun):
            return True  # "the CEO left", "the festival moved": no one's position
        how, role = stated
        when = self._when(verb)
        if how == "succeed":
            self._succession(verb, holder, role, when)
        elif how == "end":
            held = self._held(holder, role, ending=True)
            if held is not None:
                self._position_fact(holder, *held, when, ended=True)
        else:
            organization = self._organization(role.organization)
            if organization is not None:
                self._position_fact(holder, role.relation, role.words, organization, when)
            return verb.lemma_.lower() in ("be", "become", "appoint", "name", "elect", "make")
        return True

    def _succession(self, verb: Token, holder: Mention, role: Role, when: datetime | None) -> None:
        passive = any(c.dep_ == "auxpass" for c in verb.children)
        other = successor(verb) if passive else predecessor(verb)
        second = self._mention(other) if other is not None else None
        if second is not None and other is not None and second.name == holder.name:
            second = self.focus.pronoun(other, other_than=holder.name)
        if second is None or second.entity_type != "Person":
            return
        before, after = (holder, second) if passive else (second, holder)
        held = self._held(before, role, ending=False)
        if held is not None:
            self._position_fact(before, *held, when, ended=True)
            self._position_fact(after, *held, when)

    def _held(
        self, holder: Mention, role: Role, *, ending: bool
    ) -> tuple[str, str, Mention] | None:
        """The position `role` names, else the holder's last one read, else (for an
        ending) their employment at the organisation in focus."""
        if role.relation:
            organization = self._organization(role.organization)
            return (role.relation, role.words, organization) if organization else None
        held = self.held.get(holder.name.casefold())
        if held:
            return held[-1]
        top = self.focus.top_organization()
        return (EMPLOYMENT, "", top) if ending and top is not None else None

    def _organization(self, token: Token | None) -> Mention | None:
        if token is None:
            return self.focus.top_organization()
        found = self._mention(token)
        if found is None or not found.named or role_of(token) is not None:
            return None
        if found.entity_type not in ("Organization", "Entity"):
            return None
        return replace(found, entity_type="Organization")

    def _position_fact(
        self,
        holder: Mention,
        relation: str,
        words: str,
        organization: Mention,
        when: datetime | None,
        *,
        ended: bool = False,
    ) -> None:
        if ended and self._close(holder, relation, organization, when):
            return
        if not ended:
            self.held.setdefault(holder.name.casefold(), []).append((relation, words, organization))
        sentence = (
            role_sentence(holder, words, organization, ended)
            if words
            else f"{holder.name} {'worked' if ended else 'works'} at {organization.name}."
        )
        self._record(holder, relation, organization, sentence, when, ended=ended)

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
        if obj is None or obj.name.casefold() == subject.name.casefold() or role_of(target):
            return
        if obj.speaker_pronoun and lemma_of(verb) not in PERSONAL_VERBS:
            return  # "tell you", "see you", "thank you": talk, not facts
        if any(c.dep_ == "det" and c.lower_ == "no" for c in target.children):
            return
        if not self._says_something(verb, subject, obj):
            return
        name = relation_name(relation)
        if name == "JOIN" and not (obj.named and obj.entity_type in ("Organization", "Entity")):
            # Joining a class or a club is not employment (JOIN folds onto WORKS_AT).
            name = "PARTICIPATED_IN" if obj.entity_type == "Event" else "MEMBER_OF"
        ending = _ended(name, obj, target) or (name if no_longer(verb) else None)
        when = self._when(verb)
        if ending == EMPLOYMENT:  # leaving a job ends the positions held there
            for relation, _, place in self.held.get(subject.name.casefold(), []):
                if place.name == obj.name:
                    self._close(subject, relation, obj, when)
        if ending and self._close(subject, ending, obj, when):
            return
        sentence = fact_sentence(verb, subject, obj, target, pieces, self.turn)
        self._record(subject, ending or name, obj, sentence, when, ended=bool(ending))

    def _says_something(self, verb: Token, subject: Mention, obj: Mention) -> bool:
        """Prose: a fact joins two named things by a verb of a lasting relation
        (RELATION_VERBS); narration ("thanked", "rang") and descriptions are no facts.
        Conversation: a thing not named is a specific topic ("pottery class", not
        "mix"), reached by a verb of relation or of what people do (ACTIVITY_VERBS)."""
        lemma = lemma_of(verb)
        if not self.speakers:
            return subject.named and obj.named and lemma in RELATION_VERBS | {"be"}
        if obj.named or obj.speaker_pronoun:
            return True
        return specific(obj.name) and lemma in RELATION_VERBS | ACTIVITY_VERBS | {"be"}

    def _sites(self, verb: Token, subjects: list[Mention], places: list[Token]) -> None:
        """ "founded Acme in Bergen": Acme LOCATED_IN Bergen."""
        direct = [m for c in verb.children if c.dep_ == "dobj" and (m := self._mention(c))]
        sited = [m for m in [*direct, *subjects] if m.entity_type == "Organization"][:1]
        relation = "HEADQUARTERED_IN" if verb.lemma_.lower() == "headquarter" else "LOCATED_IN"
        for organization in sited:
            for token in places:
                place = self._mention(token)
                if place is not None and place.entity_type in ("Location", "Entity"):
                    sentence = f"{organization.name} is in {place.name}."
                    self._record(organization, relation, place, sentence, self._when(verb))

    def _record(
        self,
        subject: Mention,
        relation: str,
        obj: Mention,
        sentence: str,
        when: datetime | None,
        *,
        ended: bool = False,
    ) -> None:
        """A fact, once per episode: begun at `when`, or, `ended`, over by then."""
        key = (subject.name.casefold(), relation, obj.name.casefold())
        if key in self.seen:
            return
        self.seen.add(key)
        folded = DEFAULT_ONTOLOGY.relation(relation)
        subject_type, object_type = ROLES.get(folded, (None, None))
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
                invalid_at=(when or self.reference_time).isoformat() if ended else None,
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


def _ended(relation: str, obj: Mention, target: Token) -> str | None:
    """The relation a leaving verb ends, by what is left: a club's membership, a
    company's job, a city's residence; None for any other verb."""
    ends = ENDINGS.get(relation)
    if ends is None:
        return None
    if obj.entity_type == "Organization" and target.lemma_.lower() in GROUP_HEADS:
        return "MEMBER_OF"
    return ends.get(obj.entity_type) or ends.get("*")
