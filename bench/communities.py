"""Community detection on 10k and 100k facts: projection from the tenant's fact index,
Leiden time, peak memory, and modularity next to plain label propagation on the same
graph. Summaries are left out (the target excludes them).

The facts are the search benchmark's synthetic tenant (people, organisations, places),
with a planted structure: each person works in one of ~50 clusters, and knows, works
with and visits mostly inside it. They are fed to a FactIndex directly (no database:
loading 100k facts into SurrealDB with its full-text indexing takes minutes and is
measured by bench/search.py).

    .venv/bin/python bench/communities.py [--facts 10000 100000]
"""

from __future__ import annotations

import argparse
import random
import resource
import sys
import tempfile
import time
import tracemalloc
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import igraph  # noqa: E402
from surrealdb.data.types.record_id import RecordID  # noqa: E402

from kgapp.graph.communities import Detection, detect, project_index  # noqa: E402
from kgapp.graph.index import FactIndex  # noqa: E402
from kgapp.graph.index.directories import TableState  # noqa: E402
from kgapp.graph.index.facts import FACTS  # noqa: E402
from kgapp.graph.index.writer import TableWriter  # noqa: E402

CLUSTERS = 50


def facts(count: int, seed: int = 7) -> list[dict]:
    rng = random.Random(seed)
    people = max(200, count // 8)
    cluster = [rng.randrange(CLUSTERS) for _ in range(people)]
    members: dict[int, list[int]] = {}
    for person, group in enumerate(cluster):
        members.setdefault(group, []).append(person)
    start = datetime(2020, 1, 1, tzinfo=UTC)
    rows = []
    for i in range(count):
        a = rng.randrange(people)
        b = rng.choice(members[cluster[a]]) if rng.random() < 0.9 else rng.randrange(people)
        rows.append(
            {
                "id": RecordID("relates_to", f"f{i}"),
                "in": RecordID("entity", f"p{a}"),
                "out": RecordID("entity", f"p{b}"),
                "relation": "KNOWS",
                "edge_type": "semantic",
                "fact": "",
                "confidence": 1.0,
                "valid_at": start,
                "created_at": start,
            }
        )
    return rows


def written(rows: list[dict], directory: Path) -> FactIndex:
    """A fact index of `rows` written to `directory` (as the indexer would) and opened."""
    writer = TableWriter(directory, FACTS, TableState())
    for row in rows:
        writer.put(row)
    state = writer.commit(1)
    writer.close()
    index = FactIndex(directory)
    index.update(state)
    return index


def main(sizes: list[int]) -> None:
    now = datetime.now(UTC)
    for count in sizes:
        index = written(facts(count), Path(tempfile.mkdtemp(prefix="bench-communities-")))
        rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        tracemalloc.start()
        started = time.perf_counter()
        projection = project_index(index, now, now)
        projected = time.perf_counter()
        found, modularity = detect(projection, Detection())
        detected = time.perf_counter()
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        graph = igraph.Graph(n=len(projection.entities), edges=projection.pairs.tolist())
        graph.es["weight"] = projection.weights.astype(float).tolist()
        began = time.perf_counter()
        labels = graph.community_label_propagation(weights="weight")
        propagated = time.perf_counter() - began
        max_rss = max(rss, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss) / 1024
        print(
            f"{count} facts, {len(projection.entities)} entities,"
            f" {len(projection.pairs)} weighted edges"
        )
        print(
            f"  projection {projected - started:.2f} s, Leiden {detected - projected:.2f} s,"
            f" total {detected - started:.2f} s; Python peak {peak / 2**20:.0f} MiB"
            f" (process max RSS {max_rss:.0f} MiB)"
        )
        print(f"  Leiden: {len(found)} communities, modularity {modularity[0]:.3f}")
        print(
            f"  label propagation: {len(set(labels.membership))} communities,"
            f" modularity {graph.modularity(labels.membership, weights='weight'):.3f},"
            f" {propagated:.2f} s"
        )


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--facts", type=int, nargs="+", default=[10_000, 100_000])
    main(parser.parse_args().facts)
