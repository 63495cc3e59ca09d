"""Speed of the local embedder (all-MiniLM-L6-v2 on the CPU, ONNX Runtime): model load
time, process RSS once loaded, and per-call latency (median, p95) for batches of 1, 8
and 32 short texts (entity names and one-sentence facts), with the texts/second that
gives; for the 8-bit model (the default) and the float one, and how close their vectors
are.

    .venv/bin/python bench/embeddings_speed.py [--runs 50] [--threads N]
        [--precision int8 fp32]
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from kgapp.graph.embeddings import LocalMiniLM, cosine  # noqa: E402
from kgapp.graph.local_model import PRECISIONS, Precision  # noqa: E402

NAMES = [
    "Alice Johnson",
    "Acme Corporation",
    "Paris",
    "Bob Smith",
    "Globex Inc.",
    "Dr. Maria Garcia",
    "Project Atlas",
    "Berlin office",
    "Q3 revenue report",
    "Initech",
]
FACTS = [
    "Alice Johnson works at Acme Corporation as a senior engineer.",
    "Bob Smith moved from Paris to Berlin in March 2023.",
    "Globex Inc. acquired Initech for an undisclosed sum.",
    "Dr. Maria Garcia leads Project Atlas at the Berlin office.",
    "The Q3 revenue report was published on October 15.",
    "Acme Corporation opened a new office in Paris last year.",
]
TEXTS = [text for pair in zip(NAMES, FACTS + FACTS[:4], strict=True) for text in pair]


def rss_mib() -> float:
    """Current resident set size (Linux), not the peak."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def p95(samples: list[float]) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--precision", nargs="+", choices=PRECISIONS, default=list(PRECISIONS))
    args = parser.parse_args()
    print(
        f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, "
        f"python {platform.python_version()}"
    )
    vectors = {p: measure(p, args.runs, args.threads) for p in args.precision}
    if len(vectors) == 2:
        quantized, exact = vectors["int8"], vectors["fp32"]
        cosines = sorted(cosine(a, b) for a, b in zip(quantized, exact, strict=True))
        print(
            f"int8 against fp32, {len(cosines)} texts: cosine min {cosines[0]:.4f},"
            f" median {statistics.median(cosines):.4f}"
        )


def measure(precision: Precision, runs: int, threads: int | None) -> list[list[float]]:
    print(f"== {precision}")
    rss_before = rss_mib()
    embedder = LocalMiniLM(threads=threads, precision=precision)
    t0 = time.perf_counter()
    embedder.model()  # imports onnxruntime and tokenizers, maps the model
    load_s = time.perf_counter() - t0
    print(f"model load {load_s:.2f} s (imports included), threads {embedder.threads}")
    print(f"RSS {rss_before:.0f} MiB before, {rss_mib():.0f} MiB after loading")
    t0 = time.perf_counter()
    embedder.embed(["warm-up"])
    print(f"first embed call {(time.perf_counter() - t0) * 1000:.1f} ms")
    for _ in range(5):
        embedder.embed(TEXTS)
    for size in (1, 8, 32):
        batch = [TEXTS[i % len(TEXTS)] for i in range(size)]
        samples = []
        for _ in range(runs):
            t0 = time.perf_counter()
            embedder.embed(batch)
            samples.append(time.perf_counter() - t0)
        median = statistics.median(samples)
        print(
            f"batch {size:3d}: median {median * 1000:7.2f} ms  p95 {p95(samples) * 1000:7.2f} ms"
            f"  {size / median:7.0f} texts/s"
        )
    print(f"RSS {rss_mib():.0f} MiB after the runs")
    return embedder.embed(TEXTS)


if __name__ == "__main__":
    main()
