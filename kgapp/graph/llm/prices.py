"""What model calls cost: a price table in USD per million input and output tokens.

The defaults are OpenAI's list prices for common models (standard tier, uncached
input); `KG_LLM_PRICES` (JSON, read by the settings) overrides or adds models. A model
the table does not know has no price: its cost is unknown (None), never 0.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

PER_TOKENS = 1_000_000


@dataclass(frozen=True)
class Price:
    """USD per million tokens."""

    input: float
    output: float


# OpenAI list prices (USD / 1M tokens), checked 2025; embeddings have no output tokens.
DEFAULT_PRICES: dict[str, Price] = {
    "gpt-4o": Price(2.50, 10.00),
    "gpt-4o-mini": Price(0.15, 0.60),
    "gpt-4.1": Price(2.00, 8.00),
    "gpt-4.1-mini": Price(0.40, 1.60),
    "gpt-4.1-nano": Price(0.10, 0.40),
    "gpt-5": Price(1.25, 10.00),
    "gpt-5-mini": Price(0.25, 2.00),
    "gpt-5-nano": Price(0.05, 0.40),
    "o3": Price(2.00, 8.00),
    "o3-mini": Price(1.10, 4.40),
    "o4-mini": Price(1.10, 4.40),
    "text-embedding-3-small": Price(0.02, 0.0),
    "text-embedding-3-large": Price(0.13, 0.0),
    "text-embedding-ada-002": Price(0.10, 0.0),
}

PriceTable = Mapping[str, Price]


def parse_prices(text: str) -> dict[str, Price]:
    """The table `text` (JSON: {"model": {"input": usd, "output": usd}, ...}) gives, over
    the defaults. ValueError saying what is wrong, for the settings to report."""
    table = dict(DEFAULT_PRICES)
    if not text.strip():
        return table
    try:
        given = json.loads(text)
    except json.JSONDecodeError as error:
        raise ValueError(f"KG_LLM_PRICES is not valid JSON: {error}") from error
    if not isinstance(given, dict):
        raise ValueError(
            'KG_LLM_PRICES must be a JSON object: {"model": {"input": 0.15, "output": 0.6}}'
        )
    for model, price in given.items():
        table[model] = _price(model, price)
    return table


def _price(model: str, price: Any) -> Price:
    fields = price if isinstance(price, dict) else {}
    values = [fields.get("input"), fields.get("output", 0.0)]
    if not all(isinstance(v, int | float) and not isinstance(v, bool) and v >= 0 for v in values):
        raise ValueError(
            f'KG_LLM_PRICES["{model}"] must be {{"input": <USD per 1M tokens>, "output": <USD'
            f" per 1M tokens>}} with numbers >= 0, got {json.dumps(price)}"
        )
    return Price(float(values[0]), float(values[1]))


def price_of(table: PriceTable, model: str) -> Price | None:
    """The model's price: its own entry, else that of the longest name it extends by a
    dated or versioned suffix ("gpt-4o-mini-2024-07-18" is "gpt-4o-mini"); None if none."""
    if model in table:
        return table[model]
    bases = [name for name in table if model.startswith(name + "-")]
    return table[max(bases, key=len)] if bases else None


def cost_usd(table: PriceTable, model: str, input_tokens: int, output_tokens: int) -> float | None:
    """What the tokens cost at the table's price for `model`; None when it has none."""
    price = price_of(table, model)
    if price is None:
        return None
    return (input_tokens * price.input + output_tokens * price.output) / PER_TOKENS
