"""Positions for drawing a large graph: Fruchterman-Reingold in igraph (C, grid-based
above a thousand vertices), a few hundred milliseconds for 5,000 nodes where the
browser's force layout takes seconds. The explorer asks for it when it lays out more
than a thousand entities at once."""

from __future__ import annotations

import math
from collections.abc import Sequence

import igraph

EDGE_LENGTH = 90.0  # pixels between linked nodes, as the explorer's own layout
ITERATIONS = 300


def positions(count: int, edges: Sequence[tuple[int, int]]) -> list[tuple[float, float]]:
    """x, y for vertices 0..count-1 joined by `edges` (pairs of vertex numbers).
    (igraph starts from random positions; a start given from Python costs seconds.)"""
    if count == 0:
        return []
    graph = igraph.Graph(n=count, edges=[(a, b) for a, b in edges if a != b])
    graph.simplify()
    layout = graph.layout_fruchterman_reingold(
        niter=ITERATIONS, grid="auto" if count > 1000 else "nogrid"
    )
    coords = layout.coords
    # igraph's unit edge is about 1; spread to the explorer's edge length.
    lengths = [math.dist(coords[a], coords[b]) for a, b in graph.get_edgelist()[:2000]]
    scale = EDGE_LENGTH / (sorted(lengths)[len(lengths) // 2] or 1.0) if lengths else EDGE_LENGTH
    return [(round(x * scale, 1), round(y * scale, 1)) for x, y in coords]
