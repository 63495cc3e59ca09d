"""Entity resolution quality on the labelled pair set (tests/data/resolution_pairs.json).

Runs the set through the real resolution and persistence stages (tests/resolution_eval.py)
on the local SurrealDB server, three ways:
- no model: names decide, the rest goes to the review queue;
- a scripted model that answers "the same" to every pair it is asked about: how much a
  careless model can damage (names still block what they tell apart);
- a scripted model that answers from the labels: the most a model can add.
Prints precision, recall and F1 of automatic merges per category, and the share of
same-thing pairs left for review. Targets: 0 wrong merges; >= 90% of same-thing pairs
merged without a model, the rest in the review queue. `--knowledge` also runs the
pairs that only world knowledge links (acronyms, exonyms, pen names).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from harness import resolution_eval  # noqa: E402
from harness.llm_server import ScriptedLLM  # noqa: E402
from kgapp import surreal_server  # noqa: E402
from kgapp.graph import schema  # noqa: E402
from kgapp.graph.embeddings import local_embedder  # noqa: E402
from kgapp.graph.llm.client import LLMClient  # noqa: E402
from kgapp.graph.llm.transport import LLMConfig  # noqa: E402
from kgapp.graph.store import Pool, StoreConfig, TenantStore  # noqa: E402

_PAYLOAD = re.compile(r"<graph_update>\n(.*)\n</graph_update>", re.S)


def say_yes(body: dict[str, Any]) -> dict[str, Any]:
    payload = json.loads(_PAYLOAD.search(body["messages"][-1]["content"]).group(1))
    return {
        "entities": [{"index": e["index"], "duplicate_of": 0} for e in payload["entities"]],
        "facts": [],
    }


def from_labels(pairs: list[dict[str, Any]]):
    same = {frozenset((p["a"]["name"], p["b"]["name"])) for p in pairs if p["same"]}

    def answer(body: dict[str, Any]) -> dict[str, Any]:
        payload = json.loads(_PAYLOAD.search(body["messages"][-1]["content"]).group(1))
        decisions = []
        for entity in payload["entities"]:
            pick = next(
                (
                    c["index"]
                    for c in entity["candidates"]
                    if frozenset((entity["name"], c["name"])) in same
                ),
                None,
            )
            decisions.append({"index": entity["index"], "duplicate_of": pick})
        return {"entities": decisions, "facts": []}

    return answer


async def run(
    config: StoreConfig, namespace: str, pairs: list[dict[str, Any]], llm: LLMClient | None
):
    store = TenantStore(Pool(config, namespace))
    await schema.migrate(store, schema.load_migrations(ROOT / "schema"), embedding_dim=384)
    return await resolution_eval.evaluate(store, pairs, embedder=local_embedder(), llm=llm)


def report(title: str, outcome: resolution_eval.Outcome, seconds: float) -> None:
    print(f"\n{title} ({seconds:.1f} s)")
    print(
        f"  {'category':13} {'pairs':>5} {'precision':>9} {'recall':>7} {'F1':>6}"
        f" {'same in review':>14} {'same apart':>10} {'diff in review':>14}"
    )
    for category, row in outcome.by_category().items():
        print(
            f"  {category:13} {row['pairs']:>5} {row['precision']:>9.1%} {row['recall']:>7.1%}"
            f" {row['f1']:>6.1%} {row['same_in_review']:>14.1%} {row['same_apart']:>10}"
            f" {row['different_in_review']:>14}"
        )
    wrong = outcome.wrong_merges()
    print(
        f"  wrong merges: {len(wrong)} labelled pairs, {len(outcome.wrong_auto_merges)} merges"
        " joining names no same-thing pair links"
    )
    for pair in wrong:
        print(f"    {pair['a']['name']!r} + {pair['b']['name']!r}")
    for name, survivor in outcome.wrong_auto_merges[:10]:
        print(f"    {name!r} -> {survivor!r}")
    missed = [p for p in outcome.pairs if p["same"] and outcome.verdicts[p["id"]] != "merged"]
    if missed:
        print(
            "  same-thing pairs not merged: "
            + "; ".join(
                f"{p['a']['name']} / {p['b']['name']} ({outcome.verdicts[p['id']]})" for p in missed
            )
        )


def main(knowledge: bool) -> None:
    pairs = resolution_eval.load()
    sets = [("labelled pairs", pairs)]
    if knowledge:
        sets.append(("knowledge pairs", resolution_eval.load("knowledge_pairs")))
    print(
        f"resolution on {len(pairs)} labelled pairs "
        f"({sum(p['same'] for p in pairs)} same, {sum(not p['same'] for p in pairs)} different)"
    )
    with tempfile.TemporaryDirectory() as scratch, ScriptedLLM() as llm:
        server = surreal_server.start(storage="mem://", log=Path(scratch) / "surreal.log")
        store_config = StoreConfig(
            url=server.url, username=server.credentials.user, password=server.credentials.password
        )
        config = LLMConfig(
            base_url=llm.base_url, api_key="bench", model="scripted", timeout=10.0, max_retries=1
        )
        try:
            for n, (label, chosen) in enumerate(sets):
                for m, (mode, handler) in enumerate(
                    [
                        ("no model", None),
                        ("scripted model saying yes to every question", say_yes),
                        ("scripted model answering from the labels", from_labels(chosen)),
                    ]
                ):
                    if handler is not None:
                        llm.on_chat(handler)
                    client = LLMClient(config) if handler is not None else None
                    started = time.perf_counter()
                    outcome = asyncio.run(run(store_config, f"t_bench_res_{n}_{m}", chosen, client))
                    report(f"{label}, {mode}", outcome, time.perf_counter() - started)
        finally:
            server.stop()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--knowledge", action="store_true", help="also run the pairs only world knowledge links"
    )
    main(parser.parse_args().knowledge)
