"""The API underneath: where and how to call it (`LLMConfig`), and the one retry
policy. The `openai` client's own retries are off, so that this module alone decides
what is retried, how long to wait, and which typed `LLMError` a failure becomes."""

from __future__ import annotations

import asyncio
import email.utils
import math
import random
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TypeVar

import openai

from kgapp.graph.llm.errors import LLMError, LLMQuotaExceeded, LLMUnavailable

R = TypeVar("R")

# Error codes (or types) that mean "no money left": waiting will not fix them.
_QUOTA_CODES = frozenset({"insufficient_quota", "billing_hard_limit_reached", "billing_not_active"})


@dataclass(frozen=True)
class LLMConfig:
    """Where and how to call the API. `base_url` None means OPENAI_BASE_URL or OpenAI."""

    base_url: str | None
    api_key: str | None
    model: str = "gpt-4o-mini"
    timeout: float = 60.0
    max_retries: int = 4
    backoff_base: float = 0.5
    backoff_max: float = 30.0


class Connection:
    """The `openai` client for the running event loop. httpx connection pools belong
    to the loop that opened them, and a client is used from several loops in turn (the
    graph runtime thread's, a worker's `asyncio.run` per task): it is remade when the
    loop changes."""

    def __init__(self, config: LLMConfig) -> None:
        self._config = config
        self._openai: openai.AsyncOpenAI | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    def api(self) -> openai.AsyncOpenAI:
        loop = asyncio.get_running_loop()
        if self._openai is None or self._loop is not loop:
            self._openai = openai.AsyncOpenAI(
                base_url=self._config.base_url,
                api_key=self._config.api_key or "not-needed",
                timeout=self._config.timeout,
                max_retries=0,
            )
            self._loop = loop
        return self._openai

    async def aclose(self) -> None:
        """Close the HTTP connections of the current event loop's client."""
        if self._openai is not None:
            await self._openai.close()
            self._openai = None


async def with_retries(
    request: Callable[[], Awaitable[R]],
    config: LLMConfig,
    *,
    sleep: Callable[[float], Awaitable[None]],
    retried: Callable[[], None],
) -> R:
    """`await request()`, tried again after a wait (`backoff`) while a retry may help,
    at most `config.max_retries` times; `retried` is told of each retry. A failure
    leaves as the LLMError it is."""
    attempt = 0
    while True:
        try:
            return await request()
        except openai.APIError as exc:
            fatal = _fatal_error(exc)
            if fatal is not None:
                raise fatal from exc
            if attempt >= config.max_retries:
                reason = _reason(exc, config.timeout)
                raise LLMUnavailable(f"gave up after {attempt + 1} tries: {reason}") from exc
            await sleep(backoff(attempt, exc, config))
            retried()
            attempt += 1


def stream_error(exc: openai.APIError, config: LLMConfig) -> LLMError:
    """What a failure becomes once a streamed answer has begun: it is not retried."""
    return _fatal_error(exc) or LLMUnavailable(
        f"the answer stopped: {_reason(exc, config.timeout)}"
    )


def backoff(attempt: int, exc: openai.APIError, config: LLMConfig) -> float:
    """The server's retry-after if it gave one, else exponential backoff, full jitter."""
    requested = _retry_after(exc)
    if requested is not None:
        return min(requested, config.backoff_max)
    ceiling = min(config.backoff_max, config.backoff_base * 2**attempt)
    return ceiling * random.random()


def _fatal_error(exc: openai.APIError) -> LLMError | None:
    """The error to raise at once for `exc`, or None when a retry may help."""
    if isinstance(exc, openai.APIConnectionError):  # APITimeoutError included
        return None
    if not isinstance(exc, openai.APIStatusError):
        return LLMError(f"unexpected answer from the API: {exc.message}")
    if exc.code in _QUOTA_CODES or exc.type in _QUOTA_CODES:
        return LLMQuotaExceeded(exc.message)
    status = exc.status_code
    if status in (408, 429) or status >= 500:
        return None
    if status in (401, 403, 404):
        return LLMUnavailable(f"{exc.message} (check OPENAI_API_KEY / model name)")
    return LLMError(exc.message)


def _reason(exc: openai.APIError, timeout: float) -> str:
    if isinstance(exc, openai.APITimeoutError):
        return f"no answer within {timeout}s"
    if isinstance(exc, openai.APIConnectionError):
        return f"connection failed: {exc.__cause__ or exc.message}"
    return exc.message


def _retry_after(exc: openai.APIError) -> float | None:
    """Seconds the server asked us to wait (`retry-after-ms`, then `retry-after`)."""
    if not isinstance(exc, openai.APIStatusError):
        return None
    headers = exc.response.headers
    millis = _seconds(headers.get("retry-after-ms"))
    if millis is not None:
        return millis / 1000
    value = headers.get("retry-after")
    if value is None:
        return None
    seconds = _seconds(value)
    return seconds if seconds is not None else _seconds_until(value)


def _seconds(text: str | None) -> float | None:
    try:
        value = float(text) if text is not None else math.nan
    except ValueError:
        return None
    return max(0.0, value) if math.isfinite(value) else None


def _seconds_until(http_date: str) -> float | None:
    try:
        when = email.utils.parsedate_to_datetime(http_date)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())
