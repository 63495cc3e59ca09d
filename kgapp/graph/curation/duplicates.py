"""Possible duplicate entities for a curator to review: pairs generated from the names
(their vectors and their spelling), then merged, rejected (never proposed again) or
deferred. Merging one is kgapp/graph/curation/merge.py."""

from __future__ import annotations

from surrealdb.data.types.record_id import RecordID

from kgapp.graph import queries
from kgapp.graph.audit import AuditEntry, Candidate, CandidateAfter, as_candidate, audit_written
from kgapp.graph.curation.common import CurationRefused, record_of
from kgapp.graph.index import entity_index
from kgapp.graph.index.vectors import neighbours
from kgapp.graph.records import Entity, as_entity, record_key
from kgapp.graph.resolution import names
from kgapp.graph.resolution.canonical import canonical_name
from kgapp.graph.resolution.names import types_compatible
from kgapp.graph.store import TenantStore


async def decide_candidate(
    store: TenantStore, candidate: RecordID, *, status: str, actor: str
) -> AuditEntry:
    """Reject (never proposed again for that pair) or defer a candidate pair."""
    if status not in ("rejected", "deferred", "pending"):
        raise CurationRefused(f"a candidate can be rejected, deferred or pending, not {status!r}")
    row = await candidate_get(store, candidate)
    batch = queries.Batch()
    batch.add(queries.CANDIDATE_DECIDE, id=candidate, status=status, actor=actor)
    batch.add(
        queries.AUDIT_CREATE,
        actor=actor,
        action=f"candidate_{status}",
        target=candidate,
        before=row,
        after=CandidateAfter(status=status),
        reason=None,
    )
    return audit_written(await store.transaction(batch.sql, batch.params))


# Pairs proposed for review: cosine of the name vectors in [EMBEDDING_BAND, 1), or names
# that resemble each other (kgapp/graph/resolution/names.py) among each entity's nearest, of types
# that fit or of one name; never a pair whose names differ in what distinguishes two
# things (a number, a qualifier, a symbol).
EMBEDDING_BAND = 0.70
NEIGHBOURS = 10


async def _entities(store: TenantStore, keys: list[str]) -> dict[str, Entity]:
    """By key, the entities (id, name, entity_type) as the database has them now."""
    found: dict[str, Entity] = {}
    for first in range(0, len(keys), 1000):
        ids = [RecordID("entity", key.partition(":")[2]) for key in keys[first : first + 1000]]
        for row in await store.query_one(queries.ENTITY_HITS, {"ids": ids}) or []:
            found[record_key(row["id"])] = as_entity(dict(row))
    return found


async def generate_candidates(
    store: TenantStore, *, band: float = EMBEDDING_BAND, most: int = 1000
) -> int:
    """Queue pairs of current entities that may be one (never a pair seen before,
    whatever was decided about it); returns how many were queued."""
    keys, vectors = (await entity_index(store, fresh=True)).usable_vectors()
    current = await _entities(store, keys)
    vectors = vectors[[i for i, key in enumerate(keys) if key in current]]
    rows = [current[key] for key in keys if key in current]
    known = {
        frozenset((record_key(r["a"]), record_key(r["b"])))
        for r in await store.query_one(queries.CANDIDATE_PAIRS) or []
    }
    found: dict[frozenset[str], tuple[float, str, RecordID, RecordID]] = {}
    found_rows, cosines = neighbours(vectors, NEIGHBOURS + 1)
    for i, (nearest, scores) in enumerate(zip(found_rows, cosines, strict=True)):
        for j, cosine in zip(nearest.tolist(), scores.tolist(), strict=True):
            a, b = rows[i], rows[j]
            if j <= i or not _may_be_one(a, b):
                continue
            pair = frozenset((record_key(a["id"]), record_key(b["id"])))
            if pair in known or pair in found:
                continue
            evidence = names.compare(a["name"], a["entity_type"], b["name"], b["entity_type"])
            if evidence.verdict == "blocked":
                continue
            if cosine >= band:
                found[pair] = (cosine, "embedding_band", a["id"], b["id"])
            elif evidence.verdict in ("same", "similar"):
                found[pair] = (evidence.score, f"name_{evidence.rule}", a["id"], b["id"])
    best = sorted(found.values(), key=lambda item: -item[0])[:most]
    batch = queries.Batch()
    for score, method, first, second in best:
        batch.add(queries.CANDIDATE_ADD, a=first, b=second, score=round(score, 4), method=method)
    if best:
        await store.transaction(batch.sql, batch.params)
    return len(best)


def _may_be_one(a: Entity, b: Entity) -> bool:
    """Types that fit, or one name: a name has one type per tenant, so two entities of one
    name (written before that held) are one unless a person says otherwise."""
    same_name = canonical_name(a["name"]) == canonical_name(b["name"])
    return same_name or types_compatible(a["entity_type"], b["entity_type"])


async def candidate_get(store: TenantStore, candidate: RecordID) -> Candidate:
    return await record_of(store, candidate, "dedup_candidate", "dedup candidate", as_candidate)


class CandidateListed(Candidate, total=False):
    """A candidate as the review queue lists it (queries.CANDIDATE_LIST): both entities,
    a few of their aliases and current facts."""

    a_entity: Entity
    b_entity: Entity
    a_aliases: list[str]
    b_aliases: list[str]
    a_facts: list[str]
    b_facts: list[str]


async def candidates(
    store: TenantStore, *, status: str = "pending", limit: int = 50, offset: int = 0
) -> list[CandidateListed]:
    rows = await store.query_one(
        queries.CANDIDATE_LIST, {"status": status, "limit": limit, "offset": offset}
    )
    return list(rows or [])
