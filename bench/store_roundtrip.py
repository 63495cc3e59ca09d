"""Round-trip latency of the graph store: SurrealDB local server (mem://) <- ws RPC <-
GraphRuntime, from a sync caller (Celery, sync views) and from another event loop
(Daphne, Channels). Prints p50/p95/p99 in milliseconds.

    .venv/bin/python bench/store_roundtrip.py [--n 2000]
"""

from __future__ import annotations

import argparse
import asyncio
import platform
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from kgapp import surreal_server  # noqa: E402
from kgapp.graph import jobs, queries, schema  # noqa: E402
from kgapp.graph.store import GraphRuntime, StoreConfig  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


def percentiles(samples: list[float]) -> str:
    ordered = sorted(samples)
    pick = lambda q: ordered[min(len(ordered) - 1, int(q * len(ordered)))]  # noqa: E731
    return (
        f"p50 {statistics.median(ordered) * 1000:6.3f} ms  p95 {pick(0.95) * 1000:6.3f} ms"
        f"  p99 {pick(0.99) * 1000:6.3f} ms"
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=2000)
    n = parser.parse_args().n
    server = surreal_server.start(storage="mem://", log=Path("/dev/null"))
    runtime = GraphRuntime(
        StoreConfig(
            url=server.url,
            username=server.credentials.user,
            password=server.credentials.password,
        )
    )
    graph = runtime.tenant("t_bench")
    try:
        graph.run(schema.migrate, schema.load_migrations(ROOT / "schema"), embedding_dim=384)
        for _ in range(50):  # warm the pool
            graph.query(queries.PING)
        sync_ping, sync_write, sync_read = [], [], []
        for i in range(n):
            t0 = time.perf_counter()
            graph.query(queries.PING)
            t1 = time.perf_counter()
            row = graph.run(jobs.job_create, kind=f"bench {i}")
            t2 = time.perf_counter()
            graph.run(jobs.job_get, row["id"])
            t3 = time.perf_counter()
            sync_ping.append(t1 - t0)
            sync_write.append(t2 - t1)
            sync_read.append(t3 - t2)

        async def from_other_loop() -> list[float]:
            samples = []
            for _ in range(n):
                t0 = time.perf_counter()
                await graph.aquery(queries.PING)
                samples.append(time.perf_counter() - t0)
            return samples

        async_ping = asyncio.run(from_other_loop())
        print(f"store round trips, n={n}, {platform.machine()} {platform.python_version()}")
        print(f"  sync  RETURN 1            {percentiles(sync_ping)}")
        print(f"  sync  CREATE (a job)      {percentiles(sync_write)}")
        print(f"  sync  SELECT by id (job)  {percentiles(sync_read)}")
        print(f"  async RETURN 1 (2nd loop) {percentiles(async_ping)}")
    finally:
        runtime.close()
        server.stop()


if __name__ == "__main__":
    main()
