"""Noun phrases: which name a thing, how they are written, and their type."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from wordfreq import zipf_frequency

from kgapp.graph.ingest.offline.turns import Turn
from kgapp.graph.ingest.offline.vocabulary import (
    AMOUNTS,
    CALENDAR_WORDS,
    CHAT_WORDS,
    DATE_LABELS,
    DISCOURSE,
    EVALUATIVE,
    EVENT_HEADS,
    GENERIC,
    ORGANIZATION_HEADS,
    PLACE_HEADS,
    SPLIT_WORDS,
)

if TYPE_CHECKING:
    from spacy.tokens import Token

# A word used less than about once per 100,000 words (Zipf 4.0) is rare enough to name a
# topic on its own; a phrase of words all at least as common as "time" or "way" (Zipf
# 5.5) names nothing in particular ("the other one").
SPECIFIC_ZIPF = 4.0
COMMON_ZIPF = 5.5
# The derivational endings of English abstract nouns: qualities and states.
ABSTRACT_SUFFIXES = ("ness", "ity", "ment", "hood", "ship", "dom", "ance", "ence", "tude", "asm")


def proper(tokens: list[Token], entity_type: str) -> bool:
    """A name has a capital or a digit, and is not a pronoun, a discourse word or a
    number."""
    first = tokens[0].lower_.strip("'")
    if discourse(first) or any(t.pos_ == "PRON" or t.text in ("'", ",") for t in tokens):
        return False
    if any(t.lower_.strip(".") in CALENDAR_WORDS for t in tokens):
        return False
    if all(t.like_num or not t.is_alpha for t in tokens) or len(written(tokens)) < 2:
        return False
    if entity_type in ("Concept",):
        return any(t.text[:1].isupper() for t in tokens)
    return any(t.text[:1].isupper() or t.text[:1].isdigit() for t in tokens)


def modifiers(root: Token) -> list[Token]:
    """The words right before `root` that make it specific: compounds, classifying
    adjectives and their hyphens ("LGBTQ support", "contemporary", "non-profit")."""
    kept: list[Token] = []
    index = root.i - 1
    while index >= 0:
        token = root.doc[index]
        if not _specifies(token, root):
            break
        kept.insert(0, token)
        index -= 1
    while kept and (kept[0].is_punct or kept[0].dep_ == "case"):
        kept.pop(0)
    return kept


def _specifies(token: Token, root: Token) -> bool:
    if token.is_punct:
        return token.text == "-" and not token.whitespace_
    if token.head.i <= token.i or token.head.i > root.i or token.ent_type_ in DATE_LABELS:
        return False
    if token.dep_ in ("compound", "nmod"):
        return token.pos_ in ("NOUN", "PROPN", "ADJ", "VERB", "X") and token.lower_ not in AMOUNTS
    if token.dep_ == "amod":
        return (
            token.lower_ not in EVALUATIVE
            and token.lemma_.lower() not in EVALUATIVE
            and token.tag_ not in ("JJR", "JJS")
            and not any(c.dep_ == "advmod" for c in token.children)
        )
    return False


def discourse(word: str) -> bool:
    """An interjection or opener, also drawn out ("hmmm", "hahaha", "sooo")."""
    if word in DISCOURSE:
        return True
    shortened = re.sub(r"(.)\1+", r"\1", word)  # hmmm -> hm, sooo -> so
    return shortened in DISCOURSE or re.fullmatch(r"(ha|he|hi|ho|lo)+l?", shortened) is not None


def names_a_thing(tokens: list[Token]) -> bool:
    root = tokens[-1]
    lower, lemma = root.lower_, root.lemma_.lower()
    if lower in GENERIC or lemma in GENERIC or lower in CALENDAR_WORDS or root.like_num:
        return False
    if any(discourse(t.lower_) for t in tokens) or not root.is_alpha or len(root.text) < 3:
        return False
    if root.i + 1 < len(root.doc) and root.nbor().text == "-" and not root.whitespace_:
        return False  # the first half of a hyphenated word: "de-stress"
    return not any(t.pos_ == "PRON" or t.like_num for t in tokens)


def specific(name: str) -> bool:
    """A noun phrase that names a specific thing or topic: several words ("pottery
    class", "sugary snacks"), or one word that general English uses rarely
    ("kayaking", "ceramics"), not an everyday or abstract noun ("photo", "mix",
    "clarity", "beauty"). How rare: `wordfreq`'s Zipf frequency, which counts words in
    a broad mix of English text (SPECIFIC_ZIPF)."""
    words = name.split()
    if len(words) > 1:
        return not all(zipf_frequency(w, "en") >= COMMON_ZIPF for w in words)
    word = name.lower()
    return zipf_frequency(word, "en") < SPECIFIC_ZIPF and not word.endswith(ABSTRACT_SUFFIXES)


def topic(name: str) -> bool:
    """A word that can name what someone loves or practises ("dance", "fashion",
    "guitar"): not one of the general words (GENERIC), nor an abstract noun."""
    word = name.lower()
    return " " not in word and word not in GENERIC and not word.endswith(ABSTRACT_SUFFIXES)


def bare(noun: Token | None) -> bool:
    """A noun without an article or a demonstrative: a kind, as a topic is named ("loves
    dance", "plays guitar"), not a thing at hand ("the smell", "a dog")."""
    if noun is None:
        return False
    return not any(c.dep_ == "det" for c in noun.children)


def head_type(root: Token) -> str:
    lemma, lower = root.lemma_.lower(), root.lower_
    for heads, entity_type in (
        (EVENT_HEADS, "Event"),
        (ORGANIZATION_HEADS, "Organization"),
        (PLACE_HEADS, "Location"),
    ):
        if lemma in heads or lower in heads:
            return entity_type
    return "Concept"


def written(tokens: list[Token], *, lower_initial: bool = False) -> str:
    """The tokens as written; a sentence-initial common word lower-cased as it would be
    mid-sentence; a sentence-final "Corp." loses the full stop it shares. A name broken
    across lines is one name: its whitespace becomes single spaces."""
    out = []
    for token in tokens:
        text = token.text
        if lower_initial and token.is_sent_start and token.pos_ != "PROPN" and text.istitle():
            text = text.lower()
        out.append(text + (token.whitespace_ if token is not tokens[-1] else ""))
    name = " ".join("".join(out).split())
    last = tokens[-1]
    if name.endswith(".") and (last.i + 1 == len(last.doc) or last.nbor().is_space):
        name = name[:-1]
    return name.strip(" \"'-,;:!?")


def phrase_tokens(root: Token) -> list[Token]:
    """The noun phrase up to its head, as written: "the new pottery class", "my job",
    "one-on-one mentoring"."""
    start = min(t.i for t in root.subtree if t.i <= root.i and _in_phrase(t, root))
    return list(root.doc[start : root.i + 1])


def phrase_text(root: Token, turn: Turn) -> str:
    """The noun phrase as the fact sentence shows it: "the pottery class", with "my"
    and "your" replaced by the speakers' names."""
    return " ".join(as_said(t, turn) for t in phrase_tokens(root)) or root.text


def _in_phrase(token: Token, root: Token) -> bool:
    return token is root or (
        token.dep_ in ("det", "poss", "amod", "compound", "nmod", "nummod", "case", "punct")
        and token.i >= root.left_edge.i
    )


def as_said(token: Token, turn: Turn) -> str:
    lower = token.lower_
    if lower in ("my", "our") and turn.speaker:
        return f"{turn.speaker}'s"
    if lower == "your" and turn.other:
        return f"{turn.other}'s"
    if lower in SPLIT_WORDS and (not token.whitespace_ or lower in ("na", "ta")):
        return SPLIT_WORDS[lower]
    if lower in CHAT_WORDS:
        return CHAT_WORDS[lower]
    capital = token.pos_ != "PROPN" and token.text.istitle() and token.text != "I"
    if capital and (token.is_sent_start or token.pos_ in ("VERB", "AUX", "DET", "ADP")):
        return lower
    return token.text
