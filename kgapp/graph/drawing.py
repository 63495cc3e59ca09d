"""Positions for drawing a large graph: Fruchterman-Reingold in igraph (C, grid-based
above a thousand vertices), a few hundred milliseconds for 5,000 nodes where the
browser's force layout takes seconds. The explorer asks for it when it lays out more
than a thousand entities at once. The same graph is drawn the same way each time:
igraph's random starts come from a generator seeded anew for every drawing."""

from __future__ import annotations

import math
import random
import threading
from collections.abc import Sequence

import igraph

EDGE_LENGTH = 90.0  # pixels between linked nodes, as the explorer's own layout
ITERATIONS = 300
ROOM = 0.75 * EDGE_LENGTH  # side of the square of drawing each node gets, at the least
SEED = 1  # igraph's generator is process-wide: set for one drawing at a time
_RANDOM = threading.Lock()


def positions(
    count: int, edges: Sequence[tuple[int, int]], aspect: float = 1.0
) -> list[tuple[float, float]]:
    """x, y for vertices 0..count-1 joined by `edges` (pairs of vertex numbers).

    Each connected component is laid out on its own and scaled to the explorer's edge
    length, then the components are packed in rows, largest first: a force layout of
    the whole would push small components (and lone vertices) far off. The rows are made
    about `aspect` (width / height of the screen) times as wide as tall. (igraph starts
    from random positions; a start given from Python costs seconds.)"""
    if count == 0:
        return []
    graph = igraph.Graph(n=count, edges=list(edges))
    graph.simplify()  # drops loops and repeated edges
    parts = sorted(graph.connected_components(), key=len, reverse=True)  # members ascending
    with _RANDOM:
        igraph.set_random_number_generator(random.Random(SEED))
        try:
            drawings = [_component(graph, members) for members in parts]
        finally:
            igraph.set_random_number_generator(random)
    coords: list[tuple[float, float]] = [(0.0, 0.0)] * count
    for members, (xs, ys) in zip(parts, _pack(drawings, aspect), strict=True):
        for index, vertex in enumerate(members):
            coords[vertex] = (round(xs[index], 1), round(ys[index], 1))
    return coords


def _component(graph: igraph.Graph, members: list[int]) -> list[tuple[float, float]]:
    """Positions of one component, from (0, 0), its median edge EDGE_LENGTH long."""
    if len(members) == 1:
        return [(0.0, 0.0)]
    sub = graph.induced_subgraph(members) if len(members) < graph.vcount() else graph
    layout = sub.layout_fruchterman_reingold(
        niter=ITERATIONS, grid="auto" if len(members) > 1000 else "nogrid"
    )
    coords = layout.coords
    lengths = sorted(math.dist(coords[a], coords[b]) for a, b in sub.get_edgelist()[:2000])
    median = lengths[len(lengths) // 2] if lengths else 0.0
    left, right = min(x for x, _ in coords), max(x for x, _ in coords)
    top, bottom = min(y for _, y in coords), max(y for _, y in coords)
    # Median edge at EDGE_LENGTH; but a dense graph, whose edges cross its whole drawing,
    # is spread further, to about ROOM x ROOM of drawing per node.
    side = max(right - left, bottom - top, 1e-9)
    area = max(right - left, side / 10) * max(bottom - top, side / 10)
    spacing = math.sqrt(area / len(coords))
    scale = EDGE_LENGTH / median if median > 1e-9 else EDGE_LENGTH
    if len(coords) >= 20:  # (a few nodes have room enough)
        scale = max(scale, ROOM / spacing)
    return [((x - left) * scale, (y - top) * scale) for x, y in coords]


def _pack(
    drawings: list[list[tuple[float, float]]], aspect: float
) -> list[tuple[list[float], list[float]]]:
    """Place drawings (largest first) left to right in rows, EDGE_LENGTH apart, the rows
    as wide as a rectangle of their total area with that aspect; returns each one's
    moved xs and ys."""
    sizes = [
        (max(x for x, _ in d) + EDGE_LENGTH, max(y for _, y in d) + EDGE_LENGTH) for d in drawings
    ]
    row_width = max(max(w for w, _ in sizes), math.sqrt(aspect * sum(w * h for w, h in sizes)))
    placed = []
    x = y = row_height = 0.0
    for drawing, (width, height) in zip(drawings, sizes, strict=True):
        if x > 0 and x + width > row_width:
            x, y, row_height = 0.0, y + row_height, 0.0
        placed.append(([x + px for px, _ in drawing], [y + py for _, py in drawing]))
        x += width
        row_height = max(row_height, height)
    return placed
