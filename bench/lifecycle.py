"""The document lifecycle (issue 26): a conversation export, then the next export of the
same conversation with 10% more messages, then either one deleted.

A LoCoMo conversation from the shared data folder is cut into two exports in its own
JSON structure (later sessions left out, the last one cut short, `qa` dropped): the
first holds its first 1/1.1 of the messages, the second all of them (`--messages` caps
the conversation). Each scenario runs in a fresh namespace of the local SurrealDB
server (mem://) through the service functions the worker calls (`document_submit`,
`ingest_run`, `document_delete`), with local MiniLM embeddings, after an untimed upload
of the first export (spaCy, MiniLM and the server warm):

- offline extractor: upload both, delete the first; upload both, delete the second;
  the second export uploaded alone (the graph it supports, built from scratch);
- the scripted model of the tests (harness/llm_server.py answering as in bench/cost.py):
  upload both, counting each job's model calls and the extraction requests served.

Prints, for each upload: messages known and new as its job says, episodes it stored
and kept, model calls, wall time. After deleting either document: what the remaining
one supported before (entities its episodes mention or its facts connect; facts one of
its episodes states) that is gone ("lost", target 0); what is left that none of its
episodes supports ("orphans", target 0); and how the graph left differs from the
remaining export's graph built alone. Facts are those believed now (not retired),
compared by subject, relation, object and statement; entities by name, merges followed.
`--show` lists every lost, orphaned or differing entity and fact.

    .venv/bin/python bench/lifecycle.py [--file 30.json] [--messages N] [--show]

The shared folder is ../shared from the repository root, or KG_SHARED_DIR.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import platform
import re
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("KG_SHARED_DIR") or ROOT.parent / "shared")
DATA = SHARED / "data" / "conversations" / "locomo"
sys.path.insert(0, str(ROOT))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from kgapp import surreal_server  # noqa: E402
from kgapp.graph import queries, schema  # noqa: E402
from kgapp.graph.config import CoreConfig, configure  # noqa: E402
from kgapp.graph.documents.parse import parse_document  # noqa: E402
from kgapp.graph.embeddings import Embedder, local_embedder  # noqa: E402
from kgapp.graph.export.snapshot import export_graph  # noqa: E402
from kgapp.graph.ingest.service import (  # noqa: E402
    Removal,
    RemovalPreview,
    document_delete,
    document_removal_preview,
    document_submit,
    ingest_run,
)
from kgapp.graph.llm.client import LLMClient  # noqa: E402
from kgapp.graph.llm.transport import LLMConfig  # noqa: E402
from kgapp.graph.records import Job  # noqa: E402
from kgapp.graph.stats import graph_counts  # noqa: E402
from kgapp.graph.store import Pool, StoreConfig, TenantStore  # noqa: E402

GROWTH = 0.10  # the second export has this share more messages than the first
MODEL = "gpt-4o-mini"
_TURNS = re.compile(r"session_(\d+)")  # a session's list of turns
_SESSION_PART = re.compile(r"(?:[a-z]+_)?session_(\d+)(?:_[a-z_]+)?")  # its date, events...

# (subject, relation, object, statement) of a fact believed now.
Statement = tuple[str, str, str, str]
NewStore = Callable[[str], Awaitable[TenantStore]]


# --- The two exports ----------------------------------------------------------------


@dataclass(frozen=True)
class Exports:
    """One conversation as exported twice: `second` extends `first`."""

    name: str  # the conversation's file name, e.g. 30.json
    sessions: int
    first_messages: int
    second_messages: int
    first: bytes
    second: bytes

    @property
    def first_name(self) -> str:
        return self.name

    @property
    def second_name(self) -> str:
        return self.name.replace(".json", "-export-2.json")


def conversation_cut(raw: dict[str, Any], messages: int) -> dict[str, Any]:
    """The LoCoMo conversation `raw` as exported after its first `messages` turns: the
    same keys in the same order, the sessions not begun yet (their turns, date and
    events) left out and the last one cut short; `qa`, a benchmark's questions about
    the whole conversation, dropped."""
    kept: dict[int, int] = {}
    left = messages
    for number, key in sorted((int(m[1]), k) for k in raw if (m := _TURNS.fullmatch(k))):
        kept[number] = min(left, len(raw[key]))
        left -= kept[number]
    export: dict[str, Any] = {}
    for key, value in raw.items():
        part = _SESSION_PART.fullmatch(key)
        if key == "qa" or (part and not kept.get(int(part[1]))):
            continue
        turns = _TURNS.fullmatch(key)
        export[key] = value[: kept[int(turns[1])]] if turns else value
    return export


def exports_of(name: str, raw: dict[str, Any], messages: int | None = None) -> Exports:
    """The first export (1 / (1 + GROWTH) of the messages) and the second (all of them,
    at most `messages`)."""
    total = sum(len(v) for k, v in raw.items() if _TURNS.fullmatch(k))
    second = min(total, messages or total)
    first = round(second / (1 + GROWTH))
    if not 0 < first < second:
        raise ValueError(f"{name}: {second} messages cannot be cut into two exports")
    cut = conversation_cut(raw, second)
    sessions = sum(1 for k in cut if _TURNS.fullmatch(k))
    return Exports(
        name=name,
        sessions=sessions,
        first_messages=first,
        second_messages=second,
        first=json.dumps(conversation_cut(raw, first), indent=1).encode(),
        second=json.dumps(cut, indent=1).encode(),
    )


# --- Uploads ------------------------------------------------------------------------


@dataclass(frozen=True)
class Upload:
    """One file uploaded and its job run to its end."""

    document: Any  # RecordID
    job: Job
    seconds: float  # submit and ingest
    episodes_stored: int  # episodes in the namespace after, less before

    def _plan(self, key: str) -> int:
        return int(self.job.get("result", {}).get("document", {}).get(key, 0))

    @property
    def messages_known(self) -> int:
        return self._plan("messages_known")

    @property
    def messages_new(self) -> int:
        return self._plan("messages_new")

    @property
    def episodes_new(self) -> int:
        return self._plan("episodes_new")

    @property
    def episodes_kept(self) -> int:
        return self._plan("episodes_kept")

    @property
    def calls(self) -> int:
        """Model calls as the job counts them (none without a model)."""
        return int(self.job.get("counts", {}).get("llm_calls", 0))

    @property
    def note(self) -> str:
        return (self.job.get("notes") or [""])[0]


async def upload(
    store: TenantStore, name: str, data: bytes, *, embedder: Embedder, llm: LLMClient | None
) -> Upload:
    """`data` uploaded as file `name` and ingested, as the uploads page and the worker
    do; a job that does not complete is an error."""
    before = (await graph_counts(store))["episodes"]
    started = time.perf_counter()
    parsed = parse_document(name, data, max_bytes=len(data) + 1)
    row, job = await document_submit(store, parsed, file_name=name, data=data, uploaded_by=None)
    if job is None:
        raise RuntimeError(f"{name} was taken for a file uploaded already")
    done = await ingest_run(store, job["id"], embedder=embedder, llm=llm)
    seconds = time.perf_counter() - started
    if done["status"] != "completed":
        raise RuntimeError(f"{name}: job {done['status']}: {done.get('error')}")
    after = (await graph_counts(store))["episodes"]
    return Upload(row["id"], done, seconds, after - before)


# --- The graph, and what a document's episodes support -------------------------------


@dataclass(frozen=True)
class Support:
    entities: frozenset[str]
    facts: frozenset[Statement]


@dataclass(frozen=True)
class Graph:
    """A namespace's entities (by name, merges followed) and believed facts, each with
    the episodes behind it."""

    entities: frozenset[str]
    facts: tuple[tuple[Statement, frozenset[str]], ...]
    mentions: tuple[tuple[str, str], ...]  # (episode, entity name)

    @classmethod
    async def read(cls, store: TenantStore) -> Graph:
        exported = await export_graph(store)
        rows = {str(e["id"]): e for e in exported["entity"]}

        def name(entity: Any) -> str:
            row = rows.get(str(entity))
            for _ in range(64):  # a merge chain is short; never loop forever
                if not row or not row.get("merged_into"):
                    break
                row = rows.get(str(row["merged_into"]))
            return row["name"] if row else f"<missing {entity}>"

        believed = [f for f in exported["relates_to"] if f.get("expired_at") is None]
        return cls(
            entities=frozenset(e["name"] for e in rows.values() if not e.get("merged_into")),
            facts=tuple(
                (
                    (name(f["in"]), f["relation"], name(f["out"]), f["fact"]),
                    frozenset(str(e) for e in f.get("episodes") or []),
                )
                for f in believed
            ),
            mentions=tuple((str(m["in"]), name(m["out"])) for m in exported["mentions"]),
        )

    @property
    def statements(self) -> frozenset[Statement]:
        return frozenset(statement for statement, _ in self.facts)

    def supported_by(self, episodes: Iterable[str]) -> Support:
        """What `episodes` hold up: the entities they mention or their facts connect,
        and the facts one of them states."""
        held = set(episodes)
        facts = {statement for statement, its in self.facts if its & held}
        entities = {entity for episode, entity in self.mentions if episode in held}
        entities |= {s[0] for s in facts} | {s[2] for s in facts}
        return Support(frozenset(entities), frozenset(facts))


async def document_episodes(store: TenantStore, document: Any) -> set[str]:
    rows = await store.query_one(queries.DOCUMENT_CLAIMS, {"document": document}) or []
    return {str(r["id"]) for r in rows}


# --- Deleting either document --------------------------------------------------------


@dataclass
class Deletion:
    """Both exports uploaded into one namespace, then `deleted` ("first" or "second")."""

    deleted: str
    first: Upload
    second: Upload
    alone: Graph | None  # the first export's graph before the second came (delete second)
    preview: RemovalPreview
    removal: Removal
    supported: Support  # what the remaining document supported before the deletion
    after: Graph
    episodes_held: int  # the remaining document's episodes after the deletion
    episodes_left: int  # every episode in the namespace after it
    orphans: Support  # what is left that none of the remaining episodes supports

    @property
    def remaining(self) -> str:
        return "second" if self.deleted == "first" else "first"

    @property
    def lost_entities(self) -> list[str]:
        return sorted(self.supported.entities - self.after.entities)

    @property
    def lost_facts(self) -> list[Statement]:
        return sorted(self.supported.facts - self.after.statements)

    @property
    def preview_agreed(self) -> bool:
        p, r = self.preview, self.removal
        return (p.episodes_deleted, p.facts_deleted, p.entities_deleted) == (
            r.episodes_deleted,
            r.facts_deleted,
            r.entities_deleted,
        )


async def deletion_check(
    store: TenantStore, exports: Exports, *, delete: str, embedder: Embedder
) -> Deletion:
    """Upload the first export then the second, delete the `delete` one ("first" or
    "second"), and compare what the other supported before with what is left."""
    first = await upload(store, exports.first_name, exports.first, embedder=embedder, llm=None)
    alone = await Graph.read(store) if delete == "second" else None
    second = await upload(store, exports.second_name, exports.second, embedder=embedder, llm=None)
    gone, kept = (first, second) if delete == "first" else (second, first)
    held_before = await document_episodes(store, kept.document)
    supported = (await Graph.read(store)).supported_by(held_before)
    preview = await document_removal_preview(store, gone.document)
    removal = await document_delete(store, gone.document)
    after = await Graph.read(store)
    held = await document_episodes(store, kept.document)
    remaining = after.supported_by(held)
    return Deletion(
        deleted=delete,
        first=first,
        second=second,
        alone=alone,
        preview=preview,
        removal=removal,
        supported=supported,
        after=after,
        episodes_held=len(held),
        episodes_left=(await graph_counts(store))["episodes"],
        orphans=Support(after.entities - remaining.entities, after.statements - remaining.facts),
    )


@dataclass(frozen=True)
class Difference:
    """The graph left after a deletion against the remaining export's graph built alone."""

    missing_entities: list[str]
    extra_entities: list[str]
    missing_facts: list[Statement]
    extra_facts: list[Statement]


def difference(alone: Graph, left: Graph) -> Difference:
    return Difference(
        missing_entities=sorted(alone.entities - left.entities),
        extra_entities=sorted(left.entities - alone.entities),
        missing_facts=sorted(alone.statements - left.statements),
        extra_facts=sorted(left.statements - alone.statements),
    )


# --- With a model ---------------------------------------------------------------------


@dataclass(frozen=True)
class ModelRun:
    first: Upload
    second: Upload
    first_extractions: int  # extraction requests the model served for each upload
    second_extractions: int


async def model_uploads(
    store: TenantStore,
    exports: Exports,
    *,
    embedder: Embedder,
    new_llm: Callable[[], LLMClient],
    extractions: Callable[[], int],
) -> ModelRun:
    """Both exports uploaded with a model, a fresh client (and usage) per job;
    `extractions()` is how many extraction requests the model has served so far."""
    served = extractions()
    first = await upload(store, exports.first_name, exports.first, embedder=embedder, llm=new_llm())
    between = extractions()
    second = await upload(
        store, exports.second_name, exports.second, embedder=embedder, llm=new_llm()
    )
    return ModelRun(first, second, between - served, extractions() - between)


# --- The whole measurement -------------------------------------------------------------


@dataclass
class Figures:
    exports: Exports
    delete_first: Deletion
    delete_second: Deletion
    second_alone: Graph
    model: ModelRun | None

    def differences(self) -> dict[str, Difference]:
        """Per deletion, the graph left against the remaining export's built alone."""
        assert self.delete_second.alone is not None
        return {
            "first": difference(self.second_alone, self.delete_first.after),
            "second": difference(self.delete_second.alone, self.delete_second.after),
        }


async def warm_up(store: TenantStore, exports: Exports, embedder: Embedder) -> None:
    """The first export uploaded once, untimed: spaCy, MiniLM and the server warm
    before anything is timed (a first upload in a cold process took twice as long)."""
    await upload(store, exports.first_name, exports.first, embedder=embedder, llm=None)


async def lifecycle_measure(
    new_store: NewStore,
    exports: Exports,
    *,
    embedder: Embedder,
    new_llm: Callable[[], LLMClient] | None = None,
    extractions: Callable[[], int] = lambda: 0,
) -> Figures:
    """Every scenario, each in a fresh namespace from `new_store(label)`."""
    delete_first = await deletion_check(
        await new_store("a"), exports, delete="first", embedder=embedder
    )
    delete_second = await deletion_check(
        await new_store("b"), exports, delete="second", embedder=embedder
    )
    alone = await new_store("c")
    await upload(alone, exports.second_name, exports.second, embedder=embedder, llm=None)
    model = None
    if new_llm is not None:
        model = await model_uploads(
            await new_store("m"),
            exports,
            embedder=embedder,
            new_llm=new_llm,
            extractions=extractions,
        )
    return Figures(exports, delete_first, delete_second, await Graph.read(alone), model)


# --- Printing -------------------------------------------------------------------------


def _statement(s: Statement) -> str:
    return f"{s[0]} -{s[1]}-> {s[2]}: {s[3]!r}"


def _listed(label: str, items: list[Any], show: bool, limit: int = 8) -> list[str]:
    if not items:
        return []
    shown = items if show else items[:limit]
    lines = [f"    {label} ({len(items)}):"]
    lines += [f"      {_statement(i) if isinstance(i, tuple) else i}" for i in shown]
    if len(shown) < len(items):
        lines.append(f"      ... {len(items) - len(shown)} more (--show)")
    return lines


def _ratio(part: float, whole: float) -> str:
    return f"{part / whole:.2f}x" if whole else "-"


def _timed(first: Upload, second: Upload) -> tuple[str, str]:
    ratio = _ratio(second.seconds, first.seconds)
    return f"{first.seconds:.1f} s", f"{second.seconds:.1f} s ({ratio})"


def uploads_table(figures: Figures) -> list[str]:
    a, b, model = figures.delete_first, figures.delete_second, figures.model
    both = (a.first, a.second)
    rows = [
        ("messages known / new", *(f"{u.messages_known} / {u.messages_new}" for u in both)),
        ("episodes stored / kept", *(f"{u.episodes_stored} / {u.episodes_kept}" for u in both)),
        ("wall time, offline (ns a)", *_timed(a.first, a.second)),
        ("wall time, offline (ns b)", *_timed(b.first, b.second)),
        ("model calls, offline", str(a.first.calls), str(a.second.calls)),
    ]
    if model is not None:
        rows += [
            ("model calls, scripted model", str(model.first.calls), str(model.second.calls)),
            (
                "  extractions / new episodes",
                f"{model.first_extractions} / {model.first.episodes_new}",
                f"{model.second_extractions} / {model.second.episodes_new}",
            ),
            ("wall time, scripted model", *_timed(model.first, model.second)),
        ]
    lines = [f"  {'':30}{'first upload':>16}{'second upload':>22}"]
    lines += [f"  {label:30}{one:>16}{two:>22}" for label, one, two in rows]
    lines.append(f"  second upload's job: {a.second.note!r}")
    return lines


def deletions_table(figures: Figures, show: bool) -> list[str]:
    differences = figures.differences()
    lines = [
        f"  {'delete':8}{'remaining':11}{'supported e/f':>15}{'lost e/f':>10}{'orphans e/f':>13}"
        f"{'vs alone: missing e/f, extra e/f':>34}{'removed ep/e/f':>16}"
    ]
    for d in (figures.delete_first, figures.delete_second):
        diff = differences[d.deleted]
        r = d.removal
        lines.append(
            f"  {d.deleted:8}{d.remaining:11}"
            f"{f'{len(d.supported.entities)} / {len(d.supported.facts)}':>15}"
            f"{f'{len(d.lost_entities)} / {len(d.lost_facts)}':>10}"
            f"{f'{len(d.orphans.entities)} / {len(d.orphans.facts)}':>13}"
            f"{f'{len(diff.missing_entities)} / {len(diff.missing_facts)}, ':>24}"
            f"{f'{len(diff.extra_entities)} / {len(diff.extra_facts)}':<10}"
            f"{f'{r.episodes_deleted} / {r.entities_deleted} / {r.facts_deleted}':>16}"
        )
    for d in (figures.delete_first, figures.delete_second):
        diff = differences[d.deleted]
        lines.append(
            f"  delete {d.deleted}: episodes left {d.episodes_left} (the {d.remaining} holds "
            f"{d.episodes_held}); preview {'agreed' if d.preview_agreed else 'DISAGREED'} "
            f"({d.preview.entities_deleted} entities, {d.preview.facts_deleted} facts); "
            f"{d.removal.facts_restored} facts current again"
        )
        lines += _listed("lost entities", d.lost_entities, show)
        lines += _listed("lost facts", d.lost_facts, show)
        lines += _listed("orphan entities", sorted(d.orphans.entities), show)
        lines += _listed("orphan facts", sorted(d.orphans.facts), show)
        lines += _listed("missing against alone, entities", diff.missing_entities, show)
        lines += _listed("missing against alone, facts", diff.missing_facts, show)
        lines += _listed("extra against alone, entities", diff.extra_entities, show)
        lines += _listed("extra against alone, facts", diff.extra_facts, show)
    return lines


def machine() -> str:
    """Cores, CPU model and memory, as the README's benchmark notes give them."""
    cpu, memory = platform.machine(), 0.0
    with contextlib.suppress(OSError):
        lines = Path("/proc/cpuinfo").read_text().splitlines()
        cpu = next((x.split(":", 1)[1].strip() for x in lines if x.startswith("model name")), cpu)
        meminfo = Path("/proc/meminfo").read_text().split()
        memory = int(meminfo[meminfo.index("MemTotal:") + 1]) / 2**20
    return f"{os.cpu_count()} cores {cpu}, {memory:.0f} GiB"


def report(figures: Figures, show: bool) -> str:
    e = figures.exports
    lines = [
        f"{e.name}: {e.second_messages} messages in {e.sessions} sessions; first export "
        f"{e.first_messages} messages, second {e.second_messages} "
        f"(+{e.second_messages - e.first_messages}); {date.today()}, {machine()}",
        *uploads_table(figures),
        "  e/f: entities / facts (believed now); ep: episodes",
        *deletions_table(figures, show),
    ]
    if figures.model is None:
        lines.append("  no scripted model: model calls are the offline extractor's (none)")
    return "\n".join(lines)


# --- Running it -----------------------------------------------------------------------


async def _run(config: StoreConfig, exports: Exports, llm_server: Any) -> Figures:
    from bench.cost import scripted_answer

    pools: list[Pool] = []

    async def new_store(label: str) -> TenantStore:
        pool = Pool(config, f"t_bench_lifecycle_{label}")
        pools.append(pool)
        store = TenantStore(pool)
        await schema.migrate(store, schema.load_migrations(ROOT / "schema"), embedding_dim=384)
        return store

    llm_server.on_chat(scripted_answer)

    def new_llm() -> LLMClient:
        return LLMClient(LLMConfig(base_url=llm_server.base_url, api_key="bench", model=MODEL))

    try:
        embedder = local_embedder()
        await warm_up(await new_store("warm"), exports, embedder)
        return await lifecycle_measure(
            new_store,
            exports,
            embedder=embedder,
            new_llm=new_llm,
            extractions=lambda: len(llm_server.chat_requests("extract_graph")),
        )
    finally:
        for pool in pools:
            await pool.close()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--file", default="30.json", help="a LoCoMo conversation")
    parser.add_argument("--messages", type=int, help="cap the conversation (default: all)")
    parser.add_argument("--show", action="store_true", help="list everything that differs")
    args = parser.parse_args()
    path = DATA / args.file
    if not path.is_file():
        print(f"shared data absent: {path} not found (set KG_SHARED_DIR); nothing measured")
        return
    exports = exports_of(path.name, json.loads(path.read_text()), args.messages)
    from harness.llm_server import ScriptedLLM

    with tempfile.TemporaryDirectory(prefix="kg-bench-lifecycle-") as scratch:
        os.environ["KG_SEARCH_DIR"] = str(Path(scratch) / "search")
        configure(CoreConfig(search_dir=Path(scratch) / "search"))  # this process's core
        server = surreal_server.start(storage="mem://", log=Path(scratch) / "surreal.log")
        try:
            config = StoreConfig(
                url=server.url,
                username=server.credentials.user,
                password=server.credentials.password,
                query_timeout=120,
            )
            with ScriptedLLM() as llm_server:
                figures = asyncio.run(_run(config, exports, llm_server))
        finally:
            server.stop()
    print(report(figures, args.show))


if __name__ == "__main__":
    main()
