"""Deploy checks: `manage.py check --deploy` is clean with the production settings; HTTPS,
HSTS, secure cookies and X-Forwarded-Proto only behind a trusted proxy; a
Content-Security-Policy on every page, whose HTML has no inline script, handler or
style; and `make run`'s settings show plain error pages, never a traceback."""

from __future__ import annotations

import json
import os
import re
import secrets
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from django.conf import settings
from django.test import Client

from tenants.models import Role

pytestmark = pytest.mark.django_db(transaction=True)

HOST = "kg.example.com"


def django_env(tmp_path: Path, settings_module: str, **extra: str) -> dict[str, str]:
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("DJANGO_", "KG_RATE")) and key != "REDIS_URL"
    }
    env.update(
        DJANGO_SETTINGS_MODULE=settings_module,
        KG_VAR_DIR=str(tmp_path / "var"),
        SURREAL_URL=settings.SURREAL_URL,
        PYTHONPATH=str(settings.BASE_DIR),
    )
    if settings_module.endswith("production"):
        env.update(DJANGO_SECRET_KEY=secrets.token_urlsafe(60), DJANGO_ALLOWED_HOSTS=HOST)
    env.update(extra)
    return env


def run(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        args, env=env, cwd=settings.BASE_DIR, capture_output=True, text=True, timeout=180
    )


def in_django(code: str, env: dict[str, str]) -> dict:
    """Run `code` in a fresh process with these settings; it prints one JSON object."""
    prelude = "import django, json\ndjango.setup()\nfrom django.test import Client\n"
    result = run([sys.executable, "-c", prelude + textwrap.dedent(code)], env)
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


# --- production ------------------------------------------------------------------------


def test_check_deploy_is_clean_with_production_settings(tmp_path) -> None:
    check = [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"]
    clean = run(check, django_env(tmp_path, "kgapp.settings.production"))
    assert clean.returncode == 0, clean.stdout + clean.stderr
    assert "System check identified no issues (0 silenced)" in clean.stdout

    # The check does catch what it should: weakened settings fail it.
    weak = run(
        check,
        django_env(
            tmp_path,
            "kgapp.settings.production",
            DJANGO_HSTS_SECONDS="0",
            DJANGO_SECURE_COOKIES="false",
        ),
    )
    assert weak.returncode != 0
    for warning in ("security.W004", "security.W012", "security.W016"):
        assert warning in weak.stdout + weak.stderr
    unset = run(check, django_env(tmp_path, "kgapp.settings.production", DJANGO_SECRET_KEY=""))
    assert unset.returncode != 0 and "DJANGO_SECRET_KEY must be set" in unset.stderr


PROBE = f"""
    client = Client(HTTP_HOST="{HOST}")
    page = client.get("/accounts/login/", secure=True)
    plain = client.get("/accounts/login/")
    forged = client.get("/accounts/login/", HTTP_X_FORWARDED_PROTO="https")
    health = client.get("/api/v1/health")
    cookie = page.cookies["csrftoken"]
    print(json.dumps({{
        "status": page.status_code, "headers": dict(page.headers),
        "cookie_secure": bool(cookie["secure"]), "cookie_samesite": cookie["samesite"],
        "plain": [plain.status_code, plain.get("Location")],
        "forged": forged.status_code, "health": health.status_code,
    }}))
"""


def test_production_answers_over_https_only_with_hsts_csp_and_secure_cookies(tmp_path) -> None:
    seen = in_django(PROBE, django_env(tmp_path, "kgapp.settings.production"))
    assert seen["status"] == 200
    headers = seen["headers"]
    assert headers["Strict-Transport-Security"] == "max-age=31536000; includeSubDomains; preload"
    csp = headers["Content-Security-Policy"]
    directives = {d.strip() for d in csp.split(";")}  # in no particular order
    assert "script-src 'self'" in directives
    assert "unsafe-inline" not in csp and "unsafe-eval" not in csp
    assert "frame-ancestors 'none'" in directives and "object-src 'none'" in directives
    assert headers["X-Content-Type-Options"] == "nosniff" and headers["X-Frame-Options"] == "DENY"
    assert seen["cookie_secure"] and seen["cookie_samesite"] == "Lax"
    assert seen["plain"] == [301, f"https://{HOST}/accounts/login/"]
    # No trusted proxy: a client's own X-Forwarded-Proto is not believed.
    assert seen["forged"] == 301
    assert seen["health"] != 301  # probes inside the deployment speak plain HTTP


def test_x_forwarded_proto_is_believed_only_behind_a_trusted_proxy(tmp_path) -> None:
    env = django_env(tmp_path, "kgapp.settings.production", DJANGO_TRUSTED_PROXY="true")
    assert in_django(PROBE, env)["forged"] == 200
    header = in_django(
        "from django.conf import settings\n"
        "print(json.dumps({'header': getattr(settings, 'SECURE_PROXY_SSL_HEADER', None)}))",
        django_env(tmp_path, "kgapp.settings.production"),
    )
    assert header == {"header": None}


# --- make run (kgapp.settings.dev) ------------------------------------------------------


def test_make_run_shows_plain_error_pages_and_still_serves_static_files(tmp_path) -> None:
    (tmp_path / "boom_urls.py").write_text(
        textwrap.dedent("""
        from django.urls import path
        from kgapp.urls import urlpatterns as site

        def boom(request):
            raise RuntimeError("SECRET-DETAIL-THAT-MUST-NOT-LEAK")

        urlpatterns = [path("boom", boom), *site]
    """)
    )
    seen = in_django(
        f"""
        import sys
        sys.path.insert(0, {str(tmp_path)!r})
        from django.conf import settings
        from django.test import override_settings
        client = Client(raise_request_exception=False, HTTP_HOST="127.0.0.1:8000")
        missing = client.get("/no/such/page")
        with override_settings(ROOT_URLCONF="boom_urls"):
            broken = client.get("/boom")
        css = client.get("/static/app/css/app.css")
        cytoscape = client.get("/static/vendor/cytoscape/cytoscape.min.js")
        print(json.dumps({{
            "debug": settings.DEBUG,
            "missing": [missing.status_code, missing.content.decode()],
            "broken": [broken.status_code, broken.content.decode()],
            "static": [css.status_code, cytoscape.status_code],
        }}))
    """,
        django_env(tmp_path, "kgapp.settings.dev"),
    )
    assert seen["debug"] is False
    status, body = seen["missing"]
    assert status == 404 and "Not found" in body
    status, body = seen["broken"]
    assert status == 500 and "Something went wrong" in body
    for _, body in (seen["missing"], seen["broken"]):
        for leak in ("Traceback", "SECRET-DETAIL", "URLconf", "DEBUG = True", "SECRET_KEY"):
            assert leak not in body
    assert seen["static"] == [200, 200]


# --- CSP on every page ------------------------------------------------------------------

INLINE = {
    "inline script": re.compile(
        r"<script\b(?![^>]*\bsrc=)(?![^>]*type=\"application/json\")[^>]*>", re.I
    ),
    "event handler attribute": re.compile(r"<[a-z][^>]*\son[a-z]+\s*=", re.I),
    "style attribute": re.compile(r"<[a-z][^>]*\sstyle\s*=", re.I),
    "style element": re.compile(r"<style\b", re.I),
    "javascript: URL": re.compile(r"javascript:", re.I),
}


def test_every_page_has_a_csp_and_no_inline_script_or_style(
    make_tenant, member, make_user, token_client
) -> None:
    tenant = make_tenant(name="CSP")
    editor = token_client(member(tenant, Role.EDITOR))
    fact = editor.post(
        f"/api/v1/t/{tenant.slug}/facts",
        data=json.dumps(
            {
                "source": {"name": "Ann", "type": "Person"},
                "relation": "WORKS_AT",
                "target": {"name": "Acme", "type": "Organization"},
                "valid_at": "2024-01-01T00:00:00Z",
            }
        ),
        content_type="application/json",
    )
    assert fact.status_code == 201, fact.content
    staff = make_user(staff=True)
    staff.is_superuser = True
    staff.save()
    browser = Client()
    browser.force_login(staff)
    slug = tenant.slug
    pages = [
        "/",
        f"/t/{slug}/",
        f"/t/{slug}/explore",
        f"/t/{slug}/uploads",
        "/api/docs",
        "/admin/",
        "/admin/graph/",
        f"/admin/graph/{slug}/facts/",
        f"/admin/graph/{slug}/facts/{fact.json()['id']}/",
        f"/admin/graph/{slug}/dedup/",
        f"/admin/graph/{slug}/audit/",
        "/admin/tenants/tenant/",
        f"/admin/tenants/tenant/{tenant.pk}/change/",
        "/admin/tenants/membership/add/",
        "/no/such/page",
    ]
    checked = 0
    for url in pages:
        response = browser.get(url)
        assert response.status_code in (200, 404), (url, response.status_code)
        csp = response["Content-Security-Policy"]
        directives = [d.strip() for d in csp.split(";")]  # in no fixed order
        assert "script-src 'self'" in directives and "unsafe-inline" not in csp, url
        html = response.content.decode()
        for what, pattern in INLINE.items():
            found = pattern.search(html)
            assert found is None, (
                f"{url}: {what}: {found and html[found.start() : found.start() + 120]}"
            )
        checked += 1
    assert checked == len(pages)
    login = Client().get("/accounts/login/")
    assert "Content-Security-Policy" in login.headers
    assert not any(p.search(login.content.decode()) for p in INLINE.values())
