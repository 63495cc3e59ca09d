"""Running an ingest job: its episodes, or its document's, through the pipeline, the
job's lifecycle being `jobs.job_run`'s."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

from surrealdb.data.types.record_id import RecordID

from kgapp.graph import jobs, queries
from kgapp.graph.documents.errors import DocumentError
from kgapp.graph.documents.pdf import PdfLimits
from kgapp.graph.embeddings import Embedder
from kgapp.graph.errors import GraphError
from kgapp.graph.ingest.chunk import document_status
from kgapp.graph.ingest.indexing import index_stragglers
from kgapp.graph.ingest.model import EpisodeInput, EpisodeParams
from kgapp.graph.ingest.offline.extractor import OfflineExtractor
from kgapp.graph.ingest.pipeline import IngestReport, ingest_context, ingest_document, ingest_job
from kgapp.graph.ingest.service.removal import claims_withdraw
from kgapp.graph.llm.client import LLMClient
from kgapp.graph.records import Job
from kgapp.graph.store import TenantStore
from kgapp.graph.time import parse_when


async def stragglers_index(store: TenantStore, *, embedder: Embedder) -> int:
    """Embed the facts and passages of the tenant that no ingest job did (the periodic
    sweep); the number of vectors written."""
    return await index_stragglers(await ingest_context(store, embedder=embedder, llm=None))


async def ingest_run(
    store: TenantStore,
    job: RecordID,
    *,
    embedder: Embedder,
    llm: LLMClient | None,
    extractor: OfflineExtractor | None = None,
    pdf: PdfLimits | None = None,
) -> Job:
    """Run an ingest job to its end, through `jobs.job_run` (queued, running, then
    completed, failed or paused). Idempotent: a finished job is left as it is, and a
    retried one skips the episodes it already wrote. Without `llm`, `extractor` extracts
    (None: the default spaCy pipeline). A PDF document is read here, within `pdf` (None:
    the defaults); one it cannot read fails the job, saying why. The store failing
    leaves the job running, for the task to retry."""
    run = _IngestRun(store, job, embedder, llm, extractor, pdf or PdfLimits())
    return await jobs.job_run(
        store, job, run.work, retried=(GraphError,), failed=run.failed, ended=run.ended
    )


@dataclass
class _IngestRun:
    """One run of an ingest job: its work, the report of a failure, and its document's
    status once the job's report is written."""

    store: TenantStore
    job: RecordID
    embedder: Embedder
    llm: LLMClient | None
    extractor: OfflineExtractor | None
    pdf: PdfLimits
    document: RecordID | None = None

    async def work(self, store: TenantStore) -> IngestReport:
        row = await jobs.job_get(store, self.job)
        self.document = row.get("document")
        if self.document is not None:
            report = await ingest_document(
                store,
                self.job,
                self.document,
                embedder=self.embedder,
                llm=self.llm,
                extractor=self.extractor,
                pdf=self.pdf,
            )
            await _settle(store, self.document, report)
            return report
        episodes = [_episode_from_params(p) for p in row["params"]["episodes"]]
        return await ingest_job(
            store,
            self.job,
            episodes,
            embedder=self.embedder,
            llm=self.llm,
            extractor=self.extractor,
        )

    def failed(self, error: Exception) -> IngestReport:
        # A DocumentError's message is for the user as it is.
        reason = str(error) if isinstance(error, DocumentError) else jobs.failure_reason(error)
        return IngestReport(status="failed", error=reason)

    async def ended(self, report: jobs.JobReport) -> None:
        if self.document is not None:
            status = {"completed": "completed", "paused": "extracting"}.get(report.status, "failed")
            await document_status(self.store, self.document, status, error=report.error)


async def _settle(store: TenantStore, document: RecordID, report: IngestReport) -> None:
    """Once a version's new episodes are in, withdraw those it no longer holds; while any
    of its episodes failed, the previous version's stay (nothing is lost), and the job
    says so. The version's history records what it changed."""
    plan = report.plan
    if plan is None:
        return
    if plan.withdrawn and report.status == "completed" and not report.failures:
        removal = await claims_withdraw(store, document, plan.withdrawn)
        report.counts.update(
            {
                "episodes_withdrawn": removal.episodes_deleted,
                "facts_withdrawn": removal.facts_deleted,
                "entities_withdrawn": removal.entities_deleted,
            }
        )
    elif plan.withdrawn:
        report.notes.append(
            f"the previous version's {len(plan.withdrawn)} episodes that this one dropped "
            "are kept until every new episode is in: retry the job"
        )
    versions = await store.query_one(queries.DOCUMENT_VERSIONS, {"id": document}) or []
    if versions:
        versions[-1] = {**versions[-1], "summary": plan.summary()}
        await store.query(queries.DOCUMENT_VERSIONS_SET, {"id": document, "versions": versions})


def _episode_from_params(params: EpisodeParams) -> EpisodeInput:
    return EpisodeInput(
        content=params["content"],
        source=params["source"],
        reference_time=parse_when(params["reference_time"]) or datetime.now(UTC),
        name=params.get("name", ""),
        source_description=params.get("source_description", ""),
        saga=params.get("saga"),
        document=params.get("document"),
        chunk_index=params.get("chunk_index"),
    )
