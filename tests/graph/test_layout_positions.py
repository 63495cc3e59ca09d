"""Server-side positions for large graphs: connected, disconnected and degenerate."""

from __future__ import annotations

import math
import random

from kgapp.graph.drawing import EDGE_LENGTH, positions


def median_edge(coords, edges) -> float:
    lengths = sorted(math.dist(coords[a], coords[b]) for a, b in edges if a != b)
    return lengths[len(lengths) // 2]


def spread(coords) -> tuple[float, float]:
    xs, ys = [x for x, _ in coords], [y for _, y in coords]
    return max(xs) - min(xs), max(ys) - min(ys)


def test_many_small_components_are_packed_close_together() -> None:
    # A functional graph (i -> 13i + 1): hundreds of cycles with trees, plus lone vertices.
    edges = [(i, (13 * i + 1) % 1500) for i in range(1500)]
    coords = positions(1600, edges)  # vertices 1500..1599 have no edge at all
    assert len(coords) == 1600 and len(set(coords)) == 1600
    assert 0.5 * EDGE_LENGTH < median_edge(coords, edges) < 2 * EDGE_LENGTH
    # Packed into a near-square: no component flung far away.
    width, height = spread(coords)
    assert max(width, height) < 40 * math.sqrt(1600) * EDGE_LENGTH / 10, (width, height)
    assert 0.25 < width / height < 4
    # Packed for a wide screen: rows about three times as wide as the stack is tall.
    width, height = spread(positions(1600, edges, aspect=3.0))
    assert 1.5 < width / height < 6, (width, height)


def test_a_dense_component_is_spread_and_keeps_linked_nodes_near() -> None:
    rng = random.Random(5)
    ring = [(i, (i + 1) % 3000) for i in range(3000)]
    chords = [(rng.randrange(3000), rng.randrange(3000)) for _ in range(9000)]
    coords = positions(3000, ring + chords)
    assert len(set(coords)) == 3000
    # Room around nodes: the typical nearest neighbour is further than a node is wide
    # (12 px in the explorer's large-graph style).
    xs = sorted(range(3000), key=lambda v: coords[v])
    nearest = sorted(
        min(math.dist(coords[v], coords[w]) for w in xs[max(0, i - 40) : i + 40] if w != v)
        for i, v in enumerate(xs)
    )
    assert nearest[1500] > 0.15 * EDGE_LENGTH, nearest[1500]
    # Linked nodes sit nearer each other than unlinked ones.
    pairs = [(rng.randrange(3000), rng.randrange(3000)) for _ in range(3000)]
    assert median_edge(coords, ring + chords) < 0.8 * median_edge(coords, pairs)


def test_degenerate_inputs() -> None:
    assert positions(0, []) == []
    assert positions(1, [(0, 0)]) == [(0.0, 0.0)]
    two = positions(2, [(0, 1), (1, 0), (0, 1)])
    assert math.isclose(math.dist(*two), EDGE_LENGTH, rel_tol=0.01)
    lone = positions(3, [])
    assert len(set(lone)) == 3
