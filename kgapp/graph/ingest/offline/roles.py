"""Positions held in organisations, where they begin and end, and where organisations
are: the clauses that the generic subject-verb-object reading gets wrong.

- "She became its first chief executive", "was appointed CEO of Acme", "joined Acme as
  head of sales", "served as chair": the holder's role at the organisation begins
  (CEO_OF, HEAD_OF_SALES_AT, CHAIR_OF); without "of X" or "its", at the organisation
  the text is about.
- "stepped down as CEO", "resigned", "retired", "left the role": it ends. Without a
  role named, the holder's last role read in the episode ends, else their employment at
  the organisation in focus.
- "Y replaced X as CEO", "X was replaced by Y", "Y succeeded X", "Y took over from X":
  X's role ends and Y's begins, at the same moment. They are no facts of their own.
- "founded Acme in Bergen", "opened an office in Oslo", "is based in Leeds": the
  organisation is LOCATED_IN the place (not "FOUND_IN").
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from kgapp.graph.ingest.offline.entities import Mention
from kgapp.graph.ingest.offline.phrases import modifiers
from kgapp.graph.ingest.offline.vocabulary import ROLE_NOUNS
from kgapp.graph.resolution.canonical import relation_name

if TYPE_CHECKING:
    from spacy.tokens import Token

BECOMING = frozenset(
    {"become", "be", "appoint", "name", "elect", "make", "promote", "hire", "serve"}
)
ENDING = frozenset({"step", "resign", "retire", "quit", "leave", "depart"})
SUCCEEDING = frozenset({"replace", "succeed"})
SITING = frozenset({"found", "establish", "open", "base", "headquarter", "incorporate", "set"})
EMPLOYMENT = "WORKS_AT"
FORMER = frozenset({"former", "previous", "ex", "erstwhile"})
# Verbs of leading an organisation: the position they state.
LEADING = {
    "chair": "CHAIR_OF",
    "head": "HEAD_OF",
    "lead": "LEADS",
    "run": "LEADS",
    "manage": "LEADS",
    "direct": "LEADS",
    "captain": "CAPTAIN_OF",
    "coach": "COACH_OF",
}


@dataclass(frozen=True)
class Role:
    relation: str  # CEO_OF, CHAIR_OF, HEAD_OF_SALES_AT
    words: str  # as the fact sentence says it: "CEO", "head of sales"
    organization: Token | None  # "of Acme", "Acme's", "its"


def role_of(noun: Token) -> Role | None:
    """The position `noun` names, if it names one."""
    lemma = noun.lemma_.lower()
    if lemma not in ROLE_NOUNS or noun.pos_ not in ("NOUN", "PROPN"):
        return None
    before = [t for t in noun.lefts if t.dep_ in ("amod", "compound") and t.lower_ not in FORMER]
    words = [t.text for t in [*before, noun] if t.lower_ not in ("first", "new")]
    organization = next((c for c in noun.children if c.dep_ == "poss"), None)
    for prep in (c for c in noun.children if c.dep_ == "prep" and c.lower_ in ("of", "at")):
        target = next((c for c in prep.children if c.dep_ == "pobj"), None)
        if target is None:
            continue
        if target.pos_ == "PROPN" or target.ent_type_:
            organization = target
        else:
            words += [prep.text, *(t.text for t in modifiers(target)), target.text]
    text = " ".join(words)
    if text.lower() in ("ceo", "chief executive", "chief executive officer"):
        return Role("CEO_OF", "CEO", organization)
    suffix = "_AT" if " of " in text else "_OF"
    return Role(relation_name(text) + suffix, text, organization)


def stated_role(verb: Token) -> tuple[str, Role] | None:
    """(how, role) for a clause about a position: how is "start", "end" or "succeed"."""
    lemma = verb.lemma_.lower()
    for child in verb.children:
        role = None
        if child.dep_ in ("attr", "oprd") and lemma in BECOMING:
            role = role_of(child)
        elif child.dep_ == "prep" and child.lower_ in ("as", "to"):
            role = next((r for c in child.children if (r := role_of(c)) is not None), None)
        if role is not None:
            where = role.organization or _joined_organization(verb)
            return _how(verb), Role(role.relation, role.words, where)
    leading = LEADING.get(lemma)
    direct = next((c for c in verb.children if c.dep_ == "dobj"), None)
    if leading and direct is not None and (direct.pos_ == "PROPN" or direct.lower_ == "it"):
        return "start", Role(leading, lemma, direct)  # "chaired the Timber Council"
    if lemma in ENDING and not any(
        c.dep_ == "dobj" or (c.dep_ == "prep" and c.lower_ in ("from", "at", "with"))
        for c in verb.children
    ):
        return "end", Role("", "", None)
    if lemma in SUCCEEDING or (lemma == "take" and _particle(verb) == "over"):
        return "succeed", Role("", "", None)
    return None


def _joined_organization(verb: Token) -> Token | None:
    """ "joined Acme as CTO", "is going to Helix Health as VP": where the position is
    (not "elected Tobias as chair": there the object is who holds it)."""
    for child in verb.children if appointed(verb) is None else ():
        if child.dep_ == "dobj" and child.pos_ == "PROPN":
            return child
        if child.dep_ == "prep" and child.lower_ in ("to", "at"):
            found = next((c for c in child.children if c.dep_ == "pobj"), None)
            if found is not None and found.pos_ == "PROPN":
                return found
    return None


def _how(verb: Token) -> str:
    lemma = verb.lemma_.lower()
    if lemma in ENDING:
        return "end"
    if lemma in SUCCEEDING or (lemma == "take" and _particle(verb) == "over"):
        return "succeed"
    return "start"


def _particle(verb: Token) -> str:
    return next((c.lower_ for c in verb.children if c.dep_ in ("prt", "advmod")), "")


def predecessor(verb: Token) -> Token | None:
    """Whom the subject of "replaced", "succeeded", "took over from" follows."""
    passive = any(c.dep_ == "auxpass" for c in verb.children)
    for child in verb.children:
        if child.dep_ == "dobj" and not passive:
            return child
        if child.dep_ == "prep" and child.lower_ == "from":
            return next((c for c in child.children if c.dep_ == "pobj"), None)
    return None


def successor(verb: Token) -> Token | None:
    """ "X was replaced by Y": Y."""
    for child in verb.children:
        if child.dep_ == "agent":
            return next((c for c in child.children if c.dep_ == "pobj"), None)
    return None


def sited(verb: Token) -> list[Token]:
    """The places "founded ... in", "opened ... in", "based in" put an organisation in;
    with any verb, the place "in" an organisation named "at" it ("studied at the
    Danube School in Bucharest")."""
    if verb.lemma_.lower() not in SITING:
        named = hosts(verb)
        under = [c for h in named for c in h.children if c.dep_ == "prep" and c.lower_ == "in"]
        preps = [*_preps(verb, ("in",)), *under] if named else []
        return [o for p in preps for o in p.children if _place_like(o)]
    direct = [c for c in verb.children if c.dep_ == "dobj"]  # "founded Acme in Bergen"
    return [
        obj
        for prep in [*verb.children, *(c for d in direct for c in d.children)]
        if prep.dep_ == "prep" and prep.lower_ in ("in", "at")
        for obj in prep.children
        if obj.dep_ == "pobj"
        and (obj.ent_type_ or obj.pos_ == "PROPN")
        and obj.ent_type_ not in ("DATE", "TIME")
    ]


def hosts(verb: Token) -> list[Token]:
    """The named organisations "at" or "for" which a verb is done."""
    return [
        o
        for p in _preps(verb, ("at", "for", "with"))
        for o in p.children
        if o.dep_ == "pobj" and o.pos_ == "PROPN"
    ]


def _preps(verb: Token, words: tuple[str, ...]) -> list[Token]:
    return [c for c in verb.children if c.dep_ == "prep" and c.lower_ in words]


def _place_like(token: Token) -> bool:
    return token.dep_ == "pobj" and (
        token.ent_type_ in ("GPE", "LOC", "FAC") or token.pos_ == "PROPN"
    )


def role_sentence(holder: Mention, role: str, organization: Mention, ended: bool) -> str:
    verb = "was" if ended else "is"
    return f"{holder.name} {verb} {role} of {organization.name}."


def described_places(noun: Token) -> list[Token]:
    """The places a descriptive noun puts its thing in: a place name before it ("a
    Leeds games developer"), "in X" after it, or "based in X" ("an operator based in
    Tromsø")."""
    found = [
        c
        for c in noun.children
        if c.dep_ in ("compound", "nmod", "amod") and c.ent_type_ in ("GPE", "LOC") and c.i < noun.i
    ]
    for child in noun.children:
        if child.dep_ == "prep" and child.lower_ in ("in", "at"):
            found += [c for c in child.children if c.dep_ == "pobj"]
        elif child.dep_ == "acl" and child.lemma_.lower() in ("base", "locate", "headquarter"):
            for prep in (
                c for c in child.children if c.dep_ == "prep" and c.lower_ in ("in", "at")
            ):
                found += [c for c in prep.children if c.dep_ == "pobj"]
    return found


SPOUSES = frozenset({"husband", "wife", "spouse"})
PARTNERS = frozenset({"partner", "boyfriend", "girlfriend", "fiance", "fiancee", "fiancé"})


def kin_relation(noun: str) -> str:
    """ "my husband": MARRIED_TO; "my girlfriend": DATES; "my sister": SISTER_OF."""
    lemma = noun.lower()
    if lemma in SPOUSES:
        return "MARRIED_TO"
    if lemma in PARTNERS:
        return "DATES"
    return relation_name(f"{lemma}_of")


def former(noun: Token) -> bool:
    """ "previously chief executive of X", "the former CEO": a position that ended."""
    return any(
        t.lower_ in ("previously", "formerly", *FORMER) for t in noun.subtree if t.i < noun.i
    )


def appointed(verb: Token) -> Token | None:
    """Who "elected", "appointed", "named" or "hired" makes the holder: "the members
    elected Tobias Rennard as chair"."""
    if verb.lemma_.lower() not in ("elect", "appoint", "name", "hire", "promote", "make"):
        return None
    return next((c for c in verb.children if c.dep_ == "dobj"), None)
