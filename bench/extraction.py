"""Graph truth on a real conversation: a LoCoMo conversation uploaded through the product,
the resulting graph measured against the conversation's own human annotations.

How: the local SurrealDB server (mem://), Django with the test settings and a scratch
SQLite database, a tenant made by `tenant_create`, and a staff user whose test client
POSTs the file to `/api/v1/t/{slug}/documents`, Celery running the ingest task eagerly.
No model is configured (the OPENAI_* variables are ignored here), so ingestion uses the
offline extractor. The graph is then read whole (`export.snapshot.export_graph`); "current"
means, as of now, an entity not merged into another, and a fact not expired and not
invalidated (valid_at <= now < invalid_at, and expired_at unset or later than now).

Content words, the unit of matching below: the text folded to lowercase ASCII, split
into runs of letters or digits (punctuation separates), then NLTK's English stop words
removed (STOP_WORDS below); numbers and month names are always kept.

Figures and targets:
1. entities_named_in_annotations (>= 70%): share of current entities whose name, in
   lower case (`str.casefold`, runs of white space as one space), equals a name that the
   product's spaCy pipeline (kgapp.graph.ingest.offline.extractor
   `load_pipeline(DEFAULT_MODEL)`) finds in the annotations: every observation sentence
   (session_N_observation) and every event (events_session_N) of the conversation, each
   parsed on its own. Those names are (a) the named entities (`doc.ents`) of types
   PERSON, ORG, GPE, LOC, FAC, PRODUCT, EVENT, WORK_OF_ART, NORP and LANGUAGE, and (b)
   the noun chunks (`doc.noun_chunks`) of two or more words. In both, determiners (part
   of speech DET, or dependency det or predet) and possessives (each possessor's whole
   subtree, "Audrey's", "his", "the dog's", and the possessive "'s") are removed first;
   words are what white space separates ("self-care" is one). A named entity of one
   word counts only where the annotations write that word (whole word: no letter, digit
   or underscore either side; ignoring case) with a capital initial more often than all
   in lower case: the dog "Buddy", 6 to 1, counts; "Financial", tagged ORG in "a
   Financial Analyst" and written "a financial analyst" too, 1 to 1, does not. So a
   single common word ("photo", "beauty", "style") never counts, whether or not the
   annotations use it, and "dog park", "German Shepherds" or "Toby" do; the equality is
   exact, so "dance classes" does not count on "dance class", nor "Andrew's friend" on
   "friend". Also shown, for information and comparison with earlier runs, the measure
   this one replaced, entity_names_in_annotations: the share of current entities whose
   name occurs as written (case-sensitive, whole word) in the concatenated text of the
   observations and events, which generic words pass.
2. observation_coverage (>= 50%): share of the observations about a speaker (each
   sentence of session_N_observation[speaker]) that a current fact from that speaker
   touches. A fact touches an observation when one endpoint is the speaker's entity (a
   current entity whose name, or one of whose aliases, equals the speaker's name,
   ignoring case), and the other endpoint's name, reduced to its content words
   Snowball-stemmed (`snowballstemmer`, English), has at least one such word and all of
   them among the observation's stemmed content words.
3. answer_in_context for QA categories 1 (multi-hop), 2 (temporal) and 4 (single-hop)
   (>= 10 points above the baseline, overall): the question is POSTed to
   `/api/v1/t/{slug}/query` in mode "mix" with a token budget calibrated to about 8,000
   characters (max_total_tokens = 8,000 / the characters per token that the product's
   token counter gives on the conversation; the entity and relation budgets keep their
   default shares of the total); a context over 8,000 characters is cut there. The
   answer is present when every content word of the gold answer (not stemmed) is a word
   of the context; an answer without content words must occur as a whole in the
   context's normalised text (its words joined by single spaces). Baseline: BM25
   (`bm25s`) over the conversation's turns, each rendered "[session date] Speaker: text"
   (with the photo caption the product's parser appends, so both see the same words),
   analysed like the product's own BM25 (lowercase, ASCII, Snowball stems); the turns
   that share a term with the question, best first, whole turns while they fit in
   8,000 characters. Also shown: the mean context length of each, and today's default
   (mode mix, no budget given) for information.
4. ingest_ms_per_episode_median (<= 40 ms): the job's `timings.episode_median_ms`
   (and p90): the time of each episode's pipeline run, measured in `ingest_job`, with
   no model in it; the offline extraction of an episode runs ahead, while the one
   before it is written, and what is left of it (the wait) counts. The indexing phase
   after the last episode (fact embeddings, passage embeddings) is not included. Also
   shown: the same without the extraction stage (`episode_median_ms_without_extraction`),
   which is what the pipeline adds to a model's extraction.

With several files (by default, every conversation of the shared folder), each is
uploaded into a tenant of its own and reported, then the figures over all of them:
shares pooled (every entity, observation and question counts once), the median of the
jobs' per-episode medians.

Also printed: episodes, current entities and facts, the extractor that ran, the wall
time of the upload (POST to completed job), 15 sample facts, and the latency of the
budgeted `POST query` calls (p50, p95; Django test client in process, no HTTP).

    .venv/bin/python bench/extraction.py [--file 30.json [--file 26.json ...]]
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import os
import re
import statistics
import sys
import tempfile
import time
import unicodedata
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data" / "conversations" / "locomo"
sys.path.insert(0, str(ROOT))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import bm25s  # noqa: E402
import snowballstemmer  # noqa: E402

from bench.scratch import django_setup  # noqa: E402
from kgapp import surreal_server  # noqa: E402
from kgapp.graph.time import visible  # noqa: E402

CONTEXT_CHARS = 8_000
QA_CATEGORIES = {1: "multi-hop", 2: "temporal", 4: "single-hop"}
TARGETS = {
    "entities_named_in_annotations": 0.70,
    "observation_coverage": 0.50,
    "answer_in_context_gain_points": 10.0,
    "ingest_ms_per_episode_median": 40.0,
}
# The product's defaults (kgapp.graph.search.query.QueryRequest): entity and relation
# budgets as shares of the total, kept when the total is scaled down.
ENTITY_SHARE, RELATION_SHARE = 1500 / 6000, 2500 / 6000
SAMPLE_FACTS = 15
# The named-entity types of figure 1: names of people, groups, places, things and works,
# not dates, amounts or ordinals.
NAMED_TYPES = frozenset(
    {
        "PERSON",
        "ORG",
        "GPE",
        "LOC",
        "FAC",
        "PRODUCT",
        "EVENT",
        "WORK_OF_ART",
        "NORP",
        "LANGUAGE",
    }
)

# NLTK's English stop words (nltk.corpus.stopwords, "english"), apostrophes dropped:
# the tokenizer splits "don't" into "don" and "t", both listed.
STOP_WORDS = frozenset(
    {
        "i",
        "me",
        "my",
        "myself",
        "we",
        "our",
        "ours",
        "ourselves",
        "you",
        "your",
        "yours",
        "yourself",
        "yourselves",
        "he",
        "him",
        "his",
        "himself",
        "she",
        "her",
        "hers",
        "herself",
        "it",
        "its",
        "itself",
        "they",
        "them",
        "their",
        "theirs",
        "themselves",
        "what",
        "which",
        "who",
        "whom",
        "this",
        "that",
        "these",
        "those",
        "am",
        "is",
        "are",
        "was",
        "were",
        "be",
        "been",
        "being",
        "have",
        "has",
        "had",
        "having",
        "do",
        "does",
        "did",
        "doing",
        "a",
        "an",
        "the",
        "and",
        "but",
        "if",
        "or",
        "because",
        "as",
        "until",
        "while",
        "of",
        "at",
        "by",
        "for",
        "with",
        "about",
        "against",
        "between",
        "into",
        "through",
        "during",
        "before",
        "after",
        "above",
        "below",
        "to",
        "from",
        "up",
        "down",
        "in",
        "out",
        "on",
        "off",
        "over",
        "under",
        "again",
        "further",
        "then",
        "once",
        "here",
        "there",
        "when",
        "where",
        "why",
        "how",
        "all",
        "any",
        "both",
        "each",
        "few",
        "more",
        "most",
        "other",
        "some",
        "such",
        "no",
        "nor",
        "not",
        "only",
        "own",
        "same",
        "so",
        "than",
        "too",
        "very",
        "s",
        "t",
        "can",
        "will",
        "just",
        "don",
        "should",
        "now",
        "d",
        "ll",
        "m",
        "o",
        "re",
        "ve",
        "y",
        "ain",
        "aren",
        "couldn",
        "didn",
        "doesn",
        "hadn",
        "hasn",
        "haven",
        "isn",
        "ma",
        "mightn",
        "mustn",
        "needn",
        "shan",
        "shouldn",
        "wasn",
        "weren",
        "won",
        "wouldn",
    }
)
MONTHS = frozenset(
    {
        "january",
        "february",
        "march",
        "april",
        "may",
        "june",
        "july",
        "august",
        "september",
        "october",
        "november",
        "december",
    }
)
_WORD = re.compile(r"[a-z]+|[0-9]+")
_SESSION = re.compile(r"session_(\d+)")
_stemmer = snowballstemmer.stemmer("english")


# --- text --------------------------------------------------------------------------------


def words(text: str) -> list[str]:
    folded = unicodedata.normalize("NFKD", text.lower()).encode("ascii", "ignore").decode()
    return _WORD.findall(folded)


def content_words(text: str) -> list[str]:
    return [w for w in words(text) if w.isdigit() or w in MONTHS or w not in STOP_WORDS]


def stemmed_content(text: str) -> set[str]:
    return set(_stemmer.stemWords(content_words(text)))


def occurs_as_written(name: str, text: str) -> bool:
    return re.search(rf"(?<!\w){re.escape(name)}(?!\w)", text) is not None


def folded(name: str) -> str:
    """A name as figure 1 compares it: lower case, runs of white space as one space."""
    return " ".join(name.casefold().split())


def answer_present(answer: str, context: str) -> bool:
    wanted = content_words(answer)
    if wanted:
        return set(wanted) <= set(words(context))
    phrase = " ".join(words(answer))
    return bool(phrase) and f" {phrase} " in f" {' '.join(words(context))} "


# --- the conversation --------------------------------------------------------------------


@dataclass
class Conversation:
    speakers: tuple[str, str]
    turns: list[str]  # "[session date] Speaker: text"
    observations: list[tuple[str, str]]  # (speaker, sentence)
    events: list[str]
    qa: list[dict[str, Any]]  # the questions of QA_CATEGORIES

    @property
    def annotation_items(self) -> list[str]:
        """Every observation sentence, then every event."""
        return [sentence for _, sentence in self.observations] + self.events

    @property
    def annotations(self) -> str:
        return "\n".join(self.annotation_items)


def load_conversation(path: Path) -> Conversation:
    raw = json.loads(path.read_text())
    sessions = sorted(int(m[1]) for key in raw if (m := _SESSION.fullmatch(key)))
    turns = []
    for number in sessions:
        date = raw.get(f"session_{number}_date_time", "")
        for turn in raw[f"session_{number}"]:
            text = turn.get("text", "").strip()
            caption = (turn.get("blip_caption") or "").strip()
            if caption:  # as kgapp.graph.documents.conversations renders a shared photo
                text = f"{text} [shared a photo: {caption}]".strip()
            turns.append(f"[{date}] {turn['speaker']}: {text}")
    observations = [
        (speaker, item[0])
        for number in sessions
        for speaker, items in raw.get(f"session_{number}_observation", {}).items()
        for item in items
        if isinstance(item, list) and item and isinstance(item[0], str)
    ]
    events = [
        event
        for number in sessions
        for speaker, listed in raw.get(f"events_session_{number}", {}).items()
        if speaker != "date" and isinstance(listed, list)
        for event in listed
        if isinstance(event, str)
    ]
    qa = [q for q in raw.get("qa", []) if q.get("category") in QA_CATEGORIES and "answer" in q]
    return Conversation((raw["speaker_a"], raw["speaker_b"]), turns, observations, events, qa)


# --- the product -------------------------------------------------------------------------


def staff_client(slug: str) -> Any:
    """A tenant `slug`, and a client logged in as the bench's staff user."""
    from django.contrib.auth import get_user_model
    from django.test import Client

    from tenants import services

    services.tenant_create(slug=slug, name="LoCoMo extraction bench")
    user = get_user_model().objects.filter(username="bench").first()
    if user is None:
        user = get_user_model().objects.create_user(
            "bench", password="bench-password", is_staff=True
        )
    client = Client(HTTP_HOST="localhost")
    client.force_login(user)
    return client


def upload(client: Any, slug: str, path: Path) -> tuple[dict[str, Any], float]:
    """POST the file, wait for its job to end; the job record and the wall time."""
    started = time.perf_counter()
    with path.open("rb") as handle:
        response = client.post(f"/api/v1/t/{slug}/documents", {"files": [handle]})
    if response.status_code != 202:
        raise RuntimeError(f"upload refused: {response.status_code} {response.content[:500]!r}")
    job_id = response.json()[0]["job_id"]
    # Eagerly run, the job has ended when the POST returns; the wait is for a worker.
    deadline = time.monotonic() + 1800
    while True:
        job = client.get(f"/api/v1/t/{slug}/jobs/{job_id}").json()
        if job["status"] in ("completed", "failed", "paused") or time.monotonic() > deadline:
            return job, time.perf_counter() - started
        time.sleep(0.5)


@dataclass
class Graph:
    entities: dict[str, dict[str, Any]]  # current ones, by id
    aliases: dict[str, set[str]]  # entity id -> alias names
    facts: list[dict[str, Any]]  # current ones

    def name(self, record: Any) -> str:
        entity = self.entities.get(str(record))
        return entity["name"] if entity else str(record)


def read_graph(slug: str) -> Graph:
    from kgapp.graph.export import snapshot
    from tenants.models import Tenant
    from tenants.wiring import tenant_graph

    exported = tenant_graph(Tenant.objects.get(slug=slug)).run(snapshot.export_graph)
    now = datetime.now(UTC)
    entities = {str(e["id"]): e for e in exported["entity"] if not e.get("merged_into")}
    aliases: dict[str, set[str]] = {}
    for row in exported["alias"]:
        aliases.setdefault(str(row["entity"]), set()).add(row["name"])
    facts = [f for f in exported["relates_to"] if is_current(f, now)]
    return Graph(entities, aliases, facts)


def is_current(fact: dict[str, Any], now: datetime) -> bool:
    """True now, as known now: the product's one rule (kgapp/graph/time.py)."""
    return visible(fact, now, now)


# --- figures 1 and 2 ---------------------------------------------------------------------


def entities_named_in_annotations(graph: Graph, names: set[str]) -> tuple[int, int]:
    """Current entities whose name is one of `names` (`annotation_names`), entities."""
    found = sum(folded(e["name"]) in names for e in graph.entities.values())
    return found, len(graph.entities)


def annotation_names(conversation: Conversation) -> set[str]:
    """The names that the product's spaCy pipeline finds in the annotations, folded:
    named entities and noun chunks, without determiners and possessives (figure 1)."""
    from kgapp.graph.ingest.offline.extractor import DEFAULT_MODEL, load_pipeline

    items = conversation.annotation_items
    names: set[str] = set()
    single: set[str] = set()  # named entities of one word, to weigh below
    for doc in load_pipeline(DEFAULT_MODEL).pipe(items):
        for span in [e for e in doc.ents if e.label_ in NAMED_TYPES]:
            if name := without_determiners(span):
                (names if " " in name else single).add(name)
        for chunk in doc.noun_chunks:
            if " " in (name := without_determiners(chunk)):
                names.add(name)
    return names | {word for word in single if mostly_capitalised(word, items)}


def without_determiners(span: Any) -> str:
    """The span's text, folded, without determiners and possessives (whole possessors)."""
    dropped: set[int] = set()
    for token in span:
        if token.dep_ == "poss":
            dropped.update(t.i for t in token.subtree)
        elif token.pos_ == "DET" or token.dep_ in ("det", "predet", "case"):
            dropped.add(token.i)
    return folded("".join(t.text_with_ws for t in span if t.i not in dropped))


def mostly_capitalised(word: str, items: list[str]) -> bool:
    """Whether the texts write `word` (folded) with a capital initial more often than all
    in lower case (whole word, ignoring case)."""
    pattern = re.compile(rf"(?<!\w){re.escape(word)}(?!\w)", re.IGNORECASE)
    written = [m[0] for item in items for m in pattern.finditer(item)]
    capital = sum(w[0].isupper() for w in written)
    return capital > sum(w == w.lower() for w in written)


def entity_names_in_annotations(graph: Graph, conversation: Conversation) -> tuple[int, int]:
    """The measure figure 1 replaced, for information: names occurring as written."""
    text = conversation.annotations
    found = sum(occurs_as_written(e["name"], text) for e in graph.entities.values())
    return found, len(graph.entities)


def observation_coverage(graph: Graph, conversation: Conversation) -> dict[str, tuple[int, int]]:
    """Per speaker: observations touched, observations (see the module docstring)."""
    result = {}
    for speaker in conversation.speakers:
        own = {
            key
            for key, entity in graph.entities.items()
            if speaker.casefold()
            in {n.casefold() for n in {entity["name"], *graph.aliases.get(key, ())}}
        }
        others = []
        for fact in graph.facts:
            ends = (str(fact["in"]), str(fact["out"]))
            if (ends[0] in own) != (ends[1] in own):  # exactly one end is the speaker
                other = ends[1] if ends[0] in own else ends[0]
                if stems := stemmed_content(graph.name(other)):
                    others.append(stems)
        sentences = [s for who, s in conversation.observations if who == speaker]
        touched = sum(any(o <= stemmed_content(s) for o in others) for s in sentences)
        result[speaker] = (touched, len(sentences))
    return result


# --- figure 3 ----------------------------------------------------------------------------


class TurnBaseline:
    """BM25 over the conversation's turns, analysed like the product's BM25 index."""

    def __init__(self, turns: list[str]) -> None:
        from kgapp.graph.index.analysis import terms

        self.terms, self.turns = terms, turns
        logging.getLogger("bm25s").setLevel(logging.WARNING)  # it sets DEBUG on import
        self.retriever = bm25s.BM25()
        self.retriever.index([terms(t) for t in turns], show_progress=False)

    def context(self, question: str) -> str:
        scores = self.retriever.get_scores(self.terms(question))
        ranked = sorted(range(len(self.turns)), key=lambda i: (-scores[i], i))
        chosen: list[str] = []
        used = 0
        for index in ranked:
            if scores[index] <= 0 or used + len(self.turns[index]) + 1 > CONTEXT_CHARS:
                break
            chosen.append(self.turns[index])
            used += len(self.turns[index]) + 1
        return "\n".join(chosen)


def budget_tokens(conversation: Conversation) -> int:
    """The total token budget whose text is about CONTEXT_CHARS long on this talk."""
    from kgapp.graph.chunking import count_tokens

    text = "\n".join(conversation.turns)
    return int(CONTEXT_CHARS / (len(text) / count_tokens(text)))


@dataclass
class Answers:
    """Answers found in context and context lengths, per QA category."""

    limit: int | None = CONTEXT_CHARS  # None: contexts are taken whole
    found: dict[int, list[bool]] = field(default_factory=dict)
    lengths: list[int] = field(default_factory=list)
    truncated: int = 0
    milliseconds: list[float] = field(default_factory=list)  # the query's latency

    def add(self, category: int, answer: str, context: str) -> None:
        if self.limit is not None and len(context) > self.limit:
            context, self.truncated = context[: self.limit], self.truncated + 1
        self.found.setdefault(category, []).append(answer_present(answer, context))
        self.lengths.append(len(context))

    def share(self, category: int | None = None) -> float:
        rows = (
            self.found.get(category, [])
            if category
            else [x for v in self.found.values() for x in v]
        )
        return sum(rows) / len(rows) if rows else 0.0


def answer_in_context(
    client: Any, slug: str, conversation: Conversation
) -> tuple[Answers, Answers, Answers, int]:
    """(product within the budget, baseline, product's default), and the budget used."""
    total = budget_tokens(conversation)
    budgeted = {
        "mode": "mix",
        "max_total_tokens": total,
        "max_entity_tokens": max(50, int(total * ENTITY_SHARE)),
        "max_relation_tokens": max(50, int(total * RELATION_SHARE)),
    }
    product, baseline, default = Answers(), Answers(), Answers(limit=None)
    turns = TurnBaseline(conversation.turns)
    for item in conversation.qa:
        question, answer, category = item["question"], str(item["answer"]), item["category"]
        started = time.perf_counter()
        context = query_context(client, slug, {"query": question, **budgeted})
        product.milliseconds.append((time.perf_counter() - started) * 1000)
        product.add(category, answer, context)
        default.add(
            category, answer, query_context(client, slug, {"query": question, "mode": "mix"})
        )
        baseline.add(category, answer, turns.context(question))
    return product, baseline, default, total


def query_context(client: Any, slug: str, body: dict[str, Any]) -> str:
    response = client.post(
        f"/api/v1/t/{slug}/query", json.dumps(body), content_type="application/json"
    )
    if response.status_code != 200:
        raise RuntimeError(f"query failed: {response.status_code} {response.content[:500]!r}")
    return str(response.json()["context_text"])


# --- report ------------------------------------------------------------------------------


def percent(part: float) -> str:
    return f"{part * 100:.1f}%"


def table(rows: Iterable[tuple[str, str, str, str]]) -> Iterator[str]:
    rows = [("figure", "value", "target", "met"), *rows]
    widths = [max(len(row[i]) for row in rows) for i in range(4)]
    for number, row in enumerate(rows):
        yield "  " + "  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True))
        if number == 0:
            yield "  " + "  ".join("-" * w for w in widths)


def sample_facts(graph: Graph) -> list[str]:
    """SAMPLE_FACTS current facts spread evenly over valid time."""
    ordered = sorted(graph.facts, key=lambda f: (f["valid_at"], str(f["id"])))
    step = max(1, len(ordered) / SAMPLE_FACTS)
    picked = [ordered[int(i * step)] for i in range(min(SAMPLE_FACTS, len(ordered)))]
    return [
        f"    {graph.name(f['in'])} -[{f['relation']}]-> {graph.name(f['out'])}  "
        f"(valid_at {f['valid_at']:%Y-%m-%d})"
        for f in picked
    ]


def report(
    path: Path,
    job: dict[str, Any],
    wall: float,
    graph: Graph,
    conversation: Conversation,
    answers: tuple[Answers, Answers, Answers, int],
) -> dict[str, Any]:
    counts, timings = job.get("counts", {}), job.get("timings", {})
    extractor = job.get("extractor") or ("model" if counts.get("llm_calls") else "offline")
    named_found, names = entities_named_in_annotations(graph, annotation_names(conversation))
    names_found, _ = entity_names_in_annotations(graph, conversation)
    coverage = observation_coverage(graph, conversation)
    touched = sum(t for t, _ in coverage.values())
    observed = sum(n for _, n in coverage.values())
    product, baseline, default, budget = answers
    gain = (product.share() - baseline.share()) * 100
    median, p90 = timings.get("episode_median_ms"), timings.get("episode_p90_ms")
    bare = timings.get("episode_median_ms_without_extraction")
    bare_p90 = timings.get("episode_p90_ms_without_extraction")
    named_share = named_found / names if names else 0.0
    name_share = names_found / names if names else 0.0
    cover_share = touched / observed if observed else 0.0

    print(
        f"graph truth on LoCoMo {path.name} ({conversation.speakers[0]} and "
        f"{conversation.speakers[1]}), SurrealDB mem://, no model"
    )
    print(
        f"  job {job['status']}{': ' + job['error'] if job.get('error') else ''}; "
        f"extractor {extractor}; upload wall time {wall:.1f} s"
    )
    print(
        f"  episodes {counts.get('episodes', 0)}, entities {len(graph.entities)}, "
        f"facts {len(graph.facts)} (current); turns {len(conversation.turns)}, "
        f"observations {observed}, QA (categories 1, 2, 4) {len(conversation.qa)}"
    )
    print()
    for line in table(
        [
            (
                "entities_named_in_annotations",
                f"{percent(named_share)} ({named_found}/{names})",
                ">= 70%",
                yes(named_share >= TARGETS["entities_named_in_annotations"]),
            ),
            (
                "  was: entity_names_in_annotations",
                f"{percent(name_share)} ({names_found}/{names})",
                "(for information)",
                "-",
            ),
            (
                "observation_coverage",
                f"{percent(cover_share)} ({touched}/{observed})",
                ">= 50%",
                yes(cover_share >= TARGETS["observation_coverage"]),
            ),
            (
                "answer_in_context (product - BM25)",
                f"{gain:+.1f} points",
                ">= +10 points",
                yes(gain >= TARGETS["answer_in_context_gain_points"]),
            ),
            (
                "ingest_ms_per_episode_median",
                milliseconds(median, p90),
                "<= 40 ms",
                yes(median is not None and median <= TARGETS["ingest_ms_per_episode_median"]),
            ),
            (
                "  the same, but the extraction stage",
                milliseconds(bare, bare_p90),
                "(<= 40 ms)",
                yes(bare is not None and bare <= TARGETS["ingest_ms_per_episode_median"]),
            ),
        ]
    ):
        print(line)
    print()
    stages = {k: v for k, v in timings.items() if not k.startswith("episode_")}
    print("  job timings (ms, whole job): " + ", ".join(f"{k} {v:.0f}" for k, v in stages.items()))
    for speaker, (hit, total) in coverage.items():
        print(f"  observations of {speaker}: {hit}/{total} touched")
    print(
        f"  answer in context, product mode mix at {budget} tokens vs BM25 over turns "
        f"(<= {CONTEXT_CHARS} characters):"
    )
    for category, label in QA_CATEGORIES.items():
        asked = len(product.found.get(category, []))
        ours, theirs = product.share(category), baseline.share(category)
        print(
            f"    {category} {label:<11} n={asked:<3} product {percent(ours):>6}"
            f"  BM25 {percent(theirs):>6}  diff {(ours - theirs) * 100:+.1f} points"
        )
    print(
        f"    overall        n={len(conversation.qa):<3} product {percent(product.share()):>6}"
        f"  BM25 {percent(baseline.share()):>6}  diff {gain:+.1f} points"
    )
    print(
        f"    mean context length: product {mean(product.lengths):.0f} characters "
        f"({product.truncated} cut at {CONTEXT_CHARS}), BM25 {mean(baseline.lengths):.0f}"
    )
    print(
        f"    query latency (POST query, mode mix, budgeted; in-process client): "
        f"p50 {quantile(product.milliseconds, 0.5):.0f} ms, "
        f"p95 {quantile(product.milliseconds, 0.95):.0f} ms"
    )
    print(
        f"    today's default (mode mix, no budget): mean {mean(default.lengths):.0f} "
        f"characters, answer in context {percent(default.share())} (for information)"
    )
    names_sample = sorted(e["name"] for e in graph.entities.values())
    step = max(1, len(names_sample) // SAMPLE_FACTS)
    print(f"  sample entity names: {', '.join(names_sample[::step][:SAMPLE_FACTS])}")
    print(f"  {min(SAMPLE_FACTS, len(graph.facts))} sample facts (source -[relation]-> target):")
    for line in sample_facts(graph) or ["    (none)"]:
        print(line)
    row = {
        "bench": "extraction",
        "file": path.name,
        "extractor": extractor,
        "job_status": job["status"],
        "episodes": counts.get("episodes", 0),
        "entities": len(graph.entities),
        "facts": len(graph.facts),
        "upload_wall_s": round(wall, 2),
        "entities_named_in_annotations": round(named_share, 4),
        "entity_names_in_annotations": round(name_share, 4),
        "observation_coverage": round(cover_share, 4),
        "answer_in_context": {
            "product": {str(c): round(product.share(c), 4) for c in QA_CATEGORIES}
            | {"overall": round(product.share(), 4)},
            "baseline_bm25": {str(c): round(baseline.share(c), 4) for c in QA_CATEGORIES}
            | {"overall": round(baseline.share(), 4)},
            "gain_points": round(gain, 2),
            "budget_tokens": budget,
            "mean_chars": {
                "product": round(mean(product.lengths)),
                "baseline_bm25": round(mean(baseline.lengths)),
                "default_mix": round(mean(default.lengths)),
            },
            "default_mix": round(default.share(), 4),
        },
        "ingest_ms_per_episode_median": median,
        "ingest_ms_per_episode_p90": p90,
        "ingest_ms_per_episode_median_without_extraction": bare,
        "targets": TARGETS,
        # For the summary over several files (not printed in the JSON line).
        "_counts": (named_found, names_found, names, touched, observed),
        "_answers": (product, baseline),
    }
    print(json.dumps({k: v for k, v in row.items() if not k.startswith("_")}))
    return row


def milliseconds(median: float | None, p90: float | None) -> str:
    return "not reported" if median is None else f"{median:.1f} ms (p90 {p90 or 0:.1f})"


def summary(rows: list[dict[str, Any]]) -> None:
    """The figures over all the files: shares pooled (every entity, observation and
    question counts once), and the median of the jobs' per-episode medians."""
    named_found, names_found, names, touched, observed = (
        sum(r["_counts"][i] for r in rows) for i in range(5)
    )
    product = [x for r in rows for v in r["_answers"][0].found.values() for x in v]
    baseline = [x for r in rows for v in r["_answers"][1].found.values() for x in v]
    gain = (sum(product) - sum(baseline)) / len(product) * 100 if product else 0.0
    medians = [
        r["ingest_ms_per_episode_median"]
        for r in rows
        if r["ingest_ms_per_episode_median"] is not None
    ]
    bare = [
        r["ingest_ms_per_episode_median_without_extraction"]
        for r in rows
        if r["ingest_ms_per_episode_median_without_extraction"] is not None
    ]
    latency = [ms for r in rows for ms in r["_answers"][0].milliseconds]
    print()
    print(f"over all {len(rows)} conversations ({len(product)} questions):")
    print(
        f"  POST query (mix, budgeted) latency p50 {quantile(latency, 0.5):.0f} ms, "
        f"p95 {quantile(latency, 0.95):.0f} ms"
    )
    print(
        "  file      named  (was)   coverage  product  BM25    gain     ms/episode  "
        "without extraction"
    )
    for r in rows:
        a = r["answer_in_context"]
        print(
            f"  {r['file']:<9} {percent(r['entities_named_in_annotations']):>6}  "
            f"{percent(r['entity_names_in_annotations']):>6}  "
            f"{percent(r['observation_coverage']):>8}  {percent(a['product']['overall']):>7}  "
            f"{percent(a['baseline_bm25']['overall']):>6}  {a['gain_points']:+6.1f}  "
            f"{r['ingest_ms_per_episode_median'] or 0:>10.1f}  "
            f"{r['ingest_ms_per_episode_median_without_extraction'] or 0:>18.1f}"
        )
    named_share = named_found / names if names else 0.0
    name_share = names_found / names if names else 0.0
    cover_share = touched / observed if observed else 0.0
    median = statistics.median(medians) if medians else None
    bare_median = statistics.median(bare) if bare else None
    for line in table(
        [
            (
                "entities_named_in_annotations",
                f"{percent(named_share)} ({named_found}/{names})",
                ">= 70%",
                yes(named_share >= TARGETS["entities_named_in_annotations"]),
            ),
            (
                "  was: entity_names_in_annotations",
                f"{percent(name_share)} ({names_found}/{names})",
                "(for information)",
                "-",
            ),
            (
                "observation_coverage",
                f"{percent(cover_share)} ({touched}/{observed})",
                ">= 50%",
                yes(cover_share >= TARGETS["observation_coverage"]),
            ),
            (
                "answer_in_context (product - BM25)",
                f"{gain:+.1f} points ({percent(sum(product) / len(product))} vs "
                f"{percent(sum(baseline) / len(baseline))})"
                if product
                else "no questions",
                ">= +10 points",
                yes(gain >= TARGETS["answer_in_context_gain_points"]),
            ),
            (
                "ingest_ms_per_episode_median",
                f"{median or 0:.1f} ms (median of the jobs')",
                "<= 40 ms",
                yes(median is not None and median <= TARGETS["ingest_ms_per_episode_median"]),
            ),
            (
                "  the same, but the extraction stage",
                f"{bare_median or 0:.1f} ms",
                "(<= 40 ms)",
                yes(
                    bare_median is not None
                    and bare_median <= TARGETS["ingest_ms_per_episode_median"]
                ),
            ),
        ]
    ):
        print(line)
    print(
        json.dumps(
            {
                "bench": "extraction",
                "files": [r["file"] for r in rows],
                "entities_named_in_annotations": round(named_share, 4),
                "entity_names_in_annotations": round(name_share, 4),
                "observation_coverage": round(cover_share, 4),
                "answer_in_context_gain_points": round(gain, 2),
                "ingest_ms_per_episode_median": median,
                "ingest_ms_per_episode_median_without_extraction": bare_median,
            }
        )
    )


def yes(met: bool) -> str:
    return "yes" if met else "no"


def quantile(values: list[float], share: float) -> float:
    """Nearest rank."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(share * len(ordered)) - 1)] if ordered else 0.0


def mean(values: list[int]) -> float:
    return statistics.fmean(values) if values else 0.0


def main(file_names: list[str]) -> None:
    paths = [DATA / name for name in file_names]
    missing = [str(path) for path in paths if not path.is_file()] or ([] if paths else [str(DATA)])
    if missing:
        print(f"shared data missing: {', '.join(missing)} not found; nothing measured")
        return
    with tempfile.TemporaryDirectory(prefix="kg-bench-extraction-") as scratch:
        var = Path(scratch)
        server = surreal_server.start(storage="mem://", log=var / "surreal.log")
        try:
            django_setup(var, server)
            from tenants.wiring import reset_graph_runtime

            try:
                rows = []
                for path in paths:
                    conversation = load_conversation(path)
                    slug = f"locomo-{path.stem}"
                    client = staff_client(slug)
                    job, wall = upload(client, slug, path)
                    graph = read_graph(slug)
                    answers = answer_in_context(client, slug, conversation)
                    rows.append(report(path, job, wall, graph, conversation, answers))
                    print(flush=True)
                if len(rows) > 1:
                    summary(rows)
            finally:
                reset_graph_runtime()  # close the connections before the server goes
        finally:
            server.stop()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument(
        "--file",
        action="append",
        help="a file of the shared LoCoMo folder (repeat for more); default: all of them",
    )
    chosen = parser.parse_args().file
    main(chosen or sorted(p.name for p in DATA.glob("*.json")))
