"""Creating a job record and queueing its task, as one step the edges call."""

from __future__ import annotations

import logging
from datetime import datetime
from typing import Any

from kombu.exceptions import OperationalError

from kgapp import tasks
from kgapp.graph import jobs
from kgapp.graph.records import parse_record_id, to_json
from tenants.graph import tenant_graph
from tenants.models import Tenant

logger = logging.getLogger(__name__)


class QueueUnavailable(Exception):
    """The task broker could not take the message; the job is marked failed."""


def health_check(tenant: Tenant, *, created_by: str) -> dict[str, Any]:
    job = to_json(
        tenant_graph(tenant).run(jobs.job_create, kind="health_check", created_by=created_by)
    )
    _send(tenant, job, tasks.health_check)
    return job


def rebuild_communities(
    tenant: Tenant, *, created_by: str, as_of: datetime | None = None
) -> dict[str, Any]:
    """Queue community detection (for the current graph, or as of a past moment)."""
    job = to_json(
        tenant_graph(tenant).run(
            jobs.job_create,
            kind="communities",
            created_by=created_by,
            params={"as_of": as_of} if as_of else {},
        )
    )
    _send(tenant, job, tasks.rebuild_communities)
    return job


def ingest(tenant: Tenant, job: dict[str, Any]) -> None:
    """Queue the ingest task of a job record already created."""
    _send(tenant, job, tasks.ingest)


# The task that runs each kind of job.
_TASKS = {
    "health_check": tasks.health_check,
    "communities": tasks.rebuild_communities,
    "ingest_episode": tasks.ingest,
    "ingest_document": tasks.ingest,
}


def requeue_stale(tenant: Tenant, *, stale_after: float) -> list[str]:
    """Send again the tasks of the tenant's running jobs whose worker stopped beating
    (see kgapp.graph.jobs); the ids of the jobs requeued."""
    requeued = tenant_graph(tenant).run(
        jobs.requeue_stale, stale_after=stale_after, kinds=tuple(_TASKS)
    )
    ids = []
    for job in map(to_json, requeued):
        logger.warning("job %s of %s lost its worker; queued again", job["id"], tenant.slug)
        _send(tenant, job, _TASKS[job["kind"]])
        ids.append(job["id"])
    return ids


def _send(tenant: Tenant, job: dict[str, Any], task: Any) -> None:
    try:
        task.delay(tenant.slug, job["id"])
    except OperationalError as error:
        logger.warning("broker refused job %s: %s", job["id"], error)
        tenant_graph(tenant).run(
            jobs.job_fail, parse_record_id(job["id"], "job"), error="the task queue is down"
        )
        raise QueueUnavailable("the task queue is unavailable; try again shortly") from error
