"""Retention on the real SurrealDB server: the policy, the plan (exactly what the policy
names and what depends on it), the archive (every removed row, read back whole), and a
failed run (the graph as it was)."""

from __future__ import annotations

import gzip
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from surrealdb.data.types.record_id import RecordID

from kgapp.graph import queries
from kgapp.graph.errors import GraphError
from kgapp.graph.records import record_key, to_json
from kgapp.graph.retention import (
    MAX_DAYS,
    ArchiveIncomplete,
    PolicyInvalid,
    RetentionPolicy,
    archive_dir,
    archive_list,
    archive_read,
    retention_apply,
    retention_history,
    retention_plan,
    retention_preview,
)
from kgapp.graph.store import TenantStore

NOW = datetime.now(UTC).replace(microsecond=0)
DROP = RetentionPolicy(mode="drop", facts_ended_days=30, episodes_days=30)
TABLES = (
    "entity",
    "alias",
    "relates_to",
    "retrieval",
    "episode",
    "mentions",
    "has_episode",
    "occurred_after",
    "episode_units",
    "document",
    "job",
    "saga",
    "dedup_candidate",
    "has_member",
    "community",
)


def days_ago(n: float) -> datetime:
    return NOW - timedelta(days=n)


def R(table: str, key: str) -> RecordID:
    return RecordID(table, key)


# --- policy ------------------------------------------------------------------------------


def test_the_default_policy_keeps_everything() -> None:
    policy = RetentionPolicy()
    assert policy.mode == "keep_all" and not policy.drops
    assert policy.cutoffs(NOW) == (None, None)


def test_cutoffs_count_back_from_now() -> None:
    assert DROP.cutoffs(NOW) == (days_ago(30), days_ago(30))
    only_facts = RetentionPolicy(mode="drop", facts_ended_days=7)
    assert only_facts.cutoffs(NOW) == (days_ago(7), None)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"mode": "purge"}, "mode must be one of keep_all, drop"),
        ({"mode": "drop"}, "needs facts_ended_days or episodes_days"),
        ({"mode": "drop", "facts_ended_days": 0}, "between 1 and 36500 days"),
        ({"mode": "drop", "episodes_days": MAX_DAYS + 1}, "between 1 and 36500 days"),
        ({"mode": "drop", "episodes_days": -3}, "between 1 and 36500"),
        ({"mode": "drop", "episodes_days": 2.5}, "whole number of days"),
        ({"mode": "drop", "episodes_days": True}, "whole number of days"),
    ],
)
def test_invalid_policies_say_what_to_change(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(PolicyInvalid, match=message):
        RetentionPolicy(**kwargs)


# --- a graph with something of every kind, on both sides of the cutoffs -------------------


async def aged_graph(migrated_store) -> TenantStore:
    """Old and young records of every kind (ages in days; the policy's cutoff is 30).

    Facts: `gone` ended 40 days ago (dropped); `recent` ended 5 days ago, `current` and
    `orphaned` never ended (kept; both cite the old episode, `orphaned` only it);
    `revision` is the kept revision of `gone`. Episodes: `old` stored 100 days ago and
    `old_chunk` (a chunk of the old document) go; `young` and `back` (stored yesterday
    about 2019) stay. Entities: `ghost` (mentioned only by `old`) is left with nothing;
    `oldco` keeps the revision, `shared` a mention by `young`; `merged` points at `alice`."""
    store = await migrated_store()
    await store.query(
        queries.ENTITIES_BULK_INSERT,
        {
            "rows": [
                {
                    "id": R("entity", k),
                    "name": n,
                    "canonical_name": n.lower(),
                    "entity_type": "Thing",
                    "merged_into": R("entity", "alice") if k == "merged" else None,
                }
                for k, n in (
                    ("alice", "Alice"),
                    ("acme", "Acme"),
                    ("beta", "Beta"),
                    ("oldco", "OldCo"),
                    ("ghost", "Ghost"),
                    ("shared", "Shared"),
                    ("merged", "Alicia"),
                )
            ]
        },
    )
    await store.query(
        """
        CREATE document:olddoc CONTENT {file_name: 'old.md', content_hash: 'd1', status: 'completed',
            created_at: $old, text: 'old document'};
        CREATE document:mixed CONTENT {file_name: 'mixed.md', content_hash: 'd2', status: 'completed',
            created_at: $old};
        CREATE job:olddocjob CONTENT {kind: 'ingest_document', status: 'completed', document: document:olddoc};
        CREATE episode:old CONTENT {content: 'Ghost met Alice at Beta.', content_hash: 'h1',
            created_at: $old, valid_at: $old, saga: saga:talk};
        CREATE episode:old_chunk CONTENT {content: 'chunk', source: 'chunk', content_hash: 'h2',
            created_at: $old, document: document:olddoc, chunk_index: 0};
        CREATE episode:mixed_old CONTENT {content: 'mixed old', source: 'chunk', content_hash: 'h5',
            created_at: $old, document: document:mixed, chunk_index: 0};
        CREATE episode:mixed_young CONTENT {content: 'mixed young', source: 'chunk', content_hash: 'h6',
            created_at: $young, document: document:mixed, chunk_index: 1};
        CREATE episode:young CONTENT {content: 'Shared news.', content_hash: 'h3', created_at: $young};
        CREATE episode:back CONTENT {content: 'Back in 2019.', content_hash: 'h4', created_at: $young,
            valid_at: d'2019-01-01T00:00:00Z'};
        CREATE saga:talk CONTENT {name: 'talk'};
        RELATE saga:talk->has_episode->episode:old;
        RELATE episode:young->occurred_after->episode:old;
        RELATE episode:old->mentions->entity:ghost; RELATE episode:old->mentions->entity:alice;
        RELATE episode:old->mentions->entity:shared; RELATE episode:young->mentions->entity:shared;
        CREATE episode_units:old CONTENT {episode: episode:old, vectors: [[0.5, 0.5]]};
        INSERT INTO alias {name: 'old co', entity_type: 'Thing', entity: entity:oldco};
        INSERT INTO alias {name: 'alicia', entity_type: 'Thing', entity: entity:alice};
        CREATE dedup_candidate:pair CONTENT {a: entity:ghost, b: entity:alice};
        CREATE community:c CONTENT {name: 'c'}; RELATE community:c->has_member->entity:ghost;
        RELATE community:c->has_member->entity:alice;
        CREATE retrieval:gone CONTENT {fact: relates_to:gone, count: 2.0};
    """,
        {"old": days_ago(100), "young": days_ago(1)},
    )
    fact = {"relation": "WORKS_AT", "valid_at": days_ago(400)}
    await store.query(
        queries.FACTS_BULK_INSERT,
        {
            "rows": [
                {
                    **fact,
                    "id": R("relates_to", "gone"),
                    "in": R("entity", "alice"),
                    "out": R("entity", "oldco"),
                    "fact": "Alice works at OldCo.",
                    "created_at": days_ago(200),
                    "expired_at": days_ago(40),
                    "superseded_by": R("relates_to", "current"),
                },
                {
                    **fact,
                    "id": R("relates_to", "revision"),
                    "in": R("entity", "alice"),
                    "out": R("entity", "oldco"),
                    "fact": "Alice worked at OldCo.",
                    "created_at": days_ago(40),
                    "invalid_at": days_ago(50),
                    "revision_of": R("relates_to", "gone"),
                    "superseded_by": R("relates_to", "current"),
                },
                {
                    **fact,
                    "id": R("relates_to", "recent"),
                    "in": R("entity", "alice"),
                    "out": R("entity", "acme"),
                    "fact": "Alice works at Acme.",
                    "created_at": days_ago(90),
                    "expired_at": days_ago(5),
                },
                {
                    **fact,
                    "id": R("relates_to", "current"),
                    "in": R("entity", "alice"),
                    "out": R("entity", "beta"),
                    "fact": "Alice works at Beta.",
                    "created_at": days_ago(100),
                    "episodes": [R("episode", "old"), R("episode", "young")],
                    "supersedes": R("relates_to", "gone"),
                },
                {
                    **fact,
                    "id": R("relates_to", "orphaned"),
                    "in": R("entity", "shared"),
                    "out": R("entity", "beta"),
                    "relation": "KNOWS",
                    "fact": "Shared knows Beta.",
                    "created_at": days_ago(100),
                    "episodes": [R("episode", "old")],
                },
            ]
        },
    )
    return store


async def rows_by_id(store: TenantStore) -> dict[str, dict[str, Any]]:
    results = await store.query(";".join(f"SELECT * FROM {t}" for t in TABLES))
    return {record_key(row["id"]): to_json(row) for rows in results for row in rows or []}


GONE = {
    "relates_to:gone",
    "retrieval:gone",
    "episode:old",
    "episode:old_chunk",
    "episode:mixed_old",
    "episode_units:old",
    "document:olddoc",
    "job:olddocjob",
    "entity:ghost",
}


def keys(ids: list[RecordID]) -> set[str]:
    return {record_key(i) for i in ids}


async def test_the_plan_names_what_the_policy_drops_and_nothing_else(migrated_store) -> None:
    store = await aged_graph(migrated_store)
    plan = await retention_plan(store, DROP, now=NOW)
    assert keys(plan.facts) == {"relates_to:gone"}
    assert keys(plan.episodes) == {"episode:old", "episode:old_chunk", "episode:mixed_old"}
    assert keys(plan.documents) == {"document:olddoc"}  # mixed keeps a young episode
    # OldCo keeps its revision (a current fact), Shared a young mention, Alice everything.
    assert keys(plan.entities) == {"entity:ghost"}
    assert keys(plan.unlinked) == {"relates_to:current", "relates_to:orphaned"}
    # Facts only, or episodes only: the other kind is left alone.
    facts_only = await retention_plan(
        store, RetentionPolicy(mode="drop", facts_ended_days=30), now=NOW
    )
    assert keys(facts_only.facts) == {"relates_to:gone"} and facts_only.episodes == []
    assert keys(facts_only.entities) == set()
    longer = await retention_plan(store, RetentionPolicy(mode="drop", facts_ended_days=3), now=NOW)
    assert keys(longer.facts) == {"relates_to:gone", "relates_to:recent"}
    assert (await retention_plan(store, RetentionPolicy(), now=NOW)).empty


async def test_applying_removes_the_plan_keeps_the_rest_and_archives_every_row(
    migrated_store, tmp_path: Path
) -> None:
    store = await aged_graph(migrated_store)
    before = await rows_by_id(store)
    preview = await retention_preview(store, DROP, now=NOW)
    assert preview["counts"] == {
        "facts": 1,
        "episodes": 3,
        "documents": 1,
        "entities": 1,
        "facts_unlinked": 2,
    }
    assert await rows_by_id(store) == before  # a preview changes nothing
    assert [f["fact"] for f in preview["sample"]["facts"]] == ["Alice works at OldCo."]

    report = await retention_apply(store, DROP, archive_root=tmp_path, actor="owner1", now=NOW)
    after = await rows_by_id(store)
    removed = set(before) - set(after)
    # Edges of removed episodes and entities go with them.
    edges = {
        k
        for k in removed
        if k.split(":")[0]
        in ("mentions", "has_episode", "occurred_after", "alias", "dedup_candidate", "has_member")
    }
    assert removed - edges == GONE
    assert {
        before[k]["in"] if "in" in before[k] else before[k].get("entity", before[k].get("a"))
        for k in edges
    } <= {
        "episode:old",
        "saga:talk",
        "episode:young",
        "entity:oldco",
        "entity:ghost",
        "community:c",
    }
    assert {"entity:shared", "entity:alice", "entity:merged", "entity:oldco"} <= set(after)
    # Kept facts lose only the removed episode and the links to the removed fact.
    assert after["relates_to:current"]["episodes"] == ["episode:young"]
    assert "supersedes" not in after["relates_to:current"]
    assert after["relates_to:orphaned"]["episodes"] == []
    assert "revision_of" not in after["relates_to:revision"]
    assert after["relates_to:recent"] == before["relates_to:recent"]
    changed = {k for k in after if after[k] != before[k]}
    assert changed == {"relates_to:current", "relates_to:orphaned", "relates_to:revision"}

    # The archive holds every removed row, as it was, and what was changed.
    directory = archive_dir(tmp_path, store.namespace)
    assert [f.name for f in archive_list(directory)] == [report.archive]
    manifest, lines = archive_read(directory / report.archive)
    assert manifest["policy"] == DROP.as_dict() and manifest["namespace"] == store.namespace
    archived = {
        line["row"]["id"]: line for line in lines if line["kind"] not in ("provenance", "link")
    }
    assert set(archived) == removed
    for key in removed:
        row = {
            k: v for k, v in before[key].items() if not k.endswith("embedding") and k != "vectors"
        }
        assert {k: v for k, v in archived[key]["row"].items() if k != "vectors_omitted"} == row
    provenance = {
        line["row"]["id"]: line["row"]["episodes"] for line in lines if line["kind"] == "provenance"
    }
    assert provenance == {
        "relates_to:current": ["episode:old"],
        "relates_to:orphaned": ["episode:old"],
    }
    links = {line["row"]["id"] for line in lines if line["kind"] == "link"}
    assert links == {"relates_to:current", "relates_to:revision"}
    assert report.removed["fact"] == 1 and report.removed["mention"] == 3

    # One audit entry names the counts and the archive; a second run finds nothing.
    history = await retention_history(store)
    assert [h["action"] for h in history] == ["retention_run"]
    assert history[0]["after"]["archive"] == report.archive
    assert history[0]["after"]["counts"]["episodes"] == 3 and history[0]["actor"] == "owner1"
    again = await retention_apply(store, DROP, archive_root=tmp_path, actor="owner1", now=NOW)
    assert again.archive is None and again.counts["facts"] == 0
    assert len(archive_list(directory)) == 1


def test_a_cut_archive_is_refused(tmp_path: Path) -> None:
    from kgapp.graph.retention.archive import archive_commit, archive_write

    rows = {"fact": [{"id": "relates_to:a"}, {"id": "relates_to:b"}]}
    path = archive_commit(archive_write(tmp_path, {"namespace": "t_x"}, rows, now=NOW))
    manifest, lines = archive_read(path)
    assert manifest["counts"]["fact"] == 2 and len(lines) == 2
    with gzip.open(path, "rt") as source:
        text = source.read().splitlines()
    for cut in (text[:-1], text[:2] + text[3:], text[1:]):
        with gzip.open(path, "wt") as out:
            out.write("\n".join(cut) + "\n")
        with pytest.raises(ArchiveIncomplete):
            archive_read(path)
    path.write_bytes(b"not gzip")
    with pytest.raises(ArchiveIncomplete):
        archive_read(path)


class _Interloper(TenantStore):
    """A store whose transaction meets a concurrent writer: between the archive and the
    delete, a new episode mentions an entity about to go."""

    def __init__(self, store: TenantStore) -> None:
        super().__init__(store._pool)

    async def transaction(self, sql: str, params: dict[str, Any] | None = None) -> list[Any]:
        await self.query(
            "CREATE episode:late CONTENT {content: 'Ghost again', content_hash: 'x'};"
            "RELATE episode:late->mentions->entity:ghost;"
        )
        return await super().transaction(sql, params)


async def test_a_run_that_fails_leaves_the_graph_and_no_archive(
    migrated_store, tmp_path: Path
) -> None:
    store = await aged_graph(migrated_store)
    before = await rows_by_id(store)
    # The archive cannot be written: nothing is deleted.
    blocked = tmp_path / "file"
    blocked.write_text("a file where the archive folder should be")
    with pytest.raises(OSError):
        await retention_apply(store, DROP, archive_root=blocked, actor="o", now=NOW)
    assert await rows_by_id(store) == before
    # The graph changes between archive and delete: the transaction refuses, whole.
    with pytest.raises(GraphError, match="changed while retention was archiving"):
        await retention_apply(_Interloper(store), DROP, archive_root=tmp_path, actor="o", now=NOW)
    after = await rows_by_id(store)
    late = {k for k in after if k not in before}
    assert {k.split(":")[0] for k in late} == {"episode", "mentions"}
    assert {k: v for k, v in after.items() if k not in late} == before
    assert list(archive_dir(tmp_path, store.namespace).iterdir()) == []
    assert await retention_history(store) == []
    with pytest.raises(PolicyInvalid, match="keeps everything"):
        await retention_apply(store, RetentionPolicy(), archive_root=tmp_path, actor="o")
