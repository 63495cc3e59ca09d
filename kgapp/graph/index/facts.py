"""The fact index: facts (`relates_to`) with their four timestamps, relation, edge type,
ends and confidence as columns, so that visibility and type filters are vector
comparisons."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any

import numpy as np

from kgapp.graph import queries
from kgapp.graph.index.columns import NEVER, Column, micros
from kgapp.graph.index.table import SearchIndex
from kgapp.graph.records import record_key


class FactIndex(SearchIndex):
    table = "relates_to"
    text_fields = ("fact",)
    vector_field = "fact_embedding"
    load_all = queries.FACT_INDEX_ALL

    def _reset(self) -> None:
        super()._reset()
        self.times = {name: Column(np.int64, NEVER) for name in _TIMES}
        self.relation = Column(np.int32, -1)
        self.edge_type = Column(np.int32, -1)
        self.source = Column(np.int32, -1)
        self.target = Column(np.int32, -1)
        self.confidence = Column(np.float32)
        self.codes: dict[str, int] = {}
        self.ends: dict[str, int] = {}  # entity key -> code in source / target

    def _grow(self, size: int) -> None:
        super()._grow(size)
        for column in (*self.times.values(), self.relation, self.edge_type):
            column.ensure(size)
        for column in (self.source, self.target, self.confidence):
            column.ensure(size)

    def _columns(self, position: int, row: dict[str, Any]) -> bool:
        for name in _TIMES:
            self.times[name].data[position] = micros(row.get(name))
        self.relation.data[position] = self._code(str(row.get("relation") or ""))
        self.edge_type.data[position] = self._code(str(row.get("edge_type") or ""))
        for column, end in ((self.source, row.get("in")), (self.target, row.get("out"))):
            key = record_key(end) if end is not None else ""
            column.data[position] = self.ends.setdefault(key, len(self.ends))
        self.confidence.data[position] = float(row.get("confidence") or 0.0)
        return True

    def touching(
        self,
        entities: Iterable[str],
        mask: np.ndarray,
        limit: int,
        *,
        budget: int | None = None,
        per_fact: int = 0,
    ) -> list[str]:
        """Facts within `mask` with an end among `entities`: those touching most of them
        first, then the most confident, then the most recent. With a `budget`, only as
        many as could fit in it, counting each fact's words plus `per_fact` (a lower
        bound of its tokens: the caller truncates exactly afterwards)."""
        codes = [self.ends[k] for k in entities if k in self.ends]
        with self.lock:
            size = len(self.keys)
            source, target = self.source.data[:size], self.target.data[:size]
            ends = np.isin(source, codes).astype(np.int8) + np.isin(target, codes)
            rows = np.flatnonzero(mask[:size] & (ends > 0))
            order = np.lexsort(
                (
                    -self.times["valid_at"].data[rows],
                    -self.confidence.data[rows],
                    -ends[rows],
                )
            )
            chosen = rows[order[:limit]]
            if budget is not None:
                words = self.postings["fact"].lengths.data[chosen] + per_fact
                chosen = chosen[: int(np.searchsorted(np.cumsum(words), budget, "right")) + 1]
            return [self.keys[i] for i in chosen]

    def _code(self, value: str) -> int:
        return self.codes.setdefault(value, len(self.codes))

    def visible(
        self,
        as_of: datetime,
        known_at: datetime,
        relations: Sequence[str] = (),
        edge_types: Sequence[str] = (),
    ) -> np.ndarray:
        """Rows valid at `as_of` as known at `known_at` (DESIGN.md's visibility rule)."""
        size = len(self.keys)
        valid, known = micros(as_of), micros(known_at)
        t = {name: column.data[:size] for name, column in self.times.items()}
        mask = self.base_mask()
        mask &= (t["valid_at"] <= valid) & (t["invalid_at"] > valid)
        mask &= (t["created_at"] <= known) & (t["expired_at"] > known)
        for wanted, column in ((relations, self.relation), (edge_types, self.edge_type)):
            if wanted:
                codes = [self.codes[v] for v in wanted if v in self.codes]
                mask &= np.isin(column.data[:size], codes)
        return mask


_TIMES = ("valid_at", "invalid_at", "created_at", "expired_at")
