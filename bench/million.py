"""A graph of N facts loaded the way a team migrating one would: as a tenant export
(JSONL) through the product's import, into the on-disk engine `make run` uses; then the
search figures at that size, and what the explorer and the worker do with it.

1. **Generate** an export file of N facts, streamed, in bounded memory: the people,
   organisations and places of bench/search.py (8,784 entities from 78,000 facts on,
   each with its degree), one episode per five facts (their sentences), MiniLM vectors
   on every entity and a composed vector on every fact (the normalised sum of its
   subject's, verb's and object's: the shape and spread of neighbours of real ones,
   without embedding a million sentences). Nothing but the entities' vectors is held:
   the facts are written as they are made.
2. **Import** it, in a fresh process (its peak memory is its own), into an empty
   namespace of a SurrealDB server on RocksDB in a temporary folder: the whole file
   checked, then written (`check_export`, `check_target`, `load_export`, as
   `manage.py import_tenant` and POST import run them).
3. **Search**: bench/search.py's figures on the imported tenant (index rebuild in a
   fresh process, first search, memory per reading process, every recipe and query
   mode), and the disk the server and the index take per fact.
4. **Views**, each in a fresh process, the indexer running beside them: community
   detection as the worker's task runs it without a model (`rebuild_job`: time, peak
   memory, communities); the explorer page's first load (its entity count, then GET
   graph?limit=150 as the router serves it, encoded as JSON; cold, then warm p50); a
   diff between two moments a month apart (GET graph/diff; p50, and the changes).
   bench/explorer.py times the browser's side of the explorer and bench/communities.py
   Leiden alone, on graphs built in memory.

    .venv/bin/python bench/million.py [--facts 1000000] [--runs 30] [--keep] [--no-search]
    .venv/bin/python bench/million.py --reuse var/bench-million-XXXX [--no-search]

`make bench-million` runs it at 1,000,000 facts; `--facts 100000` gives the 100k row.
`--keep` leaves the imported tenant (SurrealDB's folder and the index) in
var/bench-million-*, and `--reuse` measures it again without generating or importing
(its communities are removed first, so detection starts afresh); `--no-search` leaves
out the search figures (the index is rebuilt only when there is none).
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import itertools
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402
from surrealdb.data.types.record_id import RecordID  # noqa: E402

from bench.export import config  # noqa: E402
from bench.export import in_child as export_child  # noqa: E402
from bench.search import (  # noqa: E402
    CITIES,
    FIRST,
    LAST,
    ORGS,
    SUFFIX,
    VERBS,
    IndexerThread,
    index_figures,
    measure,
    peak_mib,
)
from bench.search import in_child as search_child  # noqa: E402
from kgapp import surreal_server  # noqa: E402
from kgapp.graph import communities, drawing, jobs, queries, schema, stats  # noqa: E402
from kgapp.graph.config import CoreConfig, configure  # noqa: E402
from kgapp.graph.embeddings import local_embedder  # noqa: E402
from kgapp.graph.export.jsonl import FORMAT, VERSION, line, record_line  # noqa: E402
from kgapp.graph.export.tables import BY_NAME, TABLES  # noqa: E402
from kgapp.graph.index import directories  # noqa: E402
from kgapp.graph.records import to_json  # noqa: E402
from kgapp.graph.resolution.canonical import canonical_name, entity_key  # noqa: E402
from kgapp.graph.retention import RetentionPolicy  # noqa: E402
from kgapp.graph.search import diff, elements  # noqa: E402
from kgapp.graph.search.diff import DiffRequest  # noqa: E402
from kgapp.graph.store import Pool, TenantStore  # noqa: E402

PER_EPISODE = 5
NAMESPACE = "t_bench_million"
START = datetime(2020, 1, 1, tzinfo=UTC)
SCHEMA_VERSION = max(m.version for m in schema.load_migrations(ROOT / "schema"))


class Generator:
    """The export's records, table by table, made as they are written."""

    def __init__(self, count: int, seed: int = 11) -> None:
        self.count, self.seed, self.rng = count, seed, random.Random(seed)
        initials = [f" {chr(65 + i)}." for i in range(26)][: max(1, count // 3000)]
        names = {
            "Person": [f"{f}{m} {last}" for f in FIRST for m in ["", *initials] for last in LAST],
            "Organization": [f"{o} {s}" for o in ORGS for s in SUFFIX],
            "Location": list(CITIES),
        }
        embedder = local_embedder()
        self.entities: dict[str, list[dict]] = {}
        for kind, listed in names.items():
            vectors = np.concatenate(
                [  # in slices: one call of 8,640 names peaks at 1 GiB
                    np.asarray(embedder.embed(listed[i : i + 256]), dtype=np.float32)
                    for i in range(0, len(listed), 256)
                ]
            )
            self.entities[kind] = [
                {
                    "id": RecordID("entity", entity_key(canonical_name(n))),
                    "name": n,
                    "canonical_name": canonical_name(n),
                    "entity_type": kind,
                    "summary": "",
                    "name_embedding": v,
                    "created_at": START,
                }
                for n, v in zip(listed, vectors, strict=True)
            ]
        verbs = embedder.embed([verb for _, verb, _ in VERBS])
        self.verbs = {
            r: np.asarray(v, dtype=np.float32) for (r, _, _), v in zip(VERBS, verbs, strict=True)
        }
        self.pools = {
            "org": self.entities["Organization"],
            "city": self.entities["Location"],
            "person": self.entities["Person"],
        }
        # The entities are written before the facts: their degree (facts at either end,
        # as ingestion counts it; the explorer's first view shows the highest) comes from
        # a first pass over the same draws.
        self.degree: Counter[str] = Counter()
        for subject, _, _, target, *_ in self._draws(random.Random(seed)):
            self.degree[subject["canonical_name"]] += 1
            self.degree[target["canonical_name"]] += 1

    def lines(self) -> Iterator[bytes]:
        digest, counts = hashlib.sha256(), {table.name: 0 for table in TABLES}
        head = {
            "kind": "header",
            "format": FORMAT,
            "version": VERSION,
            "schema_version": SCHEMA_VERSION,
            "embedding_dim": 384,
            "tenant": {"slug": "bench", "name": "Bench"},
            "exported_at": datetime.now(UTC).isoformat(),
        }
        settings = {"kind": "settings", "retention": RetentionPolicy().as_dict()}
        for value in itertools.chain((head, settings), self._records(counts)):  # lazily
            digest.update(encoded := line(value))
            yield encoded
        yield line(
            {
                "kind": "trailer",
                "counts": counts,
                "records": sum(counts.values()),
                "sha256": digest.hexdigest(),
            }
        )

    def _records(self, counts: dict[str, int]) -> Iterator[dict]:
        for table, rows in (
            ("episode", self._episodes()),
            ("entity", self._entities()),
            ("relates_to", self._facts()),
            ("mentions", self._mentions()),
        ):
            for row in rows:
                counts[table] += 1
                yield record_line(BY_NAME[table], row)

    def _entities(self) -> Iterator[dict]:
        for listed in self.entities.values():
            for row in listed:
                yield {
                    **row,
                    "name_embedding": row["name_embedding"].tolist(),
                    "degree": self.degree[row["canonical_name"]],
                }

    def _episodes(self) -> Iterator[dict]:
        for number in range((self.count + PER_EPISODE - 1) // PER_EPISODE):
            yield {
                "id": RecordID("episode", f"e{number}"),
                "name": f"note {number}",
                "source": "text",
                "content": f"Notes of meeting {number}.",
                "content_hash": f"h{number}",
                "created_at": START,
                "valid_at": START + timedelta(days=number % 1800),
            }

    def _mentions(self) -> Iterator[dict]:
        """Each episode mentions the people, organisations and places of its facts, once
        each (what the explorer's first view ranks by, with the facts)."""
        said: set[tuple[int, str]] = set()
        number = itertools.count()
        for i, (subject, _, _, target, *_) in enumerate(self._draws(random.Random(self.seed))):
            episode = i // PER_EPISODE
            for entity in (subject, target):
                if (episode, entity["canonical_name"]) not in said:
                    said.add((episode, entity["canonical_name"]))
                    yield {
                        "id": RecordID("mentions", f"m{next(number)}"),
                        "in": RecordID("episode", f"e{episode}"),
                        "out": entity["id"],
                        "created_at": START,
                    }
            if i % PER_EPISODE == PER_EPISODE - 1:
                said.clear()

    def _draws(self, rng: random.Random) -> Iterator[tuple]:
        """Each fact's ends, relation, validity and confidence, as `rng` draws them."""
        for _ in range(self.count):
            subject = rng.choice(self.pools["person"])
            relation, verb, kind = rng.choice(VERBS)
            target = rng.choice(self.pools[kind])
            valid = START + timedelta(days=rng.randrange(1800))
            ended = valid + timedelta(days=rng.randrange(30, 900)) if rng.random() < 0.3 else None
            yield subject, relation, verb, target, valid, ended, round(rng.uniform(0.5, 1.0), 2)

    def _facts(self) -> Iterator[dict]:
        draws = self._draws(self.rng)
        for i, (subject, relation, verb, target, valid, ended, confidence) in enumerate(draws):
            total = subject["name_embedding"] + self.verbs[relation] + target["name_embedding"]
            yield {
                "id": RecordID("relates_to", f"b{i}"),
                "in": subject["id"],
                "out": target["id"],
                "relation": relation,
                "edge_type": "semantic",
                "fact": f"{subject['name']} {verb} {target['name']}.",
                "episodes": [RecordID("episode", f"e{i // PER_EPISODE}")],
                "confidence": confidence,
                "valid_at": valid,
                "invalid_at": ended,
                "created_at": valid,
                "fact_embedding": (total / np.linalg.norm(total)).tolist(),
            }


def server_rss_mib(server: surreal_server.RunningServer) -> float:
    status = Path(f"/proc/{server.process.pid}/status").read_text()
    return next(int(x.split()[1]) / 1024 for x in status.splitlines() if x.startswith("VmRSS:"))


def folder_mib(path: Path) -> float:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file()) / 2**20


def generate(count: int, path: Path) -> None:
    before, started = peak_mib(), time.perf_counter()
    with path.open("wb") as out:
        for encoded in Generator(count).lines():
            out.write(encoded)
    print(
        f"  generated the export: {time.perf_counter() - started:.0f} s,"
        f" {path.stat().st_size / 2**20:.0f} MiB; generator peak memory {peak_mib():.0f} MiB"
        f" ({before:.0f} MiB before)",
        flush=True,
    )


# --- the explorer's first view, a diff and community detection, each in a fresh process

FIRST_VIEW = 150  # entities the explorer's first view asks for (explorer/elements.js)
SERVER_LAYOUT = 1000  # above this many nodes it asks the server to lay them out (layout.js)
DIFF_FROM, DIFF_DAYS = START + timedelta(days=900), 30  # a month in the middle of the data


async def child_explorer(store: TenantStore, runs: int) -> dict:
    """The explorer page's first load as the product serves it: the page (which counts
    the entities), GET graph?limit=150 (the most connected entities, their facts with
    history, the entities at their other ends, their communities) encoded as JSON, and
    POST layout when that holds more than SERVER_LAYOUT nodes. The first load is cold
    (a fresh process: new connections, nothing cached)."""
    samples, body, encoded = [], {}, ""
    for _ in range(runs + 1):
        started = time.perf_counter()
        await stats.entity_count(store)
        paged = time.perf_counter()
        body = await elements.graph_elements(
            store, seed=None, entity_types=[], limit=FIRST_VIEW, moment=None
        )
        read = time.perf_counter()
        encoded = json.dumps(to_json(body))
        encoded_at = time.perf_counter()
        if len(body["nodes"]) > SERVER_LAYOUT:
            number = {node["data"]["id"]: i for i, node in enumerate(body["nodes"])}
            drawing.positions(
                len(number),
                [(number[e["data"]["source"]], number[e["data"]["target"]]) for e in body["edges"]],
            )
        samples.append(
            {
                "total": time.perf_counter() - started,
                "page": paged - started,
                "graph": read - paged,
                "json": encoded_at - read,
                "layout": time.perf_counter() - encoded_at,
            }
        )
    return {
        "first": samples[0],
        "warm": samples[1:],
        "nodes": len(body["nodes"]),
        "edges": len(body["edges"]),
        "kib": len(encoded) / 1024,
        "in_communities": sum(1 for node in body["nodes"] if node["data"]["community"]),
    }


async def child_diff(store: TenantStore, runs: int) -> dict:
    """GET graph/diff between two moments a month apart (valid axis, as known now): the
    facts with a bound between them read and sorted into added / ended / changed, the
    lists encoded as JSON; then the statements alone, timed on their own."""
    request = DiffRequest(from_=DIFF_FROM, to=DIFF_FROM + timedelta(days=DIFF_DAYS))
    samples, totals = [], {}
    for _ in range(runs + 1):
        started = time.perf_counter()
        result = await diff.graph_diff(store, request)
        json.dumps(
            to_json([result.added, result.ended, [[c.before, c.after] for c in result.changed]])
        )
        samples.append(time.perf_counter() - started)
        totals = result.totals
    started = time.perf_counter()
    starts, ends = await store.query(
        queries.DIFF_VALID_BOUNDS, {"low": request.from_, "high": request.to}
    )
    return {
        "first": samples[0],
        "warm": samples[1:],
        "totals": totals,
        "statements_s": time.perf_counter() - started,
        "rows": len(starts or []) + len(ends or []),
    }


async def child_communities(store: TenantStore, runs: int) -> dict:
    """Community detection as the worker's task runs it with no model configured: a job
    record, `rebuild_job` (the projection from the search index, Leiden, a plain
    summary of each new community, one transaction to store them)."""
    job = await jobs.job_create(store, kind="communities", created_by="bench")
    before = peak_mib()
    started = time.perf_counter()
    done = await communities.rebuild_job(store, job["id"], None, communities.Detection())
    took, peak = time.perf_counter() - started, peak_mib()
    now = datetime.now(UTC)
    projection = await communities.project(store, now, now)
    return {
        "seconds": took,
        "peak_mib": peak,
        "before_mib": before,
        "status": done["status"],
        "counts": done.get("counts", {}),
        "timings_ms": done.get("timings", {}),
        "entities": len(projection.entities),
        "pairs": len(projection.pairs),
        "facts": len(projection.fact_keys),
    }


CHILDREN = {"explorer": child_explorer, "diff": child_diff, "communities": child_communities}


def in_child(phase: str, runs: int) -> dict:
    """Run a phase in a fresh Python process on the bench's tenant: its figures."""
    done = subprocess.run(
        [sys.executable, __file__, "--child", phase, "--runs", str(runs)],
        env=dict(os.environ),
        capture_output=True,
        text=True,
        check=True,
    )
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def summary(samples: list[float]) -> str:
    ordered = sorted(samples)
    return (
        f"p50 {statistics.median(ordered) * 1000:,.0f} ms, p95"
        f" {ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))] * 1000:,.0f} ms"
    )


def views(runs: int) -> dict[str, dict]:
    """The explorer's first view, a diff and community detection, printed; their
    figures returned. Communities first, so the first view reads them as it would."""
    found = in_child("communities", runs)
    split = ", ".join(f"{k} {v / 1000:.1f} s" for k, v in found["timings_ms"].items())
    print(
        f"  community detection (worker's task, no model; fresh process):"
        f" {found['seconds']:.1f} s ({split}); {found['counts'].get('communities', 0):,}"
        f" communities of {found['entities']:,} entities, {found['pairs']:,} weighted edges"
        f" from {found['facts']:,} current facts; peak memory {found['peak_mib']:.0f} MiB"
        f" ({found['before_mib']:.0f} MiB before); job {found['status']}",
        flush=True,
    )
    seen = in_child("explorer", runs)
    first, warm = seen["first"], seen["warm"]
    parts = ", ".join(f"{k} {first[k] * 1000:.0f}" for k in ("page", "graph", "json", "layout"))
    print(
        f"  explorer's first view (page + GET graph?limit={FIRST_VIEW}"
        f"{' + POST layout' if seen['nodes'] > SERVER_LAYOUT else ''}):"
        f" cold {first['total'] * 1000:,.0f} ms ({parts} ms), warm"
        f" {summary([s['total'] for s in warm])}; {seen['nodes']:,} nodes"
        f" ({seen['in_communities']:,} in a community), {seen['edges']:,} edges,"
        f" {seen['kib']:.0f} KiB",
        flush=True,
    )
    changed = in_child("diff", max(5, runs // 6))
    totals = changed["totals"]
    print(
        f"  diff between two moments {DIFF_DAYS} days apart (valid axis):"
        f" cold {changed['first'] * 1000:,.0f} ms, warm {summary(changed['warm'])};"
        f" {totals['added']:,} added, {totals['ended']:,} ended, {totals['changed']:,}"
        f" changed ({changed['rows']:,} facts read: the statements alone"
        f" {changed['statements_s'] * 1000:,.0f} ms)",
        flush=True,
    )
    return {"communities": found, "explorer": seen, "diff": changed}


async def load_tenant(count: int, work: Path, server: surreal_server.RunningServer) -> None:
    """Generate the export, import it in a child process, and say what it took."""
    path = work / "export.jsonl"
    generate(count, path)
    done = export_child("import", server, NAMESPACE, path)
    took = done["check_s"] + done["write_s"]
    print(
        f"  import: {took:.0f} s ({took / 60:.1f} min; check {done['check_s']:.0f} s,"
        f" write {done['write_s']:.0f} s), {done['records'] / took:.0f} records/s,"
        f" {done['records']:,} records; importer peak memory {done['peak_mib']:.0f} MiB"
        f" ({done['before_mib']:.0f} MiB before)",
        flush=True,
    )
    path.unlink()
    print(
        f"  SurrealDB: {folder_mib(work / 'surreal'):.0f} MiB on disk"
        f" ({folder_mib(work / 'surreal') * 2**20 / count:.0f} B a fact),"
        f" server memory {server_rss_mib(server):.0f} MiB",
        flush=True,
    )


async def main(count: int, runs: int, reuse: Path | None, keep: bool, search: bool) -> None:
    work = reuse or Path(tempfile.mkdtemp(prefix="bench-million-", dir=ROOT / "var"))
    os.environ["KG_SEARCH_DIR"] = str(work / "search")
    configure(CoreConfig(search_dir=work / "search"))  # this process's core
    server = surreal_server.start(
        storage=f"rocksdb://{work / 'surreal'}",
        log=Path("/dev/null"),
        credentials=surreal_server.local_credentials(work),
    )
    running = None
    try:
        os.environ.update(server.credentials.env(), BENCH_SURREAL_URL=server.url)
        store = TenantStore(Pool(config(), NAMESPACE))
        if reuse is None:
            print(
                f"a million-fact tenant at {count:,} facts (SurrealDB on RocksDB, loaded by"
                " the tenant import)",
                flush=True,
            )
            await load_tenant(count, work, server)
        else:
            counts = await stats.graph_counts(store)
            print(
                f"the tenant imported in {reuse}: {counts.get('facts', 0):,} facts,"
                f" {counts.get('entities', 0):,} entities (SurrealDB on RocksDB); its"
                " communities removed, to be detected afresh",
                flush=True,
            )
            await store.query(queries.COMMUNITIES_CLEAR)
        if search:
            running = await index_figures(store, server, config())
            await measure(store, runs)
        else:
            if directories.read_manifest(directories.tenant_dir(NAMESPACE), NAMESPACE) is None:
                rebuilt = search_child("rebuild", server, NAMESPACE)
                print(
                    f"  full rebuild of the index (fresh process): {rebuilt['seconds']:.1f} s,"
                    f" peak {rebuilt['peak_mib']:.0f} MiB",
                    flush=True,
                )
            running = IndexerThread(config(), NAMESPACE).__enter__()  # keeps it current
        views(runs)
    finally:
        if running is not None:
            running.__exit__()
        server.stop()
        if keep or reuse is not None:
            print(f"  kept {work} (measure again: --reuse {work.relative_to(ROOT)})")
        else:
            shutil.rmtree(work, ignore_errors=True)


async def child_main(phase: str, runs: int) -> None:
    print(
        json.dumps(await CHILDREN[phase](TenantStore(Pool(config(), NAMESPACE)), runs), default=str)
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--facts", type=int, default=1_000_000)
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument(
        "--keep",
        action="store_true",
        help="keep the imported tenant (in var/bench-million-*) for --reuse",
    )
    parser.add_argument(
        "--reuse",
        type=Path,
        metavar="DIR",
        help="measure the tenant a --keep run left in DIR (no generation, no"
        " import; --facts is ignored)",
    )
    parser.add_argument(
        "--no-search",
        dest="search",
        action="store_false",
        help="leave out the index rebuild and the search figures",
    )
    parser.add_argument("--child", choices=sorted(CHILDREN), help=argparse.SUPPRESS)
    arguments = parser.parse_args()
    if arguments.child:
        asyncio.run(child_main(arguments.child, arguments.runs))
    else:
        reuse = arguments.reuse.resolve() if arguments.reuse else None
        asyncio.run(main(arguments.facts, arguments.runs, reuse, arguments.keep, arguments.search))
