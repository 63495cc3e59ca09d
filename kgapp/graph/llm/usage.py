"""What a job's model calls used: calls and tokens per model, counted from the `usage`
each API response reports, and what they cost at the price table's rates.

One `LLMUsage` belongs to one job run (the client made for it holds it). A call is a
request the API answered: retries of a failed request are counted apart (`retries`),
a repair attempt is a second call, and an answer from the cache (`llm/cache.py`) is no
call at all (`cache_hits`): nothing was sent, nothing billed. Embeddings requested
through the API count as calls with input tokens only.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TypedDict

from kgapp.graph.llm.prices import DEFAULT_PRICES, PriceTable, cost_usd


class UsageRow(TypedDict):
    """What one model's calls of a job used, as the job's `usage` stores it."""

    model: str
    calls: int
    input_tokens: int
    output_tokens: int
    cost_usd: float | None  # None: the price table lacks the model


@dataclass
class ModelUsage:
    calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0


@dataclass
class LLMUsage:
    """Counters of one job, mutated by every client that shares this object; `prices`
    gives each model's cost (the defaults unless the settings say otherwise)."""

    cache_hits: int = 0
    retries: int = 0
    models: dict[str, ModelUsage] = field(default_factory=dict)
    prices: PriceTable = field(default_factory=lambda: DEFAULT_PRICES, repr=False)

    @property
    def calls(self) -> int:
        return sum(tally.calls for tally in self.models.values())

    @property
    def prompt_tokens(self) -> int:
        return sum(tally.input_tokens for tally in self.models.values())

    @property
    def completion_tokens(self) -> int:
        return sum(tally.output_tokens for tally in self.models.values())

    def record(self, model: str, input_tokens: int, output_tokens: int = 0) -> None:
        """One answered request to `model` and the tokens its response reported."""
        tally = self.models.setdefault(model, ModelUsage())
        tally.calls += 1
        tally.input_tokens += input_tokens
        tally.output_tokens += output_tokens

    def as_dict(self) -> dict[str, int]:
        """The totals, as a job's `llm_*` counts."""
        return {
            "calls": self.calls,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "cache_hits": self.cache_hits,
            "retries": self.retries,
        }

    def rows(self) -> list[UsageRow]:
        """One row per model, as a job's `usage` stores it: calls, input and output
        tokens, and the cost in USD (None for a model the price table lacks)."""
        return [
            {
                "model": model,
                "calls": tally.calls,
                "input_tokens": tally.input_tokens,
                "output_tokens": tally.output_tokens,
                "cost_usd": cost_usd(self.prices, model, tally.input_tokens, tally.output_tokens),
            }
            for model, tally in sorted(self.models.items())
        ]
