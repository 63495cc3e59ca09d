"""Communities follow ingestion, once per burst (kgapp/graph/communities_follow.py): only
the latest request of a tenant is due, once none of its ingest jobs is queued or running
and no detection runs; on both boards the settings offer (files, the real Redis)."""

from __future__ import annotations

import secrets
from pathlib import Path

import pytest
from django.utils.module_loading import import_string
from surrealdb.data.types.record_id import RecordID

from kgapp.graph import communities_follow, jobs
from kgapp.graph.store import TenantStore
from kgapp.settings.base import coordination_cache

REDIS_TEST_URL = "redis://127.0.0.1:6379/15"


@pytest.fixture(params=["files", "redis"])
def board(request: pytest.FixtureRequest, tmp_path: Path) -> communities_follow.Board:
    """The coordination cache as settings build it, without Redis (files) and with it."""
    url = REDIS_TEST_URL if request.param == "redis" else ""
    config = coordination_cache(url, tmp_path)
    # A prefix of its own: tests running at once share Redis database 15.
    params = {**config, "KEY_PREFIX": f"test-{secrets.token_hex(4)}"}
    return import_string(str(config["BACKEND"]))(config["LOCATION"], params)


async def ended_ingest_job(store: TenantStore) -> RecordID:
    job = (await jobs.job_create(store, kind="ingest_episode"))["id"]
    await jobs.job_start(store, job)
    await jobs.job_finish(store, job, counts={}, timings={})
    return job


async def test_of_a_burst_only_the_last_request_is_due(migrated_store, board) -> None:
    store = await migrated_store()
    first, second = await ended_ingest_job(store), await ended_ingest_job(store)
    asked_first = communities_follow.follow_ask(board, store.namespace)
    asked_second = communities_follow.follow_ask(board, store.namespace)
    assert await communities_follow.follow_check(store, board, first, asked_first) == "superseded"
    assert await communities_follow.follow_check(store, board, second, asked_second) == "due"


async def test_a_request_waits_for_ingest_jobs_queued_or_running(migrated_store, board) -> None:
    store = await migrated_store()
    ended = await ended_ingest_job(store)
    later = (await jobs.job_create(store, kind="ingest_document"))["id"]
    token = communities_follow.follow_ask(board, store.namespace)
    assert (
        await communities_follow.follow_check(store, board, ended, token) == "ingesting"
    )  # queued
    await jobs.job_start(store, later)
    assert (
        await communities_follow.follow_check(store, board, ended, token) == "ingesting"
    )  # running
    # Jobs of other kinds, and a detection not started yet, hold nothing back.
    await jobs.job_create(store, kind="health_check")
    await jobs.job_create(store, kind="communities")
    await jobs.job_finish(store, later, counts={}, timings={})
    assert await communities_follow.follow_check(store, board, ended, token) == "due"
    # The job that ended last asks again; its request supersedes the earlier one.
    last = communities_follow.follow_ask(board, store.namespace)
    assert await communities_follow.follow_check(store, board, ended, token) == "superseded"
    assert await communities_follow.follow_check(store, board, later, last) == "due"


async def test_a_running_detection_makes_the_request_wait(migrated_store, board) -> None:
    store = await migrated_store()
    ended = await ended_ingest_job(store)
    detection = (await jobs.job_create(store, kind="communities"))["id"]
    await jobs.job_start(store, detection)
    token = communities_follow.follow_ask(board, store.namespace)
    assert await communities_follow.follow_check(store, board, ended, token) == "detecting"
    await jobs.job_finish(store, detection, counts={}, timings={})
    assert await communities_follow.follow_check(store, board, ended, token) == "due"


async def test_tenants_do_not_supersede_each_other_and_foreign_jobs_are_refused(
    migrated_store, board
) -> None:
    a, b = await migrated_store(), await migrated_store()
    job_a, job_b = await ended_ingest_job(a), await ended_ingest_job(b)
    token_a = communities_follow.follow_ask(board, a.namespace)
    token_b = communities_follow.follow_ask(board, b.namespace)
    assert await communities_follow.follow_check(a, board, job_a, token_a) == "due"
    assert await communities_follow.follow_check(b, board, job_b, token_b) == "due"
    with pytest.raises(jobs.JobNotFound):
        await communities_follow.follow_check(a, board, job_b, token_a)
    assert await communities_follow.follow_check(a, board, job_a, token_b) == "superseded"
