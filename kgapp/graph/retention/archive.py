"""Retention archives: what a run removes, written as gzipped JSON Lines before anything
is deleted, one file per run under `<archive root>/<namespace>/`.

Line 1 is the manifest (`kind: "manifest"`: the policy, the cutoffs, the count of rows
of each kind); then one line per row, `{"kind": ..., "row": {...}}`, in `KINDS` order;
the last line is `{"kind": "end", "rows": N}`. `archive_read` checks the counts against
the manifest and the end line, so a cut or edited file is refused rather than trusted.

The file is written as `<name>.partial`, flushed and fsynced, before the delete; only
once the delete has committed is it renamed to its final name. A `.partial` file left
behind names rows that may or may not have been deleted (the process stopped between
the two); it is never listed or served.
"""

from __future__ import annotations

import gzip
import json
import os
import re
import secrets
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypedDict

from kgapp.graph import queries
from kgapp.graph.audit import RetentionPolicyFields
from kgapp.graph.errors import GraphError, NotFound
from kgapp.graph.records import JsonObject, to_json

FORMAT = 1
# Kinds of rows, in the order of queries.RETENTION_ROWS. `provenance`: a kept fact and the
# removed episodes taken out of its `episodes`; `link`: a kept fact's supersession links
# as they were, before those naming a removed fact were cleared.
KINDS = (
    "fact",
    "retrieval",
    "episode",
    "mention",
    "has_episode",
    "occurred_after",
    "episode_units",
    "document",
    "job",
    "entity",
    "alias",
    "dedup_candidate",
    "has_member",
    "provenance",
    "link",
)
NAME_PATTERN = re.compile(r"^retention-\d{8}T\d{6}Z-[0-9a-f]{8}\.jsonl\.gz$")


class ArchiveIncomplete(GraphError):
    """An archive whose rows do not match its manifest, or that has no end line."""


class Manifest(TypedDict):
    """What a run's archive says of the run, first (with its format and counts)."""

    namespace: str | None
    created_at: datetime
    actor: str
    policy: RetentionPolicyFields
    facts_ended_before: datetime | None
    episodes_before: datetime | None


class ManifestRead(TypedDict, total=False):
    """An archive's first line as read back: JSON, moments as text."""

    kind: str
    format: int
    namespace: str | None
    created_at: str
    actor: str
    policy: RetentionPolicyFields
    facts_ended_before: str | None
    episodes_before: str | None
    counts: dict[str, int]


class ArchiveLine(TypedDict):
    """One removed (or changed) row: its kind, one of KINDS, and the row."""

    kind: str
    row: JsonObject  # a record of any of the tables of KINDS, whole


class _Head(Manifest):
    kind: str
    format: int
    counts: dict[str, int]


class _End(TypedDict):
    kind: str
    rows: int


@dataclass(frozen=True)
class ArchiveFile:
    name: str
    size: int
    modified_at: datetime


def archive_dir(root: Path, namespace: str) -> Path:
    return Path(root) / queries.check_namespace(namespace)


def archive_write(
    directory: Path, manifest: Manifest, rows: dict[str, list[Any]], *, now: datetime
) -> Path:
    """Write the archive as `<name>.partial`, fsynced; `archive_commit` names it."""
    directory.mkdir(parents=True, exist_ok=True)
    name = f"retention-{now:%Y%m%dT%H%M%SZ}-{secrets.token_hex(4)}.jsonl.gz"
    partial = directory / f"{name}.partial"
    counts = {kind: len(rows.get(kind, [])) for kind in KINDS}
    head: _Head = {"kind": "manifest", "format": FORMAT, **manifest, "counts": counts}
    with open(partial, "wb") as raw:
        with gzip.GzipFile(filename=name.removesuffix(".gz"), mode="wb", fileobj=raw) as out:
            out.write(_line(head))
            for kind in KINDS:
                for row in rows.get(kind, []):
                    out.write(_line(ArchiveLine(kind=kind, row=row)))
            out.write(_line(_End(kind="end", rows=sum(counts.values()))))
        raw.flush()
        os.fsync(raw.fileno())
    _sync_dir(directory)
    return partial


def archive_commit(partial: Path) -> Path:
    """The partial archive under its final name (the delete it records has committed)."""
    final = partial.with_name(partial.name.removesuffix(".partial"))
    os.replace(partial, final)
    _sync_dir(partial.parent)
    return final


def archive_read(path: Path) -> tuple[ManifestRead, list[ArchiveLine]]:
    """(manifest, row lines) of a complete archive, or ArchiveIncomplete."""
    lines: list[Any] = []  # JSON, checked below
    try:
        with gzip.open(path, "rt", encoding="utf-8") as source:
            lines = [json.loads(text) for text in source]
    except (OSError, EOFError, ValueError) as error:
        raise ArchiveIncomplete(f"{path.name} cannot be read: {error}") from error
    if len(lines) < 2 or lines[0].get("kind") != "manifest" or lines[-1].get("kind") != "end":
        raise ArchiveIncomplete(f"{path.name} lacks its manifest or its end line")
    manifest, rows = lines[0], lines[1:-1]
    found = {kind: sum(1 for r in rows if r["kind"] == kind) for kind in KINDS}
    if found != manifest.get("counts") or lines[-1].get("rows") != len(rows):
        raise ArchiveIncomplete(f"{path.name} holds {found}, its manifest says {manifest}")
    return manifest, rows


def archive_list(directory: Path) -> list[ArchiveFile]:
    """The tenant's complete archives, newest first."""
    if not directory.is_dir():
        return []
    files = []
    for entry in directory.iterdir():
        if NAME_PATTERN.fullmatch(entry.name) and entry.is_file():
            stat = entry.stat()
            modified = datetime.fromtimestamp(stat.st_mtime, UTC)
            files.append(ArchiveFile(entry.name, stat.st_size, modified))
    return sorted(files, key=lambda f: f.name, reverse=True)


def archive_path(directory: Path, name: str) -> Path:
    """The path of archive `name`, which must be one `archive_list` shows (so no other
    file, and no path outside the tenant's folder, can be named); else NotFound."""
    if name not in {f.name for f in archive_list(directory)}:
        raise NotFound(f"no retention archive {name[:100]!r}")
    return directory / name


def _line(value: _Head | ArchiveLine | _End) -> bytes:
    text = json.dumps(to_json(value), ensure_ascii=False, sort_keys=True, default=str)
    return (text + "\n").encode()


def _sync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
