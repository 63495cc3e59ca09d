"""Which tables a tenant export carries, in the order an import writes them.

A record is written after every record it needs: relations after both their ends
(SurrealDB enforces that), and the rest so that a reader of the file meets a thing
before what points at it. Left out, on purpose:
- `llm_cache`: model answers kept to save a second call; a cache, rebuilt as it is used;
- `schema_migration`: the deployment's own record of its schema, made when the tenant is
  provisioned there (the header carries the version the export was made at);
- `job` records of kind `import`: the act of loading a file into a deployment, not
  part of what was loaded (so an export of an imported tenant equals the file loaded);
- `entity_mentions` and `entity_standing`: views SurrealDB keeps from `mentions` and
  `entity` (schema/0020), filled again as those are loaded.
"""

from __future__ import annotations

from dataclasses import dataclass

IMPORT_JOB_KIND = "import"


@dataclass(frozen=True)
class ExportTable:
    name: str
    relation: bool = False
    vectors: tuple[str, ...] = ()  # embedding fields, packed as float32
    # Batches written one after another: SurrealDB keeps a view from this table, and two
    # batches in flight at once would conflict on its rows (RocksDB: "Resource busy").
    serial: bool = False


TABLES: tuple[ExportTable, ...] = (
    ExportTable("ontology"),
    ExportTable("saga"),
    ExportTable("document"),
    ExportTable("episode", vectors=("content_embedding",)),
    ExportTable("episode_units", vectors=("vectors",)),
    ExportTable("message_key"),
    ExportTable("entity", vectors=("name_embedding",)),
    ExportTable("alias"),
    ExportTable("relates_to", relation=True, vectors=("fact_embedding",)),
    ExportTable("retrieval"),
    ExportTable("mentions", relation=True, serial=True),
    ExportTable("occurred_after", relation=True),
    ExportTable("has_episode", relation=True),
    ExportTable("community", vectors=("summary_embedding",)),
    ExportTable("has_member", relation=True),
    ExportTable("dedup_candidate"),
    ExportTable("audit"),
    ExportTable("job"),
)
BY_NAME = {table.name: table for table in TABLES}
ORDER = {table.name: position for position, table in enumerate(TABLES)}
NOT_EXPORTED = frozenset({"llm_cache", "schema_migration", "entity_mentions", "entity_standing"})
