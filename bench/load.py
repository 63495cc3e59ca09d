"""Load: paced, open-loop-ish HTTP load of mixed search, query and graph requests across
tenants, stepped up until the product stops keeping its promise (p95 < 300 ms and under
0.1% errors). `make load`, or:

    .venv/bin/python bench/load.py [--rates 2 4 6 8 10 12 15 20 25 30 40] [--duration 60]
        [--warmup 15] [--users 80] [--tenants 3] [--facts 150] [--episodes 40]
        [--llm-delay 0] [--all-steps] [--json results.json]

It sets everything up by itself in a scratch folder (KG_VAR_DIR), on loopback, and
stops it all at the end (also on Ctrl-C or an error):
- the scripted OpenAI-compatible model (harness/llm_server.py) in this process: it
  answers `query_keywords` (LightRAG's keywords, split from the question as the offline
  path does) and `answer_query`, after `--llm-delay` seconds (default 0: the figures are
  the app's own cost); the app's LLM cache (in each tenant's namespace) answers a
  question asked again, as in production;
- the local SurrealDB server (mem://) with fresh root credentials;
- Django (`kgapp.settings.dev`, as `make run`) on SQLite in the scratch folder: the
  tenants, each with an owner and `--viewers` viewers holding API tokens;
- the web server (kgapp.web.serve, one process, as `make run`) on a free port, pointed at
  the scripted model;
- data written through the API: `--facts` facts per tenant (POST facts) and `--episodes`
  text episodes per tenant (POST episodes, extracted offline by a Celery worker started
  for the setup only, without the model), then communities (POST communities/rebuild);
- one request of each kind at a time (the unloaded latency), a warm-up run at the first
  rate (not reported), then, per offered rate, one headless locust run
  (bench/locustfile.py) of `--users` users spawned at `rate` users a second, each paced
  by `constant_throughput(rate / users)`: search 4, query 2, query answered by the model
  1, graph 2 (by weight), each user with its own tenant's viewer token; the steps stop
  after the first one that misses the targets (`--all-steps`: run them all).

Rate limits (kgapp/web/ratelimits.py) are raised to 1,000,000 a minute for every scope
(KG_RATE_LIMITS), so the counters are still kept but never refuse: this measures
throughput, not the limits.

Per step it prints the offered and achieved rate, p50/p95/p99 of every request, the
error rate and p95 per kind; the sustained rate is the achieved rate of the highest step
with p95 < 300 ms, under 0.1% errors and at least 95% of the offered rate achieved.
Locust runs on the same machine as the product and takes some of its CPU.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import random
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import httpx  # noqa: E402

from harness.llm_server import Reply, ScriptedLLM  # noqa: E402
from kgapp import surreal_server  # noqa: E402

RATES = [2, 4, 6, 8, 10, 12, 15, 20, 25, 30, 40]
P95_TARGET_MS = 300.0
ERROR_TARGET = 0.001
ACHIEVED_TARGET = 0.95
RATE_LIMITS = ",".join(
    f"{scope}=1000000/m"
    for scope in (
        "login",
        "login_ip",
        "token_create",
        "token_create_token",
        "upload",
        "upload_token",
        "query",
        "query_token",
    )
)
# Variables of the caller's environment that would point the product elsewhere.
_FOREIGN = re.compile(r"^(DJANGO_|KG_|SURREAL_|OPENAI_|REDIS_URL$|DATABASE_URL$|CELERY_)")
TERMINAL = {"completed", "failed", "paused", "cancelled"}

FIRST = [
    "Ada",
    "Bilal",
    "Chen",
    "Dmitri",
    "Esther",
    "Farouk",
    "Gwen",
    "Hiroshi",
    "Ines",
    "Jonas",
    "Kemi",
    "Luca",
    "Mei",
    "Nadia",
    "Omar",
    "Priya",
    "Quentin",
    "Rosa",
    "Sven",
    "Tala",
]
LAST = [
    "Okafor",
    "Petrov",
    "Tanaka",
    "Haddad",
    "Llewellyn",
    "Moreau",
    "Singh",
    "Novak",
    "Ferreira",
    "Kowalski",
    "Andersen",
    "Castillo",
    "Nguyen",
    "Osei",
    "Larsen",
    "Ruiz",
]
ORGS = [
    "Acme",
    "Globex",
    "Initech",
    "Umbrella",
    "Hooli",
    "Vandelay",
    "Soylent",
    "Cyberdyne",
    "Tyrell",
    "Wonka",
    "Aperture",
    "Oscorp",
    "Stark",
    "Wayne",
    "Massive Dynamic",
]
SUFFIX = ["Labs", "Group", "Systems", "Analytics", "Foods", "Energy"]
CITIES = [
    "Lisbon",
    "Osaka",
    "Nairobi",
    "Montreal",
    "Krakow",
    "Valparaiso",
    "Tbilisi",
    "Auckland",
    "Reykjavik",
    "Marrakesh",
    "Hanoi",
    "Bergen",
    "Cusco",
    "Tallinn",
    "Accra",
]
QUESTIONS = [
    "Where does {p} work?",
    "Who does {p} know?",
    "Where does {p} live?",
    "Who works at {o}?",
    "Who lives in {c}?",
    "Where is {o} based?",
    "What happened at {o} in {y}?",
    "Who moved to {c} in {y}?",
]
SEARCHES = [
    "{p}",
    "{o}",
    "{c}",
    "{p} {o}",
    "people working at {o}",
    "who lives in {c}",
    "{o} office in {c}",
    "colleagues of {p}",
]


def main() -> None:
    args = parse_args()
    signal.signal(signal.SIGTERM, interrupt)
    signal.signal(signal.SIGINT, signal.default_int_handler)  # even when started in background
    with contextlib.ExitStack() as stack:
        scratch = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="kg-load-")))
        llm = stack.enter_context(scripted_model(args.llm_delay))
        say("starting the local SurrealDB server (mem://)")
        surreal = surreal_server.start(storage="mem://", log=scratch / "surreal.log")
        stack.callback(surreal.stop)
        env = product_env(scratch, surreal, llm)
        tenants = provision(env, args.tenants, args.viewers)
        url, web = start_web(env, scratch)
        stack.callback(stop, web)
        with httpx.Client(base_url=url, timeout=120) as client:
            load_data(client, env, scratch, tenants, args.facts, args.episodes)
            warm_up(client, tenants)
            unloaded(client, tenants)
        steps = run_steps(url, tenants, args, scratch, llm)
        report(steps, args)


def interrupt(signum: int, frame: object) -> None:
    """SIGTERM unwinds like Ctrl-C, so every child is stopped."""
    raise KeyboardInterrupt


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--rates",
        type=float,
        nargs="+",
        default=RATES,
        help="offered requests per second, one step each, until one misses (default %(default)s)",
    )
    parser.add_argument("--duration", type=int, default=60, help="seconds per step (60)")
    parser.add_argument(
        "--warmup",
        type=int,
        default=15,
        help="seconds of unreported load at the first rate before the steps (15)",
    )
    parser.add_argument("--users", type=int, default=80, help="locust users, every step (80)")
    parser.add_argument("--tenants", type=int, default=3, help="tenants (3)")
    parser.add_argument("--viewers", type=int, default=2, help="viewer tokens per tenant (2)")
    parser.add_argument("--facts", type=int, default=150, help="facts per tenant (150)")
    parser.add_argument("--episodes", type=int, default=40, help="episodes per tenant (40)")
    parser.add_argument(
        "--llm-delay",
        type=float,
        default=0.0,
        help="seconds the scripted model takes per answer (0)",
    )
    parser.add_argument(
        "--all-steps",
        action="store_true",
        help="run every step, not stopping after the first one that misses",
    )
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    args = parser.parse_args()
    if not (1 <= args.tenants <= 10 and args.viewers >= 1 and args.users >= 1):
        parser.error("--tenants 1..10, --viewers and --users at least 1")
    if args.duration < 5 or args.warmup < 0 or any(rate <= 0 for rate in args.rates):
        parser.error("--duration at least 5 s, --warmup at least 0, every rate above 0")
    return args


def say(text: str) -> None:
    print(f"load: {text}", flush=True)


# --- the parts -----------------------------------------------------------------------


@contextlib.contextmanager
def scripted_model(delay: float) -> Iterator[ScriptedLLM]:
    """The scripted model: keywords split from the question, a short grounded answer."""

    def answer(body: dict[str, Any]) -> Reply | None:
        schema = (body.get("response_format") or {}).get("json_schema") or {}
        prompt = "".join(str(m.get("content") or "") for m in body.get("messages", []))
        question = prompt.rsplit("<question>", 1)[-1].split("</question>", 1)[0].strip()
        if schema.get("name") == "query_keywords":
            words = re.findall(r"[A-Za-z][A-Za-z'-]+", question)
            low = [w for w in words if w[0].isupper()]
            high = [w.lower() for w in words if not w[0].isupper() and len(w) > 3]
            return Reply({"high_level": high or low, "low_level": low or high}, delay=delay)
        if schema.get("name") == "answer_query":
            facts = prompt.count("\n- ")
            return Reply({"answer": f"From {facts} lines of context: {question}"}, delay=delay)
        return None  # anything else is a 500: the load asks for nothing else

    with ScriptedLLM() as llm:
        llm.on_chat(answer)
        yield llm


def product_env(
    scratch: Path, surreal: surreal_server.RunningServer, llm: ScriptedLLM
) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not _FOREIGN.match(k)}
    return {
        **env,
        "DJANGO_SETTINGS_MODULE": "kgapp.settings.dev",
        "KG_VAR_DIR": str(scratch),
        "DATABASE_URL": f"sqlite:///{scratch / 'load.sqlite3'}",
        "SURREAL_URL": surreal.url,
        **surreal.credentials.env(),
        "OPENAI_BASE_URL": llm.base_url,
        "OPENAI_API_KEY": "scripted",
        "KG_RATE_LIMITS": RATE_LIMITS,
        "KG_COMMUNITY_EVERY_EPISODES": "0",
        "KG_COMMUNITY_DEBOUNCE": "-1",  # no detection after ingest jobs in a load run
        "KG_LOG_LEVEL": "WARNING",
    }


def provision(env: dict[str, str], count: int, viewers: int) -> list[dict[str, Any]]:
    """Tenants, their owner and viewers, and API tokens, through the tenants services."""
    say(f"creating {count} tenants with an owner and {viewers} viewers each")
    os.environ.update(env)
    import django

    django.setup()
    from django.contrib.auth import get_user_model
    from django.core.management import call_command

    from tenants import services
    from tenants.models import Role
    from tenants.wiring import reset_graph_runtime

    call_command("migrate", verbosity=0, interactive=False)
    users = get_user_model().objects
    tenants = []
    for number in range(count):
        slug = f"load-{chr(ord('a') + number)}"
        owner = users.create_user(f"{slug}-owner", password=None)
        tenant = services.tenant_create(slug=slug, name=f"Load {number + 1}", owner=owner)
        tokens = []
        for v in range(viewers):
            viewer = users.create_user(f"{slug}-viewer-{v}", password=None)
            services.membership_set(tenant=tenant, user=viewer, role=Role.VIEWER)
            tokens.append(services.token_create(user=viewer, name="load")[1])
        owner_token = services.token_create(user=owner, name="load")[1]
        tenants.append({"slug": slug, "number": number, "owner": owner_token, "tokens": tokens})
    reset_graph_runtime()
    return tenants


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def start_web(env: dict[str, str], scratch: Path) -> tuple[str, subprocess.Popen[bytes]]:
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    say(f"starting Daphne at {url} (log: {scratch / 'daphne.log'})")
    web = subprocess.Popen(
        [
            sys.executable,
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
        stdout=(scratch / "daphne.log").open("wb"),
        stderr=subprocess.STDOUT,
    )
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and web.poll() is None:
        with contextlib.suppress(httpx.HTTPError):
            if httpx.get(f"{url}/api/v1/health", timeout=2).status_code == 200:
                return url, web
        time.sleep(0.3)
    stop(web)
    raise RuntimeError("Daphne did not answer:\n" + (scratch / "daphne.log").read_text()[-3000:])


def start_worker(env: dict[str, str], scratch: Path) -> subprocess.Popen[bytes]:
    """A Celery worker for the setup's ingestion, without the model (offline extraction)."""
    offline = {k: v for k, v in env.items() if not k.startswith("OPENAI_")}
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "celery",
            "-A",
            "kgapp.celery",
            "worker",
            "--pool=solo",
            "--loglevel=WARNING",
            "--without-heartbeat",
            "--without-gossip",
            "--without-mingle",
        ],
        env=offline,
        cwd=ROOT,
        stdout=(scratch / "worker.log").open("wb"),
        stderr=subprocess.STDOUT,
    )


def stop(process: subprocess.Popen[bytes], timeout: float = 20) -> None:
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


# --- data ------------------------------------------------------------------------------


def vocabulary(number: int) -> dict[str, list[str]]:
    """Each tenant's own people, organisations and places (overlapping a little)."""
    rng = random.Random(1000 + number)
    people = [f"{first} {last}" for first in FIRST for last in LAST]
    orgs = [f"{o} {s}" for o in ORGS for s in SUFFIX]
    return {
        "people": rng.sample(people, 40),
        "orgs": rng.sample(orgs, 12),
        "cities": rng.sample(CITIES, 8),
    }


def corpus(number: int, facts: int, episodes: int) -> tuple[list[dict], list[dict]]:
    words, rng = vocabulary(number), random.Random(number)
    start = datetime(2019, 1, 1, tzinfo=UTC)
    person, org, city = (
        (lambda: rng.choice(words["people"])),
        (lambda: rng.choice(words["orgs"])),
        (lambda: rng.choice(words["cities"])),
    )
    posted = []
    for _ in range(facts):
        kind = rng.randrange(4)
        source, stype = (org(), "Organization") if kind == 3 else (person(), "Person")
        relation, target, ttype, verb = [
            ("WORKS_AT", org(), "Organization", "works at"),
            ("LIVES_IN", city(), "Location", "lives in"),
            ("KNOWS", person(), "Person", "knows"),
            ("LOCATED_IN", city(), "Location", "is based in"),
        ][kind]
        if target == source:
            continue
        valid = start + timedelta(days=rng.randrange(2000))
        fact: dict[str, Any] = {
            "source": {"name": source, "type": stype},
            "relation": relation,
            "target": {"name": target, "type": ttype},
            "fact": f"{source} {verb} {target}.",
            "valid_at": valid.isoformat(),
        }
        if rng.random() < 0.2:
            fact["invalid_at"] = (valid + timedelta(days=rng.randrange(30, 600))).isoformat()
        posted.append(fact)
    texts = []
    for i in range(episodes):
        when = start + timedelta(days=rng.randrange(2000))
        p1, p2, o, c = person(), person(), org(), city()
        texts.append(
            {
                "content": f"On {when:%d %B %Y}, {p1} joined {o} in {c}. {p1} met {p2} at the"
                f" {o} office in {c}, and {p2} later moved to {city()}.",
                "source": "text",
                "reference_time": when.isoformat(),
                "name": f"note {i}",
            }
        )
    return posted, texts


def prompts(number: int) -> tuple[list[str], list[str]]:
    """Search texts and questions for a tenant's users: its own names in templates."""
    words, rng = vocabulary(number), random.Random(500 + number)

    def fill(template: str) -> str:
        return template.format(
            p=rng.choice(words["people"]),
            o=rng.choice(words["orgs"]),
            c=rng.choice(words["cities"]),
            y=rng.randrange(2019, 2025),
        )

    return [fill(t) for t in SEARCHES * 25], [fill(t) for t in QUESTIONS * 25]


def load_data(
    client: httpx.Client,
    env: dict[str, str],
    scratch: Path,
    tenants: list[dict[str, Any]],
    facts: int,
    episodes: int,
) -> None:
    say(f"writing {facts} facts and {episodes} episodes per tenant through the API")
    worker = start_worker(env, scratch)
    try:
        began = time.monotonic()
        with ThreadPoolExecutor(len(tenants)) as pool:
            jobs = list(pool.map(lambda t: write_tenant(client, t, facts, episodes), tenants))
        say(f"  facts written and episodes queued in {time.monotonic() - began:.0f} s")
        wait_jobs(client, tenants, jobs, worker, scratch)
        rebuilds = [
            [post(client, t, "/communities/rebuild", {}, owner=True)["job_id"]] for t in tenants
        ]
        wait_jobs(client, tenants, rebuilds, worker, scratch)
        say(f"data written and extracted in {time.monotonic() - began:.0f} s")
    finally:
        stop(worker)
    for tenant in tenants:
        counts = get(client, tenant, "/")
        nodes = get(client, tenant, "/graph?limit=60")["nodes"]
        tenant["seeds"] = [node["data"]["id"] for node in nodes]
        tenant["searches"], tenant["questions"] = prompts(tenant["number"])
        say(f"  {tenant['slug']}: {json.dumps(counts.get('counts', counts))}")


def write_tenant(
    client: httpx.Client, tenant: dict[str, Any], facts: int, episodes: int
) -> list[str]:
    posted, texts = corpus(tenant["number"], facts, episodes)
    for fact in posted:
        post(client, tenant, "/facts", fact, owner=True)
    return [post(client, tenant, "/episodes", text, owner=True)["job_id"] for text in texts]


def wait_jobs(
    client: httpx.Client,
    tenants: list[dict[str, Any]],
    jobs: list[list[str]],
    worker: subprocess.Popen[bytes],
    scratch: Path,
    timeout: float = 600,
) -> None:
    deadline = time.monotonic() + timeout
    for tenant, wanted in zip(tenants, jobs, strict=True):
        while True:
            rows = {row["id"]: row for row in get(client, tenant, "/jobs?limit=500")}
            statuses = Counter(rows[j]["status"] if j in rows else "missing" for j in wanted)
            if set(statuses) <= TERMINAL:
                break
            if time.monotonic() > deadline or worker.poll() is not None:
                log = (scratch / "worker.log").read_text()[-3000:]
                raise RuntimeError(
                    f"{tenant['slug']}: jobs still {dict(statuses)}, worker exit"
                    f" {worker.poll()}\n{log}"
                )
            time.sleep(1)
        if set(statuses) != {"completed"}:
            failed = [rows[j].get("error") for j in wanted if rows[j]["status"] != "completed"]
            raise RuntimeError(f"{tenant['slug']}: jobs {dict(statuses)}: {failed[:3]}")


def post(
    client: httpx.Client,
    tenant: dict[str, Any],
    path: str,
    body: dict[str, Any],
    owner: bool = False,
) -> Any:
    return call(client, "POST", tenant, path, owner, json=body)


def get(client: httpx.Client, tenant: dict[str, Any], path: str) -> Any:
    return call(client, "GET", tenant, path, True)


def call(
    client: httpx.Client, method: str, tenant: dict[str, Any], path: str, owner: bool, **kwargs: Any
) -> Any:
    token = tenant["owner"] if owner else tenant["tokens"][0]
    response = client.request(
        method,
        f"/api/v1/t/{tenant['slug']}{path}",
        headers={"Authorization": f"Bearer {token}"},
        **kwargs,
    )
    if response.status_code >= 300:
        raise RuntimeError(f"{method} {path}: {response.status_code} {response.text[:300]}")
    return response.json()


def warm_up(client: httpx.Client, tenants: list[dict[str, Any]]) -> None:
    """The first search and query of a tenant load its indexes and the models."""
    say("warming up (indexes, embedder, every query mode)")
    for tenant in tenants:
        post(client, tenant, "/search", {"query": tenant["searches"][0]})
        for mode in ("local", "global", "hybrid", "naive", "mix"):
            post(client, tenant, "/query", {"query": tenant["questions"][0], "mode": mode})
        post(client, tenant, "/query", {"query": tenant["questions"][0], "answer": True})
        get(client, tenant, "/graph?limit=200")


def unloaded(client: httpx.Client, tenants: list[dict[str, Any]], rounds: int = 4) -> None:
    """Each kind of request one at a time, for comparison with the steps."""
    times: dict[str, list[float]] = {}
    for number in range(rounds):
        for tenant in tenants:
            text, question = tenant["searches"][number + 1], tenant["questions"][number + 1]
            for kind, method, path, body in [
                ("search", "POST", "/search", {"query": text}),
                ("query", "POST", "/query", {"query": question, "mode": "hybrid"}),
                ("query+answer", "POST", "/query", {"query": question, "answer": True}),
                ("graph", "GET", "/graph?limit=200", None),
            ]:
                began = time.perf_counter()
                call(client, method, tenant, path, False, json=body)
                times.setdefault(kind, []).append(1000 * (time.perf_counter() - began))
    medians = ", ".join(f"{k} {percentile(sorted(v), 0.5):.0f}" for k, v in times.items())
    say(f"one request at a time, median (ms): {medians}")


# --- steps -----------------------------------------------------------------------------


def run_steps(
    url: str,
    tenants: list[dict[str, Any]],
    args: argparse.Namespace,
    scratch: Path,
    llm: ScriptedLLM,
) -> list[dict[str, Any]]:
    if args.warmup:
        say(f"warm-up step: {args.rates[0]:g} req/s for {args.warmup} s (not reported)")
        run_step(url, tenants, args.rates[0], args.warmup, args.users, scratch, "warmup")
    steps = []
    for rate in args.rates:
        say(f"step: {rate:g} req/s offered for {args.duration} s ({args.users} users)")
        model_calls = len(llm.chat_requests())
        step = run_step(url, tenants, rate, args.duration, args.users, scratch, f"{rate:g}")
        step["model_calls"] = len(llm.chat_requests()) - model_calls
        steps.append(step)
        print(step_line(step), flush=True)
        if not step["held"] and not args.all_steps:
            say("this step missed the targets; stopping (--all-steps runs the rest)")
            break
    return steps


def run_step(
    url: str,
    tenants: list[dict[str, Any]],
    rate: float,
    duration: int,
    users: int,
    scratch: Path,
    name: str,
) -> dict[str, Any]:
    """One headless locust run at `rate`; its figures from every request's sample."""
    plan = scratch / f"step-{name}.json"
    samples = scratch / f"step-{name}-samples.json"
    plan.write_text(
        json.dumps({"rate": rate, "users": users, "samples": str(samples), "tenants": tenants})
    )
    log = scratch / f"step-{name}-locust.log"
    with log.open("wb") as out:
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "locust",
                "-f",
                str(ROOT / "bench" / "locustfile.py"),
                "--headless",
                "--only-summary",
                "--host",
                url,
                "--users",
                str(users),
                "--spawn-rate",
                f"{min(rate, users):g}",
                "--run-time",
                f"{duration}s",
                "--stop-timeout",
                "10",
                "--loglevel",
                "WARNING",
                "--exit-code-on-error",
                "0",
            ],
            env={**os.environ, "KG_LOAD_PLAN": str(plan)},
            cwd=ROOT,
            stdout=out,
            stderr=subprocess.STDOUT,
            timeout=duration + 120,
        )
    output = log.read_text(errors="replace")
    if done.returncode != 0 or not samples.exists():
        raise RuntimeError(f"locust failed ({done.returncode}):\n{output[-3000:]}")
    step = figures(rate, duration, json.loads(samples.read_text()))
    # Locust warns when its own process nearly fills a core: the offered load may lag.
    step["locust_cpu_warning"] = "CPU usage" in output
    return step


def percentile(ordered: list[float], share: float) -> float:
    return ordered[max(0, math.ceil(share * len(ordered)) - 1)] if ordered else float("nan")


def figures(rate: float, duration: int, samples: list[list[Any]]) -> dict[str, Any]:
    times = sorted(s[1] for s in samples)
    errors = [s for s in samples if not s[2]]
    kinds = {}
    for kind in sorted({s[0] for s in samples}):
        own = sorted(s[1] for s in samples if s[0] == kind)
        kinds[kind] = {
            "requests": len(own),
            "p50_ms": percentile(own, 0.5),
            "p95_ms": percentile(own, 0.95),
            "p99_ms": percentile(own, 0.99),
        }
    step = {
        "offered_rps": rate,
        "achieved_rps": len(samples) / duration,
        "requests": len(samples),
        "errors": len(errors),
        "error_rate": len(errors) / len(samples) if samples else 1.0,
        "p50_ms": percentile(times, 0.5),
        "p95_ms": percentile(times, 0.95),
        "p99_ms": percentile(times, 0.99),
        "kinds": kinds,
        "error_examples": [f"{s[0]}: {s[4]}" for s in errors[:5]],
    }
    step["held"] = bool(
        samples
        and step["p95_ms"] < P95_TARGET_MS
        and step["error_rate"] < ERROR_TARGET
        and step["achieved_rps"] >= ACHIEVED_TARGET * rate
    )
    return step


def step_line(step: dict[str, Any]) -> str:
    kinds = ", ".join(f"{k} {v['p95_ms']:.0f}" for k, v in step["kinds"].items())
    line = (
        f"  offered {step['offered_rps']:5g}/s  achieved {step['achieved_rps']:6.2f}/s"
        f"  {step['requests']:6d} requests  errors {step['error_rate']:.3%}"
        f"  p50 {step['p50_ms']:6.0f} ms  p95 {step['p95_ms']:6.0f} ms"
        f"  p99 {step['p99_ms']:6.0f} ms  {'held' if step['held'] else 'MISSED'}\n"
        f"    p95 by kind (ms): {kinds}; model calls {step['model_calls']}"
    )
    if step.get("locust_cpu_warning"):
        line += "\n    locust warned that its CPU usage was high: the offered load may lag"
    for example in step["error_examples"]:
        line += f"\n    error: {example[:200]}"
    return line


def report(steps: list[dict[str, Any]], args: argparse.Namespace) -> None:
    held = [s for s in steps if s["held"]]
    best = max(held, key=lambda s: s["offered_rps"]) if held else None
    print(
        f"\nload: mixed search / query / query+answer / graph over {args.tenants} tenants,"
        f" {args.users} users, {args.duration} s steps, scripted model"
        f" ({args.llm_delay:g} s a call), rate limits raised"
    )
    if best is None:
        print("load: sustained: none of the steps held p95 < 300 ms with < 0.1% errors")
    else:
        print(
            f"load: sustained {best['achieved_rps']:.1f} req/s (step {best['offered_rps']:g}/s):"
            f" p50 {best['p50_ms']:.0f} ms, p95 {best['p95_ms']:.0f} ms,"
            f" p99 {best['p99_ms']:.0f} ms, errors {best['error_rate']:.3%}"
            f" ({best['errors']} of {best['requests']})"
        )
    if args.json:
        args.json.write_text(
            json.dumps(
                {
                    "steps": steps,
                    "sustained": best,
                    "arguments": {k: str(v) for k, v in vars(args).items()},
                },
                indent=2,
            )
        )


if __name__ == "__main__":
    try:
        main()
    except KeyboardInterrupt:
        say("interrupted; everything it started is stopped")
        sys.exit(130)
