"""SurrealQL injection: every payload of the corpus (tests/security/injection_payloads.py)
through every text field and id of the API (path and query parameters, string fields of
bodies, nested ones too, file names and contents: read from the OpenAPI schema), and
through entity and relation names a model produced during ingestion.

Nothing may run but the intended statements. Checked before and after, in tenant A
(the one attacked): the definitions (INFO FOR ROOT's namespaces, INFO FOR NS, INFO FOR DB,
INFO FOR TABLE of every table) are unchanged; no row existing before was deleted or
changed except where the API itself writes (listed in MAY_CHANGE); new rows appear only
in the tables ingestion writes to. Tenant B is not touched at all.

The suite sends a sample: every field gets SAMPLE payloads, rotating through the corpus
so that all of it is used. `make injection` (KG_INJECTION_FULL=1) sends all of it to
every field.
"""

from __future__ import annotations

import os
import time
from collections import Counter
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from tests.security.attempts import Attempt, body_text, send
from tests.security.conftest import (
    Sides,
    changed,
    graph_snapshot,
    post_json,
    root_namespaces,
    snapshot,
    table_rows,
)
from tests.security.injection_payloads import PAYLOADS
from tests.security.openapi import Leaf, Operation, api_schema, operations, param_leaf, with_value

pytestmark = pytest.mark.django_db(transaction=True)

FULL = os.environ.get("KG_INJECTION_FULL") == "1"
SAMPLE = 6
MODEL_SAMPLE = 40  # payloads a scripted model names entities and relations after

# Rows that requests may change or replace by design: the ontology is replaced by PUT,
# retrieval counts grow with every search, entities gain degree and recency when new
# facts name them, communities take in new members as ingestion goes.
# A table's set of fields that may differ; None: rows may be replaced or removed.
MAY_CHANGE: dict[str, set[str] | None] = {
    "ontology": None,
    "retrieval": None,
    "community": None,
    "has_member": None,
    "entity": {"degree", "last_seen_at", "summary", "name_embedding", "labels"},
    # Views SurrealDB keeps from mentions and entities (schema/0020): they follow them.
    "entity_mentions": None,
    "entity_standing": {"degree"},
}
# Tables that new rows may appear in: what the API's writes and ingestion create.
MAY_GROW = {
    "entity",
    "alias",
    "relates_to",
    "episode",
    "episode_units",
    "job",
    "mentions",
    "occurred_after",
    "saga",
    "has_episode",
    "ontology",
    "retrieval",
    "document",
    "dedup_candidate",
    "audit",
    "community",
    "has_member",
    "llm_cache",
    "entity_mentions",
    "entity_standing",
}


def fields(schema: dict[str, Any]) -> list[tuple[Operation, str, Any]]:
    """(operation, where, leaf or parameter name) for every text field and id."""
    found = []
    for op in operations(schema):
        for param in op.path_params():
            if param.schema.get("type", "string") == "string":
                found.append((op, "path", param.name))
        for param in op.query_params():
            leaf = param_leaf(param)
            if leaf is not None and not leaf.enum:
                found.append((op, "query", leaf))
        for leaf in op.body_leaves():
            if not leaf.enum:
                found.append((op, "body", leaf))
        if op.body_kind == "multipart":
            found += [(op, "file name", None), (op, "file content", None)]
    return found


def attempt_for(
    op: Operation, where: str, what: Any, payload: str, sides: Sides, scratch: str = ""
) -> Attempt:
    """The request that puts `payload` at one place of an otherwise valid request to
    tenant A (ids elsewhere in the path are A's own, so the payload is what is judged).
    A new version goes to `scratch`, a document uploaded for it: a version withdraws what
    the version before it alone held, by design."""
    a = sides.a
    path = {}
    for param in op.path_params():
        if param.name == "tenant":
            path[param.name] = a.slug
        elif param.name == "token_id":
            path[param.name] = a.token.pk
        elif param.name == "document_id" and scratch and op.path.endswith("/versions"):
            path[param.name] = scratch
        else:
            path[param.name] = _own_id(param.name, sides)
    # Required query parameters filled (a diff's moments), so the request reaches the
    # handler wherever the payload goes; the payload takes its own parameter's place.
    query, body = op.required_query() or None, op.base_body()
    kind = "json"
    if op.body_kind == "multipart":
        kind, body = "multipart", {"files": [("notes.txt", b"Alice works at Acme Corp.")]}
    if where == "path":
        path[what] = payload
    elif where == "query":
        query = {**(query or {}), what.path[0]: [payload] if what.is_list else payload}
    elif where == "body":
        body = with_value(op, body, what, payload)
    elif where == "file name":
        body = {"files": [(payload, b"Alice works at Acme Corp.")]}
    else:
        body = {"files": [("notes.txt", payload.encode())]}
    how = f"{where} {_name(what)}"
    return Attempt("api", op.key, how, op.method, op.url(path), query=query, body=body, kind=kind)


def _name(what: Any) -> str:
    if isinstance(what, Leaf):
        return ".".join(map(str, what.path))
    return str(what or "")


def _own_id(name: str, sides: Sides) -> str:
    table = {
        "job_id": "job",
        "episode_id": "episode",
        "document_id": "document",
        "entity_id": "entity",
        "fact_id": "relates_to",
        "community_id": "community",
    }.get(name)
    if table and sides.a.ids.get(table):
        return sides.a.ids[table][0]
    if name == "username":
        return sides.a.curator.username
    if name == "slug":
        return sides.a.slug
    return "x"


def compare(before: dict[str, list[Any]], after: dict[str, list[Any]]) -> dict[str, list[str]]:
    """Rows deleted or changed per table, and tables that gained rows."""
    report: dict[str, list[str]] = {"deleted": [], "changed": [], "grew": []}
    for table in before.keys() | after.keys():
        old = {str(r.get("id")): r for r in before.get(table, [])}
        new = {str(r.get("id")): r for r in after.get(table, [])}
        report["deleted"] += [f"{table} {i}" for i in old.keys() - new.keys()]
        for i in old.keys() & new.keys():
            fields = sorted(
                k for k in old[i].keys() | new[i].keys() if old[i].get(k) != new[i].get(k)
            )
            if fields:
                report["changed"].append(f"{table} {i} {','.join(fields)}")
        if new.keys() - old.keys():
            report["grew"].append(table)
    return report


def _allowed(change: str) -> bool:
    table, fields = change.split()[0], change.rsplit(" ", 1)[1]  # a view's id has spaces
    allowed = MAY_CHANGE.get(table, set())
    return allowed is None or set(fields.split(",")) <= allowed


def definitions(sides: Sides) -> dict[str, Any]:
    snap = graph_snapshot(sides.a.tenant)
    return {"root": root_namespaces(), "ns": snap["ns"], "db": snap["db"], "tables": snap["tables"]}


def assert_only_intended(
    sides: Sides, before: dict[str, Any], scratch: frozenset[str] = frozenset()
) -> dict[str, list[str]]:
    """`scratch`: ids of the rows a scratch document's upload made, which its new
    versions may change or withdraw."""
    after_definitions = definitions(sides)
    assert after_definitions == before["definitions"], "definitions changed: " + str(
        changed({"graph": before["definitions"]}, {"graph": after_definitions})
    )
    assert changed(before["b"], snapshot(sides.b, sides.b_users)) == []
    report = compare(before["rows"], table_rows(sides.a.tenant))
    deleted = [
        r
        for r in report["deleted"]
        if MAY_CHANGE.get(r.split()[0], set()) is not None and r.split()[1] not in scratch
    ]
    modified = [r for r in report["changed"] if not _allowed(r) and r.split()[1] not in scratch]
    assert deleted == [] and modified == [], (
        f"rows deleted: {sorted(deleted)[:20]}; rows changed: {sorted(modified)[:20]}"
    )
    assert set(report["grew"]) <= MAY_GROW, report["grew"]
    return report


def scratch_document(sides: Sides) -> tuple[str, frozenset[str]]:
    """A document of A's that the new-version operation is aimed at, and the ids of the
    rows its upload made (with the document's own)."""
    rows = {str(r.get("id")) for t in table_rows(sides.a.tenant).values() for r in t}
    upload = SimpleUploadedFile("scratch-version.txt", b"Grace Hopper works at Initech.")
    response = sides.a.client.post(f"{sides.a.base}/documents", {"files": [upload]})
    assert response.status_code == 202, response.content
    document = response.json()[0]["document_id"]
    after = {str(r.get("id")) for t in table_rows(sides.a.tenant).values() for r in t}
    return document, frozenset(after - rows)


def before_state(sides: Sides) -> dict[str, Any]:
    return {
        "definitions": definitions(sides),
        "rows": table_rows(sides.a.tenant),
        "b": snapshot(sides.b, sides.b_users),
    }


def test_payloads_in_every_field_run_nothing(two_sides: Sides, capsys) -> None:
    sides = two_sides
    assert len(PAYLOADS) >= 200
    scratch, made = scratch_document(sides)
    before = before_state(sides)
    targets = fields(api_schema())
    started = time.perf_counter()
    statuses: Counter[int] = Counter()
    server_errors = []
    sent = 0
    for n, (op, where, what) in enumerate(targets):
        chosen = (
            PAYLOADS
            if FULL
            else [PAYLOADS[(n * SAMPLE + k) % len(PAYLOADS)] for k in range(SAMPLE)]
        )
        for payload in chosen:
            attempt = attempt_for(op, where, what, payload, sides, scratch)
            response = send(sides.a.client, attempt)
            sent += 1
            statuses[response.status_code] += 1
            if response.status_code >= 500:
                server_errors.append(
                    f"{op.key} {attempt.how} {payload!r}: {body_text(response)[:200]}"
                )
    seconds = time.perf_counter() - started
    report = assert_only_intended(sides, before, made)
    with capsys.disabled():
        print(
            f"\ninjection: {sent} requests ({len(PAYLOADS)} payloads, {len(targets)} fields,"
            f" {'all' if FULL else SAMPLE} per field), 0 unintended statements, {seconds:.1f} s;"
            f" statuses {dict(sorted(statuses.items()))}; rows changed as designed in"
            f" {sorted({r.split()[0] for r in report['changed'] + report['deleted']})}"
        )
        for line in server_errors[:20]:
            print("  5xx:", line)
    assert server_errors == [], f"{len(server_errors)} server errors"
    # The attack reached the handlers: most requests were accepted or refused as input.
    assert statuses[401] == 0 and sum(n for s, n in statuses.items() if s < 300) > len(targets) // 2


def test_model_named_entities_and_relations_are_data(
    two_sides: Sides, scripted_llm, settings, capsys
) -> None:
    """An ingest job whose model answer names entities and relations with the payloads:
    they are stored verbatim (as names), and nothing else happens."""
    sides = two_sides
    chosen = PAYLOADS if FULL else PAYLOADS[:: max(1, len(PAYLOADS) // MODEL_SAMPLE)]
    batches = [chosen[i : i + 20] for i in range(0, len(chosen), 20)]

    def answer(body: dict[str, Any]) -> dict[str, Any]:
        task = body["response_format"]["json_schema"]["name"]
        if task != "extract_graph":
            return {"entities": [], "facts": []}
        prompt = "".join(str(m.get("content") or "") for m in body["messages"])
        batch = next(b for n, b in enumerate(batches) if f"batch {n}." in prompt)
        entities = [{"name": p, "entity_type": "Entity", "summary": p} for p in batch]
        entities.append({"name": "Alice", "entity_type": "Person", "summary": "Alice."})
        facts = [
            {
                "source": "Alice",
                "relation": p,
                "target": p,
                "fact": p,
                "edge_type": "semantic",
                "confidence": 0.9,
                "valid_at": None,
                "invalid_at": None,
            }
            for p in batch
        ]
        return {"entities": entities, "facts": facts}

    scripted_llm.on_chat(answer)
    settings.OPENAI_BASE_URL, settings.OPENAI_API_KEY = scripted_llm.base_url, "test"
    settings.LLM_MAX_RETRIES = 0
    before = before_state(sides)
    started = time.perf_counter()
    for n in range(len(batches)):
        response = post_json(
            sides.a.client, f"{sides.a.base}/episodes", {"content": f"Alice wrote batch {n}."}
        )
        assert response.status_code == 202, response.content
        job = sides.a.client.get(f"{sides.a.base}/jobs/{response.json()['job_id']}").json()
        assert job["status"] == "completed", job
    seconds = time.perf_counter() - started
    assert_only_intended(sides, before)
    names = {e["name"] for e in table_rows(sides.a.tenant)["entity"]}
    readable = [p for p in chosen if p.isprintable() and p.strip() == p and p]
    stored = [p for p in readable if p in names]
    with capsys.disabled():
        print(
            f"\ninjection through model output: {len(chosen)} payloads as entity and relation"
            f" names in {len(batches)} episodes, {len(stored)} of {len(readable)} printable ones"
            f" stored verbatim as names, 0 unintended statements, {seconds:.1f} s"
        )
    assert len(scripted_llm.chat_requests("extract_graph")) == len(batches)
    assert len(stored) >= 0.8 * len(readable), sorted(set(readable) - names)[:10]


def test_the_comparison_sees_an_injected_statement(two_sides: Sides) -> None:
    """The check itself: statements run directly (as an injection would) are caught."""
    from tenants.wiring import tenant_graph

    sides = two_sides
    graph = tenant_graph(sides.a.tenant)
    for statement, seen in [
        ("DEFINE FIELD pwned ON entity TYPE option<string>", "definitions changed"),
        ("UPDATE relates_to SET fact = 'pwned'", "relates_to relates_to:"),
        ("UPDATE entity SET name = 'pwned'", " name'"),
        ("DELETE episode", "episode episode:"),
    ]:
        before = before_state(sides)
        graph.query(statement)
        with pytest.raises(AssertionError) as caught:
            assert_only_intended(sides, before)
        assert seen in str(caught.value), (statement, str(caught.value)[:300])
