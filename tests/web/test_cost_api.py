"""Cost, before and after: `dry_run` uploads estimate without storing anything, jobs and
documents carry what their model calls used, `GET usage` adds it up per month; each door
stays inside its tenant."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from kgapp.graph.chunking import chunk_text
from kgapp.graph.ingest.chunk import CHUNK_OVERLAP, CHUNK_TOKENS
from kgapp.graph.llm.prices import DEFAULT_PRICES
from tenants.models import Role
from tenants.wiring import tenant_graph
from tests.llm_fixtures import works_at

pytestmark = pytest.mark.django_db(transaction=True)

STAFF = b"# Staff\n\nCarol works at Initech. Dave works at Initech.\n"


def long_text(paragraphs: int) -> bytes:
    return "\n\n".join(
        f"Paragraph {i}: Person{i} moved to City{i} in {1990 + i % 30} and joined Company{i} "
        "as an engineer, where the team built bridges, tunnels and railway stations."
        for i in range(paragraphs)
    ).encode()


extraction = works_at("Carol", "Initech")


def served_tokens(text: str) -> int:
    """How harness/llm_server.py counts tokens (what its `usage` reports)."""
    return max(1, len(text) // 4) if text else 0


@pytest.fixture
def editor(make_tenant, member, token_client):
    tenant = make_tenant()
    return tenant, token_client(member(tenant, Role.EDITOR))


@pytest.fixture
def with_model(scripted_llm, settings):
    scripted_llm.on_chat(extraction)
    settings.OPENAI_BASE_URL, settings.OPENAI_API_KEY = scripted_llm.base_url, "test"
    settings.OPENAI_MODEL = "gpt-4o-mini"
    return scripted_llm


def dry_run(client, tenant, *files, value="true"):
    return client.post(f"/api/v1/t/{tenant.slug}/documents?dry_run={value}", {"files": list(files)})


def assert_nothing_stored(client, tenant) -> None:
    base = f"/api/v1/t/{tenant.slug}"
    assert client.get(f"{base}/documents").json() == []
    assert client.get(f"{base}/jobs").json() == []
    counts = client.get(f"{base}/").json()["counts"]
    assert counts["documents"] == 0 and counts["episodes"] == 0


def test_dry_run_offline_counts_chunks_and_stores_nothing(editor) -> None:
    tenant, client = editor
    text = long_text(60)
    answer = dry_run(
        client, tenant, SimpleUploadedFile("long.txt", text), SimpleUploadedFile("staff.md", STAFF)
    )
    assert answer.status_code == 200, answer.content
    body = answer.json()
    chunks = len(chunk_text(text.decode(), max_tokens=CHUNK_TOKENS, overlap_tokens=CHUNK_OVERLAP))
    assert chunks > 1
    assert body["model"] is None
    assert [f["file_name"] for f in body["files"]] == ["long.txt", "staff.md"]
    assert [f["chunks"] for f in body["files"]] == [chunks, 1]
    assert body["total"] == {
        "chunks": chunks + 1,
        "calls": 0,
        "input_tokens": 0,
        "output_tokens": 0,
        "cost_usd": 0.0,
    }
    assert body["needs_confirmation"] is False
    assert_nothing_stored(client, tenant)


def test_dry_run_with_a_model_estimates_calls_tokens_and_cost(editor, with_model, settings) -> None:
    tenant, client = editor
    settings.CONFIRM_ABOVE_TOKENS = 1000
    text = long_text(60)
    body = dry_run(client, tenant, SimpleUploadedFile("long.txt", text)).json()
    (one,) = body["files"]
    assert body["model"] == "gpt-4o-mini" and one["chunks"] > 1
    # One extraction call per chunk, one resolution call for every chunk after the first.
    assert one["calls"] == 2 * one["chunks"] - 1
    assert one["input_tokens"] > one["chunks"] * CHUNK_TOKENS // 2
    price = DEFAULT_PRICES["gpt-4o-mini"]
    expected = (one["input_tokens"] * price.input + one["output_tokens"] * price.output) / 1e6
    assert one["cost_usd"] == pytest.approx(expected)
    assert body["total"]["input_tokens"] == one["input_tokens"]
    assert body["confirm_above_tokens"] == 1000 and body["needs_confirmation"] is True
    assert with_model.chat_requests() == []  # estimating asks the model nothing
    assert_nothing_stored(client, tenant)
    # A model the price table lacks: the cost is unknown, not free.
    settings.OPENAI_MODEL = "my-local-llama"
    unknown = dry_run(client, tenant, SimpleUploadedFile("long.txt", text)).json()
    assert unknown["files"][0]["cost_usd"] is None and unknown["total"]["cost_usd"] is None
    assert unknown["files"][0]["calls"] == one["calls"]


def test_dry_run_refuses_bad_input_with_a_reason(editor) -> None:
    tenant, client = editor
    bad = dry_run(client, tenant, SimpleUploadedFile("staff.md", STAFF), value="maybe")
    assert bad.status_code == 422 and "dry_run" in bad.json()["detail"]
    archive = dry_run(client, tenant, SimpleUploadedFile("a.zip", b"PK\x03\x04rest"))
    assert 400 <= archive.status_code < 500 and "a.zip" in archive.json()["detail"]
    assert_nothing_stored(client, tenant)


def estimate(client, tenant, *files):
    return client.post(f"/api/v1/t/{tenant.slug}/documents/estimate", {"files": list(files)})


def test_the_estimate_route_answers_what_dry_run_does_and_stores_nothing(
    editor, make_tenant, member, token_client
) -> None:
    tenant, client = editor
    text = long_text(60)
    files = [("long.txt", text), ("staff.md", STAFF)]
    answer = estimate(client, tenant, *(SimpleUploadedFile(n, d) for n, d in files))
    assert answer.status_code == 200, answer.content
    old = dry_run(client, tenant, *(SimpleUploadedFile(n, d) for n, d in files))
    assert answer.json() == old.json()
    assert [f["file_name"] for f in answer.json()["files"]] == ["long.txt", "staff.md"]
    assert_nothing_stored(client, tenant)
    # The files are checked as an upload checks them; a viewer may not estimate.
    archive = estimate(client, tenant, SimpleUploadedFile("a.zip", b"PK\x03\x04rest"))
    assert 400 <= archive.status_code < 500 and "a.zip" in archive.json()["detail"]
    assert estimate(client, tenant).status_code == 422
    viewer = token_client(member(tenant, Role.VIEWER))
    assert estimate(viewer, tenant, SimpleUploadedFile("staff.md", STAFF)).status_code == 403
    stranger = make_tenant()
    refused = estimate(client, stranger, SimpleUploadedFile("staff.md", STAFF))
    assert refused.status_code == 404
    assert_nothing_stored(client, tenant)


def test_a_job_reports_its_usage_per_model_and_the_month_adds_it_up(
    editor, with_model, eager
) -> None:
    tenant, client = editor
    base = f"/api/v1/t/{tenant.slug}"
    empty = client.get(f"{base}/usage?months=2").json()
    month = f"{datetime.now(UTC):%Y-%m}"
    assert [m["month"] for m in empty][0] == month and len(empty) == 2
    assert empty[0]["calls"] == 0 and empty[0]["cost_usd"] == 0

    upload = client.post(f"{base}/documents", {"files": [SimpleUploadedFile("staff.md", STAFF)]})
    assert upload.status_code == 202, upload.content
    (queued,) = upload.json()
    job = client.get(f"{base}/jobs/{queued['job_id']}").json()
    assert job["status"] == "completed", job
    requests = with_model.chat_requests()
    prompt = sum(served_tokens("".join(m["content"] for m in r["messages"])) for r in requests)
    completion = sum(served_tokens(json.dumps(extraction(r))) for r in requests)
    (row,) = job["usage"]
    assert row["model"] == "gpt-4o-mini" and row["calls"] == len(requests) >= 1
    assert row["input_tokens"] == prompt and row["output_tokens"] == completion
    price = DEFAULT_PRICES["gpt-4o-mini"]
    assert row["cost_usd"] == pytest.approx(
        (prompt * price.input + completion * price.output) / 1e6
    )
    assert job["counts"]["llm_calls"] == row["calls"]

    (document,) = client.get(f"{base}/documents").json()
    assert document["usage"] == job["usage"]
    assert client.get(f"{base}/documents/{queued['document_id']}").json()["usage"] == job["usage"]
    # The jobs list (the uploads page's per-file rows) names the file.
    (listed,) = client.get(f"{base}/jobs").json()
    assert listed["file_name"] == "staff.md" and listed["usage"] == job["usage"]

    months = client.get(f"{base}/usage?months=1").json()
    assert months == [
        {
            "month": month,
            "jobs": 1,
            "calls": row["calls"],
            "input_tokens": prompt,
            "output_tokens": completion,
            "cost_usd": pytest.approx(row["cost_usd"]),
            "unpriced_models": [],
        }
    ]
    assert client.get(f"{base}/usage?months=0").status_code == 422


def test_usage_and_dry_run_stay_inside_their_tenant(make_tenant, member, token_client) -> None:
    tenant, other = make_tenant(), make_tenant()
    stranger = token_client(member(other, Role.OWNER))
    viewer = token_client(member(tenant, Role.VIEWER))
    tenant_graph(tenant).query(
        "CREATE job CONTENT {kind: 'ingest_document', status: 'completed', usage: "
        "[{model: 'gpt-4o', calls: 3, input_tokens: 9000, output_tokens: 700, cost_usd: 0.0295}]}"
    )
    assert stranger.get(f"/api/v1/t/{tenant.slug}/usage").status_code == 404
    assert dry_run(stranger, tenant, SimpleUploadedFile("staff.md", STAFF)).status_code == 404
    # The stranger's own tenant shows none of it.
    assert stranger.get(f"/api/v1/t/{other.slug}/usage?months=1").json()[0]["calls"] == 0
    # A viewer reads usage but may not upload, not even a dry run.
    assert viewer.get(f"/api/v1/t/{tenant.slug}/usage?months=1").json()[0]["calls"] == 3
    assert dry_run(viewer, tenant, SimpleUploadedFile("staff.md", STAFF)).status_code == 403
