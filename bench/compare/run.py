"""One system, one process, one measurement; prints its figures as JSON (the driver,
bench/compare/__main__.py, runs one of these per system and mode, so peak memory is each
system's own).

    python -m bench.compare.run kgapp|graphiti|lightrag --mode quality|latency|locomo
        [--episodes 300] [--seed 7] [--latency-ms 0] --out FILE

- quality: the corpus ingested one episode at a time, with the calls, tokens and times
  of each episode; then the graph scored against the gold (score.py) and the questions
  asked (top 5; point-in-time ones as of their moment where the system can).
- latency: end-to-end ingest time per episode only, with `--latency-ms` per model call.
- locomo: one LoCoMo conversation ingested, then each QA question's context (8,000
  characters) checked for its answer.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import resource
import statistics
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("GRAPHITI_TELEMETRY_ENABLED", "false")
ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from bench.compare import corpus as gold  # noqa: E402
from bench.compare import score  # noqa: E402
from bench.compare.model import BenchModel, Embeddings, busy_seconds  # noqa: E402
from bench.compare.systems.base import System, Unsupported  # noqa: E402
from bench.extraction import quantile  # noqa: E402

CONTEXT_CHARS = 8_000
TOP_K = 5


def quiet() -> None:
    """The peers log every HTTP request and storage step at INFO: keep warnings only."""
    logging.basicConfig(level=logging.WARNING)
    for name in ("httpx", "httpx2", "nano-vectordb", "lightrag", "graphiti_core", "neo4j", "bm25s"):
        logging.getLogger(name).setLevel(logging.WARNING)


def system_named(name: str) -> type[System]:
    if name == "kgapp":
        from bench.compare.systems.kgapp import KgappSystem

        return KgappSystem
    if name == "graphiti":
        from bench.compare.systems.graphiti import GraphitiSystem

        return GraphitiSystem
    if name == "lightrag":
        from bench.compare.systems.lightrag import LightRAGSystem

        return LightRAGSystem
    raise SystemExit(f"unknown system {name!r}: kgapp, graphiti or lightrag")


async def ingest_all(
    system: System, model: BenchModel, episodes: list[gold.Episode]
) -> dict[str, Any]:
    walls, own, calls, inputs, outputs = [], [], [], [], []
    tasks: Counter[str] = Counter()
    failed = 0
    for episode in episodes:
        started = time.perf_counter()
        try:
            await system.ingest(episode)
        except Exception as error:  # counted and shown; the run goes on
            failed += 1
            print(f"  {episode.id} failed: {error!r}"[:400], file=sys.stderr)
        finished = time.perf_counter()
        made = model.calls_between(started, finished)
        walls.append(finished - started)
        own.append(max(0.0, finished - started - busy_seconds(made)))
        calls.append(len(made))
        inputs.append(sum(c.input_tokens for c in made))
        outputs.append(sum(c.output_tokens for c in made))
        tasks.update(c.task for c in made)
    count = len(episodes)
    return {
        "episodes": count,
        "failed": failed,
        "wall_s": sum(walls),
        "wall_ms_median": statistics.median(walls) * 1000,
        "wall_ms_p95": quantile(walls, 0.95) * 1000,
        "own_ms_median": statistics.median(own) * 1000,
        "own_ms_p95": quantile(own, 0.95) * 1000,
        "calls_per_episode": sum(calls) / count,
        "input_tokens_per_episode": sum(inputs) / count,
        "output_tokens_per_episode": sum(outputs) / count,
        "calls_by_task": {task: n / count for task, n in sorted(tasks.items())},
        "unanswered_prompts": len(model.unknown),
        "unanswered_sample": model.unknown[:3],
    }


async def questions(system: System, corpus: gold.Corpus) -> dict[str, Any]:
    hits: dict[str, list[bool]] = {"current": [], "point_in_time": [], "point_in_time_plain": []}
    latencies: list[float] = []
    unsupported = ""
    for question in corpus.questions:
        answer = corpus.facts[question.answer].text
        kind = "current" if question.at is None else "point_in_time"
        try:
            started = time.perf_counter()
            found = await system.search(question.text, TOP_K, question.at)
            latencies.append(time.perf_counter() - started)
            hits[kind].append(any(answer in text for text in found))
        except Unsupported as error:
            unsupported = str(error)
        if question.at is not None:  # the same question with no moment: what plain search gives
            found = await system.search(question.text, TOP_K)
            hits["point_in_time_plain"].append(any(answer in text for text in found))
    share = {k: (sum(v) / len(v) if v else None) for k, v in hits.items()}
    everything = hits["current"] + hits["point_in_time"]
    return {
        "top5_overall": sum(everything) / len(everything) if everything else None,
        "top5_current": share["current"],
        "top5_point_in_time": share["point_in_time"],
        "top5_point_in_time_without_moment": share["point_in_time_plain"],
        "point_in_time_unsupported": unsupported or None,
        "questions": {k: len(v) for k, v in hits.items()},
        "search_ms_p50": quantile(latencies, 0.5) * 1000,
        "search_ms_p95": quantile(latencies, 0.95) * 1000,
    }


def peak_rss_mb(system: System) -> float:
    own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    pid = getattr(system, "server_pid", None)  # a database server of its own (SurrealDB)
    if pid is not None:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                own += int(line.split()[1]) / 1024
    return own


async def measure(args: argparse.Namespace) -> dict[str, Any]:
    kind = system_named(args.system)
    quiet()
    if args.mode == "locomo":
        from bench.compare import locomo

        corpus, qa = locomo.load(Path(args.locomo))
    else:
        corpus, qa = gold.generate(args.episodes, args.seed), []
    embeddings = Embeddings()
    embeddings.embed(["warm up"])
    system = kind()
    result: dict[str, Any] = {"system": kind.name, "mode": args.mode, "latency_ms": args.latency_ms}
    with (
        tempfile.TemporaryDirectory(prefix=f"compare-{args.system}-") as workdir,
        BenchModel(kind.answerer(corpus), args.latency_ms / 1000) as model,
    ):
        await system.open(Path(workdir), model, embeddings)
        try:
            result["ingest"] = await ingest_all(system, model, corpus.episodes)
            if args.mode == "quality":
                held, facts = await system.entities(), await system.facts()
                result["entities"] = score.entities(corpus, corpus.episodes, held, facts).as_dict()
                result["facts"] = score.currency(corpus, corpus.episodes, facts)
                result["search"] = await questions(system, corpus)
            elif args.mode == "locomo":
                result["locomo"] = await answers(system, qa)
            result["peak_rss_mb"] = peak_rss_mb(system)
        finally:
            await system.close()
    return result


async def answers(system: System, qa: list[dict[str, Any]]) -> dict[str, Any]:
    from bench.extraction import answer_present

    found: dict[str, list[bool]] = {}
    lengths = []
    for item in qa:
        context = await system.context(str(item["question"]), CONTEXT_CHARS)
        lengths.append(len(context))
        found.setdefault(str(item["category"]), []).append(
            answer_present(str(item["answer"]), context)
        )
    every = [x for rows in found.values() for x in rows]
    return {
        "questions": len(every),
        "answer_in_context": sum(every) / len(every) if every else None,
        "by_category": {k: sum(v) / len(v) for k, v in sorted(found.items())},
        "context_chars_median": statistics.median(lengths) if lengths else 0,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("system")
    parser.add_argument("--mode", choices=("quality", "latency", "locomo"), default="quality")
    parser.add_argument("--episodes", type=int, default=300)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--latency-ms", type=float, default=0.0)
    parser.add_argument(
        "--locomo", default=str(ROOT.parent / "shared/data/conversations/locomo/26.json")
    )
    parser.add_argument("--out")
    args = parser.parse_args()
    result = asyncio.run(measure(args))
    text = json.dumps(result, indent=1, default=str)
    if args.out:
        Path(args.out).write_text(text)
    print(text)


if __name__ == "__main__":
    main()
