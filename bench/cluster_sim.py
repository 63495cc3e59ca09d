"""Cluster simulation, long run (`make cluster-sim`): two machines' worth of processes
(tests/cluster.py: two web servers, two Celery workers, two search indexers with an index
directory each, one beat) against one SurrealDB server and Redis, ingesting 40 uploads
(120 episodes) with the scripted model while a worker, a web server and an indexer are
each SIGKILLed twice, in turn on either machine, and started again a second later, as
`make run`'s supervisor does.

Prints the figures: ingest jobs per worker; per explorer socket the changes expected
(the change feed's), got, missing and twice; how soon after its commit each fact was
found by every live web server (p50, p90, max); and after each kill, how long until the
cluster had recovered: a dead worker's job started again elsewhere, a dead web server's
sockets replayed on the other, a dead indexer's restart through its first pass. Then
checks that nothing was lost or written twice and that both machines' indexes hold
exactly the graph.

A pytest module run with the suite's fixtures (bench/conftest.py: real SurrealDB server,
the scripted model): `.venv/bin/python -m pytest bench/cluster_sim.py -s -q`. The suite
runs the one-kill-of-each version (tests/test_cluster.py).
"""

from __future__ import annotations

import asyncio
import os
import statistics
import time
from dataclasses import dataclass, field
from datetime import datetime
from functools import partial
from pathlib import Path
from typing import Any

import httpx
import pytest

from harness.cluster import Cluster, Proc, ingests_done
from harness.cluster_clients import (
    Follower,
    SearchProbe,
    cluster_user,
    commit_times,
    index_matches_graph,
    percentile,
    send,
    settled_feed,
    until,
    uploads,
    wait_jobs,
    warm,
    watching,
)
from harness.graph import graph_counts
from harness.recorded import extraction
from kgapp.graph import jobs, stats
from kgapp.graph.index import directories
from tenants.wiring import tenant_graph

pytestmark = pytest.mark.django_db(transaction=True)

DOCUMENTS = int(os.environ.get("KG_CLUSTER_DOCUMENTS", "40"))
MESSAGES = 3  # per upload: episodes, facts
EXTRACTION_SECONDS = 0.4  # the scripted model's think time per episode
KILLS = [
    ("worker", "a"),
    ("web", "b"),
    ("indexer", "a"),
    ("worker", "b"),
    ("web", "a"),
    ("indexer", "b"),
]
RESTART_AFTER = 1.0  # s: bin/supervise.sh's first restart delay
RECOVERY_TIMEOUT = 120.0
REDIS_URL = "redis://127.0.0.1:6379/13"  # not the suite's (14): `make test` may run meanwhile


@dataclass
class Kill:
    kind: str
    machine: str
    at: float = 0.0  # seconds into the ingest
    episodes: int = 0  # written when it came
    recovered: float | None = None  # seconds after the kill
    back: float | None = None  # seconds after the kill its restart was up
    how: str = ""


@dataclass
class Sim:
    followers: list[Follower]
    probe: SearchProbe
    kills: list[Kill] = field(default_factory=list)
    jobs: dict[str, dict[str, Any]] = field(default_factory=dict)
    feed: list = field(default_factory=list)
    started: float = 0.0
    seconds: float = 0.0


async def episodes_written(graph) -> int:
    return (await graph.arun(stats.graph_counts)).get("episodes", 0)


async def running_jobs(graph) -> dict[str, tuple[Any, int]]:
    rows = await graph.arun(jobs.job_list, status="running", limit=1000, offset=0)
    return {str(row["id"]): (row["id"], int(row["attempts"])) for row in rows}


async def worker_recovery(graph, running: dict[str, tuple[Any, int]], killed: float) -> str:
    """Until the job the dead worker held (one of those running then) starts again."""
    ids = [record for record, _ in running.values()]
    queued = None
    while ids:
        rows = [await graph.arun(jobs.job_get, record) for record in ids]
        for row in rows:
            if row["status"] == "queued" and queued is None:
                queued = time.time() - killed
            if int(row["attempts"]) > running[str(row["id"])][1]:
                again = f"{queued:.1f} s" if queued is not None else "-"
                return f"its job queued again after {again}, started again"
        if all(row["status"] in ("completed", "failed") for row in rows):
            break
        await asyncio.sleep(0.1)
    return "it held no job"


async def web_recovery(followers: list[Follower], machine: str, killed: float) -> str:
    """Until every socket open on the dead web server replayed on another."""
    moved = [f for f in followers if f.servers and f.servers[-1] == machine]
    while not all(any(when > killed for when, _ in f.replays) for f in moved):
        await asyncio.sleep(0.05)
    return f"its {len(moved)} sockets replayed on the other"


async def indexer_recovery(proc: Proc, directory: Path, namespace: str, killed: float) -> str:
    """Until the indexer, started again, has been through a pass (the web server and the
    worker of its machine passed inline meanwhile)."""
    while not proc.ready:
        await asyncio.sleep(0.05)
    up = proc.ready_at
    while True:
        manifest = directories.read_manifest(directory, namespace)
        applied = manifest.applied if manifest else ""
        if applied and datetime.fromisoformat(applied).timestamp() > up:
            return f"up again after {up - killed:.1f} s, then through its first pass"
        await asyncio.sleep(0.05)


def proc_of(cluster: Cluster, kind: str, machine: str) -> Proc:
    found: Proc = getattr(cluster.machines[machine], kind)
    return found


async def kill_one(cluster: Cluster, sim: Sim, kill: Kill, graph, namespace: str) -> None:
    """SIGKILL the process, start it again RESTART_AFTER later (as the supervisor does),
    and note how long until the cluster had recovered from its loss."""
    proc = proc_of(cluster, kill.kind, kill.machine)
    running = await running_jobs(graph)
    killed = proc.kill()
    if kill.kind == "worker":
        watching = worker_recovery(graph, running, killed)
    elif kill.kind == "web":
        watching = web_recovery(sim.followers, kill.machine, killed)
    else:
        directory = cluster.machines[kill.machine].search_dir / namespace
        watching = indexer_recovery(proc, directory, namespace, killed)

    async def restart() -> None:
        await asyncio.sleep(RESTART_AFTER)
        await asyncio.to_thread(cluster.restart, proc)

    restarting = asyncio.create_task(restart())
    try:
        kill.how = await asyncio.wait_for(watching, RECOVERY_TIMEOUT)
        kill.recovered = time.time() - killed
    except TimeoutError:
        kill.how = f"not recovered in {RECOVERY_TIMEOUT:.0f} s"
    await restarting
    kill.back = proc.ready_at - killed


async def kills(
    cluster: Cluster, sim: Sim, graph, namespace: str, total: int, started: float
) -> None:
    """Each kill once its share of the episodes is written and both its process and its
    counterpart on the other machine are up (a dead one's restart overlaps the next
    kill of another kind)."""
    under_way = []
    for number, (kind, machine) in enumerate(KILLS):
        point = total * (number + 1) // (len(KILLS) + 1)
        other = next(m for m in cluster.machines if m != machine)
        while True:
            written = await episodes_written(graph)
            ready = all(proc_of(cluster, kind, m).is_up() for m in (machine, other))
            if written >= point and ready:
                break
            await asyncio.sleep(0.1)
        kill = Kill(kind, machine, time.time() - started, written)
        sim.kills.append(kill)
        under_way.append(asyncio.create_task(kill_one(cluster, sim, kill, graph, namespace)))
    await asyncio.gather(*under_way)


def finished(rows: dict[str, dict[str, Any]]) -> float:
    """When the last job ended (the server's clock)."""
    return max(datetime.fromisoformat(row["finished_at"]).timestamp() for row in rows.values())


async def simulate(cluster: Cluster, tenant, token: str, cookie: str, items) -> Sim:
    graph = tenant_graph(tenant)
    total = len(items) * MESSAGES
    async with watching(cluster, tenant.slug, token, cookie) as (followers, probe):
        sim = Sim(followers, probe)
        async with httpx.AsyncClient(
            headers={"Authorization": f"Bearer {token}"}, timeout=30
        ) as client:
            await warm(client, cluster, tenant.slug)
            started = sim.started = time.time()
            ids = await send(client, cluster, tenant.slug, items, probe)
        await kills(cluster, sim, graph, tenant.namespace, total, started)
        sim.jobs = await wait_jobs(graph, ids, 300)
        sim.seconds = finished(sim.jobs) - started
        await until(lambda: not probe.pending, 15)
        sim.feed = await settled_feed(graph, followers, 30)
    return sim


def report(sim: Sim, cluster: Cluster, items, counts: dict, indexes: dict) -> list[str]:
    per_worker = {m: ingests_done(cluster.machines[m].worker) for m in sorted(cluster.machines)}
    retried = sum(row["attempts"] > 1 for row in sim.jobs.values())
    lags = sorted(sim.probe.lags(commit_times(sim.feed)).values())
    lines = [
        f"cluster sim: {len(items)} uploads, {len(items) * MESSAGES} episodes; 2 web servers,"
        f" 2 workers, 2 indexers, 1 beat; {len(sim.kills)} SIGKILLs, each process started"
        f" again {RESTART_AFTER:.0f} s later; all jobs ended in {sim.seconds:.1f} s",
        f"  ingest tasks finished per worker: {per_worker}, {sum(per_worker.values())} for"
        f" {len(sim.jobs)} jobs; jobs started more than once (their worker killed): {retried}",
    ]
    for kill in sim.kills:
        after = "-" if kill.recovered is None else f"{kill.recovered:.1f} s"
        back = "-" if kill.back is None else f"{kill.back:.1f} s"
        lines.append(
            f"  kill {kill.kind}-{kill.machine} at {kill.at:5.1f} s (episode"
            f" {kill.episodes}): recovered after {after}: {kill.how}; the process"
            f" was up again after {back}"
        )
    for follower in sim.followers:
        c = follower.compare(sim.feed)
        lines.append(
            f"  socket {follower.name}: expected {c['expected']}, got {c['got']},"
            f" missing {c['missing']}, twice {c['twice']}, extra {c['extra']};"
            f" servers {'>'.join(follower.servers)}"
        )
    commits = commit_times(sim.feed)
    slowest = sorted(sim.probe.lags(commits).items(), key=lambda item: -item[1])[:3]
    if lags:
        within = sum(lag <= 1.0 for lag in lags)
        lines.append(
            f"  search agreement after commit ({len(lags)} facts): p50"
            f" {statistics.median(lags):.3f} s, p90 {percentile(lags, 0.9):.3f} s,"
            f" max {lags[-1]:.3f} s; {within} within 1 s"
        )
    for w, lag in slowest:
        commit = commits[sim.probe.records[w]]
        found = {m: round(t - commit, 2) for m, t in sim.probe.seen[w].items()}
        lines.append(f"    {lag:.2f} s: committed at {commit - sim.started:.1f} s, found {found}")
    if sim.probe.first_answers:
        lines.append(
            f"  a web server's first search after it started: "
            f"{', '.join(f'{s:.1f}' for s in sim.probe.first_answers)} s"
        )
    if sim.probe.pending:
        lines.append(
            f"  never found by every live web server: "
            f"{ {w: sim.probe.seen.get(w) for w in sim.probe.pending} }"
        )
    requests = [s for values in sim.probe.requests.values() for s in values]
    if requests:
        lines.append(
            f"  search requests: {len(requests)}, p50 {statistics.median(requests):.3f}"
            f" s, max {max(requests):.3f} s; failed {dict(sim.probe.errors)}"
        )
    exact = {
        m: "exact" if not any(v for table in d.values() for v in table.values()) else d
        for m, d in indexes.items()
    }
    lines.append(
        f"  graph: {counts['episodes']} episodes, {len(counts['entities'])} entities,"
        f" {len(counts['facts'])} facts; each machine's index against it: {exact}"
    )
    return lines


def test_a_cluster_loses_nothing_to_kills_of_each_kind_on_either_machine(
    make_tenant, scripted_llm, tmp_path: Path
) -> None:
    scripted_llm.on_chat(partial(extraction, pause=EXTRACTION_SECONDS))
    tenant = make_tenant()
    token, cookie = cluster_user(tenant)
    items = uploads([MESSAGES] * DOCUMENTS)
    with Cluster(tmp_path, scripted_llm.base_url, REDIS_URL) as cluster:
        sim = asyncio.run(simulate(cluster, tenant, token, cookie, items))
        graph = tenant_graph(tenant)
        counts = graph_counts(graph)
        indexes = {
            m: index_matches_graph(graph, cluster.machines[m].search_dir, tenant.namespace)
            for m in sorted(cluster.machines)
        }
        print("\n" + "\n".join(report(sim, cluster, items, counts, indexes)))
        logs = cluster.tails()
    people = [p for item in items for p in item.people()]
    places = [p for item in items for p in item.places()]
    assert all(row["status"] == "completed" for row in sim.jobs.values()), logs
    assert all(kill.recovered is not None for kill in sim.kills), sim.kills
    assert counts["episodes"] == len(people)
    assert counts["entities"] == sorted(
        [(p, "Person") for p in people] + [(p, "Organization") for p in places]
    )
    assert counts["facts"] == sorted(zip(people, places, strict=True))
    for follower in sim.followers:
        c = follower.compare(sim.feed)
        assert c["missing"] == c["extra"] == c["twice"] == 0 and c["got"] == c["expected"], c
    assert not sim.probe.pending, (sim.probe.pending, sim.probe.seen, logs)
    assert not sim.probe.refusals(), (sim.probe.errors, logs)
    clean = {"missing": [], "extra": [], "without_text": [], "text_twice": []}
    assert indexes == {m: {"facts": clean, "entities": clean} for m in "ab"}, indexes
