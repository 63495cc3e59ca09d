"""This product, as its worker runs it: the graph core's ingest pipeline (`ingest_job`,
one job per episode, so each episode is searchable when it returns) against the local
SurrealDB server on disk (rocksdb://, as `make run` stores it), the real `openai` client
calling the bench model, and the local MiniLM embedder; search and query as the API
serves them (kgapp/graph/search)."""

from __future__ import annotations

import json
import os
import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench.compare.corpus import Corpus, Episode
from bench.compare.model import Answerer, BenchModel, Embeddings
from bench.compare.systems.base import System, SystemEntity, SystemFact
from kgapp import surreal_server
from kgapp.graph import jobs, schema
from kgapp.graph.config import CoreConfig, configure
from kgapp.graph.export.snapshot import export_graph
from kgapp.graph.index import directories
from kgapp.graph.index.cache import tenant_index
from kgapp.graph.index.indexer import Indexer
from kgapp.graph.ingest.model import EpisodeInput
from kgapp.graph.ingest.pipeline import ingest_job
from kgapp.graph.llm.client import LLMClient
from kgapp.graph.llm.prompts import extract, query, resolve
from kgapp.graph.llm.transport import LLMConfig
from kgapp.graph.search.hybrid import search
from kgapp.graph.search.model import SearchRequest
from kgapp.graph.search.query import QueryRequest
from kgapp.graph.search.query import query as answer_query
from kgapp.graph.store import Pool, StoreConfig, TenantStore
from kgapp.graph.time import Moment, visible

ROOT = Path(__file__).resolve().parents[3]
_CURRENT = re.compile(
    re.escape(extract.EPISODE_OPEN) + r"\n(.*?)\n" + re.escape(extract.EPISODE_CLOSE), re.S
)
_QUESTION = re.compile(r"<question>\n(.*)\n</question>", re.S)
_UPDATE = re.compile(r"<graph_update>\n(.*)\n</graph_update>", re.S)
TYPES = {"Title": "Concept"}  # the corpus's job titles: the default ontology's nearest type


class KgappSystem(System):
    name = "kgapp"

    def __init__(self) -> None:
        self._server: surreal_server.RunningServer | None = None
        self._store: TenantStore | None = None

    @staticmethod
    def answerer(corpus: Corpus) -> Answerer:
        def answer(body: dict[str, Any]) -> tuple[str, Any] | None:
            task = body["response_format"]["json_schema"]["name"]
            user = body["messages"][-1]["content"]
            if task == extract.TASK:
                return task, _extraction(corpus, user)
            if task == resolve.TASK:
                return task, _resolution(corpus, user)
            if task == query.KEYWORDS_TASK:
                asked = _QUESTION.search(user)
                high, low = corpus.keywords(asked.group(1) if asked else user)
                return task, {"high_level": high, "low_level": low}
            return None

        return answer

    @property
    def store(self) -> TenantStore:
        assert self._store is not None, "open() first"
        return self._store

    async def open(self, workdir: Path, model: BenchModel, embeddings: Embeddings) -> None:
        os.environ["KG_SEARCH_DIR"] = str(workdir / "search")
        configure(CoreConfig(search_dir=workdir / "search"))  # this process's core
        self._server = surreal_server.start(
            storage=f"rocksdb://{workdir / 'surreal'}", log=workdir / "surreal.log"
        )
        config = StoreConfig(
            url=self._server.url,
            username=self._server.credentials.user,
            password=self._server.credentials.password,
            query_timeout=120,
        )
        self._pool = Pool(config, "t_compare")
        self._store = TenantStore(self._pool)
        await schema.migrate(
            self._store, schema.load_migrations(ROOT / "schema"), embedding_dim=embeddings.dimension
        )
        self._embeddings = embeddings
        # The search index as `make run` keeps it: this machine's indexer holds each
        # tenant's writer between passes; readers refresh from what it committed.
        self._indexer_lock = directories.hold_indexer_lock()
        self._indexer = Indexer(lambda: {self.store.namespace or "": self.store})
        self._llm = LLMClient(LLMConfig(base_url=model.base_url, api_key="bench", model="bench"))

    @property
    def server_pid(self) -> int | None:
        return self._server.process.pid if self._server else None

    async def ingest(self, episode: Episode) -> None:
        job = await jobs.job_create(self.store, kind="ingest_episode")
        item = EpisodeInput(
            content=episode.text,
            source=episode.source,
            reference_time=episode.reference_time,
            name=episode.id,
        )
        report = await ingest_job(
            self.store, job["id"], [item], embedder=self._embeddings, llm=self._llm
        )
        if report.failures:
            raise RuntimeError(f"{episode.id} failed: {report.failures}")
        # Searchable now: the indexer's pass takes up the episode's facts (in the product
        # its process does this beside the worker, every 0.2 s), then readers see them.
        await self._indexer.run_once()
        await tenant_index(self.store)

    async def entities(self) -> list[SystemEntity]:
        graph = await export_graph(self.store)
        aliases: dict[str, list[str]] = {}
        for alias in graph["alias"]:
            aliases.setdefault(str(alias["entity"]), []).append(alias["name"])
        return [
            SystemEntity(e["name"], tuple(aliases.get(str(e["id"]), ())))
            for e in graph["entity"]
            if e.get("merged_into") is None
        ]

    async def facts(self) -> list[SystemFact]:
        graph = await export_graph(self.store)
        names = {str(e["id"]): e["name"] for e in graph["entity"]}
        now = datetime.now(UTC)
        return [
            SystemFact(
                f["fact"],
                names.get(str(f["in"]), "?"),
                names.get(str(f["out"]), "?"),
                visible(f, now, now),
            )
            for f in graph["relates_to"]
        ]

    async def search(self, query: str, k: int, at: datetime | None = None) -> list[str]:
        request = SearchRequest(query=query, scopes=("facts",), limit=k, moment=Moment.of(at))
        results = await search(self.store, request, self._embeddings)
        return [hit.record["fact"] for hit in results.facts[:k]]

    async def context(self, query: str, max_chars: int) -> str:
        # The product's token counter gives about 4 characters a token on English.
        request = QueryRequest(question=query, mode="mix", max_total_tokens=max_chars // 4)
        result = await answer_query(self.store, request, self._embeddings, self._llm)
        return result.context_text[:max_chars]

    async def close(self) -> None:
        if self._store is not None:
            self._indexer.close()
            self._indexer_lock.close()
            await self._pool.close()
        if self._server is not None:
            self._server.stop()


def _extraction(corpus: Corpus, user: str) -> dict[str, Any]:
    match = _CURRENT.search(user)
    episodes = corpus.episode_in(match.group(1) if match else user)
    if not episodes:
        return {"entities": [], "facts": []}
    episode = episodes[-1]
    seen: dict[str, str] = {}
    for mention in episode.mentions:
        seen.setdefault(mention.surface, mention.entity)
    entities = [
        {
            "name": name,
            "entity_type": TYPES.get(corpus.entities[key].type, corpus.entities[key].type),
            "summary": corpus.description(episode, key),
        }
        for name, key in seen.items()
    ]
    facts = []
    for fid in episode.facts:
        fact = corpus.facts[fid]
        facts.append(
            {
                "source": episode.surface_of(fact.subject),
                "relation": fact.relation,
                "target": episode.surface_of(fact.object),
                "fact": fact.text,
                "edge_type": "semantic",
                "confidence": 1.0,
                "valid_at": fact.valid_from.isoformat(),
                "invalid_at": None,
            }
        )
    return {"entities": entities, "facts": facts}


def _resolution(corpus: Corpus, user: str) -> dict[str, Any]:
    match = _UPDATE.search(user)
    payload = json.loads(match.group(1)) if match else {"entities": [], "facts": []}
    entities = [
        {
            "index": e["index"],
            "duplicate_of": next(
                (c["index"] for c in e["candidates"] if corpus.same_entity(e["name"], c["name"])),
                None,
            ),
        }
        for e in payload["entities"]
    ]
    facts = []
    for item in payload["facts"]:
        new = corpus.fact_in(item["fact"])
        same, contradicts = None, []
        for existing in item["existing"]:
            old = corpus.fact_in(existing["fact"])
            if new is None or old is None:
                continue
            if old.id == new.id and same is None:
                same = existing["index"]
            elif corpus.conflict(new, old):
                contradicts.append(existing["index"])
        facts.append({"index": item["index"], "duplicate_of": same, "contradicts": contradicts})
    return {"entities": entities, "facts": facts}
