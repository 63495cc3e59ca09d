"""POST jobs/{id}/retry: a job whose worker died (running, no recent heartbeat) can be
retried and finishes; a live one answers 409; roles and tenants hold."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from kgapp.graph import jobs
from kgapp.graph.ingest.model import EpisodeInput
from kgapp.graph.ingest.service import episode_submit
from kgapp.graph.records import parse_record_id, record_key
from tenants.models import Role
from tenants.wiring import tenant_graph
from tests.llm_fixtures import works_at

pytestmark = pytest.mark.django_db(transaction=True)

AGE = "UPDATE $job SET heartbeat_at = time::now() - 10m"


def running_job(tenant) -> str:
    """An ingest job a worker started (its task's message is gone with that worker)."""
    graph = tenant_graph(tenant)
    episode = EpisodeInput(
        content="Alice works at Acme Corp.",
        source="text",
        reference_time=datetime(2024, 1, 15, tzinfo=UTC),
    )
    _, job = graph.run(episode_submit, episode, created_by="t")
    graph.run(jobs.job_start, job["id"])
    return record_key(job["id"])


extraction = works_at("Alice", "Acme Corp")


def test_a_stale_running_job_is_retried_and_a_live_one_is_not(
    make_tenant, member, token_client, eager, scripted_llm, settings
) -> None:
    scripted_llm.on_chat(extraction)
    settings.OPENAI_BASE_URL, settings.OPENAI_API_KEY = scripted_llm.base_url, "test"
    settings.EMBEDDER = "openai"
    tenant = make_tenant()
    client = token_client(member(tenant, Role.EDITOR))
    graph = tenant_graph(tenant)
    job_id = running_job(tenant)
    url = f"/api/v1/t/{tenant.slug}/jobs/{job_id}/retry"

    live = client.post(url)
    assert live.status_code == 409
    assert "no heartbeat for 60 s" in live.json()["detail"]
    assert graph.run(jobs.job_get, parse_record_id(job_id, "job"))["status"] == "running"

    graph.query(AGE, {"job": parse_record_id(job_id, "job")})
    retried = client.post(url)
    assert retried.status_code == 202, retried.content
    assert retried.json() == {"job_id": job_id, "status": "queued"}
    job = client.get(f"/api/v1/t/{tenant.slug}/jobs/{job_id}").json()
    assert job["status"] == "completed" and job["counts"]["episodes"] == 1
    assert job["counts"]["facts_created"] == 1
    assert graph.run(jobs.job_get, parse_record_id(job_id, "job"))["attempts"] == 2
    # Finished now: nothing to retry.
    assert client.post(url).status_code == 409


def test_retry_of_a_stale_job_keeps_to_roles_and_tenants(make_tenant, member, token_client) -> None:
    tenant, other = make_tenant(), make_tenant()
    job_id = running_job(tenant)
    tenant_graph(tenant).query(AGE, {"job": parse_record_id(job_id, "job")})
    viewer = token_client(member(tenant, Role.VIEWER))
    assert viewer.post(f"/api/v1/t/{tenant.slug}/jobs/{job_id}/retry").status_code == 403
    stranger = token_client(member(other, Role.EDITOR))
    # The same id through another tenant names nothing there.
    assert stranger.post(f"/api/v1/t/{other.slug}/jobs/{job_id}/retry").status_code == 409
    assert stranger.post(f"/api/v1/t/{tenant.slug}/jobs/{job_id}/retry").status_code == 404
    row = tenant_graph(tenant).run(jobs.job_get, parse_record_id(job_id, "job"))
    assert row["status"] == "running"
