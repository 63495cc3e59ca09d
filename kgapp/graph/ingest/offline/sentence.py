"""The fact sentence: the clause rewritten around its two entities."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from kgapp.graph.ingest.offline.entities import Mention
from kgapp.graph.ingest.offline.phrases import as_said, phrase_tokens
from kgapp.graph.ingest.offline.syntax import verb_chain
from kgapp.graph.ingest.offline.turns import Turn

if TYPE_CHECKING:
    from spacy.tokens import Token


def fact_sentence(
    verb: Token,
    subject: Mention,
    obj: Mention,
    target: Token,
    pieces: list[Token],
    turn: Turn,
) -> str:
    """The clause rewritten around the two entities: "Caroline went to the LGBTQ support
    group"."""
    chosen = {
        t.i: t
        for link in _spoken_chain(verb)
        for t in [link, *link.children]
        if t is link or t.dep_ in ("aux", "auxpass", "prt")
    }
    chosen.update((t.i, t) for t in pieces)
    if obj.speaker_pronoun or obj.named:
        chosen[target.i] = target
        if target.pos_ == "PROPN":  # not for "a cat named Bella": "adopted Bella"
            chosen.update((t.i, t) for t in target.children if t.dep_ == "det" and t.i < target.i)
    else:
        chosen.update((t.i, t) for t in phrase_tokens(target))
    # A phrase fronted before the verb ("After the accident, I ...") goes to the end.
    tokens = sorted(chosen.values(), key=lambda t: (t.i < verb.i and t in pieces, t.i))
    words = [
        obj.text if t is target and (obj.named or obj.speaker_pronoun) else as_said(t, turn)
        for t in tokens
    ]
    if subject.speaker_pronoun and words and tokens[0].tag_ in ("VBP", "VB", "MD"):
        words[0] = _third_person(words[0], "VBP")
    elif subject.speaker_pronoun and words:
        words[0] = _third_person(words[0], tokens[0].tag_)
    text = subject.text
    for index, (token, word) in enumerate(zip(tokens, words, strict=True)):
        before = tokens[index - 1]
        gap = before.whitespace_ if index and before.i + 1 == token.i else " "
        if not gap and (word != token.text or words[index - 1] != before.text):
            gap = " "  # a word written out ("gon" "na" -> "going to")
        text += gap + word
    return re.sub(r"\s+(?=(?:n't|'s|'re|'ve|'ll|'m|'d)\b)", "", text).strip() + "."


def _spoken_chain(verb: Token) -> list[Token]:
    """`verb` and the heads it is the xcomp of ("started to paint"), not the verbs it is
    conjoined to ("quit Acme and moved": "moved" alone)."""
    chain = [verb]
    for link in verb_chain(verb)[1:]:
        if chain[-1].dep_ != "xcomp":
            break
        chain.append(link)
    return chain


def _third_person(word: str, tag: str) -> str:
    """`word` (the first verb after the subject, as written) as a third-person singular
    subject takes it: am/'m/are -> is, have -> has, were -> was, love -> loves."""
    first, space, rest = word.partition(" ")
    if rest:
        return _third_person(first, tag) + space + rest
    lower = word.lower()
    fixed = {"am": "is", "'m": "is", "are": "is", "'re": "is", "were": "was", "have": "has",
             "'ve": "has", "do": "does", "'ll": "will", "want": "wants", "be": "is"}  # fmt: skip
    if lower in fixed:
        return fixed[lower]
    if tag != "VBP":
        return word
    if lower.endswith(("s", "sh", "ch", "x", "z", "o")):
        return lower + "es"
    if lower.endswith("y") and lower[-2:-1] not in "aeiou":
        return lower[:-1] + "ies"
    return lower + "s"
