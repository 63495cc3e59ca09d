"""SYNAPSE spreading activation over the entity graph (Zeph's design, SA-INV-01..08).

Activation starts at seed entities and flows along visible facts, decaying per hop:
    spread = score x decay x effective_confidence x recency
with lateral inhibition (a node at or above `inhibition` receives nothing more, checked in
both the current and the next map), a clamped sum (never above 1.0), a per-hop cap on
active nodes, and a hard deadline after which whatever has been computed is returned.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import datetime


@dataclass(frozen=True)
class ActivationConfig:
    decay: float = 0.85
    max_hops: int = 3
    threshold: float = 0.1
    inhibition: float = 0.8
    max_active: int = 50
    deadline: float = 0.5  # seconds
    temporal_decay_rate: float = 0.0  # per day; 0 disables recency weighting

    def __post_init__(self) -> None:
        if self.max_hops < 1 or self.decay <= 0 or not self.threshold < self.inhibition:
            raise ValueError("need max_hops >= 1, decay > 0 and threshold < inhibition")


@dataclass(frozen=True)
class Link:
    """A visible fact seen from one of its ends."""

    source: str
    target: str
    confidence: float
    retrieval_count: float
    valid_at: datetime


Neighbours = Callable[[Sequence[str]], Awaitable[Sequence[Link]]]


def effective_confidence(confidence: float, retrieval_count: float) -> float:
    """A-MEM weight evolution, with its mandatory cap at 1.0; a never-retrieved fact
    keeps its confidence unchanged."""
    if retrieval_count <= 0:
        return confidence
    return confidence * min(1.0, 1.0 + 0.2 * math.log(1 + retrieval_count))


def recency(valid_at: datetime, now: datetime, rate: float) -> float:
    age_days = max(0.0, (now - valid_at).total_seconds() / 86400)
    return 1.0 / (1.0 + age_days * rate)


async def spread(
    seeds: dict[str, float], neighbours: Neighbours, config: ActivationConfig, now: datetime
) -> dict[str, float]:
    """Activation per entity, at or above the threshold; partial if the deadline passes."""
    started = time.monotonic()
    # SA-INV-01: seeds are anchors, but a seed below the threshold does not start.
    activation = {k: min(1.0, v) for k, v in seeds.items() if v >= config.threshold}
    for _ in range(config.max_hops):
        active = [k for k, v in activation.items() if v >= config.threshold]
        remaining = config.deadline - (time.monotonic() - started)
        if not active or remaining <= 0:
            break
        try:
            links = await asyncio.wait_for(neighbours(active), remaining)
        except TimeoutError:
            break  # SA-INV-07: return what there is
        following: dict[str, float] = {}
        for link in links:
            for origin, other in ((link.source, link.target), (link.target, link.source)):
                score = activation.get(origin)
                if score is None or score < config.threshold:
                    continue
                # SA-INV-03: inhibition looks at both maps.
                if (
                    activation.get(other, 0.0) >= config.inhibition
                    or following.get(other, 0.0) >= config.inhibition
                ):
                    continue
                amount = (
                    score
                    * config.decay
                    * effective_confidence(link.confidence, link.retrieval_count)
                    * recency(link.valid_at, now, config.temporal_decay_rate)
                )
                following[other] = min(1.0, following.get(other, 0.0) + amount)  # SA-INV-06
        for key, amount in following.items():
            activation[key] = min(1.0, activation.get(key, 0.0) + amount)
        if len(activation) > config.max_active:  # SA-INV-04
            kept = sorted(activation.items(), key=lambda item: -item[1])[: config.max_active]
            activation = dict(kept)
    return {
        k: v for k, v in sorted(activation.items(), key=lambda i: -i[1]) if v >= config.threshold
    }
