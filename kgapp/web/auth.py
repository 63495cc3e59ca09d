"""API authentication: a bearer token (scripts) or the browser session (with CSRF)."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest
from ninja.security import APIKeyHeader, HttpBearer, django_auth

from tenants.services import token_authenticate


class BearerToken(HttpBearer):
    """`Authorization: Bearer kg_<prefix>_<secret>`."""

    def authenticate(self, request: HttpRequest, token: str) -> Any:
        user = token_authenticate(token)
        if user is not None:
            request.user = user
        return user


class HeaderToken(APIKeyHeader):
    """`X-API-Key: kg_<prefix>_<secret>`, for clients that cannot set Authorization."""

    param_name = "X-API-Key"

    def authenticate(self, request: HttpRequest, key: str | None) -> Any:
        user = token_authenticate(key) if key else None
        if user is not None:
            request.user = user
        return user


API_AUTH = [BearerToken(), HeaderToken(), django_auth]
