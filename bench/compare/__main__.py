"""`make bench-compare`: this product, graphiti-core and LightRAG side by side, in one
run on this machine, with the same corpus, the same scripted model and the same
embedder; writes docs/benchmarks.md (the table), docs/benchmarks.json (every figure)
and docs/img/compare.png (the plot).

    var/compare/venv/bin/python -m bench.compare [--episodes 300] [--latency-episodes 30]
        [--systems kgapp graphiti lightrag] [--no-locomo]

Each measurement runs in its own process (bench/compare/run.py), one system at a time.
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


def run(system: str, mode: str, *extra: str) -> dict[str, Any]:
    out = RESULTS / f"{system}-{mode}.json"
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
