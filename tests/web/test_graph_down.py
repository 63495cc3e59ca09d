"""With SurrealDB unreachable, every door answers 503 with a readable message."""

from __future__ import annotations

import socket

import pytest
from django.test import Client

from tenants.models import Role

pytestmark = pytest.mark.django_db(transaction=True)


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture
def tenant_and_user(make_tenant, member):
    tenant = make_tenant()
    return tenant, member(tenant, Role.EDITOR)


def test_api_and_pages_answer_503(tenant_and_user, token_client, settings) -> None:
    tenant, user = tenant_and_user
    settings.SURREAL_URL = f"ws://127.0.0.1:{closed_port()}"
    settings.SURREAL_CONNECT_ATTEMPTS = 1
    client = token_client(user)
    for response in (
        client.get(f"/api/v1/t/{tenant.slug}/"),
        client.post(f"/api/v1/t/{tenant.slug}/jobs/health-check"),
        client.get(f"/api/v1/t/{tenant.slug}/jobs/job:abc"),
    ):
        assert response.status_code == 503
        assert response["Retry-After"] == "5"
        body = response.json()
        assert body == {
            "detail": "The knowledge graph store is unavailable right now; retry in a moment."
        }
    health = Client().get("/api/v1/health")
    assert health.status_code == 503 and health.json()["graph"] == "unavailable"

    browser = Client()
    browser.force_login(user)
    page = browser.get(f"/t/{tenant.slug}/")
    assert page.status_code == 503
    assert b"unavailable" in page.content and b"Traceback" not in page.content


def test_broker_down_answers_503_and_fails_the_job(tenant_and_user, token_client) -> None:
    from kgapp.celery import app

    tenant, user = tenant_and_user
    saved = app.conf.broker_url, app.conf.broker_transport_options, app.conf.task_publish_retry
    app.conf.broker_url = f"redis://127.0.0.1:{closed_port()}/0"
    app.conf.broker_transport_options = {}
    app.conf.task_publish_retry = False
    app._pool = None
    app.amqp._producer_pool = None
    try:
        client = token_client(user)
        response = client.post(f"/api/v1/t/{tenant.slug}/jobs/health-check")
    finally:
        app.conf.broker_url, app.conf.broker_transport_options, app.conf.task_publish_retry = saved
        app._pool = None
        app.amqp._producer_pool = None
    assert response.status_code == 503
    assert response.json() == {"detail": "the task queue is unavailable; try again shortly"}
    jobs = client.get(f"/api/v1/t/{tenant.slug}/jobs").json()
    assert [(j["status"], j["error"]) for j in jobs] == [("failed", "the task queue is down")]
