"""The clauses read by `roles`: positions held, where organisations are, and the
passive "founded by"; and which clauses say something at all."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime
from typing import TYPE_CHECKING

from kgapp.graph.ingest.offline.entities import Mention
from kgapp.graph.ingest.offline.phrases import bare, specific, topic
from kgapp.graph.ingest.offline.record import FactRecorder
from kgapp.graph.ingest.offline.roles import (
    EMPLOYMENT,
    LEADING,
    SITING,
    Role,
    appointed,
    described_places,
    former,
    hosts,
    kin_relation,
    predecessor,
    role_of,
    role_sentence,
    stated_role,
    successor,
)
from kgapp.graph.ingest.offline.syntax import (
    clause_text,
    future,
    lemma_of,
    no_longer,
    past,
    topical,
    verb_relation,
    with_conjuncts,
)
from kgapp.graph.ingest.offline.vocabulary import (
    EMPTY_VERBS,
    PLACING,
    POSTS,
    RELATION_VERBS,
    RELATIONAL,
    ROLE_NOUNS,
    TALK_VERBS,
)
from kgapp.graph.resolution.canonical import relation_name

if TYPE_CHECKING:
    from spacy.tokens import Span, Token


# Verbs that state nothing but the position: "became CEO", "was appointed CEO"; and
# verbs of moving to a new employer in a position ("went to Acme as VP").
BECOMING_ONLY = ("be", "become", "appoint", "name", "elect", "make")
MOVING = ("go", "move", "come", "switch", "return")


class PositionReader(FactRecorder):
    """Positions, sites and agents (roles.py), and what a fact must say."""

    def _agent(self, token: Token) -> Mention | None:
        """The subject `token` as an entity that can do or be something: a person, a
        name, an organization, place or event; not an idea ("dance is my passion")."""
        mention = self._mention(token)
        if mention is None or (mention.entity_type == "Concept" and not mention.named):
            return None
        if token.lemma_.lower() in ROLE_NOUNS:
            return None  # "the CEO left": a position, not a name
        return mention

    def _says_something(
        self, verb: Token, subject: Mention, obj: Mention, target: Token | None = None
    ) -> bool:
        """Prose: a fact joins two named things by a verb of a lasting relation
        (RELATION_VERBS); narration ("thanked", "rang") and descriptions are no facts.
        Conversation: a thing not named is a specific topic ("pottery class", not
        "mix"), reached by a verb that says more than having or feeling (EMPTY_VERBS)."""
        lemma = lemma_of(verb)
        if not self.speakers:
            return subject.named and obj.named and lemma in RELATION_VERBS | {"be"}
        if obj.named and lemma in TALK_VERBS:
            return False  # "will ring Lars", "heard of Lars": talk, not a fact
        if lemma not in RELATION_VERBS and _placed(target):
            return False  # "cried in the supermarket", "found it in Halifax": once
        if lemma in EMPTY_VERBS and not (obj.named and _post(verb)):
            return False  # "felt a mix", "had yoga", "got the photo"; not "got a job at"
        if obj.speaker_pronoun or obj.named:
            return True
        if not specific(obj.name) and not (topical(verb) and topic(obj.name) and bare(target)):
            return False  # "loves dance" names a topic; "loves the smell" does not
        if lemma == "be":  # "Tilly is at the boathouse": where someone is now
            return not any(c.lower_ in ("at", "in") for c in verb.children)
        return True

    def _when(self, verb: Token) -> datetime | None:
        return self._times(verb)[0]

    def _times(self, verb: Token) -> tuple[datetime | None, datetime | None]:
        """When the clause's fact began, and the end it states ("until 2023")."""
        text = clause_text(verb)
        began = self.dating.clause(text, future=future(verb), past=past(verb))
        ends = self.dating.until(text)
        return (began.start if began else None), (ends.start if ends else None)

    def _position(self, verb: Token, holder: Mention) -> bool:
        """A clause about a position held (roles.py): True when it said nothing else."""
        stated = stated_role(verb)
        if stated is None:
            return False
        chosen = appointed(verb)  # "the members elected Tobias Rennard as chair"
        if chosen is not None:
            holder = self._mention(chosen) or holder
        if holder.entity_type not in ("Person", "Entity") or not (
            holder.named or holder.speaker_pronoun
        ):
            return True  # "the CEO left", "the festival moved": no one's position
        how, role = stated
        when, until = self._times(verb)
        if how == "succeed":
            self._succession(verb, holder, role, when)
        elif how == "end":
            held = self._held(holder, role, ending=True)
            if held is not None:
                self._position_fact(holder, *held, when, ended=True)
        else:
            organization = self._organization(role.organization)
            if organization is not None:
                ended = no_longer(verb)
                self._position_fact(
                    holder, role.relation, role.words, organization, when, ended=ended, until=until
                )
                if verb.lemma_.lower() in MOVING:  # "is going to Helix Health as VP"
                    sentence = f"{holder.name} works at {organization.name}."
                    self._record(holder, EMPLOYMENT, organization, sentence, when, until=until)
            return verb.lemma_.lower() in (*BECOMING_ONLY, *LEADING, *MOVING)
        return True

    def _succession(self, verb: Token, holder: Mention, role: Role, when: datetime | None) -> None:
        passive = any(c.dep_ == "auxpass" for c in verb.children)
        other = successor(verb) if passive else predecessor(verb)
        second = self._mention(other) if other is not None else None
        if second is not None and other is not None and second.name == holder.name:
            second = self.focus.pronoun(other, other_than=holder.name)
        if second is None and role.relation and not passive:  # "takes over as head of X"
            organization = self._organization(role.organization)
            if organization is not None:
                self._position_fact(holder, role.relation, role.words, organization, when)
            return
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
        if not ending or top is None:
            return None
        return ("MEMBER_OF" if top.name.casefold() in self.groups else EMPLOYMENT, "", top)

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
        until: datetime | None = None,
    ) -> None:
        held = self.held.setdefault(holder.name.casefold(), [])
        if (relation, words, organization) not in held:  # what a successor takes over
            held.append((relation, words, organization))
        if ended and self._close(holder, relation, organization, when):
            return
        sentence = (
            role_sentence(holder, words, organization, ended)
            if words
            else f"{holder.name} {'worked' if ended else 'works'} at {organization.name}."
        )
        self._record(holder, relation, organization, sentence, when, ended=ended, until=until)

    def _by(self, verb: Token, agent: Token, patients: list[Mention]) -> None:
        """ "X was founded by Y and Z": Y FOUND X, Z FOUND X."""
        relation = relation_name(verb_relation(verb) or lemma_of(verb))
        agents = [m for t in with_conjuncts(agent) if (m := self._agent(t)) is not None]
        for subject in agents:
            for patient in patients:
                if patient.name.casefold() == subject.name.casefold():
                    continue
                if self._says_something(verb, subject, patient):
                    sentence = f"{patient.text} was {verb.text} by {subject.text}."
                    self._record(subject, relation, patient, sentence, self._when(verb))

    def _sites(self, verb: Token, subjects: list[Mention], places: list[Token]) -> None:
        """ "founded Acme in Bergen": Acme LOCATED_IN Bergen."""
        direct = [m for c in verb.children if c.dep_ == "dobj" and (m := self._mention(c))]
        if verb.lemma_.lower() not in SITING:  # "studied at X in Y": X is in Y
            direct, subjects = [m for c in hosts(verb) if (m := self._mention(c))], []
        sited = [m for m in [*direct, *subjects] if m.entity_type in ("Organization", "Entity")]
        sited = [m for m in sited if m.named][:1]
        relation = "HEADQUARTERED_IN" if verb.lemma_.lower() == "headquarter" else "LOCATED_IN"
        when = self._when(verb) if verb.lemma_.lower() in SITING else None
        for organization in sited:
            for token in places:
                place = self._mention(token)
                if place is not None and place.entity_type in ("Location", "Entity"):
                    sentence = f"{organization.name} is in {place.name}."
                    self._record(organization, relation, place, sentence, when)

    # --- appositions: "Westsea Reefers, a refrigerated-cargo operator based in Tromsø"

    def _appositions(self, span: Span, named: Mention) -> None:
        """What a noun in apposition says of the name beside it: where it is ("a Leeds
        games developer", "a co-working building in Holbeck", "an operator based in
        Tromsø"), the position held ("previously finance chief at Hurtig Bunkers"), whose
        relative it is ("Tor's daughter, Silje Haugland")."""
        root = span.root
        nouns = [c for c in root.children if c.dep_ == "appos" and c.pos_ == "NOUN"]
        if root.dep_ == "appos" and root.head.pos_ == "NOUN":
            nouns.append(root.head)
        for noun in nouns:
            for token in described_places(noun):
                place = self._mention(token)
                if place is not None and place.named and place.entity_type == "Location":
                    sentence = f"{named.name} is in {place.name}."
                    self._record(named, "LOCATED_IN", place, sentence, None)
            if named.entity_type == "Person":
                self._described_role(noun, named)

    def _described_role(self, noun: Token, person: Mention) -> None:
        role = role_of(noun)
        if role is not None and role.organization is not None:
            organization = self._organization(role.organization)
            if organization is not None:
                ended = former(noun)
                self._position_fact(
                    person, role.relation, role.words, organization, None, ended=ended
                )
            return
        owner = next((c for c in noun.children if c.dep_ == "poss"), None)
        kin = self._mention(owner) if owner is not None and noun.lower_ in RELATIONAL else None
        if kin is not None and kin.named and kin.entity_type == "Person":
            sentence = f"{person.name} is {kin.name}'s {noun.lower_}."
            self._record(person, kin_relation(noun.lemma_), kin, sentence, None)


def _placed(target: Token | None) -> bool:
    return target is not None and target.head.dep_ == "prep" and target.head.lower_ in PLACING


def _post(verb: Token) -> bool:
    """ "got a job at X", "took a position with X"."""
    return any(c.dep_ == "dobj" and c.lemma_.lower() in POSTS for c in verb.children)
