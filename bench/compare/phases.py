"""Where this product's own ingest time goes in `make bench-compare`: the kgapp system
run as bench/compare/run.py runs it, with each episode split into the pipeline's stages
(its report's timings), the search index's pass, the reader's refresh, and the database
round trips (count and time) of each; the model server's busy time is taken out.

    var/compare/venv/bin/python -m bench.compare.phases [--episodes 120] [--locomo]

Prints ms per episode (mean over the episodes after the first ten) for each phase.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from bench.compare import corpus as gold
from bench.compare.model import BenchModel, Embeddings, busy_seconds
from bench.compare.run import ROOT, quiet

WARM_UP = 10  # episodes left out of the means: caches, first commits, JIT of the engine


class Phases:
    """Time and round trips per phase, for the current episode."""

    def __init__(self) -> None:
        self.phase = "other"
        self.ms: Counter[str] = Counter()
        self.trips: Counter[str] = Counter()
        self.trip_ms: Counter[str] = Counter()

    @contextmanager
    def entered(self, phase: str) -> Iterator[None]:
        outer, self.phase = self.phase, phase
        started = time.perf_counter()
        try:
            yield
        finally:
            self.ms[phase] += (time.perf_counter() - started) * 1000
            self.phase = outer


def _wrap_async(owner: Any, name: str, around: Callable[..., Any]) -> None:
    original = getattr(owner, name)

    async def wrapped(*args: Any, **kwargs: Any) -> Any:
        return await around(original, *args, **kwargs)

    setattr(owner, name, wrapped)


def instrument(phases: Phases) -> None:
    """Count every store round trip under the phase that made it, and time the stages
    that report.timings does not name."""
    from kgapp.graph import store
    from kgapp.graph.index import indexer

    async def trip(original: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        started = time.perf_counter()
        try:
            return await original(*args, **kwargs)
        finally:
            phases.trips[phases.phase] += 1
            phases.trip_ms[phases.phase] += (time.perf_counter() - started) * 1000

    _wrap_async(store.TenantStore, "query", trip)

    def staged(phase: str) -> Callable[..., Any]:
        async def around(original: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
            with phases.entered(phase):
                return await original(*args, **kwargs)

        return around

    from kgapp.graph.ingest import indexing, persist, pipeline
    from kgapp.graph.resolution import entities, facts

    for module, name, phase in (
        (entities, "resolve_entities", "resolve_entities"),
        (facts, "existing_facts", "existing_facts"),
        (persist, "persist", "persist"),
        (persist, "units_embedded", "units_wait"),
        (indexing, "index_pending", "index_pending"),
    ):
        _wrap_async(module, name, staged(phase))
        if hasattr(pipeline, name) and module is not pipeline:
            _wrap_async(pipeline, name, staged(phase))
    _wrap_async(indexer.TenantWriter, "_follow", staged("index_feed"))
    _wrap_async(indexer.TenantWriter, "run_pass", staged("index_pass"))


async def profile(episodes: list[gold.Episode], corpus: gold.Corpus) -> None:
    from bench.compare.systems.kgapp import KgappSystem
    from kgapp.graph.index import writer as index_writer

    phases = Phases()
    instrument(phases)
    commit = index_writer.TableWriter.commit

    def timed_commit(self: Any, *args: Any, **kwargs: Any) -> Any:
        started = time.perf_counter()
        try:
            return commit(self, *args, **kwargs)
        finally:
            phases.ms[f"commit_{self.spec.table}"] += (time.perf_counter() - started) * 1000

    index_writer.TableWriter.commit = timed_commit  # type: ignore[method-assign]
    embeddings = Embeddings()
    embeddings.embed(["warm up"])
    embed = embeddings.embed

    def timed_embed(texts: list[str]) -> Any:
        started = time.perf_counter()
        try:
            return embed(texts)
        finally:
            phases.ms["embed_calls"] += (time.perf_counter() - started) * 1000
            phases.trips["embed_texts"] += len(texts)

    embeddings.embed = timed_embed  # type: ignore[method-assign]
    system = KgappSystem()
    rows: list[dict[str, float]] = []
    with (
        tempfile.TemporaryDirectory(prefix="compare-phases-") as workdir,
        BenchModel(system.answerer(corpus), 0.0) as model,
    ):
        await system.open(Path(workdir), model, embeddings)
        try:
            for episode in episodes:
                phases.ms.clear(), phases.trips.clear(), phases.trip_ms.clear()
                started = time.perf_counter()
                await system.ingest(episode)
                finished = time.perf_counter()
                model_ms = busy_seconds(model.calls_between(started, finished)) * 1000
                row = {f"{k} ms": v for k, v in phases.ms.items()}
                row |= {f"{k} trips": float(v) for k, v in phases.trips.items()}
                row |= {f"{k} trip ms": v for k, v in phases.trip_ms.items()}
                row["model ms"] = model_ms
                row["own ms"] = (finished - started) * 1000 - model_ms
                rows.append(row)
        finally:
            await system.close()
    _print(rows[WARM_UP:] or rows)


def _print(rows: list[dict[str, float]]) -> None:
    sums: defaultdict[str, float] = defaultdict(float)
    for row in rows:
        for key, value in row.items():
            sums[key] += value
    owns = [row["own ms"] for row in rows]
    print(f"{len(rows)} episodes; own ms median {statistics.median(owns):.1f}")
    for key in sorted(sums, key=lambda k: -sums[k]):
        print(f"  {key:32s} {sums[key] / len(rows):8.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--episodes", type=int, default=120)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--locomo", action="store_true", help="LoCoMo 26 instead")
    args = parser.parse_args()
    quiet()
    if args.locomo:
        from bench.compare import locomo

        path = ROOT.parent / "shared/data/conversations/locomo/26.json"
        if not path.is_file():
            sys.exit(f"phases: {path} is absent (../shared/data): LoCoMo cannot be profiled")
        corpus, _ = locomo.load(path)
    else:
        corpus = gold.generate(300, args.seed)
    asyncio.run(profile(corpus.episodes[: args.episodes], corpus))


if __name__ == "__main__":
    main()
