"""The fact index: facts (`relates_to`) with their four timestamps, relation, edge type,
ends and confidence as columns, so that visibility and type filters are vector
comparisons."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from datetime import datetime

import numpy as np

from kgapp.graph import queries
from kgapp.graph.index.analysis import terms
from kgapp.graph.index.columns import micros
from kgapp.graph.index.table import ColumnValues, TableIndex, TableSpec
from kgapp.graph.records import JsonObject, record_key

_TIMES = ("valid_at", "invalid_at", "created_at", "expired_at")


def _values(  # `row`: a fact as the feed or a read gives it (TableSpec)
    row: JsonObject, code: Callable[[str], int], end: Callable[[str], int]
) -> ColumnValues:
    values: ColumnValues = {name: micros(row.get(name)) for name in _TIMES}
    values["relation"] = code(str(row.get("relation") or ""))
    values["edge_type"] = code(str(row.get("edge_type") or ""))
    for column, field in (("source", "in"), ("target", "out")):
        ends = row.get(field)
        values[column] = end(record_key(ends) if ends is not None else "")
    values["confidence"] = float(row.get("confidence") or 0.0)
    values["words"] = len(terms(str(row.get("fact") or "")))
    return values


FACTS = TableSpec(
    table="relates_to",
    text_fields=("fact",),
    vector_field="fact_embedding",
    columns={
        **{name: np.dtype(np.int64) for name in _TIMES},
        "relation": np.dtype(np.int32),
        "edge_type": np.dtype(np.int32),
        "source": np.dtype(np.int32),
        "target": np.dtype(np.int32),
        "confidence": np.dtype(np.float32),
        "words": np.dtype(np.int32),
    },
    ids=queries.FACT_INDEX_IDS,
    rows=queries.FACT_INDEX_ROWS,
    values=_values,
    alive=lambda row: True,
)


class FactIndex(TableIndex):
    spec = FACTS

    def visible(
        self,
        as_of: datetime,
        known_at: datetime,
        relations: Sequence[str] = (),
        edge_types: Sequence[str] = (),
    ) -> np.ndarray:
        """Rows valid at `as_of` as known at `known_at` (the visibility rule of kgapp/graph/time.py,
        time.visible), of the relations and edge types asked for."""
        valid, known = micros(as_of), micros(known_at)
        mask = self.base_mask()
        mask &= (self.column("valid_at") <= valid) & (self.column("invalid_at") > valid)
        mask &= (self.column("created_at") <= known) & (self.column("expired_at") > known)
        for wanted, column in ((relations, "relation"), (edge_types, "edge_type")):
            if wanted:
                mask &= self.coded(column, wanted)
        return mask

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
            ends = np.isin(self.column("source"), codes).astype(np.int8)
            ends += np.isin(self.column("target"), codes)
            rows = np.flatnonzero(mask[: self.size] & (ends > 0))
            order = np.lexsort(
                (
                    -self.column("valid_at")[rows],
                    -self.column("confidence")[rows],
                    -ends[rows],
                )
            )
            chosen = rows[order[:limit]]
            if budget is not None:
                words = self.column("words")[chosen] + per_fact
                chosen = chosen[: int(np.searchsorted(np.cumsum(words), budget, "right")) + 1]
            return [self.keys[i] for i in chosen]

    def projection(self, mask: np.ndarray) -> tuple[np.ndarray, np.ndarray, list[str], list[str]]:
        """The ends (codes) of the rows within `mask`, their keys, and the entity key of
        each code."""
        with self.lock:
            rows = np.flatnonzero(mask[: self.size])
            source = np.array(self.column("source")[rows])
            target = np.array(self.column("target")[rows])
            return source, target, [self.keys[i] for i in rows], list(self.ends)
