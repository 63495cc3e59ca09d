"""The offline extractor on ordinary prose and chat written for these tests: dates a
paragraph or section states, the entity in focus behind "she" and "the company",
positions that begin, end and pass on, and what is said without being asserted."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from kgapp.graph.ingest.offline import DEFAULT_MODEL, OfflineExtractor
from kgapp.graph.ingest.offline.turns import text_turns
from kgapp.graph.llm.prompts.extract import ExtractedFact, Extraction
from kgapp.graph.time import resolve_in_context, resolve_named

COMPILED = datetime(2024, 6, 1, tzinfo=UTC)

HISTORY = """# Brackwater Ferries: a history

## Beginnings
In April 2016, Oona Pettersen founded Brackwater Ferries in Tromsø. She became its
first chief executive. The company opened an office in Narvik the following spring.

## Changes
In September 2021, Oona Pettersen stepped down as chief executive and Lasse Vik
replaced her as CEO. Henrik Aas joined Brackwater Ferries in 2018. He left the firm
in 2022.
"""


@pytest.fixture(scope="module")
def extractor() -> OfflineExtractor:
    return OfflineExtractor(DEFAULT_MODEL)


def prose(extractor: OfflineExtractor, text: str) -> Extraction:
    return extractor.extract(text, reference_time=COMPILED)


def fact(found: Extraction, source: str, relation: str, target: str) -> ExtractedFact:
    return next(
        f for f in found.facts if (f.source, f.relation, f.target) == (source, relation, target)
    )


def day(value: str | None) -> str | None:
    return value[:10] if value else None


def test_headings_and_list_items_are_turns_of_their_own() -> None:
    turns = text_turns("# Title\nFirst line\nsecond line.\n\n- an item\n> quoted text.")
    assert [(t.text, t.heading) for t in turns] == [
        ("Title", True),
        ("First line second line.", False),
        ("an item", False),
        ("quoted text.", False),
    ]


def test_a_date_refers_back_to_the_paragraphs_date() -> None:
    context = resolve_named("In April 2016", COMPILED)
    following = resolve_in_context("the following spring", COMPILED, context)
    assert following is not None and following.start.date().isoformat() == "2017-03-01"
    later = resolve_in_context("two years later", COMPILED, context)
    assert later is not None and later.start.year == 2018
    assert resolve_in_context("last week", COMPILED, context).start.date().isoformat() == (
        "2024-05-25"
    )


def test_a_paragraphs_date_governs_its_undated_sentences(extractor) -> None:
    found = prose(extractor, HISTORY)
    assert day(fact(found, "Oona Pettersen", "FOUND", "Brackwater Ferries").valid_at) == (
        "2016-04-01"
    )
    assert day(fact(found, "Brackwater Ferries", "LOCATED_IN", "Narvik").valid_at) == ("2017-03-01")


def test_she_its_and_the_company_are_the_entities_in_focus(extractor) -> None:
    found = prose(extractor, HISTORY)
    ceo = fact(found, "Oona Pettersen", "CEO_OF", "Brackwater Ferries")
    assert day(ceo.valid_at) == "2016-04-01"
    assert ("Brackwater Ferries", "LOCATED_IN", "Tromsø") in {
        (f.source, f.relation, f.target) for f in found.facts
    }
    names = {e.name for e in found.entities}
    assert "company" not in names and "the company" not in names


def test_a_succession_ends_one_position_and_begins_the_other(extractor) -> None:
    found = prose(extractor, HISTORY)
    before = fact(found, "Oona Pettersen", "CEO_OF", "Brackwater Ferries")
    after = fact(found, "Lasse Vik", "CEO_OF", "Brackwater Ferries")
    assert day(before.invalid_at) == "2021-09-01"
    assert day(after.valid_at) == "2021-09-01" and after.invalid_at is None
    assert not any("STEP" in f.relation or "REPLACE" in f.relation for f in found.facts)


def test_leaving_ends_the_job_the_episode_began(extractor) -> None:
    found = prose(extractor, HISTORY)
    job = [f for f in found.facts if f.source == "Henrik Aas" and f.target == "Brackwater Ferries"]
    assert len(job) == 1
    assert day(job[0].valid_at) == "2018-01-01" and day(job[0].invalid_at) == "2022-01-01"


def test_no_longer_states_an_ending(extractor) -> None:
    found = prose(extractor, "Ada Moss no longer works at Fenwick Labs.")
    (job,) = found.facts
    assert job.target == "Fenwick Labs" and job.invalid_at is not None and job.valid_at is None


@pytest.mark.parametrize(
    "sentence",
    [
        "If the bid succeeds, Fenwick Labs will open an office in Oslo.",
        "Ada Moss thinks that Ivo Rask joined Fenwick Labs.",
        "According to Ada Moss, Ivo Rask joined Fenwick Labs.",
        "Ivo Rask probably joined Fenwick Labs.",
        "Fenwick Labs will open an office in Oslo.",
        "When I was a kid, Ada Moss lived in Oslo.",
    ],
)
def test_reported_conditional_hedged_and_predicted_clauses_are_no_facts(
    extractor, sentence: str
) -> None:
    assert prose(extractor, sentence).facts == []


def test_a_prediction_about_the_other_speaker_is_no_fact(extractor) -> None:
    found = extractor.extract(
        "Evan: You will love the ceramics studio in Porto.\nSam: I will visit Porto in June.",
        reference_time=COMPILED,
        speakers=("Evan", "Sam"),
    )
    assert all(f.source == "Sam" for f in found.facts)


def test_prose_facts_join_named_things_by_verbs_of_relation(extractor) -> None:
    found = prose(
        extractor,
        "Ada Moss thanked Ivo Rask. Ada Moss bought a new laptop. Ada Moss joined Fenwick Labs.",
    )
    assert {(f.source, f.relation, f.target) for f in found.facts} == {
        ("Ada Moss", "JOIN", "Fenwick Labs")
    }


def test_a_short_name_is_the_one_full_name_it_stands_for(extractor) -> None:
    found = prose(extractor, "Ada Moss joined Fenwick Labs in 2019. In 2021 Moss moved to Bergen.")
    assert "Moss" not in {e.name for e in found.entities}
    assert ("Ada Moss", "MOVE_TO", "Bergen") in {
        (f.source, f.relation, f.target) for f in found.facts
    }


def test_a_name_has_one_type_by_what_the_sentences_say_of_it(extractor) -> None:
    found = prose(
        extractor,
        "Ola Dahl founded Halden Kayak in 2015. Halden Kayak hired Mia Berg. "
        "Mia Berg later became chief executive of Halden Kayak.",
    )
    types = {e.name: e.entity_type for e in found.entities}
    assert types["Halden Kayak"] == "Organization" and types["Mia Berg"] == "Person"


def triples(found: Extraction) -> set[tuple[str, str, str]]:
    return {(f.source, f.relation, f.target) for f in found.facts}


def test_until_ends_what_the_clause_begins(extractor) -> None:
    found = prose(extractor, "Ada Moss chaired the Fenwick Rowing Club from 2016 until 2021.")
    chair = fact(found, "Ada Moss", "CHAIR_OF", "Fenwick Rowing Club")
    assert (day(chair.valid_at), day(chair.invalid_at)) == ("2016-01-01", "2021-01-01")


def test_a_noun_in_apposition_says_where_a_thing_is_and_what_a_person_was(extractor) -> None:
    found = prose(
        extractor,
        "Brackwater Ferries bought Kelp Lines, a small freight operator based in Bodø, in 2019. "
        "Lasse Vik, previously chief executive of Kelp Lines, joined Brackwater Ferries.",
    )
    assert ("Kelp Lines", "LOCATED_IN", "Bodø") in triples(found)
    was = fact(found, "Lasse Vik", "CEO_OF", "Kelp Lines")
    assert was.invalid_at is not None


def test_a_thing_called_by_name_is_that_name(extractor) -> None:
    found = extractor.extract(
        "Ria: I adopted a kitten named Pebble last week.",
        reference_time=COMPILED,
        speakers=("Ria", "Tom"),
    )
    assert ("Ria", "ADOPT", "Pebble") in triples(found)
    assert fact(found, "Ria", "ADOPT", "Pebble").fact == "Ria adopted Pebble."


def test_leaving_a_band_ends_a_membership_not_a_job(extractor) -> None:
    found = prose(
        extractor,
        "The Salt Reeds are a folk band from Dublin. Ivo Rask joined the band in 2015. "
        "He quit the band in 2019.",
    )
    member = [f for f in found.facts if f.source == "Ivo Rask" and f.target == "Salt Reeds"]
    assert [(f.relation, day(f.invalid_at)) for f in member] == [("MEMBER_OF", "2019-01-01")]
    assert ("Salt Reeds", "LOCATED_IN", "Dublin") in triples(found)


def test_a_past_paragraph_date_does_not_date_a_present_state(extractor) -> None:
    found = prose(
        extractor, "In 2018 Ola Dahl founded Skarv Labs. Skarv Labs is headquartered in Trondheim."
    )
    assert day(fact(found, "Ola Dahl", "FOUND", "Skarv Labs").valid_at) == "2018-01-01"
    assert fact(found, "Skarv Labs", "HEADQUARTERED_IN", "Trondheim").valid_at is None


def test_talking_to_someone_and_where_an_act_happened_are_no_facts(extractor) -> None:
    found = extractor.extract(
        "Ria: I rang Lars yesterday. I cried in the supermarket. I volunteer at the food bank.",
        reference_time=COMPILED,
        speakers=("Ria", "Tom"),
    )
    assert triples(found) == {("Ria", "VOLUNTEER_AT", "food bank")}


def test_the_chunk_before_says_who_she_is_but_gives_no_facts(extractor) -> None:
    found = extractor.extract(
        "## Brackwater Ferries > Changes\n\nIn 2021 she stepped down as chief executive.",
        reference_time=COMPILED,
        context="## Brackwater Ferries > Founding\n\nIn 2016 Oona Pettersen founded Brackwater "
        "Ferries. She became its first chief executive.",
    )
    assert triples(found) == {("Oona Pettersen", "CEO_OF", "Brackwater Ferries")}
    (ended,) = found.facts
    assert ended.valid_at is None and day(ended.invalid_at) == "2021-01-01"
