"""The demo dataset: Kestrel Analytics, a fictional data consultancy in Leeds, from 2021
to 2025, as documents and conversations written for this product.

People join, move teams and cities, change roles and tools; projects start and end. Two
sources disagree about where Sam Okoro lives (a contradiction); the Project Harrier
kick-off notes of June 2021 arrive after everything up to 2023 (out of order). Look-alike
names are different things (Kestrel Analytics / Kestrel Labs, Sam Okoro / Sam Whitfield)
and one spelling is an alias ("Kestrel Analytics Ltd"). `answer_key.toml` says what a
true graph of it holds.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import cache
from pathlib import Path

from kgapp.graph.records import JsonObject

FILES = Path(__file__).resolve().parent / "files"
ANSWER_KEY = Path(__file__).resolve().parent / "answer_key.toml"


@dataclass(frozen=True)
class DemoFile:
    """One file of the demo, and when its content was written (its reference time; a
    conversation's messages carry their own timestamps)."""

    name: str
    reference_time: datetime

    @property
    def path(self) -> Path:
        return FILES / self.name

    def read(self) -> bytes:
        return self.path.read_bytes()


def _at(year: int, month: int, day: int) -> datetime:
    return datetime(year, month, day, 9, 0, tzinfo=UTC)


# In the order they are ingested: by date, except the kick-off notes, which turn up late.
DEMO_FILES = (
    DemoFile("2021-03-new-starters.md", _at(2021, 3, 22)),
    DemoFile("2021-11-chat-priya-sam.json", _at(2021, 11, 19)),
    DemoFile("2022-04-org-chart.md", _at(2022, 4, 25)),
    DemoFile("2022-09-harrier-final-report.md", _at(2022, 9, 30)),
    DemoFile("2023-01-chat-priya-tom.json", _at(2023, 1, 16)),
    DemoFile("2023-03-leadership-update.md", _at(2023, 3, 10)),
    DemoFile("2021-06-harrier-kickoff.md", _at(2021, 6, 15)),  # out of order
    DemoFile("2024-02-chat-sam-daniel.json", _at(2024, 2, 12)),
    DemoFile("2024-07-office-move.md", _at(2024, 7, 8)),
    DemoFile("2025-01-year-in-review.md", _at(2025, 1, 13)),
)


@cache
def answer_key() -> JsonObject:
    """`answer_key.toml`, read once."""
    with ANSWER_KEY.open("rb") as handle:
        return tomllib.load(handle)
