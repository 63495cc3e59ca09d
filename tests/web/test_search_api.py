"""The retrieval API: point-in-time answers, validation, and tenant isolation on every
route (two tenants holding entities and facts with identical names)."""

from __future__ import annotations

import json
import math

import pytest

from tenants.models import Role

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def two_tenants(make_tenant, member, token_client):
    """Tenants A and B with the same Alice story; B's Alice moved to Gamma instead."""
    made = []
    for gamma in (False, True):
        tenant = make_tenant()
        client = token_client(member(tenant, Role.EDITOR))
        base = f"/api/v1/t/{tenant.slug}"
        for body in (
            {
                "source": {"name": "Alice", "type": "Person"},
                "relation": "WORKS_AT",
                "target": {"name": "Acme Corp", "type": "Organization"},
                "valid_at": "2024-01-15T00:00:00Z",
            },
            {
                "source": {"name": "Alice", "type": "Person"},
                "relation": "WORKS_AT",
                "target": {"name": "Gamma LLC" if gamma else "Beta Inc", "type": "Organization"},
                "valid_at": "2024-02-01T00:00:00Z",
            },
        ):
            assert (
                client.post(
                    f"{base}/facts", data=json.dumps(body), content_type="application/json"
                ).status_code
                == 201
            )
        made.append((tenant, client, base))
    return made


def alice(client, base) -> str:
    found = client.get(f"{base}/entities?q=ali").json()
    return next(e["id"] for e in found if e["name"] == "Alice")


def test_point_in_time_facts_through_the_api(two_tenants) -> None:
    (_, client, base), _ = two_tenants
    entity = alice(client, base)
    jan = client.get(f"{base}/entities/{entity}/facts?as_of=2024-01-20T00:00:00Z").json()
    now = client.get(f"{base}/entities/{entity}/facts").json()
    assert [f["target_name"] for f in jan] == ["Acme Corp"]
    assert [f["target_name"] for f in now] == ["Beta Inc"]
    history = client.get(f"{base}/facts/{now[0]['id']}/history").json()
    assert [f["target_name"] for f in history] == ["Acme Corp", "Acme Corp", "Beta Inc"]
    detail = client.get(f"{base}/entities/{entity}").json()
    assert detail["name"] == "Alice" and detail["degree"] == 2
    hood = client.get(f"{base}/entities/{entity}/neighborhood?as_of=2024-01-20T00:00:00Z").json()
    assert [f["target_name"] for f in hood] == ["Acme Corp"]


def test_search_as_of_and_validation(two_tenants) -> None:
    (_, client, base), _ = two_tenants

    def post(body):
        return client.post(f"{base}/search", data=json.dumps(body), content_type="application/json")

    now = post({"query": "Alice works at", "scopes": ["facts"]}).json()
    assert [f["target_name"] for f in now["facts"]] == ["Beta Inc"]
    past = post(
        {"query": "Alice works at", "scopes": ["facts"], "as_of": "2024-01-20T00:00:00Z"}
    ).json()
    assert [f["target_name"] for f in past["facts"]] == ["Acme Corp"]
    for hostile in ["'; REMOVE TABLE entity; --", "@@ @1@ ⟩ SELECT * FROM entity", "🚀" * 50]:
        response = post({"query": hostile})
        assert response.status_code == 200, response.content
    assert post({"query": "x" * 2001}).status_code == 422
    current = post({"query": "Alice works at", "scopes": ["facts"], "current_only": True}).json()
    assert [f["target_name"] for f in current["facts"]] == ["Beta Inc"]
    clash = post({"query": "x", "current_only": True, "as_of": "2024-01-20T00:00:00Z"})
    assert clash.status_code == 422 and "current_only means now" in str(clash.json()["detail"])
    walked = post({"query": "Alice", "methods": ["activation"], "scopes": ["entities"]}).json()
    assert {"Alice", "Beta Inc"} <= {e["name"] for e in walked["entities"]}
    assert post({"query": "x", "reranker": "cross_encoder"}).status_code == 422
    assert post({"query": "x", "center_entity": "user:1"}).status_code == 422
    assert client.get(f"{base}/facts/relates_to:nope").status_code == 404
    assert client.get(f"{base}/entities/entity:nope").status_code == 404


def test_no_route_shows_another_tenants_data(two_tenants) -> None:
    (tenant_a, client_a, base_a), (tenant_b, client_b, base_b) = two_tenants
    alice_b = alice(client_b, base_b)
    fact_b = client_b.get(f"{base_b}/entities/{alice_b}/facts").json()[0]["id"]
    # Entity keys derive from names, so both tenants' Alice have the same id: through
    # tenant A's routes that id shows A's Alice and A's facts, never B's.
    facts_via_a = client_a.get(f"{base_a}/entities/{alice_b}/facts").json()
    assert [f["target_name"] for f in facts_via_a] == ["Beta Inc"]
    # Fact ids are random: B's fact names nothing in A.
    assert client_a.get(f"{base_a}/facts/{fact_b}").status_code == 404
    assert client_a.get(f"{base_a}/facts/{fact_b}/history").status_code == 404
    for route in (f"{base_a}/entities?q=gamma", f"{base_a}/entities?q=Gamma%20LLC"):
        assert all(e["name"] != "Gamma LLC" for e in client_a.get(route).json())
    results = client_a.post(
        f"{base_a}/search",
        data=json.dumps(
            {
                "query": "Gamma",
                "scopes": ["facts", "entities", "episodes"],
                "methods": ["bm25", "cosine"],
            }
        ),
        content_type="application/json",
    ).json()
    flat = json.dumps(results)
    assert "Gamma" not in flat
    # And B's token cannot use A's routes at all.
    assert client_b.get(f"{base_a}/entities?q=ali").status_code == 404
    assert (
        client_b.post(
            f"{base_a}/search", data=json.dumps({"query": "Alice"}), content_type="application/json"
        ).status_code
        == 404
    )


def test_graph_elements_carry_the_whole_history(two_tenants) -> None:
    (_, client, base), (_, client_b, base_b) = two_tenants
    elements = client.get(f"{base}/graph").json()
    labels = sorted(n["data"]["label"] for n in elements["nodes"])
    assert labels == ["Acme Corp", "Alice", "Beta Inc"]
    edges = elements["edges"]
    # The retired Acme row, its revision and Beta: all four timestamps on each.
    assert len(edges) == 3
    assert all({"valid_at", "created_at", "source", "target"} <= set(e["data"]) for e in edges)
    node_ids = {n["data"]["id"] for n in elements["nodes"]}
    assert all(e["data"]["source"] in node_ids and e["data"]["target"] in node_ids for e in edges)
    at_jan = client.get(f"{base}/graph?as_of=2024-01-20T00:00:00Z").json()
    assert [e["data"]["relation"] for e in at_jan["edges"]] == ["WORKS_AT"]
    seeded = client.get(f"{base}/graph?seed={alice(client, base)}").json()
    assert {n["data"]["label"] for n in seeded["nodes"]} == {"Alice", "Acme Corp", "Beta Inc"}
    near = client.get(f"{base}/graph?seed={alice(client, base)}&depth=1").json()
    assert {n["data"]["label"] for n in near["nodes"]} == {"Alice", "Acme Corp", "Beta Inc"}
    assert client.get(f"{base}/graph?seed={alice(client, base)}&depth=4").status_code == 422
    people = client.get(f"{base}/graph?entity_types=Person").json()
    assert [n["data"]["label"] for n in people["nodes"]] == ["Alice"] and people["edges"] == []
    # Tenant B's graph is its own: Gamma, never Beta.
    labels_b = {n["data"]["label"] for n in client_b.get(f"{base_b}/graph").json()["nodes"]}
    assert "Gamma LLC" in labels_b and "Beta Inc" not in labels_b
    assert client_b.get(f"{base}/graph").status_code == 404


def test_search_filters_and_recipes(two_tenants) -> None:
    (_, client, base), _ = two_tenants

    def post(body):
        response = client.post(
            f"{base}/search", data=json.dumps(body), content_type="application/json"
        )
        assert response.status_code == 200, response.content
        return response.json()

    assert post({"query": "Alice", "relations": ["knows"], "scopes": ["facts"]})["facts"] == []
    assert [
        f["relation"]
        for f in post({"query": "Alice", "relations": ["works at"], "scopes": ["facts"]})["facts"]
    ] == ["WORKS_AT"]
    organisations = post(
        {"query": "Beta Inc Alice", "scopes": ["entities"], "entity_types": ["Organization"]}
    )["entities"]
    assert organisations and all(e["entity_type"] == "Organization" for e in organisations)
    recipe = post({"query": "Beta", "recipe": "entity_rrf"})
    assert recipe["facts"] == [] and recipe["entities"]
    bad = client.post(
        f"{base}/search",
        data=json.dumps({"query": "x", "recipe": "nope"}),
        content_type="application/json",
    )
    assert bad.status_code == 422


def test_cross_encoder_reranks_through_the_model(two_tenants, scripted_llm, settings) -> None:
    (_, client, base), _ = two_tenants

    def post(body):
        return client.post(f"{base}/search", data=json.dumps(body), content_type="application/json")

    unavailable = post({"query": "Alice", "reranker": "cross_encoder"})
    assert unavailable.status_code == 422 and "needs a model" in unavailable.json()["detail"]

    def rank(body):
        passages = json.loads(
            body["messages"][-1]["content"].split("<passages>\n")[1].split("\n</passages>")[0]
        )
        # The scripted judge prefers passages that mention Acme.
        return {
            "passages": [
                {"index": p["index"], "relevance": 0.9 if "Acme" in p["text"] else 0.2}
                for p in passages
            ]
        }

    scripted_llm.on_chat(rank)
    settings.OPENAI_BASE_URL = scripted_llm.base_url
    settings.OPENAI_API_KEY = "test"
    settings.LLM_MAX_RETRIES = 0
    response = post(
        {
            "query": "Alice",
            "scopes": ["entities"],
            "methods": ["bm25", "cosine"],
            "reranker": "cross_encoder",
            "limit": 3,
        }
    )
    assert response.status_code == 200, response.content
    entities = response.json()["entities"]
    assert entities[0]["name"] == "Acme Corp" and entities[0]["score"] == 0.9
    assert all("cross_encoder" in e["found_by"] for e in entities)
    assert len(scripted_llm.chat_requests("rank_passages")) == 1


@pytest.mark.parametrize("mode", ["local", "global", "hybrid", "mix"])
def test_query_modes_assemble_context_as_of(two_tenants, mode) -> None:
    (_, client, base), _ = two_tenants

    def ask(body):
        response = client.post(
            f"{base}/query", data=json.dumps(body), content_type="application/json"
        )
        assert response.status_code == 200, response.content
        return response.json()

    now = ask({"query": "Where does Alice work?", "mode": mode})
    assert "Beta Inc" in now["context_text"] and "Gamma" not in now["context_text"]
    assert [f["target_name"] for f in now["facts"]] == ["Beta Inc"]
    past = ask({"query": "Where does Alice work?", "mode": mode, "as_of": "2024-01-20T00:00:00Z"})
    assert [f["target_name"] for f in past["facts"]] == ["Acme Corp"]
    assert "Alice WORKS_AT Acme Corp [15 January 2024 to 1 February 2024]" in past["context_text"]


def test_query_budgets_and_answers(two_tenants, scripted_llm, settings) -> None:
    from kgapp.graph.chunking import count_tokens

    (_, client, base), _ = two_tenants

    def ask(body):
        return client.post(f"{base}/query", data=json.dumps(body), content_type="application/json")

    tight = ask(
        {
            "query": "Alice",
            "max_total_tokens": 100,
            "max_entity_tokens": 50,
            "max_relation_tokens": 50,
        }
    ).json()
    assert count_tokens(tight["context_text"]) <= 100
    naive = ask({"query": "Alice", "mode": "naive"}).json()
    assert naive["facts"] == [] and naive["entities"] == []
    unavailable = ask({"query": "Where does Alice work?", "answer": True})
    assert unavailable.status_code == 422 and "needs a model" in unavailable.json()["detail"]

    def model(body):
        task = body["response_format"]["json_schema"]["name"]
        if task == "query_keywords":
            return {"high_level": ["employment"], "low_level": ["Alice"]}
        context = body["messages"][-1]["content"]
        return {
            "answer": "Beta Inc"
            if "Alice WORKS_AT Beta Inc [since 1 February 2024]" in context
            else "unknown"
        }

    scripted_llm.on_chat(model)
    settings.OPENAI_BASE_URL, settings.OPENAI_API_KEY, settings.LLM_MAX_RETRIES = (
        scripted_llm.base_url,
        "t",
        0,
    )
    answered = ask({"query": "Where does Alice work?", "answer": True})
    assert answered.status_code == 200, answered.content
    assert answered.json()["answer"] == "Beta Inc"
    assert answered.json()["keywords"] == {"high_level": ["employment"], "low_level": ["Alice"]}


def test_layout_positions_for_large_graphs(two_tenants, make_user, token_client) -> None:
    (_, client, base), _ = two_tenants
    edges = [[i, (i + 1) % 1500] for i in range(1500)] + [[i, (i * 7) % 1500] for i in range(1500)]
    placed = client.post(
        f"{base}/layout",
        data=json.dumps({"count": 1500, "edges": edges}),
        content_type="application/json",
    )
    assert placed.status_code == 200
    positions = placed.json()["positions"]
    assert len(positions) == 1500 and len({tuple(p) for p in positions}) == 1500

    # Linked nodes sit nearer each other than unlinked ones, and edges are drawable.
    def median_length(pairs):
        lengths = sorted(math.dist(positions[a], positions[b]) for a, b in pairs if a != b)
        return lengths[len(lengths) // 2]

    unlinked = [(i, (i * 389 + 17) % 1500) for i in range(1500)]
    assert 45 < median_length(edges) < 0.8 * median_length(unlinked)
    bad = client.post(
        f"{base}/layout",
        data=json.dumps({"count": 2, "edges": [[0, 5]]}),
        content_type="application/json",
    )
    assert bad.status_code == 422 and "node numbers" in str(bad.json()["detail"])
    flat = client.post(
        f"{base}/layout",
        data=json.dumps({"count": 2, "edges": [], "aspect": 0}),
        content_type="application/json",
    )
    assert flat.status_code == 422 and "aspect" in str(flat.json()["detail"])
    stranger = token_client(make_user())
    assert (
        stranger.post(
            f"{base}/layout",
            data=json.dumps({"count": 1, "edges": []}),
            content_type="application/json",
        ).status_code
        == 404
    )


def test_a_curator_pins_an_entity_into_the_first_view(two_tenants, member, token_client) -> None:
    (tenant, client, base), (_, client_b, base_b) = two_tenants
    acme = next(e["id"] for e in client.get(f"{base}/entities?q=acme").json())
    pin = f"{base}/entities/{acme}/pin"

    def first(limit: int = 1) -> list[str]:
        return [
            n["data"]["label"] for n in client.get(f"{base}/graph?limit={limit}").json()["nodes"]
        ]

    assert first()[0] == "Alice"  # the most salient: two facts, a proper name
    # Editors upload; pins are a curator's.
    assert (
        client.post(
            pin, data=json.dumps({"pinned": True}), content_type="application/json"
        ).status_code
        == 403
    )
    curator = token_client(member(tenant, Role.CURATOR))
    answer = curator.post(pin, data=json.dumps({"pinned": True}), content_type="application/json")
    assert answer.status_code == 200 and answer.json()["pinned"] is True
    assert first()[0] == "Acme Corp"
    assert client.get(f"{base}/entities/{acme}").json()["pinned"] is True
    node = next(
        n["data"] for n in client.get(f"{base}/graph").json()["nodes"] if n["data"]["id"] == acme
    )
    assert node["pinned"] and node["salience"] >= 1000
    # Unpinned, it takes its place again; a bad body or an unknown entity is refused.
    curator.post(pin, data=json.dumps({"pinned": False}), content_type="application/json")
    assert first()[0] == "Alice"
    assert (
        curator.post(
            pin, data=json.dumps({"pinned": "yes please"}), content_type="application/json"
        ).status_code
        == 422
    )
    missing = curator.post(
        f"{base}/entities/entity:nobody/pin",
        data=json.dumps({"pinned": True}),
        content_type="application/json",
    )
    assert missing.status_code == 404 and "no entity" in missing.json()["detail"]
    # Another tenant's curator cannot reach this one's entities.
    assert (
        client_b.post(
            pin, data=json.dumps({"pinned": True}), content_type="application/json"
        ).status_code
        == 404
    )
