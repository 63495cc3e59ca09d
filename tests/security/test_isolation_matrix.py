"""The isolation matrix: tenant A's credentials against tenant B's slug and B's ids,
everywhere. The API cases are generated from the OpenAPI schema (every operation,
every path and query parameter, every string field of every body, nested ones too,
every enum value: search methods, scopes, rerankers, recipes, query modes); the admin
cases from the admin's URL list and model registry; the WebSocket cases from the
routing table; the MCP cases from the MCP server's tool list and each tool's input
schema; the task cases from the Celery tasks' signatures. An operation, route
or task that gets no attempt fails the test, so a door added later is covered or noticed.

An attempt succeeds when B's data changed (graph namespace, definitions, or B's rows in
the relational store) or when a 2xx answer carries a B-only marker. A leak is a B-only
marker in any answer at all. Both must be zero.
"""

from __future__ import annotations

import inspect
import json
import re
import time
from collections import Counter
from typing import Any
from urllib.parse import quote

import pytest
from asgiref.sync import async_to_sync
from django.contrib import admin
from django.urls import reverse

from tests.security.attempts import Attempt, Outcome, body_text, clients, send
from tests.security.conftest import Sides, changed, leaks, post_json
from tests.security.openapi import (
    Leaf,
    Operation,
    api_schema,
    operations,
    param_leaf,
    resolve,
    with_value,
)

pytestmark = pytest.mark.django_db(transaction=True)

# Free text that names something in a tenant: searches and lookups find both tenants'
# records with it (the same names live in A and B), so only isolation keeps B's out.
PROBE = "Alice Acme Corp"
# Path parameters whose name says which table's ids they hold.
TABLE_OF = {
    "job_id": "job",
    "episode_id": "episode",
    "document_id": "document",
    "entity_id": "entity",
    "fact_id": "relates_to",
    "community_id": "community",
    "entry_id": "audit",
    "candidate_id": "dedup_candidate",
}


# --- values an attacker in A knows about B -------------------------------------------


def foreign_texts(sides: Sides) -> list[str]:
    """One B-only id of every kind the API or the admin names, B's slug and namespace."""
    only = sides.b_only_ids()
    values = [only[t][0] for t in sorted(set(TABLE_OF.values())) if only.get(t)]
    return [*values, sides.b.slug, sides.b.tenant.namespace]


def path_values(name: str, schema: dict[str, Any], sides: Sides) -> list[Any]:
    """What B holds for a path parameter, or [] when the name says nothing we know."""
    b, only, colliding = sides.b, sides.b_only_ids(), sides.colliding_ids()
    if name in ("slug", "tenant"):
        return [b.slug]
    if name == "username":
        return [b.owner.username, b.curator.username]
    if name == "token_id":
        return [b.token.pk]
    if name == "archive_name":  # B's retention archives (files, not records)
        from tenants import retention

        return [f.name for f in retention.archive_files(b.tenant)]
    if name in TABLE_OF:
        table = TABLE_OF[name]
        return only.get(table, [])[:3] + colliding.get(table, [])[:1]
    if name.endswith("_id"):  # an id of a kind this file does not know yet: try them all
        if schema.get("type") == "integer":
            return [b.token.pk, b.tenant.pk, b.owner.pk]
        return [ids[0] for ids in only.values() if ids]
    return []


def operation_attempts(op: Operation, sides: Sides) -> tuple[list[Attempt], str | None]:
    """Every attempt on one operation, or a reason when a path parameter has no value."""
    a, b = sides.a, sides.b
    values = {}
    for param in op.path_params():
        found = [a.slug] if param.name == "tenant" else path_values(param.name, param.schema, sides)
        if not found:
            return [], f"no B value for path parameter {param.name!r}"
        values[param.name] = found
    own = {name: found[0] for name, found in values.items()}
    body = _probe_body(op)
    required = op.required_query()  # every attempt reaches the handler, not a 422
    attempts = []

    def add(how: str, path: dict[str, Any], **kwargs: Any) -> None:
        kwargs.setdefault("body", body)
        kwargs["query"] = {**required, **(kwargs.get("query") or {})} or None
        kind = "multipart" if op.body_kind == "multipart" else "json"
        attempts.append(Attempt("api", op.key, how, op.method, op.url(path), kind=kind, **kwargs))

    if op.body_kind == "multipart":
        field = file_field(op)
        body = {"field": field, "files": [("notes.txt", b"Alice works at Acme Corp.")]}
    if "tenant" in values:
        first_ids = {n: found[0] for n, found in values.items() if n != "tenant"}
        for auth, slug in (
            ("token", b.slug),
            ("api_key", b.slug),
            ("session", b.slug),
            ("token", b.slug.upper()),
            ("token", b.tenant.namespace),
            ("token", f"{b.slug}/"),
        ):
            add(f"B's slug {slug!r} by {auth}", {**first_ids, "tenant": slug}, auth=auth)
    for name, found in values.items():
        if name == "tenant":
            continue
        for value in found:
            add(f"path {name}={value}", {**own, name: value})
    for param in op.query_params():
        leaf = param_leaf(param)
        if leaf is None:
            continue
        for value in leaf.enum or foreign_texts(sides):
            add(f"query {param.name}={value}", own, query={param.name: _as(leaf, value)})
    add(
        "query naming B",
        own,
        query={"tenant": b.slug, "slug": b.slug, "namespace": b.tenant.namespace},
    )
    # Flags that change what an operation does (documents' dry_run): on, against B and own.
    flags = {p.name: "true" for p in op.query_params() if p.schema.get("type") == "boolean"}
    if flags and "tenant" in values:
        first_ids = {n: found[0] for n, found in values.items() if n != "tenant"}
        add(f"B's slug with {sorted(flags)} on", {**first_ids, "tenant": b.slug}, query=flags)
        add(f"{sorted(flags)} on", own, query=flags)
    for leaf in op.body_leaves():
        for value in leaf.enum or foreign_texts(sides):
            where = ".".join(map(str, leaf.path))
            add(f"body {where}={value}", own, body=with_value(op, body, leaf, value))
    if op.body_kind == "multipart":
        for value in foreign_texts(sides):
            files = [(value, f"{value} Alice".encode())]
            add(f"file named {value}", own, body={"field": field, "files": files})
    return attempts, None


def file_field(op: Operation) -> str:
    """The multipart form's file field (documents take `files`, an import `file`)."""
    properties = resolve(op.components, op.body_schema or {}).get("properties", {})
    for name, schema in properties.items():
        schema = resolve(op.components, schema)
        if schema.get("format") == "binary" or schema.get("items", {}).get("format") == "binary":
            return name
    return "files"


def _as(leaf: Leaf, value: Any) -> Any:
    return [value] if leaf.is_list else value


def _probe_body(op: Operation) -> Any:
    """The minimal body, its free text replaced by names both tenants hold."""
    body = op.base_body()
    for leaf in op.body_leaves():
        if leaf.enum or leaf.is_list or leaf.schema.get("pattern"):
            continue
        if leaf.schema.get("maxLength", 100) < len(PROBE):
            continue
        if _has(body, leaf.path):
            body = with_value(op, body, leaf, PROBE)
    return body


def _has(body: Any, path: tuple[str | int, ...]) -> bool:
    for step in path:
        try:
            body = body[step]
        except (KeyError, IndexError, TypeError):
            return False
    return True


def api_attempts(schema: dict[str, Any], sides: Sides) -> tuple[list[Attempt], dict[str, str]]:
    attempts: list[Attempt] = []
    uncovered = {}
    for op in operations(schema):
        found, reason = operation_attempts(op, sides)
        if reason or not found:
            uncovered[op.key] = reason or "no attempt generated"
        attempts += found
    return attempts, uncovered


# --- admin ---------------------------------------------------------------------------

ADMIN_TABLE_OF = {"fact_id": "relates_to", "entity_id": "entity", "entry_id": "audit"}


def admin_attempts(sides: Sides) -> tuple[list[Attempt], dict[str, str]]:
    """A curator of A (not staff) on every graph curation route and every registered
    model's pages, with B's slug and B's ids."""
    from kgapp.web import admin_graph

    a, b = sides.a, sides.b
    only = sides.b_only_ids()
    attempts, uncovered = [], {}
    for route, _view, name in admin_graph.ROUTES:
        params = re.findall(r"<(?:\w+:)?(\w+)>", route)
        ids = [p for p in params if p != "slug"]
        missing = [p for p in ids if not only.get(ADMIN_TABLE_OF.get(p, ""))]
        if missing:
            uncovered[name] = f"no B value for {missing}"
            continue
        first = {p: only[ADMIN_TABLE_OF[p]][0] for p in ids}
        variants = [{**first, "slug": b.slug}] if "slug" in params else [{}]
        for p in ids:
            variants += [{**first, "slug": a.slug, p: v} for v in only[ADMIN_TABLE_OF[p]][:2]]
        for kwargs in variants:
            url = reverse(f"admin:{name}", kwargs=kwargs)
            how = ", ".join(f"{k}={v}" for k, v in kwargs.items()) or "index"
            attempts.append(Attempt("admin", name, f"GET {how}", "GET", url, auth="curator"))
            form = {
                "action": "merge_a",
                "candidate": only.get("dedup_candidate", [])[:1] or only["entity"][:1],
                "ended_at": "2024-06-01",
                "text": "rewritten",
                "next": "/",
            }
            attempts.append(
                Attempt(
                    "admin",
                    name,
                    f"POST {how}",
                    "POST",
                    url,
                    body=form,
                    kind="form",
                    auth="curator",
                )
            )
    facts = reverse("admin:graph-facts", kwargs={"slug": a.slug})
    for table in ("entity", "relates_to"):
        for value in only.get(table, [])[:2]:
            attempts.append(
                Attempt(
                    "admin",
                    "graph-facts",
                    f"entity filter {value}",
                    "GET",
                    facts,
                    query={"entity": value},
                    auth="curator",
                )
            )
    for action in ("merge_a", "merge_b", "reject", "defer"):
        url = reverse("admin:graph-dedup-act", kwargs={"slug": a.slug})
        for value in only.get("dedup_candidate", [])[:2] + only["entity"][:1]:
            attempts.append(
                Attempt(
                    "admin",
                    "graph-dedup-act",
                    f"{action} {value}",
                    "POST",
                    url,
                    body={"action": action, "candidate": [value]},
                    kind="form",
                    auth="curator",
                )
            )
    for model in admin.site._registry:
        label = f"{model._meta.app_label}_{model._meta.model_name}"
        objects = _b_objects(model, sides)
        for view in ("changelist", "add"):
            url = reverse(f"admin:{label}_{view}")
            attempts.append(Attempt("admin", label, view, "GET", url, auth="curator"))
        attempts.append(
            Attempt(
                "admin",
                label,
                "changelist search",
                "GET",
                reverse(f"admin:{label}_changelist"),
                query={"q": b.slug},
                auth="curator",
            )
        )
        for pk in objects[:2]:
            for view in ("change", "delete", "history"):
                url = reverse(f"admin:{label}_{view}", args=[pk])
                attempts.append(Attempt("admin", label, f"{view} {pk}", "GET", url, auth="curator"))
            url = reverse(f"admin:{label}_delete", args=[pk])
            attempts.append(
                Attempt(
                    "admin",
                    label,
                    f"delete {pk} confirmed",
                    "POST",
                    url,
                    body={"post": "yes"},
                    kind="form",
                    auth="curator",
                )
            )
    return attempts, uncovered


def _b_objects(model: Any, sides: Sides) -> list[Any]:
    """Primary keys of B's rows of a model registered in the admin."""
    from django.db import models

    from tenants.models import Tenant

    b = sides.b
    user_model = type(b.owner)
    if model is Tenant:
        return [b.tenant.pk]
    if model is user_model:
        return [u.pk for u in sides.b_users]
    for f in model._meta.get_fields():
        if isinstance(f, models.ForeignKey) and f.related_model is Tenant:
            return list(model.objects.filter(**{f.name: b.tenant}).values_list("pk", flat=True))
        if isinstance(f, models.ForeignKey) and f.related_model is user_model:
            return list(
                model.objects.filter(**{f"{f.name}__in": sides.b_users}).values_list(
                    "pk", flat=True
                )
            )
    return []  # not tenant data (auth groups): its list and add pages are still tried


# --- running HTTP attempts -----------------------------------------------------------


def run_http(attempts: list[Attempt], sides: Sides) -> list[Outcome]:
    """Send every attempt; B's data is compared after each write, and after the last
    read of each target (a change is then charged to all of that target's reads)."""
    by_auth = clients(sides)
    outcomes: list[Outcome] = []
    pending: list[Outcome] = []  # reads since the last comparison
    before = sides.b_snapshot()
    for n, attempt in enumerate(attempts):
        start = time.perf_counter()
        response = send(by_auth[attempt.auth], attempt)
        seconds = time.perf_counter() - start
        leaked = leaks(sides.b.marker, body_text(response))
        outcome = Outcome(attempt, response.status_code, leaked, [], seconds)
        outcomes.append(outcome)
        pending.append(outcome)
        following = attempts[n + 1] if n + 1 < len(attempts) else None
        if attempt.method == "GET" and following and following.target == attempt.target:
            continue
        after = sides.b_snapshot()
        difference = changed(before, after)
        for o in pending:
            o.b_changed = difference
        pending, before = [], after
    return outcomes


# --- WebSockets ----------------------------------------------------------------------


async def socket_attempts(sides: Sides) -> tuple[list[Outcome], dict[str, str]]:
    """A's owner (browser session) on every socket route: with B's slug (must be
    refused), and on A's own socket while B's data changes (nothing of B's arrives,
    live or replayed)."""
    from channels.testing import WebsocketCommunicator
    from django.urls import URLPattern

    from kgapp.asgi import application
    from kgapp.web.routing import CLOSE_NOT_FOUND, websocket_urlpatterns

    a, b = sides.a, sides.b
    cookie = await _cookie(sides)
    headers = [(b"origin", b"http://127.0.0.1:8000"), cookie]
    outcomes, uncovered = [], {}
    started = "2000-01-01T00:00:00Z"
    for pattern in websocket_urlpatterns:
        route = str(pattern.pattern) if isinstance(pattern, URLPattern) else str(pattern)
        if "<str:slug>" in route:
            paths = [
                "/" + route.replace("<str:slug>", slug) + query
                for slug in (b.slug, b.slug.upper(), b.tenant.namespace)
                for query in ("", f"?since={started}")
            ]
        elif "<" not in route:  # a catch-all: paths that name B but match no route
            paths = [
                f"/ws/t/{b.slug}/nope/",
                f"/ws/t/{a.slug}/../{b.slug}/live/",
                f"/ws/{b.slug}/live/",
                f"/ws/t/{b.slug}/live/extra/",
            ]
        else:
            uncovered[route] = "a socket route with parameters this matrix does not fill"
            continue
        for path in paths:
            attempt = Attempt("websocket", route or "(other paths)", path, url=path, auth="session")
            socket = WebsocketCommunicator(application, path, headers=headers)
            try:
                connected, _ = await socket.connect(timeout=10)
            except Exception:  # noqa: BLE001  (a refused handshake may also raise)
                connected = False
            closed, received = await _closed_at_once(socket) if connected else (403, [])
            if closed is None:
                received += await _drain(socket)
            await socket.disconnect()
            refused = 404 if closed == CLOSE_NOT_FOUND else 403
            outcomes.append(
                Outcome(
                    attempt,
                    101 if closed is None else refused,
                    leaks(b.marker, *received),
                    ["socket accepted"] if closed is None else [],
                )
            )
        if "<str:slug>" not in route:
            continue
        # A's own socket, live and with a replay from the start, while B changes.
        path = "/" + route.replace("<str:slug>", a.slug) + f"?since={started}"
        socket = WebsocketCommunicator(application, path, headers=headers)
        connected, _ = await socket.connect(timeout=15)
        assert connected, f"A's owner cannot open {path}"
        await _write_in_b(sides, route)
        received = await _drain(socket, wait=3.0)
        await socket.disconnect()
        attempt = Attempt("websocket", route, "A's socket while B writes", url=path, auth="session")
        outcomes.append(Outcome(attempt, 101, leaks(b.marker, *received)))
    return outcomes, uncovered


async def _cookie(sides: Sides) -> tuple[bytes, bytes]:
    from asgiref.sync import sync_to_async

    client = await sync_to_async(sides.a.session)()
    return (b"cookie", f"sessionid={client.cookies['sessionid'].value}".encode())


async def _closed_at_once(socket: Any) -> tuple[int | None, list[str]]:
    """An accepted socket's first word: its close code when it closes before sending
    anything (an unknown path: 4404), else None, with what it sent first."""
    if await socket.receive_nothing(timeout=0.5):
        return None, []
    first = await socket.receive_output(timeout=5)
    if first["type"] == "websocket.close":
        return int(first.get("code", 1000)), []
    return None, [first.get("text") or repr(first.get("bytes"))]


async def _drain(socket: Any, wait: float = 0.5) -> list[str]:
    """What the socket sends within `wait` seconds (a receive that times out would end
    the consumer, so wait with receive_nothing first)."""
    got: list[str] = []
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline:
        if await socket.receive_nothing(timeout=0.2):
            continue
        try:
            got.append(json.dumps(await socket.receive_json_from(timeout=5)))
        except Exception:  # noqa: BLE001  (the socket closed)
            break
    return got


async def _write_in_b(sides: Sides, route: str) -> None:
    from asgiref.sync import sync_to_async

    b = sides.b
    name = f"Nadia {route.strip('/').rsplit('/', 1)[-1]} {b.marker}"
    body = {
        "source": {"name": name},
        "relation": "KNOWS",
        "target": {"name": "Alice", "type": "Person"},
    }
    response = await sync_to_async(post_json)(b.client, f"{b.base}/facts", body)
    assert response.status_code == 201


# --- MCP -----------------------------------------------------------------------------


def mcp_attempts(sides: Sides) -> tuple[list[Outcome], dict[str, str]]:
    """A's owner token at the MCP door (kgapp/web/mcp/), in this process: B's slug
    however spelt (refused at the door), and on A's own server every tool with B's ids,
    slug and namespace in each of its text arguments (a tool without one: called once).
    B's data is compared around each tool's attempts."""
    from tests.mcp_client import IN_PROCESS

    a, b = sides.a, sides.b
    outcomes = []
    for slug in (b.slug, b.slug.upper(), b.tenant.namespace, f"{a.slug}/../{b.slug}"):
        for auth in ("token", "api_key"):
            path = f"/mcp/t/{slug}/"
            status, body = async_to_sync(_mcp_post)(f"{IN_PROCESS}{path}", _mcp_headers(a, auth))
            attempt = Attempt(
                "mcp", "/mcp/t/<slug>/", f"B's slug {slug!r} by {auth}", "POST", path, auth=auth
            )
            outcomes.append(Outcome(attempt, status, leaks(b.marker, body)))
    address = f"{IN_PROCESS}/mcp/t/{a.slug}/"
    tools = async_to_sync(_mcp_tools)(address, _mcp_headers(a, "token"))
    uncovered = {}
    for tool in tools:
        tries = _mcp_tries(tool.input_schema, sides)
        if not tries:
            uncovered[tool.name] = "no attempt generated"
            continue
        before = sides.b_snapshot()
        results = async_to_sync(_mcp_call)(address, _mcp_headers(a, "token"), tool.name, tries)
        difference = changed(before, sides.b_snapshot())
        for (how, arguments), (status, text) in zip(tries, results, strict=True):
            attempt = Attempt("mcp", tool.name, how, "POST", address, body=arguments)
            outcomes.append(Outcome(attempt, status, leaks(b.marker, text), difference))
    return outcomes, uncovered


def _mcp_headers(side: Any, auth: str) -> dict[str, str]:
    from tests.mcp_client import auth_headers

    return auth_headers(side.secret, api_key=auth == "api_key")


async def _mcp_post(address: str, headers: dict[str, str]) -> tuple[int, str]:
    """The door's answer to an MCP `initialize` (raw: a refused door has no MCP client)."""
    import httpx2

    from kgapp.asgi import application

    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "matrix", "version": "1"},
        },
    }
    async with httpx2.AsyncClient(transport=httpx2.ASGITransport(app=application)) as http:
        answer = await http.post(
            address, json=body, headers={**headers, "Accept": "application/json, text/event-stream"}
        )
    return answer.status_code, answer.text


async def _mcp_tools(address: str, headers: dict[str, str]) -> list[Any]:
    from kgapp.asgi import application
    from tests.mcp_client import connected

    async with connected(address, headers, application) as client:
        return list((await client.list_tools()).tools)


async def _mcp_call(
    address: str, headers: dict[str, str], name: str, tries: list[tuple[str, dict[str, Any]]]
) -> list[tuple[int, str]]:
    """(200 for an answer, 422 for a tool error; what came back) per attempt."""
    from kgapp.asgi import application
    from tests.mcp_client import connected, said

    answers = []
    async with connected(address, headers, application) as client:
        for _, arguments in tries:
            result = await client.call_tool(name, arguments)
            text = said(result) + json.dumps(result.structured_content)
            answers.append((422 if result.is_error else 200, text))
    return answers


def _mcp_tries(schema: dict[str, Any], sides: Sides) -> list[tuple[str, dict[str, Any]]]:
    """The tool's required arguments filled with A's own values, then each text argument
    (strings, lists of strings, an entity's name) set to each of B's values in turn."""
    moments = iter(["2000-01-01T00:00:00Z", "2100-01-01T00:00:00Z"])
    texts, base = [], {}
    for name, prop in schema["properties"].items():
        options = prop.get("anyOf", [prop])
        kinds = {o.get("type") for o in options} | ({"object"} if "$ref" in prop else set())
        formats = {o.get("format") for o in options}
        if "date-time" in formats:
            if name in schema.get("required", []):
                base[name] = next(moments)
        elif "enum" in prop or not kinds & {"string", "array", "object"}:
            continue
        else:
            texts.append((name, "array" in kinds, "object" in kinds))
            if name in schema.get("required", []):
                base[name] = {"name": PROBE} if "object" in kinds else PROBE
    tries = [("A's own arguments", base)]
    for name, is_list, is_object in texts:
        for value in foreign_texts(sides):
            wrapped = [value] if is_list else {"name": value} if is_object else value
            tries.append((f"{name}={value}", {**base, name: wrapped}))
    return tries


# --- Celery tasks --------------------------------------------------------------------


def task_attempts(sides: Sides) -> tuple[list[Outcome], dict[str, str]]:
    """Every task that takes a tenant and a job, called with A's slug and B's jobs (and
    B-only ids of other kinds); tasks of no tenant are listed as such."""
    from celery import Task

    from kgapp import tasks

    # Periodic tasks of every tenant, and what takes no tenant at all.
    tenantless = {
        "ping",
        "rebuild_all_communities",
        "decay_retrieval_counts",
        "generate_dedup_candidates",
        "requeue_stale_jobs",
        "apply_retention_policies",
        "index_stragglers",
    }
    outcomes, uncovered = [], {}
    only = sides.b_only_ids()
    jobs = only.get("job", [])
    others = [ids[0] for t, ids in only.items() if ids and t != "job"][:3]
    for name, task in inspect.getmembers(tasks, lambda v: isinstance(v, Task)):
        params = list(inspect.signature(task.run).parameters)
        if params[:2] != ["tenant_slug", "job_id"]:
            if name not in tenantless:
                uncovered[name] = f"signature {params} is not (tenant_slug, job_id, ...)"
            continue
        for job in jobs + others:
            attempt = Attempt("task", name, f"{name}({sides.a.slug!r}, {job!r})")
            before = sides.b_snapshot()
            try:
                result = task.run(sides.a.slug, job)
                status = 200
            except Exception as error:  # noqa: BLE001  (refusal is the expected outcome)
                result, status = repr(error), 404
            outcomes.append(
                Outcome(
                    attempt,
                    status,
                    leaks(sides.b.marker, result),
                    changed(before, sides.b_snapshot()),
                )
            )
    return outcomes, uncovered


# --- the test ------------------------------------------------------------------------


def test_tenant_a_reaches_nothing_of_tenant_b(two_sides: Sides, capsys) -> None:
    sides = two_sides
    started = time.perf_counter()
    api, api_uncovered = api_attempts(api_schema(), sides)
    panel, admin_uncovered = admin_attempts(sides)
    # Reads first (while the most data is there), then writes, then deletes.
    order = {"GET": 0, "POST": 1, "PUT": 2, "PATCH": 2, "DELETE": 3}
    http = sorted(api + panel, key=lambda a: order[a.method])
    # Tasks that attempts queue in A wait in the broker: the task attempts below run
    # the tasks themselves.
    from kgapp.celery import app

    app.conf.task_always_eager = False
    outcomes = run_http(http, sides)
    sockets, socket_uncovered = async_to_sync(socket_attempts)(sides)
    mcp, mcp_uncovered = mcp_attempts(sides)
    jobs, task_uncovered = task_attempts(sides)
    outcomes += sockets + mcp + jobs

    successes = [o for o in outcomes if o.succeeded]
    leaked = [o for o in outcomes if o.leaked]
    by_area = Counter(o.attempt.area for o in outcomes)
    statuses = Counter(o.status for o in outcomes)
    server_errors = [o for o in outcomes if o.status >= 500]
    with capsys.disabled():
        print(
            f"\nisolation matrix: {len(outcomes)} attempts ({dict(by_area)}), "
            f"{len(successes)} succeeded, {len(leaked)} leaked B-only strings, "
            f"{time.perf_counter() - started:.1f} s; statuses {dict(sorted(statuses.items()))}"
        )
        slow: Counter[str] = Counter()
        for o in outcomes:
            slow[o.attempt.target] += o.seconds
        counts = Counter(o.attempt.target for o in outcomes)
        print("  slowest:", [(t, counts[t], round(s, 1)) for t, s in slow.most_common(6)])
        for o in server_errors:
            print(
                f"  5xx (not an isolation failure): {o.status} {o.attempt.target}: {o.attempt.how}"
            )
    uncovered = api_uncovered | admin_uncovered | socket_uncovered | mcp_uncovered | task_uncovered
    assert not uncovered, f"not covered by the isolation matrix: {uncovered}"
    attacked = {o.attempt.target for o in outcomes if o.attempt.area == "api"}
    assert attacked == {op.key for op in operations(api_schema())}
    assert len(outcomes) >= 500
    # An operation with required query parameters was really reached, not only refused
    # with a 422 for what it lacked.
    filled = {op.key for op in operations(api_schema()) if op.required_query()}
    reached = {o.attempt.target for o in outcomes if o.attempt.area == "api" and o.status < 300}
    assert filled and filled <= reached, f"never past validation: {sorted(filled - reached)}"
    # A's whole-tenant export was really read (and held none of B's markers).
    exports = [o for o in outcomes if o.attempt.target == "GET /api/v1/t/{tenant}/export"]
    assert any(o.status == 200 for o in exports)
    # A asked its own graph and read its own question history (B's question, marked,
    # never in them).
    for door in ("POST /api/v1/t/{tenant}/ask", "GET /api/v1/t/{tenant}/questions"):
        assert any(o.status == 200 for o in outcomes if o.attempt.target == door), door
    # The attacker's own credentials worked throughout: the refusals are not a 401 wall.
    assert sum(200 <= o.status < 300 for o in outcomes if o.attempt.area == "api") > 100
    assert sides.a.client.get(f"{sides.a.base}/").status_code == 200
    # Every MCP tool was tried, and answered A with more than refusals.
    from kgapp.web.mcp.server import TOOLS

    tried = {o.attempt.target for o in outcomes if o.attempt.area == "mcp"}
    assert tried == {tool.__name__ for tool, _ in TOOLS} | {"/mcp/t/<slug>/"}
    assert all(o.status in (400, 404) for o in outcomes if o.attempt.target == "/mcp/t/<slug>/")
    assert sum(o.status == 200 for o in outcomes if o.attempt.area == "mcp") > 20
    assert successes == [], "\n".join(
        f"{o.attempt.area} {o.attempt.target} {o.attempt.how}: {o.status} {o.b_changed}"
        for o in successes
    )
    assert leaked == [], "\n".join(
        f"{o.attempt.area} {o.attempt.target} {o.attempt.how}: {o.status}" for o in leaked
    )


def test_an_operation_the_matrix_cannot_fill_fails_it(two_sides: Sides) -> None:
    """A new endpoint is attacked on its own when its parameters are known kinds, and
    reported (so the matrix fails) when one is not."""
    schema = api_schema()
    paths = dict(schema["paths"])
    paths["/api/v1/t/{tenant}/exports"] = {
        "get": {
            "parameters": [
                {"in": "path", "name": "tenant", "schema": {"type": "string"}, "required": True}
            ]
        }
    }
    paths["/api/v1/t/{tenant}/widgets/{widget_key}"] = {
        "get": {
            "parameters": [
                {"in": "path", "name": "tenant", "schema": {"type": "string"}, "required": True},
                {
                    "in": "path",
                    "name": "widget_key",
                    "schema": {"type": "string"},
                    "required": True,
                },
            ]
        }
    }
    attempts, uncovered = api_attempts({**schema, "paths": paths}, two_sides)
    assert uncovered == {
        "GET /api/v1/t/{tenant}/widgets/{widget_key}": "no B value for path parameter 'widget_key'"
    }
    exports = [a for a in attempts if a.target == "GET /api/v1/t/{tenant}/exports"]
    assert any(quote(two_sides.b.slug) in a.url for a in exports) and len(exports) >= 7


def test_question_history_stays_with_its_asker_and_tenant(
    make_tenant, make_user, token_client
) -> None:
    """One user in both tenants asks in B: neither their history in A nor that of B's
    other members holds it; A's member cannot list B's at all."""
    from tenants import services
    from tenants.models import Role

    a, b = make_tenant(), make_tenant()
    both, b_other, a_only = make_user(), make_user(), make_user()
    for tenant, user in ((a, both), (b, both), (b, b_other), (a, a_only)):
        services.membership_set(tenant=tenant, user=user, role=Role.VIEWER)
    marker = "bonlyquestion"
    asked = post_json(token_client(both), f"/api/v1/t/{b.slug}/ask", {"query": f"Who is {marker}?"})
    assert asked.status_code == 200
    client = token_client(both)
    assert [q["text"] for q in client.get(f"/api/v1/t/{b.slug}/questions").json()] == [
        f"Who is {marker}?"
    ]
    for reader, slug in ((both, a.slug), (b_other, b.slug), (a_only, a.slug)):
        answer = token_client(reader).get(f"/api/v1/t/{slug}/questions")
        assert answer.status_code == 200 and answer.json() == []
    assert token_client(a_only).get(f"/api/v1/t/{b.slug}/questions").status_code == 404
