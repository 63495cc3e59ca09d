"""What a whole episode says about each name before any clause is read: its type, by
the evidence of all its mentions, and the full name a short one stands for ("Berg" for
Tomas Berg when he is the only Berg).

A name's type is decided once per episode, so that one name never becomes two entities
of two types. NER's label is one vote per mention; what the sentence says of the name
weighs more: the object of "founded", the "X" of "CEO of X" or "X's CEO", the noun it
is called in apposition or by a copula ("X, a shipping company", "X is a port city")."""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING

from kgapp.graph.ingest.offline.vocabulary import (
    GROUP_HEADS,
    NER_TYPES,
    ORGANIZATION_HEADS,
    PLACE_HEADS,
    ROLE_NOUNS,
)

if TYPE_CHECKING:
    from spacy.tokens import Doc, Span, Token

CUE_WEIGHT = 10  # what a sentence says of a name outweighs NER's guesses
HINT_WEIGHT = 2  # where it stands ("in X") outweighs one guess, not several
PLACE_PREPOSITIONS = frozenset({"in", "near", "outside", "around"})
PERSON_VERBS = frozenset(
    {"marry", "retire", "resign", "say", "tell", "graduate", "born", "bear", "die", "hire"}
)
FOUNDING_VERBS = frozenset({"found", "co-found", "cofound", "establish", "incorporate"})
PERSON_TITLES = frozenset({"mr", "mrs", "ms", "miss", "dr", "prof", "sir", "dame"})


def name_of(span: Span) -> str:
    """The span's words without leading determiners and a trailing possessive."""
    tokens = list(span)
    while tokens and (tokens[0].pos_ in ("DET", "PUNCT") or tokens[0].tag_ == "PRP$"):
        tokens.pop(0)
    while tokens and (tokens[-1].tag_ == "POS" or tokens[-1].is_punct):
        tokens.pop()
    return " ".join(t.text for t in tokens)


def name_types(docs: list[Doc]) -> dict[str, str]:
    """casefolded name -> the type its mentions in `docs` vote for."""
    votes: dict[str, Counter[str]] = {}
    for doc in docs:
        for span in doc.ents:
            ner = NER_TYPES.get(span.label_)
            if ner is None:
                continue
            tally = votes.setdefault(name_of(span).casefold(), Counter())
            tally[ner] += 1
            cue = cue_type(span)
            if cue:
                tally[cue] += CUE_WEIGHT
            hint = hint_type(span)
            if hint:
                tally[hint] += HINT_WEIGHT
        for chunk in doc.noun_chunks:  # names NER missed: "Corran Tidal Works"
            root = chunk.root
            if root.pos_ == "PROPN" and not root.ent_type_ and len(chunk) > 1:
                named_as = _noun_type(chunk[-1])
                if named_as in ("Organization", "Location"):
                    votes.setdefault(name_of(chunk).casefold(), Counter())[named_as] += CUE_WEIGHT
    return {name: tally.most_common(1)[0][0] for name, tally in votes.items() if tally}


def cue_type(span: Span) -> str | None:
    """The type that the words around `span` give it, if any."""
    root = span.root
    head = root.head
    if span.start > 0 and span.doc[span.start].lower_.strip(".") in PERSON_TITLES:
        return "Person"
    if len(span) > 1:  # a name's own head noun: "Harbour Trust", "Henrietta Street"
        named_as = _noun_type(span[-1])
        if named_as in ("Organization", "Location"):
            return named_as
    if root.dep_ == "nsubjpass" and head.lemma_.lower() in ("base", "headquarter"):
        return "Organization"
    if root.dep_ == "dobj" and head.lemma_.lower() in FOUNDING_VERBS:
        return "Organization"
    if root.dep_ == "dobj" and head.lemma_.lower() == "join" and _has_as_role(head):
        return "Organization"
    if root.dep_ == "pobj" and head.lower_ in ("at", "for") and head.head.lemma_ == "work":
        return "Organization"
    if root.dep_ == "poss" and head.lemma_.lower() in ROLE_NOUNS:
        return "Organization"
    if (
        root.dep_ == "pobj"
        and head.lower_ in ("of", "at")
        and head.head.lemma_.lower() in ROLE_NOUNS
    ):
        return "Organization"
    described = _described_as(root)
    if described is not None:
        return _noun_type(described)
    return None


def hint_type(span: Span) -> str | None:
    """A weaker sign: a place is what one is "in" or "near"; a person is who
    retires, marries, says or is hired."""
    root = span.root
    head = root.head
    if root.dep_ == "pobj" and head.lower_ in PLACE_PREPOSITIONS and span.label_ != "PERSON":
        return "Location"
    if root.dep_ == "dobj" and head.lemma_.lower() == "join":
        return "Organization"  # one joins a company or a club more often than a person
    if root.dep_ in ("nsubj", "nsubjpass") and head.lemma_.lower() in PERSON_VERBS:
        return "Person"
    if root.dep_ == "nsubj" and head.lemma_ in ("be", "become"):
        attr = next((c for c in head.children if c.dep_ == "attr"), None)
        if attr is not None and attr.lemma_.lower() in ROLE_NOUNS:
            return "Person"
    return None


def _has_as_role(verb: Token) -> bool:
    return any(
        p.lower_ == "as" and any(o.lemma_.lower() in ROLE_NOUNS for o in p.children)
        for p in verb.children
    )


def _described_as(root: Token) -> Token | None:
    """ "X, a shipping company": company; "X is a port city": city."""
    for child in root.children:
        if child.dep_ == "appos" and child.pos_ == "NOUN":
            return child
    if root.dep_ == "nsubj" and root.head.lemma_ == "be":
        return next((c for c in root.head.children if c.dep_ == "attr" and c.pos_ == "NOUN"), None)
    return None


def _noun_type(noun: Token) -> str | None:
    lemma = noun.lemma_.lower()
    if lemma in ORGANIZATION_HEADS:
        return "Organization"
    if lemma in PLACE_HEADS:
        return "Location"
    if lemma in ROLE_NOUNS:
        return "Person"
    return None


def full_names(docs: list[Doc], types: dict[str, str]) -> dict[str, str]:
    """casefolded short name -> the full name it stands for: a person's first or last
    name, an organisation's first word ("Halvorsen" for Halvorsen Marine) or initials
    ("NS" for Nordvik Shipping). When several full names share it, the one the episode
    names most, if one does ("Marinescu" on a page about Teodora Marinescu, who has a
    father Mihai Marinescu)."""
    candidates: dict[str, Counter[str]] = {}
    for doc in docs:
        for span in doc.ents:
            name = name_of(span)
            entity_type = types.get(name.casefold())
            for short in _shorts(name, entity_type):
                candidates.setdefault(short.casefold(), Counter())[name] += 1
    found = {}
    for short, names in candidates.items():
        ranked = names.most_common(2)
        unique = len(ranked) == 1 or ranked[0][1] > ranked[1][1]
        if unique and types.get(short) != "Location" and short != ranked[0][0].casefold():
            found[short] = ranked[0][0]
    return found


def _shorts(name: str, entity_type: str | None) -> list[str]:
    words = name.split()
    if len(words) < 2 or entity_type not in ("Person", "Organization"):
        return []
    if entity_type == "Person":
        return [words[0], words[-1]]
    capitals = [w for w in words if w[:1].isupper() and w.lower() not in ("of", "the", "and")]
    initials = "".join(w[0] for w in capitals)
    return [words[0], initials] if len(initials) >= 2 else [words[0]]


def group_names(docs: list[Doc]) -> frozenset[str]:
    """casefolded names of groups one is a member of rather than employed by: a band,
    club, team or choir, by its own last word ("Söder Chamber Choir") or by what the
    text calls it ("The Marram Grass are an Irish folk-rock band")."""
    found: set[str] = set()
    for doc in docs:
        for span in doc.ents:
            described = _described_as(span.root)
            last = span[-1].lemma_.lower()
            if last in GROUP_HEADS or (
                described is not None and described.lemma_.lower() in GROUP_HEADS
            ):
                found.add(name_of(span).casefold())
    return frozenset(found)
