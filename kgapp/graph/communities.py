"""Communities: Leiden over the graph of current facts, with names and summaries that
survive rebuilds of an unchanged graph.

- The projection comes from the process's fact index (`search.index`): entities are
  vertices, an edge's weight is the number of visible facts between two entities.
- Leiden (`leidenalg` on `igraph`), modularity (RB configuration model with a
  resolution) or CPM, fixed seed; communities smaller than `min_size` are dropped.
- A community's id derives from its fingerprint (member ids and its inner fact ids,
  with the level and moment): an unchanged community keeps its record, name and
  summary, with no model call; a changed one is a new record, described by the model
  (map-reduce over chunks of facts when large) or, without one, from its top entities.
- One transaction writes the new set and removes the old one, for the current graph or
  for a past `as_of` (kept apart from the current set).
- Detection follows ingestion, once per burst of ingest jobs: `communities_follow`.
"""

from __future__ import annotations

import asyncio
import hashlib
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Literal

import igraph
import leidenalg
import numpy as np
from surrealdb.data.types.record_id import RecordID

from kgapp.graph import queries, records
from kgapp.graph.index import FactIndex, fact_index
from kgapp.graph.llm.client import LLMClient
from kgapp.graph.llm.prompts import community as prompt
from kgapp.graph.records import Community, Job, as_community, record_key
from kgapp.graph.store import TenantStore

SUMMARY_CONCURRENCY = 4
MAX_FACTS_SUMMARIZED = 5 * prompt.MAX_FACTS_PER_CALL


@dataclass(frozen=True)
class Detection:
    method: Literal["modularity", "cpm"] = "modularity"
    resolutions: tuple[float, ...] = (1.0,)  # one level per resolution, finest first
    seed: int = 42
    min_size: int = 2


@dataclass
class Projection:
    entities: list[str]  # vertex -> entity key
    pairs: np.ndarray  # (m, 2) vertex pairs, i < j
    weights: np.ndarray  # facts per pair
    fact_ends: np.ndarray  # (f, 2) vertices of each visible fact
    fact_keys: list[str]


@dataclass
class Found:
    level: int
    members: list[str]
    facts: list[str]
    fingerprint: str = ""


@dataclass
class Report:
    communities: int = 0
    unchanged: int = 0
    described: int = 0
    llm_calls: int = 0
    modularity: list[float] = field(default_factory=list)
    seconds: dict[str, float] = field(default_factory=dict)


async def project(store: TenantStore, as_of: datetime, known_at: datetime) -> Projection:
    """The entity graph of the facts visible at `as_of` as known at `known_at`."""
    return project_index(await fact_index(store, fresh=True), as_of, known_at)


def project_index(index: FactIndex, as_of: datetime, known_at: datetime) -> Projection:
    source, target, fact_keys, names = index.projection(index.visible(as_of, known_at))
    keep = source != target
    source, target = source[keep], target[keep]
    fact_keys = [k for k, kept in zip(fact_keys, keep, strict=True) if kept]
    codes, vertices = np.unique(np.concatenate([source, target]), return_inverse=True)
    ends = vertices.reshape(2, -1).T if len(vertices) else np.zeros((0, 2), dtype=np.int64)
    ordered = np.sort(ends, axis=1)
    pairs, weights = (
        np.unique(ordered, axis=0, return_counts=True)
        if len(ordered)
        else (np.zeros((0, 2), dtype=np.int64), np.zeros(0, dtype=np.int64))
    )
    return Projection([names[c] for c in codes], pairs, weights, ends, fact_keys)


def detect(projection: Projection, config: Detection) -> tuple[list[Found], list[float]]:
    """Leiden at each resolution; communities of at least `min_size` members."""
    graph = igraph.Graph(n=len(projection.entities), edges=projection.pairs.tolist())
    graph.es["weight"] = projection.weights.astype(float).tolist()
    found: list[Found] = []
    scores: list[float] = []
    for level, resolution in enumerate(config.resolutions):
        kind = (
            leidenalg.CPMVertexPartition
            if config.method == "cpm"
            else leidenalg.RBConfigurationVertexPartition
        )
        partition = leidenalg.find_partition(
            graph, kind, weights="weight", resolution_parameter=resolution, seed=config.seed
        )
        membership = np.asarray(partition.membership)
        scores.append(float(graph.modularity(membership.tolist(), weights="weight")))
        facts_of: dict[int, list[str]] = {}
        same = membership[projection.fact_ends[:, 0]] == membership[projection.fact_ends[:, 1]]
        for row in np.flatnonzero(same):
            group = int(membership[projection.fact_ends[row, 0]])
            facts_of.setdefault(group, []).append(projection.fact_keys[row])
        for group, size in Counter(membership.tolist()).items():
            if size < config.min_size:
                continue
            members = [projection.entities[v] for v in np.flatnonzero(membership == group)]
            found.append(Found(level, sorted(members), sorted(facts_of.get(group, []))))
    return found, scores


def fingerprint(found: Found, as_of: datetime | None) -> str:
    text = "\n".join(
        [
            f"level {found.level}",
            f"as of {as_of.isoformat() if as_of else 'now'}",
            *found.members,
            "|",
            *found.facts,
        ]
    )
    return hashlib.sha256(text.encode()).hexdigest()[:24]


async def rebuild(
    store: TenantStore,
    llm: LLMClient | None,
    config: Detection = Detection(),
    *,
    as_of: datetime | None = None,
) -> Report:
    """Detect the communities of the current graph (or of the graph as it was at
    `as_of`) and replace the stored set of that moment with them."""
    report = Report()
    found = await _detect(store, config, as_of, report)
    started = time.perf_counter()
    for community in found:
        community.fingerprint = fingerprint(community, as_of)
    existing: dict[str, Community] = {
        record_key(row["id"]): row
        for row in await store.query_one(queries.COMMUNITIES_OF_MOMENT, {"as_of": as_of}) or []
    }
    fresh = [c for c in found if _community_id(c) not in existing]
    report.unchanged = len(found) - len(fresh)
    described = await _describe_all(store, llm, fresh, report)
    report.seconds["summaries"] = time.perf_counter() - started
    started = time.perf_counter()
    batch = _replacement(existing, found, fresh, described, config, as_of)
    if len(batch):
        await store.transaction(batch.sql, batch.params)
    report.seconds["write"] = time.perf_counter() - started
    report.communities = len(found)
    report.described = len(fresh)
    return report


async def _detect(
    store: TenantStore, config: Detection, as_of: datetime | None, report: Report
) -> list[Found]:
    """The projection of the graph at `as_of` (now when None), and Leiden over it."""
    started = time.perf_counter()
    now = datetime.now(UTC)
    projection = await project(store, as_of or now, now)
    report.seconds["projection"] = time.perf_counter() - started
    started = time.perf_counter()
    found, report.modularity = detect(projection, config)
    report.seconds["detection"] = time.perf_counter() - started
    return found


def _replacement(
    existing: dict[str, Community],
    found: list[Found],
    fresh: list[Found],
    described: dict[str, tuple[str, str]],
    config: Detection,
    as_of: datetime | None,
) -> queries.Batch:
    """The statements that replace the stored set of the moment with `found`: the
    communities no longer found removed, the fresh ones created with their members."""
    batch = queries.Batch()
    wanted = {_community_id(c) for c in found}
    for key in existing:
        if key not in wanted:
            batch.add(queries.COMMUNITY_REMOVE, id=RecordID("community", key.split(":", 1)[1]))
    for community in fresh:
        _add_community(batch, community, described[community.fingerprint], config, as_of)
    return batch


def _add_community(
    batch: queries.Batch,
    community: Found,
    described: tuple[str, str],
    config: Detection,
    as_of: datetime | None,
) -> None:
    name, summary = described
    record = RecordID("community", _community_id(community).split(":", 1)[1])
    batch.add(
        queries.COMMUNITY_CREATE,
        id=record,
        row={
            "name": name,
            "summary": summary,
            "member_count": len(community.members),
            "fingerprint": community.fingerprint,
            "level": community.level,
            "resolution": config.resolutions[community.level],
            "as_of": as_of,
            "fact_count": len(community.facts),
        },
    )
    batch.add(
        queries.MEMBERSHIPS_INSERT,
        rows=[
            {
                "id": RecordID("has_member", f"{community.fingerprint[:16]}_{m.split(':', 1)[1]}"),
                "in": record,
                "out": RecordID("entity", m.split(":", 1)[1]),
            }
            for m in community.members
        ],
    )


def _community_id(found: Found) -> str:
    return f"community:c{found.fingerprint}"


async def _describe_all(
    store: TenantStore, llm: LLMClient | None, fresh: list[Found], report: Report
) -> dict[str, tuple[str, str]]:
    if not fresh:
        return {}
    limit = asyncio.Semaphore(SUMMARY_CONCURRENCY)

    async def one(community: Found) -> tuple[str, tuple[str, str]]:
        ids = [RecordID("entity", m.partition(":")[2]) for m in community.members]
        members = sorted(
            await store.query_one(queries.ENTITY_HITS, {"ids": ids}) or [],
            key=lambda row: (-int(row.get("degree") or 0), str(row.get("name"))),
        )
        names = [str(m["name"]) for m in members]
        if llm is None:  # the plain summary quotes three facts
            quoted = await _fact_texts(store, community.facts[:3])
            return community.fingerprint, _plain(names, quoted)
        facts = await _fact_texts(store, community.facts[:MAX_FACTS_SUMMARIZED])
        async with limit:
            return community.fingerprint, await _summarize(llm, names, facts, report)

    return dict(await asyncio.gather(*(one(c) for c in fresh)))


def _plain(names: list[str], facts: list[str]) -> tuple[str, str]:
    """Without a model: named after its best-connected members, summed up by its facts."""
    name = ", ".join(names[:3]) + (" and others" if len(names) > 3 else "")
    around = ", ".join(names[:5])
    summary = f"{len(names)} entities around {around}."
    if facts:
        summary += " " + " ".join(facts[:3])
    return name[:120], summary[:1000]


async def _summarize(
    llm: LLMClient, names: list[str], facts: list[str], report: Report
) -> tuple[str, str]:
    partial: list[str] = []
    chunk = prompt.MAX_FACTS_PER_CALL
    if len(facts) > chunk:  # map over chunks, then reduce
        for start in range(0, len(facts), chunk):
            part = await _call(llm, names, facts[start : start + chunk], [], report)
            partial.append(part.summary)
        facts = []
    answer = await _call(llm, names, facts, partial, report)
    return answer.name.strip()[:120] or ", ".join(names[:3]), answer.summary.strip()[:2000]


async def _call(
    llm: LLMClient, names: list[str], facts: list[str], partial: list[str], report: Report
) -> prompt.CommunitySummary:
    report.llm_calls += 1
    return await llm.structured(
        task=prompt.TASK,
        schema=prompt.CommunitySummary,
        system=prompt.SYSTEM,
        user=prompt.user_prompt(names, facts, partial),
    )


async def _fact_texts(store: TenantStore, keys: list[str]) -> list[str]:
    if not keys:
        return []
    ids = [RecordID("relates_to", key.split(":", 1)[1]) for key in keys]
    rows = await store.query_one(queries.FACT_TEXTS, {"ids": ids}) or []
    return [str(text) for text in rows]


# --- incremental assignment and reads --------------------------------------------------


def join_neighbours(batch: queries.Batch, entities: Sequence[RecordID]) -> int:
    """Add to `batch` (the transaction that writes them) one statement for each of these
    new entities: it joins the current community most common among its neighbours (no
    rebuild), and answers True if it did. Returns how many statements it added, whose
    answers are the batch's last (`joined`): add them last."""
    for entity in entities:
        batch.add(queries.COMMUNITY_ASSIGN, entity=entity)
    return len(entities)


def joined(results: Sequence[object], statements: int) -> int:
    """How many of the transaction's last `statements` answers (`join_neighbours`), those
    before its COMMIT's, say joined."""
    end = len(results) - 1
    return sum(1 for answer in results[end - statements : end] if answer is True)


async def communities_list(
    store: TenantStore, *, as_of: datetime | None = None, limit: int = 100
) -> list[Community]:
    rows = await store.query_one(queries.COMMUNITIES_LIST, {"as_of": as_of, "limit": limit})
    return [as_community(row) for row in rows or []]


async def community_get(store: TenantStore, community: RecordID) -> Community:
    row, members = await store.query(queries.COMMUNITY_GET, {"id": community})
    if community.table_name != "community":
        row = None
    return as_community({**records.found(row, "community", community), "members": members or []})


async def rebuild_job(
    store: TenantStore,
    job: RecordID,
    llm: LLMClient | None,
    config: Detection = Detection(),
    *,
    as_of: datetime | None = None,
) -> Job:
    """`rebuild` as a job record: counts and timings land on the job."""
    from kgapp.graph import jobs

    async def work(store: TenantStore) -> jobs.JobReport:
        report = await rebuild(store, llm, config, as_of=as_of)
        counts = {
            "communities": report.communities,
            "unchanged": report.unchanged,
            "described": report.described,
            "llm_calls": report.llm_calls,
        }
        timings = {k: round(v * 1000, 3) for k, v in report.seconds.items()}
        usage = llm.usage.rows() if llm is not None else []
        return jobs.JobReport(counts=counts, timings=timings, usage=usage)

    return await jobs.job_run(store, job, work)


async def rebuild_due(store: TenantStore, every: int) -> bool:
    """Whether `every` episodes came in since detection was last asked for (whatever it
    found) and none is queued or running: one round trip, run after each ingestion."""
    due = await store.query_one(queries.COMMUNITIES_DUE) or {}
    return int(due.get("episodes", 0)) >= every and int(due.get("active", 0)) == 0
