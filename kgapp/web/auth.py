"""API authentication: a bearer token (scripts) or the browser session (with CSRF)."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import User
from django.http import HttpRequest
from ninja.security import APIKeyHeader, HttpBearer, django_auth

from tenants.services import token_authenticate


class AuthenticatedHttpRequest(HttpRequest):
    """The request of a view that only signed-in users reach (the API's auth, or
    login_required, or the admin's permission check): its user is a User. An annotation
    only; Django passes its own request object."""

    user: User


class BearerToken(HttpBearer):
    """`Authorization: Bearer kg_<prefix>_<secret>`."""

    def authenticate(self, request: HttpRequest, token: str) -> Any:
        return _authenticated(request, token)


class HeaderToken(APIKeyHeader):
    """`X-API-Key: kg_<prefix>_<secret>`, for clients that cannot set Authorization."""

    param_name = "X-API-Key"

    def authenticate(self, request: HttpRequest, key: str | None) -> Any:
        return _authenticated(request, key) if key else None


class TokenRefused(Exception):
    """A token was sent and is not valid: the request is refused (401) whatever else it
    carries, never read as a browser session's (whose CSRF check would answer instead)."""


def _authenticated(request: HttpRequest, raw: str) -> Any:
    """The token's user, who becomes the request's; the token's public prefix is kept
    as `request.api_token` (rate limits count per token)."""
    user = token_authenticate(raw)
    if user is None:
        raise TokenRefused(
            "The API token is not valid: it was revoked, or is mistyped. Create a new one"
            " with POST /api/v1/tokens from a signed-in session (the API docs at /api/docs)."
        )
    request.user = user
    request.api_token = raw.split("_", 2)[1]  # type: ignore[attr-defined]
    return user


TOKEN_AUTH = [BearerToken(), HeaderToken()]
"""The API token, however sent (the MCP door takes nothing else)."""
API_AUTH = [*TOKEN_AUTH, django_auth]
