"""Celery tasks. Each is an adapter: load the tenant from the job it is given, call core.

Tasks are idempotent (a redelivered job that already finished is left as it is), so
`acks_late` with `reject_on_worker_lost` can safely run them again.
"""

from __future__ import annotations

from typing import Any

from celery import shared_task
from django.conf import settings

from kgapp.graph import jobs
from kgapp.graph.errors import GraphUnavailable
from kgapp.graph.ingest.service import ingest_run
from kgapp.graph.records import parse_record_id, to_json
from kgapp.graph.search import service as search_service
from kgapp.graph.store import TenantStore
from tenants.graph import embedder, llm_client, tenant_graph
from tenants.models import Tenant


@shared_task(name="kgapp.ping")
def ping() -> str:
    return "pong"


@shared_task(
    name="kgapp.health_check",
    autoretry_for=(GraphUnavailable,),
    retry_backoff=True,
    retry_backoff_max=60,
    max_retries=5,
)
def health_check(tenant_slug: str, job_id: str) -> dict[str, Any]:
    tenant = Tenant.objects.get(slug=tenant_slug)
    job = parse_record_id(job_id, "job")
    return to_json(tenant_graph(tenant).run(jobs.health_check, job))


@shared_task(
    name="kgapp.ingest",
    autoretry_for=(GraphUnavailable,),
    retry_backoff=True,
    retry_backoff_max=120,
    max_retries=8,
)
def ingest(tenant_slug: str, job_id: str) -> dict[str, Any]:
    """Ingest the episodes or the document of job `job_id` in tenant `tenant_slug`."""
    tenant = Tenant.objects.get(slug=tenant_slug)
    job = parse_record_id(job_id, "job")
    return to_json(tenant_graph(tenant).run(_ingest, job))


async def _ingest(store: TenantStore, job: Any) -> dict[str, Any]:
    return await ingest_run(store, job, embedder=embedder(), llm=llm_client(store))


@shared_task(name="kgapp.decay_retrieval_counts")
def decay_retrieval_counts() -> int:
    """Periodic (beat): decay the retrieval counts of every tenant's facts."""
    tenants = list(Tenant.objects.all())
    for tenant in tenants:
        tenant_graph(tenant).run(
            search_service.decay_retrieval_counts, lambda_=settings.RETRIEVAL_DECAY_LAMBDA
        )
    return len(tenants)
