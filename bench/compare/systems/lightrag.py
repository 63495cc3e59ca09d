"""LightRAG (lightrag-hku 1.5.7) as its SDK runs it: one `LightRAG` per run with its
default file storages under the workdir (JSON key-value, NanoVectorDB, NetworkX graph),
its own prompts and pipeline (chunking, extraction with one gleaning pass, merging with
LLM summaries past its thresholds), chat through its own OpenAI binding
(`openai_complete_if_cache`, the real `openai` client) against the bench model, and the
shared MiniLM embedder.

What LightRAG cannot do, and how the adapter reports it:
- It has no time model: a relation it stores is true for ever. A later contradicting
  fact adds a second edge (or joins the same edge's description); nothing is ended or
  invalidated, so every fact is reported `current=True`. The episode's date reaches it
  only inside the episode text (the corpus texts carry it).
- It has no point-in-time query: `search(at=...)` raises Unsupported.
- One edge per entity pair: facts between the same two names share one edge, their
  descriptions joined with LightRAG's separator (or merged by its summary prompt).

Setup choices the offline bench forces (and why):
- A reversible offline tokenizer (four characters a token, about tiktoken's rate on
  English and the bench server's own estimate) since tiktoken cannot download.
- A cosine threshold of 0.05 instead of 0.2: MiniLM scores a one-word high-level
  keyword ("work", "live") against relation texts at only 0.2 to 0.3, so the default
  cut would drop global matches almost at random (names against entity texts score
  0.6 to 0.8 and pass either way).
- LLM caches off, so every call LightRAG would make really reaches the model.
"""

from __future__ import annotations

import asyncio
import json
import logging
import uuid
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np
from lightrag import LightRAG, QueryParam
from lightrag.base import DocStatus
from lightrag.llm.openai import openai_complete_if_cache
from lightrag.prompt import PROMPTS
from lightrag.utils import EmbeddingFunc, Tokenizer

from bench.compare.corpus import Corpus, Episode
from bench.compare.model import Answerer, BenchModel, Embeddings
from bench.compare.systems.base import System, SystemEntity, SystemFact, Unsupported

TUPLE = PROMPTS["DEFAULT_TUPLE_DELIMITER"]
COMPLETE = PROMPTS["DEFAULT_COMPLETION_DELIMITER"]
# The corpus's types mapped onto the ones LightRAG's extraction prompt lists.
TYPES = {"Product": "Artifact", "Title": "Concept"}
CHARS_PER_TOKEN = 4
COSINE_THRESHOLD = 0.05
EMBEDDING_TOKENS = 256  # MiniLM truncates at 256 word pieces
MODEL_NAME = "bench"
RESPONSE_TYPE = "Multiple Paragraphs"  # QueryParam's default, for the context budget


class _CharGroups:
    """Encodes each run of four characters as one integer (code points packed 21 bits
    apiece behind a 1 bit), so any token slice decodes back to the exact characters.
    Stateless, hence safe across threads and under deepcopy as LightRAG requires."""

    def encode(self, content: str) -> list[int]:
        tokens = []
        for start in range(0, len(content), CHARS_PER_TOKEN):
            token = 1
            for char in content[start : start + CHARS_PER_TOKEN]:
                token = (token << 21) | ord(char)
            tokens.append(token)
        return tokens

    def decode(self, tokens: list[int]) -> str:
        parts = []
        for token in tokens:
            chars = []
            while token > 1:
                chars.append(chr(token & 0x1FFFFF))
                token >>= 21
            parts.append("".join(reversed(chars)))
        return "".join(parts)


def offline_tokenizer() -> Tokenizer:
    return Tokenizer(model_name="char-groups-4", tokenizer=_CharGroups())


# -- reading LightRAG's prompts ---------------------------------------------------------


def _prefix(template: str) -> str:
    """A template's fixed opening (up to its first placeholder): what marks a prompt
    of that kind, read from LightRAG's own PROMPTS so a reworded release still
    matches or fails loudly (as an unknown prompt) instead of being misread."""
    return _unescape(template[: template.index("{")])


def _unescape(text: str) -> str:
    return text.replace("{{", "{").replace("}}", "}")


def _field(message: str, template: str, name: str) -> str | None:
    """The value `template`'s `{name}` took in `message`: the text between the fixed
    strings around that placeholder in the template."""
    before, after = template.split("{" + name + "}", 1)
    opener = _unescape(before[before.rindex("}") + 1 :] if "}" in before else before)
    # Trailing whitespace is left out: LightRAG strips the prompt it sends.
    closer = _unescape(after[: after.index("{")] if "{" in after else after).rstrip()
    start = message.rfind(opener)
    if start < 0:
        return None
    start += len(opener)
    end = message.rfind(closer) if closer else len(message)
    return message[start:end] if end >= start else None


EXTRACT = _prefix(PROMPTS["entity_extraction_user_prompt"])
GLEAN = _prefix(PROMPTS["entity_continue_extraction_user_prompt"])
SUMMARIZE = _prefix(PROMPTS["summarize_entity_descriptions"])
KEYWORDS = _prefix(PROMPTS["keywords_extraction"])
ANSWER = (_prefix(PROMPTS["rag_response"]), _prefix(PROMPTS["naive_rag_response"]))


def _messages(body: dict[str, Any]) -> tuple[str, str]:
    """(system prompt, last user message) of a chat request."""
    messages = body.get("messages", [])
    system = next((str(m.get("content") or "") for m in messages if m.get("role") == "system"), "")
    user = next(
        (str(m.get("content") or "") for m in reversed(messages) if m.get("role") == "user"), ""
    )
    return system, user


def _extraction(corpus: Corpus, user: str) -> str:
    """Perfect extraction of the episode the chunk is: its mentions as entities and its
    gold facts as relations whose description is the fact's own sentence, so a stored
    edge tells which gold facts it holds."""
    chunk = _field(user, PROMPTS["entity_extraction_user_prompt"], "input_text") or ""
    episode = _episode_of(corpus, chunk.strip())
    if episode is None:
        return COMPLETE
    rows: list[str] = []
    named: set[str] = set()
    for mention in episode.mentions:
        if mention.surface in named:
            continue
        named.add(mention.surface)
        kind = corpus.entities[mention.entity].type
        about = corpus.description(episode, mention.entity)
        rows.append(TUPLE.join(["entity", mention.surface, TYPES.get(kind, kind), about]))
    for fid in episode.facts:
        fact = corpus.facts[fid]
        keywords = fact.relation.lower().replace("_", " ")
        rows.append(
            TUPLE.join(
                [
                    "relation",
                    episode.surface_of(fact.subject),
                    episode.surface_of(fact.object),
                    keywords,
                    fact.text,
                ]
            )
        )
    return "\n".join([*rows, COMPLETE])


def _episode_of(corpus: Corpus, chunk: str) -> Episode | None:
    """The episode a chunk is (or holds, or is part of, were an episode ever split)."""
    if not chunk:
        return None
    found = corpus.episode_in(chunk) or [e for e in corpus.episodes if chunk in e.text]
    return found[-1] if found else None


def _summary(user: str) -> str:
    """A lossless merge: every description kept whole, one a paragraph, so each gold
    sentence stays findable in the stored text."""
    listed = _field(user, PROMPTS["summarize_entity_descriptions"], "description_list") or ""
    descriptions = []
    for line in listed.splitlines():
        line = line.strip()
        if not line:
            continue
        try:
            descriptions.append(str(json.loads(line)["Description"]))
        except (ValueError, KeyError, TypeError):
            descriptions.append(line)
    return "\n".join(descriptions)


def _answer(corpus: Corpus, question: str) -> str:
    """A correct final answer (only reached if a query ever asks for generation)."""
    asked = next((q for q in corpus.questions if q.text == question.strip()), None)
    if asked is None:
        return "I do not have enough information to answer."
    return corpus.facts[asked.answer].text


# -- the system --------------------------------------------------------------------------


class LightRAGSystem(System):
    name = "LightRAG"

    def __init__(self) -> None:
        self._rag: LightRAG | None = None
        self._tokenizer = offline_tokenizer()

    @staticmethod
    def answerer(corpus: Corpus) -> Answerer:
        def answer(body: dict[str, Any]) -> tuple[str, Any] | None:
            system, user = _messages(body)
            if user.startswith(EXTRACT):
                return "extract", _extraction(corpus, user)
            if user.startswith(GLEAN):
                return "glean", COMPLETE  # perfect extraction missed nothing
            if user.startswith(SUMMARIZE):
                return "summarize", _summary(user)
            if user.startswith(KEYWORDS):
                query = _field(user, PROMPTS["keywords_extraction"], "query") or ""
                high, low = corpus.keywords(query.strip())
                return "keywords", {"high_level_keywords": high, "low_level_keywords": low}
            if system.startswith(ANSWER):
                return "answer", _answer(corpus, user)
            return None

        return answer

    @property
    def rag(self) -> LightRAG:
        assert self._rag is not None, "open() first"
        return self._rag

    async def open(self, workdir: Path, model: BenchModel, embeddings: Embeddings) -> None:
        logging.getLogger("lightrag").setLevel(logging.WARNING)  # its INFO is per chunk
        workdir.mkdir(parents=True, exist_ok=True)
        base_url = model.base_url

        async def complete(
            prompt: str,
            system_prompt: str | None = None,
            history_messages: list[dict[str, Any]] | None = None,
            **kwargs: Any,
        ) -> str:
            return await openai_complete_if_cache(
                MODEL_NAME,
                prompt,
                system_prompt=system_prompt,
                history_messages=history_messages,
                base_url=base_url,
                api_key="bench",
                **kwargs,
            )

        async def embed(texts: list[str]) -> np.ndarray:
            vectors = await asyncio.to_thread(embeddings.embed, list(texts))
            return np.asarray(vectors, dtype=np.float32)

        self._rag = LightRAG(
            working_dir=str(workdir),
            # Its own workspace: LightRAG keeps per-workspace state (pipeline busy
            # flag, locks) process-wide, so two instances in one process stay apart.
            workspace=f"bench_{uuid.uuid4().hex[:12]}",
            llm_model_func=complete,
            llm_model_name=MODEL_NAME,
            embedding_func=EmbeddingFunc(
                embedding_dim=embeddings.dimension,
                max_token_size=EMBEDDING_TOKENS,
                func=embed,
                model_name="all-MiniLM-L6-v2",
            ),
            tokenizer=self._tokenizer,
            vector_db_storage_cls_kwargs={"cosine_better_than_threshold": COSINE_THRESHOLD},
            cosine_better_than_threshold=COSINE_THRESHOLD,
            enable_llm_cache=False,
            enable_llm_cache_for_entity_extract=False,
        )
        await self.rag.initialize_storages()

    async def ingest(self, episode: Episode) -> None:
        # The corpus texts already carry their date, the only time LightRAG can keep.
        await self.rag.ainsert(episode.text, ids=[episode.id], file_paths=[episode.id])
        status = await self.rag.doc_status.get_by_id(episode.id)
        state = (status or {}).get("status")
        if state != DocStatus.PROCESSED:
            error = (status or {}).get("error_msg")
            raise RuntimeError(f"{episode.id} not processed ({state}): {error}")

    async def entities(self) -> list[SystemEntity]:
        nodes = await self.rag.chunk_entity_relation_graph.get_all_nodes()
        return [SystemEntity(str(node["id"])) for node in nodes]

    async def facts(self) -> list[SystemFact]:
        edges = await self.rag.chunk_entity_relation_graph.get_all_edges()
        return [
            SystemFact(
                str(edge.get("description", "")),
                str(edge["source"]),
                str(edge["target"]),
                current=True,
            )
            for edge in edges
        ]

    async def search(self, query: str, k: int, at: datetime | None = None) -> list[str]:
        """Relations as LightRAG ranks them for its prompt: "hybrid" retrieval (local:
        the edges of the entities matching the low-level keywords; global: the edges
        matching the high-level ones; merged in turn), the same relation list its
        default "mix" mode builds, without its chunk search or generation."""
        if at is not None:
            raise Unsupported(
                "LightRAG has no point-in-time query: it keeps no validity "
                "interval on relations and no record of when one ended"
            )
        param = QueryParam(mode="hybrid", top_k=k, enable_rerank=False)
        result = await self.rag.aquery_data(query, param)
        relations = (result.get("data") or {}).get("relationships") or []
        return [str(r.get("description", "")) for r in relations[:k]]

    async def context(self, query: str, max_chars: int) -> str:
        param = QueryParam(
            mode="mix",
            only_need_context=True,
            enable_rerank=False,
            **self._budget(query, max_chars),
        )
        text = str(await self.rag.aquery(query, param) or "")
        # With nothing retrieved LightRAG answers its canned "no-context" reply even
        # when only the context was asked for: that is no context at all.
        return "" if text == PROMPTS["fail_response"] else text[:max_chars]

    def _budget(self, query: str, max_chars: int) -> dict[str, int]:
        """Token budgets giving a context of about `max_chars`: LightRAG charges its
        total against the answer prompt and the question too (even when only the
        context is asked for), so those are added back; entities and relations get
        the shares its defaults give them (6000 and 8000 of 30000), chunks the rest."""
        tokens = max(1, max_chars // CHARS_PER_TOKEN)
        prompt = PROMPTS["rag_response"].format(
            context_data="", response_type=RESPONSE_TYPE, user_prompt=""
        )
        overhead = len(self._tokenizer.encode(prompt)) + len(self._tokenizer.encode(query)) + 200
        return {
            "max_total_tokens": tokens + overhead,
            "max_entity_tokens": max(1, tokens * 6 // 30),
            "max_relation_tokens": max(1, tokens * 8 // 30),
        }

    async def close(self) -> None:
        if self._rag is not None:
            await self._rag.finalize_storages()
            self._rag = None
