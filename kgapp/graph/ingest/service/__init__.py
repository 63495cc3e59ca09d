"""What the edges call, bound to one tenant's store: submit episodes and documents as
jobs (`submit`), run such a job (`run`), add a fact directly (`facts`), delete what was
ingested (`removal`), read it back (`lists`), and queue a stopped job again
(`jobs.job_requeue`, where every move of a job's status is)."""

from kgapp.graph.ingest.prepare import saga_record
from kgapp.graph.ingest.service.facts import FactAdded, fact_add
from kgapp.graph.ingest.service.lists import document_get, document_list, episode_list
from kgapp.graph.ingest.service.removal import (
    Removal,
    RemovalPreview,
    document_delete,
    document_removal_preview,
    episode_delete,
    episodes_remove,
)
from kgapp.graph.ingest.service.run import ingest_run, stragglers_index
from kgapp.graph.ingest.service.submit import DocumentBusy, document_submit, episode_submit
from kgapp.graph.jobs import job_requeue

__all__ = [
    "DocumentBusy",
    "FactAdded",
    "Removal",
    "RemovalPreview",
    "document_delete",
    "document_removal_preview",
    "document_get",
    "document_list",
    "document_submit",
    "episode_delete",
    "episode_list",
    "episode_submit",
    "episodes_remove",
    "fact_add",
    "ingest_run",
    "job_requeue",
    "saga_record",
    "stragglers_index",
]
