"""Cost before and after: the estimate an upload gets (`dry_run`) against what ingesting
it reports, for a LoCoMo conversation from the shared data folder, through the real
pipeline and the real `openai` client against the scripted loopback model
(harness/llm_server.py), SurrealDB mem://, local MiniLM embeddings.

The scripted model answers every extraction with the speakers and the capitalised names
of the episode (one fact each) and every resolution with "nothing to merge"; it reports
tokens as characters / 4 of the messages (the response schema not counted, which the
API does count). Prints chunks, calls, input and output tokens and cost (at
gpt-4o-mini's default price), estimated and actual, and actual / estimated.

    .venv/bin/python bench/cost.py [--file 30.json] [--sessions 30]

The shared folder is ../shared from the repository root, or KG_SHARED_DIR.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("KG_SHARED_DIR") or ROOT.parent / "shared")
DATA = SHARED / "data" / "conversations" / "locomo"
sys.path.insert(0, str(ROOT))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from harness.llm_server import ScriptedLLM  # noqa: E402
from harness.recorded import episode_of  # noqa: E402
from kgapp import surreal_server  # noqa: E402
from kgapp.graph import jobs, schema  # noqa: E402
from kgapp.graph.documents.parse import parse_document  # noqa: E402
from kgapp.graph.documents.pdf import PdfLimits  # noqa: E402
from kgapp.graph.embeddings import local_embedder  # noqa: E402
from kgapp.graph.ingest.estimate import Upload, episodes_estimate, upload_episodes  # noqa: E402
from kgapp.graph.ingest.pipeline import ingest_job  # noqa: E402
from kgapp.graph.llm.client import LLMClient  # noqa: E402
from kgapp.graph.llm.prices import DEFAULT_PRICES  # noqa: E402
from kgapp.graph.llm.transport import LLMConfig  # noqa: E402
from kgapp.graph.ontology import ontology_load  # noqa: E402
from kgapp.graph.store import Pool, StoreConfig, TenantStore  # noqa: E402

MODEL = "gpt-4o-mini"
_NAME = re.compile(r"(?<![.!?]\s)(?<!^)\b([A-Z][a-z]{2,})\b")


def scripted_answer(body: dict[str, Any]) -> dict[str, Any]:
    """Speakers and names of the episode, one fact between the first speaker and each."""
    if body["response_format"]["json_schema"]["name"] != "extract_graph":
        return {"entities": [], "facts": []}
    text = episode_of(body)
    lines = [line for line in text.splitlines() if ":" in line]
    speakers = sorted({line.split(":", 1)[0].strip() for line in lines})[:2]
    names = [n for n in dict.fromkeys(_NAME.findall(text)) if n not in speakers][:6]
    entities = [{"name": s, "entity_type": "Person", "summary": ""} for s in speakers]
    entities += [{"name": n, "entity_type": "Concept", "summary": ""} for n in names]
    subject = speakers[0] if speakers else "Someone"
    facts = [
        {
            "source": subject,
            "relation": "TALKS_ABOUT",
            "target": n,
            "fact": f"{subject} talks about {n}.",
            "edge_type": "semantic",
            "confidence": 0.8,
            "valid_at": None,
            "invalid_at": None,
        }
        for n in names
    ]
    return {"entities": entities, "facts": facts}


def first_sessions(raw: dict[str, Any], sessions: int) -> dict[str, Any]:
    keep = {f"session_{i}" for i in range(1, sessions + 1)}
    keep |= {f"{k}_date_time" for k in keep}
    return {k: v for k, v in raw.items() if not k.startswith("session_") or k in keep}


async def measure(config: StoreConfig, base_url: str, upload: Upload) -> dict[str, Any]:
    store = TenantStore(Pool(config, "t_bench_cost"))
    await schema.migrate(store, schema.load_migrations(ROOT / "schema"), embedding_dim=384)
    episodes = await upload_episodes(upload, PdfLimits())
    expected = episodes_estimate(
        episodes, await ontology_load(store), model=MODEL, prices=DEFAULT_PRICES
    )
    llm = LLMClient(LLMConfig(base_url=base_url, api_key="bench", model=MODEL))
    job = await jobs.job_create(store, kind="bench")
    report = await ingest_job(store, job["id"], episodes, embedder=local_embedder(), llm=llm)
    (actual,) = report.usage
    return {"expected": expected.as_dict(), "actual": {"chunks": len(episodes), **actual}}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--file", default="30.json")
    parser.add_argument("--sessions", type=int, default=30)
    args = parser.parse_args()
    path = DATA / args.file
    if not path.is_file():
        print(f"shared data missing: {path} not found (set KG_SHARED_DIR); nothing measured")
        return
    raw = first_sessions(json.loads(path.read_text()), args.sessions)
    data = json.dumps(raw).encode()
    upload = Upload(path.name, data, parse_document(path.name, data, max_bytes=len(data) + 1))
    with tempfile.TemporaryDirectory(prefix="kg-bench-cost-") as scratch:
        server = surreal_server.start(storage="mem://", log=Path(scratch) / "surreal.log")
        llm_server = ScriptedLLM().start()
        llm_server.on_chat(scripted_answer)
        try:
            config = StoreConfig(
                url=server.url,
                username=server.credentials.user,
                password=server.credentials.password,
                query_timeout=120,
            )
            figures = asyncio.run(measure(config, llm_server.base_url, upload))
        finally:
            llm_server.stop()
            server.stop()
    sessions = sum(1 for k in raw if re.fullmatch(r"session_\d+", k))
    messages = len(upload.parsed.messages)
    print(f"{path.name}: {sessions} sessions, {messages} messages, {MODEL} prices")
    print(f"  {'':14}{'estimated':>12}{'actual':>12}{'actual/est':>12}")
    for key in ("chunks", "calls", "input_tokens", "output_tokens", "cost_usd"):
        est, act = figures["expected"][key], figures["actual"][key]
        ratio = f"{act / est:.2f}" if est else "-"
        shown = (f"{est:.4f}", f"{act:.4f}") if key == "cost_usd" else (f"{est:,}", f"{act:,}")
        print(f"  {key:14}{shown[0]:>12}{shown[1]:>12}{ratio:>12}")


if __name__ == "__main__":
    main()
