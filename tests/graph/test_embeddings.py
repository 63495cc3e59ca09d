"""Embeddings against the real all-MiniLM-L6-v2 model (loaded from the wheel, offline),
and the remote embedder's checks with a fake provider."""

from __future__ import annotations

import math
import threading
from typing import Any

import numpy as np
import pytest

from kgapp.graph.embeddings import (
    Embedder,
    EmbeddingError,
    LocalMiniLM,
    OpenAIEmbedder,
    cosine,
    local_embedder,
    most_similar,
)

# Name pairs entity resolution has to tell apart; the cosines are printed (-s) so
# the merge threshold can be chosen from what the model actually gives.
NAME_PAIRS = [
    ("Acme Corp", "Acme Corporation"),
    ("Acme Corp", "ACME corp."),
    ("Acme Corp", "ACME CORP"),
    ("Bob Smith", "Robert Smith"),
    ("Alice", "Alicia"),
    ("Alice", "Bob"),
    ("Apple", "Microsoft"),
]


@pytest.fixture(scope="module")
def embedder() -> LocalMiniLM:
    return local_embedder()


def pair_cosine(embedder: Embedder, a: str, b: str) -> float:
    va, vb = embedder.embed([a, b])
    return cosine(va, vb)


def test_vectors_have_384_dimensions_and_unit_norm(embedder: LocalMiniLM) -> None:
    vectors = embedder.embed(["Alice", "Acme Corp hired Alice in 2021.", "x" * 5000])
    assert isinstance(embedder, Embedder)
    assert embedder.dimension == 384
    for vector in vectors:
        assert len(vector) == 384
        assert all(isinstance(value, float) for value in vector)
        assert math.isclose(math.sqrt(sum(v * v for v in vector)), 1.0, abs_tol=1e-5)


def test_same_text_gives_identical_vectors(embedder: LocalMiniLM) -> None:
    first = embedder.embed(["Alice works at Acme Corp"])[0]
    again = embedder.embed(["Alice works at Acme Corp"])[0]
    twin_a, twin_b = embedder.embed(["Alice works at Acme Corp", "Alice works at Acme Corp"])
    assert first == again
    assert twin_a == twin_b
    beside_a_longer = embedder.embed(["Alice works at Acme Corp", "a much longer sentence " * 8])
    assert beside_a_longer[0] == first


def test_paraphrase_is_closer_than_unrelated_text(embedder: LocalMiniLM) -> None:
    fact = "Alice works at Acme Corp"
    paraphrase = pair_cosine(embedder, fact, "Alice is employed by Acme Corporation")
    unrelated = pair_cosine(embedder, fact, "The weather in Paris is rainy")
    print(f"\nparaphrase {paraphrase:.4f}  unrelated {unrelated:.4f}")
    assert paraphrase > unrelated
    assert paraphrase > 0.7
    assert unrelated < 0.4


def test_name_variants_for_entity_resolution(embedder: LocalMiniLM) -> None:
    scores = {pair: pair_cosine(embedder, *pair) for pair in NAME_PAIRS}
    print()
    for (a, b), score in scores.items():
        print(f"  cos({a!r}, {b!r}) = {score:.4f}")
    assert scores[("Acme Corp", "ACME corp.")] >= 0.85
    # The model is uncased: a difference of case alone is no difference.
    assert scores[("Acme Corp", "ACME CORP")] == pytest.approx(1.0, abs=1e-6)
    assert scores[("Apple", "Microsoft")] < 0.85


def test_batch_of_100_keeps_input_order(embedder: LocalMiniLM) -> None:
    texts = [f"Entity number {i} is a {['person', 'company', 'city'][i % 3]}" for i in range(100)]
    batch = embedder.embed(texts)
    assert len(batch) == 100
    for i in (0, 37, 63, 64, 99):  # either side of the 64-text encode batch
        alone = embedder.embed([texts[i]])[0]
        best, _ = most_similar(alone, batch)[0]
        assert best == i
        assert cosine(alone, batch[i]) > 0.9999


def test_a_texts_vector_does_not_depend_on_the_texts_embedded_with_it(
    embedder: LocalMiniLM,
) -> None:
    # With 8-bit weights the activations are quantized per run: were texts run as one
    # batch, a name's vector would move with the long message beside it.
    texts = [
        "Ann",
        "Maria went camping with her kids at the lake last weekend. " * 6,
        "Acme",
        "Bob works at Acme.",
        "Tom: I adopted a rescue dog.",
        "word " * 300,
        "Lyon",
    ]
    together = embedder.embed(texts)
    for i, text in enumerate(texts):
        assert embedder.embed([text])[0] == together[i]
    assert embedder.embed_aside(texts) == together  # one by one, on the calling thread


def test_an_aside_call_runs_beside_embed_calls(embedder: LocalMiniLM) -> None:
    """`embed_aside` neither waits for an `embed` call nor holds one up: both run at
    once, and each gives the vectors it would alone."""
    texts = [f"Message {i}: Maria went camping with her kids at the lake." for i in range(40)]
    alone = embedder.embed_aside(texts)
    inside: list[bool] = []
    results: dict[str, Any] = {}

    def aside() -> None:
        results["aside"] = embedder.embed_aside(texts)

    thread = threading.Thread(target=aside)
    with embedder._encode_lock:  # an embed call in progress
        thread.start()
        thread.join(timeout=30)
        inside.append(thread.is_alive())
    thread.join()
    assert inside == [False] and results["aside"] == alone


def test_eight_bit_vectors_stay_close_to_the_float_models() -> None:
    quantized, exact = local_embedder(), local_embedder("fp32")
    assert quantized.name != exact.name
    texts = [
        "Alice",
        "Acme Corp hired Alice in 2021.",
        "Tom: I adopted a rescue dog last week.",
        "The quarterly report was published on October 15.",
        "Lyon",
        "word " * 300,
    ]
    cosines = [
        cosine(a, b) for a, b in zip(quantized.embed(texts), exact.embed(texts), strict=True)
    ]
    print("\nint8 against fp32:", [round(c, 4) for c in cosines])
    assert min(cosines) > 0.97
    assert sorted(cosines)[len(cosines) // 2] > 0.985


def test_empty_input_and_empty_texts(embedder: LocalMiniLM) -> None:
    assert embedder.embed([]) == []
    vectors = embedder.embed(["", "Alice", "   "])
    assert len(vectors) == 3
    assert vectors[0] == vectors[2]
    with pytest.raises(TypeError):
        embedder.embed("Alice")


def test_model_loads_once_under_concurrent_first_use(
    embedder: LocalMiniLM, monkeypatch: pytest.MonkeyPatch
) -> None:
    fresh = LocalMiniLM(threads=embedder.threads)
    loads = 0
    real_load = fresh._load

    def counting_load() -> Any:
        nonlocal loads
        loads += 1
        return real_load()

    monkeypatch.setattr(fresh, "_load", counting_load)
    texts = ["Alice", "Acme Corp", "Paris"]
    results: list[list[list[float]]] = []
    threads = [
        threading.Thread(target=lambda: results.append(fresh.embed(texts))) for _ in range(4)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert loads == 1
    assert len(results) == 4
    assert all(result == results[0] for result in results)
    assert local_embedder() is embedder


def test_cosine_and_most_similar() -> None:
    assert cosine([1.0, 0.0], [0.0, 0.0]) == 0.0
    assert cosine([1.0, 0.0], [2.0, 0.0]) == pytest.approx(1.0)
    assert cosine([1.0, 0.0], [-1.0, 0.0]) == pytest.approx(-1.0)
    ranked = most_similar([1.0, 0.0], [[0.0, 1.0], [1.0, 1.0], [3.0, 0.0], [0.0, 0.0]])
    assert [index for index, _ in ranked] == [2, 1, 0, 3]
    assert ranked[0][1] == pytest.approx(1.0)
    assert ranked[1][1] == pytest.approx(math.sqrt(0.5))
    assert most_similar([1.0, 0.0], []) == []


def test_openai_embedder_rejects_the_wrong_dimension() -> None:
    remote = OpenAIEmbedder(
        name="openai:text-embedding-3-small",
        dimension=1536,
        embed_batch=lambda texts: [[1.0, 0.0, 0.0] for _ in texts],
    )
    with pytest.raises(EmbeddingError, match="3 dimensions"):
        remote.embed(["Alice"])


def test_openai_embedder_rejects_a_missing_vector() -> None:
    remote = OpenAIEmbedder(name="fake", dimension=2, embed_batch=lambda texts: [[1.0, 0.0]])
    with pytest.raises(EmbeddingError, match="1 vectors for 2 texts"):
        remote.embed(["Alice", "Bob"])


def test_openai_embedder_normalizes_and_chunks() -> None:
    calls: list[list[str]] = []

    def embed_batch(texts: list[str]) -> list[list[float]]:
        calls.append(texts)
        return [[3.0, 4.0] if text == "Alice" else [0.0, 2.0] for text in texts]

    remote = OpenAIEmbedder(name="fake", dimension=2, embed_batch=embed_batch, batch_size=2)
    assert isinstance(remote, Embedder)
    vectors = remote.embed(["Alice", " ", "Bob"])
    assert vectors == [
        pytest.approx([0.6, 0.8]),
        pytest.approx([0.0, 1.0]),
        pytest.approx([0.0, 1.0]),
    ]
    assert calls == [["Alice", " "], ["Bob"]]
    assert remote.embed([]) == []


def test_a_forked_child_embeds_with_a_model_its_parent_had_loaded(embedder: LocalMiniLM) -> None:
    """A process forked after the model ran (a benchmark's workers, a prefork pool) did
    not inherit its thread pool's threads: it loads afresh instead of waiting forever."""
    import multiprocessing

    texts = ["Alice works at Acme.", "Bob lives in Lisbon.", "Acme hired Bob."]
    expected = embedder.embed(texts)  # loaded here, with its thread pool running
    context = multiprocessing.get_context("fork")
    answers = context.Queue()

    def child() -> None:
        answers.put(embedder.embed(texts))

    process = context.Process(target=child)
    process.start()
    process.join(timeout=60)
    alive = process.is_alive()
    if alive:
        process.kill()
    assert not alive, "the forked child never finished embedding"
    got = answers.get(timeout=5)
    assert np.allclose(np.asarray(got), np.asarray(expected), atol=1e-6)
