"""The demo dataset (kgapp/demo) loaded into a fresh tenant, measured against its answer
key (kgapp/demo/answer_key.toml).

How: the local SurrealDB server (mem://), Django with the test settings and a scratch
SQLite database, a tenant made by `tenant_create`, `demo_load` submitting every file as
an upload does and queueing the chain (ingests in order, communities, duplicate
candidates), Celery running it eagerly. No model is configured (the OPENAI_* variables
are ignored here): the offline extractor runs. Prints the load time; episodes, entities
and facts (current of total); expected entities found and junk; fact recall and dates
right; look-alikes kept apart; aliases merged; supersessions; communities; duplicate
candidates. `--show` lists the current entities and every fact.

    .venv/bin/python bench/demo.py [--show]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from bench.scratch import django_setup  # noqa: E402
from kgapp import surreal_server  # noqa: E402


def share(pair: tuple[int, int]) -> str:
    return f"{pair[0]}/{pair[1]}"


def main(show: bool) -> None:
    with tempfile.TemporaryDirectory(prefix="kg-bench-demo-") as scratch:
        var = Path(scratch)
        server = surreal_server.start(storage="mem://", log=var / "surreal.log")
        try:
            django_setup(var, server)
            from tenants.wiring import reset_graph_runtime

            try:
                measure(show)
            finally:
                reset_graph_runtime()  # close the connections before the server goes
        finally:
            server.stop()


def measure(show: bool) -> None:
    from kgapp.demo.dataset import DEMO_FILES
    from kgapp.demo.load import demo_load
    from kgapp.demo.score import DemoGraph, demo_score
    from tenants import services
    from tenants.wiring import tenant_graph

    tenant = services.tenant_create(slug="demo-bench", name="Demo bench")
    started = time.perf_counter()
    queued = demo_load(tenant)
    loaded = time.perf_counter() - started
    graph = tenant_graph(tenant).run(DemoGraph.read)
    score = demo_score(graph)
    current = [f for f in graph.facts if graph.is_current(f)]
    print(
        f"demo data: {len(DEMO_FILES)} files, {len(queued)} ingest jobs, loaded in "
        f"{loaded:.1f} s (eager: ingests, communities, duplicate candidates)"
    )
    print(
        f"  episodes {graph.episodes}; entities {len(graph.entities)} current of "
        f"{len(graph.entities) + graph.merged}; facts {len(current)} current of "
        f"{len(graph.facts)}"
    )
    print(
        f"  expected entities found {share(score.expected_entities)}"
        f" (missing: {', '.join(score.missing_entities) or 'none'});"
        f" junk {len(score.junk)} ({', '.join(score.junk) or 'none'})"
    )
    print(
        f"  fact recall {share(score.facts_found)}, dates right {share(score.dates_right)}"
        f" (missing: {'; '.join(score.missing_facts) or 'none'})"
    )
    print(
        f"  look-alikes kept apart {share(score.apart)}; aliases merged "
        f"{share(score.aliases_merged)}; supersessions {share(score.supersessions)}"
    )
    print(f"  communities {graph.communities}; duplicate candidates {graph.candidates}")
    if show:
        for entity in sorted(graph.entities.values(), key=lambda e: e["name"]):
            print(f"    entity {entity['name']!r} ({entity['entity_type']})")
        for fact in sorted(graph.facts, key=lambda f: f["valid_at"]):
            state = "current" if graph.is_current(fact) else "ended"
            if fact.get("invalid_at"):
                state += f", until {fact['invalid_at']:%Y-%m-%d}"
            print(
                f"    {fact['valid_at']:%Y-%m-%d} {graph.name_of(fact['in'])} "
                f"{fact['relation']} {graph.name_of(fact['out'])} [{state}]"
            )


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--show", action="store_true", help="list the entities and facts")
    main(parser.parse_args().show)
