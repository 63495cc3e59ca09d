"""`make bench-compare`'s own parts that need no peer installed: the generated corpus,
the scoring against it, and this product's run through the bench's harness (its own
process, its own SurrealDB server), so the comparison cannot rot unnoticed."""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from bench.compare import corpus as gold
from bench.compare import report, score
from bench.compare.systems.base import SystemEntity, SystemFact

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def corpus() -> gold.Corpus:
    return gold.generate(120, seed=3)


def test_the_corpus_is_the_same_for_the_same_seed(corpus) -> None:
    again = gold.generate(120, seed=3)
    assert [e.text for e in again.episodes] == [e.text for e in corpus.episodes]
    assert [e.text for e in gold.generate(120, seed=4).episodes] != [
        e.text for e in corpus.episodes
    ]


def test_every_fact_sentence_names_one_gold_fact(corpus) -> None:
    texts = Counter(f.text for f in corpus.facts.values())
    assert max(texts.values()) == 1
    for fact in corpus.facts.values():
        episode = corpus.episode_by_id[fact.episode]
        assert episode.surface_of(fact.subject) in fact.text
        assert episode.surface_of(fact.object) in fact.text


def test_single_valued_facts_end_where_the_next_begins(corpus) -> None:
    for fact in corpus.ended_facts():
        successors = [
            f
            for f in corpus.facts.values()
            if corpus.conflict(fact, f) and f.valid_from == fact.valid_to
        ]
        assert successors, fact.text
    # Each point-in-time question's answer held at its moment, and no rival did.
    for question in corpus.questions:
        answer = corpus.facts[question.answer]
        moment = question.at or answer.valid_from
        assert answer.holds_at(moment)
        rivals = [f for f in corpus.facts.values() if corpus.conflict(answer, f)]
        assert not any(f.holds_at(moment) for f in rivals)


def test_some_episodes_arrive_after_later_news(corpus) -> None:
    late = [e for e in corpus.episodes if e.late]
    assert late
    for episode in late:
        at = corpus.episodes.index(episode)
        assert any(e.reference_time > episode.reference_time for e in corpus.episodes[:at])


def test_look_alike_names_are_different_entities(corpus) -> None:
    assert not corpus.same_entity("Atlas 2", "Atlas 3")
    assert not corpus.same_entity("Apex Health", "Apex Health Europe")
    assert corpus.same_entity("Atlas v3", "Atlas 3")
    assert corpus.same_entity("Dr. Maria Lopez", "maria lopez")


def test_scoring_counts_duplicates_and_wrong_merges(corpus) -> None:
    fact = next(f for f in corpus.facts.values() if f.relation == "WORKS_AT")
    episode = corpus.episode_by_id[fact.episode]
    person, org = corpus.entities[fact.subject], corpus.entities[fact.object]
    other = next(e for e in corpus.entities.values() if e.type == "Organization" and e != org)
    held = [
        SystemEntity(person.name),
        SystemEntity(person.name.upper()),  # a duplicate
        SystemEntity(other.name, aliases=(org.name,)),
    ]  # org merged into another
    facts = [SystemFact(fact.text, episode.surface_of(fact.subject), other.name, True)]
    result = score.entities(corpus, [episode], held, facts)
    assert result.duplicates_left == 1
    assert result.wrong_merges == {frozenset((org.id, other.id))}
    # Only the person has an entity of its own: the organisation lives on as an alias.
    assert result.missing == len({m.entity for m in episode.mentions}) - 1


def test_scoring_counts_ended_facts_held_as_current(corpus) -> None:
    ended = corpus.ended_facts()[:3]
    holding = corpus.current_facts()[:2]
    facts = [SystemFact(f.text, "a", "b", True) for f in ended + holding]
    episodes = [corpus.episode_by_id[f.episode] for f in ended + holding]
    figures = score.currency(corpus, episodes, facts)
    assert figures["wrongly_current"] == 3
    assert figures["holding_current"] == figures["holding"]


def test_this_product_through_the_bench(tmp_path) -> None:
    out = tmp_path / "kgapp.json"
    subprocess.run(
        [sys.executable, "-m", "bench.compare.run", "kgapp", "--episodes", "16", "--out", str(out)],
        cwd=ROOT,
        check=True,
        capture_output=True,
        timeout=300,
    )
    result = json.loads(out.read_text())
    ingest = result["ingest"]
    assert ingest["failed"] == 0 and ingest["unanswered_prompts"] == 0
    assert ingest["calls_by_task"]["extract_graph"] == 1.0
    assert result["entities"]["wrong_merges"] == 0
    assert result["facts"]["gold_facts_stored"] == result["facts"]["facts_stated"]
    assert result["search"]["questions"]["current"] > 0
    assert result["peak_rss_mb"] > 0
    # The report renders what a run wrote, peers absent included.
    text = report.markdown(
        {"date": "d", "machine": "m", "corpus": "c", "latency_episodes": 1, "locomo": None},
        {"kgapp": {"quality": result}},
    )
    assert "| Model calls per episode | 1." in text


def test_the_ratios_say_whether_own_ingest_is_at_most_half_of_graphitis() -> None:
    def run(own: float) -> dict:
        return {"ingest": {"own_ms_median": own, "calls_per_episode": 1.0}}

    results = {
        "kgapp": {"quality": run(60), "locomo": run(150)},
        "graphiti": {"quality": run(130), "locomo": run(200)},
    }
    line = report.ratios(results)[-1]
    assert "0.46× on the generated corpus (met)" in line
    assert "0.75× on LoCoMo (not met)" in line
    assert report.ratios({"kgapp": {"quality": run(60)}}) == []


def test_alternating_rounds_decide_the_ratio_where_they_ran() -> None:
    def run(own: float) -> dict:
        return {"ingest": {"own_ms_median": own, "calls_per_episode": 1.0}}

    results = {
        "kgapp": {
            "quality": run(90),
            "locomo": run(150),
            "rounds": {"generated": [50, 70, 40], "locomo": [60, 80, 70]},
        },
        "graphiti": {
            "quality": run(100),
            "locomo": run(200),
            "rounds": {"generated": [100, 120, 90], "locomo": [150, 130, 140]},
        },
    }
    lines = report.ratios(results)
    assert "kgapp 50 / 70 / 40 ms, Graphiti 100 / 120 / 90 ms" in lines[-3]
    assert "0.50× on the generated corpus (met)" in lines[-1]  # 50 over 100, the medians
    assert "0.50× on LoCoMo (met)" in lines[-1]  # 70 over 140
