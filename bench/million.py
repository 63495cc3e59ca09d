"""A graph of N facts loaded the way a team migrating one would: as a tenant export
(JSONL) through the product's import, into the on-disk engine `make run` uses; then the
search figures at that size.

1. **Generate** an export file of N facts, streamed, in bounded memory: the people,
   organisations and places of bench/search.py (8,784 entities from 78,000 facts on),
   one episode per five facts (their sentences), MiniLM vectors on every entity and a
   composed vector on every fact (the normalised sum of its subject's, verb's and
   object's: the shape and spread of neighbours of real ones, without embedding a
   million sentences). Nothing but the entities' vectors is held: the facts are written
   as they are made.
2. **Import** it, in a fresh process (its peak memory is its own), into an empty
   namespace of a SurrealDB server on RocksDB in a temporary folder: the whole file
   checked, then written (`check_export`, `check_target`, `load_export`, as
   `manage.py import_tenant` and POST import run them).
3. **Search**: bench/search.py's figures on the imported tenant (index rebuild in a
   fresh process, first search, memory per reading process, every recipe and query
   mode), and the disk the server and the index take per fact.

    .venv/bin/python bench/million.py [--facts 1000000] [--runs 30]

`make bench-million` runs it at 1,000,000 facts; `--facts 100000` gives the 100k row.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import itertools
import os
import random
import shutil
import sys
import tempfile
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402
from surrealdb.data.types.record_id import RecordID  # noqa: E402

from bench.export import config, in_child  # noqa: E402
from bench.search import (  # noqa: E402
    CITIES,
    FIRST,
    LAST,
    ORGS,
    SUFFIX,
    VERBS,
    index_figures,
    measure,
    peak_mib,
)
from kgapp import surreal_server  # noqa: E402
from kgapp.graph import schema  # noqa: E402
from kgapp.graph.embeddings import local_embedder  # noqa: E402
from kgapp.graph.export.jsonl import FORMAT, VERSION, line, record_line  # noqa: E402
from kgapp.graph.export.tables import BY_NAME, TABLES  # noqa: E402
from kgapp.graph.retention import RetentionPolicy  # noqa: E402
from kgapp.graph.store import Pool, TenantStore  # noqa: E402
from kgapp.graph.text import canonical_name, entity_key  # noqa: E402

PER_EPISODE = 5
NAMESPACE = "t_bench_million"
START = datetime(2020, 1, 1, tzinfo=UTC)
SCHEMA_VERSION = max(m.version for m in schema.load_migrations(ROOT / "schema"))


class Generator:
    """The export's records, table by table, made as they are written."""

    def __init__(self, count: int, seed: int = 11) -> None:
        self.count, self.rng = count, random.Random(seed)
        initials = [f" {chr(65 + i)}." for i in range(26)][: max(1, count // 3000)]
        names = {
            "Person": [f"{f}{m} {last}" for f in FIRST for m in ["", *initials] for last in LAST],
            "Organization": [f"{o} {s}" for o in ORGS for s in SUFFIX],
            "Location": list(CITIES),
        }
        embedder = local_embedder()
        self.entities: dict[str, list[dict]] = {}
        for kind, listed in names.items():
            vectors = np.concatenate([  # in slices: one call of 8,640 names peaks at 1 GiB
                np.asarray(embedder.embed(listed[i : i + 256]), dtype=np.float32)
                for i in range(0, len(listed), 256)
            ])
            self.entities[kind] = [
                {"id": RecordID("entity", entity_key(canonical_name(n))), "name": n,
                 "canonical_name": canonical_name(n), "entity_type": kind, "summary": "",
                 "name_embedding": v, "created_at": START}
                for n, v in zip(listed, vectors, strict=True)
            ]
        verbs = embedder.embed([verb for _, verb, _ in VERBS])
        self.verbs = {
            r: np.asarray(v, dtype=np.float32) for (r, _, _), v in zip(VERBS, verbs, strict=True)
        }
        self.pools = {"org": self.entities["Organization"], "city": self.entities["Location"],
                      "person": self.entities["Person"]}

    def lines(self) -> Iterator[bytes]:
        digest, counts = hashlib.sha256(), {table.name: 0 for table in TABLES}
        head = {"kind": "header", "format": FORMAT, "version": VERSION,
                "schema_version": SCHEMA_VERSION, "embedding_dim": 384,
                "tenant": {"slug": "bench", "name": "Bench"},
                "exported_at": datetime.now(UTC).isoformat()}
        settings = {"kind": "settings", "retention": RetentionPolicy().as_dict()}
        for value in itertools.chain((head, settings), self._records(counts)):  # lazily
            digest.update(encoded := line(value))
            yield encoded
        yield line({"kind": "trailer", "counts": counts, "records": sum(counts.values()),
                    "sha256": digest.hexdigest()})

    def _records(self, counts: dict[str, int]) -> Iterator[dict]:
        for table, rows in (("episode", self._episodes()), ("entity", self._entities()),
                            ("relates_to", self._facts())):
            for row in rows:
                counts[table] += 1
                yield record_line(BY_NAME[table], row)

    def _entities(self) -> Iterator[dict]:
        for listed in self.entities.values():
            for row in listed:
                yield {**row, "name_embedding": row["name_embedding"].tolist()}

    def _episodes(self) -> Iterator[dict]:
        for number in range((self.count + PER_EPISODE - 1) // PER_EPISODE):
            yield {"id": RecordID("episode", f"e{number}"), "name": f"note {number}",
                   "source": "text", "content": f"Notes of meeting {number}.",
                   "content_hash": f"h{number}", "created_at": START,
                   "valid_at": START + timedelta(days=number % 1800)}

    def _facts(self) -> Iterator[dict]:
        rng = self.rng
        for i in range(self.count):
            subject = rng.choice(self.pools["person"])
            relation, verb, kind = rng.choice(VERBS)
            target = rng.choice(self.pools[kind])
            valid = START + timedelta(days=rng.randrange(1800))
            ended = valid + timedelta(days=rng.randrange(30, 900)) if rng.random() < 0.3 else None
            total = subject["name_embedding"] + self.verbs[relation] + target["name_embedding"]
            yield {"id": RecordID("relates_to", f"b{i}"), "in": subject["id"],
                   "out": target["id"], "relation": relation, "edge_type": "semantic",
                   "fact": f"{subject['name']} {verb} {target['name']}.",
                   "episodes": [RecordID("episode", f"e{i // PER_EPISODE}")],
                   "confidence": round(rng.uniform(0.5, 1.0), 2), "valid_at": valid,
                   "invalid_at": ended, "created_at": valid,
                   "fact_embedding": (total / np.linalg.norm(total)).tolist()}


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
    print(f"  generated the export: {time.perf_counter() - started:.0f} s,"
          f" {path.stat().st_size / 2**20:.0f} MiB; generator peak memory {peak_mib():.0f} MiB"
          f" ({before:.0f} MiB before)", flush=True)


async def main(count: int, runs: int) -> None:
    work = Path(tempfile.mkdtemp(prefix="bench-million-", dir=ROOT / "var"))
    os.environ["KG_SEARCH_DIR"] = str(work / "search")
    server = surreal_server.start(storage=f"rocksdb://{work / 'surreal'}", log=Path("/dev/null"))
    running = None
    try:
        os.environ.update(server.credentials.env(), BENCH_SURREAL_URL=server.url)
        print(f"a million-fact tenant at {count:,} facts (SurrealDB on RocksDB, loaded by the"
              " tenant import)", flush=True)
        path = work / "export.jsonl"
        generate(count, path)
        done = in_child("import", server, NAMESPACE, path)
        took = done["check_s"] + done["write_s"]
        print(f"  import: {took:.0f} s ({took / 60:.1f} min; check {done['check_s']:.0f} s,"
              f" write {done['write_s']:.0f} s), {done['records'] / took:.0f} records/s,"
              f" {done['records']:,} records; importer peak memory {done['peak_mib']:.0f} MiB"
              f" ({done['before_mib']:.0f} MiB before)", flush=True)
        path.unlink()
        print(f"  SurrealDB: {folder_mib(work / 'surreal'):.0f} MiB on disk"
              f" ({folder_mib(work / 'surreal') * 2**20 / count:.0f} B a fact),"
              f" server memory {server_rss_mib(server):.0f} MiB", flush=True)
        store = TenantStore(Pool(config(), NAMESPACE))
        running = await index_figures(store, server, config())
        await measure(store, runs)
    finally:
        if running is not None:
            running.__exit__()
        server.stop()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--facts", type=int, default=1_000_000)
    parser.add_argument("--runs", type=int, default=30)
    arguments = parser.parse_args()
    asyncio.run(main(arguments.facts, arguments.runs))
