"""The MCP server (kgapp/web/mcp/) driven by the SDK's own client over streamable HTTP,
against the product's web server in a process of its own (ingestion runs there, eagerly):
every tool, the door's refusals (401, 404), role gating, tenant isolation, bad arguments
and the injection corpus. A tool that refuses answers a tool error (isError) whose text
says what to change; nothing answers a 5xx."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator
from typing import Any

import httpx2
import pytest
from asgiref.sync import async_to_sync
from django.test import Client
from mcp.types import CallToolResult

from kgapp.web.mcp.server import TOOLS
from tenants import services
from tenants.models import Role
from tenants.wiring import tenant_graph
from tests.mcp_client import IN_PROCESS, auth_headers, connected, said, tool_calls
from tests.security.conftest import graph_snapshot, root_namespaces
from tests.security.injection_payloads import PAYLOADS
from tests.web_server import free_port, server_env, serving

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

TOOL_NAMES = {tool.__name__ for tool, _ in TOOLS}
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "test", "version": "1"},
    },
}
ACCEPT = {"Accept": "application/json, text/event-stream"}


@pytest.fixture(scope="module")
def url(django_db_setup: None, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    var = tmp_path_factory.mktemp("mcp")
    with serving(server_env(var), var / "web.log") as served:
        yield served


def token(user: Any) -> str:
    return services.token_create(user=user, name="mcp")[1]


def door(url: str, slug: str) -> str:
    return f"{url}/mcp/t/{slug}/"


def calls(
    address: str, secret: str, *made: tuple[str, dict[str, Any]], api_key: bool = False
) -> list[CallToolResult]:
    """Each (tool, arguments) called in one client connection to `address`."""
    return asyncio.run(tool_calls(address, auth_headers(secret, api_key), list(made)))


def call(address: str, secret: str, tool: str, /, **arguments: Any) -> CallToolResult:
    return calls(address, secret, (tool, arguments))[0]


def ok(result: CallToolResult) -> dict[str, Any]:
    assert not result.is_error, said(result)
    assert isinstance(result.structured_content, dict)
    return result.structured_content


def refused(result: CallToolResult, *words: str) -> str:
    text = said(result)
    assert result.is_error, f"not refused: {text}"
    assert "Internal error" not in text and "rejected the operation" not in text, text
    for word in words:
        assert word in text, f"{word!r} not in {text!r}"
    return text


@pytest.fixture
def editor(make_tenant, member) -> tuple[Any, str]:
    tenant = make_tenant()
    return tenant, token(member(tenant, Role.EDITOR))


# --- the door ------------------------------------------------------------------------


def test_every_tool_is_listed_with_a_schema_and_a_description(url, editor) -> None:
    tenant, secret = editor

    async def listed() -> list[Any]:
        async with connected(door(url, tenant.slug), auth_headers(secret)) as client:
            return list((await client.list_tools()).tools)

    tools = {tool.name: tool for tool in asyncio.run(listed())}
    assert (
        set(tools)
        == TOOL_NAMES
        == {
            "add_memory",
            "add_fact",
            "search_facts",
            "search_entities",
            "get_entity",
            "get_fact",
            "get_episodes",
            "delete_episode",
            "ask",
            "diff",
            "job_status",
        }
    )
    for tool in tools.values():
        assert len(tool.description or "") > 40 and tool.input_schema["properties"], tool.name
    facts = tools["search_facts"].input_schema["properties"]
    assert {
        "query",
        "as_of",
        "known_at",
        "current_only",
        "entity_types",
        "relations",
        "center_entity",
        "limit",
    } <= set(facts)
    # The API's limits, from its schemas: the tool refuses what the route refuses.
    assert facts["limit"]["maximum"] == 100 and facts["current_only"]["default"] is True
    assert tools["add_memory"].input_schema["properties"]["source"]["enum"] == [
        "text",
        "message",
        "json",
    ]


def test_a_request_without_a_valid_token_is_refused_before_any_mcp_handling(url, editor) -> None:
    tenant, secret = editor
    address = door(url, tenant.slug)
    for header in ({}, {"Authorization": f"Basic {secret}"}):
        missing = httpx2.post(address, json=INITIALIZE, headers={**ACCEPT, **header})
        assert missing.status_code == 401 and "Authorization: Bearer" in missing.json()["detail"]
        assert missing.headers["www-authenticate"] == "Bearer"
    for header in (
        {"Authorization": "Bearer kg_nope_nope"},
        {"X-API-Key": secret + "x"},
        {"Authorization": "Bearer x"},
    ):
        wrong = httpx2.post(address, json=INITIALIZE, headers={**ACCEPT, **header})
        assert wrong.status_code == 401, header
        assert "not valid" in wrong.json()["detail"]
        assert 'error="invalid_token"' in wrong.headers["www-authenticate"]
    with pytest.raises(Exception):  # noqa: B017  (the SDK's error for a refused connection)
        call(address, "kg_nope_nope", "get_episodes")
    # The same request with the token is served.
    good = httpx2.post(
        address, json=INITIALIZE, headers={**ACCEPT, "Authorization": f"Bearer {secret}"}
    )
    assert good.status_code == 200 and good.json()["result"]["serverInfo"]["name"] == "kgapp"


def test_unknown_tenants_and_other_paths_look_the_same(url, editor, make_tenant) -> None:
    tenant, secret = editor
    other = make_tenant()  # exists, and the token's user is not a member
    headers = {**ACCEPT, "Authorization": f"Bearer {secret}"}
    for slug in (other.slug, "no-such-tenant"):
        answer = httpx2.post(door(url, slug), json=INITIALIZE, headers=headers)
        assert answer.status_code == 404, slug
        assert answer.json() == {"detail": f"no tenant {slug!r} for you"}
    assert httpx2.post(door(url, "Not_A_Slug"), json=INITIALIZE, headers=headers).status_code == 400
    for path in ("/mcp/", "/mcp/t/", f"/mcp/t/{tenant.slug}/extra/"):
        assert httpx2.post(url + path, json=INITIALIZE, headers=headers).status_code == 404, path
    # The door checks the Host as Django does.
    evil = httpx2.post(
        door(url, tenant.slug), json=INITIALIZE, headers={**headers, "Host": "evil.example"}
    )
    assert evil.status_code == 400


# --- the tools -----------------------------------------------------------------------


def test_a_memory_is_found_at_a_past_moment(url, editor) -> None:
    """The issue's "done when": an MCP client adds a memory to a tenant, then finds its
    facts at a past moment; before that moment, and as known before it was added, the
    graph holds nothing."""
    tenant, secret = editor
    address = door(url, tenant.slug)
    added = ok(
        call(
            address,
            secret,
            "add_memory",
            content="Alice works at Acme Corp.",
            reference_time="2024-01-15T00:00:00Z",
            name="hr note",
        )
    )
    assert added["episode_id"].startswith("episode:") and added["job"]["status"] == "completed"
    job = ok(call(address, secret, "job_status", job_id=added["job_id"]))["job"]
    assert job["status"] == "completed" and job["counts"]["episodes"] == 1
    then = call(
        address, secret, "search_facts", query="Alice Acme Corp", as_of="2024-03-01T00:00:00Z"
    )
    facts = ok(then)["facts"]
    assert any({f["source_name"], f["target_name"]} == {"Alice", "Acme Corp"} for f in facts), facts
    assert facts[0]["id"] in said(then) and "2024-01-15T00:00:00Z" in said(then)
    before = ok(
        call(address, secret, "search_facts", query="Alice Acme Corp", as_of="2023-06-01T00:00:00Z")
    )
    assert before["facts"] == []
    # True in March 2024, but the graph learned it only now: as known then, nothing.
    unknown = ok(
        call(
            address,
            secret,
            "search_facts",
            query="Alice Acme Corp",
            as_of="2024-03-01T00:00:00Z",
            known_at="2024-03-01T00:00:00Z",
        )
    )
    assert unknown["facts"] == []


def test_every_tool_works(url, editor) -> None:
    tenant, secret = editor
    address = door(url, tenant.slug)
    memory, bob_acme, bob_beta = calls(
        address,
        secret,
        (
            "add_memory",
            {
                "content": "alice: I joined Acme Corp in May.\ncarol: Welcome, Alice!",
                "source": "message",
                "reference_time": "2024-06-01T09:00:00Z",
                "saga": "onboarding chat",
                "source_description": "Slack",
            },
        ),
        (
            "add_fact",
            {
                "source": {"name": "Bob", "type": "Person"},
                "relation": "works at",
                "target": {"name": "Acme Corp", "type": "Organization"},
                "valid_at": "2023-01-01T00:00:00Z",
            },
        ),
        (
            "add_fact",
            {
                "source": {"name": "Bob", "type": "Person"},
                "relation": "works at",
                "target": {"name": "Beta Inc", "type": "Organization"},
                "valid_at": "2024-03-01T00:00:00Z",
                "fact": "Bob moved to Beta Inc.",
            },
        ),
    )
    assert ok(memory)["job"]["status"] == "completed"
    acme, beta = ok(bob_acme)["fact"], ok(bob_beta)["fact"]
    assert ok(bob_acme)["created"] and acme["relation"] == "WORKS_AT"
    again = ok(
        call(
            address,
            secret,
            "add_fact",
            source={"name": "Bob", "type": "Person"},
            relation="works at",
            target={"name": "Beta Inc", "type": "Organization"},
            valid_at="2024-03-01T00:00:00Z",
            fact="Bob moved to Beta Inc.",
        )
    )
    assert not again["created"] and again["fact"]["id"] == beta["id"]

    entities, entity, fact, episodes, answer, changes = calls(
        address,
        secret,
        ("search_entities", {"query": "Bob"}),
        ("get_entity", {"entity_id": beta["source"], "as_of": "2023-06-01T00:00:00Z"}),
        ("get_fact", {"fact_id": beta["id"]}),
        ("get_episodes", {"saga": "onboarding chat"}),
        ("ask", {"query": "Where does Bob work?", "mode": "hybrid"}),
        ("diff", {"from_moment": "2023-06-01T00:00:00Z", "to_moment": "2024-06-01T00:00:00Z"}),
    )
    assert beta["source"] in [e["id"] for e in ok(entities)["entities"]]
    assert ok(entity)["entity"]["name"] == "Bob" and "aliases:" in said(entity)
    in_2023 = ok(entity)["facts"]
    assert [f["target_name"] for f in in_2023] == ["Acme Corp"]  # Beta came in 2024
    assert in_2023[0]["id"] in said(entity)
    chain = ok(fact)["history"]
    assert chain[0]["target_name"] == "Acme Corp" and chain[-1]["id"] == beta["id"]
    assert beta["supersedes"] and f"supersedes {beta['supersedes']}" in said(fact)
    listed = ok(episodes)["episodes"]
    assert [e["id"] for e in listed] == [ok(memory)["episode_id"]]
    assert listed[0]["id"] in said(episodes) and "[Slack]: alice: I joined" in said(episodes)
    assert "Bob" in ok(answer)["context_text"] and "No model is configured" in said(answer)
    diffed = ok(changes)
    assert diffed["axis"] == "valid" and "Added:" in said(changes)
    moved = [c["after"]["id"] for c in diffed["changed"]] + [f["id"] for f in diffed["added"]]
    assert beta["id"] in moved or beta["id"] in said(changes), diffed

    removed = ok(call(address, secret, "delete_episode", episode_id=listed[0]["id"]))
    assert removed["episodes_deleted"] == 1
    assert ok(call(address, secret, "get_episodes", saga="onboarding chat"))["episodes"] == []


def test_the_api_key_header_works_too(url, editor) -> None:
    tenant, secret = editor
    (listed,) = calls(door(url, tenant.slug), secret, ("get_episodes", {}), api_key=True)
    assert ok(listed)["episodes"] == []


def test_a_viewer_reads_and_cannot_write(url, make_tenant, member) -> None:
    tenant = make_tenant()
    editor, viewer = token(member(tenant, Role.EDITOR)), token(member(tenant, Role.VIEWER))
    address = door(url, tenant.slug)
    episode = ok(call(address, editor, "add_memory", content="Carol works at Initech."))[
        "episode_id"
    ]
    writes = calls(
        address,
        viewer,
        ("add_memory", {"content": "Mallory owns Initech."}),
        (
            "add_fact",
            {"source": {"name": "Mallory"}, "relation": "owns", "target": {"name": "Initech"}},
        ),
        ("delete_episode", {"episode_id": episode}),
    )
    for result in writes:
        refused(result, "needs the editor role", "viewer")
    listed = ok(call(address, viewer, "get_episodes"))["episodes"]
    assert [e["id"] for e in listed] == [episode]
    graph = tenant_graph(tenant)
    assert graph.query("SELECT VALUE name FROM entity WHERE name = 'Mallory'")[0] == []


def test_a_token_of_one_tenant_gets_nothing_of_another(url, make_tenant, member) -> None:
    mine, theirs = make_tenant(), make_tenant()
    attacker = member(mine, Role.OWNER)
    secret, their_secret = token(attacker), token(member(theirs, Role.EDITOR))
    marker = "bonlymcp7"
    seeded = calls(
        door(url, theirs.slug),
        their_secret,
        ("add_memory", {"content": f"Alice {marker} works at Acme Corp.", "saga": marker}),
        (
            "add_fact",
            {
                "source": {"name": f"Quill {marker}"},
                "relation": "owns",
                "target": {"name": f"Vault {marker}"},
            },
        ),
    )
    job, fact = ok(seeded[0])["job_id"], ok(seeded[1])["fact"]
    ids = {
        "episode_id": ok(seeded[0])["episode_id"],
        "job_id": job,
        "fact_id": fact["id"],
        "entity_id": fact["source"],
        "center_entity": fact["source"],
    }
    before = graph_snapshot(theirs)
    # At the door: their slug, however spelt, is not found.
    with pytest.raises(Exception):  # noqa: B017
        call(door(url, theirs.slug), secret, "get_episodes")
    headers = {**ACCEPT, "Authorization": f"Bearer {secret}"}
    for slug in (theirs.slug, theirs.slug.upper(), theirs.namespace):
        assert httpx2.post(door(url, slug), json=INITIALIZE, headers=headers).status_code in (
            400,
            404,
        )
    # Through my own door, every tool, with their ids and names.
    tries = [
        (name, {**args, key: value})
        for name, args in _minimal_arguments().items()
        for key, value in ids.items()
        if key in args
    ]
    # Their names and ids, never the marker itself: an answer that holds it came from them.
    tries += [
        ("search_facts", {"query": "Quill owns Vault"}),
        ("search_entities", {"query": "Quill"}),
        ("get_episodes", {}),
        ("ask", {"query": "What does Quill own?"}),
        ("diff", {"from_moment": "2000-01-01T00:00:00Z", "to_moment": "2100-01-01T00:00:00Z"}),
        (
            "add_fact",
            {
                "source": {"name": ids["entity_id"]},
                "relation": "knows",
                "target": {"name": "Quill"},
                "fact": ids["fact_id"],
            },
        ),
        ("add_memory", {"content": f"Who is Quill? {ids['episode_id']}", "saga": ids["job_id"]}),
    ]
    assert {name for name, _ in tries} == TOOL_NAMES
    results = calls(door(url, mine.slug), secret, *tries)
    for (name, args), result in zip(tries, results, strict=True):
        assert marker not in said(result) and marker not in repr(result.structured_content), (
            name,
            args,
        )
        assert "Internal error" not in said(result), (name, args)
    assert graph_snapshot(theirs) == before


def _minimal_arguments() -> dict[str, dict[str, Any]]:
    return {
        "get_entity": {"entity_id": ""},
        "get_fact": {"fact_id": ""},
        "delete_episode": {"episode_id": ""},
        "job_status": {"job_id": ""},
        "search_facts": {"query": "Alice", "center_entity": ""},
        "search_entities": {"query": "Alice", "center_entity": ""},
    }


def test_ask_counts_against_the_api_query_rate_limit(editor, settings) -> None:
    """In this process (the limits are off in the served test settings): ask and POST
    query count in the same bucket, per user and per token."""
    tenant, secret = editor
    settings.RATELIMIT_CACHE_PREFIX = f"rl-mcp-{uuid.uuid4().hex}:"
    settings.RATE_LIMITS = {"query": "3/h"}
    from kgapp.asgi import application

    api = Client(HTTP_AUTHORIZATION=f"Bearer {secret}").post(
        f"/api/v1/t/{tenant.slug}/query", data={"query": "Who?"}, content_type="application/json"
    )
    assert api.status_code == 200, api.content
    asked = async_to_sync(tool_calls)(
        door(IN_PROCESS, tenant.slug),
        auth_headers(secret),
        [("ask", {"query": "Who works where?"})] * 3,
        application,
    )
    for result in asked[:2]:
        ok(result)
    refused(asked[2], "Too many query requests", "3 per hour", "retry in")


# --- refusals ------------------------------------------------------------------------


def test_the_graph_store_down_is_a_tool_error_that_says_to_retry(editor, settings) -> None:
    """In this process, with SurrealDB unreachable: every tool that reads or writes the
    graph answers a tool error, never a 5xx."""
    tenant, secret = editor
    settings.SURREAL_URL = f"ws://127.0.0.1:{free_port()}"  # nothing listens there
    settings.SURREAL_CONNECT_ATTEMPTS = 1
    from kgapp.asgi import application

    made = [
        ("get_episodes", {}),
        ("search_facts", {"query": "Alice"}),
        ("job_status", {"job_id": "job:abc"}),
        ("add_fact", {"source": {"name": "A"}, "relation": "knows", "target": {"name": "B"}}),
        ("add_memory", {"content": "Alice works at Acme Corp."}),
    ]
    results = async_to_sync(tool_calls)(
        door(IN_PROCESS, tenant.slug), auth_headers(secret), made, application
    )
    for result in results:
        refused(result, "unavailable right now; retry in a moment")


def test_bad_arguments_are_tool_errors_a_model_can_act_on(url, editor) -> None:
    tenant, secret = editor
    address = door(url, tenant.slug)
    cases = [
        (("search_facts", {"query": "Alice", "limit": "many"}), ["limit", "integer"]),
        (("search_facts", {"query": "Alice", "limit": 1000}), ["limit", "100"]),
        (("search_facts", {"query": ""}), ["query", "at least 1"]),
        (("search_facts", {}), ["query", "required"]),
        (("search_facts", {"query": "Alice", "as_of": "10000-01-01T00:00:00Z"}), ["as_of"]),
        (
            ("search_facts", {"query": "Alice", "as_of": "9999-12-31T23:00:00-05:00"}),
            ["as_of", "0001-01-01T00:00:00Z to 9999-12-31T23:59:59.999999Z"],
        ),
        (
            ("get_entity", {"entity_id": "entity:x", "known_at": "2024-01-01T00:00:00.1234567Z"}),
            ["known_at", "microsecond"],
        ),
        (
            ("diff", {"from_moment": "yesterday", "to_moment": "2024-01-01T00:00:00Z"}),
            ["from_moment"],
        ),
        (("get_entity", {"entity_id": "entity:nobody"}), ["no entity entity:nobody"]),
        (("get_fact", {"fact_id": "entity:alice"}), ["is not a relates_to id"]),
        (("get_fact", {"fact_id": "relates_to:no-such"}), ["malformed key"]),
        (("job_status", {"job_id": "job:nothere"}), ["job:nothere"]),
        (("delete_episode", {"episode_id": "episode:nothere"}), ["episode:nothere"]),
        (
            ("search_facts", {"query": "Alice", "center_entity": "relates_to:x"}),
            ["is not a entity id"],
        ),
        (("get_episodes", {"document": "episode:x"}), ["is not a document id"]),
        (
            ("add_memory", {"content": "no speaker on this line", "source": "message"}),
            ["Line 1 has no speaker"],
        ),
        (("add_memory", {"content": "x", "source": "email"}), ["source"]),
        (
            (
                "add_fact",
                {
                    "source": {"name": "A"},
                    "relation": "knows",
                    "target": {"name": "B"},
                    "valid_at": "2024-01-01T00:00:00Z",
                    "invalid_at": "2023-01-01T00:00:00Z",
                },
            ),
            ["invalid_at must be after valid_at"],
        ),
        (
            (
                "add_fact",
                {"source": {"name": "Ann"}, "relation": "knows", "target": {"name": "Ann"}},
            ),
            ["two different entities"],
        ),
        (
            ("add_fact", {"source": "Alice", "relation": "knows", "target": {"name": "B"}}),
            ["source"],
        ),
        (("ask", {"query": "Who?", "mode": "psychic"}), ["mode"]),
        (("ask", {"query": "Who?", "max_total_tokens": 10}), ["max_total_tokens"]),
        (
            (
                "diff",
                {
                    "from_moment": "2024-01-01T00:00:00Z",
                    "to_moment": "2024-02-01T00:00:00Z",
                    "axis": "sideways",
                },
            ),
            ["axis"],
        ),
    ]
    results = calls(address, secret, *[made for made, _ in cases])
    for (made, words), result in zip(cases, results, strict=True):
        assert result.is_error, f"{made} was not refused: {said(result)}"
        refused(result, *words)
    # None of them wrote anything.
    assert ok(call(address, secret, "get_episodes"))["episodes"] == []


def test_the_injection_corpus_through_tool_arguments_runs_nothing(url, editor) -> None:
    tenant, secret = editor
    address = door(url, tenant.slug)
    ok(
        call(
            address,
            secret,
            "add_fact",
            source={"name": "Alice", "type": "Person"},
            relation="works at",
            target={"name": "Acme Corp"},
        )
    )
    graph = tenant_graph(tenant)
    definitions = {"root": root_namespaces(), **_definitions(tenant)}
    ids = _ids(graph)
    sample = PAYLOADS[:: max(1, len(PAYLOADS) // 12)]
    tries = []
    for payload in sample:
        tries += [
            ("search_facts", {"query": payload, "relations": [payload], "entity_types": [payload]}),
            ("search_entities", {"query": payload}),
            ("get_entity", {"entity_id": payload}),
            ("get_fact", {"fact_id": payload}),
            ("get_episodes", {"saga": payload, "document": payload}),
            ("delete_episode", {"episode_id": payload}),
            ("job_status", {"job_id": payload}),
            ("ask", {"query": payload, "mode": "naive"}),
            (
                "add_fact",
                {
                    "source": {"name": payload, "type": "Person"},
                    "relation": "knows",
                    "target": {"name": "Acme Corp"},
                    "fact": payload,
                },
            ),
            (
                "add_memory",
                {
                    "content": payload,
                    "name": payload,
                    "saga": payload,
                    "source_description": payload,
                },
            ),
        ]
    results = calls(address, secret, *tries)  # a 5xx would raise here
    for (name, args), result in zip(tries, results, strict=True):
        assert "Internal error" not in said(result) and "rejected the operation" not in said(
            result
        ), (name, args)
    assert {"root": root_namespaces(), **_definitions(tenant)} == definitions
    assert ids <= _ids(graph)  # nothing that was there was deleted


def _ids(graph: Any) -> set[str]:
    rows = graph.query("SELECT VALUE id FROM entity; SELECT VALUE id FROM relates_to")
    return {str(i) for ids in rows for i in ids}


def _definitions(tenant: Any) -> dict[str, Any]:
    snapshot = graph_snapshot(tenant)
    return {"ns": snapshot["ns"], "db": snapshot["db"], "tables": snapshot["tables"]}
