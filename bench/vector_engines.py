"""Vector search engines for the fact index, measured on real MiniLM vectors.

Compares the exact scan we have now (numpy `matrix @ query` over a memory-mapped
matrix, then a boolean mask) with usearch (HNSW over f32, f16 or i8 vectors, opened as
a memory-mapped view), faiss (HNSWFlat and the exact IndexFlatIP, read memory-mapped)
and hnswlib, on the vectors of the synthetic fact sentences of bench/search.py (384-d,
unit length; embedding 100,000 sentences takes several minutes on two cores the first
time, later runs load them from var/bench/).

Per engine: the time to add every vector (2 threads) and to write the file, its size;
then, in a fresh process with the engine's files evicted from the page cache, the time
to open the file and answer a first search, and the private memory (RssAnon) that
importing the library, opening the index and running every query add to the process,
beside the file pages it maps (RssFile, shared between processes). Then, for three
filters (none, a random 70 % of rows, a random 5 % of rows), p50/p95 latency of one
query at a time on one thread, k = 40, recall@40 against the exact answer (a row that
ties with the 40th exact score counts as a hit), and the share of queries answered by
an exact scan.

usearch's search takes no predicate: it over-fetches ceil(k * oversample / mask share)
rows and drops those outside the mask, and scans the masked rows exactly when fewer
than k survive or when the mask keeps less than --exact-below of the rows. A sweep over
mask shares times both paths on their own to show where the exact scan wins. Last, a
writer loads the usearch f16 index, adds rows, saves a new file and renames it over the
old one while a reader's view of the old file stays open.

    .venv/bin/python bench/vector_engines.py [--facts 100000] [--queries 200]
"""

from __future__ import annotations

import argparse
import importlib
import json
import math
import os
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
WORKDIR = ROOT / "var" / "bench" / "vector-engines"
K = 40
NOISE = 0.5  # norm of the gaussian noise added to a fact's vector to make a query
FILTERS = {"none": 1.0, "70%": 0.7, "5%": 0.05}
SWEEP_SHARES = (0.5, 0.2, 0.1, 0.05, 0.02, 0.01)
SWEEP_ENGINE = "usearch-f16"
MATRIX = "matrix.npy"
TIE = 1e-5  # scores this close to the 40th exact score count as ties

Settings = argparse.Namespace  # the command line's options


def memory() -> dict[str, float]:
    """This process's resident private (RssAnon) and file-backed (RssFile) memory, MiB."""
    fields = {}
    with open("/proc/self/status") as status:
        for line in status:
            name, _, value = line.partition(":")
            if name in ("RssAnon", "RssFile"):
                fields[name] = int(value.split()[0]) / 1024
    return fields


def timed(call: Callable[..., Any], *args: Any, **kwargs: Any) -> tuple[float, Any]:
    started = time.perf_counter()
    result = call(*args, **kwargs)
    return time.perf_counter() - started, result


def top_k(scores: np.ndarray) -> np.ndarray:
    """Positions of the K highest scores, best first."""
    top = np.argpartition(-scores, K)[:K] if len(scores) > K else np.arange(len(scores))
    return top[np.argsort(-scores[top])]


def exact_masked(matrix: np.ndarray, query: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """The K best rows among those the mask keeps, scoring only those rows."""
    rows = np.flatnonzero(mask)
    return rows[top_k(matrix[rows] @ query)]


class Searcher:
    """An open index in a reader process; `exact_searches` counts exact scans."""

    exact_searches = 0

    def search(self, query: np.ndarray, mask: np.ndarray | None) -> np.ndarray:
        raise NotImplementedError


class NumpyScan(Searcher):
    """What we have now: score every row, then drop the rows outside the mask."""

    def __init__(self, path: Path, settings: Settings) -> None:
        self.matrix = np.load(path, mmap_mode="r")

    def search(self, query: np.ndarray, mask: np.ndarray | None) -> np.ndarray:
        self.exact_searches += 1
        scores = self.matrix @ query
        return top_k(scores if mask is None else np.where(mask, scores, -np.inf))


class UsearchView(Searcher):
    def __init__(self, path: Path, settings: Settings) -> None:
        from usearch.index import Index

        # Keys are row numbers and are never looked up: the key-to-slot table would only
        # cost private memory (about 4 MiB at 100k rows).
        self.index = Index.restore(str(path), view=True, enable_key_lookups=False)
        self.matrix = np.load(path.parent / MATRIX, mmap_mode="r")  # for the exact scans
        self.oversample, self.exact_below = settings.oversample, settings.exact_below

    def overfetch(self, query: np.ndarray, mask: np.ndarray, share: float) -> np.ndarray:
        """The approximate best rows that the mask keeps: K or fewer."""
        count = min(len(self.index), math.ceil(K * self.oversample / share))
        keys = self.index.search(query, count, threads=1).keys.astype(np.int64)
        return keys[mask[keys]][:K]

    def search(self, query: np.ndarray, mask: np.ndarray | None) -> np.ndarray:
        if mask is None:
            return self.index.search(query, K, threads=1).keys.astype(np.int64)
        share = np.count_nonzero(mask) / len(mask)
        if share >= self.exact_below:
            kept = self.overfetch(query, mask, share)
            if len(kept) == K:
                return kept
        self.exact_searches += 1
        return exact_masked(self.matrix, query, mask)


class FaissReader(Searcher):
    def __init__(self, path: Path, settings: Settings, flag: str) -> None:
        import faiss

        faiss.omp_set_num_threads(1)
        self.faiss = faiss
        self.index = faiss.read_index(str(path), getattr(faiss, flag))
        self.hnsw = isinstance(self.index, faiss.IndexHNSW)
        self.ef = settings.expansion_search

    def search(self, query: np.ndarray, mask: np.ndarray | None) -> np.ndarray:
        faiss = self.faiss
        bits = None if mask is None else np.packbits(mask, bitorder="little")
        selector = None if bits is None else faiss.IDSelectorBitmap(len(mask), faiss.swig_ptr(bits))
        if self.hnsw:
            params = faiss.SearchParametersHNSW(sel=selector, efSearch=self.ef)
        else:
            self.exact_searches += 1
            params = faiss.SearchParameters(sel=selector)
        _, ids = self.index.search(query[None, :], K, params=params)
        return ids[0]


class HnswlibReader(Searcher):
    """hnswlib cannot map its file: load_index reads all of it into private memory."""

    def __init__(self, path: Path, settings: Settings) -> None:
        import hnswlib

        self.index = hnswlib.Index(space="ip", dim=settings.dim)
        self.index.load_index(str(path))
        self.index.set_ef(settings.expansion_search)

    def search(self, query: np.ndarray, mask: np.ndarray | None) -> np.ndarray:
        labels, _ = self.index.knn_query(
            query, K, num_threads=1, filter=None if mask is None else mask.item
        )
        return labels[0].astype(np.int64)


Build = Callable[[np.ndarray, Path, Settings], tuple[float, float]]


def build_numpy(matrix: np.ndarray, path: Path, settings: Settings) -> tuple[float, float]:
    return 0.0, timed(np.save, path, matrix)[0]


def build_usearch(dtype: str) -> Build:
    def build(matrix: np.ndarray, path: Path, settings: Settings) -> tuple[float, float]:
        from usearch.index import Index

        index = Index(
            ndim=settings.dim,
            metric="ip",
            dtype=dtype,
            connectivity=settings.connectivity,
            expansion_add=settings.expansion_add,
            expansion_search=settings.expansion_search,
        )
        added, _ = timed(index.add, np.arange(len(matrix)), matrix, threads=2)
        return added, timed(index.save, str(path))[0]

    return build


def build_faiss(kind: str) -> Build:
    def build(matrix: np.ndarray, path: Path, settings: Settings) -> tuple[float, float]:
        import faiss

        faiss.omp_set_num_threads(2)
        if kind == "hnsw":
            index = faiss.IndexHNSWFlat(
                settings.dim, settings.connectivity, faiss.METRIC_INNER_PRODUCT
            )
            index.hnsw.efConstruction = settings.expansion_add
        else:
            index = faiss.IndexFlatIP(settings.dim)
        added, _ = timed(index.add, matrix)
        return added, timed(faiss.write_index, index, str(path))[0]

    return build


def build_hnswlib(matrix: np.ndarray, path: Path, settings: Settings) -> tuple[float, float]:
    import hnswlib

    index = hnswlib.Index(space="ip", dim=settings.dim)
    index.init_index(
        max_elements=len(matrix), M=settings.connectivity, ef_construction=settings.expansion_add
    )
    added, _ = timed(index.add_items, matrix, np.arange(len(matrix)), num_threads=2)
    return added, timed(index.save_index, str(path))[0]


@dataclass(frozen=True)
class Engine:
    label: str
    file: str
    module: str  # the library a reader imports
    open: Callable[[Path, Settings], Searcher]
    build: Build | None  # None: reads a file that another engine writes


def faiss_reader(flag: str) -> Callable[[Path, Settings], Searcher]:
    return lambda path, settings: FaissReader(path, settings, flag)


ENGINES = {
    "numpy": Engine("numpy exact scan (now)", MATRIX, "numpy", NumpyScan, build_numpy),
    "usearch-f32": Engine(
        "usearch f32 view", "f32.usearch", "usearch.index", UsearchView, build_usearch("f32")
    ),
    "usearch-f16": Engine(
        "usearch f16 view", "f16.usearch", "usearch.index", UsearchView, build_usearch("f16")
    ),
    "usearch-i8": Engine(
        "usearch i8 view", "i8.usearch", "usearch.index", UsearchView, build_usearch("i8")
    ),
    "faiss-hnsw": Engine(
        "faiss HNSWFlat MMAP_IFC",
        "hnsw.faiss",
        "faiss",
        faiss_reader("IO_FLAG_MMAP_IFC"),
        build_faiss("hnsw"),
    ),
    "faiss-hnsw-mmap": Engine(
        "faiss HNSWFlat IO_FLAG_MMAP", "hnsw.faiss", "faiss", faiss_reader("IO_FLAG_MMAP"), None
    ),
    "faiss-flat": Engine(
        "faiss FlatIP MMAP_IFC",
        "flat.faiss",
        "faiss",
        faiss_reader("IO_FLAG_MMAP_IFC"),
        build_faiss("flat"),
    ),
    "hnswlib": Engine(
        "hnswlib (load_index)", "index.hnswlib", "hnswlib", HnswlibReader, build_hnswlib
    ),
}


def evict(path: Path) -> None:
    """Drops the file's pages from the page cache, as after a machine restart."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


def sweep(searcher: UsearchView, queries: np.ndarray, rng: np.random.Generator) -> list[dict]:
    """Over-fetch alone against the exact scan alone, for masks of falling share."""
    matrix, rows = searcher.matrix, len(searcher.matrix)
    figures = []
    for share in SWEEP_SHARES:
        mask = rng.random(rows) < share
        over_s, exact_s, recalls, short = [], [], [], 0
        for query in queries:
            seconds, exact = timed(exact_masked, matrix, query, mask)
            exact_s.append(seconds)
            seconds, kept = timed(searcher.overfetch, query, mask, share)
            over_s.append(seconds)
            short += len(kept) < K
            kth = matrix[exact[-1]] @ query
            recalls.append(np.count_nonzero(matrix[kept] @ query >= kth - TIE) / K)
        figures.append(
            {
                "share": share,
                "over_s": over_s,
                "exact_s": exact_s,
                "recall": float(np.mean(recalls)),
                "short": short / len(queries),
            }
        )
    return figures


def read(key: str, settings: Settings) -> dict:
    """The reader process: open one engine's file cold, then run every query."""
    engine = ENGINES[key]
    start = memory()
    importlib.import_module(engine.module)
    imported = memory()
    inputs = np.load(settings.workdir / "inputs.npz")
    queries = inputs["queries"]
    masks = {name: inputs[name] if name in inputs.files else None for name in FILTERS}
    path = settings.workdir / engine.file
    for name in {engine.file, MATRIX}:
        evict(settings.workdir / name)
    before = memory()
    open_s, searcher = timed(engine.open, path, settings)
    opened = memory()
    first_s, _ = timed(searcher.search, queries[0], None)
    for query in queries:  # warm the page cache, as a long-running reader's would be
        searcher.search(query, None)
    results = {}
    for name, mask in masks.items():
        searcher.exact_searches = 0
        seconds, ids = [], []
        for query in queries:
            elapsed, found = timed(searcher.search, query, mask)
            seconds.append(elapsed)
            ids.append(found.tolist())
        results[name] = {
            "seconds": seconds,
            "ids": ids,
            "exact": searcher.exact_searches / len(queries),
        }
    after = memory()
    report = {
        "import_mib": imported["RssAnon"] - start["RssAnon"],
        "open_s": open_s,
        "first_s": first_s,
        "opened_mib": opened["RssAnon"] - before["RssAnon"],
        "queried_mib": after["RssAnon"] - before["RssAnon"],
        "mapped_mib": after["RssFile"] - before["RssFile"],
        "filters": results,
    }
    if key == SWEEP_ENGINE:
        assert isinstance(searcher, UsearchView)
        report["sweep"] = sweep(searcher, queries, np.random.default_rng(settings.seed + 1))
    return report


def fact_vectors(count: int) -> np.ndarray:
    """The MiniLM vectors of bench/search.py's first `count` fact sentences."""
    sys.path.insert(0, str(ROOT))
    from bench.search import build, embedded
    from kgapp.graph.embeddings import local_embedder

    _, facts = build(count)
    vectors = embedded([fact["fact"] for fact in facts], local_embedder())
    return np.ascontiguousarray(vectors, dtype=np.float32)


def noisy(matrix: np.ndarray, count: int, rng: np.random.Generator) -> np.ndarray:
    """`count` random rows moved by gaussian noise of norm about NOISE, renormalised."""
    rows = matrix[rng.choice(len(matrix), count, replace=False)]
    moved = rows + rng.normal(0, NOISE / math.sqrt(matrix.shape[1]), rows.shape)
    return (moved / np.linalg.norm(moved, axis=1, keepdims=True)).astype(np.float32)


def percentile(seconds: list[float], fraction: float) -> float:
    ordered = sorted(seconds)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))] * 1000


def truth(matrix: np.ndarray, queries: np.ndarray, mask: np.ndarray | None) -> np.ndarray:
    """Every row's exact score for every query, -inf outside the mask."""
    scores = queries @ matrix.T
    if mask is not None:
        scores[:, ~mask] = -np.inf
    return scores


def recall(scores: np.ndarray, found: list[list[int]]) -> float:
    """Mean recall@K: the share of the exact K best rows (ties included) returned."""
    kth = -np.partition(-scores, K - 1, axis=1)[:, K - 1]
    hits = []
    for row, ids, threshold in zip(scores, found, kth, strict=True):
        returned = np.asarray(ids, dtype=np.int64)
        returned = returned[returned >= 0]
        hits.append(np.count_nonzero(row[returned] >= threshold - TIE) / K)
    return float(np.mean(hits))


def update(settings: Settings, matrix: np.ndarray, rng: np.random.Generator) -> dict:
    """A writer adds rows and saves a new file beside the one a reader has in view."""
    from usearch.index import Index

    path = settings.workdir / ENGINES["usearch-f16"].file
    load_s, writer = timed(Index.restore, str(path))
    reader = Index.restore(str(path), view=True, enable_key_lookups=False)
    fresh = noisy(matrix, settings.added, rng)
    keys = np.arange(len(matrix), len(matrix) + len(fresh))
    add_s, _ = timed(writer.add, keys, fresh, threads=2)
    staged = path.with_name(path.name + ".new")
    save_s, _ = timed(writer.save, str(staged))
    os.replace(staged, path)  # the reader's map keeps the old file's pages
    old_view_works = len(reader.search(fresh[0], K, threads=1).keys) == K
    view_s, reader = timed(Index.restore, str(path), view=True, enable_key_lookups=False)
    found = np.mean(
        [key in reader.search(row, K, threads=1).keys for row, key in zip(fresh, keys, strict=True)]
    )
    return {
        "load_s": load_s,
        "add_s": add_s,
        "save_s": save_s,
        "view_s": view_s,
        "old_view_works": old_view_works,
        "found": float(found),
        "rows": len(writer),
    }


def run_reader(key: str, settings: Settings) -> dict:
    """Runs `read` in a fresh interpreter, one thread for BLAS and OpenMP."""
    command = [
        sys.executable,
        __file__,
        "--reader",
        key,
        "--workdir",
        str(settings.workdir),
        "--connectivity",
        str(settings.connectivity),
        "--expansion-search",
        str(settings.expansion_search),
        "--oversample",
        str(settings.oversample),
        "--exact-below",
        str(settings.exact_below),
        "--seed",
        str(settings.seed),
    ]
    env = {**os.environ, "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}
    done = subprocess.run(command, env=env, check=True, stdout=subprocess.PIPE, text=True)
    return json.loads(done.stdout)


def main(settings: Settings) -> None:
    rng = np.random.default_rng(settings.seed)
    matrix = fact_vectors(settings.facts)
    settings.dim = matrix.shape[1]
    queries = noisy(matrix, settings.queries, rng)
    masks = {
        name: None if share == 1.0 else rng.random(len(matrix)) < share
        for name, share in FILTERS.items()
    }
    settings.workdir.mkdir(parents=True, exist_ok=True)
    np.savez(
        settings.workdir / "inputs.npz",
        queries=queries,
        **{name: mask for name, mask in masks.items() if mask is not None},
    )
    print(
        f"{len(matrix)} facts, {matrix.shape[1]}-d; {len(queries)} queries, k = {K}; "
        f"M = {settings.connectivity}, ef_add = {settings.expansion_add}, "
        f"ef_search = {settings.expansion_search}; usearch over-fetch x{settings.oversample}, "
        f"exact below {settings.exact_below:.0%} of rows; load average {os.getloadavg()[0]:.2f}"
    )

    print(
        f"\n{'engine':<26}{'add s':>8}{'save s':>8}{'file MiB':>10}{'import':>8}"
        f"{'open ms':>9}{'1st ms':>8}{'anon open':>11}{'anon all':>10}{'mapped':>8}"
    )
    reports = {}
    for key, engine in ENGINES.items():
        path = settings.workdir / engine.file
        add_s, save_s = engine.build(matrix, path, settings) if engine.build else (0.0, 0.0)
        reports[key] = report = run_reader(key, settings)
        built = f"{add_s:8.1f}{save_s:8.2f}" if engine.build else f"{'(same file)':>16}"
        print(
            f"{engine.label:<26}{built}{path.stat().st_size / 2**20:10.1f}"
            f"{report['import_mib']:8.1f}{report['open_s'] * 1000:9.1f}"
            f"{report['first_s'] * 1000:8.1f}{report['opened_mib']:11.1f}"
            f"{report['queried_mib']:10.1f}{report['mapped_mib']:8.1f}"
        )
    print(
        "(MiB of RssAnon: import = the library; anon open / anon all = after opening / after "
        "every query; mapped = RssFile after every query; 1st = first search, cold)"
    )

    print(
        f"\n{'engine':<26}"
        + "".join(f"{f'filter {name}: p50 p95 ms, recall, exact':>42}" for name in FILTERS)
    )
    scores = {name: truth(matrix, queries, mask) for name, mask in masks.items()}
    for key, engine in ENGINES.items():
        cells = []
        for name in FILTERS:
            result = reports[key]["filters"][name]
            cells.append(
                f"{percentile(result['seconds'], 0.5):14.2f}"
                f"{percentile(result['seconds'], 0.95):8.2f}"
                f"{recall(scores[name], result['ids']):10.3f}"
                f"{result['exact']:10.0%}"
            )
        print(f"{engine.label:<26}" + "".join(cells))

    print(f"\n{SWEEP_ENGINE}: over-fetch alone against an exact scan of the masked rows")
    print(
        f"{'mask share':>10}{'rows':>8}{'over p50':>10}{'p95':>8}{'recall':>8}{'short':>8}"
        f"{'exact p50':>11}{'p95':>8}"
    )
    for row in reports[SWEEP_ENGINE]["sweep"]:
        print(
            f"{row['share']:10.0%}{round(row['share'] * len(matrix)):8d}"
            f"{percentile(row['over_s'], 0.5):10.2f}{percentile(row['over_s'], 0.95):8.2f}"
            f"{row['recall']:8.3f}{row['short']:8.0%}"
            f"{percentile(row['exact_s'], 0.5):11.2f}{percentile(row['exact_s'], 0.95):8.2f}"
        )

    figures = update(settings, matrix, rng)
    print(
        f"\nusearch f16 update: writer load {figures['load_s'] * 1000:.0f} ms, add "
        f"{settings.added} rows {figures['add_s'] * 1000:.0f} ms, save {figures['rows']} rows "
        f"{figures['save_s'] * 1000:.0f} ms, rename; old view still answers: "
        f"{figures['old_view_works']}; new view {figures['view_s'] * 1000:.1f} ms, "
        f"has {figures['found']:.0%} of the added rows in their own top {K}"
    )
    print(f"load average at the end {os.getloadavg()[0]:.2f} (other work skews the timings)")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--facts", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--connectivity", type=int, default=16, help="HNSW M")
    parser.add_argument("--expansion-add", type=int, default=128, help="HNSW ef_construction")
    parser.add_argument("--expansion-search", type=int, default=64, help="HNSW ef_search")
    parser.add_argument(
        "--oversample",
        type=float,
        default=2.0,
        help="usearch fetches k * oversample / mask share rows",
    )
    parser.add_argument(
        "--exact-below",
        type=float,
        default=0.1,
        help="usearch scans exactly when the mask keeps less than this share",
    )
    parser.add_argument("--added", type=int, default=1000, help="rows the writer adds")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--workdir", type=Path, default=WORKDIR)
    parser.add_argument("--reader", choices=ENGINES, help=argparse.SUPPRESS)
    arguments = parser.parse_args()
    if arguments.reader:
        arguments.dim = np.load(arguments.workdir / "inputs.npz")["queries"].shape[1]
        print(json.dumps(read(arguments.reader, arguments)))
    else:
        main(arguments)
