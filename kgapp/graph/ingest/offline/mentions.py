"""Who or what the words of a turn refer to: names, noun phrases, relatives, and the
speakers behind "I", "we" and "you". The first half of the reader."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING

from wordfreq import zipf_frequency

from kgapp.graph.ingest.offline.entities import Mention
from kgapp.graph.ingest.offline.evidence import full_names, group_names, name_types
from kgapp.graph.ingest.offline.focus import Focus
from kgapp.graph.ingest.offline.phrases import (
    head_type,
    modifiers,
    names_a_thing,
    phrase_text,
    proper,
    topic,
    written,
)
from kgapp.graph.ingest.offline.syntax import entity_of
from kgapp.graph.ingest.offline.turns import Turn
from kgapp.graph.ingest.offline.vocabulary import (
    DATE_LABELS,
    FIRST_PERSON,
    FIRST_PLURAL,
    NER_TYPES,
    POSTS,
    PROJECT_WORDS,
    RELATIONAL,
    ROLE_NOUNS,
    SECOND_PERSON,
)

# Below this Zipf frequency (about once per million words) a capitalised word is no
# English word: a name.
NAME_ZIPF = 3.0

if TYPE_CHECKING:
    from spacy.tokens import Doc, Span, Token


class MentionReader:
    """What the reader knows of an episode's words, and the entity each mention is."""

    def __init__(
        self,
        reference_time: datetime,
        speakers: list[str],
        docs: list[Doc],
        modifier_words: frozenset[str],
    ) -> None:
        self.reference_time = reference_time
        self.modifier_words = modifier_words
        self.speakers = speakers
        # Capitalised words seen inside a sentence: a capital at a sentence's start
        # proves nothing ("Dance is my escape", "Glad you liked it").
        self.capitalised = {
            t.text for doc in docs for t in doc if not t.is_sent_start and t.text[:1].isupper()
        } | set(speakers)
        self.lowercase = {t.text for doc in docs for t in doc if t.text.islower()}
        self.turn = Turn(None, None, "")
        self.types = name_types(docs)
        self.shorts = full_names(docs, self.types)
        self.groups = group_names(docs)
        self.focus = Focus(conversation=bool(speakers))
        self.focus.speakers = set(speakers)
        self.focus.groups = self.groups

    def _named(self, span: Span) -> Mention | None:
        """The named entity `span` as a mention, determiners and possessives trimmed."""
        entity_type = NER_TYPES.get(span.label_)
        if entity_type is None:
            return None
        tokens = [t for t in span]
        while tokens and (tokens[0].pos_ in ("DET", "PUNCT") or tokens[0].tag_ == "PRP$"):
            tokens.pop(0)
        while tokens and (tokens[-1].tag_ == "POS" or tokens[-1].is_punct):
            tokens.pop()
        if not tokens or not proper(tokens, entity_type) or not self._corroborated(tokens):
            return None
        if len(tokens) == 1 and tokens[0].lemma_.lower() in ROLE_NOUNS:
            return None  # "CTO", "CEO": a position, never a name
        name = written(tokens)
        if len(tokens) == 1:
            name = self.shorts.get(name.casefold(), name)
        entity_type = self.types.get(name.casefold(), entity_type)
        if len(tokens) > 1 and tokens[0].lower_ in PROJECT_WORDS:
            entity_type = "Project"
        if entity_type == "Person":
            name = self._speaker_called(name)
        return Mention(name, entity_type, name, named=True) if name else None

    def _speaker_called(self, name: str) -> str:
        """A speaker by a short form of their first name ("Mel" for Melanie, "Caro" for
        Caroline) is that speaker, when exactly one speaker's name starts so."""
        if " " in name or len(name) < 3:
            return name
        found = [s for s in self.speakers if s.split()[0].startswith(name) and s != name]
        return found[0] if len(found) == 1 else name

    def _corroborated(self, tokens: list[Token]) -> bool:
        """A one-word name that opens its sentence ("Dance is my escape", "Glad you came")
        is a name when it appears capitalised inside a sentence too, or when the tagger
        calls it a proper noun and it is no adjective or adverb ("Glad", "Cozy"), nor a
        word the episode writes in lower case elsewhere ("Guitar is my thing ... a
        guitar"). A word that general English does not use (Zipf below NAME_ZIPF,
        `wordfreq`) is a name too ("Ines is leaving Helix & Hart")."""
        first = tokens[0]
        if len(tokens) > 1 or not first.is_sent_start or first.text in self.capitalised:
            return True
        common = first.lower_ in self.modifier_words or first.lower_ in self.lowercase
        if common:
            return False
        # No English word ("Ines", "Kofi"), whatever the tagger says of it.
        return first.tag_ in ("NNP", "NNPS") or zipf_frequency(first.lower_, "en") < NAME_ZIPF

    def _phrase(self, root: Token) -> Mention | None:
        """The noun phrase headed by `root` as an entity, if it names something."""
        if root.ent_type_ and root.ent_type_ not in DATE_LABELS:
            span = entity_of(root)
            return self._named(span) if span is not None else None
        if root.pos_ not in ("NOUN", "PROPN") or root.ent_type_ in DATE_LABELS:
            return None
        described = self.focus.description(root)
        if described is not None:
            return described
        called = _called(root)  # "a cat named Bella", "an agent called Grace Okafor"
        if called is not None and (span := entity_of(called)) is not None:
            return self._named(span)
        if root.lower_ in RELATIONAL or root.lemma_.lower() in RELATIONAL:
            return self._relative(root)
        tokens = modifiers(root) + [root]
        if not names_a_thing(tokens):
            return None
        name = written(tokens, lower_initial=True)
        if root.pos_ == "PROPN" and proper(tokens, "Entity"):
            if not self._corroborated(tokens):
                return None
            if len(tokens) == 1:
                name = self._speaker_called(self.shorts.get(name.casefold(), name))
            # A name NER did not type: its other mentions, or the relation, may.
            entity_type = self.types.get(name.casefold(), "Entity")
            return Mention(name, entity_type, name, named=True)
        single = len(tokens) == 1 and root.pos_ == "NOUN" and root.lemma_.lower() not in POSTS
        single = single and topic(root.lemma_)  # "John's grit", "Maria's endurance": no thing
        owner = self._owner(root) if single else None
        if owner is not None:  # "my store" is one store: Gina's
            name = f"{owner}'s {name}"
        return Mention(name, head_type(root), phrase_text(root, self.turn))

    def _relative(self, root: Token) -> Mention | None:
        """ "my friend Mel" is Mel; "my mom" is "<speaker>'s mom"; a bare "friend" is
        nobody in particular."""
        named = next((c for c in root.children if c.dep_ == "appos"), None)
        if named is not None and (span := entity_of(named)) is not None:
            mention = self._named(span)
            if mention is not None and mention.entity_type == "Person":
                return mention
        owner = self._owner(root)
        if owner is None:
            return None
        word = root.text.lower() if root.is_sent_start else root.text
        name = f"{owner}'s {word}"
        return Mention(name, "Person", name)

    def _owner(self, root: Token) -> str | None:
        for child in root.children:
            if child.dep_ != "poss":
                continue
            lower = child.lower_
            if lower in ("my", "our") and self.turn.speaker:
                return self.turn.speaker
            if lower == "your" and self.turn.other:
                return self.turn.other
            if child.ent_type_ == "PERSON" and (span := entity_of(child)) is not None:
                named = self._named(span)
                return named.name if named else None
        return None

    def _mention(self, token: Token) -> Mention | None:
        """Who or what `token` (a subject or object) refers to, if it is an entity."""
        lower = token.lower_
        if token.pos_ == "PRON" or lower in FIRST_PERSON | SECOND_PERSON | FIRST_PLURAL:
            return self._pronoun(lower) or self.focus.pronoun(token)
        if token.dep_ == "nsubj" and token.tag_ in ("WP", "WDT") and token.head.dep_ == "relcl":
            return self._mention(token.head.head)
        return self._phrase(token)

    def _pronoun(self, lower: str) -> Mention | None:
        speaker, other = self.turn.speaker, self.turn.other
        if lower in FIRST_PERSON and speaker:
            return Mention(speaker, "Person", speaker, speaker_pronoun=True)
        if lower in ("we", "us") and speaker:
            return Mention(speaker, "Person", speaker, speaker_pronoun=True, weak=True)
        if lower in ("you", "yourself") and other:
            return Mention(other, "Person", other, speaker_pronoun=True)
        return None


def _called(noun: Token) -> Token | None:
    """The name in "a cat named Bella", "a band called The Reeds"."""
    for child in noun.children:
        if child.dep_ == "acl" and child.lemma_.lower() in ("name", "call"):
            return next((c for c in child.children if c.dep_ in ("oprd", "attr", "dobj")), None)
    return None
