"""What the explorer's first view shows first (salience.py, elements._most_salient): the
things talked about, named things before common nouns, pins before all, and no more
than asked; the mention counts are SurrealDB's view of the mentions as they are."""

from __future__ import annotations

from datetime import UTC, datetime

from hypothesis import given
from hypothesis import strategies as st
from surrealdb.data.types.record_id import RecordID

from kgapp.graph import queries
from kgapp.graph.curation.pins import pin_entity
from kgapp.graph.search.elements import graph_elements
from kgapp.graph.search.salience import Standing, is_named, most_salient

WHEN = datetime(2024, 1, 1, tzinfo=UTC)


def test_proper_names_read_as_named_and_common_nouns_do_not() -> None:
    for name in ("Bali", "Pomodoro Technique", "van Gogh", "NASA", "Sapiens"):
        assert is_named(name), name
    for name in ("need", "top", "mix", "left", "I", "", "chinese tea"):
        assert not is_named(name), name


def test_mentions_and_a_proper_name_outrank_a_generic_noun_at_the_end_of_one_fact() -> None:
    bali = Standing("bali", "Bali", degree=0, mentions=3)
    need = Standing("need", "need", degree=1, mentions=1)
    talked = Standing("pottery", "pottery", degree=0, mentions=20)
    speaker = Standing("jon", "Jon", degree=60, mentions=300)
    pinned = Standing("quiet", "quiet", pinned=True)
    ranked = [s.key for s in most_salient([need, bali, talked, speaker, pinned], 5)]
    assert ranked == ["quiet", "jon", "pottery", "bali", "need"]


STANDING = st.builds(
    Standing,
    key=st.text("abcdef", min_size=1, max_size=4),
    name=st.sampled_from(["Bali", "need", "Jon", "top", "Paris", "mix"]),
    degree=st.integers(0, 50),
    mentions=st.integers(0, 50),
    pinned=st.booleans(),
)


@given(st.lists(STANDING, max_size=30), st.integers(0, 40), st.sampled_from(["degree", "mentions"]))
def test_more_of_anything_never_ranks_lower(standings, limit, field) -> None:
    """Raising one entity's facts or mentions never drops it from a view it was in, and
    the view holds exactly `limit` (or all), pins first."""
    chosen = most_salient(standings, limit)
    assert len(chosen) == min(limit, len(standings))
    pins = [s.pinned for s in chosen]
    assert pins == sorted(pins, reverse=True)
    for i, standing in enumerate(standings):
        if standing not in chosen:
            continue
        raised = Standing(
            standing.key,
            standing.name,
            **{
                "degree": standing.degree,
                "mentions": standing.mentions,
                field: getattr(standing, field) + 5,
            },
            pinned=standing.pinned,
        )
        again = most_salient([*standings[:i], raised, *standings[i + 1 :]], limit)
        assert raised in again


def E(key: str) -> RecordID:
    return RecordID("entity", key)


async def chat(store, speakers: int = 2) -> None:
    """Two speakers with many facts about generic nouns; places and a book talked about in
    many messages, with no fact; a named friend with one fact."""
    names = {
        "jon": "Jon",
        "gina": "Gina",
        "bali": "Bali",
        "sapiens": "Sapiens",
        "paris": "Paris",
        "maria": "Maria",
    }
    generic = [f"thing{i}" for i in range(12)]
    names |= {g: g for g in generic}
    await store.query(
        queries.ENTITIES_BULK_INSERT,
        {
            "rows": [
                {
                    "id": E(k),
                    "name": n,
                    "canonical_name": n.casefold(),
                    "entity_type": "Concept",
                    "degree": 0,
                }
                for k, n in names.items()
            ]
        },
    )
    facts = [("jon", g) for g in generic[:6]] + [("gina", g) for g in generic[6:]]
    facts += [("jon", "maria")]
    await store.query(
        queries.FACTS_BULK_INSERT,
        {
            "rows": [
                {
                    "id": RecordID("relates_to", f"f{i}"),
                    "in": E(a),
                    "out": E(b),
                    "relation": "LIKES",
                    "fact": f"{a} likes {b}.",
                    "valid_at": WHEN,
                    "created_at": WHEN,
                }
                for i, (a, b) in enumerate(facts)
            ]
        },
    )
    degree: dict[str, int] = {}
    for a, b in facts:
        degree[a] = degree.get(a, 0) + 1
        degree[b] = degree.get(b, 0) + 1
    for key, value in degree.items():
        await store.query("UPDATE $id SET degree = $d", {"id": E(key), "d": value})
    said = {"jon": 40, "gina": 40, "bali": 5, "sapiens": 4, "paris": 3, "maria": 1}
    said |= {g: 1 for g in generic}
    episode = 0
    for key, times in said.items():
        for _ in range(times):
            episode += 1
            await store.query(
                "CREATE $e SET content = 'm', source = 'message', valid_at = $w, "
                "content_hash = type::string($e); "
                "RELATE $e->mentions->$x;",
                {"e": RecordID("episode", f"p{episode}"), "w": WHEN, "x": E(key)},
            )


def labels(elements) -> list[str]:
    return [node["data"]["label"] for node in elements["nodes"]]


async def test_the_first_view_shows_what_was_talked_about_before_generic_nouns(
    migrated_store,
) -> None:
    store = await migrated_store()
    await chat(store)
    view = await graph_elements(store, seed=None, entity_types=[], limit=6, moment=None)
    shown = labels(view)
    # The six most salient, then the other ends of their facts.
    assert shown[:2] == ["Jon", "Gina"]
    assert set(shown[2:6]) == {"Bali", "Sapiens", "Paris", "Maria"}
    node = {n["data"]["label"]: n["data"] for n in view["nodes"]}
    assert node["Bali"]["mentions"] == 5 and node["Bali"]["named"] and node["Bali"]["degree"] == 0
    assert not node["thing0"]["named"] and node["thing0"]["mentions"] == 1
    assert node["Jon"]["salience"] > node["Bali"]["salience"] > node["thing0"]["salience"]

    # A pin brings a generic noun in; deleting the episodes that mention Bali sends it out.
    await pin_entity(store, E("thing11"), True)
    await store.query("DELETE mentions WHERE out = $b", {"b": E("bali")})
    shown = labels(await graph_elements(store, seed=None, entity_types=[], limit=6, moment=None))
    assert shown[0] == "thing11"
    assert "Bali" not in shown[:6]
