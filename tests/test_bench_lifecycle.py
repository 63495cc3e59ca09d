"""bench/lifecycle.py's parts on a small conversation written here (not the shared
data): the two exports it cuts, and its figures for the second upload and for deleting
either document, so that the bench cannot rot unnoticed and the lifecycle's promises
(known messages not ingested again, nothing another document supports lost) are held
to on every run."""

from __future__ import annotations

import json
from typing import Any

import pytest

from bench.cost import scripted_answer
from bench.lifecycle import (
    Difference,
    Figures,
    Graph,
    conversation_cut,
    exports_of,
    lifecycle_measure,
)
from kgapp.graph.embeddings import local_embedder
from kgapp.graph.llm.client import LLMClient
from kgapp.graph.llm.transport import LLMConfig

SESSION_1 = [
    ("Priya", "Hi Tomas! I moved to Lisbon last month and I started working at Globex."),
    ("Tomas", "Congratulations! I still work at Initech in Porto."),
    ("Priya", "Marta from Globex showed me the city on my first weekend."),
    ("Tomas", "I adopted a dog called Biscuit, he loves the beach."),
    ("Priya", "Biscuit sounds lovely. Did you sign up for the pottery class?"),
    ("Tomas", "Yes, I signed up for the pottery class at the Clay Studio."),
    ("Priya", "I joined the Lisbon Running Club on Saturdays."),
    ("Tomas", "Send me photos of Lisbon next time."),
]
SESSION_2 = [
    ("Tomas", "I finished my first vase at the Clay Studio yesterday."),
    ("Priya", "Amazing! Marta and I went to Sintra last weekend."),
    ("Tomas", "I read Sapiens on the train to Madrid."),
    ("Priya", "I am reading Dune for the book club at Globex."),
    ("Tomas", "Biscuit met another dog called Pepper at the park."),
    ("Priya", "I bought a bike from Decathlon to ride to work."),
    ("Tomas", "My sister Ana visited me in Porto."),
    ("Priya", "Say hi to Ana for me! Is she still at Siemens?"),
    ("Tomas", "She left Siemens and joined Bosch in Munich."),
    ("Priya", "The Lisbon Running Club has a race in October."),
    ("Tomas", "Good luck with the race!"),
    ("Priya", "Thanks, Marta is running it too."),
]
SESSION_3 = [
    ("Priya", "I adopted a kitten called Pixel last week."),
    ("Tomas", "Pixel and Biscuit should meet! I am flying to Reykjavik with Ana in May."),
]


def conversation(*sessions: list[tuple[str, str]]) -> dict[str, Any]:
    """A LoCoMo-shaped conversation, with the keys the dataset has besides the turns."""
    raw: dict[str, Any] = {"speaker_a": "Priya", "speaker_b": "Tomas"}
    for number, turns in enumerate(sessions, start=1):
        raw[f"session_{number}_date_time"] = f"1:0{number} pm on {number + 3} May, 2023"
        raw[f"session_{number}"] = [
            {"speaker": who, "dia_id": f"D{number}:{i}", "text": text}
            for i, (who, text) in enumerate(turns, start=1)
        ]
    for number in range(1, len(sessions) + 1):
        raw[f"events_session_{number}"] = {"Priya": [], "Tomas": [], "date": "x"}
    raw["qa"] = [{"question": "Where does Priya live?", "answer": "Lisbon"}]
    return raw


def test_an_export_cut_short_keeps_the_structure_and_only_the_sessions_begun() -> None:
    raw = conversation(SESSION_1, SESSION_2, SESSION_3)

    cut = conversation_cut(raw, 10)

    assert list(cut) == [
        "speaker_a",
        "speaker_b",
        "session_1_date_time",
        "session_1",
        "session_2_date_time",
        "session_2",
        "events_session_1",
        "events_session_2",
    ]
    assert cut["session_1"] == raw["session_1"]
    assert cut["session_2"] == raw["session_2"][:2]


def test_the_second_export_has_a_tenth_more_messages_and_extends_the_first() -> None:
    exports = exports_of("chat.json", conversation(SESSION_1, SESSION_2, SESSION_3))
    first, second = json.loads(exports.first), json.loads(exports.second)

    assert (exports.first_messages, exports.second_messages, exports.sessions) == (20, 22, 3)
    assert first["session_2"] == second["session_2"]
    assert "session_3" not in first and len(second["session_3"]) == 2
    assert exports.first_name != exports.second_name  # two documents, not two versions


async def measured(migrated_store: Any, scripted_llm: Any, sessions: list[Any]) -> Figures:
    scripted_llm.on_chat(scripted_answer)

    async def new_store(label: str) -> Any:
        return await migrated_store()

    def new_llm() -> LLMClient:
        config = LLMConfig(base_url=scripted_llm.base_url, api_key="test", model="gpt-4o-mini")
        return LLMClient(config)

    return await lifecycle_measure(
        new_store,
        exports_of("chat.json", conversation(*sessions)),
        embedder=local_embedder(),
        new_llm=new_llm,
        extractions=lambda: len(scripted_llm.chat_requests("extract_graph")),
    )


# The cut after 20 of 22 messages falls between two sessions, or inside the last one
# (after its first turn: the first export's last episode is that one turn, and the
# second's two new turns of the same session are a new episode).
CUT_BETWEEN = [SESSION_1, SESSION_2, SESSION_3]
CUT_INSIDE = [SESSION_1, SESSION_2[:11], SESSION_2[11:] + SESSION_3]
NOTHING = Difference([], [], [], [])


@pytest.mark.parametrize("sessions", [CUT_BETWEEN, CUT_INSIDE], ids=["between", "inside"])
async def test_a_grown_export_ingests_its_new_messages_only_and_either_goes_alone(
    migrated_store: Any, scripted_llm: Any, sessions: list[Any]
) -> None:
    figures = await measured(migrated_store, scripted_llm, sessions)
    first, second = figures.delete_first.first, figures.delete_first.second
    model = figures.model
    assert model is not None

    assert (first.messages_known, first.messages_new) == (0, 20)
    assert (second.messages_known, second.messages_new) == (20, 2)
    assert second.note == "20 messages already known, 2 new"
    assert second.episodes_kept == first.episodes_stored > 0
    assert second.episodes_stored == second.episodes_new == 1
    assert (first.calls, second.calls) == (0, 0)  # the offline extractor
    # With a model, only the new episode is extracted.
    assert model.second.episodes_new == model.second_extractions == 1
    assert model.first_extractions == model.first.episodes_new == first.episodes_stored
    assert 0 < model.second.calls < model.first.calls

    # Deleting either document loses nothing the other supports, and leaves nothing
    # that no remaining episode supports.
    for deletion in (figures.delete_first, figures.delete_second):
        assert deletion.supported.entities and deletion.supported.facts
        assert (deletion.lost_entities, deletion.lost_facts) == ([], [])
        assert not deletion.orphans.entities and not deletion.orphans.facts
        assert deletion.episodes_left == deletion.episodes_held
        assert deletion.preview_agreed
    assert figures.delete_second.removal.episodes_deleted == 1
    assert figures.delete_first.removal.episodes_deleted == 0
    # Deleting the second export leaves the graph the first built alone: the new
    # messages' kitten goes with it.
    differences = figures.differences()
    assert differences["second"] == NOTHING
    assert "Pixel" in figures.second_alone.entities
    assert "Pixel" not in figures.delete_second.after.entities
    # Deleting the first leaves the graph the second builds alone when both cut the
    # conversation into the same episodes (a cut inside a session makes two windows
    # of what, uploaded alone, is one).
    if sessions is CUT_BETWEEN:
        assert differences["first"] == NOTHING


def test_a_fact_supported_by_one_of_several_episodes_is_supported() -> None:
    statement = ("Priya", "WORKS_AT", "Globex", "Priya works at Globex.")
    graph = Graph(
        entities=frozenset({"Priya", "Globex", "Lisbon"}),
        facts=((statement, frozenset({"episode:a", "episode:b"})),),
        mentions=(("episode:c", "Lisbon"), ("episode:a", "Priya")),
    )

    assert graph.supported_by({"episode:b"}).facts == {statement}
    assert graph.supported_by({"episode:b"}).entities == {"Priya", "Globex"}
    assert graph.supported_by({"episode:c"}).entities == {"Lisbon"}
    assert not graph.supported_by({"episode:d"}).facts
