"""The entity index: names and summaries, name embeddings, entity types, and the fields
a search hit shows, so that an entity found is not read again."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from kgapp.graph import queries
from kgapp.graph.index.columns import Column
from kgapp.graph.index.table import SearchIndex


class EntityIndex(SearchIndex):
    table = "entity"
    text_fields = ("name", "summary")
    vector_field = "name_embedding"
    load_all = queries.ENTITY_INDEX_ALL

    def _reset(self) -> None:
        super()._reset()
        self.rows: dict[int, dict[str, Any]] = {}
        self.entity_type = Column(np.int32, -1)
        self.codes: dict[str, int] = {}

    def _grow(self, size: int) -> None:
        super()._grow(size)
        self.entity_type.ensure(size)

    def _columns(self, position: int, row: dict[str, Any]) -> bool:
        kind = str(row.get("entity_type") or "")
        self.entity_type.data[position] = self.codes.setdefault(kind, len(self.codes))
        self.rows[position] = {k: v for k, v in row.items() if k in _ENTITY_FIELDS}
        return row.get("merged_into") is None

    def of_types(self, entity_types: Sequence[str] = ()) -> np.ndarray:
        mask = self.base_mask()
        if entity_types:
            codes = [self.codes[v] for v in entity_types if v in self.codes]
            mask &= np.isin(self.entity_type.data[: len(self.keys)], codes)
        return mask

    def row(self, key: str) -> dict[str, Any]:
        return dict(self.rows[self.positions[key]])


_ENTITY_FIELDS = frozenset({"id", "name", "entity_type", "summary", "degree"})
