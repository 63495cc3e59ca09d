"""The offline extractor (spaCy pipeline) on sentences written for these tests: what
becomes an entity, which facts the parse gives, who "I" and "you" are, dates, and the
answer when the pipeline is missing."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from kgapp.graph.ingest.offline import (
    DEFAULT_MODEL,
    ExtractorUnavailable,
    OfflineExtractor,
)
from kgapp.graph.llm.prompts.extract import Extraction
from kgapp.graph.time import resolve_date, resolve_named, stated_period

# A Wednesday.
NOW = datetime(2024, 5, 15, 18, 30, tzinfo=UTC)
SPEAKERS = ("Tom", "Ria")


@pytest.fixture(scope="module")
def extractor() -> OfflineExtractor:
    return OfflineExtractor(DEFAULT_MODEL)


def chat(extractor: OfflineExtractor, *lines: str) -> Extraction:
    return extractor.extract("\n".join(lines), reference_time=NOW, speakers=SPEAKERS)


def triples(extraction: Extraction) -> set[tuple[str, str, str]]:
    return {(f.source, f.relation, f.target) for f in extraction.facts}


def types(extraction: Extraction) -> dict[str, str]:
    return {e.name: e.entity_type for e in extraction.entities}


def test_discourse_words_and_pronouns_are_not_entities(extractor) -> None:
    found = chat(
        extractor,
        "Tom: Whoa, that's wild! Gotcha. Sorry, yeah. Wow. Hey! Thanks.",
        "Ria: It'll be fine. Every day counts. Glad you liked it.",
    )
    assert types(found) == {"Tom": "Person", "Ria": "Person"}
    assert found.facts == []


def test_named_entities_are_typed(extractor) -> None:
    found = extractor.extract(
        "Barack Obama visited Berlin with officials from Microsoft. "
        "Angela Merkel spoke German there on Monday.",
        reference_time=NOW,
    )
    named = types(found)
    assert named["Barack Obama"] == named["Angela Merkel"] == "Person"
    assert named["Berlin"] == "Location"
    assert named["Microsoft"] == "Organization"
    assert named["German"] == "Concept"
    assert "Monday" not in named  # dates are not entities
    assert ("Barack Obama", "VISIT", "Berlin") in triples(found)


def test_noun_phrases_in_facts_are_entities_lower_case_without_determiners(extractor) -> None:
    found = chat(
        extractor,
        "Ria: Pottery classes are relaxing. I signed up for a watercolor workshop and "
        "joined a local hiking club. Tom: Are pottery classes expensive?",
    )
    named = types(found)
    assert "pottery classes" not in named and "Pottery classes" not in named  # in no fact
    assert named["watercolor workshop"] == "Event"
    assert named["local hiking club"] == "Organization"
    assert not any(name.startswith(("a ", "the ", "my ")) for name in named)


def test_verb_object_and_verb_preposition_facts(extractor) -> None:
    found = chat(
        extractor,
        "Ria: I adopted a rescue dog. I volunteer at the animal shelter. "
        "I signed up for a chess tournament.",
    )
    assert triples(found) == {
        ("Ria", "ADOPT", "rescue dog"),
        ("Ria", "VOLUNTEER_AT", "animal shelter"),
        ("Ria", "SIGN_UP_FOR", "chess tournament"),
    }
    sentences = {f.relation: f.fact for f in found.facts}
    assert sentences["VOLUNTEER_AT"] == "Ria volunteers at the animal shelter."
    assert sentences["SIGN_UP_FOR"] == "Ria signed up for a chess tournament."


def test_first_person_is_the_speaker_and_you_the_other_speaker(extractor) -> None:
    found = chat(extractor, "Tom: You moved to Denver. I work at Initech.")
    assert triples(found) == {("Ria", "MOVE_TO", "Denver"), ("Tom", "WORK_AT", "Initech")}
    # With three speakers, "you" is nobody in particular.
    three = extractor.extract(
        "Tom: You moved to Denver.", reference_time=NOW, speakers=("Tom", "Ria", "Sam")
    )
    assert three.facts == []


def test_subject_carries_over_a_conjunction_and_xcomp_chains(extractor) -> None:
    found = chat(
        extractor,
        "Tom: I joined Initech and moved to Denver. I started to paint landscapes. "
        "I want to open a bakery.",
    )
    assert {
        ("Tom", "JOIN", "Initech"),
        ("Tom", "MOVE_TO", "Denver"),
        ("Tom", "PAINT", "landscapes"),
        ("Tom", "WANT_TO_OPEN", "bakery"),
    } <= triples(found)


def test_copula_and_a_named_relative(extractor) -> None:
    found = chat(extractor, "Tom: My friend Mel is a paramedic. My sister is married to Omar.")
    assert {
        ("Mel", "FRIEND_OF", "Tom"),
        ("Mel", "IS_A", "paramedic"),
        ("Tom's sister", "MARRIED_TO", "Omar"),
    } <= triples(found)
    assert types(found)["Tom's sister"] == "Person"


def test_a_short_form_of_a_speakers_name_is_that_speaker(extractor) -> None:
    found = extractor.extract(
        "Caroline: Mel visited Lisbon with me. Melanie: Glad you came!",
        reference_time=NOW,
        speakers=("Caroline", "Melanie"),
    )
    assert "Mel" not in types(found)
    assert ("Melanie", "VISIT", "Lisbon") in triples(found)


def test_a_noun_phrase_in_no_fact_is_no_entity_however_often_it_recurs(extractor) -> None:
    once = chat(extractor, "Tom: What a wild ride this season was.")
    assert "wild ride" not in types(once)
    twice = chat(
        extractor,
        "Tom: The climbing gym was packed today.",
        "Ria: Was the climbing gym open late?",
    )
    assert "climbing gym" not in types(twice)
    used = chat(extractor, "Tom: I joined the climbing gym near the station.")
    assert "climbing gym" in types(used)


def test_negated_hypothetical_and_asked_facts_are_not_asserted(extractor) -> None:
    found = chat(
        extractor,
        "Ria: I don't like horror movies. I never went to Rome. Did you go to the jazz "
        "concert? I would join the choir. If I move to Oslo, I will tell you.",
    )
    assert found.facts == []


def test_relative_dates_resolve_against_the_reference_time(extractor) -> None:
    found = chat(
        extractor,
        "Ria: I visited the science museum yesterday. Tom: I took my daughter to the "
        "aquarium last Saturday.",
    )
    when = {f.target: f.valid_at for f in found.facts}
    assert when["science museum"] == "2024-05-14T00:00:00+00:00"
    assert when["aquarium"] == "2024-05-11T00:00:00+00:00"


def test_a_leaving_verb_ends_the_relation(extractor) -> None:
    found = chat(extractor, "Ria: I resigned from Initech last month.")
    (fact,) = found.facts
    assert (fact.source, fact.relation, fact.target) == ("Ria", "WORKS_AT", "Initech")
    assert fact.valid_at is None and fact.invalid_at == "2024-04-01T00:00:00+00:00"
    assert fact.fact == "Ria resigned from Initech."


def test_what_is_used_is_a_product_and_a_headquarters_a_place(extractor) -> None:
    found = extractor.extract(
        "Sam Okoro uses Tableau. Kestrel Labs is headquartered in Bristol.", reference_time=NOW
    )
    assert types(found)["Tableau"] == "Product"
    assert types(found)["Bristol"] == "Location"
    assert types(found)["Kestrel Labs"] == "Organization"


def test_a_project_by_name_is_a_project_and_a_name_is_one_line(extractor) -> None:
    found = extractor.extract(
        "Priya Nair leads Project Harrier. Project Harrier is a churn model for Northwind\nEnergy.",
        reference_time=NOW,
    )
    assert types(found)["Project Harrier"] == "Project"
    assert ("Project Harrier", "MODEL_FOR", "Northwind Energy") in triples(found)


def test_the_same_text_gives_the_same_answer(extractor) -> None:
    lines = ("Tom: I joined Initech and moved to Denver.", "Ria: I adopted a rescue dog.")
    assert chat(extractor, *lines) == chat(extractor, *lines)


def test_a_missing_pipeline_is_explained() -> None:
    missing = OfflineExtractor("no_such_model")
    assert missing.available is False
    assert "no_such_model" in missing.problem and "KG_SPACY_MODEL" in missing.problem
    assert missing.label == "offline NLP (spaCy no_such_model, unavailable)"
    with pytest.raises(ExtractorUnavailable, match="no_such_model"):
        missing.extract("Tom: hello", reference_time=NOW, speakers=SPEAKERS)


def test_label_names_the_pipeline_and_its_version(extractor) -> None:
    assert extractor.available and extractor.problem is None
    assert extractor.label.startswith("offline NLP (spaCy en_core_web_sm")
    assert extractor.label.endswith(" 3.8.0)")


@pytest.mark.parametrize(
    "text, expected",
    [
        ("yesterday", datetime(2024, 5, 14, tzinfo=UTC)),
        ("the day before yesterday", datetime(2024, 5, 13, tzinfo=UTC)),
        ("last Saturday", datetime(2024, 5, 11, tzinfo=UTC)),
        ("next Friday", datetime(2024, 5, 17, tzinfo=UTC)),
        ("last weekend", datetime(2024, 5, 11, tzinfo=UTC)),
        ("last week", datetime(2024, 5, 8, tzinfo=UTC)),
        ("last month", datetime(2024, 4, 1, tzinfo=UTC)),
        ("next month", datetime(2024, 6, 1, tzinfo=UTC)),
        ("three weeks ago", datetime(2024, 4, 24, tzinfo=UTC)),
        ("a couple of days ago", datetime(2024, 5, 13, tzinfo=UTC)),
        ("in two weeks", datetime(2024, 5, 29, tzinfo=UTC)),
        ("in March", datetime(2024, 3, 1, tzinfo=UTC)),
        ("in 2019", datetime(2019, 1, 1, tzinfo=UTC)),
        ("on 3 February 2021", datetime(2021, 2, 3, tzinfo=UTC)),
        ("nothing of the kind", None),
    ],
)
def test_resolve_date(text, expected) -> None:
    assert resolve_date(text, NOW) == expected


@pytest.mark.parametrize(
    "text, start, unit",
    [
        ("last night", datetime(2024, 5, 14, tzinfo=UTC), "day"),
        ("last month", datetime(2024, 4, 1, tzinfo=UTC), "month"),
        ("in March 2021", datetime(2021, 3, 1, tzinfo=UTC), "month"),
        ("on 1 March 2021", datetime(2021, 3, 1, tzinfo=UTC), "day"),
        ("last year", datetime(2023, 1, 1, tzinfo=UTC), "year"),
        ("on 1 January 2020", datetime(2020, 1, 1, tzinfo=UTC), "day"),
    ],
)
def test_resolve_named_says_how_much_of_the_calendar_is_named(text, start, unit) -> None:
    named = resolve_named(text, NOW)
    assert named is not None and (named.start, named.unit) == (start, unit)


def _utc(*parts: int) -> datetime:
    return datetime(*parts, tzinfo=UTC)


@pytest.mark.parametrize(
    "text, expected",
    [
        ("What did Nate do on 25 May, 2022?", (_utc(2022, 5, 25), _utc(2022, 5, 26))),
        ("on May 3rd, 2023", (_utc(2023, 5, 3), _utc(2023, 5, 4))),
        ("since 2024-02-29", (_utc(2024, 2, 29), _utc(2024, 3, 1))),
        ("in the beginning of November 2022", (_utc(2022, 11, 1), _utc(2022, 12, 1))),
        ("in December 2022", (_utc(2022, 12, 1), _utc(2023, 1, 1))),
        ("back in 2019", (_utc(2019, 1, 1), _utc(2020, 1, 1))),
        # Without its year a date names no period; nor does a day that does not exist.
        ("Which spot did Joanna visit in May?", None),
        ("on 2023-02-30", None),
        ("yesterday", None),
    ],
)
def test_stated_period(text, expected) -> None:
    assert stated_period(text) == expected


def test_a_bare_weekday_looks_back_unless_the_clause_is_in_the_future() -> None:
    assert resolve_date("on Friday", NOW) == datetime(2024, 5, 10, tzinfo=UTC)
    assert resolve_date("on Friday", NOW, future=True) == datetime(2024, 5, 17, tzinfo=UTC)
