"""`make bench-compare`: this product, graphiti-core and LightRAG side by side, in one
run on this machine, with the same corpus, the same scripted model and the same
embedder; writes docs/benchmarks.md (the table), docs/benchmarks.json (every figure)
and docs/img/compare.png (the plot).

    var/compare/venv/bin/python -m bench.compare [--episodes 300] [--latency-episodes 30]
        [--systems kgapp graphiti lightrag] [--no-locomo] [--rounds 3]

Each measurement runs in its own process (bench/compare/run.py), one system at a time.
Then this product's own ingest time and Graphiti's are measured again in `--rounds`
rounds, the two in turn (kgapp, Graphiti, kgapp, ...), on both corpora: on a machine
whose disk and neighbours vary by the minute, one run of each apart gives a ratio that
moves by a tenth from one run to the next; their medians over alternating rounds, less.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench.compare import corpus as gold
from bench.compare import locomo

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "var" / "compare" / "results"
SYSTEMS = ("kgapp", "graphiti", "lightrag")


def run(system: str, mode: str, *extra: str, name: str = "") -> dict[str, Any]:
    out = RESULTS / f"{system}-{mode}{name}.json"
    command = [
        sys.executable,
        "-m",
        "bench.compare.run",
        system,
        "--mode",
        mode,
        "--out",
        str(out),
        *extra,
    ]
    print(f"== {system} {mode} {' '.join(extra)}", flush=True)
    done = subprocess.run(command, cwd=ROOT, stdout=subprocess.DEVNULL, check=False)
    if done.returncode != 0 or not out.exists():
        return {"error": f"exit {done.returncode}"}
    return json.loads(out.read_text())


def rounds(
    results: dict[str, dict[str, Any]], count: int, episodes: int, conversation: Path | None
) -> None:
    """Own ingest time per episode (median) of this product and of Graphiti, `count`
    rounds each, in turn, into results[system]["rounds"][corpus]: the generated corpus
    ingested with the model answering at once (no scoring), and LoCoMo."""
    for number in range(count):
        for system in ("kgapp", "graphiti"):
            held = results[system].setdefault("rounds", {"generated": [], "locomo": []})
            name = f"-round{number}"
            found = run(
                system, "latency", "--episodes", str(episodes), "--latency-ms", "0", name=name
            )
            held["generated"].append((found.get("ingest") or {}).get("own_ms_median"))
            if conversation is not None:
                found = run(system, "locomo", "--locomo", str(conversation), name=name)
                held["locomo"].append((found.get("ingest") or {}).get("own_ms_median"))


def machine() -> str:
    cpu = next(
        (
            line.split(":", 1)[1].strip()
            for line in Path("/proc/cpuinfo").read_text().splitlines()
            if line.startswith("model name")
        ),
        platform.processor(),
    )
    memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    return f"{os.cpu_count()} cores ({cpu}), {memory:.0f} GiB, Python {platform.python_version()}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--episodes", type=int, default=300)
    parser.add_argument("--latency-episodes", type=int, default=30)
    parser.add_argument("--systems", nargs="+", default=list(SYSTEMS), choices=SYSTEMS)
    parser.add_argument("--no-locomo", action="store_true")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    RESULTS.mkdir(parents=True, exist_ok=True)
    conversation = locomo.DATA / "26.json"
    results: dict[str, dict[str, Any]] = {}
    for system in args.systems:
        results[system] = {
            "quality": run(system, "quality", "--episodes", str(args.episodes)),
            "latency": run(
                system, "latency", "--episodes", str(args.latency_episodes), "--latency-ms", "300"
            ),
        }
        if not args.no_locomo and conversation.exists():
            results[system]["locomo"] = run(system, "locomo", "--locomo", str(conversation))
    if args.rounds and {"kgapp", "graphiti"} <= set(args.systems):
        locomo_path = conversation if not args.no_locomo and conversation.exists() else None
        rounds(results, args.rounds, args.episodes, locomo_path)
    meta = {
        "date": datetime.now(UTC).strftime("%Y-%m-%d"),
        "machine": machine(),
        "corpus": gold.summary(gold.generate(args.episodes)),
        "episodes": args.episodes,
        "latency_episodes": args.latency_episodes,
        "locomo": str(conversation.relative_to(ROOT.parent)) if conversation.exists() else None,
    }
    from bench.compare import report

    (ROOT / "docs" / "benchmarks.json").write_text(
        json.dumps({"meta": meta, "results": results}, indent=1, default=str) + "\n"
    )
    (ROOT / "docs" / "benchmarks.md").write_text(report.markdown(meta, results))
    report.plot(results, ROOT / "docs" / "img" / "compare.png")
    print((ROOT / "docs" / "benchmarks.md").read_text())


if __name__ == "__main__":
    main()
