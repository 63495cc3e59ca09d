"""What the runner asks of each system under comparison."""

from __future__ import annotations

import abc
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from bench.compare.corpus import Corpus, Episode
from bench.compare.model import Answerer, BenchModel, Embeddings


class Unsupported(Exception):
    """The system has no way to do this (the report says so, with this message)."""


@dataclass(frozen=True)
class SystemEntity:
    name: str
    aliases: tuple[str, ...] = ()  # other names the system keeps for it (merged ones)


@dataclass(frozen=True)
class SystemFact:
    text: str  # as stored (a merged description may hold several gold sentences)
    source: str  # endpoint entity names, as stored
    target: str
    current: bool  # the system holds it true now (not ended, not invalidated, not expired)


class System(abc.ABC):
    name: str

    @staticmethod
    @abc.abstractmethod
    def answerer(corpus: Corpus) -> Answerer:
        """Answers this system's prompts from the gold corpus."""

    @abc.abstractmethod
    async def open(self, workdir: Path, model: BenchModel, embeddings: Embeddings) -> None:
        """Start empty, storing under `workdir`, calling `model.base_url` for chat."""

    @abc.abstractmethod
    async def ingest(self, episode: Episode) -> None:
        """Add one episode (text and reference_time) and return once it is searchable."""

    @abc.abstractmethod
    async def entities(self) -> list[SystemEntity]:
        """Every entity node the system holds now (merged-away ones left out)."""

    @abc.abstractmethod
    async def facts(self) -> list[SystemFact]:
        """Every fact/relation the system stores, current or not."""

    @abc.abstractmethod
    async def search(self, query: str, k: int, at: datetime | None = None) -> list[str]:
        """The texts of the top `k` facts for `query`, best first; with `at`, as the
        world was at that moment (raise Unsupported if the system cannot)."""

    @abc.abstractmethod
    async def context(self, query: str, max_chars: int) -> str:
        """The context the system would hand a model to answer `query`, cut to
        `max_chars`."""

    async def close(self) -> None:
        return None
