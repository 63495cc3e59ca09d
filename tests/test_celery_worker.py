"""A real Celery worker process, on the real Redis and on the server-less filesystem
broker, runs a task that writes to the tenant's SurrealDB namespace."""

from __future__ import annotations

import os
import secrets
import time
from pathlib import Path

import pytest
from django.conf import settings

from harness.workers import REDIS_TEST_URL, start_worker
from kgapp.celery import app as celery_app
from kgapp.graph import jobs
from kgapp.graph.records import parse_record_id, to_json
from kgapp.settings.base import celery_broker
from kgapp.tasks import health_check
from tenants.wiring import tenant_graph

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]


def wait_for_status(tenant, job_id: str, wanted: str, timeout: float = 60) -> dict:
    job = parse_record_id(job_id, "job")
    deadline = time.monotonic() + timeout
    row: dict = {}
    while time.monotonic() < deadline:
        row = to_json(tenant_graph(tenant).run(jobs.job_get, job))
        if row["status"] in (wanted, "failed"):
            return row
        time.sleep(0.2)
    return row


@pytest.mark.parametrize("broker", ["redis", "filesystem"])
def test_worker_runs_a_task_that_writes_to_surrealdb(
    broker: str, make_tenant, tmp_path: Path
) -> None:
    tenant = make_tenant()
    job = to_json(tenant_graph(tenant).run(jobs.job_create, kind="health_check"))
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "kgapp.settings.test",
        "DATABASE_URL": f"sqlite:///{settings.DATABASES['default']['NAME']}",
        "SURREAL_URL": settings.SURREAL_URL,
        "KG_VAR_DIR": str(tmp_path),
    }
    if broker == "redis":
        env["REDIS_URL"] = REDIS_TEST_URL
        url, options = REDIS_TEST_URL, {}
    else:
        env.pop("REDIS_URL", None)
        url, options = celery_broker("", tmp_path / "celery")
        for key in ("data_folder_in", "processed_folder", "control_folder"):
            Path(str(options[key])).mkdir(parents=True, exist_ok=True)
    queue = f"test-{broker}-{secrets.token_hex(4)}"
    log = tmp_path / "worker.log"
    worker = start_worker(env, queue, log)
    try:
        with celery_app.connection_for_write(url, transport_options=options) as connection:
            health_check.apply_async((tenant.slug, job["id"]), connection=connection, queue=queue)
        row = wait_for_status(tenant, job["id"], "completed")
    finally:
        worker.terminate()
        worker.wait(30)
    assert row["status"] == "completed", log.read_text()[-3000:]
    assert row["counts"] == {"pings": 1}
    assert 0 < row["timings"]["ping_ms"] < 30_000  # a real round trip, within the query timeout
    assert row["started_at"] <= row["finished_at"]


def test_a_redelivered_finished_job_is_left_alone(make_tenant) -> None:
    tenant = make_tenant()
    graph = tenant_graph(tenant)
    job = to_json(graph.run(jobs.job_create, kind="health_check"))
    first = health_check.apply(args=(tenant.slug, job["id"])).get()
    second = health_check.apply(args=(tenant.slug, job["id"])).get()
    assert first["status"] == second["status"] == "completed"
    assert first["finished_at"] == second["finished_at"]
    assert second["attempts"] == 1
