"""Pictures of the explorer for the README: a LoCoMo conversation and a prose document, each
uploaded into a tenant of its own with no model configured (the offline extractor), and
with `--label explorer` the demo dataset too, drawn in headless chromium at 1600x1000.

How: the local SurrealDB server (mem://) and Django with the test settings on a scratch
folder and SQLite database, Celery tasks run in this process (bench/scratch.py); a user
made here owns two tenants and POSTs one file to each through `/api/v1/t/{slug}/documents`:
the LoCoMo export ../shared/data/conversations/locomo/41.json (its sessions carry their
own dates) and docs/examples/company-history.md (reference time PROSE_REFERENCE_TIME).
The ingest job is awaited, then the tenant's communities are detected (a `communities`
job, awaited too). Then kgapp.web.serve serves the app on a free port (bench/explorer.py's
`start_web`), chromium (bench/explorer.py's `browser`) gets that user's session, opens
`/t/{slug}/explore`, waits until the explorer is live, laid out and has added every fact,
and saves `truth-<label>-chat.png` and `truth-<label>-prose.png` into the folder
(`explorer-demo.png`, `explorer-chat.png` and `explorer-prose.png` with `--label
explorer`: the explorer's first views, as a new user sees them).
Printed per graph: current entities and facts (as bench/extraction.py counts them:
entities not merged, facts valid now and not expired) and what the explorer drew.
Without ../shared only the prose picture is drawn.

    .venv/bin/python bench/screenshots.py [--out var/screenshots] [--label after|explorer]
        [--chat ../shared/data/conversations/locomo/41.json]
"""

from __future__ import annotations

import argparse
import os
import secrets
import sys
import tempfile
import time
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from selenium.webdriver.support.ui import WebDriverWait  # noqa: E402

from bench.explorer import browser, start_web  # noqa: E402
from bench.extraction import DATA, read_graph  # noqa: E402
from bench.scratch import django_setup  # noqa: E402
from kgapp import surreal_server  # noqa: E402

CHAT = DATA / "41.json"
PROSE = ROOT / "docs" / "examples" / "company-history.md"
PROSE_REFERENCE_TIME = "2024-06-01T00:00:00Z"  # when the history was compiled
WIDTH, HEIGHT = 1600, 1000
USERNAME = "screenshots"

# Until the explorer is live (graph loaded, socket ready), no server layout is in flight,
# and every fact has been added to Cytoscape (those hidden now are added while idle).
SETTLED = """
const explorer = window.kgExplorer;
return Boolean(explorer) && document.getElementById('status').textContent === 'Live'
  && explorer.state.placing === 0 && [...explorer.state.facts.values()].every((f) => f.ele);
"""
# Two frames after the last change, what the explorer shows.
DRAWN = """
const done = arguments[arguments.length - 1];
requestAnimationFrame(() => requestAnimationFrame(() => done({
  nodes: window.kgExplorer.state.visible.nodes, edges: window.kgExplorer.state.visible.edges,
  width: window.innerWidth, height: window.innerHeight})));
"""


@dataclass
class Upload:
    picture: str  # demo | chat | prose
    slug: str
    name: str
    path: Path | None  # None: the demo dataset (kgapp/demo)
    reference_time: str | None  # None: the upload's time (a conversation has its own)


def uploads(chat: Path, demo: bool) -> list[Upload]:
    prose = Upload("prose", "prose", "Company history (prose)", PROSE, PROSE_REFERENCE_TIME)
    first = [Upload("demo", "demo-graph", "Demo", None, None)] if demo else []
    if not chat.is_file():
        print(f"{chat} is absent (../shared is not there): drawing only the prose picture")
        return [*first, prose]
    return [*first, Upload("chat", "chat", f"LoCoMo {chat.stem} (chat)", chat, None), prose]


def user_client() -> tuple[Any, Any]:
    """A user (not staff) and a test client logged in as them."""
    from django.contrib.auth import get_user_model
    from django.test import Client

    user = get_user_model().objects.create_user(USERNAME, password=secrets.token_urlsafe(16))
    client = Client(HTTP_HOST="localhost")
    client.force_login(user)
    return user, client


def wait_job(client: Any, slug: str, job_id: str) -> dict[str, Any]:
    """The job once it has ended (at once when Celery runs eagerly)."""
    deadline = time.monotonic() + 1800
    while True:
        job: dict[str, Any] = client.get(f"/api/v1/t/{slug}/jobs/{job_id}").json()
        if job["status"] in ("completed", "failed", "paused"):
            return job
        if time.monotonic() > deadline:
            raise RuntimeError(f"job {job_id} of {slug} still {job['status']} after 30 minutes")
        time.sleep(0.5)


def fill(upload: Upload, user: Any, client: Any) -> None:
    """The tenant, the file uploaded and ingested, the communities detected; prints the
    graph's counts."""
    from kgapp import tasks
    from tenants import services

    tenant = services.tenant_create(slug=upload.slug, name=upload.name, owner=user)
    started = time.perf_counter()
    if upload.path is None:  # the demo: its files, ingested and detected in one chain
        from kgapp.demo.load import demo_load
        from kgapp.graph.records import record_key

        for queued in demo_load(tenant):
            wait_job(client, upload.slug, record_key(queued["id"]))
        print(
            f"demo: {len(read_graph(upload.slug).entities)} entities,"
            f" ingested in {time.perf_counter() - started:.1f} s"
        )
        return
    form: dict[str, Any] = {}
    if upload.reference_time:
        form["reference_time"] = upload.reference_time
    with upload.path.open("rb") as handle:
        response = client.post(f"/api/v1/t/{upload.slug}/documents", {"files": [handle], **form})
    if response.status_code != 202:
        raise RuntimeError(f"upload refused: {response.status_code} {response.content[:500]!r}")
    job = wait_job(client, upload.slug, response.json()[0]["job_id"])
    if job["status"] != "completed":
        raise RuntimeError(f"ingest of {upload.path.name}: {job['status']} {job.get('error')}")
    rebuild = tasks.queue_rebuild_communities(tenant, created_by=USERNAME)
    detected = wait_job(client, upload.slug, rebuild["id"])
    if detected["status"] != "completed":
        raise RuntimeError(f"communities of {upload.slug}: {detected['status']}")
    graph = read_graph(upload.slug)
    communities = detected.get("counts", {}).get("communities", "?")
    print(
        f"{upload.picture}: {upload.path.name}: {len(graph.entities)} entities, "
        f"{len(graph.facts)} facts (current); episodes "
        f"{job.get('counts', {}).get('episodes', '?')}, communities {communities}; "
        f"ingested and detected in {time.perf_counter() - started:.1f} s"
    )


def sized(driver: Any) -> None:
    """The page's viewport WIDTHxHEIGHT: the window is that much bigger than its page."""
    driver.set_window_size(WIDTH, HEIGHT)
    inner = driver.execute_script("return [window.innerWidth, window.innerHeight]")
    driver.set_window_size(2 * WIDTH - inner[0], 2 * HEIGHT - inner[1])


def draw(driver: Any, url: str, upload: Upload, out: Path, label: str) -> None:
    driver.get(f"{url}/t/{upload.slug}/explore")
    WebDriverWait(driver, 120, poll_frequency=0.2).until(lambda d: d.execute_script(SETTLED))
    time.sleep(1.0)  # fonts and the histogram
    shown = driver.execute_async_script(DRAWN)
    prefix = "explorer" if label == "explorer" else f"truth-{label}"
    path = out / f"{prefix}-{upload.picture}.png"
    driver.save_screenshot(str(path))
    print(
        f"{upload.picture}: the explorer shows {shown['nodes']} entities and "
        f"{shown['edges']} facts at {shown['width']}x{shown['height']}: {path}"
    )


def main(out: Path, label: str, chat: Path) -> None:
    began = time.perf_counter()
    out.mkdir(parents=True, exist_ok=True)
    todo = uploads(chat, demo=label == "explorer")
    with tempfile.TemporaryDirectory(prefix="kg-screenshots-") as scratch:
        var = Path(scratch)
        surreal = surreal_server.start(storage="mem://", log=var / "surreal.log")
        try:
            django_setup(var, surreal)
            from django.conf import settings

            from tenants.wiring import reset_graph_runtime

            try:
                user, client = user_client()
                for upload in todo:
                    fill(upload, user, client)
            finally:
                reset_graph_runtime()  # this process is done with the graph
            web, url, _ = start_web(var, surreal)
            driver = browser()
            try:
                driver.get(f"{url}/api/v1/health")
                driver.add_cookie(
                    {
                        "name": settings.SESSION_COOKIE_NAME,
                        "path": "/",
                        "value": client.cookies[settings.SESSION_COOKIE_NAME].value,
                    }
                )
                sized(driver)
                for upload in todo:
                    draw(driver, url, upload, out, label)
            finally:
                driver.quit()
                web.terminate()
                web.wait(15)
        finally:
            surreal.stop()
    print(
        f"{label}: {len(todo)} pictures in {time.perf_counter() - began:.0f} s "
        f"({datetime.now():%Y-%m-%d %H:%M})"
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--out",
        type=Path,
        default=ROOT / "var" / "screenshots",
        help="the folder for the PNGs (default var/screenshots)",
    )
    parser.add_argument(
        "--label",
        choices=["before", "after", "explorer"],
        default="after",
        help="the pictures' names: truth-<label>-chat.png, -prose.png;"
        " explorer-demo.png, -chat.png, -prose.png",
    )
    parser.add_argument(
        "--chat",
        type=Path,
        default=CHAT,
        help="the LoCoMo export (default ../shared/.../locomo/41.json)",
    )
    arguments = parser.parse_args()
    main(arguments.out, arguments.label, arguments.chat)
