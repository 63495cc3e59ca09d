"""The context `POST query` assembles: dated excerpts of the passages and facts that bear
on the question, no empty section, and the whole within its token budget."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import numpy as np
import pytest
from surrealdb.data.types.record_id import RecordID

from kgapp.graph import jobs
from kgapp.graph.chunking import count_tokens, passage_units
from kgapp.graph.embeddings import local_embedder, unpack_vectors
from kgapp.graph.index import unit_vectors
from kgapp.graph.ingest.model import EpisodeInput
from kgapp.graph.ingest.pipeline import ingest_job
from kgapp.graph.ingest.service import episodes_remove
from kgapp.graph.search.context import entity_line as _entity_line
from kgapp.graph.search.context import entity_summaries as _entity_summaries
from kgapp.graph.search.context import statement as _statement
from kgapp.graph.search.query import QueryRequest, query
from kgapp.graph.time import Moment

QUESTION = "When did Caroline go to the support group?"


async def ingested(migrated_store, episodes: list[EpisodeInput]):
    """A fresh namespace with `episodes` ingested offline."""
    store = await migrated_store()
    job = await jobs.job_create(store, kind="t")
    await ingest_job(store, job["id"], episodes, embedder=local_embedder(), llm=None)
    return store


@pytest.fixture
async def sessions(migrated_store):
    """Two sessions of a conversation, each on its own day."""
    return await ingested(
        migrated_store,
        [
            EpisodeInput(
                content="Caroline: I went to the LGBTQ support group yesterday.\n"
                "Melanie: That sounds powerful, Caroline.",
                source="message",
                reference_time=datetime(2023, 5, 8, 13, 56, tzinfo=UTC),
            ),
            EpisodeInput(
                content="Melanie: I painted a lake sunrise last year.",
                source="message",
                reference_time=datetime(2023, 5, 25, 9, tzinfo=UTC),
            ),
        ],
    )


def sections(text: str) -> dict[str, list[str]]:
    """The context's lines under each header; asserts no header stands empty."""
    found: dict[str, list[str]] = {}
    for block in filter(None, text.split("\n\n")):
        header, *lines = block.split("\n")
        assert header.startswith("## ") and lines, f"empty or headless section: {block!r}"
        found[header] = lines
    return found


async def ask(store, mode: str, question: str = QUESTION, **options: Any) -> str:
    request = QueryRequest(question=question, mode=mode, **options)
    return (await query(store, request, local_embedder(), None)).context_text


async def test_passages_start_with_their_date(sessions) -> None:
    found = sections(await ask(sessions, "naive"))
    assert list(found) == ["## Sources"]
    assert found["## Sources"][0].startswith("- [8 May 2023] [S1] ")
    # The day "yesterday" was, resolved against the session's date.
    assert found["## Sources"][0].endswith(
        "Caroline: I went to the LGBTQ support group yesterday. [refers to 7 May 2023]"
    )
    # Only what bears on the question: the other session shares no word with it.
    assert "lake sunrise" not in "\n".join(found["## Sources"])
    sunrise = sections(await ask(sessions, "naive", "When did Melanie paint the lake sunrise?"))
    assert sunrise["## Sources"][0].startswith("- [25 May 2023] [S1] ")
    assert sunrise["## Sources"][0].endswith("lake sunrise last year. [refers to 2022]")


async def test_mix_dates_facts_and_leaves_out_empty_sections(sessions) -> None:
    found = sections(await ask(sessions, "mix"))
    assert list(found) == ["## Entities", "## Facts", "## Sources"]
    assert "- Caroline went to the LGBTQ support group. [since 7 May 2023]" in found["## Facts"]
    assert any(line.startswith("- [8 May 2023] [") for line in found["## Sources"])
    # Before any fact held, the facts section goes, header and all.
    before = await ask(sessions, "mix", moment=Moment.of(as_of=datetime(2021, 1, 1, tzinfo=UTC)))
    assert "## Facts" not in before and list(sections(before)) == ["## Entities", "## Sources"]


async def test_budget_counts_the_dates_and_drops_the_weakest_excerpt_first(sessions) -> None:
    full = await ask(sessions, "mix")
    exact = count_tokens(full)
    assert await ask(sessions, "mix", max_total_tokens=exact) == full
    sources = sections(full)["## Sources"]
    assert sources[1:] == ["  Melanie: That sounds powerful, Caroline."]
    # One token short, the reply (the weaker excerpt) goes; the matching message stays.
    short = await ask(sessions, "mix", max_total_tokens=exact - 1)
    assert short == full.removesuffix("\n" + sources[1])
    # Without room for the best excerpt and its date, the next best that fits; without
    # room for any, the section goes, header and all.
    before = full.split("\n\n## Sources")[0]
    room = count_tokens(before) + count_tokens("## Sources") + count_tokens(sources[0])
    assert (
        await ask(sessions, "mix", max_total_tokens=room) == f"{before}\n\n## Sources\n{sources[0]}"
    )
    reply = sources[0].split("] Caroline: ")[0] + "] Melanie: That sounds powerful, Caroline."
    assert (
        await ask(sessions, "mix", max_total_tokens=room - 1) == f"{before}\n\n## Sources\n{reply}"
    )
    room = count_tokens(before) + count_tokens("## Sources") + count_tokens(reply)
    assert await ask(sessions, "mix", max_total_tokens=room - 1) == before
    first = full.split("\n")[:2]
    assert await ask(sessions, "mix", max_total_tokens=count_tokens("\n".join(first))) == "\n".join(
        first
    )
    assert await ask(sessions, "mix", max_total_tokens=count_tokens("\n".join(first)) - 1) == ""
    for budget in range(0, exact, 7):
        assert count_tokens(await ask(sessions, "mix", max_total_tokens=budget)) <= budget


TALK = [
    "Caroline: I went to the LGBTQ support group yesterday.",
    "Melanie: That sounds powerful, Caroline.",
    "Caroline: I also started learning the acoustic guitar.",
    "Melanie: What did you bring to the picnic on Sunday?",
    "Caroline: Homemade lemonade and a peach pie.",
    "Melanie: Yum! My kids adore peaches.",
    "Caroline: I adopted a cat named Bella last month.",
    "Melanie: Cats are the best company.",
]
ACME = (
    "Acme Corp was founded in 1999 in Springfield. It makes anvils and rockets. The company"
    " moved its headquarters to Shelbyville in March 2021. Its mascot is a roadrunner."
)


@pytest.fixture
async def talk(migrated_store):
    """A session of eight messages, and a short text."""
    return await ingested(
        migrated_store,
        [
            EpisodeInput(
                content="\n".join(TALK),
                source="message",
                reference_time=datetime(2023, 5, 8, 13, 56, tzinfo=UTC),
            ),
            EpisodeInput(
                content=ACME, source="text", reference_time=datetime(2023, 5, 20, 9, tzinfo=UTC)
            ),
        ],
    )


async def test_sources_quote_the_matching_messages_with_the_reply(talk) -> None:
    question = "What did Caroline bring to the picnic?"
    result = await query(
        talk,
        QueryRequest(question=question, mode="naive", max_total_tokens=80),
        local_embedder(),
        None,
    )
    assert count_tokens(result.context_text) <= 80
    lines = sections(result.context_text)["## Sources"]
    text = "\n".join(lines)
    # The message that matches, and the answer after it though it shares no word with
    # the question; not the whole session, nor the text about Acme.
    assert "  Melanie: What did you bring to the picnic on Sunday? [refers to 7 May 2023]" in lines
    assert "  Caroline: Homemade lemonade and a peach pie." in lines
    assert "support group" not in text and "Cats" not in text and "Acme" not in text
    # `chunks`: the episode quoted, with the excerpts shown, in order.
    [chunk] = result.chunks
    assert lines[0].startswith("- [8 May 2023] [S1] ") and chunk["ref"] == "S1"
    assert chunk["content"] == "\n".join(TALK)
    assert chunk["excerpts"] == [message for message in TALK if message in text]


async def test_excerpts_keep_their_order_and_mark_gaps(talk) -> None:
    lines = sections(
        await ask(talk, "naive", "What did Caroline bring to the picnic?", max_total_tokens=60)
    )["## Sources"]
    assert lines[0].startswith("- [8 May 2023] [S1] ")
    # Each line a message of the session, in the session's order, with "…" where
    # messages between two quoted ones are left out, and nowhere else.
    shown = [lines[0].removeprefix("- [8 May 2023] [S1] "), *(line.strip() for line in lines[1:])]
    positions = [
        -1 if line == "…" else next(i for i, m in enumerate(TALK) if line.startswith(m))
        for line in shown
    ]
    quoted = [p for p in positions if p >= 0]
    assert quoted == sorted(quoted) and len(quoted) < len(TALK) and -1 in positions
    assert {3, 4} <= set(quoted)  # the question asked in the talk, and its answer
    for before, gap, after in zip(positions, positions[1:], positions[2:], strict=False):
        if gap == -1:
            assert after > before + 1
    for before, after in zip(positions, positions[1:], strict=False):
        if before >= 0 and after >= 0:
            assert after == before + 1
    everything = await ask(talk, "naive", "Which cat did Caroline adopt last month?")
    assert (
        "  Caroline: I adopted a cat named Bella last month. [refers to April 2023]" in everything
    )


async def test_a_text_is_quoted_by_the_sentence(talk) -> None:
    result = await query(
        talk,
        QueryRequest(
            question="Where did Acme move its headquarters?", mode="naive", max_total_tokens=40
        ),
        local_embedder(),
        None,
    )
    lines = sections(result.context_text)["## Sources"]
    [chunk] = result.chunks
    # A date the sentence writes out needs no note; the sentence after it comes along
    # (it may go on), not the text before.
    assert lines == [
        "- [20 May 2023] [S1] The company moved its headquarters to Shelbyville in March 2021.",
        "  Its mascot is a roadrunner.",
    ]
    assert chunk["content"] == ACME and chunk["ref"] == "S1"
    assert chunk["excerpts"] == [
        "The company moved its headquarters to Shelbyville in March 2021.",
        "Its mascot is a roadrunner.",
    ]


async def test_the_overlap_of_chunks_is_quoted_once(migrated_store) -> None:
    shared = "The vault under the library holds the old maps."
    chunks = [f"The library opened in 1920. {shared}", f"{shared} Visitors need a pass."]
    store = await ingested(
        migrated_store,
        [
            EpisodeInput(
                content=text,
                source="chunk",
                chunk_index=n,
                reference_time=datetime(2024, 3, 1, tzinfo=UTC),
            )
            for n, text in enumerate(chunks)
        ],
    )
    text = await ask(
        store, "naive", "What does the vault under the library hold? Who needs a pass?"
    )
    assert text.count(shared) == 1
    assert "The library opened in 1920." in text and "Visitors need a pass." in text


async def test_one_hop_facts_are_those_that_bear_on_the_question(talk) -> None:
    facts = sections(await ask(talk, "local", "When did Caroline go to the support group?"))[
        "## Facts"
    ]
    assert facts == ["- Caroline went to the LGBTQ support group. [since 7 May 2023]"]
    # A question about the entity as a whole gets all its facts.
    whole = sections(await ask(talk, "local", "Who is Caroline?"))["## Facts"]
    assert {
        "- Caroline went to the LGBTQ support group. [since 7 May 2023]",
        "- Caroline adopted Bella. [since 1 April 2023]",
        "- Caroline started learning the acoustic guitar. [since 8 May 2023]",
    } <= set(whole)


def test_entity_summary_says_each_thing_once() -> None:
    jon = {
        "id": "entity:jon",
        "name": "Jon",
        "entity_type": "Person",
        "summary": "Jon is a dancer. Jon lost his job. Jon is a dancer. Jon opened a dance studio.",
    }
    said = frozenset({_statement("Jon lost his job.")})

    def summary(question: str = "", entities: tuple[dict[str, Any], ...] = (jon,)) -> str:
        return _entity_summaries(list(entities), question, said if question else frozenset())[
            "entity:jon"
        ]

    assert summary() == "Jon is a dancer. Jon lost his job. Jon opened a dance studio."
    # Not what the facts section says, and of the rest what bears on the question...
    assert summary("What did Jon open?") == "Jon opened a dance studio."
    # ...all of it for the entity as a whole, and nothing when none of it bears on it.
    assert summary("Who is Jon?") == "Jon is a dancer. Jon opened a dance studio."
    assert summary("Where does Jon live?") == ""
    # A name that most of the entities' sentences say (the speaker's) bears on nothing.
    family = [
        {"id": f"entity:{n}", "name": f"Jon's {n}", "summary": f"Jon has a {n}."}
        for n in ("brother", "sister", "cat")
    ]
    assert summary("What movie did Jon watch?", (jon, *family)) == ""
    assert summary("Which studio did Jon open?", (jon, *family)) == "Jon opened a dance studio."
    assert _entity_line(jon, "Jon is a dancer.") == "- Jon (Person): Jon is a dancer."
    assert _entity_line({"name": "ads"}, "") == "- ads (Entity)"


async def test_a_passage_is_found_by_meaning_without_a_shared_word(talk) -> None:
    # No word of the question is in the session (nor "kitten" anywhere): BM25 alone
    # quotes nothing; the message about the cat is nearest by meaning.
    result = await query(
        talk,
        QueryRequest(question="Who owns a kitten?", mode="naive", max_total_tokens=40),
        local_embedder(),
        None,
    )
    sources = "\n".join(sections(result.context_text)["## Sources"])
    assert "Caroline: I adopted a cat named Bella last month." in sources
    assert "Acme" not in sources and "support group" not in sources


async def test_a_question_naming_a_day_gets_that_days_passages(migrated_store) -> None:
    days = [datetime(2023, 3, day, 18, tzinfo=UTC) for day in (2, 9, 16)]
    store = await ingested(
        migrated_store,
        [
            EpisodeInput(
                content=f"Nora: We watched {film} at the cinema tonight.",
                source="message",
                reference_time=day,
            )
            for film, day in zip(("Alien", "Heat", "Jaws"), days, strict=True)
        ],
    )
    for film, day in zip(("Alien", "Heat", "Jaws"), days, strict=True):
        question = f"Which film did Nora watch on {day.day} March, 2023?"
        lines = sections(await ask(store, "naive", question, max_total_tokens=30))["## Sources"]
        assert lines == [
            f"- [{day.day} March 2023] [S1] Nora: We watched {film} at the cinema tonight."
        ]


async def test_passage_vectors_are_written_after_the_episodes_and_go_with_them(talk) -> None:
    rows = await talk.query_one("SELECT episode, vectors, units FROM episode_units;")
    episodes = await talk.query_one("SELECT id, source, content, content_embedding FROM episode;")
    assert len(rows) == len(episodes) == 2
    # Packed float32 (schema/0018): 4 bytes a number, `units` rows of 384.
    assert all(isinstance(r["vectors"], bytes) for r in rows)
    units = {str(r["episode"]): unpack_vectors(r["vectors"], r["units"]) for r in rows}
    for episode in episodes:
        vectors = units[str(episode["id"])]
        assert vectors.shape == (len(passage_units(episode["source"], episode["content"])), 384)
        assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
        assert len(episode["content_embedding"]) == 384
    gone = next(e["id"] for e in episodes if e["source"] == "text")
    await episodes_remove(talk, [gone])
    assert [
        str(r["episode"]) for r in await talk.query_one("SELECT episode FROM episode_units;")
    ] == [str(e["id"]) for e in episodes if e["id"] != gone]


async def test_a_first_of_the_month_named_as_a_day_is_shown_as_that_day(migrated_store) -> None:
    store = await ingested(
        migrated_store,
        [
            EpisodeInput(
                content="Joanna: I watched the whole trilogy last night!\n"
                "Joanna: I am moving house next month.",
                source="message",
                reference_time=datetime(2022, 5, 2, 11, tzinfo=UTC),
            ),
        ],
    )
    text = await ask(store, "naive", "What did Joanna watch? When is she moving house?")
    assert "Joanna: I watched the whole trilogy last night! [refers to 1 May 2022]" in text
    assert "Joanna: I am moving house next month. [refers to June 2022]" in text


async def test_the_unit_vector_cache_keeps_tenants_apart(migrated_store) -> None:
    # Two tenants holding the same episode (the same key: same content, same time), each
    # with vectors of its own: each reads its own, before and after the other is cached.
    stores = []
    for value in (1.0, -1.0):
        store = await migrated_store(embedding_dim=3)
        await store.query(
            "CREATE episode:same SET content = 'Nora: hi', content_hash = 'h';"
            "CREATE episode_units:same SET episode = episode:same, vectors = $vectors;",
            {"vectors": [[value, 0.0, 0.0]]},
        )
        stores.append(store)
    episode = RecordID("episode", "same")
    for _ in range(2):
        first, second = [await unit_vectors(s, [episode]) for s in stores]
        assert first["episode:same"].tolist() == [[1.0, 0.0, 0.0]]
        assert second["episode:same"].tolist() == [[-1.0, 0.0, 0.0]]
