"""Rate limits on login, token creation, upload and query (kgapp/web/ratelimits.py): the
request past a limit answers 429 with Retry-After and a detail a person can act on;
counted per user and per token, in Redis when configured. Limits are per hour so that no
fixed window ends in the middle of a test."""

from __future__ import annotations

import json
import uuid

import pytest
import redis
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client

from kgapp.web import ratelimits
from tenants.models import ApiToken, Role

pytestmark = pytest.mark.django_db(transaction=True)

REDIS_URL = "redis://127.0.0.1:6379/0"


@pytest.fixture
def limits(settings):
    """limits(**rates): only these limits, counted under a prefix of this test alone."""
    settings.RATELIMIT_CACHE_PREFIX = f"rl-test-{uuid.uuid4().hex}:"

    def set_limits(**rates: str) -> None:
        settings.RATE_LIMITS = rates

    return set_limits


def assert_limited(response, *words: str, within: int) -> str:
    assert response.status_code == 429, response.content[:500]
    wait = int(response["Retry-After"])
    assert 1 <= wait <= within
    text = (
        response.json()["detail"]
        if response["Content-Type"].startswith("application/json")
        else response.content.decode()
    )
    assert f"retry in {wait} s" in text
    for word in words:
        assert word in text
    return text


def query(client: Client, slug: str):
    return client.post(
        f"/api/v1/t/{slug}/query",
        data=json.dumps({"query": "who works where", "mode": "naive"}),
        content_type="application/json",
    )


def logged_in(client: Client) -> bool:
    return "_auth_user_id" in client.session


# --- login -------------------------------------------------------------------------------


def test_login_locks_the_account_then_even_the_right_password_waits(limits, make_user) -> None:
    limits(login="3/h", login_ip="100/h")
    alice, bob = make_user(), make_user()
    client = Client()
    for _ in range(3):
        wrong = client.post("/accounts/login/", {"username": alice.username, "password": "nope"})
        assert wrong.status_code == 200 and b"didn't match" in wrong.content
    right = client.post(
        "/accounts/login/", {"username": alice.username, "password": "pw-" + alice.username}
    )
    text = assert_limited(right, "Too many login attempts", "3 per hour per account", within=3600)
    assert "<h1>429</h1>" in text and not logged_in(client)
    # The same account through the admin's login, and with its name in another case.
    admin = Client().post(
        "/admin/login/", {"username": alice.username.upper(), "password": "pw-" + alice.username}
    )
    assert_limited(admin, "per account", within=3600)
    # Another account is not locked.
    other = Client()
    ok = other.post(
        "/accounts/login/", {"username": bob.username, "password": "pw-" + bob.username}
    )
    assert ok.status_code == 302 and logged_in(other)


def test_login_is_limited_per_client_address(limits, make_user, settings) -> None:
    limits(login="100/h", login_ip="4/h")
    carol = make_user()

    def attempt(address: str, **headers: str):
        return Client(REMOTE_ADDR=address, **headers).post(
            "/accounts/login/", {"username": f"guess-{uuid.uuid4().hex[:6]}", "password": "x"}
        )

    for _ in range(4):
        assert attempt("203.0.113.7").status_code == 200
    assert_limited(attempt("203.0.113.7"), "per address", within=3600)
    # A forged X-Forwarded-For does not escape the limit when no proxy is trusted...
    assert attempt("203.0.113.7", HTTP_X_FORWARDED_FOR="198.51.100.1").status_code == 429
    assert attempt("203.0.113.8").status_code == 200
    # ...behind a trusted proxy the address is the one the proxy appended.
    settings.TRUSTED_PROXY = True
    via_proxy = {"HTTP_X_FORWARDED_FOR": "203.0.113.7"}
    assert attempt("10.0.0.2", **via_proxy).status_code == 429
    assert attempt("10.0.0.2", HTTP_X_FORWARDED_FOR="203.0.113.7, 198.51.100.9").status_code == 200
    right = Client(REMOTE_ADDR="10.0.0.2", HTTP_X_FORWARDED_FOR="198.51.100.9").post(
        "/accounts/login/", {"username": carol.username, "password": "pw-" + carol.username}
    )
    assert right.status_code == 302


# --- token creation, upload, query -----------------------------------------------------


def test_token_creation_is_limited_per_user(limits, make_user, token_client) -> None:
    limits(token_create="2/h")
    dave = make_user()
    browser = Client()
    browser.force_login(dave)
    body = {"data": json.dumps({"name": "ci"}), "content_type": "application/json"}
    assert [browser.post("/api/v1/tokens", **body).status_code for _ in range(2)] == [201, 201]
    assert_limited(
        browser.post("/api/v1/tokens", **body),
        "Too many token create requests",
        "2 per hour per user",
        within=3600,
    )
    # A token cannot create tokens at all (tests/tenants/test_api_access.py).
    assert token_client(dave).post("/api/v1/tokens", **body).status_code == 403
    assert ApiToken.objects.filter(user=dave, name="ci").count() == 2
    other = Client()
    other.force_login(make_user())
    assert other.post("/api/v1/tokens", **body).status_code == 201


def test_uploads_are_limited(limits, make_tenant, member, token_client, eager) -> None:
    limits(upload="2/h", estimate="3/h")
    tenant = make_tenant()
    client = token_client(member(tenant, Role.EDITOR))

    def upload(n: int, query: str = ""):
        note = SimpleUploadedFile(f"note{n}.txt", f"Erin {n} joined Acme Corp in 2024.".encode())
        return client.post(f"/api/v1/t/{tenant.slug}/documents{query}", {"files": [note]})

    # Estimates (the uploads page asks for one before each file) have their own budget.
    assert [upload(n, "?dry_run=true").status_code for n in range(3)] == [200, 200, 200]
    assert_limited(
        upload(3, "?dry_run=true"), "Too many estimate requests", "3 per hour", within=3600
    )
    assert [upload(n).status_code for n in range(2)] == [202, 202]
    assert_limited(upload(3), "Too many upload requests", "2 per hour", within=3600)
    assert len(client.get(f"/api/v1/t/{tenant.slug}/documents").json()) == 2


def test_queries_are_limited_per_token_and_per_user(
    limits, make_tenant, member, token_client
) -> None:
    limits(query="3/h", query_token="2/h")
    tenant = make_tenant()
    frank = member(tenant)
    first, second = token_client(frank), token_client(frank)
    assert [query(first, tenant.slug).status_code for _ in range(2)] == [200, 200]
    assert_limited(
        query(first, tenant.slug), "Too many query requests", "2 per hour per token", within=3600
    )
    # Another token of Frank's has its own 2, but Frank as a whole has 3 (the refused
    # request above counted too).
    assert_limited(query(second, tenant.slug), "3 per hour per user", within=3600)
    assert query(token_client(member(tenant)), tenant.slug).status_code == 200


def test_limits_are_counted_in_redis_when_configured(
    limits, settings, make_tenant, member, token_client
) -> None:
    limits(query="1/h")
    settings.CACHES = {
        "default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": REDIS_URL}
    }
    tenant = make_tenant()
    client = token_client(member(tenant))
    assert query(client, tenant.slug).status_code == 200
    assert_limited(query(client, tenant.slug), "1 per hour", within=3600)
    # The buckets live in Redis (Django's key: ":1:<prefix><digest>"), shared by every process.
    counters = redis.Redis.from_url(REDIS_URL).keys(f"*{settings.RATELIMIT_CACHE_PREFIX}*")
    assert len(counters) == 2  # the user's and the token's


def test_a_cache_that_is_down_does_not_lock_everyone_out(
    limits, settings, make_tenant, member, token_client
) -> None:
    limits(query="1/h")
    settings.CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": "redis://127.0.0.1:1/0",
        }
    }
    tenant = make_tenant()
    client = token_client(member(tenant))
    assert [query(client, tenant.slug).status_code for _ in range(3)] == [200, 200, 200]


def test_a_malformed_rate_is_named_by_manage_py_check(settings) -> None:
    settings.RATE_LIMITS = {"query": "lots", "upload": "30/m", "login": ""}
    (problem,) = ratelimits.rates_are_valid()
    assert problem.id == "kgapp.E001"
    assert "RATE_LIMITS['query']" in problem.msg and "N/period" in problem.msg
