"""What a retention policy would remove now, read in one query.

Only the policy's own two kinds are chosen (ended facts, old episodes); everything else
in the plan depends on them:
- the provenance of an old episode: its mentions, saga and order links, passage
  vectors; the facts it supported stay, losing only that episode from `episodes`;
- its document, once every episode of the document goes (and the jobs that ingested it);
- a dropped fact's retrieval count, and the supersession links other facts keep to it;
- an entity left with no fact and no mention at all (with its aliases, review pairs and
  community memberships); an entity anything still refers to stays, and so does a
  merged name and its survivor.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime

from surrealdb.data.types.record_id import RecordID

from kgapp.graph import queries
from kgapp.graph.retention.policy import RetentionPolicy
from kgapp.graph.store import TenantStore


@dataclass(frozen=True)
class RetentionPlan:
    policy: RetentionPolicy
    now: datetime
    facts_cutoff: datetime | None
    episodes_cutoff: datetime | None
    facts: list[RecordID] = field(default_factory=list)
    episodes: list[RecordID] = field(default_factory=list)
    documents: list[RecordID] = field(default_factory=list)
    entities: list[RecordID] = field(default_factory=list)
    unlinked: list[RecordID] = field(default_factory=list)  # facts kept, provenance cut

    @property
    def empty(self) -> bool:
        return not (self.facts or self.episodes or self.documents or self.entities)

    def counts(self) -> dict[str, int]:
        return {
            "facts": len(self.facts),
            "episodes": len(self.episodes),
            "documents": len(self.documents),
            "entities": len(self.entities),
            "facts_unlinked": len(self.unlinked),
        }

    def params(self) -> dict[str, datetime | list[RecordID] | None]:
        """The plan as the query parameters of the archive and delete statements."""
        return {
            "facts_cutoff": self.facts_cutoff,
            "episodes_cutoff": self.episodes_cutoff,
            "facts": self.facts,
            "episodes": self.episodes,
            "documents": self.documents,
            "entities": self.entities,
            "unlinked": self.unlinked,
        }

    def cutoffs(self) -> dict[str, datetime | None]:
        return {"facts_ended_before": self.facts_cutoff, "episodes_before": self.episodes_cutoff}


async def retention_plan(
    store: TenantStore, policy: RetentionPolicy, *, now: datetime | None = None
) -> RetentionPlan:
    """What applying `policy` at `now` (default: this moment) would remove."""
    now = (now or datetime.now(UTC)).astimezone(UTC)
    facts_cutoff, episodes_cutoff = policy.cutoffs(now)
    empty = RetentionPlan(policy, now, facts_cutoff, episodes_cutoff)
    if facts_cutoff is None and episodes_cutoff is None:
        return empty
    results = await store.query(
        queries.RETENTION_PLAN,
        {"facts_cutoff": facts_cutoff, "episodes_cutoff": episodes_cutoff},
    )
    facts, episodes, documents, entities, unlinked = (list(r or []) for r in results[-5:])
    return RetentionPlan(
        policy,
        now,
        facts_cutoff,
        episodes_cutoff,
        facts=facts,
        episodes=episodes,
        documents=documents,
        entities=entities,
        unlinked=unlinked,
    )
