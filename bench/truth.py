"""Graph truth: the graph the product builds, scored against (1) the truth gold set, texts
annotated by hand (bench/gold/FORMAT.md), and (2) Re-DocRED, Wikipedia paragraphs
annotated by others (../shared/data/prose/redocred/dev.json).

(1) The gold set. Each text (bench/gold/dev/*.json, bench/gold/heldout/*.json) goes into
a fresh namespace of the local SurrealDB server (mem://), through the service functions
the uploads page and the worker call: the text as a .txt file (kind text) or its
messages as a JSON list of {speaker, text, timestamp} (kind conversation), parsed by
`parse_document`, submitted by `document_submit` with the text's reference_time, and its
job run to completion by `ingest_run` with no model (the offline extractor of
KG_SPACY_MODEL, local MiniLM embeddings), as the worker does. The graph is then read
whole: the entities not merged into another, with their aliases (the alias table, merges
followed), and the facts believed now in system time (expired_at unset or later than
now), each with its valid_at and invalid_at.

Names match when their keys are equal: the name case-folded, runs of white space made
one space, a leading "the " dropped. A product entity names a gold entity when a key of
its name or aliases is a key of the gold entity's name or aliases. A gold fact's subject
or object that is not in the text's entity list is matched by its own key.

A product relation's family: the name folded by DEFAULT_ONTOLOGY.relation() (its
aliases: EMPLOYED_BY is WORKS_AT); a declared name by DECLARED_FAMILY; any other by the
first of WORD_RULES, in order, with a word (or run of words) among the name's words, both
Snowball-stemmed (FOUNDED and FOUNDING are FOUND); none: no family. A rule may say that
its verb's subject is the gold object ("Acme HIRE Bob": Bob employment Acme), and a name
ending in _BY is passive (FOUNDED_BY): either swaps the fact's endpoints, both undo each
other. A product fact matches a gold fact when its subject names the gold subject, its
object the gold object (or the other way round, for the symmetric families social,
partner and family only), and its family is the gold family (gold "other" matches any).

Figures, per text, pooled over the texts of a style, of a half, of both:
- entity precision (target >= 85%): product entities that name a gold entity (optional
  ones included) / product entities.
- entity recall: non-optional gold entities named by some product entity / non-optional
  gold entities.
- types right: of the product entities that name a gold entity, those whose entity_type
  equals the type of one they name.
- fact precision (target >= 80%): product facts matching some gold fact (optional ones
  included) / product facts.
- fact recall: non-optional gold facts matched by some product fact / non-optional gold
  facts.
- start dates right (target >= 90%): of the gold facts (optional ones included) matched
  by some product fact and with a `start`, those for which a matching product fact has a
  valid_at inside the start period (its UTC date within the year, month or day given).
- endings found (target >= 80%): of the non-optional gold facts with an `end`, those
  matched by a product fact whose invalid_at is set and inside the end period; beside
  it, how many were matched by a product fact with any invalid_at.
- non-facts stored as current (target 0): gold non_facts matched (the same rule) by a
  product fact that holds now (invalid_at unset or later than now).
Targets are for the held-out half. `--show` prints, per dev text, the product entities
and facts that match nothing and the gold facts missed; it refuses the held-out half,
whose texts nobody tuning the extractor may read.

(2) Re-DocRED. Each paragraph's text is its sentences detokenised (tokens joined by
spaces, none before closing punctuation or after an opening bracket, hyphens and en
dashes closed up, straight quotes paired) and joined by spaces; the offline extractor
reads it (`OfflineExtractor().extract(text, reference_time=2020-01-01)`, no store: the
same extraction the pipeline makes of a text that fits one chunk). An annotated entity
is a cluster of mentions; its names are each mention's tokens detokenised alike, and the
annotation's `name`; its type the most common of its mentions'. A product name names a
cluster exactly when it equals one of the cluster's names (case-sensitive), leniently
when, case-folded and with a leading "the" dropped, it equals one or one contains the
other as whole words. Items 0-249 are the dev half, 250-499 the held-out one.
- entities naming an annotated entity, exact (target >= 85%) and lenient: product
  entities that name some cluster / product entities.
- annotated named entities found (target >= 90%): clusters of type PER, ORG, LOC or
  MISC named leniently by some product entity / such clusters.
- related pairs joined (target >= 25%, over pairs with no TIME or NUM entity; also shown
  over all pairs): annotated (h, t) pairs, unordered and deduplicated, joined by a
  product fact whose subject names one and whose object names the other (leniently) /
  annotated pairs. The product keeps dates as the times of facts, not as entities, so
  the pairs with a TIME or NUM entity are out of its reach by design.
- facts between annotated entities joining a related pair (target >= 75%): of the
  product facts whose two endpoints each name some cluster, those joining an annotated
  pair.
- facts with an endpoint no annotated entity (target <= 20%): product facts with an
  endpoint that names no cluster / product facts.
Without the Re-DocRED folder this part is skipped, saying so.

(3) `--sample PATH` uploads one file (a LoCoMo conversation JSON, a .txt or .md) the
same way and prints 20 random entities (name, type, summary) and 20 random facts
(sentence, relation, valid_at, invalid_at), drawn with `--seed`, for a person to judge.

    .venv/bin/python bench/truth.py [--half dev|heldout|both] [--file PATH] [--json OUT]
                                    [--show] [--sample PATH [--seed N]]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import random
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("KG_SHARED_DIR") or ROOT.parent / "shared")
REDOCRED = SHARED / "data" / "prose" / "redocred" / "dev.json"
sys.path.insert(0, str(ROOT))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from bench import truth_redocred  # noqa: E402
from bench.truth_gold import (  # noqa: E402
    FIGURES,
    GOLD,
    HALVES,
    GoldText,
    ProductGraph,
    Score,
    aligned,
    gold_load,
    half_of,
    misses,
    score_text,
)
from kgapp import surreal_server  # noqa: E402
from kgapp.graph import schema  # noqa: E402
from kgapp.graph.config import CoreConfig, configure  # noqa: E402
from kgapp.graph.documents.parse import parse_document  # noqa: E402
from kgapp.graph.embeddings import Embedder, local_embedder  # noqa: E402
from kgapp.graph.ingest.offline import DEFAULT_MODEL, OfflineExtractor  # noqa: E402
from kgapp.graph.ingest.service import document_submit, ingest_run  # noqa: E402
from kgapp.graph.namespaces import namespace_remove  # noqa: E402
from kgapp.graph.store import Pool, StoreConfig, TenantStore  # noqa: E402

SAMPLE_SIZE = 20
Fresh = Callable[[], contextlib.AbstractAsyncContextManager[TenantStore]]


# --- Through the product ----------------------------------------------------------------


def offline_extractor() -> OfflineExtractor:
    """The worker's extractor without a model (tenants.wiring.offline_extractor)."""
    return OfflineExtractor(os.environ.get("KG_SPACY_MODEL") or DEFAULT_MODEL)


async def uploaded_graph(
    store: TenantStore,
    name: str,
    data: bytes,
    *,
    reference_time: datetime | None,
    embedder: Embedder,
    extractor: OfflineExtractor,
) -> ProductGraph:
    """`data` uploaded as file `name`, its job run to its end without a model as the
    worker runs it, and the graph read; a job that does not complete is an error."""
    parsed = parse_document(name, data, max_bytes=len(data) + 1)
    _, job = await document_submit(
        store, parsed, file_name=name, data=data, uploaded_by=None, reference_time=reference_time
    )
    if job is None:
        raise RuntimeError(f"{name} was taken for a file uploaded already")
    done = await ingest_run(store, job["id"], embedder=embedder, llm=None, extractor=extractor)
    if done["status"] != "completed":
        raise RuntimeError(f"{name}: job {done['status']}: {done.get('error')}")
    return await ProductGraph.read(store, datetime.now(UTC))


async def text_graph(
    store: TenantStore, text: GoldText, *, embedder: Embedder, extractor: OfflineExtractor
) -> ProductGraph:
    """The graph the product builds of one gold text, in an empty namespace."""
    name, data = text.upload()
    return await uploaded_graph(
        store,
        name,
        data,
        reference_time=text.reference_time,
        embedder=embedder,
        extractor=extractor,
    )


@contextlib.contextmanager
def surreal() -> Iterator[StoreConfig]:
    """The local SurrealDB server in memory, and search indexes in a scratch folder."""
    with tempfile.TemporaryDirectory(prefix="kg-bench-truth-") as scratch:
        os.environ["KG_SEARCH_DIR"] = str(Path(scratch) / "search")
        configure(CoreConfig(search_dir=Path(scratch) / "search"))  # this process's core
        server = surreal_server.start(storage="mem://", log=Path(scratch) / "surreal.log")
        try:
            yield StoreConfig(
                url=server.url,
                username=server.credentials.user,
                password=server.credentials.password,
                query_timeout=120,
            )
        finally:
            server.stop()


@contextlib.asynccontextmanager
async def namespaces(config: StoreConfig) -> AsyncIterator[Fresh]:
    """A factory of fresh migrated namespaces, each removed when its block ends."""
    root = Pool(config, None)
    made = iter(range(1, 1_000_000))

    @contextlib.asynccontextmanager
    async def fresh() -> AsyncIterator[TenantStore]:
        namespace = f"t_bench_truth_{next(made)}"
        pool = Pool(config, namespace)
        try:
            store = TenantStore(pool)
            await schema.migrate(store, schema.load_migrations(ROOT / "schema"), embedding_dim=384)
            yield store
        finally:
            await pool.close()
            await namespace_remove(TenantStore(root), namespace)

    try:
        yield fresh
    finally:
        await root.close()


# --- The gold set ------------------------------------------------------------------------


@dataclass(frozen=True)
class TextResult:
    text: GoldText
    score: Score
    seconds: float
    shown: list[str] = field(default_factory=list)  # misses, for --show (never held-out)


async def gold_run(config: StoreConfig, texts: list[GoldText], *, show: bool) -> list[TextResult]:
    """Each text through the product in a namespace of its own, scored."""
    embedder, extractor = local_embedder(), offline_extractor()
    results = []
    async with namespaces(config) as fresh:
        for text in texts:
            async with fresh() as store:
                started = time.perf_counter()
                graph = await text_graph(store, text, embedder=embedder, extractor=extractor)
                seconds = time.perf_counter() - started
            now = datetime.now(UTC)
            shown = misses(text, graph) if show and text.half != "heldout" else []
            results.append(TextResult(text, score_text(text, graph, now), seconds, shown))
    return results


def gold_texts(halves: list[str], file: Path | None) -> list[GoldText]:
    if file is not None:
        return [gold_load(file, half_of(file))]
    texts = []
    for half in halves:
        paths = sorted((GOLD / half).glob("*.json"))
        if not paths:
            print(f"gold set, {half} half: no texts in {GOLD / half} yet")
        texts += [gold_load(path, half) for path in paths]
    return texts


def _total(scores: list[Score]) -> Score:
    return sum(scores, Score())


def by_style(results: list[TextResult]) -> dict[str, Score]:
    """Each style's pooled counts, then "overall"."""
    styles = sorted({r.text.style for r in results})
    rows = {s: _total([r.score for r in results if r.text.style == s]) for s in styles}
    return {**rows, "overall": _total([r.score for r in results])}


def score_table(rows: dict[str, Score]) -> list[str]:
    """A row per style and overall; the targets, and whether "overall" meets them."""
    header = ("style", "texts", *(f.label for f in FIGURES))
    table = [
        header,
        *((name, str(s.texts), *(f.cell(s) for f in FIGURES)) for name, s in rows.items()),
    ]
    table.append(("target", "", *(f.target for f in FIGURES)))
    table.append(("overall met", "", *(f.met(rows["overall"]) for f in FIGURES)))
    return aligned(table)


def gold_report(results: list[TextResult]) -> dict[str, Any]:
    """Print each half's table (and --show's lines); the figures for --json."""
    figures: dict[str, Any] = {}
    for half in dict.fromkeys(r.text.half for r in results):
        mine = [r for r in results if r.text.half == half]
        held = " (the targets are the held-out half's)" if half != "heldout" else ""
        print(
            f"gold set, {half} half: {len(mine)} texts, ingested in "
            f"{sum(r.seconds for r in mine):.0f} s{held}"
        )
        rows = by_style(mine)
        print("\n".join(score_table(rows)))
        for r in mine:
            if r.shown:
                print(f"  {r.text.path.name} ({r.text.style}):\n" + "\n".join(r.shown))
        figures[half] = {name: _figures(score) for name, score in rows.items()}
    return figures


def _figures(score: Score) -> dict[str, Any]:
    figures = {f.label.strip(): f.value(score) for f in FIGURES}
    return {"counts": score.as_dict(), "figures": figures}


# --- Re-DocRED and the reading sample --------------------------------------------------


def redocred_report() -> dict[str, Any] | None:
    if not REDOCRED.is_file():
        print(f"Re-DocRED absent: {REDOCRED} not found (set KG_SHARED_DIR); part 2 skipped")
        return None
    extractor = offline_extractor()
    halves, seconds = truth_redocred.redocred_run(REDOCRED, extractor)
    print(
        f"Re-DocRED dev split, {extractor.label} on each paragraph, {seconds:.0f} s "
        "(dev: items 0-249, heldout: 250-499)"
    )
    print("\n".join(truth_redocred.redocred_table(halves)))
    return truth_redocred.redocred_figures(halves)


def _when(moment: datetime | None) -> str:
    return f"{moment.astimezone(UTC):%Y-%m-%d %H:%M}" if moment else "-"


def sample_lines(graph: ProductGraph, seed: int) -> list[str]:
    """SAMPLE_SIZE random entities and facts of `graph`, drawn with `seed`."""
    rng = random.Random(seed)
    entities = rng.sample(graph.entities, min(SAMPLE_SIZE, len(graph.entities)))
    facts = rng.sample(graph.facts, min(SAMPLE_SIZE, len(graph.facts)))
    return [
        f"{len(graph.entities)} entities, {len(graph.facts)} facts believed now; "
        f"{SAMPLE_SIZE} of each drawn with seed {seed}",
        "entities (name, type: summary):",
        *(f"  {e.name} ({e.type}): {e.summary}" for e in entities),
        "facts (sentence  [relation, valid_at .. invalid_at]):",
        *(
            f"  {f.sentence}  [{f.relation}, {_when(f.valid_at)} .. {_when(f.invalid_at)}]"
            for f in facts
        ),
    ]


async def sample_graph(
    config: StoreConfig, path: Path, reference_time: datetime | None = None
) -> ProductGraph:
    async with namespaces(config) as fresh, fresh() as store:
        return await uploaded_graph(
            store,
            path.name,
            path.read_bytes(),
            reference_time=reference_time,
            embedder=local_embedder(),
            extractor=offline_extractor(),
        )


# --- Running it --------------------------------------------------------------------------


def _arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--half", choices=[*HALVES, "both"], default="both")
    parser.add_argument("--file", type=Path, help="score one gold file (no Re-DocRED)")
    parser.add_argument("--json", type=Path, help="write the figures to this file")
    parser.add_argument(
        "--show",
        action="store_true",
        help="per dev text: what matches nothing, the gold facts missed",
    )
    parser.add_argument("--sample", type=Path, help="upload this file, print a sample")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--reference-time",
        type=datetime.fromisoformat,
        help="with --sample: the upload's reference time (ISO 8601, with zone)",
    )
    args = parser.parse_args()
    heldout = args.half == "heldout" or (args.file and half_of(args.file) == "heldout")
    if args.show and heldout:
        parser.error("--show is for the dev half only: nobody tuning reads held-out texts")
    return args


def main() -> None:
    args = _arguments()
    started = time.perf_counter()
    if args.sample:
        with surreal() as config:
            graph = asyncio.run(sample_graph(config, args.sample, args.reference_time))
        print("\n".join(sample_lines(graph, args.seed)))
        return
    halves = list(HALVES) if args.half == "both" else [args.half]
    texts = gold_texts(halves, args.file)
    figures: dict[str, Any] = {"gold": {}}
    if texts:
        with surreal() as config:
            results = asyncio.run(gold_run(config, texts, show=args.show))
        figures["gold"] = gold_report(results)
    if args.file is None:
        figures["redocred"] = redocred_report()
    figures["seconds"] = round(time.perf_counter() - started, 1)
    print(f"truth: {figures['seconds']:.0f} s in all")
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()
