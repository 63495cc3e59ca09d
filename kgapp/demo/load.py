"""Loading the demo dataset into a tenant, through the path an upload takes."""

from __future__ import annotations

from django.conf import settings

from kgapp import tasks
from kgapp.demo.dataset import DEMO_FILES
from kgapp.graph.documents.parse import parse_document
from kgapp.graph.ingest import service
from kgapp.graph.records import Job
from tenants.models import Tenant
from tenants.wiring import tenant_graph

UPLOADED_BY = "demo"


def demo_load(tenant: Tenant) -> list[Job]:
    """Submit every demo file as a document of `tenant` (with its own date as reference
    time) and queue their ingests, in the dataset's order, as one chain ending with a
    community rebuild and duplicate candidates. Idempotent: a file already uploaded (by
    its content hash) is not queued again. The ingest jobs queued; [] when all were
    there already."""
    graph = tenant_graph(tenant)
    queued: list[Job] = []
    for demo_file in DEMO_FILES:
        data = demo_file.read()
        parsed = parse_document(demo_file.name, data, max_bytes=settings.UPLOAD_MAX_BYTES)
        _, job = graph.run(
            service.document_submit,
            parsed,
            file_name=demo_file.name,
            data=data,
            uploaded_by=UPLOADED_BY,
            reference_time=demo_file.reference_time,
        )
        if job is not None:
            queued.append(job)
    if queued:
        tasks.queue_ingest_in_order(tenant, queued, created_by=UPLOADED_BY)
    return queued
