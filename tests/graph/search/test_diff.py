"""The diff between two moments: facts added, ended and changed on the valid axis (as
known now) and on the known axis (what the graph believed then), with supersession,
retraction, revision and out-of-order arrival; and its CSV."""

from __future__ import annotations

import csv
import io
from datetime import UTC, datetime, timedelta

import pytest
from surrealdb.data.types.record_id import RecordID

from kgapp.graph import queries
from kgapp.graph.records import record_key
from kgapp.graph.search.diff import (
    CSV_COLUMNS,
    DiffRequest,
    DiffResult,
    csv_cell,
    diff_csv,
    graph_diff,
)
from tests.graph.search.conftest import at

# System times at which the graph learned things (in the past, so "now" is after all).
K1, K2, K3 = at(2025, 1, 1), at(2025, 2, 1), at(2025, 3, 1)
DAY = timedelta(days=1)


def E(key: str) -> RecordID:
    return RecordID("entity", key)


def F(key: str) -> RecordID:
    return RecordID("relates_to", key)


def fact(key, source, relation, target, text, valid, created, **more):
    return {
        "id": F(key),
        "in": E(source),
        "out": E(target),
        "relation": relation,
        "fact": text,
        "valid_at": valid,
        "created_at": created,
        **more,
    }


async def story(store, extra=()) -> None:
    """Alice moved from Acme to Beta (learned at K2: the Acme fact retired, its revision
    closed); Bob's job was corrected at K2; Bob's home was retracted at K3; at K3 the graph
    learned where Alice lived years before (out of order); Carol lived in Paris twice."""
    await store.query(
        queries.ENTITIES_BULK_INSERT,
        {
            "rows": [
                {"id": E(k), "name": n, "canonical_name": n.lower(), "entity_type": t}
                for k, n, t in (
                    ("alice", "Alice", "Person"),
                    ("bob", "Bob", "Person"),
                    ("carol", "Carol", "Person"),
                    ("acme", "Acme Corp", "Organization"),
                    ("beta", "Beta Inc", "Organization"),
                    ("paris", "Paris", "Location"),
                    ("berlin", "Berlin", "Location"),
                )
            ]
        },
    )
    rows = [
        fact(
            "acme",
            "alice",
            "WORKS_AT",
            "acme",
            "Alice works at Acme.",
            at(2024, 1, 15),
            K1,
            expired_at=K2,
            superseded_by=F("beta"),
        ),
        fact(
            "acme_r",
            "alice",
            "WORKS_AT",
            "acme",
            "Alice works at Acme.",
            at(2024, 1, 15),
            K2,
            invalid_at=at(2024, 2, 1),
            revision_of=F("acme"),
            superseded_by=F("beta"),
        ),
        fact(
            "beta",
            "alice",
            "WORKS_AT",
            "beta",
            "Alice works at Beta.",
            at(2024, 2, 1),
            K2,
            supersedes=F("acme_r"),
        ),
        fact(
            "bob_job",
            "bob",
            "WORKS_AT",
            "acme",
            "Bob is an intern at Acme.",
            at(2023, 1, 1),
            K1,
            expired_at=K2,
            superseded_by=F("bob_job_c"),
        ),
        fact(
            "bob_job_c",
            "bob",
            "WORKS_AT",
            "acme",
            "Bob is an engineer at Acme.",
            at(2023, 1, 1),
            K2,
            supersedes=F("bob_job"),
        ),
        fact(
            "bob_home",
            "bob",
            "LIVES_IN",
            "paris",
            "Bob lives in Paris.",
            at(2023, 6, 1),
            K1,
            expired_at=K3,
        ),
        fact(
            "berlin",
            "alice",
            "LIVES_IN",
            "berlin",
            "Alice lived in Berlin.",
            at(2020, 1, 1),
            K3,
            invalid_at=at(2023, 1, 1),
        ),
        fact(
            "carol1",
            "carol",
            "LIVES_IN",
            "paris",
            "Carol lives in Paris.",
            at(2019, 1, 1),
            K1,
            invalid_at=at(2021, 1, 1),
        ),
        fact(
            "carol2",
            "carol",
            "LIVES_IN",
            "paris",
            "Carol lives in Paris again.",
            at(2022, 1, 1),
            K1,
        ),
        *extra,
    ]
    for start in range(0, len(rows), 150):  # small writes: the machine may be busy
        await store.query(queries.FACTS_BULK_INSERT, {"rows": rows[start : start + 150]})


def keys(facts) -> list[str]:
    return [record_key(f["id"]).removeprefix("relates_to:") for f in facts]


def changes(result: DiffResult) -> dict[str, tuple[str, tuple[str, ...]]]:
    """after's key -> (before's key, what differs)."""
    return {keys([c.after])[0]: (keys([c.before])[0], c.fields) for c in result.changed}


async def diff(store, start, end, axis, limit=500) -> DiffResult:
    return await graph_diff(store, DiffRequest(from_=start, to=end, axis=axis, limit=limit))


async def test_known_axis_shows_what_the_graph_learned_and_revised(migrated_store) -> None:
    store = await migrated_store()
    await story(store)
    learned = await diff(store, K1 + DAY, K2 + DAY, "known")
    assert keys(learned.added) == ["beta"]
    assert learned.ended == []
    # The retired Acme fact and its revision (validity closed); Bob's corrected statement.
    assert changes(learned) == {
        "acme_r": ("acme", ("invalid_at",)),
        "bob_job_c": ("bob_job", ("fact",)),
    }
    assert learned.totals == {"added": 1, "ended": 0, "changed": 2} and not learned.truncated
    bob, acme = learned.changed  # earliest valid first
    assert (bob.before["fact"], bob.after["fact"]) == (
        "Bob is an intern at Acme.",
        "Bob is an engineer at Acme.",
    )
    assert (acme.before.get("invalid_at"), acme.after["invalid_at"]) == (None, at(2024, 2, 1))
    assert (
        learned.added[0]["source_name"] == "Alice" and learned.added[0]["target_name"] == "Beta Inc"
    )

    # A retraction ends a fact; a fact about the past learned late is added when learned.
    later = await diff(store, K2 + DAY, K3 + DAY, "known")
    assert keys(later.ended) == ["bob_home"] and keys(later.added) == ["berlin"]
    assert later.changed == []


async def test_known_axis_backwards_is_the_mirror(migrated_store) -> None:
    store = await migrated_store()
    await story(store)
    back = await diff(store, K2 + DAY, K1 + DAY, "known")
    assert keys(back.ended) == ["beta"] and back.added == []
    assert changes(back) == {
        "acme": ("acme_r", ("invalid_at",)),
        "bob_job": ("bob_job_c", ("fact",)),
    }


async def test_valid_axis_compares_the_world_as_known_now(migrated_store) -> None:
    store = await migrated_store()
    await story(store)
    moved = await diff(store, at(2024, 1, 20), at(2024, 3, 1), "valid")
    # The revision (valid until Feb) ends, Beta starts; the retired row is not known now.
    assert keys(moved.ended) == ["acme_r"] and keys(moved.added) == ["beta"]
    assert moved.changed == []
    # Berlin was learned last but holds in 2020: on this axis only validity counts. The
    # retracted Paris fact is not believed now, so it never shows.
    early = await diff(store, at(2022, 12, 1), at(2023, 7, 1), "valid")
    assert keys(early.ended) == ["berlin"] and keys(early.added) == ["bob_job_c"]
    assert "bob_home" not in keys(early.added + early.ended)
    # The same source, relation and target at both moments, in two versions: changed.
    carol = await diff(store, at(2020, 6, 1), at(2023, 1, 1), "valid")
    assert changes(carol)["carol2"] == ("carol1", ("fact", "valid_at", "invalid_at"))
    assert "carol1" not in keys(carol.ended) and "carol2" not in keys(carol.added)


async def test_the_same_moment_differs_in_nothing(migrated_store) -> None:
    store = await migrated_store()
    await story(store)
    for axis in ("valid", "known"):
        same = await diff(store, K2, K2, axis)
        assert same.totals == {"added": 0, "ended": 0, "changed": 0}


async def test_the_limit_cuts_the_lists_after_the_filter_not_before(migrated_store) -> None:
    """300 facts start inside the window but were retracted (not known now), 200 start
    outside it; 5 current ones start inside. The limit applies to what is left."""
    store = await migrated_store()
    window = at(2024, 6, 1)
    retracted = [
        fact(
            f"gone{i}",
            "bob",
            "KNOWS",
            "carol",
            f"Bob knew Carol {i}.",
            window + timedelta(minutes=i),
            K1,
            expired_at=K2,
        )
        for i in range(300)
    ]
    outside = [
        fact(
            f"old{i}",
            "bob",
            "KNOWS",
            "alice",
            f"Bob knows Alice {i}.",
            at(2010, 1, 1) + timedelta(minutes=i),
            K1,
        )
        for i in range(200)
    ]
    current = [
        fact(
            f"new{i}",
            "alice",
            "KNOWS",
            "carol",
            f"Alice knows Carol {i}.",
            window + timedelta(days=1, minutes=i),
            K1,
        )
        for i in range(5)
    ]
    await story(store, extra=retracted + outside + current)
    result = await diff(store, window - DAY, window + 10 * DAY, "valid", limit=3)
    assert keys(result.added) == ["new0", "new1", "new2"]
    assert result.totals["added"] == 5 and result.truncated
    full = await diff(store, window - DAY, window + 10 * DAY, "valid")
    assert keys(full.added) == [f"new{i}" for i in range(5)] and not full.truncated
    # On the known axis the same window of system time sees all 300 retractions.
    known = await diff(store, K1 + DAY, K2 + DAY, "known", limit=10)
    assert known.totals["ended"] == 300 and len(known.ended) == 10


def test_a_request_checks_its_axis_and_limit() -> None:
    with pytest.raises(ValueError, match="axis is one of valid, known"):
        DiffRequest(from_=K1, to=K2, axis="sideways")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="limit is between 1 and 5000"):
        DiffRequest(from_=K1, to=K2, limit=0)


async def test_diff_of_a_graph_built_by_the_pipeline(alice_moves) -> None:
    """Supersession as ingestion writes it: the old fact retired and revised."""
    store, between = alice_moves
    now = datetime.now(UTC) + timedelta(seconds=1)
    known = await diff(store, between, now, "known")
    assert [f["target_name"] for f in known.added] == ["Beta Inc"]
    assert [(c.after["target_name"], c.fields) for c in known.changed] == [
        ("Acme Corp", ("invalid_at",))
    ]
    valid = await diff(store, at(2024, 1, 20), at(2024, 3, 1), "valid")
    assert [f["target_name"] for f in valid.ended] == ["Acme Corp"]
    assert [f["target_name"] for f in valid.added] == ["Beta Inc"]


# --- CSV -----------------------------------------------------------------------------


@pytest.mark.parametrize("text", ["=1+2", "+SUM(A1)", "-2+3", "@SUM(A1)", "\tx", "\rx"])
def test_csv_cells_that_would_be_formulas_are_quoted(text: str) -> None:
    assert csv_cell(text) == "'" + text


def test_csv_cells_of_plain_values() -> None:
    assert csv_cell("Alice works at Acme.") == "Alice works at Acme."
    assert csv_cell(None) == ""
    assert csv_cell(at(2024, 1, 15)) == "2024-01-15T00:00:00Z"
    assert csv_cell(F("abc")) == "relates_to:abc"


async def test_csv_lists_every_kind_and_neutralises_formulas(migrated_store) -> None:
    store = await migrated_store()
    hostile = fact(
        "evil", "bob", "KNOWS", "alice", '=HYPERLINK("http://x.test","click")', at(2024, 1, 2), K2
    )
    await story(store, extra=[hostile])
    result = await diff(store, K1 + DAY, K2 + DAY, "known")
    rows = list(csv.reader(io.StringIO(diff_csv(result))))
    assert tuple(rows[0]) == CSV_COLUMNS
    by_id = {r[1]: dict(zip(CSV_COLUMNS, r, strict=True)) for r in rows[1:]}
    assert {r["change"] for r in by_id.values()} == {"added", "changed"}
    assert by_id["relates_to:evil"]["fact"] == '\'=HYPERLINK("http://x.test","click")'
    assert (
        by_id["relates_to:beta"]["source"] == "Alice"
        and by_id["relates_to:beta"]["target"] == "Beta Inc"
    )
    bob = by_id["relates_to:bob_job_c"]
    assert bob["change"] == "changed" and bob["changed_fields"] == "fact"
    assert bob["previous_fact_id"] == "relates_to:bob_job"
    assert bob["previous_fact"] == "Bob is an intern at Acme."
    assert by_id["relates_to:acme_r"]["invalid_at"] == "2024-02-01T00:00:00Z"
    assert by_id["relates_to:acme_r"]["previous_invalid_at"] == ""
