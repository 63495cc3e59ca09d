"""Where a tenant's search index lives on this machine, its manifest, and its locks.

    <root>/indexer.lock                 held by the indexer process while it runs
    <root>/<namespace>/manifest.json    what readers may use (written last, atomically)
    <root>/<namespace>/writer.lock      held by whoever writes, for one pass or for good
    <root>/<namespace>/<build>/         one complete index: relates_to/ and entity/

The root is `CoreConfig.search_dir` (KG_SEARCH_DIR, default var/search in the checkout).
A tenant's index is found only under its own namespace's directory, and its manifest
names that namespace:
an index copied or linked under another tenant's directory is refused (`read_manifest`).
Everything here is derived data: delete a directory and the next pass rebuilds it.
"""

from __future__ import annotations

import errno
import fcntl
import functools
import json
import os
import shutil
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import IO

from kgapp.graph import queries
from kgapp.graph.config import core_config
from kgapp.graph.errors import GraphUnavailable
from kgapp.graph.records import JsonObject

FORMAT = 1  # bumped when the files change shape: an older index is rebuilt
MANIFEST = "manifest.json"


def root() -> Path:
    """This machine's search index directory, as the edge configured it."""
    return core_config().search_dir


def tenant_dir(namespace: str | None, base: Path | None = None) -> Path:
    """The directory of a namespace's index (the name checked: never a path)."""
    if not namespace:
        raise GraphUnavailable("a search index belongs to a tenant's namespace")
    return (base or root()) / queries.check_namespace(namespace)


@dataclass
class TableState:
    """What readers may use of one table's index: its first `rows` rows."""

    rows: int = 0
    capacity: int = 0
    width: int = 0  # of the vectors; 0 until the first
    keys_bytes: int = 0  # of keys.txt, codes.txt and ends.txt: whole lines only
    codes_bytes: int = 0
    ends_bytes: int = 0
    text_commit: int = 0  # the tantivy commit readers should see
    tail: str = ""  # the file of the text put since that commit (tail.py), "" when none
    tail_bytes: int = 0
    hnsw: str = ""  # the file of the graph of vectors, "" when there is none


@dataclass
class Manifest:
    namespace: str
    epoch: str  # the namespace's first migration record: new when it is made again
    build: str
    format: int = FORMAT
    generation: int = 0
    cursor: int | None = None  # the change feed's versionstamp to read from
    applied: str = ""  # ISO time of the server: everything committed before is in
    synced: bool = True  # everything it names was synced to the disk before it
    boot: str = ""  # the machine's boot that wrote it (boot_id)
    tables: dict[str, TableState] = field(default_factory=dict)

    def table(self, name: str) -> TableState:
        return self.tables.setdefault(name, TableState())

    @property
    def trusted(self) -> bool:
        """Whether what it names is whole. One written before its files (a tail, the
        columns) were synced is, until the machine restarts; after that its index is
        rebuilt."""
        return self.synced or self.boot == boot_id()


@functools.cache
def boot_id() -> str:
    """This boot of the machine ("" where the system does not say)."""
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return ""


def read_manifest(directory: Path, namespace: str) -> Manifest | None:
    """The manifest, or None when there is none usable for this namespace."""
    try:
        # The file's JSON, unchecked until it makes a Manifest below.
        raw: JsonObject = json.loads((directory / MANIFEST).read_text())
    except (OSError, ValueError):
        return None
    if raw.get("namespace") != namespace or raw.get("format") != FORMAT:
        return None
    try:
        tables = {name: TableState(**state) for name, state in (raw.pop("tables") or {}).items()}
        return Manifest(**raw, tables=tables)
    except TypeError:  # not a manifest this code wrote: rebuilt
        return None


def write_manifest(directory: Path, manifest: Manifest) -> None:
    temporary = directory / f".{MANIFEST}.{os.getpid()}"
    manifest.boot = boot_id()
    temporary.write_text(json.dumps(asdict(manifest)))
    os.replace(temporary, directory / MANIFEST)


def remove(namespace: str, base: Path | None = None) -> None:
    """Delete a namespace's index from this machine (its tenant is gone)."""
    shutil.rmtree(tenant_dir(namespace, base), ignore_errors=True)


def _try_lock(path: Path) -> IO[str] | None:
    """An exclusive lock on `path`, held until `release`; None while another holds it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    handle = open(path, "a+")  # noqa: SIM115 (held until released)
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as error:
        handle.close()
        if error.errno not in (errno.EAGAIN, errno.EACCES):
            raise
        return None
    return handle


def try_writer_lock(directory: Path) -> IO[str] | None:
    """The directory's writer lock, held until `release`; None while another holds it."""
    return _try_lock(directory / "writer.lock")


def release(handle: IO[str]) -> None:
    fcntl.flock(handle, fcntl.LOCK_UN)
    handle.close()


def indexer_running(base: Path | None = None) -> bool:
    """Whether an indexer process holds this machine's indexer lock."""
    path = (base or root()) / "indexer.lock"
    if not path.exists():
        return False
    with open(path, "a+") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except OSError:
            return True
        fcntl.flock(handle, fcntl.LOCK_UN)
        return False


def hold_indexer_lock(base: Path | None = None) -> IO[str]:
    """Take this machine's indexer lock for the life of the returned handle; raises
    GraphUnavailable when another indexer holds it."""
    directory = base or root()
    handle = _try_lock(directory / "indexer.lock")
    if handle is None:
        raise GraphUnavailable(f"another search indexer runs on {directory}")
    return handle
