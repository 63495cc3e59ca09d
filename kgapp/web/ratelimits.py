"""Rate limits on login, token creation, upload and query: fixed windows counted in the
cache (Redis when REDIS_URL is set) by django-ratelimit. `settings.RATE_LIMITS` maps a
scope to "N/period" (s, m, h or d, optionally with a multiple: "10/15m"); a scope with
no rate is not limited. Over a limit: 429 with Retry-After (seconds to the window's end).

- API scopes count each request against its user (every token and the browser session
  together) and, for a token, against that token too (`<scope>_token` may set the
  token's rate apart).
- Login counts every attempt against the username tried and the client's address; once
  over, even the right password is refused until the window ends."""

from __future__ import annotations

import logging
import re
from typing import Any

from django.conf import settings
from django.core import checks
from django.http import HttpRequest, HttpResponse
from django_ratelimit.core import get_usage
from redis.exceptions import RedisError

from tenants.middleware import error_page

logger = logging.getLogger(__name__)

_RATE = re.compile(r"^(\d+)/(\d*)([smhd])$")
_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400}
_UNITS = {1: "second", 60: "minute", 3600: "hour", 86400: "day"}


class RateLimited(Exception):
    """Over a rate limit; the edge answers 429 with Retry-After."""

    def __init__(self, detail: str, retry_after: int):
        super().__init__(detail)
        self.retry_after = retry_after


def parse_rate(rate: str) -> tuple[int, int]:
    """'10/15m' -> (10, 900): requests allowed per that many seconds."""
    match = _RATE.fullmatch(rate.strip())
    if match is None:
        raise ValueError(f"{rate!r} is not a rate: write N/period, e.g. 30/m or 10/15m")
    count, multiple, unit = match.groups()
    return int(count), int(multiple or 1) * _SECONDS[unit]


def check(request: HttpRequest, scope: str) -> None:
    """Count an API request of `scope` for its caller; RateLimited when over a limit."""
    rate = settings.RATE_LIMITS.get(scope)
    if not rate:
        return
    buckets = [(scope, f"user:{request.user.pk}", rate, "per user")]
    token = getattr(request, "api_token", None)
    if token:
        token_rate = settings.RATE_LIMITS.get(f"{scope}_token") or rate
        buckets.append((scope, f"token:{token}", token_rate, "per token"))
    _enforce(request, buckets, f"Too many {scope.replace('_', ' ')} requests")


def login_refusal(request: HttpRequest) -> HttpResponse | None:
    """A 429 page when a login POST is over its limits, else None (the login goes on)."""
    if request.method != "POST":
        return None
    username = str(request.POST.get("username", "")).strip().casefold()[:150]
    buckets = []
    if settings.RATE_LIMITS.get("login"):
        buckets.append(("login", f"name:{username}", settings.RATE_LIMITS["login"], "per account"))
    if settings.RATE_LIMITS.get("login_ip"):
        buckets.append(
            (
                "login_ip",
                f"ip:{client_address(request)}",
                settings.RATE_LIMITS["login_ip"],
                "per address",
            )
        )
    try:
        _enforce(request, buckets, "Too many login attempts")
    except RateLimited as error:
        response = error_page(request, 429, str(error))
        response["Retry-After"] = str(error.retry_after)
        return response
    return None


def client_address(request: HttpRequest) -> str:
    """The client's address: the connection's, or behind a trusted proxy
    (DJANGO_TRUSTED_PROXY) the one that proxy appended to X-Forwarded-For."""
    if settings.TRUSTED_PROXY:
        forwarded = request.META.get("HTTP_X_FORWARDED_FOR", "").split(",")[-1].strip()
        if forwarded:
            return forwarded
    return str(request.META.get("REMOTE_ADDR") or "unknown")


@checks.register()
def rates_are_valid(**_kwargs: Any) -> list[checks.CheckMessage]:
    """`manage.py check` (and start-up) names a malformed rate in KG_RATE_LIMITS."""
    problems: list[checks.CheckMessage] = []
    for scope, rate in settings.RATE_LIMITS.items():
        try:
            if rate:
                parse_rate(rate)
        except ValueError as error:
            problems.append(checks.Error(f"RATE_LIMITS[{scope!r}]: {error}", id="kgapp.E001"))
    return problems


def _enforce(request: HttpRequest, buckets: list[tuple[str, str, str, str]], what: str) -> None:
    waits = []
    for group, value, rate, per in buckets:
        limit = parse_rate(rate)
        wait = _hit(request, group, value, limit)
        if wait is not None:
            waits.append((wait, f"{limit[0]} per {_period(limit[1])} {per}"))
    if waits:
        wait, allowed = max(waits)
        raise RateLimited(f"{what}: {allowed} allowed; retry in {wait} s.", wait)


def _hit(request: HttpRequest, group: str, value: str, limit: tuple[int, int]) -> int | None:
    """Count one request in a bucket; the seconds to wait when it is over its limit."""
    try:
        usage = get_usage(
            request, group=group, key=lambda _group, _request: value, rate=limit, increment=True
        )
    except (RedisError, OSError) as error:
        # The cache is down: limits lapse rather than every caller being refused.
        logger.warning("rate limit %s not counted: %s", group, error)
        return None
    if usage is None or not usage["should_limit"]:
        return None
    return max(1, int(usage["time_left"]))


def _period(seconds: int) -> str:
    for size in (86400, 3600, 60, 1):
        if seconds % size == 0:
            count = seconds // size
            return _UNITS[size] if count == 1 else f"{count} {_UNITS[size]}s"
    return f"{seconds} seconds"
