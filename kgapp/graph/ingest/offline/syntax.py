"""What the dependency parse says about a clause: its verbs, subject, objects, whether
it asserts anything, and when."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

from kgapp.graph.ingest.offline.vocabulary import (
    ASPECT,
    EVALUATIVE,
    FOND,
    HEDGES,
    INTENT,
    MODALS_OF_DOUBT,
    NER_TYPES,
    REPORTING,
    RUMOUR,
    TOPICAL_VERBS,
)

if TYPE_CHECKING:
    from spacy.tokens import Span, Token


def is_question(sentence: Span) -> bool:
    last = next((t for t in reversed(sentence) if not t.is_space), None)
    return last is not None and "?" in last.text


def is_predicate(token: Token) -> bool:
    if token.dep_ in ("aux", "auxpass") or token.ent_type_ in NER_TYPES:
        return False  # a helper verb, or a word of a title ("Becoming Nicole")
    return token.pos_ == "VERB" or (token.lemma_ == "be" and token.pos_ == "AUX")


def verb_chain(verb: Token) -> list[Token]:
    """`verb` and the verbs it inherits its subject from (xcomp heads, conjunctions
    without a subject or auxiliary of their own), innermost first."""
    chain = [verb]
    while (
        chain[-1].dep_ in ("xcomp", "conj")
        and chain[-1].head.pos_ in ("VERB", "AUX")
        and not any(c.dep_ in ("nsubj", "nsubjpass") for c in chain[-1].children)
        and chain[-1].head is not chain[-1]
    ):
        if chain[-1].dep_ == "conj" and any(c.dep_ == "aux" for c in chain[-1].children):
            break
        chain.append(chain[-1].head)
    return chain


def asserted(verb: Token) -> bool:
    """False when the clause is negated, conditional, hedged by a modal or an adverb of
    doubt, or reported ("she thinks", "according to", "rumour has it"). "No longer"
    and "not ... anymore" assert an ending (`no_longer`)."""
    if reported(verb):
        return False
    for link in verb_chain(verb):
        for child in link.children:
            if child.dep_ == "neg" and no_longer(link):
                continue
            if child.dep_ == "neg" or child.lower_ in ("never", "no"):
                return False
            if child.lower_ in HEDGES or _conditional(child):
                return False
            if child.dep_ == "prep" and child.lower_ == "according":
                return False
            if child.dep_ == "aux" and child.tag_ == "MD" and child.lower_ in MODALS_OF_DOUBT:
                return False
            if child.dep_ == "mark" and child.lower_ in ("if", "unless", "whether"):
                return False
            if child.dep_ == "nsubj" and child.lower_ in ("nobody", "nothing", "noone"):
                return False
    return True


def _conditional(child: Token) -> bool:
    """ "If we win the bid, we will open in Oslo": the main clause holds on a condition."""
    return child.dep_ == "advcl" and any(
        c.dep_ == "mark" and c.lower_ in ("if", "unless") for c in child.children
    )


def reported(verb: Token) -> bool:
    """The clause is what someone thinks, hopes or says, not what the text states."""
    for link in verb_chain(verb):
        if link.dep_ in ("ccomp", "xcomp") and link.head is not link:
            head = link.head
            if head.lemma_.lower() in REPORTING:
                return True
            if any(c.dep_ == "nsubj" and c.lemma_.lower() in RUMOUR for c in head.children):
                return True
    return False


def no_longer(verb: Token) -> bool:
    """ "She no longer sits on the board", "he doesn't work there anymore"."""
    for child in verb.children:
        if child.lower_ == "longer" and any(c.lower_ in ("no", "not") for c in child.children):
            return True
        if child.lower_ in ("anymore", "longer") and any(c.dep_ == "neg" for c in verb.children):
            return True
    return False


def object_relative(verb: Token) -> bool:
    """ "the joy that dancing brings me": a relative clause about its object, whose
    subject is someone else; its facts are about an unnamed thing."""
    return verb.dep_ == "relcl" and not any(
        c.dep_ in ("nsubj", "nsubjpass") and c.tag_ in ("WP", "WDT") for c in verb.children
    )


def is_let(verb: Token) -> bool:
    """ "Let's go to a class" proposes, it does not state."""
    return any(link.head.lemma_ == "let" and link.head is not link for link in verb_chain(verb))


def subjects_of(verb: Token) -> list[Token]:
    stray = _stray_subject(verb)
    if stray is not None:
        return [stray]
    for link in verb_chain(verb):
        own = [c for c in link.children if c.dep_ in ("nsubj", "nsubjpass")]
        if own:
            return [t for s in own for t in with_conjuncts(s)]
    return []


def _stray_subject(verb: Token) -> Token | None:
    """ "X stepped down as CEO and Kari Lund replaced her": a name right before a
    conjoined verb without a subject, which the parser hung on the first clause, is the
    second clause's subject."""
    if (
        verb.dep_ != "conj"
        or verb.i == 0
        or any(c.dep_ in ("nsubj", "nsubjpass") for c in verb.children)
    ):
        return None
    before = verb.doc[verb.i - 1]
    if (
        before.pos_ == "PROPN"
        and before.ent_type_
        and verb.head.i < before.i
        and before.head.i < verb.i
    ):
        return before
    return None


def with_conjuncts(token: Token) -> list[Token]:
    return [token, *[t for t in token.conjuncts if t.i > token.i]]


def dropped_first_person(verb: Token) -> bool:
    """ "Lost my job yesterday": a chat sentence in the past with no subject at all."""
    return (
        verb.dep_ == "ROOT"
        and verb.tag_ in ("VBD", "VBN")
        and not any(c.dep_ in ("nsubj", "nsubjpass", "expl", "csubj") for c in verb.children)
        and verb.i == verb.sent.start + _leading_fillers(verb.sent)
    )


def _leading_fillers(sentence: Span) -> int:
    count = 0
    for token in sentence:
        if token.pos_ in ("INTJ", "PUNCT", "SPACE") or token.lower_ in ("just", "also", "so"):
            count += 1
        else:
            break
    return count


def verb_relation(verb: Token) -> str:
    """The relation's verb part: lemma plus particles, "WANT_TO_" when a head verb of
    wish or plan governs it ("want to open" WANT_TO_OPEN; "going to" PLAN_TO)."""
    words = [lemma_of(verb), *[c.lower_ for c in verb.children if c.dep_ == "prt"]]
    if verb.dep_ == "xcomp" and verb.head.pos_ in ("VERB", "AUX"):
        head = verb.head
        if head.lemma_ == "go" and head.tag_ == "VBG":
            words = ["plan", "to", *words]
        elif head.lemma_ == "use" and head.tag_ == "VBD":
            words = ["used", "to", *words]
        elif lemma_of(head) in INTENT:
            words = [lemma_of(head), "to", *words]
        elif lemma_of(head) not in ASPECT:
            return ""
    return "_".join(words)


def lemma_of(token: Token) -> str:
    lemma = token.lemma_.lower()
    return {"wanna": "want", "gotta": "have", "gon": "go"}.get(lemma, lemma)


def objects(verb: Token) -> Iterator[Object]:
    for child in verb.children:
        if child.dep_ in ("dobj", "obj"):
            for token in with_conjuncts(child):
                yield Object("", token, ())
            if child.pos_ == "NOUN":  # "quit their jobs at X", "signed a deal with X"
                for prep in (c for c in child.children if c.dep_ == "prep"):
                    if prep.lower_ in OBJECT_PREPOSITIONS:
                        yield from prepositional(prep)
        elif child.dep_ in ("prep", "agent", "dative") and child.pos_ == "ADP":
            yield from prepositional(child)


# The prepositions after a verb's object that name another party of the relation:
# "signed a deal with X", "quit her job at X", "sold the boat to X".
OBJECT_PREPOSITIONS = frozenset({"with", "at", "to", "for", "from", "in"})
# Prepositions of circumstance: their objects say when, how or despite what, and take
# no part in the relation the verb states.
CIRCUMSTANTIAL = frozenset(
    {"under", "after", "before", "during", "despite", "since", "like", "than", "without",
     "except", "besides", "per", "via", "until", "till", "regarding", "including", "unlike",
     "amid", "throughout", "beyond", "upon"}
)  # fmt: skip


def prepositional(prep: Token, outer: tuple[Token, ...] = ()) -> Iterator[Object]:
    """Objects of `prep`, including stacked prepositions ("out of")."""
    words = (*outer, prep)
    if prep.lower_ in CIRCUMSTANTIAL and not outer:
        return  # "Under her, Acme grew": when or how, not with whom
    for child in prep.children:
        if child.dep_ == "pobj" and (prep.lower_, child.lower_) != ("of", "course"):
            suffix = "_".join(t.lower_ for t in words)
            for token in with_conjuncts(child):
                yield Object(suffix, token, words)
        elif child.dep_ == "prep" and child.i == prep.i + 1:
            yield from prepositional(child, words)


def copula(verb: Token) -> Iterator[tuple[str, Token, list[Token]]]:
    """ "is a counselor" IS_A; "is the CEO of Acme" CEO_OF; "is married to Bob"
    MARRIED_TO; "is from Ohio" IS_FROM."""
    for child in verb.children:
        if child.dep_ == "attr" and child.pos_ in ("NOUN", "PROPN") and not possessed(child):
            preps = [o for p in child.children if p.dep_ == "prep" for o in prepositional(p)]
            words = [c for c in child.children if c.dep_ == "det"] + [child]
            for found in preps:
                yield f"{child.lemma_}_{found.suffix}", found.token, [*words, *found.pieces]
            if not preps:
                for token in with_conjuncts(child):
                    yield "is_a", token, []
        elif child.dep_ == "acomp" and child.lower_ not in EVALUATIVE and not _negative(child):
            for found in (o for p in child.children if p.dep_ == "prep" for o in prepositional(p)):
                yield f"{child.lower_}_{found.suffix}", found.token, [child, *found.pieces]
        elif child.dep_ == "prep" and child.lower_ in ("from", "in", "at"):
            for found in prepositional(child):
                yield f"is_{found.suffix}", found.token, list(found.pieces)


def _negative(adjective: Token) -> bool:
    """ "unrelated to", "unaware of": the adjective says the relation is not there."""
    return adjective.lower_.startswith(("un", "non", "in")) and adjective.lemma_.lower() not in (
        "interested",
        "involved",
        "independent",
    )


def possessed(noun: Token) -> bool:
    """ "my passion", "their rock": said of someone, the noun is a role, not a kind."""
    return any(c.dep_ == "poss" for c in noun.children)


def future(verb: Token) -> bool:
    chain = verb_chain(verb)
    return any(
        c.lower_ in ("will", "'ll", "gon", "gonna") for link in chain for c in link.children
    ) or any(link.lemma_ == "go" and link.tag_ == "VBG" for link in chain[1:])


def clause_text(verb: Token) -> str:
    """The words of `verb`'s own clause: its subtree without clauses that have a verb
    of their own."""
    skip: set[int] = set()
    for child in verb.children:
        if child.dep_ in ("conj", "ccomp", "advcl", "relcl", "parataxis") and child.pos_ in (
            "VERB",
            "AUX",
        ):
            skip.update(t.i for t in child.subtree)
    return " ".join(t.text for t in verb.subtree if t.i not in skip)


def entity_of(token: Token) -> Span | None:
    return next((span for span in token.doc.ents if span.start <= token.i < span.end), None)


@dataclass(frozen=True)
class Object:
    suffix: str  # preposition(s) after the verb: "to", "for"; "" for a direct object
    token: Token
    pieces: tuple[Token, ...]  # extra words of the fact sentence: the preposition


def topical(verb: Token) -> bool:
    """A verb of liking or practising, whose object is a topic of someone's life: "loves
    dance", "plays guitar", "is passionate about fashion"."""
    if lemma_of(verb) in TOPICAL_VERBS:
        return True
    return verb.lemma_ == "be" and any(
        c.dep_ == "acomp" and c.lemma_.lower() in FOND for c in verb.children
    )


def past(verb: Token) -> bool:
    """Told in the past tense: "founded", "became", "was appointed", "had joined"."""
    chain = verb_chain(verb)
    helpers = [c for link in chain for c in link.children if c.dep_ in ("aux", "auxpass")]
    if helpers:
        return any(h.tag_ == "VBD" for h in helpers)
    return chain[-1].tag_ in ("VBD", "VBN")
