"""bench/truth.py's scoring on records built here, and one small gold text written here
run through the real pipeline (offline extractor, real SurrealDB), so that the figures
it prints mean what its docstring says and the bench cannot rot unnoticed."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from bench.truth import sample_lines, score_table, text_graph
from bench.truth_gold import (
    GOLD,
    Family,
    GoldEntity,
    GoldFact,
    GoldText,
    ProductEntity,
    ProductFact,
    ProductGraph,
    Score,
    gold_load,
    half_of,
    in_period,
    name_key,
    relation_family,
    score_text,
)
from bench.truth_redocred import Cluster, Item, detokenise, names_alike, score_item
from kgapp.graph.embeddings import local_embedder
from kgapp.graph.ingest.offline import OfflineExtractor

NOW = datetime(2024, 6, 1, tzinfo=UTC)


def at(day: str) -> datetime:
    return datetime.fromisoformat(day).replace(tzinfo=UTC)


def gold(facts: tuple[GoldFact, ...], non_facts: tuple[GoldFact, ...] = ()) -> GoldText:
    return GoldText(
        path=Path("01-company_history-sample.json"),
        half="dev",
        style="company_history",
        kind="text",
        reference_time=at("2024-05-01"),
        text="",
        messages=(),
        entities=(
            GoldEntity("Ingrid Solberg", "Person", ("Solberg",)),
            GoldEntity("Halvorsen Marine", "Organization"),
            GoldEntity("Erik Dahl", "Person"),
            GoldEntity("Bergen", "Location", optional=True),
        ),
        facts=facts,
        non_facts=non_facts,
    )


INGRID = ProductEntity("Solberg", "Person")
HALVORSEN = ProductEntity("the  Halvorsen marine", "Person")
ERIK = ProductEntity("Erik Dahl", "Person")
BERGEN = ProductEntity("Bergen", "Location")
BOAT = ProductEntity("boat", "Concept")


def test_names_match_ignoring_case_runs_of_spaces_and_a_leading_the() -> None:
    assert name_key("The  Halvorsen\nMarine") == name_key("halvorsen marine") == "halvorsen marine"
    assert name_key("Theodor") == "theodor"


@pytest.mark.parametrize(
    ("relation", "family"),
    [
        ("WORKS_AT", Family("employment")),
        ("EMPLOYED_BY", Family("employment")),  # an ontology alias of WORKS_AT
        ("BASED_IN", Family("residence")),  # folded into LIVES_IN by the ontology
        ("CO_FOUNDED", Family("founding")),
        ("FOUNDED_BY", Family("founding", reversed=True)),
        ("HIRE", Family("employment", reversed=True)),
        ("HIRED_BY", Family("employment")),
        ("ACQUIRE", Family("ownership")),
        ("WANT_TO_OPEN", Family("plan")),
        ("PLAY_FOR", Family("membership")),
        ("PLAY", Family("activity")),
        ("CHIEF_TECHNOLOGY_OFFICER_OF", Family("role")),
        ("BOYFRIEND_OF", Family("partner")),
        ("HEAD_TO", Family(None)),
        ("RELATED_TO", Family(None)),
        ("IS_A", Family(None)),
    ],
)
def test_a_relation_name_folds_to_its_family(relation: str, family: Family) -> None:
    assert relation_family(relation) == family


def test_a_period_holds_the_utc_dates_of_its_year_month_or_day() -> None:
    assert in_period("2019", at("2019-12-31"))
    assert in_period("2019-03", at("2019-03-01"))
    assert not in_period("2019-03-14", at("2019-03-15"))
    # 23:30 at UTC-2 on the last day of 2019 is already 2020 in UTC.
    assert not in_period("2019", datetime.fromisoformat("2019-12-31T23:30:00-02:00"))
    assert not in_period("2019", None)


def test_a_text_is_scored_entity_by_entity_and_fact_by_fact() -> None:
    text = gold(
        (
            GoldFact("Ingrid Solberg", "founding", "Halvorsen Marine", start="2019-03"),
            GoldFact("Ingrid Solberg", "role", "Halvorsen Marine", end="2022"),
            GoldFact("Erik Dahl", "role", "Halvorsen Marine", start="2022"),
            GoldFact("Halvorsen Marine", "location", "Bergen", optional=True),
        )
    )
    graph = ProductGraph(
        entities=(INGRID, HALVORSEN, BERGEN, BOAT),
        facts=(
            ProductFact(INGRID, "FOUNDED", HALVORSEN, valid_at=at("2019-03-01")),
            ProductFact(
                INGRID, "CEO_OF", HALVORSEN, valid_at=at("2020-01-01"), invalid_at=at("2023-01-01")
            ),
            ProductFact(HALVORSEN, "HEADQUARTERED_IN", BERGEN, valid_at=at("2021-01-01")),
            ProductFact(INGRID, "BUILD", BOAT),
        ),
    )

    score = score_text(text, graph, NOW)

    assert score == Score(
        texts=1,
        entities=4,
        entities_right=3,
        types_right=2,
        gold_entities=3,
        gold_entities_found=2,
        facts=4,
        facts_right=3,
        gold_facts=3,
        gold_facts_found=2,
        starts=1,
        starts_right=1,
        endings=1,
        endings_found=0,
        endings_any=1,
    )


def test_only_symmetric_families_match_either_way_round() -> None:
    text = gold(
        (
            GoldFact("Erik Dahl", "social", "Ingrid Solberg"),
            GoldFact("Erik Dahl", "employment", "Halvorsen Marine"),
        )
    )
    graph = ProductGraph(
        entities=(INGRID, HALVORSEN, ERIK),
        facts=(ProductFact(INGRID, "FRIEND_OF", ERIK), ProductFact(HALVORSEN, "WORKS_AT", ERIK)),
    )

    assert score_text(text, graph, NOW).gold_facts_found == 1


def test_a_non_fact_counts_only_while_the_product_holds_it_now() -> None:
    negated = GoldFact("Erik Dahl", "employment", "Halvorsen Marine", kind="negated")
    text = gold((), (negated, GoldFact("Ingrid Solberg", "other", "Bergen", kind="hearsay")))
    graph = ProductGraph(
        entities=(INGRID, ERIK, HALVORSEN, BERGEN),
        facts=(
            ProductFact(ERIK, "WORKS_AT", HALVORSEN, invalid_at=at("2024-01-01")),
            ProductFact(INGRID, "VISIT", BERGEN),  # "other" matches any relation
        ),
    )

    score = score_text(text, graph, NOW)

    assert (score.non_facts, score.non_facts_current) == (2, 1)


def test_the_table_pools_counts_and_says_whether_the_targets_are_met() -> None:
    score = Score(
        texts=2,
        entities=10,
        entities_right=9,
        facts=5,
        facts_right=3,
        non_facts=2,
        non_facts_current=0,
    )

    lines = score_table({"wiki": score, "overall": score + Score()})

    assert "90% 9/10" in lines[2] and "60% 3/5" in lines[2] and "0/2" in lines[2]
    met = lines[-1].split()
    assert met[:4] == ["overall", "met", "yes", "no"] and met[-1] == "yes"


def test_a_gold_file_is_read_and_a_bad_period_refused(tmp_path: Path) -> None:
    raw: dict[str, Any] = {
        "style": "chat_two",
        "kind": "conversation",
        "reference_time": "2023-05-02T19:00:00Z",
        "messages": [{"speaker": "Ana", "text": "Hi", "timestamp": "2023-05-02T18:04:00Z"}],
        "entities": [{"name": "Ana", "type": "Person"}],
        "facts": [{"subject": "Ana", "relation": "likes", "object": "tea", "start": "2023"}],
    }
    path = tmp_path / "01-chat_two-tea.json"
    path.write_text(json.dumps(raw))

    text = gold_load(path, half_of(path))

    assert (text.half, text.kind, text.facts[0].start) == ("file", "conversation", "2023")
    assert json.loads(text.upload()[1])[0]["speaker"] == "Ana"
    assert half_of(GOLD / "heldout" / "01-x.json") == "heldout"
    raw["facts"][0]["start"] = "May 2023"
    path.write_text(json.dumps(raw))
    with pytest.raises(ValueError, match="01-chat_two-tea.json"):
        gold_load(path, "dev")


def test_redocred_tokens_read_back_as_written() -> None:
    tokens = [
        "Wilfried",
        '"',
        "Willi",
        '"',
        "Schneider",
        "(",
        "born",
        "13",
        "March",
        "1963",
        ")",
        "is",
        "a",
        "co",
        "-",
        "founder",
        "of",
        "the",
        "players",
        "'",
        "union",
        "'s",
        "board",
        ".",
    ]
    assert detokenise(tokens) == (
        'Wilfried "Willi" Schneider (born 13 March 1963) is a co-founder of the players\' '
        "union's board."
    )


def test_redocred_names_match_leniently_by_whole_words() -> None:
    assert names_alike("the FIBT World Championships", "FIBT World Championships")
    assert names_alike("Schneider", 'Wilfried "Willi" Schneider')
    assert not names_alike("Schnei", "Schneider")


def test_a_redocred_item_is_scored_against_its_clusters_and_pairs() -> None:
    item = Item(
        title="t",
        text="",
        clusters=(
            Cluster(frozenset({"Willi Schneider", "Schneider"}), "PER"),
            Cluster(frozenset({"Mediaș"}), "LOC"),
            Cluster(frozenset({"1963"}), "TIME"),
            Cluster(frozenset({"German"}), "MISC"),
        ),
        pairs=frozenset({frozenset({0, 1}), frozenset({0, 2}), frozenset({0, 3})}),
    )

    score = score_item(
        item,
        ["Schneider", "mediaș", "skeleton event"],
        [("Schneider", "mediaș"), ("Schneider", "skeleton event")],
    )

    assert (score.entities, score.entities_exact, score.entities_lenient) == (3, 1, 2)
    assert (score.named, score.named_found) == (3, 2)
    assert (score.pairs, score.pairs_joined, score.named_pairs, score.named_pairs_joined) == (
        3,
        1,
        2,
        1,
    )
    assert (
        score.facts,
        score.facts_between,
        score.facts_between_related,
        score.facts_unannotated,
    ) == (2, 1, 1, 1)


def test_a_sample_is_drawn_the_same_for_the_same_seed() -> None:
    graph = ProductGraph(
        entities=tuple(ProductEntity(f"e{i}", "Concept", summary=f"s{i}") for i in range(30)),
        facts=(
            ProductFact(
                INGRID, "FOUNDED", HALVORSEN, "Solberg founded it.", valid_at=at("2019-03-01")
            ),
        ),
    )

    lines = sample_lines(graph, seed=3)

    assert lines == sample_lines(graph, seed=3) != sample_lines(graph, seed=4)
    assert len(lines) == 3 + 20 + 1
    assert lines[-1] == "  Solberg founded it.  [FOUNDED, 2019-03-01 00:00 .. -]"


async def test_a_gold_text_goes_through_the_product_and_is_scored(migrated_store: Any) -> None:
    text = GoldText(
        path=Path("01-company_history-tiny.json"),
        half="dev",
        style="company_history",
        kind="text",
        reference_time=at("2024-05-01"),
        messages=(),
        text="In March 2019, Ingrid Solberg founded Halvorsen Marine in Bergen.",
        entities=(
            GoldEntity("Ingrid Solberg", "Person"),
            GoldEntity("Halvorsen Marine", "Organization"),
            GoldEntity("Bergen", "Location"),
        ),
        facts=(GoldFact("Ingrid Solberg", "founding", "Halvorsen Marine", start="2019-03"),),
    )

    graph = await text_graph(
        await migrated_store(), text, embedder=local_embedder(), extractor=OfflineExtractor()
    )
    score = score_text(text, graph, datetime.now(UTC))

    assert "Ingrid Solberg" in {e.name for e in graph.entities}
    assert (score.gold_facts_found, score.starts, score.starts_right) == (1, 1, 1)
    assert score.entities_right <= score.entities and score.facts_right <= score.facts
