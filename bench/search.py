"""Retrieval latency on a synthetic tenant graph with real embeddings.

Builds a graph of N facts (default 10,000) between people, organisations and places
(about one entity per ten facts), with realistic sentences, validity intervals and
MiniLM vectors, bulk-loaded into the local SurrealDB server (mem://). Prints the time
and memory to build this process's search indexes, then p50/p95 latency of each search
recipe and of `query` in each mode; the query embedding is timed on its own and left
out of those figures (the questions' vectors are computed once beforehand).

    .venv/bin/python bench/search.py [--facts 10000] [--runs 30]
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import random
import resource
import statistics
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402
from surrealdb.data.types.record_id import RecordID  # noqa: E402

from kgapp import surreal_server  # noqa: E402
from kgapp.graph import queries, schema  # noqa: E402
from kgapp.graph.embeddings import local_embedder  # noqa: E402
from kgapp.graph.index import entity_index, fact_index  # noqa: E402
from kgapp.graph.search.hybrid import search  # noqa: E402
from kgapp.graph.search.model import SearchRequest  # noqa: E402
from kgapp.graph.search.query import QueryRequest, query  # noqa: E402
from kgapp.graph.search.recipes import RECIPES  # noqa: E402
from kgapp.graph.store import Pool, StoreConfig, TenantStore  # noqa: E402
from kgapp.graph.text import canonical_name, entity_key  # noqa: E402

FIRST = ["Ada", "Bilal", "Chen", "Dmitri", "Esther", "Farouk", "Gwen", "Hiroshi", "Ines", "Jonas",
         "Kemi", "Luca", "Mei", "Nadia", "Omar", "Priya", "Quentin", "Rosa", "Sven", "Tala"]
LAST = ["Okafor", "Petrov", "Tanaka", "Haddad", "Llewellyn", "Moreau", "Singh", "Novak",
        "Ferreira", "Kowalski", "Andersen", "Castillo", "Nguyen", "Osei", "Larsen", "Ruiz"]
ORGS = ["Acme", "Globex", "Initech", "Umbrella", "Stark", "Wayne", "Hooli", "Vandelay", "Soylent",
        "Cyberdyne", "Tyrell", "Wonka", "Aperture", "Massive Dynamic", "Oscorp", "Pied Piper"]
SUFFIX = ["Corp", "Labs", "Group", "Holdings", "Systems", "Analytics", "Foods", "Energy"]
CITIES = ["Lisbon", "Osaka", "Nairobi", "Montreal", "Krakow", "Valparaiso", "Tbilisi", "Auckland",
          "Reykjavik", "Marrakesh", "Hanoi", "Bergen", "Cusco", "Tallinn", "Accra", "Perth"]
VERBS = [("WORKS_AT", "works at", "org"), ("LIVES_IN", "lives in", "city"),
         ("KNOWS", "knows", "person"), ("LIKES", "enjoys visiting", "city"),
         ("FOUNDED", "founded", "org"), ("MEMBER_OF", "is a member of", "org")]
QUESTIONS = ["Where does Ada Okafor work?", "Who lives in Lisbon?", "Initech Labs employees",
             "people who founded a company", "Who knows Chen Tanaka?", "travel to Osaka"]


def entity(name: str, kind: str) -> dict:
    return {"id": RecordID("entity", entity_key(kind, canonical_name(name))), "name": name,
            "canonical_name": canonical_name(name), "entity_type": kind, "summary": ""}


def build(count: int, seed: int = 11) -> tuple[list[dict], list[dict]]:
    rng = random.Random(seed)
    initials = [f" {chr(65 + i)}." for i in range(26)][: max(1, count // 3000)]
    people = [entity(f"{first}{middle} {last}", "Person")
              for first in FIRST for middle in ["", *initials] for last in LAST]
    orgs = [entity(f"{o} {s}", "Organization") for o in ORGS for s in SUFFIX]
    cities = [entity(c, "Location") for c in CITIES]
    pools = {"org": orgs, "city": cities, "person": people}
    facts, start = [], datetime(2020, 1, 1, tzinfo=UTC)
    for i in range(count):
        subject = rng.choice(people)
        relation, verb, kind = rng.choice(VERBS)
        target = rng.choice(pools[kind])
        valid = start + timedelta(days=rng.randrange(1800))
        ended = valid + timedelta(days=rng.randrange(30, 900)) if rng.random() < 0.3 else None
        facts.append({
            "id": RecordID("relates_to", f"b{i}"), "in": subject["id"], "out": target["id"],
            "relation": relation, "edge_type": "semantic",
            "fact": f"{subject['name']} {verb} {target['name']}.", "episodes": [],
            "confidence": round(rng.uniform(0.5, 1.0), 2), "valid_at": valid, "invalid_at": ended,
            "created_at": valid, "degree": 0,
        })
        for row in (subject, target):
            row["degree"] = row.get("degree", 0) + 1
    return people + orgs + cities, facts


async def load(store: TenantStore, entities: list[dict], facts: list[dict]) -> dict[str, float]:
    embedder, timings = local_embedder(), {}
    started = time.perf_counter()
    names = embedder.embed([e["name"] for e in entities])
    for row, vector in zip(entities, names, strict=True):
        row["name_embedding"] = vector
    vectors = embedded([f["fact"] for f in facts], embedder)
    for row, vector in zip(facts, vectors, strict=True):
        row.pop("degree", None)
        row["fact_embedding"] = vector
    timings["embedding"] = time.perf_counter() - started
    started = time.perf_counter()
    for i in range(0, len(entities), 500):  # one message stays well under the socket limit
        await store.query(queries.ENTITIES_BULK_INSERT, {"rows": entities[i:i + 500]})
    for i in range(0, len(facts), 500):
        await store.query(queries.FACTS_BULK_INSERT, {"rows": facts[i:i + 500]})
    timings["insert_and_index"] = time.perf_counter() - started
    return timings


def embedded(texts: list[str], embedder) -> list[list[float]]:
    """The texts' vectors, kept in var/bench between runs (embedding 100k sentences on
    two cores takes minutes; the vectors of the same sentences do not change)."""
    digest = hashlib.sha256("\n".join(texts).encode()).hexdigest()[:16]
    path = ROOT / "var" / "bench" / f"search-vectors-{digest}.npy"
    if path.exists():
        return np.load(path).tolist()
    vectors = embedder.embed(texts)
    path.parent.mkdir(parents=True, exist_ok=True)
    np.save(path, np.asarray(vectors, dtype=np.float32))
    return vectors


def figures(samples: list[float]) -> str:
    ordered = sorted(samples)
    p95 = ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))]
    return f"p50 {statistics.median(ordered) * 1000:7.1f} ms   p95 {p95 * 1000:7.1f} ms"


class Precomputed:
    """The local embedder with the benchmark's questions embedded beforehand."""

    def __init__(self) -> None:
        self.inner = local_embedder()
        self.name, self.dimension = self.inner.name, self.inner.dimension
        self.known = dict(zip(QUESTIONS, self.inner.embed(QUESTIONS), strict=True))

    def embed(self, texts: list[str]) -> list[list[float]]:
        return [self.known.get(t) or self.inner.embed([t])[0] for t in texts]


async def build_indexes(store: TenantStore) -> None:
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    started = time.perf_counter()
    facts = await fact_index(store)
    middle = time.perf_counter()
    entities = await entity_index(store)
    ended = time.perf_counter()
    grown = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - rss) / 1024
    print(f"  index build: facts {middle - started:.1f} s ({facts.nbytes / 2**20:.0f} MiB), "
          f"entities {ended - middle:.2f} s ({entities.nbytes / 2**20:.1f} MiB); "
          f"peak RSS grew {grown:.0f} MiB while loading")
    await fact_index(store)  # reads the changefeed's margin once (see CURSOR_MARGIN)
    started = time.perf_counter()
    for _ in range(20):
        await fact_index(store)
    print(f"  top-up with nothing new: {(time.perf_counter() - started) / 20 * 1000:.1f} ms")


async def measure(store: TenantStore, runs: int) -> None:
    embed_times = []
    for question in QUESTIONS * 3:
        started = time.perf_counter()
        local_embedder().embed([question])
        embed_times.append(time.perf_counter() - started)
    print(f"  query embedding (MiniLM)      {figures(embed_times)}")
    embedder = Precomputed()
    for name in ("fact_rrf", "fact_mmr", "fact_node_distance", "fact_episode_mentions",
                 "entity_rrf", "combined_rrf"):
        recipe = RECIPES[name]
        samples = []
        for i in range(runs):
            request = SearchRequest(query=QUESTIONS[i % len(QUESTIONS)], scopes=recipe["scopes"],
                                    methods=recipe["methods"], reranker=recipe["reranker"])
            started = time.perf_counter()
            await search(store, request, embedder)
            samples.append(time.perf_counter() - started)
        print(f"  search {name:<22} {figures(samples)}")
    for mode in ("local", "global", "hybrid", "naive", "mix"):
        samples = []
        for i in range(max(5, runs // 3)):
            started = time.perf_counter()
            await query(store, QueryRequest(question=QUESTIONS[i % len(QUESTIONS)], mode=mode),
                        embedder, None)
            samples.append(time.perf_counter() - started)
        print(f"  query mode {mode:<18} {figures(samples)}")


async def main(facts_count: int, runs: int) -> None:
    server = surreal_server.start(storage="mem://", log=Path("/dev/null"))
    try:
        config = StoreConfig(url=server.url, username=server.credentials.user,
                             password=server.credentials.password, query_timeout=600)
        store = TenantStore(Pool(config, "t_bench_search"))
        await schema.migrate(store, schema.load_migrations(ROOT / "schema"), embedding_dim=384)
        entities, facts = build(facts_count)
        timings = await load(store, entities, facts)
        print(f"retrieval over {facts_count} facts, {len(entities)} entities (SurrealDB mem://)")
        print(f"  embedding {timings['embedding']:.1f} s, insert + BM25 indexing "
              f"{timings['insert_and_index']:.1f} s")
        await build_indexes(store)
        await measure(store, runs)
    finally:
        server.stop()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--facts", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=30)
    arguments = parser.parse_args()
    asyncio.run(main(arguments.facts, arguments.runs))
