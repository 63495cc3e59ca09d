"""Taking a tenant out and bringing it back: its graph (the core's, kgapp/graph/export/)
with what the deployment keeps beside it (name, embedding size, retention policy).

An import arrives as a file (an upload, or a path on the command line), waits in
`settings.IMPORT_DIR` under a name made here, and is loaded by a job; the file is removed
once the job has run, whatever its end.
"""

from __future__ import annotations

import gzip
import re
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.files.uploadedfile import UploadedFile
from django.db import transaction

from kgapp.graph import jobs
from kgapp.graph.export import moment as at_moment
from kgapp.graph.export.job import import_job
from kgapp.graph.export.jsonl import TenantMeta, export_lines
from kgapp.graph.export.load import (
    ImportRefused,
    TenantNotEmpty,
    check_empty,
    export_lines_of,
)
from kgapp.graph.export.tables import IMPORT_JOB_KIND
from kgapp.graph.records import Job, parse_record_id
from kgapp.graph.retention import RetentionPolicy
from kgapp.graph.time import Moment
from tenants.models import Tenant
from tenants.retention import retention_policy
from tenants.wiring import tenant_graph

FORMATS = ("jsonl", "graphml", "csv")
_FILE_NAME = re.compile(r"^[a-z0-9-]{1,80}\.export$")


def tenant_meta(tenant: Tenant) -> TenantMeta:
    return TenantMeta(
        slug=tenant.slug,
        name=tenant.name,
        embedding_dim=tenant.embedding_dim,
        retention=retention_policy(tenant),
    )


def export_stream(
    tenant: Tenant, fmt: str, moment: Moment, part: str = "facts"
) -> AsyncIterator[bytes] | AsyncIterator[str]:
    """The export in format `fmt`, streamed from the tenant's graph (any event loop)."""
    graph = tenant_graph(tenant)
    if fmt == "jsonl":
        return graph.astream(export_lines, tenant_meta(tenant))
    if fmt == "graphml":
        return graph.astream(at_moment.graphml, moment)
    if part == "entities":
        return graph.astream(at_moment.entities_csv, moment)
    return graph.astream(at_moment.facts_csv, moment)


def export_to_file(tenant: Tenant, path: Path) -> int:
    """Write the tenant's JSONL export to `path` (gzip-compressed when it ends in .gz);
    the number of bytes of JSON lines written."""

    async def write(store: Any) -> int:
        size = 0
        opener = gzip.open if path.suffix == ".gz" else open
        with opener(path, "wb") as out:
            async for line in export_lines(store, tenant_meta(tenant)):
                out.write(line)
                size += len(line)
        return size

    return tenant_graph(tenant).run(write)


def import_directory() -> Path:
    directory = Path(settings.IMPORT_DIR)
    directory.mkdir(parents=True, exist_ok=True)
    return directory


def import_possible(tenant: Tenant) -> bool:
    """Whether the tenant is empty, so that an import may load into it."""
    try:
        import_check_empty(tenant)
    except TenantNotEmpty:
        return False
    return True


def import_check_empty(tenant: Tenant) -> None:
    """TenantNotEmpty unless the tenant is empty (the job checks the rest)."""
    tenant_graph(tenant).run(check_empty)


def import_first_line(chunk: bytes) -> None:
    """A quick look at an upload: ImportRefused when it is plainly not an export (the
    job checks every line). `chunk` is the file's start, gzip-compressed or not."""
    if chunk[:2] == b"\x1f\x8b":
        return
    first = chunk.split(b"\n", 1)[0]
    if not first.lstrip().startswith(b"{") or b'"kind":"header"' not in first.replace(b" ", b""):
        raise ImportRefused(
            "this is not a tenant export: its first line is not an export header"
            " (export a tenant with GET export?format=jsonl)"
        )


def import_queue(tenant: Tenant, upload: UploadedFile, *, created_by: str) -> Job:
    """Keep the upload and create its import job (queued)."""
    import_first_line(next(upload.chunks(64 * 1024), b""))
    name = f"{uuid.uuid4().hex}.export"
    with (import_directory() / name).open("wb") as out:
        for chunk in upload.chunks():
            out.write(chunk)
    graph = tenant_graph(tenant)
    params = {"file": name, "file_name": upload.name or "", "size": upload.size or 0}
    return graph.run(jobs.job_create, kind=IMPORT_JOB_KIND, created_by=created_by, params=params)


def import_file(tenant: Tenant, path: Path, *, created_by: str) -> Job:
    """Import the export at `path` now, in this process (manage.py import_tenant)."""
    job = tenant_graph(tenant).run(
        jobs.job_create, kind=IMPORT_JOB_KIND, created_by=created_by, params={"path": str(path)}
    )
    return _run(tenant, job["id"], path)


def import_run(tenant: Tenant, job_id: str) -> Job:
    """Run a queued import job (the task); its file is removed afterwards."""
    job = parse_record_id(job_id, "job")
    row = tenant_graph(tenant).run(jobs.job_get, job)
    name = str((row.get("params") or {}).get("file", ""))
    if row.get("kind") != IMPORT_JOB_KIND or not _FILE_NAME.fullmatch(name):
        raise ImportRefused(f"import job {job_id} names no file of its own")
    path = import_directory() / name
    try:
        return _run(tenant, job, path)
    finally:
        path.unlink(missing_ok=True)


def _run(tenant: Tenant, job: Any, path: Path) -> Job:
    def lines() -> Iterator[bytes]:
        if not path.is_file():
            raise ImportRefused("the file to import is gone (it was removed before its job ran)")
        return export_lines_of(path)

    finished, summary = tenant_graph(tenant).run(
        import_job,
        job,
        lines,
        embedding_dim=tenant.embedding_dim,
        every=settings.JOB_HEARTBEAT_INTERVAL,
    )
    if summary is not None:
        _keep_settings(tenant, summary.retention)
    return finished


def _keep_settings(tenant: Tenant, policy: RetentionPolicy) -> None:
    with transaction.atomic():
        tenant.retention_mode = policy.mode
        tenant.retention_facts_ended_days = policy.facts_ended_days
        tenant.retention_episodes_days = policy.episodes_days
        fields = ["retention_mode", "retention_facts_ended_days", "retention_episodes_days"]
        tenant.save(update_fields=fields)
