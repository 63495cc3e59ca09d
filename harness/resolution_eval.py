"""The labelled resolution set (tests/data/resolution_pairs.json) run through the real
resolution and persistence stages, and scored. Used by tests/graph/ingest/test_resolution.py
and bench/resolution.py.

Every pair's first name is ingested, then every pair's second name, in episodes of a
few names each (as extraction hands them over), into one namespace: each name meets
all the others, not only its partner. Then the periodic duplicate-candidate job runs.
A pair counts as
- merged: both names end on one entity (directly, by alias, or merged into it);
- review: a pending duplicate candidate joins their entities;
- apart: neither.
Every automatic merge (audit `auto_merge`) is checked too: one that joins two names
that no same-thing pair links is a wrong merge, whichever pairs the names came from.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kgapp.graph.audit import auto_merge_of
from kgapp.graph.curation.duplicates import generate_candidates
from kgapp.graph.curation.pages import audit_get, audit_page
from kgapp.graph.embeddings import Embedder
from kgapp.graph.export.snapshot import export_graph
from kgapp.graph.ingest.extract import drafts_from
from kgapp.graph.ingest.model import EpisodeInput, EpisodeWork
from kgapp.graph.ingest.pipeline import ingest_context, resolve_and_persist
from kgapp.graph.ingest.prepare import episode_record
from kgapp.graph.llm.client import LLMClient
from kgapp.graph.llm.prompts.extract import ExtractedEntity, Extraction
from kgapp.graph.records import JsonObject, record_key
from kgapp.graph.resolution.canonical import canonical_name, content_hash
from kgapp.graph.store import TenantStore

PAIRS = Path(__file__).resolve().parents[1] / "tests" / "data" / "resolution_pairs.json"
NAMES_PER_EPISODE = 8
AUDITS_AT_MOST = 100_000


def load(kind: str = "pairs") -> list[dict[str, Any]]:
    return list(json.loads(PAIRS.read_text())[kind])


@dataclass
class Outcome:
    pairs: list[dict[str, Any]]
    verdicts: dict[str, str] = field(default_factory=dict)  # pair id -> merged|review|apart
    wrong_auto_merges: list[tuple[str, str]] = field(default_factory=list)

    def wrong_merges(self) -> list[dict[str, Any]]:
        return [p for p in self.pairs if not p["same"] and self.verdicts[p["id"]] == "merged"]

    def by_category(self) -> dict[str, dict[str, float]]:
        table: dict[str, dict[str, float]] = {}
        for category in sorted({p["category"] for p in self.pairs}) + ["all"]:
            chosen = [p for p in self.pairs if category in ("all", p["category"])]
            counts = Counter((p["same"], self.verdicts[p["id"]]) for p in chosen)
            merged_same, merged_diff = counts[(True, "merged")], counts[(False, "merged")]
            same = sum(1 for p in chosen if p["same"])
            precision = (
                merged_same / (merged_same + merged_diff) if merged_same + merged_diff else 1.0
            )
            recall = merged_same / same if same else 0.0
            f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
            table[category] = {
                "pairs": len(chosen),
                "precision": precision,
                "recall": recall,
                "f1": f1,
                "same_in_review": counts[(True, "review")] / same if same else 0.0,
                "same_apart": counts[(True, "apart")],
                "different_in_review": counts[(False, "review")],
            }
        return table


async def ingest_names(
    store: TenantStore, names: list[tuple[str, str]], *, embedder: Embedder, llm: LLMClient | None
) -> None:
    """Names (name, type) through resolution and persistence, a few per episode."""
    ctx = await ingest_context(store, embedder=embedder, llm=llm)
    for start in range(0, len(names), NAMES_PER_EPISODE):
        chunk = names[start : start + NAMES_PER_EPISODE]
        extraction = Extraction(
            entities=[ExtractedEntity(name=n, entity_type=t, summary="") for n, t in chunk],
            facts=[],
        )
        text = extraction.model_dump_json()
        episode = EpisodeInput(content=text, source="json", reference_time=ctx.now, name="names")
        work = EpisodeWork(
            input=episode,
            record=episode_record(episode, content_hash(text)),
            content_hash=content_hash(text),
            extraction=extraction,
        )
        drafts_from(ctx, work, extraction)
        await resolve_and_persist(ctx, work)


async def evaluate(
    store: TenantStore,
    pairs: list[dict[str, Any]],
    *,
    embedder: Embedder,
    llm: LLMClient | None = None,
) -> Outcome:
    firsts = [(p["a"]["name"], p["a"]["type"]) for p in pairs]
    seconds = [(p["b"]["name"], p["b"]["type"]) for p in pairs]
    await ingest_names(store, firsts, embedder=embedder, llm=llm)
    await ingest_names(store, seconds, embedder=embedder, llm=llm)
    await generate_candidates(store)
    outcome = Outcome(pairs=pairs)
    tables = await export_graph(store)
    pending = {
        frozenset((record_key(r["a"]), record_key(r["b"])))
        for r in tables["dedup_candidate"]
        if r["status"] == "pending"
    }
    where = _Where(tables)
    for pair in pairs:
        a, b = where.entity_of(pair["a"]["name"]), where.entity_of(pair["b"]["name"])
        if a == b:
            outcome.verdicts[pair["id"]] = "merged"
        elif frozenset((a, b)) in pending:
            outcome.verdicts[pair["id"]] = "review"
        else:
            outcome.verdicts[pair["id"]] = "apart"
    linked = {
        frozenset((canonical_name(p["a"]["name"]), canonical_name(p["b"]["name"])))
        for p in pairs
        if p["same"]
    }
    for listed in await audit_page(store, action="auto_merge", limit=AUDITS_AT_MOST):
        merge = auto_merge_of(await audit_get(store, listed["id"]))
        names = frozenset((canonical_name(merge["name"]), canonical_name(merge["survivor_name"])))
        if names not in linked:
            outcome.wrong_auto_merges.append((merge["name"], merge["survivor_name"]))
    return outcome


class _Where:
    """Where a name ended, read from the graph's tables (export_graph)."""

    def __init__(self, tables: dict[str, list[JsonObject]]) -> None:
        self.entities = {record_key(e["id"]): e for e in tables["entity"]}
        self.by_name: dict[str, list[JsonObject]] = {}
        for entity in tables["entity"]:
            self.by_name.setdefault(entity["canonical_name"], []).append(entity)
        self.aliases = {a["name"]: record_key(a["entity"]) for a in tables["alias"]}

    def entity_of(self, name: str) -> str:
        """Its entity, or the one it was merged into or aliased to."""
        canonical = canonical_name(name)
        for row in self.by_name.get(canonical, []):
            return record_key(row.get("merged_into") or row["id"])
        aliased = self.aliases.get(canonical)
        if aliased is not None:
            survivor = self.entities[aliased].get("merged_into")
            return record_key(survivor) if survivor is not None else aliased
        raise AssertionError(f"{name!r} is nowhere in the graph")
