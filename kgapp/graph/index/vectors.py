"""Nearest rows by cosine: usearch over the table's memory-mapped unit vectors.

The vectors are a column (`Columns`, float32, one unit vector per row). Once a table
has more than EXACT_ROWS of them, the writer also keeps a graph of them (HNSW, usearch)
in a file that readers map (`Index.restore(view=True)`). Rows written since that file
(`in_hnsw` false) are searched exactly beside it, so a new vector is found at once, and
the writer saves a new graph once SNAPSHOT_ROWS have piled up. A filter (a boolean mask
over rows) is applied to what the graph returns, asked for enough more to survive it;
when too few would, and whenever the mask leaves at most EXACT_ROWS rows, the search is
exact over the rows it leaves. See docs/search-engines.md for the measurements.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

# onnxruntime (the local embedder's runtime, embeddings.py) has to be loaded before
# usearch's extension: loaded after it, onnxruntime 1.23 and later crash the process on
# import and 1.22 rejects valid models (usearch 2.26). Every process that imports the
# index may embed a query, so the runtime is loaded here first.
import onnxruntime  # noqa: F401, I001  (before usearch: see above)
from usearch.index import Index, MetricKind
from usearch.index import search as exact_search

EXACT_ROWS = 10_000  # searched exactly at most: about a millisecond
SNAPSHOT_ROWS = 2_000  # rows outside the graph before the writer adds them
OVERSAMPLE = 2.0  # the graph is asked for this many more than survive the mask, at least


def new_graph(width: int) -> Index:
    return Index(
        ndim=width,
        metric=MetricKind.IP,
        dtype="f16",
        connectivity=16,
        expansion_add=128,
        expansion_search=64,
    )


def view_graph(path: Path) -> Index | None:
    """The saved graph, memory-mapped (shared by every process that views it); None
    when the file is not a graph (anymore). Without the key table a view would build
    (4 MiB per process at 100k rows): readers search, they never look a key up."""
    return Index.restore(str(path), view=True, enable_key_lookups=False)


def nearest(
    vectors: np.ndarray,
    query: np.ndarray,
    usable: np.ndarray,
    in_graph: np.ndarray,
    graph: Index | None,
    limit: int,
) -> list[tuple[int, float]]:
    """The `limit` usable rows nearest the query (unit vectors: cosine = dot product),
    best first, with exact cosines."""
    candidates = np.flatnonzero(usable)
    if graph is None or len(candidates) <= EXACT_ROWS:
        return _exact(vectors, query, candidates, limit)
    outside = np.flatnonzero(usable & ~in_graph)
    found = dict(_exact(vectors, query, outside, limit))
    share = max(float(np.count_nonzero(usable & in_graph)) / max(len(graph), 1), 1e-6)
    ask = min(len(graph), math.ceil(limit * OVERSAMPLE / share))
    while True:
        matches = graph.search(query, ask, threads=1)
        rows = np.asarray(matches.keys, dtype=np.int64)
        rows = rows[(rows < len(usable))]
        kept = rows[usable[rows] & in_graph[rows]]
        if len(kept) >= limit or ask >= len(graph):
            break
        if ask * 4 > 4 * EXACT_ROWS:  # the mask is too narrow for the graph
            return _exact(vectors, query, candidates, limit)
        ask = min(len(graph), ask * 4)
    scores = vectors[kept] @ query  # the graph's distances are of f16 copies
    found.update(zip(kept.tolist(), scores.tolist(), strict=True))
    return sorted(found.items(), key=lambda item: (-item[1], item[0]))[:limit]


def neighbours(vectors: np.ndarray, count: int) -> tuple[np.ndarray, np.ndarray]:
    """For each row of `vectors` (unit vectors), the rows of its `count` nearest among
    them (itself included) and their cosines, best first: an exact search."""
    if not len(vectors):
        return np.zeros((0, count), dtype=np.int64), np.zeros((0, count), dtype=np.float32)
    count = min(count, len(vectors))
    matches = exact_search(vectors, vectors, count, MetricKind.IP, exact=True, threads=1)
    return np.asarray(matches.keys, dtype=np.int64), 1.0 - np.asarray(matches.distances)


def _exact(
    vectors: np.ndarray, query: np.ndarray, rows: np.ndarray, limit: int
) -> list[tuple[int, float]]:
    if not len(rows) or not limit:
        return []
    chosen = vectors[rows]
    matches = exact_search(
        chosen, query, min(limit, len(rows)), MetricKind.IP, exact=True, threads=1
    )
    picked = rows[np.asarray(matches.keys, dtype=np.int64)]
    scores = 1.0 - np.asarray(matches.distances, dtype=np.float32)
    ordered = sorted(
        zip(picked.tolist(), scores.tolist(), strict=True), key=lambda item: (-item[1], item[0])
    )
    return ordered
