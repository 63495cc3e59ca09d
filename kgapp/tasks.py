"""Celery tasks, and queueing them. Each task is an adapter: load the tenant from the job
it is given, call core. The `queue_*` functions create a job record and send its task,
as one step the web edges call.

Tasks are idempotent (a redelivered job that already finished is left as it is), so
`acks_late` with `reject_on_worker_lost` can safely run them again. A job's heartbeat is
kept fresh while its task runs; `requeue_stale_jobs` sends again the tasks of jobs whose
worker died with them (a whole-worker SIGKILL on the filesystem broker loses the message).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence
from datetime import datetime
from typing import Any, TypedDict

from celery import chain, shared_task
from django.conf import settings
from django.core.cache import caches
from django.core.files.uploadedfile import UploadedFile
from kombu.exceptions import OperationalError
from surrealdb.data.types.record_id import RecordID

from kgapp.graph import communities, communities_follow, jobs
from kgapp.graph.curation import duplicates
from kgapp.graph.errors import GraphError, GraphUnavailable
from kgapp.graph.ingest.model import EpisodeInput
from kgapp.graph.ingest.service import episode_submit, ingest_run, stragglers_index
from kgapp.graph.jobs import JobJson, JobRef, job_json
from kgapp.graph.records import Job, parse_record_id
from kgapp.graph.retention import retention_job
from kgapp.graph.search import retrieval_counts
from kgapp.graph.store import TenantStore
from tenants import transfer
from tenants.models import Tenant
from tenants.retention import retention_policy, tenants_with_retention
from tenants.wiring import embedder, llm_client, offline_extractor, pdf_limits, tenant_graph

logger = logging.getLogger(__name__)


class _Retrying(TypedDict):
    """The options of a task that retries (`shared_task`'s keywords)."""

    autoretry_for: tuple[type[Exception], ...]
    retry_backoff: bool
    retry_backoff_max: int
    max_retries: int


# Tasks that reach a tenant's graph retry while SurrealDB is unreachable.
def _retrying(backoff_max: int, retries: int) -> _Retrying:
    return {
        "autoretry_for": (GraphUnavailable,),
        "retry_backoff": True,
        "retry_backoff_max": backoff_max,
        "max_retries": retries,
    }


@shared_task(name="kgapp.ping")
def ping() -> str:
    return "pong"


@shared_task(name="kgapp.health_check", **_retrying(60, 5))
def health_check(tenant_slug: str, job_id: str) -> JobJson:
    tenant = Tenant.objects.get(slug=tenant_slug)
    return _run_job(tenant, job_id, jobs.health_check)


@shared_task(name="kgapp.ingest", **_retrying(120, 8))
def ingest(tenant_slug: str, job_id: str, follow: bool = True) -> JobJson:
    """Ingest the episodes or the document of job `job_id` in tenant `tenant_slug`; the
    communities then follow, unless not `follow` (a chain that detects at its end)."""
    tenant = Tenant.objects.get(slug=tenant_slug)
    result = _run_job(tenant, job_id, _ingest)
    _communities_if_due(tenant)
    if follow:
        _communities_follow(tenant, job_id)
    return result


def _run_job(
    tenant: Tenant, job_id: str, work: Callable[[TenantStore, RecordID], Awaitable[Job]]
) -> JobJson:
    """`work(store, job)` in the tenant's graph, the job's heartbeat kept fresh meanwhile;
    the job as it ended, as JSON (the task's result)."""
    job = parse_record_id(job_id, "job")
    every = settings.JOB_HEARTBEAT_INTERVAL
    return job_json(tenant_graph(tenant).run(jobs.with_heartbeat, job, work, every=every))


def _communities_if_due(tenant: Tenant) -> None:
    """After every COMMUNITY_EVERY_EPISODES new episodes, detect communities again."""
    every = settings.COMMUNITY_EVERY_EPISODES
    if every and tenant_graph(tenant).run(communities.rebuild_due, every):
        queue_rebuild_communities(tenant, created_by="ingestion")


# How many times a request waits for a running detection before it is dropped (the next
# ingest job, or beat, asks again).
FOLLOW_RETRIES = 120


def _communities_follow(tenant: Tenant, job_id: str) -> None:
    """Ask for community detection COMMUNITY_DEBOUNCE seconds after this job ended; of a
    burst of jobs, only the last one's request is due (`follow_ingestion`)."""
    delay = settings.COMMUNITY_DEBOUNCE
    # An eager task runs its countdown at once, so every job of a burst would detect:
    # eager mode (debugging) leaves communities to the other triggers.
    if delay < 0 or ingest.app.conf.task_always_eager:
        return
    token = communities_follow.follow_ask(caches["coordination"], tenant.namespace)
    try:
        follow_ingestion.apply_async((tenant.slug, job_id, token), countdown=delay)
    except OperationalError as error:  # the job is done; beat detects later
        logger.warning("communities of %s do not follow job %s: %s", tenant.slug, job_id, error)


@shared_task(name="kgapp.follow_ingestion", **_retrying(120, 8))
def follow_ingestion(tenant_slug: str, job_id: str, token: str = "") -> str:
    """Queue community detection after the tenant's ingest job `job_id` ended, unless a
    later request superseded `token` ("" is none) or ingestion goes on; what became of
    the request."""
    tenant = Tenant.objects.get(slug=tenant_slug)
    job = parse_record_id(job_id, "job")
    board = caches["coordination"]
    verdict = tenant_graph(tenant).run(communities_follow.follow_check, board, job, token)
    if verdict == "detecting":  # that detection may have read the graph before this job
        delay = max(settings.COMMUNITY_DEBOUNCE, 1.0)
        raise follow_ingestion.retry(countdown=delay, max_retries=FOLLOW_RETRIES)
    if verdict == "due":
        queue_rebuild_communities(tenant, created_by="ingestion")
    return str(verdict)


async def _ingest(store: TenantStore, job: RecordID) -> Job:
    return await ingest_run(
        store,
        job,
        embedder=embedder(),
        llm=llm_client(store),
        extractor=offline_extractor(),
        pdf=pdf_limits(),
    )


@shared_task(name="kgapp.rebuild_communities", **_retrying(120, 8))
def rebuild_communities(tenant_slug: str, job_id: str) -> JobJson:
    """Detect the tenant's communities (job `job_id`; its params may hold `as_of`)."""
    tenant = Tenant.objects.get(slug=tenant_slug)
    return _run_job(tenant, job_id, _rebuild)


async def _rebuild(store: TenantStore, job: RecordID) -> Job:
    row = await jobs.job_get(store, job)
    as_of = (row.get("params") or {}).get("as_of")
    config = communities.Detection(
        method="cpm" if settings.COMMUNITY_METHOD == "cpm" else "modularity",
        resolutions=settings.COMMUNITY_RESOLUTIONS,
    )
    return await communities.rebuild_job(store, job, llm_client(store), config, as_of=as_of)


@shared_task(name="kgapp.rebuild_all_communities")
def rebuild_all_communities() -> int:
    """Periodic (beat): queue a community rebuild for every tenant."""
    tenants = list(Tenant.objects.all())
    for tenant in tenants:
        queue_rebuild_communities(tenant, created_by="schedule")
    return len(tenants)


@shared_task(name="kgapp.decay_retrieval_counts")
def decay_retrieval_counts() -> int:
    """Periodic (beat): decay the retrieval counts of every tenant's facts."""
    tenants = list(Tenant.objects.all())
    for tenant in tenants:
        tenant_graph(tenant).run(
            retrieval_counts.decay_retrieval_counts, lambda_=settings.RETRIEVAL_DECAY_LAMBDA
        )
    return len(tenants)


@shared_task(name="kgapp.index_stragglers")
def index_stragglers() -> dict[str, int]:
    """Periodic (beat): in every tenant, embed the facts and passages that no ingest job
    did (a job's indexing phase embeds its own episodes'); vectors written, by tenant."""
    return {
        tenant.slug: tenant_graph(tenant).run(stragglers_index, embedder=embedder())
        for tenant in Tenant.objects.all()
    }


@shared_task(name="kgapp.generate_dedup_candidates")
def generate_dedup_candidates(tenant_slug: str | None = None) -> dict[str, int]:
    """Periodic (beat): queue possible duplicate entities of every tenant for review (or
    of tenant `tenant_slug` only)."""
    tenants = Tenant.objects.all()
    if tenant_slug is not None:
        tenants = tenants.filter(slug=tenant_slug)
    return {
        tenant.slug: tenant_graph(tenant).run(duplicates.generate_candidates) for tenant in tenants
    }


@shared_task(name="kgapp.apply_retention", **_retrying(120, 8))
def apply_retention(tenant_slug: str, job_id: str) -> JobJson:
    """Apply the tenant's retention policy as it is now (job `job_id`, kind `retention`):
    archive, then remove, audited; a failure fails the job with the graph unchanged."""
    tenant = Tenant.objects.get(slug=tenant_slug)
    policy = retention_policy(tenant)

    async def work(store: TenantStore, job: RecordID) -> Job:
        row = await jobs.job_get(store, job)
        return await retention_job(
            store,
            job,
            policy,
            archive_root=settings.RETENTION_ARCHIVE_DIR,
            actor=row.get("created_by") or "retention",
        )

    return _run_job(tenant, job_id, work)


@shared_task(name="kgapp.import_tenant")
def import_tenant(tenant_slug: str, job_id: str) -> JobJson:
    """Load the export kept for import job `job_id` into the (empty) tenant; a refused or
    failed import fails the job with its reason and leaves the tenant empty."""
    tenant = Tenant.objects.get(slug=tenant_slug)
    return job_json(transfer.import_run(tenant, job_id))


@shared_task(name="kgapp.apply_retention_policies")
def apply_retention_policies() -> list[str]:
    """Periodic (beat, KG_RETENTION_INTERVAL): queue a retention run for every tenant whose
    policy drops something; the slugs queued."""
    queued = []
    for tenant in tenants_with_retention():
        try:
            queue_retention(tenant, created_by="schedule")
        except (GraphError, QueueUnavailable) as error:
            logger.warning("retention of %s not queued: %s", tenant.slug, error)
            continue
        queued.append(tenant.slug)
    return queued


@shared_task(name="kgapp.requeue_stale_jobs")
def requeue_stale_jobs() -> dict[str, list[str]]:
    """Periodic (beat), and when a worker starts: send again the tasks of every tenant's
    running jobs whose heartbeat is older than JOB_STALE_AFTER (their worker died)."""
    requeued = {}
    for tenant in Tenant.objects.all():
        try:
            ids = requeue_stale(tenant, stale_after=settings.JOB_STALE_AFTER)
        except (GraphError, QueueUnavailable) as error:
            logger.warning("stale jobs of %s not checked: %s", tenant.slug, error)
            continue
        if ids:
            requeued[tenant.slug] = ids
    return requeued


# --- queueing: create a job record and send its task, as one step the edges call ---
# Between the edge and `_send` a job travels as its record (`Job`), then as a `JobRef`;
# the task's message is JSON (Celery's serializer), so it carries the tenant's slug and
# the job id's text, which the task parses back (`_run_job`). The edges get the job as
# JSON (`JobJson`) to show.


class QueueUnavailable(Exception):
    """The task broker could not take the message; the job is marked failed."""


def queue_health_check(tenant: Tenant, *, created_by: str) -> JobJson:
    job = tenant_graph(tenant).run(jobs.job_create, kind="health_check", created_by=created_by)
    _send(tenant, JobRef.of(job), health_check)
    return job_json(job)


def queue_rebuild_communities(
    tenant: Tenant, *, created_by: str, as_of: datetime | None = None
) -> JobJson:
    """Queue community detection (for the current graph, or as of a past moment)."""
    job = tenant_graph(tenant).run(
        jobs.job_create,
        kind="communities",
        created_by=created_by,
        params={"as_of": as_of} if as_of else {},
    )
    _send(tenant, JobRef.of(job), rebuild_communities)
    return job_json(job)


def queue_retention(tenant: Tenant, *, created_by: str) -> JobJson:
    """Queue a run of the tenant's retention policy (what it is when the task runs)."""
    graph = tenant_graph(tenant)
    job = graph.run(jobs.job_create, kind="retention", created_by=created_by)
    _send(tenant, JobRef.of(job), apply_retention)
    return job_json(job)


def queue_import(tenant: Tenant, upload: UploadedFile, *, created_by: str) -> JobJson:
    """Keep an uploaded export and queue its import job."""
    job = transfer.import_queue(tenant, upload, created_by=created_by)
    _send(tenant, JobRef.of(job), import_tenant)
    return job_json(job)


def queue_episode(tenant: Tenant, episode: EpisodeInput, *, created_by: str) -> tuple[str, JobJson]:
    """Queue the ingestion of one episode: its (deterministic) id and its job."""
    episode_id, job = tenant_graph(tenant).run(episode_submit, episode, created_by=created_by)
    _send(tenant, JobRef.of(job), ingest)
    return episode_id, job_json(job)


def queue_ingest(tenant: Tenant, job: Job) -> None:
    """Queue the ingest task of a job record already created."""
    _send(tenant, JobRef.of(job), ingest)


def queue_ingest_in_order(
    tenant: Tenant, ingest_jobs: Sequence[Job], *, created_by: str
) -> JobJson:
    """Queue ingest jobs already created as one chain: each starts when the one before
    has ended (so a later episode supersedes an earlier one as it would live), then a
    community rebuild, then the tenant's duplicate candidates. The rebuild's job."""
    rebuild = tenant_graph(tenant).run(jobs.job_create, kind="communities", created_by=created_by)
    queued = [JobRef.of(job) for job in [*ingest_jobs, rebuild]]
    steps = [ingest.si(tenant.slug, job.key, follow=False) for job in queued[:-1]]
    steps += [
        rebuild_communities.si(tenant.slug, queued[-1].key),
        generate_dedup_candidates.si(tenant.slug),
    ]
    try:
        chain(*steps).delay()
    except OperationalError as error:
        logger.warning("broker refused the chain of %d jobs: %s", len(steps), error)
        for job in queued:
            tenant_graph(tenant).run(jobs.job_fail, job.id, error="the task queue is down")
        raise QueueUnavailable("the task queue is unavailable; try again shortly") from error
    return job_json(rebuild)


# The task that runs each kind of job.
_TASKS = {
    "health_check": health_check,
    "communities": rebuild_communities,
    "ingest_episode": ingest,
    "ingest_document": ingest,
    "retention": apply_retention,
}


def requeue_stale(tenant: Tenant, *, stale_after: float) -> list[str]:
    """Send again the tasks of the tenant's running jobs whose worker stopped beating
    (see kgapp.graph.jobs); the ids of the jobs requeued."""
    requeued = tenant_graph(tenant).run(
        jobs.requeue_stale, stale_after=stale_after, kinds=tuple(_TASKS)
    )
    ids = []
    for job in map(JobRef.of, requeued):
        logger.warning("job %s of %s lost its worker; queued again", job.key, tenant.slug)
        _send(tenant, job, _TASKS[job.kind])
        ids.append(job.key)
    return ids


def _send(tenant: Tenant, job: JobRef, task: Any) -> None:
    """Send `task` the job (its message: the tenant's slug and the job id's text); a
    refused message fails the job and raises QueueUnavailable."""
    try:
        task.delay(tenant.slug, job.key)
    except OperationalError as error:
        logger.warning("broker refused job %s: %s", job.key, error)
        tenant_graph(tenant).run(jobs.job_fail, job.id, error="the task queue is down")
        raise QueueUnavailable("the task queue is unavailable; try again shortly") from error
