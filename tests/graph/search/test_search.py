"""Point-in-time reads and hybrid search over a graph built by the real pipeline."""

from __future__ import annotations

import pytest

from kgapp.graph import jobs
from kgapp.graph.embeddings import local_embedder
from kgapp.graph.ingest.model import EpisodeInput
from kgapp.graph.ingest.pipeline import ingest_job
from kgapp.graph.records import record_key
from kgapp.graph.search.history import fact_history
from kgapp.graph.search.hybrid import search
from kgapp.graph.search.model import SearchRequest
from kgapp.graph.search.reads import entity_facts
from kgapp.graph.time import Moment
from tests.graph.search.conftest import at


@pytest.fixture
async def alice(alice_moves):
    """Alice at Acme (Jan 2024), then at Beta (from Feb 2024); the moment between."""
    store, between = alice_moves
    entity = (await store.query_one("SELECT VALUE id FROM entity WHERE name = 'Alice'"))[0]
    return store, entity, between


def targets(facts) -> list[str]:
    return [f["target_name"] for f in facts]


async def test_as_of_and_known_at(alice) -> None:
    store, entity, between = alice
    assert targets(await entity_facts(store, entity, Moment.of(as_of=at(2024, 1, 20)))) == [
        "Acme Corp"
    ]
    assert targets(await entity_facts(store, entity, Moment.of(as_of=at(2024, 3, 1)))) == [
        "Beta Inc"
    ]
    # As known before the second episode, Acme was current even for March.
    before = Moment.of(as_of=at(2024, 3, 1), known_at=between)
    assert targets(await entity_facts(store, entity, before)) == ["Acme Corp"]
    # Current only (the default) never returns a retired or ended fact.
    current = await entity_facts(store, entity, Moment.of())
    assert targets(current) == ["Beta Inc"]
    assert all(f.get("expired_at") is None and f.get("invalid_at") is None for f in current)


async def test_history_follows_the_chain_both_ways(alice) -> None:
    store, entity, _ = alice
    beta = (await entity_facts(store, entity, Moment.of()))[0]
    chain = await fact_history(store, beta["id"])
    assert [c["target_name"] for c in chain] == ["Acme Corp", "Acme Corp", "Beta Inc"]
    original, revision, new = chain
    assert original.get("expired_at") is not None and original.get("invalid_at") is None
    assert record_key(revision["revision_of"]) == record_key(original["id"])
    assert revision["invalid_at"] == at(2024, 2, 1)
    from_start = await fact_history(store, original["id"])
    assert [record_key(c["id"]) for c in from_start] == [record_key(c["id"]) for c in chain]


async def test_hybrid_search_finds_facts_by_words_and_meaning(alice) -> None:
    store, entity, _ = alice
    results = await search(
        store, SearchRequest(query="Beta", scopes=("facts", "entities")), local_embedder()
    )
    assert results.facts and results.facts[0].record["target_name"] == "Beta Inc"
    assert "bm25" in results.facts[0].found_by
    assert any(h.record["name"] == "Beta Inc" for h in results.entities)
    # The Acme fact ended: the current-only default hides it from search too.
    assert all(h.record["target_name"] != "Acme Corp" for h in results.facts)
    past = await search(
        store,
        SearchRequest(
            query="employer of Alice", methods=("cosine",), moment=Moment.of(as_of=at(2024, 1, 20))
        ),
        local_embedder(),
    )
    assert [h.record["target_name"] for h in past.facts] == ["Acme Corp"]


async def test_node_distance_puts_the_center_neighbourhood_first(migrated_store) -> None:
    store = await migrated_store()
    job = await jobs.job_create(store, kind="t")
    texts = [
        "Nora works at Orbital Labs.",
        "Omar works at Orbital Labs.",
        "Paula works at Quantum Labs.",
        "Nora knows Paula.",
    ]
    await ingest_job(
        store,
        job["id"],
        [EpisodeInput(content=t, source="text", reference_time=at(2024, 1, 1)) for t in texts],
        embedder=local_embedder(),
        llm=None,
    )
    omar = (await store.query_one("SELECT VALUE id FROM entity WHERE name = 'Omar'"))[0]
    results = await search(
        store,
        SearchRequest(
            query="Labs",
            scopes=("entities",),
            methods=("bm25",),
            reranker="node_distance",
            center_entity=omar,
        ),
        local_embedder(),
    )
    names = [h.record["name"] for h in results.entities]
    assert names.index("Orbital Labs") < names.index("Quantum Labs")


async def test_activation_reaches_the_neighbours_of_the_seeds(alice) -> None:
    store, _, _ = alice
    results = await search(
        store, SearchRequest(query="Beta", methods=("activation",)), local_embedder()
    )
    names = [h.record["name"] for h in results.entities]
    # From Beta, Acme is reachable only over Alice's ended fact, which is not visible now.
    assert set(names) == {"Alice", "Beta Inc"}
    assert all("activation" in h.found_by for h in results.entities)
    assert [h.record["target_name"] for h in results.facts] == ["Beta Inc"]


async def test_search_counts_retrievals_and_decay_shrinks_them(alice) -> None:
    from kgapp.graph.search.retrieval_counts import decay_retrieval_counts

    store, _, _ = alice
    for _ in range(3):
        await search(
            store,
            SearchRequest(query="Beta", scopes=("facts",), methods=("bm25",)),
            local_embedder(),
        )
    counts = await store.query_one("SELECT VALUE count FROM retrieval WHERE count > 0")
    assert counts == [3.0]
    # The count reaches readers of the fact, and the fact record itself was not rewritten.
    fact = (
        (
            await search(
                store,
                SearchRequest(query="Beta", scopes=("facts",), methods=("bm25",)),
                local_embedder(),
            )
        )
        .facts[0]
        .record
    )
    assert fact["retrieval_count"] == 3.0  # read before this fourth search was counted
    await store.query("UPDATE retrieval SET last_retrieved_at = time::now() - 10d WHERE count > 0")
    await decay_retrieval_counts(store, lambda_=0.1)
    decayed = await store.query_one("SELECT VALUE count FROM retrieval WHERE count > 0")
    assert decayed[0] == pytest.approx(4.0 * 2.718281828**-1.0, rel=1e-3)
