"""Job liveness against the real SurrealDB server: the heartbeat a running job keeps, and
which running jobs count as stale (their worker died) and are put back in the queue."""

from __future__ import annotations

import asyncio
import time

import pytest

from kgapp.graph import jobs, queries
from kgapp.graph.errors import UniqueViolation
from kgapp.graph.records import to_json
from tenants.wiring import tenant_graph

pytestmark = pytest.mark.django_db

AGE = "UPDATE $job SET heartbeat_at = time::now() - 10m, updated_at = time::now() - 10m"


def test_a_heartbeat_is_kept_while_the_work_runs_and_stops_after(make_tenant) -> None:
    graph = tenant_graph(make_tenant())
    job = graph.run(jobs.job_create, kind="ingest_episode")["id"]
    started = graph.run(jobs.job_start, job)["heartbeat_at"]

    async def work(store, job_id) -> list:
        seen = []
        for _ in range(3):
            await asyncio.sleep(0.25)
            seen.append((await jobs.job_get(store, job_id))["heartbeat_at"])
        return seen

    seen = graph.run(jobs.with_heartbeat, job, work, every=0.1)
    assert started < seen[0] < seen[1] < seen[2]
    # Once the work is done the beating stops (a beat in flight may still land).
    time.sleep(0.2)
    after = graph.run(jobs.job_get, job)["heartbeat_at"]
    time.sleep(0.4)
    assert graph.run(jobs.job_get, job)["heartbeat_at"] == after


def test_the_heartbeat_leaves_a_finished_job_alone(make_tenant) -> None:
    graph = tenant_graph(make_tenant())
    job = graph.run(jobs.job_create, kind="health_check")["id"]
    done = graph.run(jobs.health_check, job)
    assert done["status"] == "completed"

    async def wait(store, job_id) -> None:
        await asyncio.sleep(0.3)

    graph.run(jobs.with_heartbeat, job, wait, every=0.05)
    assert graph.run(jobs.job_get, job)["heartbeat_at"] == done["heartbeat_at"]


def test_only_running_jobs_without_a_recent_heartbeat_are_requeued(make_tenant) -> None:
    graph = tenant_graph(make_tenant())
    kinds = ("ingest_document", "ingest_episode")

    def job(kind: str = "ingest_document", *, start: bool = True, age: bool = True):
        record = graph.run(jobs.job_create, kind=kind)["id"]
        if start:
            graph.run(jobs.job_start, record)
        if age:
            graph.query(AGE, {"job": record})
        return record

    stale = job()
    fresh = job(age=False)
    queued = job(start=False)
    other_kind = job("bench")
    finished = job(age=False)
    graph.run(jobs.job_finish, finished, counts={}, timings={})
    graph.query(AGE, {"job": finished})
    # A job that ran before heartbeats existed is judged by its last update.
    legacy = job("ingest_episode")
    graph.query(
        "UPDATE $job SET heartbeat_at = NONE, updated_at = time::now() - 10m", {"job": legacy}
    )

    requeued = graph.run(jobs.requeue_stale, stale_after=60, kinds=kinds)
    assert sorted(str(row["id"]) for row in requeued) == sorted([str(stale), str(legacy)])
    statuses = {
        name: graph.run(jobs.job_get, record)["status"]
        for name, record in [
            ("stale", stale),
            ("fresh", fresh),
            ("queued", queued),
            ("other_kind", other_kind),
            ("finished", finished),
            ("legacy", legacy),
        ]
    }
    assert statuses == {
        "stale": "queued",
        "fresh": "running",
        "queued": "queued",
        "other_kind": "running",
        "finished": "completed",
        "legacy": "queued",
    }
    # Requeued once: a second check (another worker's, say) finds nothing to send.
    assert graph.run(jobs.requeue_stale, stale_after=60, kinds=kinds) == []
    # The threshold is the caller's: at 15 minutes nothing above is stale.
    graph.run(jobs.job_start, stale)
    graph.query(AGE, {"job": stale})
    assert graph.run(jobs.requeue_stale, stale_after=900, kinds=kinds) == []
    assert to_json(graph.run(jobs.job_get, stale))["attempts"] == 2


def test_a_jobs_own_writes_are_not_lost_to_its_heartbeat(make_tenant) -> None:
    """Progress written while the heartbeat beats as fast as it can, and another writer
    touches the record too: SurrealDB fails one of two commits that write the job at once
    ("can be retried"); each such write is run again, none fails the job (issue 32: the
    progress of an ingest lost that race, ending its task with the job left running)."""
    graph = tenant_graph(make_tenant())
    job = graph.run(jobs.job_create, kind="ingest_document", total=150)["id"]

    async def work(store, job_id) -> dict:
        async def progress(done: int) -> None:
            params = {
                "job": job_id,
                "progress": done,
                "total": 150,
                "counts": {"n": done},
                "timings": {},
                "usage": [],
                "phase": "extracting",
            }
            await jobs.job_write(store, queries.JOB_PROGRESS, params)

        for done in range(1, 151):
            await asyncio.gather(
                progress(done), jobs.job_write(store, queries.JOB_HEARTBEAT, {"job": job_id})
            )
        await jobs.job_finish(store, job_id, counts={"n": 150}, timings={})
        return await jobs.job_get(store, job_id)

    graph.run(jobs.job_start, job)
    row = to_json(graph.run(jobs.with_heartbeat, job, work, every=0.001))
    assert row["status"] == "completed" and row["progress"] == 150
    assert row["counts"] == {"n": 150}


class Conflicting:
    """A store whose first `times` statements lose a write conflict, or fail with
    `message`."""

    def __init__(self, times: int, message: str) -> None:
        self.times, self.message, self.calls = times, message, 0

    async def query_one(self, sql: str, params: dict) -> str:
        self.calls += 1
        if self.calls <= self.times:
            raise UniqueViolation(self.message)
        return "written"


RETRYABLE = (
    "Transaction conflict: Write conflict, retry the transaction. This transaction can be retried"
)


async def test_a_job_write_is_retried_only_on_a_retryable_conflict_and_not_for_ever() -> None:
    store = Conflicting(2, RETRYABLE)
    assert await jobs.job_write(store, "UPDATE", {}) == "written"
    assert store.calls == 3
    never = Conflicting(100, RETRYABLE)
    with pytest.raises(UniqueViolation):
        await jobs.job_write(never, "UPDATE", {})
    assert never.calls == jobs.WRITE_ATTEMPTS
    taken = Conflicting(1, "Database record `job:x` already exists")
    with pytest.raises(UniqueViolation):
        await jobs.job_write(taken, "UPDATE", {})
    assert taken.calls == 1
