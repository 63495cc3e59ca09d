"""The entity index: names and summaries, name embeddings and entity types; a merged
entity is not found."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from kgapp.graph import queries
from kgapp.graph.index.table import ColumnValues, TableIndex, TableSpec
from kgapp.graph.records import JsonObject


def _values(  # `row`: an entity as the feed or a read gives it (TableSpec)
    row: JsonObject, code: Callable[[str], int], end: Callable[[str], int]
) -> ColumnValues:
    return {"entity_type": code(str(row.get("entity_type") or ""))}


ENTITIES = TableSpec(
    table="entity",
    text_fields=("name", "summary"),
    vector_field="name_embedding",
    columns={"entity_type": np.dtype(np.int32)},
    ids=queries.ENTITY_INDEX_IDS,
    rows=queries.ENTITY_INDEX_ROWS,
    values=_values,
    alive=lambda row: row.get("merged_into") is None,
)


class EntityIndex(TableIndex):
    spec = ENTITIES

    def of_types(self, entity_types: Sequence[str] = ()) -> np.ndarray:
        mask = self.base_mask()
        if entity_types:
            mask &= self.coded("entity_type", entity_types)
        return mask

    def usable_vectors(self) -> tuple[list[str], np.ndarray]:
        """The keys of the current entities that have a name vector, and the vectors."""
        with self.lock:
            if not self.state.width:
                return [], np.zeros((0, 0), dtype=np.float32)
            rows = np.flatnonzero(self.base_mask() & self.column("has_vector"))
            return [self.keys[i] for i in rows], np.array(self.column("vectors")[rows])
