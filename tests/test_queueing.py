"""Queueing a job: the record made, its task sent the job id's text (the message is
JSON), and a broker that refuses the message fails the job."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from kombu.exceptions import OperationalError

from kgapp import tasks
from kgapp.graph import jobs
from tenants.models import Tenant
from tenants.wiring import tenant_graph

pytestmark = pytest.mark.django_db


def test_a_queued_job_sends_its_task_the_id_and_answers_as_json(
    make_tenant: Callable[..., Tenant], monkeypatch: pytest.MonkeyPatch
) -> None:
    tenant = make_tenant()
    sent: list[tuple[Any, ...]] = []
    monkeypatch.setattr(tasks.health_check, "delay", lambda *args: sent.append(args))
    job = tasks.queue_health_check(tenant, created_by="alice")
    assert sent == [(tenant.slug, job["id"])]
    assert job["id"].startswith("job:") and job["kind"] == "health_check"
    assert job["status"] == "queued" and job["created_by"] == "alice"


def test_a_refused_message_fails_its_job(
    make_tenant: Callable[..., Tenant], monkeypatch: pytest.MonkeyPatch
) -> None:
    tenant = make_tenant()
    graph = tenant_graph(tenant)

    def refuse(*args: Any) -> None:
        raise OperationalError("broker down")

    monkeypatch.setattr(tasks.ingest, "delay", refuse)
    job = graph.run(jobs.job_create, kind="ingest_episode")
    with pytest.raises(tasks.QueueUnavailable):
        tasks.queue_ingest(tenant, job)
    failed = graph.run(jobs.job_get, job["id"])
    assert failed["status"] == "failed" and failed.get("error") == "the task queue is down"
