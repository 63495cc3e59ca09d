"""Tenant export and import at scale: time, file size and peak memory.

Builds the synthetic graph of bench/search.py (N facts between people, organisations and
places, composed MiniLM-shaped vectors on every entity and fact) plus one episode per
five facts (their sentences, the facts pointing back at it), in the local SurrealDB
server (mem://). Then, each in a fresh process so that its peak memory is its own:

- export: the whole tenant as JSON lines to a file (`export_lines`, as GET
  export?format=jsonl and `manage.py export_tenant` stream it);
- import: the file checked (every line, the checksum) and written into an empty
  namespace in batches (`check_export`, `check_target`, `load_export`);
- the import's namespace exported again, and compared with the first file.

    .venv/bin/python bench/export.py [--facts 10000]   (the README's row: --facts 100000)

Peak memory is VmHWM, the process's peak resident memory, with what the process held
before the phase began (Python, the SDK, numpy) reported beside it.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from surrealdb.data.types.record_id import RecordID  # noqa: E402

from bench.search import build, load, peak_mib  # noqa: E402
from kgapp import surreal_server  # noqa: E402
from kgapp.graph import queries, schema  # noqa: E402
from kgapp.graph.export.jsonl import TenantMeta, export_lines  # noqa: E402
from kgapp.graph.export.load import (  # noqa: E402
    TABLE_NAMES,
    check_export,
    check_target,
    export_lines_of,
    load_export,
)
from kgapp.graph.retention import RetentionPolicy  # noqa: E402
from kgapp.graph.store import Pool, StoreConfig, TenantStore  # noqa: E402

META = TenantMeta(slug="bench", name="Bench", embedding_dim=384, retention=RetentionPolicy())
PER_EPISODE = 5


def config() -> StoreConfig:
    return StoreConfig(
        url=os.environ["BENCH_SURREAL_URL"],
        username=os.environ["SURREAL_USER"],
        password=os.environ["SURREAL_PASS"],
        query_timeout=600,
    )


async def fill(store: TenantStore, count: int) -> dict[str, float]:
    entities, facts = build(count)
    episodes = []
    for first in range(0, len(facts), PER_EPISODE):
        group = facts[first : first + PER_EPISODE]
        episode = RecordID("episode", f"e{first // PER_EPISODE}")
        episodes.append(
            {
                "id": episode,
                "name": f"note {first // PER_EPISODE}",
                "source": "text",
                "content": " ".join(f["fact"] for f in group),
                "content_hash": str(episode),
                "valid_at": group[0]["valid_at"],
                "source_description": "bench",
            }
        )
        for fact in group:
            fact["episodes"] = [episode]
    started = time.perf_counter()
    sql = queries.import_rows("episode", relation=False, allowed=TABLE_NAMES)
    for first in range(0, len(episodes), 500):
        await store.query(sql, {"rows": episodes[first : first + 500]})
    timings = await load(store, entities, facts, composed=True)
    timings["episodes"] = time.perf_counter() - started - timings["insert"] - timings["embedding"]
    return {**timings, "entities": len(entities), "episodes_count": len(episodes)}


async def child_export(namespace: str, path: str) -> dict[str, float]:
    store = TenantStore(Pool(config(), namespace))
    before = peak_mib()
    started = time.perf_counter()
    size = lines = 0
    with open(path, "wb") as out:
        async for line in export_lines(store, META):
            out.write(line)
            size, lines = size + len(line), lines + 1
    return {
        "seconds": time.perf_counter() - started,
        "bytes": size,
        "lines": lines,
        "peak_mib": peak_mib(),
        "before_mib": before,
    }


async def child_import(namespace: str, path: str) -> dict[str, float]:
    store = TenantStore(Pool(config(), namespace))
    await schema.migrate(store, schema.load_migrations(ROOT / "schema"), embedding_dim=384)
    before = peak_mib()
    started = time.perf_counter()
    summary = check_export(export_lines_of(Path(path)))
    await check_target(store, summary, 384)
    checked = time.perf_counter()

    async def progress(done: int) -> None:
        return None

    written = await load_export(store, export_lines_of(Path(path)), progress)
    return {
        "check_s": checked - started,
        "write_s": time.perf_counter() - checked,
        "records": written,
        "peak_mib": peak_mib(),
        "before_mib": before,
    }


def in_child(phase: str, server: surreal_server.RunningServer, namespace: str, path: Path) -> dict:
    env = {**os.environ, **server.credentials.env(), "BENCH_SURREAL_URL": server.url}
    done = subprocess.run(
        [sys.executable, __file__, "--child", phase, "--namespace", namespace, "--path", str(path)],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


def body(path: Path) -> list[bytes]:
    lines = path.read_bytes().splitlines()
    trailer = json.loads(lines[-1])
    trailer.pop("sha256")
    return [*lines[1:-1], json.dumps(trailer).encode()]


async def main(count: int) -> None:
    server = surreal_server.start(storage="mem://", log=Path("/dev/null"))
    folder = Path(tempfile.mkdtemp(prefix="bench-export-"))
    try:
        os.environ.update(server.credentials.env(), BENCH_SURREAL_URL=server.url)
        store = TenantStore(Pool(config(), "t_bench_export"))
        await schema.migrate(store, schema.load_migrations(ROOT / "schema"), embedding_dim=384)
        await store.query(queries.FACT_FULLTEXT_REMOVE)
        built = await fill(store, count)
        print(
            f"export and import of {count:,} facts, {built['entities']:,} entities,"
            f" {built['episodes_count']:,} episodes (SurrealDB mem://, vectors on every"
            f" entity and fact); loaded in {built['insert'] + built['episodes']:.0f} s"
        )
        first, second = folder / "a.jsonl", folder / "b.jsonl"
        out = in_child("export", server, "t_bench_export", first)
        print(
            f"  export  {out['seconds']:7.1f} s  {out['bytes'] / 2**20:7.1f} MiB"
            f" ({out['lines']:,} lines, {out['bytes'] / out['lines']:.0f} B a line)"
            f"  peak {out['peak_mib']:.0f} MiB (process before: {out['before_mib']:.0f} MiB)"
        )
        back = in_child("import", server, "t_bench_import", first)
        took = back["check_s"] + back["write_s"]
        print(
            f"  import  {took:7.1f} s  (check {back['check_s']:.1f} s,"
            f" write {back['write_s']:.1f} s, {back['records']:,} records)"
            f"  peak {back['peak_mib']:.0f} MiB (process before: {back['before_mib']:.0f} MiB)"
        )
        in_child("export", server, "t_bench_import", second)
        same = body(first) == body(second)
        print(f"  the imported tenant exports the same file: {'yes' if same else 'NO'}")
    finally:
        server.stop()
        for path in folder.iterdir():
            path.unlink()
        folder.rmdir()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--facts", type=int, default=10_000)
    parser.add_argument("--child", choices=["export", "import"], help=argparse.SUPPRESS)
    parser.add_argument("--namespace", help=argparse.SUPPRESS)
    parser.add_argument("--path", help=argparse.SUPPRESS)
    arguments = parser.parse_args()
    if arguments.child == "export":
        print(json.dumps(asyncio.run(child_export(arguments.namespace, arguments.path))))
    elif arguments.child == "import":
        print(json.dumps(asyncio.run(child_import(arguments.namespace, arguments.path))))
    else:
        asyncio.run(main(arguments.facts))
