"""The explorer in headless chromium: first render and layout of 1k, 5k and 10k nodes
with four times as many edges, time per valid-time slider step at 5k nodes / 20k
edges, and write-to-screen latency of live updates (SurrealDB write -> LIVE SELECT hub
-> Channels -> browser -> on the graph).

`--scale N` measures a real tenant of N facts instead (issue 28's scale check): the
export of bench/million.py (people, organisations and places, one episode per five
facts, each mentioning their ends) imported with `manage.py import_tenant` into
SurrealDB on RocksDB, then the page as a user opens it: the first view (page load to
the graph drawn, laid out and its names placed), a search as one types, and an
expansion (a double-click on an entity), each `--runs` times, with the overlapping
names counted in each first view.

Runs the product as `make run` does, in a scratch folder: the local SurrealDB server
(mem://), migrations, the demo tenant and login, kgapp.web.serve; chromium logs in through the
login form.

    .venv/bin/python bench/explorer.py [--sizes 1000 5000 10000] [--writes 50] [--ended 0.3]
    .venv/bin/python bench/explorer.py --scale 100000 [--runs 10]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from selenium import webdriver  # noqa: E402
from selenium.webdriver.chrome.service import Service  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.support.ui import WebDriverWait  # noqa: E402
from surrealdb.data.types.record_id import RecordID  # noqa: E402

from kgapp import surreal_server  # noqa: E402
from kgapp.graph import queries  # noqa: E402
from kgapp.graph.store import Pool, StoreConfig, TenantStore  # noqa: E402

REPEAT = 5  # first renders per size; the median is reported

# Synthetic elements built in the page: n nodes, 4n edges, random validity intervals; a
# share of the facts (`--ended`) ended 200 days after they began, so they are history
# at "now" and not drawn.
LOAD = """
const [count, ended, done] = [arguments[0], arguments[1], arguments[arguments.length - 1]];
const {cy, merge, applyTime, layout, clear} = window.kgExplorer;
clear();
let seed = 7;
const random = () => (seed = (seed * 16807) % 2147483647) / 2147483647;
const day = 86400000, start = Date.UTC(2020, 0, 1);
const nodes = Array.from({length: count}, (_, i) => ({id: `entity:n${i}`, name: `Entity ${i}`,
  entity_type: ['Person', 'Organization', 'Location'][i % 3], degree: 4}));
const edges = Array.from({length: 4 * count}, (_, i) => {
  const valid = start + Math.floor(random() * 1800) * day;
  return {id: `relates_to:e${i}`, source: `entity:n${Math.floor(random() * count)}`,
    target: `entity:n${Math.floor(random() * count)}`, relation: 'KNOWS', fact: `fact ${i}`,
    confidence: random(), valid_at: new Date(valid).toISOString(),
    invalid_at: random() < ended ? new Date(valid + 200 * day).toISOString() : null,
    created_at: new Date(valid).toISOString(), expired_at: null};
});
const began = performance.now();
merge(nodes, edges);
const merged = performance.now();
applyTime();
const filtered = performance.now();
cy.one('layoutstop', () => {
  const laid = performance.now();
  requestAnimationFrame(() => requestAnimationFrame(() => done({
    total: performance.now() - began, add: merged - began, filter: filtered - merged,
    layout: laid - filtered, draw: performance.now() - laid})));
});
layout(null, {fit: true});
"""

# Facts hidden at the moment in view are added to Cytoscape while the browser is idle
# after the first render; returns how long after the call that finished.
SETTLE = """
const done = arguments[arguments.length - 1];
const began = performance.now();
const facts = window.kgExplorer.state.facts;
(function wait() {
  for (const fact of facts.values()) if (!fact.ele) { setTimeout(wait, 20); return; }
  done(performance.now() - began);
})();
"""

STEP = """
const done = arguments[arguments.length - 1];
const slider = document.getElementById('valid-time');
const times = [];
let i = 0;
// Start at the first position (a jump from "now", not a step), then step forwards.
slider.value = 100;
slider.dispatchEvent(new Event('input', {bubbles: true}));
function step() {
  if (i === 40) { done(times); return; }
  slider.value = 120 + 20 * i;
  const began = performance.now();
  slider.dispatchEvent(new Event('input', {bubbles: true}));
  const filtered = performance.now() - began;
  requestAnimationFrame(() => requestAnimationFrame(() => {
    times.push([filtered, performance.now() - began]);
    i += 1;
    setTimeout(step, 10);
  }));
}
requestAnimationFrame(() => requestAnimationFrame(() => setTimeout(step, 10)));
"""


def figures(samples: list[float]) -> str:
    ordered = sorted(samples)
    p95 = ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))]
    return f"p50 {statistics.median(ordered):7.1f} ms   p95 {p95:7.1f} ms"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def manage(env: dict[str, str], *command: str) -> None:
    subprocess.run(
        [sys.executable, "manage.py", *command],
        env=env,
        cwd=ROOT,
        check=True,
        stdout=subprocess.DEVNULL,
    )


def start_web(
    var: Path, surreal: surreal_server.RunningServer
) -> tuple[subprocess.Popen[bytes], str, dict[str, str]]:
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "kgapp.settings.test",
        "KG_VAR_DIR": str(var),
        "SURREAL_URL": surreal.url,
        **surreal.credentials.env(),
        "DATABASE_URL": f"sqlite:///{var / 'bench.sqlite3'}",
    }
    env.pop("REDIS_URL", None)
    python = sys.executable
    manage(env, "migrate", "--noinput", "-v", "0")
    manage(env, "bootstrap_demo")
    port = free_port()
    web = subprocess.Popen(
        [
            python,
            "-m",
            "kgapp.web.serve",
            "-b",
            "127.0.0.1",
            "-p",
            str(port),
            "kgapp.asgi:application",
        ],
        env=env,
        cwd=ROOT,
        stdout=(var / "daphne.log").open("wb"),
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    for _ in range(200):
        try:
            urllib.request.urlopen(f"{url}/api/v1/health", timeout=2).close()
            return web, url, env
        except OSError:
            time.sleep(0.3)
    raise RuntimeError((var / "daphne.log").read_text()[-2000:])


def browser() -> webdriver.Chrome:
    options = webdriver.ChromeOptions()
    options.binary_location = os.environ.get("CHROMIUM", "/usr/bin/chromium")
    for argument in (
        "--headless=new",
        "--no-sandbox",
        "--disable-dev-shm-usage",
        "--window-size=1280,800",
    ):
        options.add_argument(argument)
    driver = webdriver.Chrome(
        service=Service(os.environ.get("CHROMEDRIVER", "/usr/bin/chromedriver")), options=options
    )
    driver.set_script_timeout(300)
    return driver


def log_in(driver: webdriver.Chrome, url: str, var: Path) -> None:
    username, password = (var / "demo-login.txt").read_text().split()[:2]
    driver.get(f"{url}/accounts/login/")
    driver.find_element(By.NAME, "username").send_keys(username)
    driver.find_element(By.NAME, "password").send_keys(password)
    driver.find_element(By.CSS_SELECTOR, "button[type=submit]").click()
    WebDriverWait(driver, 30).until(lambda d: "/accounts/login/" not in d.current_url)


def open_explorer(driver: webdriver.Chrome, url: str, webgl: bool) -> None:
    driver.get(f"{url}/t/demo/explore?webgl={int(webgl)}")
    WebDriverWait(driver, 30).until(
        lambda d: d.execute_script("return document.getElementById('status').textContent") == "Live"
    )


async def live_latency(
    driver: webdriver.Chrome, surreal: surreal_server.RunningServer, writes: int
) -> list[float]:
    config = StoreConfig(
        url=surreal.url, username=surreal.credentials.user, password=surreal.credentials.password
    )
    store = TenantStore(Pool(config, "t_demo"))
    latencies = []
    for i in range(writes):
        key = f"bench{i}_{int(time.time() * 1000)}"
        written = time.time() * 1000
        await store.query(
            queries.ENTITY_CREATE,
            {"id": RecordID("entity", key), "row": {"name": f"live {key}", "canonical_name": key}},
        )
        seen = None
        deadline = time.monotonic() + 10
        while seen is None and time.monotonic() < deadline:
            seen = driver.execute_script(
                "return window.kgExplorer.seenAt.get(arguments[0]) ?? null", f"entity:{key}"
            )
            if seen is None:
                await asyncio.sleep(0.005)
        if seen is None:
            raise RuntimeError(f"entity:{key} never reached the browser")
        latencies.append(seen - written)
    return latencies


def main(sizes: list[int], writes: int, ended: float) -> None:
    with tempfile.TemporaryDirectory() as scratch:
        var = Path(scratch)
        surreal = surreal_server.start(storage="mem://", log=var / "surreal.log")
        web, url, _ = start_web(var, surreal)
        driver = browser()
        try:
            log_in(driver, url, var)
            print(
                f"explorer in headless chromium {driver.capabilities.get('browserVersion')},"
                f" {ended:.0%} of the facts ended before now"
            )
            for webgl in (False, True):
                open_explorer(driver, url, webgl)
                renderer = "webgl" if webgl else "canvas"
                for size in sizes:
                    runs = [driver.execute_async_script(LOAD, size, ended) for _ in range(REPEAT)]
                    took = sorted(runs, key=lambda run: run["total"])[len(runs) // 2]
                    parts = ", ".join(
                        f"{k} {took[k] / 1000:.2f}" for k in ("add", "filter", "layout", "draw")
                    )
                    spread = ", ".join(f"{run['total'] / 1000:.2f}" for run in runs)
                    print(
                        f"  {renderer:6} first render + layout, {size:>6} nodes /"
                        f" {4 * size:>6} edges: median {took['total'] / 1000:5.2f} s"
                        f" of {spread} ({parts})"
                    )
                    if size == 5000:
                        settled = driver.execute_async_script(SETTLE)
                        print(
                            f"  {renderer:6} facts hidden now, added while idle: done"
                            f" {settled / 1000:.2f} s after the first render"
                        )
                        steps = driver.execute_async_script(STEP)
                        print(
                            f"  {renderer:6} slider step at 5k / 20k, filter:"
                            f" {figures([s[0] for s in steps])}"
                        )
                        print(
                            f"  {renderer:6} slider step at 5k / 20k, until drawn:"
                            f" {figures([s[1] for s in steps])}"
                        )
            open_explorer(driver, url, False)
            latencies = asyncio.run(live_latency(driver, surreal, writes))
            print(f"  live write-to-screen ({writes} writes): {figures(latencies)}")
        finally:
            driver.quit()
            web.terminate()
            web.wait(15)
            surreal.stop()


# --- a real tenant of N facts (--scale) -----------------------------------------------

DRAWN = """
const {cy, state} = window.kgExplorer;
const named = cy.nodes().filter((n) => n.hasClass('quiet') || n.pstyle('label').strValue);
return document.getElementById('status').textContent === 'Live' && cy.nodes().length > 0
  && state.placing === 0 && named.length > 0;
"""
# A search as one types: the box's input, until the suggestions are listed.
SEARCH = """
const [query, done] = [arguments[0], arguments[arguments.length - 1]];
const input = document.getElementById('entity-search');
const list = document.getElementById('suggestions');
list.replaceChildren();
const began = performance.now();
input.value = query;
input.dispatchEvent(new Event('input', {bubbles: true}));
(function wait() {
  const took = performance.now() - began;
  if (list.children.length || took > 15000) done([took, list.children.length]);
  else setTimeout(wait, 5);
})();
"""
# An expansion: a double-click on the n-th most salient entity, until its neighbourhood is
# drawn and the status says so.
EXPAND = """
const [rank, done] = [arguments[0], arguments[arguments.length - 1]];
const {cy} = window.kgExplorer;
const ranked = cy.nodes().not('.fold').sort((a, b) => b.data('salience') - a.data('salience'));
const node = ranked[rank % ranked.length];
const before = cy.elements().length;
document.getElementById('status').textContent = '';
const began = performance.now();
node.emit('dbltap');
(function wait() {
  const ended = document.getElementById('status').textContent;
  if (ended === 'Ready' || ended.startsWith('Could not') || performance.now() - began > 15000) {
    requestAnimationFrame(() => done([performance.now() - began, cy.elements().length - before]));
  } else setTimeout(wait, 5);
})();
"""


def scale(facts: int, runs: int) -> None:
    from bench.million import generate

    with tempfile.TemporaryDirectory(prefix="bench-explorer-", dir=ROOT / "var") as scratch:
        var = Path(scratch)
        surreal = surreal_server.start(
            storage=f"rocksdb://{var / 'surreal'}", log=var / "surreal.log"
        )
        web, url, env = start_web(var, surreal)
        driver = None
        try:
            print(f"the explorer on a tenant of {facts:,} facts (SurrealDB on RocksDB)", flush=True)
            generate(facts, var / "export.jsonl")
            owner = (var / "demo-login.txt").read_text().split()[0]
            manage(env, "create_tenant", "scale", "--owner", owner)
            started = time.perf_counter()
            manage(env, "import_tenant", "scale", str(var / "export.jsonl"))
            print(
                f"  imported with manage.py import_tenant: {time.perf_counter() - started:.0f} s",
                flush=True,
            )
            driver = browser()
            driver.set_window_size(1600, 1000)
            log_in(driver, url, var)
            views, overlaps, searches, expansions = [], [], [], []
            for run in range(runs + 1):
                began = time.perf_counter()
                driver.get(f"{url}/t/scale/explore")
                WebDriverWait(driver, 60, poll_frequency=0.02).until(
                    lambda d: d.execute_script(DRAWN)
                )
                views.append(time.perf_counter() - began)
                time.sleep(0.3)  # the names are placed a moment after the last change
                pairs = driver.execute_script("return window.kgExplorer.overlappingLabels()")
                overlaps.append(len(pairs))
                if pairs:
                    print(f"  overlapping names on load {run + 1}: {pairs[:3]}")
                # The first letters of an entity drawn, as a user would type a name seen.
                name = driver.execute_script(
                    "const n = window.kgExplorer.cy.nodes().not('.fold');"
                    " return n[arguments[0] % n.length].data('label')",
                    run * 7,
                )
                searches.append(driver.execute_async_script(SEARCH, name[:4]))
                expansions.append(driver.execute_async_script(EXPAND, run))
            shown = driver.execute_script("return document.getElementById('counts').textContent")
            print(
                f"  first view (page load to drawn and named), cold: {views[0]:.2f} s;"
                f" warm {figures([v * 1000 for v in views[1:]])}"
                f" ({shown} after the last expansion)"
            )
            print(
                f"  overlapping names in the first view: {max(overlaps)} at most"
                f" over {len(overlaps)} loads"
            )
            print(
                "  search as one types (to suggestions listed):"
                f" {figures([s[0] for s in searches])};"
                f" {sum(1 for s in searches if not s[1])} of {len(searches)} found nothing"
            )
            print(
                f"  expand (double-click to drawn): {figures([e[0] for e in expansions])},"
                f" {statistics.median(e[1] for e in expansions):.0f} elements added (median)"
            )
        finally:
            if driver is not None:
                driver.quit()
            web.terminate()
            web.wait(15)
            surreal.stop()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 5000, 10000])
    parser.add_argument("--writes", type=int, default=50)
    parser.add_argument(
        "--ended",
        type=float,
        default=0.3,
        help="share of the facts that ended before now (default 0.3)",
    )
    parser.add_argument(
        "--scale",
        type=int,
        metavar="FACTS",
        help="measure a real tenant of FACTS facts instead (first view, search, expand)",
    )
    parser.add_argument("--runs", type=int, default=10, help="page loads with --scale")
    arguments = parser.parse_args()
    if arguments.scale:
        scale(arguments.scale, arguments.runs)
    else:
        main(arguments.sizes, arguments.writes, arguments.ended)
