"""Creating a job record and queueing its task, as one step the edges call."""

from __future__ import annotations

import logging
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
    graph = tenant_graph(tenant)
    job = to_json(graph.run(jobs.job_create, kind="health_check", created_by=created_by))
    try:
        tasks.health_check.delay(tenant.slug, job["id"])
    except OperationalError as error:
        logger.warning("broker refused job %s: %s", job["id"], error)
        graph.run(jobs.job_fail, parse_record_id(job["id"], "job"), error="the task queue is down")
        raise QueueUnavailable("the task queue is unavailable; try again shortly") from error
    return job
