"""POST ask and GET questions: the sources first, then the answer as the scripted model
writes it, NDJSON a line at a time; without a model the sources and a word that answers
need one; a model failing mid-answer ends the stream with an error line; refusals before
the stream are JSON; the history keeps a user's last 20 questions per tenant."""

from __future__ import annotations

import http.client
import json
import time
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client

from harness.llm_server import Reply
from tenants import services
from tenants.models import Question, Role
from tests.web_server import server_env, serving

pytestmark = [
    pytest.mark.django_db(transaction=True),
    # The test client serves the stream synchronously (as WSGI would) and says so.
    pytest.mark.filterwarnings("ignore:StreamingHttpResponse must consume asynchronous"),
]

QUESTION = "Where does Alice work?"
ANSWER = "Alice works at Beta Inc [S1], having left Acme Corp [S1]."
NOTES = (
    b"# Team notes\n\nAlice presented the search roadmap on Monday. Everyone liked her charts.\n"
)


def post_json(client, url: str, body: dict[str, Any]):
    return client.post(url, data=json.dumps(body), content_type="application/json")


def lines(response) -> list[dict[str, Any]]:
    assert response.status_code == 200, response.content
    assert response["Content-Type"] == "application/x-ndjson"
    return [json.loads(line) for line in b"".join(response).splitlines()]


@dataclass
class Team:
    tenant: Any
    editor: Any
    client: Client  # the editor's token
    base: str


@pytest.fixture
def team(make_tenant, member, token_client, eager) -> Team:
    """A tenant holding Alice's two jobs as facts and as an uploaded document."""
    tenant = make_tenant()
    editor = member(tenant, Role.EDITOR)
    client = token_client(editor)
    base = f"/api/v1/t/{tenant.slug}"
    for target, valid_at in (
        ("Acme Corp", "2023-01-01T00:00:00Z"),
        ("Beta Inc", "2024-02-01T00:00:00Z"),
    ):
        body = {
            "source": {"name": "Alice", "type": "Person"},
            "relation": "WORKS_AT",
            "target": {"name": target, "type": "Organization"},
            "valid_at": valid_at,
        }
        assert post_json(client, f"{base}/facts", body).status_code == 201
    upload = SimpleUploadedFile("team.md", NOTES)
    sent = client.post(
        f"{base}/documents", {"files": [upload], "reference_time": "2024-03-01T00:00:00Z"}
    )
    assert sent.status_code == 202, sent.content
    return Team(tenant, editor, client, base)


@pytest.fixture
def model(scripted_llm, settings):
    """The scripted model, configured for this process: keywords, then `ANSWER` streamed."""

    def answer(body: dict[str, Any]) -> Any:
        if body.get("response_format", {}).get("json_schema", {}).get("name") == "query_keywords":
            return {"high_level": ["employment"], "low_level": ["Alice"]}
        return Reply(content=ANSWER)

    scripted_llm.on_chat(answer)
    settings.OPENAI_BASE_URL, settings.OPENAI_API_KEY = scripted_llm.base_url, "test"
    settings.OPENAI_MODEL, settings.LLM_MAX_RETRIES = "gpt-4o-mini", 0
    return scripted_llm


def test_the_sources_come_first_then_the_answer_as_written(team, model) -> None:
    tenant, client, base = team.tenant, team.client, team.base
    got = lines(post_json(client, f"{base}/ask", {"query": QUESTION}))
    assert [line["type"] for line in got] == ["sources"] + ["delta"] * len(ANSWER.split()) + [
        "done"
    ]
    sources, deltas, done = got[0], got[1:-1], got[-1]
    assert "".join(d["text"] for d in deltas) == ANSWER
    assert deltas[0]["text"] == "Alice " and deltas[-1]["text"] == "[S1]."
    passages = {p["document"]: p for p in sources["passages"]}
    notes = passages["Team notes"]
    assert notes["ref"].startswith("S") and notes["said_at"] == "2024-03-01T00:00:00Z"
    assert "Alice presented the search roadmap on Monday." in notes["excerpts"]
    assert notes["episode"].startswith("episode:") and notes["name"] == "team.md #1"
    facts = {f["target_name"]: f for f in sources["facts"]}
    assert (
        facts["Beta Inc"]["valid_at"] == "2024-02-01T00:00:00Z"
        and facts["Beta Inc"]["invalid_at"] is None
    )
    assert (
        facts["Beta Inc"]["id"].startswith("relates_to:")
        and facts["Beta Inc"]["source_name"] == "Alice"
    )
    entities = {e["name"]: e for e in sources["entities"]}
    assert entities["Alice"]["entity_type"] == "Person" and entities["Alice"]["id"].startswith(
        "entity:"
    )
    # The model read the context that holds those sources, asked to cite them.
    [streamed] = [b for b in model.chat_requests() if b.get("stream")]
    system, user = (m["content"] for m in streamed["messages"])
    assert "[S1]" in system and f"[{notes['ref']}]" in user and "Alice WORKS_AT Beta Inc" in user
    # What the call used, as the model server counted it.
    [row] = done["usage"]
    assert row["model"] == "gpt-4o-mini" and row["calls"] == 1
    assert (
        row["input_tokens"] == len(system + user) // 4 and row["output_tokens"] == len(ANSWER) // 4
    )
    assert row["cost_usd"] > 0
    assert [q.text for q in Question.objects.filter(tenant=tenant)] == [QUESTION]


def test_the_sources_are_read_as_of_the_moments_asked(team) -> None:
    client, base = team.client, team.base
    got = lines(
        post_json(client, f"{base}/ask", {"query": QUESTION, "as_of": "2023-06-01T00:00:00Z"})
    )
    assert [f["target_name"] for f in got[0]["facts"]] == ["Acme Corp"]
    known = lines(
        post_json(client, f"{base}/ask", {"query": QUESTION, "known_at": "2001-01-01T00:00:00Z"})
    )
    assert known[0]["facts"] == [] and known[0]["entities"] == []


def test_without_a_model_the_sources_come_with_a_word_that_answers_need_one(team) -> None:
    client, base = team.client, team.base
    got = lines(post_json(client, f"{base}/ask", {"query": QUESTION}))
    assert [line["type"] for line in got] == ["sources", "answer_unavailable"]
    assert got[0]["facts"] and got[0]["passages"]
    assert got[1]["detail"].startswith("Answers need a model")


def test_a_model_failing_mid_answer_ends_the_stream_with_an_error_line(team, model, caplog) -> None:
    client, base = team.client, team.base
    model.on_chat(
        lambda body: (
            {"high_level": [], "low_level": ["Alice"]}
            if not body.get("stream")
            else Reply(content=ANSWER, break_after=2, break_message="upstream overloaded")
        )
    )
    got = lines(post_json(client, f"{base}/ask", {"query": QUESTION}))
    assert [line["type"] for line in got] == ["sources", "delta", "delta", "error"]
    detail = got[-1]["detail"]
    assert detail.startswith("The model stopped before the answer was complete (reference ")
    assert "Traceback" not in detail and "overloaded" not in detail
    reference = detail.split("reference ")[1][:12]
    assert any(
        reference in r.getMessage() and "upstream overloaded" in r.getMessage()
        for r in caplog.records
    )


def test_refusals_before_the_stream_are_json(
    team, model, make_user, member, token_client, settings
) -> None:
    tenant, client, base = team.tenant, team.client, team.base

    def ask(body, via=client, url=f"{base}/ask"):
        response = post_json(via, url, body)
        assert not response.streaming and response["Content-Type"].startswith("application/json")
        return response.status_code, response.json()["detail"]

    status, detail = ask({"query": QUESTION, "as_of": "10000-01-01T00:00:00Z"})
    assert status == 422 and "as_of" in detail
    assert ask({"query": ""})[0] == 422 and ask({"query": "x" * 2001})[0] == 422
    assert ask({"query": QUESTION, "mode": "everything"})[0] == 422
    status, detail = ask({"query": QUESTION, "current_only": True, "known_at": "2024-01-01"})
    assert status == 422 and "current_only means now" in detail
    stranger = token_client(make_user())
    assert ask({"query": QUESTION}, via=stranger)[0] == 404
    assert ask({"query": QUESTION}, url="/api/v1/t/no-such-tenant/ask")[0] == 404
    assert ask({"query": QUESTION}, url="/api/v1/t/Not_A_Slug/ask")[0] == 400
    assert post_json(Client(), f"{base}/ask", {"query": QUESTION}).status_code == 401
    # The model failing on the question's keywords, before any line: 503.
    model.on_chat(lambda body: Reply(status=500, content="down"))
    status, detail = ask({"query": QUESTION})
    assert status == 503 and detail.startswith("The model did not answer")
    # Asking shares the query rate limit.
    settings.RATE_LIMITS = {"query": "1/m"}
    model.on_chat(
        lambda body: (
            {"high_level": [], "low_level": []} if not body.get("stream") else Reply(content="ok")
        )
    )
    assert post_json(client, f"{base}/query", {"query": QUESTION}).status_code == 200
    limited = post_json(client, f"{base}/ask", {"query": QUESTION})
    assert limited.status_code == 429 and int(limited["Retry-After"]) > 0
    assert Question.objects.filter(tenant=tenant).count() == 0  # none got as far as an answer


def test_a_viewer_can_ask_and_sees_only_their_own_questions(team, member, token_client) -> None:
    tenant, editor, base = team.tenant, team.client, team.base
    viewer = member(tenant, Role.VIEWER)
    as_viewer = token_client(viewer)
    assert (
        lines(post_json(as_viewer, f"{base}/ask", {"query": "Who is Alice?"}))[0]["type"]
        == "sources"
    )
    assert lines(
        post_json(editor, f"{base}/ask", {"query": QUESTION, "as_of": "2023-06-01T00:00:00Z"})
    )
    mine = as_viewer.get(f"{base}/questions").json()
    assert mine == [
        {"text": "Who is Alice?", "as_of": None, "known_at": None, "asked_at": mine[0]["asked_at"]}
    ]
    [theirs] = editor.get(f"{base}/questions").json()
    assert theirs["text"] == QUESTION and theirs["as_of"] == "2023-06-01T00:00:00Z"


def test_the_history_keeps_the_last_20_per_user_and_tenant(team, make_tenant, member) -> None:
    tenant, client, base = team.tenant, team.client, team.base
    user = team.editor
    other = make_tenant()
    member(other, Role.VIEWER)
    services.membership_set(tenant=other, user=user, role=Role.VIEWER)
    services.question_record(user=user, tenant=other, text="Elsewhere?")
    for n in range(21):
        services.question_record(user=user, tenant=tenant, text=f"Question {n}?")
    assert lines(post_json(client, f"{base}/ask", {"query": "Question 5?"}))
    assert lines(
        post_json(
            client, f"{base}/ask", {"query": "Question 5?", "known_at": "2024-05-01T00:00:00Z"}
        )
    )
    texts = [q["text"] for q in client.get(f"{base}/questions").json()]
    # Newest first; asking again moves a question up instead of repeating it, unless its
    # moments differ; the oldest fall off.
    assert texts[:3] == ["Question 5?", "Question 5?", "Question 20?"]
    # 21 recorded (0 fell off), 5 moved up, 5 at another moment (1 fell off).
    assert len(texts) == 20 and texts[-1] == "Question 2?" and texts.count("Question 5?") == 2
    assert "Question 1?" not in texts and "Question 0?" not in texts
    assert Question.objects.filter(user=user, tenant=tenant).count() == 20
    assert [q["text"] for q in client.get(f"/api/v1/t/{other.slug}/questions").json()] == [
        "Elsewhere?"
    ]


def read_lines(url: str, token: str, body: dict[str, Any]) -> list[tuple[float, dict[str, Any]]]:
    """POST over a real socket; each line with the moment it arrived."""
    parts = urlsplit(url)
    connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=30)
    connection.request(
        "POST",
        parts.path,
        json.dumps(body),
        {"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
    )
    response = connection.getresponse()
    assert response.status == 200 and response.getheader("Content-Type") == "application/x-ndjson"
    got = []
    while line := response.readline():
        got.append((time.monotonic(), json.loads(line)))
    connection.close()
    return got


@pytest.mark.slow
def test_each_line_leaves_the_server_as_it_is_written(team, model, tmp_path, member) -> None:
    tenant = team.tenant
    model.on_chat(
        lambda body: (
            {"high_level": [], "low_level": ["Alice"]}
            if not body.get("stream")
            else Reply(pieces=["Alice ", "works at ", "Beta Inc [S1]."], pause=0.6)
        )
    )
    _, token = services.token_create(user=member(tenant, Role.VIEWER), name="stream")
    env = server_env(
        tmp_path, OPENAI_BASE_URL=model.base_url, OPENAI_API_KEY="test", KG_LLM_MAX_RETRIES="0"
    )
    with serving(env, tmp_path / "web.log") as url:
        got = read_lines(f"{url}/api/v1/t/{tenant.slug}/ask", token, {"query": QUESTION})
    assert [line["type"] for _, line in got] == ["sources", "delta", "delta", "delta", "done"]
    times = [at for at, _ in got]
    # The model pauses 0.6 s between pieces: the server passes each on as it comes, not
    # all at the end.
    assert times[2] - times[1] > 0.4 and times[3] - times[2] > 0.4, times
    assert times[1] - times[0] >= 0 and times[4] - times[3] < 0.4
