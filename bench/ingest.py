"""Ingestion throughput with a zero-latency scripted model (harness/llm_server.py).

1,000 episodes of the kind in the tests (people joining, working at and moving between
organisations and cities, with reference times spread over two years) go through the
real pipeline into the local SurrealDB server (mem://). Prints:
- LLM calls and tokens per episode;
- non-LLM time per episode (wall time minus time inside LLM calls), median and p95,
  with the local MiniLM embedder and with API embeddings (the scripted server's);
- episodes per second with 2 worker processes writing into one tenant.

    .venv/bin/python bench/ingest.py [--episodes 1000]
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing
import os
import random
import statistics
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from harness.llm_server import ScriptedLLM, embedding_of  # noqa: E402
from harness.recorded import episode_of  # noqa: E402
from kgapp import surreal_server  # noqa: E402
from kgapp.graph import jobs, schema  # noqa: E402
from kgapp.graph.embeddings import Embedder, OpenAIEmbedder, local_embedder  # noqa: E402
from kgapp.graph.ingest.indexing import index_pending  # noqa: E402
from kgapp.graph.ingest.model import EpisodeInput  # noqa: E402
from kgapp.graph.ingest.pipeline import ingest_context, ingest_episode, ingest_job  # noqa: E402
from kgapp.graph.llm.client import LLMClient  # noqa: E402
from kgapp.graph.llm.transport import LLMConfig  # noqa: E402
from kgapp.graph.store import Pool, StoreConfig, TenantStore  # noqa: E402

FIRST = [
    "Ada",
    "Bilal",
    "Chen",
    "Dmitri",
    "Esther",
    "Farouk",
    "Gwen",
    "Hiroshi",
    "Ines",
    "Jonas",
    "Kemi",
    "Luca",
    "Mei",
    "Nadia",
    "Omar",
    "Priya",
    "Quentin",
    "Rosa",
]
LAST = [
    "Okafor",
    "Petrov",
    "Tanaka",
    "Haddad",
    "Llewellyn",
    "Moreau",
    "Singh",
    "Novak",
    "Ferreira",
    "Kowalski",
    "Andersen",
    "Castillo",
]
ORGS = [
    "Acme Corp",
    "Globex",
    "Initech",
    "Umbrella Labs",
    "Stark Industries",
    "Wayne Enterprises",
    "Hooli",
    "Vandelay Industries",
    "Soylent Inc",
    "Cyberdyne Systems",
    "Tyrell Corp",
    "Wonka Industries",
    "Aperture Science",
    "Massive Dynamic",
    "Oscorp",
    "Pied Piper",
]
CITIES = [
    "Lisbon",
    "Osaka",
    "Nairobi",
    "Montreal",
    "Krakow",
    "Valparaiso",
    "Tbilisi",
    "Auckland",
    "Reykjavik",
    "Marrakesh",
    "Hanoi",
    "Bergen",
]


def episodes(count: int, seed: int = 7) -> list[EpisodeInput]:
    rng = random.Random(seed)
    start = datetime(2023, 1, 1, tzinfo=UTC)
    result = []
    for i in range(count):
        person = f"{rng.choice(FIRST)} {rng.choice(LAST)}"
        kind = rng.random()
        if kind < 0.45:
            text = f"{person} works at {rng.choice(ORGS)}."
        elif kind < 0.75:
            text = f"{person} moved to {rng.choice(CITIES)}."
        else:
            text = f"{person} joined {rng.choice(ORGS)} last month."
        when = start + timedelta(hours=i * 17 + rng.randrange(17))
        result.append(EpisodeInput(content=text, source="text", reference_time=when))
    return result


def scripted_answer(body: dict[str, Any]) -> dict[str, Any]:
    """What a model would answer for the generated sentences, with no latency."""
    if body["response_format"]["json_schema"]["name"] == "resolve_graph":
        return {"entities": [], "facts": []}
    text = episode_of(body).removesuffix(".")
    for verb, relation, target_type in (
        (" works at ", "WORKS_AT", "Organization"),
        (" moved to ", "LIVES_IN", "Location"),
        (" joined ", "WORKS_AT", "Organization"),
    ):
        if verb in text:
            person, _, target = text.partition(verb)
            target = target.removesuffix(" last month")
            return {
                "entities": [
                    {"name": person, "entity_type": "Person", "summary": text},
                    {"name": target, "entity_type": target_type, "summary": ""},
                ],
                "facts": [
                    {
                        "source": person,
                        "relation": relation,
                        "target": target,
                        "fact": text + ".",
                        "edge_type": "semantic",
                        "confidence": 0.9,
                        "valid_at": None,
                        "invalid_at": None,
                    }
                ],
            }
    return {"entities": [], "facts": []}


def api_embedder() -> Embedder:
    return OpenAIEmbedder(
        name="scripted",
        dimension=384,
        embed_batch=lambda texts: [embedding_of(t, 384) for t in texts],
    )


class TimedLLM(LLMClient):
    """The real client, with the time spent inside its calls added up."""

    spent = 0.0

    async def structured(self, **kwargs: Any) -> Any:
        started = time.perf_counter()
        try:
            return await super().structured(**kwargs)
        finally:
            self.spent += time.perf_counter() - started


async def new_store(config: StoreConfig, namespace: str) -> TenantStore:
    store = TenantStore(Pool(config, namespace))
    await schema.migrate(store, schema.load_migrations(ROOT / "schema"), embedding_dim=384)
    return store


async def per_episode(
    config: StoreConfig,
    base_url: str,
    items: list[EpisodeInput],
    embedder: Embedder,
    namespace: str,
) -> dict[str, float]:
    store = await new_store(config, namespace)
    llm = TimedLLM(LLMConfig(base_url=base_url, api_key="bench", model="scripted"))
    ctx = await ingest_context(store, embedder=embedder, llm=llm)
    non_llm = []
    for episode in items:
        spent_before, started = llm.spent, time.perf_counter()
        await ingest_episode(ctx, episode)
        non_llm.append((time.perf_counter() - started) - (llm.spent - spent_before))
    started = time.perf_counter()
    await index_pending(ctx, episodes=ctx.episodes)
    index_time = time.perf_counter() - started
    usage = llm.usage
    non_llm.sort()
    return {
        "episodes": len(items),
        "calls_per_episode": usage.calls / len(items),
        "tokens_per_episode": (usage.prompt_tokens + usage.completion_tokens) / len(items),
        "median_ms": statistics.median(non_llm) * 1000,
        "p95_ms": non_llm[int(0.95 * (len(non_llm) - 1))] * 1000,
        "index_ms_per_episode": index_time * 1000 / len(items),
    }


def worker(
    config: StoreConfig, base_url: str, items: list[EpisodeInput], namespace: str, embed: str
) -> None:
    async def run() -> None:
        store = TenantStore(Pool(config, namespace))
        job = await jobs.job_create(store, kind="bench")
        llm = LLMClient(LLMConfig(base_url=base_url, api_key="bench", model="scripted"))
        embedder = local_embedder() if embed == "local" else api_embedder()
        await ingest_job(store, job["id"], items, embedder=embedder, llm=llm)

    asyncio.run(run())


def two_workers(config: StoreConfig, base_url: str, items: list[EpisodeInput], embed: str) -> float:
    namespace = f"t_bench_workers_{embed}"
    asyncio.run(new_store(config, namespace))
    if embed == "local":
        local_embedder().embed(["warm up"])
    halves = [items[0::2], items[1::2]]
    context = multiprocessing.get_context("fork")
    processes = [
        context.Process(target=worker, args=(config, base_url, half, namespace, embed))
        for half in halves
    ]
    started = time.perf_counter()
    for process in processes:
        process.start()
    for process in processes:
        process.join()
    return len(items) / (time.perf_counter() - started)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--episodes", type=int, default=1000)
    count = parser.parse_args().episodes
    items = episodes(count)
    server = surreal_server.start(storage="mem://", log=Path("/dev/null"))
    config = StoreConfig(
        url=server.url,
        username=server.credentials.user,
        password=server.credentials.password,
        query_timeout=120,
    )
    llm_server = ScriptedLLM().start()
    llm_server.on_chat(scripted_answer)
    try:
        local_embedder().embed(["warm up"])
        print(f"ingestion of {count} episodes, zero-latency scripted model, SurrealDB mem://")
        for label, embedder in (
            ("local MiniLM embeddings", local_embedder()),
            ("API embeddings (scripted)", api_embedder()),
        ):
            figures = asyncio.run(
                per_episode(
                    config,
                    llm_server.base_url,
                    items,
                    embedder,
                    f"t_bench_{label.split()[0].lower()}",
                )
            )
            print(f"  {label}:")
            print(
                f"    LLM calls/episode {figures['calls_per_episode']:.2f}, "
                f"tokens/episode {figures['tokens_per_episode']:.0f}"
            )
            print(
                f"    non-LLM time/episode: median {figures['median_ms']:.1f} ms, "
                f"p95 {figures['p95_ms']:.1f} ms (+ {figures['index_ms_per_episode']:.1f} ms "
                f"batched fact indexing)"
            )
        for embed in ("local", "api"):
            rate = two_workers(config, llm_server.base_url, items, embed)
            print(f"  2 worker processes, {embed} embeddings: {rate:.1f} episodes/s")
    finally:
        llm_server.stop()
        server.stop()


if __name__ == "__main__":
    main()
