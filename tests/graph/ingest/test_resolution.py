"""Entity resolution: names decide merges, on the real SurrealDB server with the real
local embeddings. The labelled set is tests/data/resolution_pairs.json (written for this
project); tests/resolution_eval.py runs and scores it."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from harness import resolution_eval
from kgapp.graph.curation.common import CurationRefused
from kgapp.graph.curation.duplicates import generate_candidates
from kgapp.graph.curation.pages import audit_get, audit_page
from kgapp.graph.curation.undo import undo
from kgapp.graph.embeddings import local_embedder
from kgapp.graph.ingest.service import fact_add
from kgapp.graph.records import to_json
from kgapp.graph.resolution import names
from kgapp.graph.resolution.canonical import canonical_name

JAN = datetime(2024, 1, 15, tzinfo=UTC)


@pytest.fixture
async def graph(migrated_store):
    return await migrated_store()


@pytest.mark.parametrize(
    "a, b, kind, verdict, rule",
    [
        ("Globex LLC", "globex", "Organization", "same", "same_name"),
        ("Prof. Ines Duarte", "Ines Duarte", "Person", "same", "same_name"),
        ("Duarte, Ines", "Ines Duarte", "Person", "same", "same_name"),
        ("São Tomé", "Sao Tome", "Location", "same", "same_name"),
        ("St. Kilda", "Saint Kilda", "Location", "same", "same_name"),
        ("Orbitron 3000\u2122", "Orbitron 3000", "Product", "same", "same_name"),
        ("Third Harvest Fair", "3rd Harvest Fair", "Event", "same", "same_name"),
        ("Voyager II", "Voyager 2", "Product", "same", "same_name"),
        ("Kestrelworks", "Kestrelwroks", "Organization", "same", "typo"),
        ("Zed 4", "Zed 5", "Product", "blocked", "distinguishing_token"),
        ("North Fenwick", "Fenwick", "Location", "blocked", "distinguishing_token"),
        ("Tom Hale Jr.", "Tom Hale", "Person", "blocked", "distinguishing_token"),
        ("Gala May 2025", "Gala June 2025", "Event", "blocked", "distinguishing_token"),
        ("Block C", "Block D", "Location", "blocked", "distinguishing_token"),
        ("Bram Olsen", "Bram Olson", "Person", "similar", "spelling"),
        ("Vantor", "Vantor Robotics", "Organization", "similar", "words_contained"),
        ("OTC", "Orbit Trading Company", "Organization", "similar", "acronym"),
        ("Lena Fox", "Marcus Webb", "Person", "different", "names_differ"),
        # Symbols that carry meaning (kgapp/graph/resolution/names.py): apart, or one when spoken.
        ("C++", "C", "Product", "blocked", "distinguishing_token"),
        ("C#", "C++", "Product", "blocked", "distinguishing_token"),
        ("F#", "F", "Product", "blocked", "distinguishing_token"),
        ("AT&T", "AT T", "Organization", "blocked", "distinguishing_token"),
        ("R&D", "RD", "Organization", "blocked", "distinguishing_token"),
        (".NET", "NET", "Product", "blocked", "distinguishing_token"),
        ("A+", "A", "Product", "blocked", "distinguishing_token"),
        ("Disney+", "Disney", "Product", "blocked", "distinguishing_token"),
        ("9/11", "911", "Event", "blocked", "distinguishing_token"),
        ("C ++", "C++", "Product", "same", "same_name"),
        ("C\u266f", "C#", "Product", "same", "same_name"),
        ("C Sharp", "C#", "Product", "same", "same_name"),
        ("Disney Plus", "Disney+", "Product", "same", "same_name"),
        ("AT and T", "AT&T", "Organization", "same", "same_name"),
        ("Yahoo!", "Yahoo", "Organization", "same", "same_name"),
        ("E*Trade", "E-Trade", "Organization", "same", "same_name"),
    ],
)
def test_names_decide(a, b, kind, verdict, rule) -> None:
    evidence = names.compare(a, kind, b, kind)
    assert (evidence.verdict, evidence.rule) == (verdict, rule)
    assert names.compare(b, kind, a, kind).verdict == verdict  # symmetric


async def test_the_labelled_set_without_a_model(graph) -> None:
    pairs = resolution_eval.load()
    assert len(pairs) >= 300 and sum(p["same"] for p in pairs) * 2 == len(pairs)
    outcome = await resolution_eval.evaluate(graph, pairs, embedder=local_embedder())
    assert [p["id"] for p in outcome.wrong_merges()] == []
    assert outcome.wrong_auto_merges == []
    same = [p for p in pairs if p["same"]]
    merged = [p for p in same if outcome.verdicts[p["id"]] == "merged"]
    assert len(merged) >= 0.9 * len(same), outcome.by_category()["all"]
    # What names could not settle waits for a person.
    assert [p["id"] for p in same if outcome.verdicts[p["id"]] == "apart"] == []


async def test_an_automatic_merge_is_recorded_and_undone(graph) -> None:
    embedder = local_embedder()

    async def add(person: str, company: str) -> dict:
        added = await fact_add(
            graph,
            source=(person, "Person"),
            relation="WORKS_AT",
            target=(company, "Organization"),
            fact=f"{person} works at {company}.",
            valid_at=JAN,
            invalid_at=None,
            confidence=0.9,
            embedder=embedder,
            created_by="t",
        )
        return added.fact

    await add("Erin Cole", "Initech LLC")
    frank = await add("Frank Diaz", "Initech")
    [entry] = await audit_page(graph, action="auto_merge", actor=None, limit=10)
    merge = await audit_get(graph, entry["id"])
    assert merge["actor"] == "resolution"
    assert merge["after"]["rule"] == "same_name" and merge["after"]["name"] == "Initech"
    assert merge["after"]["survivor_name"] == "Initech LLC"
    assert [str(f) for f in merge["after"]["facts"]] == [str(frank["id"])]
    targets = await graph.query_one(
        "SELECT in.name AS who, out.name AS company FROM relates_to ORDER BY who"
    )
    assert [t["company"] for t in targets] == ["Initech LLC", "Initech LLC"]

    await undo(graph, entry["id"], actor="carol")
    rows = to_json(
        await graph.query_one(
            "SELECT in.name AS who, out.name AS company, out.merged_into AS merged FROM relates_to "
            "ORDER BY who"
        )
    )
    assert rows == [
        {"who": "Erin Cole", "company": "Initech LLC", "merged": None},
        {"who": "Frank Diaz", "company": "Initech", "merged": None},
    ]
    assert await graph.query_one("SELECT VALUE name FROM alias") == []
    rejected = to_json(
        await graph.query_one("SELECT a.name AS a, b.name AS b, status FROM dedup_candidate")
    )
    assert rejected == [{"a": "Initech", "b": "Initech LLC", "status": "rejected"}]
    assert (await audit_get(graph, entry["id"]))["undone_by"] is not None
    # The name stands alone from now on: a later mention goes to it, not merged again.
    await add("Gina Park", "Initech")
    assert len(await audit_page(graph, action="auto_merge", actor=None, limit=10)) == 1
    gina = await graph.query_one(
        "SELECT VALUE out.name FROM relates_to WHERE in.name = 'Gina Park'"
    )
    assert gina == ["Initech"]
    with pytest.raises(CurationRefused):
        await undo(graph, entry["id"], actor="carol")


async def _post(graph, subject: str, target: str, kind: str | None = None) -> None:
    await fact_add(
        graph,
        source=(subject, kind),
        relation="USED_BY",
        target=(target, "Organization"),
        fact=None,
        valid_at=JAN,
        invalid_at=None,
        confidence=0.9,
        embedder=local_embedder(),
        created_by="t",
    )


async def test_names_that_differ_in_a_symbol_that_carries_meaning_stay_apart(graph) -> None:
    """The issue's case: "C++", "C#" and "C" were one entity, and so were "AT&T"-like
    names. Now each is its own and no merge is proposed, while other spellings of each
    still find it."""
    apart = ["C++", "C#", "C", "AT&T", "AT T", ".NET", "NET"]
    spelled = {"C ++": "C++", "C\u266f": "C#", "c": "C", "AT & T": "AT&T", "A.T.T.": "AT T"}
    for n, name in enumerate([*apart, *spelled]):
        await _post(graph, name, f"Team {n}")
    await generate_candidates(graph)
    rows = await graph.query_one(
        "SELECT name, canonical_name, merged_into.name AS survivor FROM entity"
    )
    aliases = await graph.query_one("SELECT name, entity.name AS entity FROM alias")
    where = {r["canonical_name"]: r["survivor"] or r["name"] for r in rows}
    where.update({r["name"]: r["entity"] for r in aliases})
    assert {n: where[canonical_name(n)] for n in [*apart, *spelled]} == {
        **{n: n for n in apart},
        **spelled,
    }
    proposed = to_json(
        await graph.query_one("SELECT a.name AS a, b.name AS b FROM dedup_candidate")
    )
    assert [p for p in proposed if not p["a"].startswith("Team")] == []


async def test_a_match_key_stored_before_symbols_counted_is_not_evidence(graph) -> None:
    """An entity written when "C++" had the key "c" is not where "C" goes."""
    await _post(graph, "C++", "Team 0")
    await graph.query("UPDATE entity SET match_key = 'c' WHERE name = 'C++'")
    await _post(graph, "C", "Team 1")
    rows = await graph.query_one("SELECT name, merged_into FROM entity WHERE name IN ['C++', 'C']")
    assert sorted((r["name"], r["merged_into"]) for r in rows) == [("C", None), ("C++", None)]


async def test_concurrent_posts_of_facts_about_the_same_entities_all_land(graph) -> None:
    """Writers racing on the same entities conflict inside SurrealDB; fact_add re-reads
    and retries, so every fact lands once and no entity is doubled."""
    import asyncio

    from kgapp.graph.errors import WriteConflict

    embedder = local_embedder()

    async def post(index: int):
        try:
            return await fact_add(
                graph,
                source=("Dana Reyes", "Person"),
                relation="VISITED",
                target=(f"City {index % 5}", "Location"),
                fact=None,
                valid_at=datetime(2024, 1, 1 + index, tzinfo=UTC),
                invalid_at=None,
                confidence=0.9,
                embedder=embedder,
                created_by="t",
            )
        except WriteConflict as conflict:  # allowed: the API answers 409 + Retry-After
            return conflict

    outcomes = await asyncio.gather(*(post(i) for i in range(24)))
    conflicts = [o for o in outcomes if isinstance(o, WriteConflict)]
    assert len(conflicts) <= 2, conflicts
    names = await graph.query_one("SELECT VALUE name FROM entity")
    assert sorted(names) == ["City 0", "City 1", "City 2", "City 3", "City 4", "Dana Reyes"]
    episodes = await graph.query_one("SELECT VALUE id FROM episode")
    assert len(episodes) == 24 - len(conflicts)
    again = await post(3)
    assert not isinstance(again, WriteConflict) and again.created is False


FIRST = ["Ábel", "Brontë", "Çelik", "Dóra", "Éowyn", "Fíona", "Gráinne", "Hélène", "Ísak", "Jürgen"]
LAST = [
    "Nakashima",
    "Oyelaran",
    "Papadakis",
    "Quispe",
    "Rasmussen",
    "Szymański",
    "Thorvaldsen",
    "Urquhart",
    "Vasquez",
    "Wójcik",
]


def _variant(name: str, worker: int) -> str:
    """The same name as eight writers might give it: case, spaces, Unicode forms."""
    import unicodedata

    return [
        name,
        name.lower(),
        name.upper(),
        "  " + name.replace(" ", "   ") + " ",
        unicodedata.normalize("NFD", name),
        unicodedata.normalize("NFD", name.upper()),
        name.replace(" ", "\u00a0"),
        name.title(),
    ][worker]


async def test_eight_concurrent_writers_of_name_variants_make_exactly_one_entity_each(
    graph,
) -> None:
    """100 people, each named by 8 concurrent writers in a different form: 100 entities."""
    import asyncio
    import unicodedata

    people = [f"{first} {last}" for first in FIRST for last in LAST]
    assert len(set(people)) == 100
    embedder = local_embedder()

    async def writer(worker: int) -> None:
        order = people[worker * 13 % 100 :] + people[: worker * 13 % 100]  # collide often
        for a, b in zip(order[::2], order[1::2], strict=True):
            await fact_add(
                graph,
                source=(_variant(a, worker), "Person"),
                relation="KNOWS",
                target=(_variant(b, worker), "Person"),
                fact=None,
                valid_at=JAN,
                invalid_at=None,
                confidence=0.9,
                embedder=embedder,
                created_by=f"w{worker}",
            )

    await asyncio.gather(*(writer(w) for w in range(8)))
    rows = await graph.query_one("SELECT name FROM entity")  # merged ones count too
    names = sorted(unicodedata.normalize("NFC", " ".join(r["name"].split())) for r in rows)
    assert len(rows) == 100, names
    assert {n.casefold() for n in names} == {p.casefold() for p in people}
