"""Retention: a tenant's policy for dropping facts ended long ago (in system time) and
old episodes, previewed before it is switched on (`preview`), and applied (`run`) as
plan (`plan`) -> archive (`archive`, gzipped JSON Lines on disk) -> one transaction."""

from kgapp.graph.retention.archive import (
    ArchiveFile,
    ArchiveIncomplete,
    archive_dir,
    archive_list,
    archive_path,
    archive_read,
)
from kgapp.graph.retention.plan import RetentionPlan, retention_plan
from kgapp.graph.retention.policy import MAX_DAYS, MIN_DAYS, PolicyInvalid, RetentionPolicy
from kgapp.graph.retention.preview import (
    HistoryEntry,
    RetentionPreview,
    retention_history,
    retention_policy_audit,
    retention_preview,
)
from kgapp.graph.retention.run import RetentionReport, retention_apply, retention_job

__all__ = [
    "MAX_DAYS",
    "MIN_DAYS",
    "ArchiveFile",
    "ArchiveIncomplete",
    "HistoryEntry",
    "PolicyInvalid",
    "RetentionPlan",
    "RetentionPolicy",
    "RetentionPreview",
    "RetentionReport",
    "archive_dir",
    "archive_list",
    "archive_path",
    "archive_read",
    "retention_apply",
    "retention_history",
    "retention_job",
    "retention_plan",
    "retention_policy_audit",
    "retention_preview",
]
