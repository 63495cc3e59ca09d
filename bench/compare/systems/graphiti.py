"""graphiti-core (0.31.2) on an on-disk Kuzu database, driven through its normal
`add_episode` path with its default settings, so the comparison measures graphiti's own
machinery: entity resolution, edge deduplication, temporal invalidation and hybrid
search.

The model behind it is the bench's scripted server, reached through graphiti's
`OpenAIGenericClient` (chat completions with a `json_schema` response format: the
server has no Responses API). Every prompt graphiti sends is answered from the gold
corpus, as a perfect model would answer it; the prompt kind is read from the response
schema's name, which graphiti sets to its pydantic model (`ExtractedEntities`,
`NodeResolutions`, ...), and the prompt's own tagged sections (`<TEXT>`, `<ENTITIES>`,
`<EXISTING FACTS>`, ...) supply what the answer needs.

Embeddings come from the bench's shared MiniLM (384 dimensions) through an
`EmbedderClient`; the cross-encoder, which graphiti's default search does not use,
ranks by the same embeddings' cosine.
"""

from __future__ import annotations

import ast
import asyncio
import json
import os
import warnings
from collections.abc import Callable, Iterable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench.compare.corpus import Corpus, Episode, Fact
from bench.compare.model import Answerer, BenchModel, Embeddings
from bench.compare.systems.base import System, SystemEntity, SystemFact

# graphiti reads these when first imported: no telemetry, no hub downloads, and the
# dimension it falls back on for vector placeholders.
os.environ["GRAPHITI_TELEMETRY_ENABLED"] = "false"
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("EMBEDDING_DIM", str(Embeddings.dimension))

from graphiti_core import Graphiti  # noqa: E402
from graphiti_core.cross_encoder.client import CrossEncoderClient  # noqa: E402
from graphiti_core.driver.kuzu_driver import KuzuDriver  # noqa: E402
from graphiti_core.edges import EntityEdge  # noqa: E402
from graphiti_core.embedder.client import EmbedderClient, EmbedderConfig  # noqa: E402
from graphiti_core.llm_client.config import LLMConfig  # noqa: E402
from graphiti_core.llm_client.openai_generic_client import OpenAIGenericClient  # noqa: E402
from graphiti_core.nodes import EntityNode, EpisodeType  # noqa: E402
from graphiti_core.search.search_config_recipes import EDGE_HYBRID_SEARCH_RRF  # noqa: E402
from graphiti_core.search.search_filters import (  # noqa: E402
    ComparisonOperator,
    DateFilter,
    SearchFilters,
)
from graphiti_core.search.search_helpers import format_edge_date_range  # noqa: E402
from graphiti_core.utils.datetime_utils import ensure_utc  # noqa: E402
from graphiti_core.utils.text_utils import MAX_SUMMARY_CHARS  # noqa: E402

GROUP = "bench"
MODEL_NAME = "bench-model"
CONTEXT_RESULTS = 50

Json = dict[str, Any]
_INVISIBLE = "\u200b\u200c\u200d\ufeff\u2060"


# -- reading graphiti's prompts ----------------------------------------------------------


def _section(text: str, tag: str) -> str | None:
    """The text between `<tag>` and `</tag>` (first occurrence), as graphiti frames
    each part of its prompts; None when the prompt has no such section."""
    start = text.find(f"<{tag}>")
    if start < 0:
        return None
    start += len(tag) + 2
    end = text.find(f"</{tag}>", start)
    return text[start : end if end >= 0 else len(text)].strip()


def _structured(text: str | None) -> Any:
    """A section's data: graphiti embeds some as JSON (`to_prompt_json`) and some as a
    Python repr (`{context[...]}` in an f-string), so both are tried."""
    if not text:
        return None
    for parse in (json.loads, ast.literal_eval):
        try:
            return parse(text)
        except (ValueError, SyntaxError, TypeError, RecursionError, MemoryError):
            continue
    return None


def _records(text: str | None) -> list[Json]:
    data = _structured(text)
    return [item for item in data if isinstance(item, dict)] if isinstance(data, list) else []


def _normal(text: str) -> str:
    """Text as graphiti's client sends it (no invisible or control characters), each
    line trimmed, for matching an episode however a prompt framed it."""
    kept = "".join(c for c in text if (c.isprintable() or c in "\n\t") and c not in _INVISIBLE)
    return "\n".join(line.strip() for line in kept.splitlines()).strip()


def _iso(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _schema_name(body: Json) -> str | None:
    response_format = body.get("response_format") or {}
    return (response_format.get("json_schema") or {}).get("name")


def _user_text(body: Json) -> str:
    """The last message: graphiti puts the task and its data in the user message."""
    messages = body.get("messages") or [{}]
    return str(messages[-1].get("content") or "")


class _GoldAnswerer:
    """Answers each graphiti prompt from the gold corpus ("perfect extraction").

    Keyed by the response schema graphiti asks for; the label returned names the
    prompt kind so the report can break calls down by task.
    """

    def __init__(self, corpus: Corpus) -> None:
        self.corpus = corpus
        self._normal: dict[str, str] = {}
        self.handlers: dict[str, tuple[str, Callable[[str], Json | None]]] = {
            "ExtractedEntities": ("extract_nodes", self.extract_nodes),
            "NodeResolutions": ("dedupe_nodes", self.dedupe_nodes),
            "NodeDuplicate": ("dedupe_nodes", self.dedupe_node),
            "ExtractedEdges": ("extract_edges", self.extract_edges),
            "EdgeDuplicate": ("resolve_edge", self.resolve_edge),
            "EdgeTimestamps": ("edge_dates", self.edge_dates),
            "BatchEdgeTimestamps": ("edge_dates", self.edge_dates_batch),
            "SummarizedEntities": ("summarize", self.summaries),
            "Summary": ("community_summary", lambda _: {"summary": ""}),
            "SummaryDescription": ("community_summary", lambda _: {"description": ""}),
        }

    def __call__(self, body: Json) -> tuple[str, Any] | None:
        found = self.handlers.get(_schema_name(body) or "")
        if found is None:
            return None
        label, handler = found
        answer = handler(_user_text(body))
        return None if answer is None else (label, answer)

    # -- which episode, which fact ------------------------------------------------------

    def current_episode(self, text: str | None) -> Episode | None:
        """The episode a section carries. `<MESSAGES>` and `<EPISODES>` hold the
        previous episodes' JSON list, then the current episode as a JSON string on the
        last line; `<TEXT>` and `<CURRENT_MESSAGE>` hold the current episode raw."""
        if not text:
            return None
        for line in reversed(text.splitlines()):
            decoded = _structured(line.strip())
            if isinstance(decoded, str) and (found := self.episodes_in(decoded)):
                return found[0]
        found = self.episodes_in(text)
        return found[0] if found else None

    def episodes_in(self, text: str) -> list[Episode]:
        """Episodes whose text `text` carries, the best match first (the whole of it,
        then the longest); graphiti's client strips invisible characters and the
        sections are trimmed, hence the normalised second try."""
        found = self.corpus.episode_in(text)
        if not found:
            normal = _normal(text)
            found = [e for e in self.corpus.episodes if self.normal_text(e) in normal]
        return sorted(found, key=lambda e: (e.text.strip() != text.strip(), -len(e.text)))

    def normal_text(self, episode: Episode) -> str:
        if episode.id not in self._normal:
            self._normal[episode.id] = _normal(episode.text)
        return self._normal[episode.id]

    def episode_facts(self, episode: Episode) -> list[Fact]:
        return [self.corpus.facts[fid] for fid in episode.facts]

    # -- nodes --------------------------------------------------------------------------

    def extract_nodes(self, prompt: str) -> Json | None:
        text = next(
            (
                s
                for tag in ("TEXT", "CURRENT MESSAGE", "CURRENT_MESSAGE", "JSON")
                if (s := _section(prompt, tag))
            ),
            None,
        )
        episode = self.current_episode(text)
        if episode is None:
            return None
        types = _records(_section(prompt, "ENTITY TYPES"))
        seen: set[str] = set()
        entities = []
        for mention in episode.mentions:
            if mention.surface in seen:
                continue
            seen.add(mention.surface)
            kind = self.corpus.entities[mention.entity].type
            entities.append(
                {
                    "name": mention.surface,
                    "entity_type_id": _type_id(types, kind),
                    "episode_indices": [0],
                }
            )
        return {"extracted_entities": entities}

    def duplicate_of(self, name: str, existing: Sequence[Json]) -> int:
        """The candidate id of the first existing node naming the same gold entity."""
        return next(
            (
                int(c["candidate_id"])
                for c in existing
                if self.corpus.same_entity(name, str(c.get("name", "")))
            ),
            -1,
        )

    def dedupe_nodes(self, prompt: str) -> Json | None:
        extracted = _records(_section(prompt, "ENTITIES"))
        existing = _records(_section(prompt, "EXISTING ENTITIES"))
        return {
            "entity_resolutions": [
                {
                    "id": int(node["id"]),
                    "name": node["name"],
                    "duplicate_candidate_id": self.duplicate_of(node["name"], existing),
                }
                for node in extracted
            ]
        }

    def dedupe_node(self, prompt: str) -> Json | None:
        node = _structured(_section(prompt, "NEW ENTITY"))
        if not isinstance(node, dict):
            return None
        existing = _records(_section(prompt, "EXISTING ENTITIES"))
        name = str(node.get("name", ""))
        return {
            "id": int(node.get("id", 0)),
            "name": name,
            "duplicate_candidate_id": self.duplicate_of(name, existing),
        }

    # -- edges --------------------------------------------------------------------------

    def extract_edges(self, prompt: str) -> Json | None:
        episode = self.current_episode(_section(prompt, "CURRENT_MESSAGE"))
        if episode is None:
            return None
        names = [str(n.get("name", "")) for n in _records(_section(prompt, "ENTITIES"))]

        def listed(entity: str) -> str:
            # The episode's own surface name, which graphiti extracted; any listed name
            # of the same entity otherwise (graphiti rejects names it did not list).
            surface = episode.surface_of(entity)
            if surface in names:
                return surface
            return next((n for n in names if self.corpus.entity_of(n) == entity), surface)

        return {
            "edges": [
                {
                    "source_entity_name": listed(fact.subject),
                    "target_entity_name": listed(fact.object),
                    "relation_type": fact.relation,
                    "fact": fact.text,
                    "valid_at": _iso(fact.valid_from),
                    "invalid_at": None,
                    "episode_indices": [0],
                }
                for fact in self.episode_facts(episode)
            ]
        }

    def resolve_edge(self, prompt: str) -> Json | None:
        new = self.fact_of(_section(prompt, "NEW FACT") or "")
        if new is None:  # not a fact this answerer gave: left unanswered, so it shows
            return None
        existing = _records(_section(prompt, "EXISTING FACTS"))
        candidates = _records(_section(prompt, "FACT INVALIDATION CANDIDATES"))
        duplicates = [int(item["idx"]) for item in existing if self.same_fact(new, item)]
        contradicted = [
            int(item["idx"]) for item in existing + candidates if self.contradicts(new, item)
        ]
        return {"duplicate_facts": duplicates, "contradicted_facts": contradicted}

    def fact_of(self, text: str) -> Fact | None:
        """The gold fact a stored fact text is, as sent back through graphiti's client
        (which strips invisible characters)."""
        found = self.corpus.fact_in(text)
        if found is None and text.strip():
            normal = _normal(text)
            found = next((f for f in self.corpus.facts.values() if _normal(f.text) in normal), None)
        return found

    def same_fact(self, new: Fact, item: Json) -> bool:
        old = self.fact_of(str(item.get("fact", "")))
        return old is not None and old.id == new.id

    def contradicts(self, new: Fact, item: Json) -> bool:
        old = self.fact_of(str(item.get("fact", "")))
        return old is not None and self.corpus.conflict(new, old)

    def dates_of(self, text: str) -> Json:
        fact = self.fact_of(text)
        return {"valid_at": _iso(fact.valid_from) if fact else None, "invalid_at": None}

    def edge_dates(self, prompt: str) -> Json | None:
        return self.dates_of(_section(prompt, "FACT") or "")

    def edge_dates_batch(self, prompt: str) -> Json | None:
        facts = _structured(_section(prompt, "FACTS"))
        if not isinstance(facts, list):
            return None
        texts = [str(f.get("fact", "")) if isinstance(f, dict) else str(f) for f in facts]
        return {"timestamps": [self.dates_of(text) for text in texts]}

    # -- summaries ----------------------------------------------------------------------

    def summary_of(self, name: str, existing: str, episode: Episode | None) -> str:
        """The entity's facts stated in this episode, then what its summary already
        held, cut at a line under graphiti's summary limit: truthful and bounded."""
        entity = self.corpus.entity_of(name)
        lines = [
            f.text
            for f in (self.episode_facts(episode) if episode else [])
            if entity in (f.subject, f.object)
        ]
        lines += [line for line in existing.splitlines() if line.strip() and line not in lines]
        kept: list[str] = []
        for line in lines:
            if sum(len(k) + 1 for k in kept) + len(line) > MAX_SUMMARY_CHARS:
                break
            kept.append(line)
        return "\n".join(kept) or name

    def summaries(self, prompt: str) -> Json | None:
        messages = _section(prompt, "MESSAGES") or _section(prompt, "EPISODES")
        episode = self.current_episode(messages)
        entities = _records(_section(prompt, "ENTITIES"))
        return {
            "summaries": [
                {
                    "name": e["name"],
                    "summary": self.summary_of(e["name"], e.get("summary") or "", episode),
                }
                for e in entities
                if "name" in e
            ]
        }


def _type_id(types: Sequence[Json], kind: str) -> int:
    """The id graphiti gave the gold type if it listed one, else its default `Entity`."""
    by_name = {str(t.get("entity_type_name")): int(t.get("entity_type_id", 0)) for t in types}
    return by_name.get(kind, by_name.get("Entity", 0))


# -- graphiti's clients --------------------------------------------------------------------


class BenchEmbedder(EmbedderClient):
    """graphiti's embedder interface over the bench's shared MiniLM (384 dimensions).
    Encoding runs in a thread so the event loop keeps serving graphiti's other work."""

    def __init__(self, embeddings: Embeddings) -> None:
        self.embeddings = embeddings
        self.config = EmbedderConfig(embedding_dim=embeddings.dimension)

    async def create(
        self, input_data: str | list[str] | Iterable[int] | Iterable[Iterable[int]]
    ) -> list[float]:
        if isinstance(input_data, str):
            text = input_data
        else:
            items = list(input_data)
            if not items or not isinstance(items[0], str):
                raise TypeError("the bench embedder takes text, not token ids")
            text = items[0]
        return (await self.create_batch([text]))[0]

    async def create_batch(self, input_data_list: list[str]) -> list[list[float]]:
        if not input_data_list:
            return []
        return await asyncio.to_thread(self.embeddings.embed, list(input_data_list))


class EmbeddingCrossEncoder(CrossEncoderClient):
    """Ranks passages by embedding cosine (the vectors are normalised, so a dot
    product); only reached by search configurations that ask for a cross-encoder."""

    def __init__(self, embedder: BenchEmbedder) -> None:
        self.embedder = embedder

    async def rank(self, query: str, passages: list[str]) -> list[tuple[str, float]]:
        if not passages:
            return []
        vectors = await self.embedder.create_batch([query, *passages])
        scores = [sum(a * b for a, b in zip(vectors[0], v, strict=True)) for v in vectors[1:]]
        return sorted(zip(passages, scores, strict=True), key=lambda pair: -pair[1])


def _llm_client(base_url: str) -> OpenAIGenericClient:
    """graphiti's chat-completions client at the bench model, its defaults otherwise
    (json_schema structured output, its own retries, no cache)."""
    config = LLMConfig(api_key="bench", base_url=base_url, model=MODEL_NAME, small_model=MODEL_NAME)
    return OpenAIGenericClient(config=config, cache=False)


# -- the system ----------------------------------------------------------------------------


class GraphitiSystem(System):
    name = "Graphiti"

    def __init__(self) -> None:
        self._graphiti: Graphiti | None = None
        self._driver: KuzuDriver | None = None

    @staticmethod
    def answerer(corpus: Corpus) -> Answerer:
        return _GoldAnswerer(corpus)

    @property
    def graphiti(self) -> Graphiti:
        if self._graphiti is None:
            raise RuntimeError("GraphitiSystem.open() has not been called")
        return self._graphiti

    async def open(self, workdir: Path, model: BenchModel, embeddings: Embeddings) -> None:
        workdir.mkdir(parents=True, exist_ok=True)
        with warnings.catch_warnings():  # the Kuzu backend is deprecated upstream
            warnings.simplefilter("ignore", DeprecationWarning)
            driver = KuzuDriver(db=str(workdir / "graphiti.kuzu"))
        # Kuzu has one database; naming it after the group makes add_episode and
        # search use this driver as is instead of asking for a per-group clone.
        driver._database = GROUP
        embedder = BenchEmbedder(embeddings)
        self._driver = driver
        self._graphiti = Graphiti(
            graph_driver=driver,
            llm_client=_llm_client(model.base_url),
            embedder=embedder,
            cross_encoder=EmbeddingCrossEncoder(embedder),
        )
        # Kuzu's full-text indexes are made here, not by the schema set-up.
        await driver.graph_ops.build_indices_and_constraints(driver)

    async def ingest(self, episode: Episode) -> None:
        await self.graphiti.add_episode(
            name=episode.id,
            episode_body=episode.text,
            source=EpisodeType.message if episode.source == "message" else EpisodeType.text,
            source_description="bench corpus episode",
            reference_time=episode.reference_time,
            group_id=GROUP,
        )

    async def _nodes(self) -> list[EntityNode]:
        return await EntityNode.get_by_group_ids(self.graphiti.driver, [GROUP])

    async def entities(self) -> list[SystemEntity]:
        return [SystemEntity(node.name) for node in await self._nodes()]

    async def facts(self) -> list[SystemFact]:
        names = {node.uuid: node.name for node in await self._nodes()}
        edges = await EntityEdge.get_by_group_ids(self.graphiti.driver, [GROUP])
        now = datetime.now(UTC)
        return [
            SystemFact(
                edge.fact,
                names.get(edge.source_node_uuid, ""),
                names.get(edge.target_node_uuid, ""),
                _current(edge, now),
            )
            for edge in edges
        ]

    async def _search(self, query: str, limit: int, at: datetime | None) -> list[EntityEdge]:
        # graphiti.search() sets `limit` on the shared EDGE_HYBRID_SEARCH_RRF recipe,
        # which add_episode also uses for its duplicate and invalidation candidates;
        # a copy of the same recipe keeps a search from changing later ingestion.
        config = EDGE_HYBRID_SEARCH_RRF.model_copy(deep=True, update={"limit": limit})
        results = await self.graphiti.search_(
            query, config=config, group_ids=[GROUP], search_filter=_valid_at(at)
        )
        return results.edges

    async def search(self, query: str, k: int, at: datetime | None = None) -> list[str]:
        return [edge.fact for edge in await self._search(query, k, at)]

    async def context(self, query: str, max_chars: int) -> str:
        lines = [
            f"- {edge.fact} ({format_edge_date_range(edge)})"
            for edge in await self._search(query, CONTEXT_RESULTS, None)
        ]
        return _cut(lines, max_chars)

    async def close(self) -> None:
        if self._graphiti is not None:
            await self._graphiti.close()
        if self._driver is not None:
            # KuzuDriver.close() leaves the connection to the garbage collector; close
            # it here so the database file is released when close() returns.
            self._driver.client.close()
            self._driver.db.close()
        self._graphiti = self._driver = None


def _current(edge: EntityEdge, now: datetime) -> bool:
    """Held true now: not expired (superseded in graphiti's own time) and not ended in
    the world's time (an invalid_at still in the future keeps it current)."""
    if edge.expired_at is not None:
        return False
    ended = ensure_utc(edge.invalid_at)
    return ended is None or ended > now


def _valid_at(at: datetime | None) -> SearchFilters:
    """Edges valid at `at`: valid_at <= at and (invalid_at is null or invalid_at > at).
    graphiti ANDs the fields and, within one, ORs the outer lists of ANDed filters."""
    if at is None:
        return SearchFilters()
    moment = at.astimezone(UTC) if at.tzinfo else at.replace(tzinfo=UTC)
    op = ComparisonOperator
    return SearchFilters(
        valid_at=[[DateFilter(date=moment, comparison_operator=op.less_than_equal)]],
        invalid_at=[
            [DateFilter(comparison_operator=op.is_null)],
            [DateFilter(date=moment, comparison_operator=op.greater_than)],
        ],
    )


def _cut(lines: Sequence[str], max_chars: int) -> str:
    """Whole lines while they fit; the first one cut short if even it does not."""
    kept: list[str] = []
    used = 0
    for line in lines:
        extra = len(line) + (1 if kept else 0)
        if used + extra > max_chars:
            break
        kept.append(line)
        used += extra
    if not kept and lines:
        return lines[0][:max_chars]
    return "\n".join(kept)
