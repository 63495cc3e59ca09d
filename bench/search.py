"""Search on a synthetic tenant graph with real embeddings: the search index's build,
restart and freshness, and the latency of every search recipe and query mode.

Builds a graph of N facts (default 10,000) between people, organisations and places
(about one entity per ten facts), with realistic sentences, validity intervals and
MiniLM vectors, bulk-loaded into the local SurrealDB server (mem://). Then, with the
tenant's index in a directory of its own:

- a full rebuild of the index from the database, in a fresh process (time, and how far
  that process's peak memory grew);
- with the indexer running (a thread here, as `manage.py search_indexer` would), the
  first search of a fresh process (opening the index included) and the memory that
  process holds beyond the shared memory map (RssAnon), after 30 searches;
- p50/p95 of each search recipe and of `query` in each mode, the query embedding timed
  on its own and left out (the questions' vectors are computed once beforehand);
- how long after its commit a new fact is found, through the indexer.

    .venv/bin/python bench/search.py [--facts 10000] [--runs 30] [--composed-vectors]

Beyond 100,000 facts, embedding every sentence takes hours on two cores:
--composed-vectors gives each fact the normalised sum of the MiniLM vectors of its
subject, verb and object instead (the same shape and spread of neighbours). The facts'
FULLTEXT index of SurrealDB, which search does not read (the admin's fact filter does),
is removed from the benchmark's namespace before loading: it costs minutes per 100,000
facts.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import hashlib
import json
import os
import random
import shutil
import statistics
import string
import subprocess
import sys
import tempfile
import threading
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402
from surrealdb.data.types.record_id import RecordID  # noqa: E402

from kgapp import surreal_server  # noqa: E402
from kgapp.graph import queries, schema  # noqa: E402
from kgapp.graph.config import CoreConfig, configure  # noqa: E402
from kgapp.graph.embeddings import local_embedder  # noqa: E402
from kgapp.graph.index import directories, indexer  # noqa: E402
from kgapp.graph.resolution.canonical import canonical_name, entity_key  # noqa: E402
from kgapp.graph.search.hybrid import search  # noqa: E402
from kgapp.graph.search.model import SearchRequest  # noqa: E402
from kgapp.graph.search.query import QueryRequest, query  # noqa: E402
from kgapp.graph.search.recipes import RECIPES  # noqa: E402
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
    "Sven",
    "Tala",
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
    "Nguyen",
    "Osei",
    "Larsen",
    "Ruiz",
]
ORGS = [
    "Acme",
    "Globex",
    "Initech",
    "Umbrella",
    "Stark",
    "Wayne",
    "Hooli",
    "Vandelay",
    "Soylent",
    "Cyberdyne",
    "Tyrell",
    "Wonka",
    "Aperture",
    "Massive Dynamic",
    "Oscorp",
    "Pied Piper",
]
SUFFIX = ["Corp", "Labs", "Group", "Holdings", "Systems", "Analytics", "Foods", "Energy"]
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
    "Cusco",
    "Tallinn",
    "Accra",
    "Perth",
]
VERBS = [
    ("WORKS_AT", "works at", "org"),
    ("LIVES_IN", "lives in", "city"),
    ("KNOWS", "knows", "person"),
    ("LIKES", "enjoys visiting", "city"),
    ("FOUNDED", "founded", "org"),
    ("MEMBER_OF", "is a member of", "org"),
]
QUESTIONS = [
    "Where does Ada Okafor work?",
    "Who lives in Lisbon?",
    "Initech Labs employees",
    "people who founded a company",
    "Who knows Chen Tanaka?",
    "travel to Osaka",
]


def entity(name: str, kind: str) -> dict:
    return {
        "id": RecordID("entity", entity_key(canonical_name(name))),
        "name": name,
        "canonical_name": canonical_name(name),
        "entity_type": kind,
        "summary": "",
    }


def build(count: int, seed: int = 11) -> tuple[list[dict], list[dict]]:
    rng = random.Random(seed)
    initials = [f" {chr(65 + i)}." for i in range(26)][: max(1, count // 3000)]
    people = [
        entity(f"{first}{middle} {last}", "Person")
        for first in FIRST
        for middle in ["", *initials]
        for last in LAST
    ]
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
        facts.append(
            {
                "id": RecordID("relates_to", f"b{i}"),
                "in": subject["id"],
                "out": target["id"],
                "relation": relation,
                "edge_type": "semantic",
                "fact": f"{subject['name']} {verb} {target['name']}.",
                "episodes": [],
                "confidence": round(rng.uniform(0.5, 1.0), 2),
                "valid_at": valid,
                "invalid_at": ended,
                "created_at": valid,
                "degree": 0,
            }
        )
        for row in (subject, target):
            row["degree"] = row.get("degree", 0) + 1
    return people + orgs + cities, facts


async def load(
    store: TenantStore, entities: list[dict], facts: list[dict], composed: bool = False
) -> dict[str, float]:
    embedder, timings = local_embedder(), {}
    started = time.perf_counter()
    names = embedder.embed([e["name"] for e in entities])
    for row, vector in zip(entities, names, strict=True):
        row["name_embedding"] = vector
    vectors = (
        composed_vectors(facts, entities, embedder)
        if composed
        else embedded([f["fact"] for f in facts], embedder)
    )
    for row, vector in zip(facts, vectors, strict=True):
        row.pop("degree", None)
        row["fact_embedding"] = vector
    timings["embedding"] = time.perf_counter() - started
    started = time.perf_counter()
    for i in range(0, len(entities), 500):  # one message stays well under the socket limit
        await store.query(queries.ENTITIES_BULK_INSERT, {"rows": entities[i : i + 500]})
    for i in range(0, len(facts), 500):
        await store.query(queries.FACTS_BULK_INSERT, {"rows": facts[i : i + 500]})
    timings["insert"] = time.perf_counter() - started
    return timings


def composed_vectors(facts: list[dict], entities: list[dict], embedder) -> list[list[float]]:
    """Each fact's normalised sum of the vectors of its subject, verb and object."""
    by_id = {str(e["id"]): np.asarray(e["name_embedding"], dtype=np.float32) for e in entities}
    verbs = {
        relation: np.asarray(v, dtype=np.float32)
        for (relation, _, _), v in zip(
            VERBS, embedder.embed([verb for _, verb, _ in VERBS]), strict=True
        )
    }
    out = []
    for fact in facts:
        total = by_id[str(fact["in"])] + verbs[fact["relation"]] + by_id[str(fact["out"])]
        out.append((total / np.linalg.norm(total)).tolist())
    return out


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

    @classmethod
    @functools.cache
    def shared(cls) -> Precomputed:
        return cls()


def status_mib(field: str) -> float:
    """A memory figure of this process from /proc (RssAnon: resident memory that is not
    a mapped file; VmHWM: peak resident memory, which unlike ru_maxrss an exec resets)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1]) / 1024
    return 0.0


def anon_mib() -> float:
    return status_mib("RssAnon")


def peak_mib() -> float:
    return status_mib("VmHWM")


async def child_rebuild(store: TenantStore) -> dict[str, float]:
    """A fresh process rebuilds the tenant's index from the database."""
    before = peak_mib()
    started = time.perf_counter()
    await indexer.sync(store)
    return {
        "seconds": time.perf_counter() - started,
        "peak_grew_mib": peak_mib() - before,
        "peak_mib": peak_mib(),
    }


async def child_first(store: TenantStore) -> dict[str, float]:
    """A fresh process (the indexer running elsewhere) opens the index and searches."""
    embedder = Precomputed()
    recipe = RECIPES["fact_rrf"]

    def request(i: int) -> SearchRequest:
        return SearchRequest(
            query=QUESTIONS[i % len(QUESTIONS)],
            scopes=recipe["scopes"],
            methods=recipe["methods"],
            reranker=recipe["reranker"],
        )

    assert directories.indexer_running(), "the indexer must run beside this process"
    anon = anon_mib()
    started = time.perf_counter()
    await search(store, request(0), embedder)
    first = time.perf_counter() - started
    for i in range(1, 30):
        await search(store, request(i), embedder)
    return {"first_search_s": first, "anon_grew_mib": anon_mib() - anon}


def in_child(phase: str, server: surreal_server.RunningServer, namespace: str) -> dict:
    """Run a phase in a fresh Python process: its figures, as JSON."""
    env = {**os.environ, **server.credentials.env(), "BENCH_SURREAL_URL": server.url}
    done = subprocess.run(
        [sys.executable, __file__, "--child", phase, "--namespace", namespace],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


async def child_main(phase: str, namespace: str) -> None:
    config = StoreConfig(
        url=os.environ["BENCH_SURREAL_URL"],
        username=os.environ["SURREAL_USER"],
        password=os.environ["SURREAL_PASS"],
        query_timeout=600,
    )
    store = TenantStore(Pool(config, namespace))
    run = {"rebuild": child_rebuild, "first": child_first}[phase]
    print(json.dumps(await run(store)))


class IndexerThread:
    """This machine's indexer, as `manage.py search_indexer` runs it, in a thread."""

    def __init__(self, config: StoreConfig, namespace: str) -> None:
        self.config, self.namespace = config, namespace
        self.started = threading.Event()
        self.thread = threading.Thread(target=lambda: asyncio.run(self._run()), daemon=True)

    async def _run(self) -> None:
        self.loop, self.stop = asyncio.get_running_loop(), asyncio.Event()
        store = TenantStore(Pool(self.config, self.namespace))
        worker = indexer.Indexer(lambda: {self.namespace: store}, poll=0.1)
        self.started.set()
        await worker.run(self.stop)

    def __enter__(self) -> IndexerThread:
        self.thread.start()
        self.started.wait(30)
        while not directories.indexer_running():
            time.sleep(0.01)
        return self

    def __exit__(self, *exc: object) -> None:
        self.loop.call_soon_threadsafe(self.stop.set)
        self.thread.join(30)


async def freshness(store: TenantStore, person: RecordID, samples: int = 20) -> list[float]:
    """Seconds from a new fact's commit until a search finds it (through the indexer)."""
    delays = []
    for i in range(samples):
        word = "".join(random.choices(string.ascii_lowercase, k=12))  # one term, unique
        row = {
            "id": RecordID("relates_to", f"fresh{i}"),
            "in": person,
            "out": person,
            "relation": "KNOWS",
            "edge_type": "semantic",
            "fact": f"Fresh fact number {word}.",
            "confidence": 1.0,
            "valid_at": datetime(2020, 1, 1, tzinfo=UTC),
            "created_at": datetime.now(UTC),
        }
        await store.query(queries.FACTS_BULK_INSERT, {"rows": [row]})
        committed = time.perf_counter()
        request = SearchRequest(query=word, scopes=("facts",), methods=("bm25",))
        while [hit.id for hit in (await search(store, request, Precomputed.shared())).facts] != [
            f"relates_to:fresh{i}"
        ]:
            await asyncio.sleep(0.01)
        delays.append(time.perf_counter() - committed)
        await asyncio.sleep(0.3)
    assert not indexer._inline, "this process wrote to the index: the indexer did not run"
    return delays


async def index_figures(
    store: TenantStore, server: surreal_server.RunningServer, config: StoreConfig
) -> IndexerThread:
    namespace = store.namespace or ""
    rebuilt = in_child("rebuild", server, namespace)
    manifest = directories.read_manifest(directories.tenant_dir(namespace), namespace)
    graph = "with" if manifest and manifest.table("relates_to").hnsw else "without"
    disk = sum(
        f.stat().st_size for f in directories.tenant_dir(namespace).rglob("*") if f.is_file()
    )
    print(
        f"  full rebuild of the index (fresh process): {rebuilt['seconds']:.1f} s, "
        f"peak memory grew {rebuilt['peak_grew_mib']:.0f} MiB (to {rebuilt['peak_mib']:.0f} "
        f"MiB), {graph} a graph of vectors; {disk / 2**20:.0f} MiB on disk"
    )
    running = IndexerThread(config, namespace).__enter__()
    first = in_child("first", server, namespace)
    print(
        f"  first search of a fresh process (index opened): {first['first_search_s'] * 1000:.0f}"
        f" ms; memory beyond the shared map after 30 searches: "
        f"{first['anon_grew_mib']:.1f} MiB"
    )
    return running


async def measure(store: TenantStore, runs: int) -> None:
    embed_times = []
    for question in QUESTIONS * 3:
        started = time.perf_counter()
        local_embedder().embed([question])
        embed_times.append(time.perf_counter() - started)
    print(f"  query embedding (MiniLM)      {figures(embed_times)}")
    embedder = Precomputed()
    for name in (
        "fact_rrf",
        "fact_mmr",
        "fact_node_distance",
        "fact_episode_mentions",
        "entity_rrf",
        "combined_rrf",
    ):
        recipe = RECIPES[name]
        samples = []
        for i in range(runs):
            request = SearchRequest(
                query=QUESTIONS[i % len(QUESTIONS)],
                scopes=recipe["scopes"],
                methods=recipe["methods"],
                reranker=recipe["reranker"],
            )
            started = time.perf_counter()
            await search(store, request, embedder)
            samples.append(time.perf_counter() - started)
        print(f"  search {name:<22} {figures(samples)}")
    for mode in ("local", "global", "hybrid", "naive", "mix"):
        samples = []
        for i in range(max(5, runs // 3)):
            started = time.perf_counter()
            await query(
                store,
                QueryRequest(question=QUESTIONS[i % len(QUESTIONS)], mode=mode),
                embedder,
                None,
            )
            samples.append(time.perf_counter() - started)
        print(f"  query mode {mode:<18} {figures(samples)}")


async def main(facts_count: int, runs: int, composed: bool) -> None:
    server = surreal_server.start(storage="mem://", log=Path("/dev/null"))
    directory = tempfile.mkdtemp(prefix="bench-search-")
    os.environ["KG_SEARCH_DIR"] = directory
    configure(CoreConfig(search_dir=Path(directory)))  # this process's core
    running = None
    try:
        config = StoreConfig(
            url=server.url,
            username=server.credentials.user,
            password=server.credentials.password,
            query_timeout=600,
        )
        store = TenantStore(Pool(config, "t_bench_search"))
        await schema.migrate(store, schema.load_migrations(ROOT / "schema"), embedding_dim=384)
        await store.query(queries.FACT_FULLTEXT_REMOVE)
        entities, facts = build(facts_count)
        timings = await load(store, entities, facts, composed)
        print(
            f"search over {facts_count} facts, {len(entities)} entities (SurrealDB mem://), "
            f"{'composed' if composed else 'MiniLM'} vectors"
        )
        print(f"  embedding {timings['embedding']:.1f} s, insert {timings['insert']:.1f} s")
        running = await index_figures(store, server, config)
        await measure(store, runs)
        delays = await freshness(store, entities[0]["id"])
        print(f"  a new fact found after its commit  {figures(delays)}")
    finally:
        if running is not None:
            running.__exit__()
        server.stop()
        shutil.rmtree(directory, ignore_errors=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--facts", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--composed-vectors", action="store_true")
    parser.add_argument("--child", choices=["rebuild", "first"], help=argparse.SUPPRESS)
    parser.add_argument("--namespace", help=argparse.SUPPRESS)
    arguments = parser.parse_args()
    if arguments.child:
        asyncio.run(child_main(arguments.child, arguments.namespace))
    else:
        asyncio.run(main(arguments.facts, arguments.runs, arguments.composed_vectors))
