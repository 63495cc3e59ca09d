"""Chunks stay within their token budget, overlap, carry their heading path; message
windows follow the token budget and the sessions of a conversation."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from kgapp.graph.chunking import Chunk, chunk_text, count_tokens, group_messages
from kgapp.graph.documents.messages import Message
from kgapp.graph.documents.parse import parse_document

LOCOMO = Path(__file__).resolve().parents[1] / "data" / "locomo_like.json"


def sentences(count: int, *, start: int = 0, words: int = 12) -> str:
    """Distinct, recognisable sentences: 'Sentence 7 says w7a w7b ... .'"""
    return " ".join(
        f"Sentence {n} says " + " ".join(f"w{n}x{k}" for k in range(words)) + "."
        for n in range(start, start + count)
    )


GUIDE = "\n\n".join(
    [
        "Preface text before any heading. " + sentences(3, start=900),
        "# Guide",
        sentences(4, start=0),
        "## Install",
        sentences(30, start=100),
        "```sh\n# not a heading\npip install kg\n```",
        "### From source",
        sentences(3, start=300),
        "## Usage",
        sentences(25, start=200),
    ]
)


def body(chunk: Chunk) -> str:
    """The chunk text without its heading line."""
    if chunk.heading is None:
        return chunk.text
    first, _, rest = chunk.text.partition("\n\n")
    assert first.endswith(chunk.heading)
    return rest


def sentence_ids(text: str) -> list[int]:
    return [int(n) for n in re.findall(r"Sentence (\d+) says", text)]


# --- count_tokens -----------------------------------------------------------------------


def test_count_tokens_counts_words_punctuation_and_long_words() -> None:
    assert count_tokens("Hello, world!") == 4
    assert count_tokens("") == 0
    assert count_tokens("internationalization") == 5  # 20 letters, 4 a token
    assert count_tokens("1234567") == 3  # digits in groups of three
    assert count_tokens("日本語のテキスト") == 8  # about one token per CJK character


def test_count_tokens_adds_up_over_whitespace() -> None:
    a, b = "A sentence, with punctuation.", "Another one: 42 items; extraordinary!"
    for separator in (" ", "\n", "\n\n"):
        assert count_tokens(a + separator + b) == count_tokens(a) + count_tokens(b)


# --- chunk_text: arguments ----------------------------------------------------------------


@pytest.mark.parametrize(("max_tokens", "overlap"), [(49, 0), (100, -1), (100, 50), (100, 80)])
def test_bad_budgets_are_value_errors(max_tokens: int, overlap: int) -> None:
    with pytest.raises(ValueError):
        chunk_text("some text", max_tokens=max_tokens, overlap_tokens=overlap)


@pytest.mark.parametrize("text", ["", "  \n\n \t"])
def test_blank_text_has_no_chunks(text: str) -> None:
    assert chunk_text(text) == []


def test_a_short_text_is_one_chunk_with_its_own_text() -> None:
    assert chunk_text("Just one line.") == [Chunk(0, "Just one line.", None, 4)]


# --- chunk_text: sizes ------------------------------------------------------------------

HARD_TEXTS = {
    "guide": GUIDE,
    "no punctuation": " ".join(f"word{n}" for n in range(3000)),
    "one huge word": "start " + "x" * 20000 + " end.",
    "long heading": "# " + " ".join(f"title{n}" for n in range(300)) + "\n\n" + sentences(40),
    "cjk": "。".join("日本語のテキストです" for _ in range(400)),
    "wrapped lines": "\n".join(
        f"line {n} of a hard wrapped paragraph that goes on" for n in range(400)
    ),
}


@pytest.mark.parametrize("name", sorted(HARD_TEXTS))
@pytest.mark.parametrize(("max_tokens", "overlap"), [(50, 0), (50, 24), (120, 30), (800, 100)])
def test_chunks_never_exceed_max_tokens(name: str, max_tokens: int, overlap: int) -> None:
    chunks = chunk_text(HARD_TEXTS[name], max_tokens=max_tokens, overlap_tokens=overlap)
    assert chunks
    assert [chunk.index for chunk in chunks] == list(range(len(chunks)))
    for chunk in chunks:
        assert chunk.token_count == count_tokens(chunk.text)
        assert chunk.token_count <= max_tokens


def test_chunks_are_filled_not_fragmented() -> None:
    chunks = chunk_text(sentences(200), max_tokens=300, overlap_tokens=0)
    assert all(chunk.token_count > 300 - 25 for chunk in chunks[:-1])  # one sentence is ~22


def test_no_sentence_is_lost() -> None:
    chunks = chunk_text(GUIDE, max_tokens=150, overlap_tokens=30)
    seen = {n for chunk in chunks for n in sentence_ids(chunk.text)}
    assert seen == set(sentence_ids(GUIDE))


def test_chunking_is_deterministic() -> None:
    first = chunk_text(GUIDE, max_tokens=120, overlap_tokens=30)
    assert first == chunk_text(GUIDE, max_tokens=120, overlap_tokens=30)
    assert len(first) > 5


# --- chunk_text: overlap ----------------------------------------------------------------


def test_consecutive_chunks_of_a_section_overlap_at_sentence_boundaries() -> None:
    text = "# Notes\n\n" + sentences(40)
    chunks = chunk_text(text, max_tokens=200, overlap_tokens=60)
    assert len(chunks) > 3
    for before, after in zip(chunks, chunks[1:], strict=False):
        shared = sorted(set(sentence_ids(body(before))) & set(sentence_ids(body(after))))
        assert shared, "no overlap"
        assert sentence_ids(body(after))[: len(shared)] == shared  # starts with the tail
        assert sentence_ids(body(before))[-len(shared) :] == shared
        overlap_text = " ".join(body(after).split(". ")[: len(shared)])
        assert count_tokens(overlap_text) <= 60


def test_zero_overlap_shares_nothing() -> None:
    chunks = chunk_text(sentences(40), max_tokens=200, overlap_tokens=0)
    ids = [n for chunk in chunks for n in sentence_ids(chunk.text)]
    assert ids == sorted(set(ids)) == list(range(40))


def test_an_overlap_shorter_than_a_sentence_takes_its_last_words() -> None:
    text = sentences(20, words=40)  # each sentence ~70 tokens
    chunks = chunk_text(text, max_tokens=200, overlap_tokens=20)
    second = chunks[1].text
    assert not second.startswith("Sentence")
    tail = second.split(".")[0]
    assert chunks[0].text.rstrip(".").endswith(tail)
    assert 10 <= count_tokens(tail) <= 20


def test_overlap_does_not_cross_sections() -> None:
    chunks = chunk_text(GUIDE, max_tokens=150, overlap_tokens=40)
    usage = [chunk for chunk in chunks if chunk.heading == "Guide > Usage"]
    assert sentence_ids(usage[0].text)[0] == 200


# --- chunk_text: headings ---------------------------------------------------------------


def test_every_chunk_starts_with_its_heading_path() -> None:
    chunks = chunk_text(GUIDE, max_tokens=150, overlap_tokens=30)
    headings = [chunk.heading for chunk in chunks]
    assert headings[0] is None and chunks[0].text.startswith("Preface text")
    assert sorted(set(headings) - {None}) == [
        "Guide",
        "Guide > Install",
        "Guide > Install > From source",
        "Guide > Usage",
    ]
    assert headings.count("Guide > Install") > 2
    for chunk in chunks:
        if chunk.heading is not None:
            level = {"Guide": 1, "Guide > Install": 2, "Guide > Usage": 2}.get(chunk.heading, 3)
            assert chunk.text.startswith("#" * level + " " + chunk.heading + "\n\n")
    # Each sentence sits under the heading of its section.
    for chunk in chunks:
        for n in sentence_ids(body(chunk)):
            expected = {
                0: "Guide",
                1: "Guide > Install",
                2: "Guide > Usage",
                3: "Guide > Install > From source",
                9: None,
            }[n // 100]
            assert chunk.heading == expected, (n, chunk.heading)


def test_a_hash_line_in_code_is_kept_as_code_not_a_heading() -> None:
    chunks = chunk_text(GUIDE, max_tokens=800, overlap_tokens=0)
    code = next(chunk for chunk in chunks if "pip install kg" in chunk.text)
    assert code.heading == "Guide > Install"
    assert "```sh\n# not a heading\npip install kg\n```" in code.text


def test_a_long_heading_path_is_shortened_to_fit() -> None:
    text = "# " + "Very long chapter title " * 30 + "\n\n## Short\n\n" + sentences(10)
    chunks = chunk_text(text, max_tokens=100, overlap_tokens=10)
    assert all(chunk.text.startswith("## Short\n\n") for chunk in chunks)
    assert chunks[0].heading is not None and chunks[0].heading.endswith(" > Short")


def test_a_text_of_headings_only_is_one_plain_chunk() -> None:
    assert chunk_text("# Title\n\n## Subtitle") == [Chunk(0, "# Title\n\n## Subtitle", None, 6)]


def test_list_items_keep_their_lines() -> None:
    text = "## Steps\n\n- first step\n- second step\n\nDone."
    assert chunk_text(text)[0].text == text


# --- group_messages ---------------------------------------------------------------------

T0 = datetime(2024, 1, 1, 9, 0, tzinfo=UTC)


def talk(count: int, *, words: int = 10, every: timedelta = timedelta(minutes=1)) -> list[Message]:
    return [
        Message(
            "Ana" if n % 2 else "Ben", " ".join(f"m{n}w{k}" for k in range(words)), T0 + n * every
        )
        for n in range(count)
    ]


def test_groups_stay_within_the_token_budget_and_keep_order() -> None:
    messages = talk(40)  # 12 tokens each with "Ana: "
    groups = group_messages(messages, max_tokens=100)
    assert [m for group in groups for m in group] == messages
    assert [len(group) for group in groups] == [8, 8, 8, 8, 8]
    for group in groups:
        assert sum(count_tokens(f"{m.speaker}: {m.text}") for m in group) <= 100


def test_a_gap_longer_than_max_gap_starts_a_new_group() -> None:
    messages = talk(4)
    messages[2:] = [
        Message(m.speaker, m.text, m.timestamp + timedelta(hours=7)) for m in messages[2:]
    ]
    groups = group_messages(messages, max_tokens=1000, max_gap=timedelta(hours=6))
    assert [len(group) for group in groups] == [2, 2]
    assert len(group_messages(messages, max_tokens=1000, max_gap=timedelta(hours=8))) == 1


def test_a_new_date_starts_a_new_group() -> None:
    late = datetime(2024, 1, 1, 23, 50, tzinfo=UTC)
    messages = [Message("A", "night", late), Message("B", "still up", late + timedelta(minutes=20))]
    assert group_messages(messages) == [(messages[0],), (messages[1],)]


def test_an_over_long_message_is_a_group_alone() -> None:
    messages = talk(3)
    messages[1] = Message("Ana", "word " * 500, messages[1].timestamp)
    groups = group_messages(messages, max_tokens=100)
    assert groups == [(messages[0],), (messages[1],), (messages[2],)]


def test_messages_without_timestamps_only_split_on_budget() -> None:
    messages = [Message("A", "hi there", None)] * 10
    assert len(group_messages(messages, max_tokens=1000)) == 1


@pytest.mark.parametrize(("max_tokens", "max_gap"), [(0, timedelta(hours=1)), (10, timedelta(0))])
def test_bad_group_arguments_are_value_errors(max_tokens: int, max_gap: timedelta) -> None:
    with pytest.raises(ValueError):
        group_messages(talk(2), max_tokens=max_tokens, max_gap=max_gap)


def test_locomo_groups_never_mix_sessions() -> None:
    raw = LOCOMO.read_bytes()
    messages = parse_document("locomo_like.json", raw, max_bytes=len(raw)).messages
    groups = group_messages(messages, max_tokens=600)
    assert [m for group in groups for m in group] == list(messages)
    assert all(len({m.timestamp for m in group}) == 1 for group in groups)
    session_starts = (
        sum(1 for a, b in zip(messages, messages[1:], strict=False) if a.timestamp != b.timestamp)
        + 1
    )
    assert session_starts == 3
    assert len(groups) > session_starts  # the long third session is split
    for group in groups:
        tokens = sum(count_tokens(f"{m.speaker}: {m.text}") for m in group)
        assert tokens <= 600 or len(group) == 1
