"""Every LLM call of the pipeline goes through `LLMClient`: strict structured outputs,
a content-addressed cache, one retry policy and one repair attempt per answer.

The `openai` client's own retries are switched off so that this module alone decides
what is retried, how long to wait, and which typed `LLMError` a failure becomes.
"""

from __future__ import annotations

import asyncio
import copy
import email.utils
import hashlib
import json
import math
import random
import re
import time
from collections.abc import Awaitable, Callable
from dataclasses import asdict, dataclass
from typing import Any, Protocol, TypeVar

import openai
from openai.types.chat import ChatCompletion, ChatCompletionMessageParam
from openai.types.completion_usage import CompletionUsage
from pydantic import BaseModel, ValidationError

T = TypeVar("T", bound=BaseModel)
R = TypeVar("R")

MAX_ANSWER_CHARS = 200_000
MAX_ANSWER_DEPTH = 32
MAX_REPAIR_ERROR_CHARS = 2_000
EMBED_BATCH = 256

# The API's rule for response_format names; checked here so a bad task name fails
# before any request (and before it becomes part of a cache key).
_TASK_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")
# Error codes (or types) that mean "no money left": waiting will not fix them.
_QUOTA_CODES = frozenset({"insufficient_quota", "billing_hard_limit_reached", "billing_not_active"})
# Schema keywords pydantic emits that strict mode rejects ("default") or that only
# cost prompt tokens ("title").
_SCHEMA_NOISE = ("title", "default")

REPAIR_PROMPT = (
    "Your previous answer could not be used: {problem}\n"
    "Answer again with only a JSON object that matches the response schema, and nothing else."
)


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


class LLMError(Exception):
    """Base of every error the LLM boundary raises."""


class LLMUnavailable(LLMError):
    """The API did not answer (retries exhausted) or rejects our credentials or model."""


class LLMQuotaExceeded(LLMError):
    """The account is out of quota or billing is off; never retried, the job pauses."""


class LLMRefused(LLMError):
    """The model declined to answer: a refusal message or the content filter."""


class LLMInvalidAnswer(LLMError):
    """The answer did not fit the schema, even after one repair attempt."""


class _BadAnswer(Exception):
    """An answer that cannot become the schema; its text goes into the repair prompt."""


@dataclass
class LLMUsage:
    """Counters of one job, mutated by every client that shares this object."""

    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cache_hits: int = 0
    retries: int = 0

    def as_dict(self) -> dict[str, int]:
        return asdict(self)


class LLMCache(Protocol):
    """Validated answers by cache key; `put` gets the cost so a store can report savings."""

    async def get(self, key: str) -> str | None: ...

    async def put(
        self,
        key: str,
        value: str,
        *,
        task: str,
        model: str,
        prompt_tokens: int,
        completion_tokens: int,
    ) -> None: ...


class MemoryCache:
    """An in-process `LLMCache`, for tests and single processes."""

    def __init__(self) -> None:
        self.entries: dict[str, str] = {}

    async def get(self, key: str) -> str | None:
        return self.entries.get(key)

    async def put(
        self,
        key: str,
        value: str,
        *,
        task: str,
        model: str,
        prompt_tokens: int,
        completion_tokens: int,
    ) -> None:
        self.entries[key] = value


@dataclass(frozen=True)
class _Completion:
    content: str | None
    prompt_tokens: int
    completion_tokens: int


def strict_json_schema(model: type[BaseModel]) -> dict[str, Any]:
    """`model`'s JSON schema in the form OpenAI's strict structured outputs accept.

    Every object forbids extra keys and lists all its properties as required: an
    `X | None` field stays a nullable `anyOf`, and a field with a default but no null
    in its type becomes required (the model must give a value). `$defs` and bare
    `$ref`s are kept; a `$ref` with siblings (a described nested model) is inlined,
    since strict mode rejects siblings of `$ref`. Raises ValueError for free-form
    mappings (`dict[str, X]`), which strict mode cannot express.
    """
    root = model.model_json_schema()
    return _strict_node(copy.deepcopy(root), root)


def _strict_node(node: dict[str, Any], root: dict[str, Any]) -> dict[str, Any]:
    ref = node.get("$ref")
    if ref is not None and len(node) > 1:
        node = {**_resolve_ref(root, ref), **{k: v for k, v in node.items() if k != "$ref"}}
    for keyword in _SCHEMA_NOISE:
        node.pop(keyword, None)
    if "oneOf" in node:  # discriminated unions; strict mode only knows anyOf
        node["anyOf"] = node.pop("oneOf")
        node.pop("discriminator", None)
    if node.get("type") == "object":
        _strict_object(node)
    _strict_children(node, root)
    return node


def _strict_object(node: dict[str, Any]) -> None:
    if "properties" not in node:
        raise ValueError(
            "strict structured outputs cannot express a free-form mapping (dict[str, X]); "
            "use a list of key/value models instead"
        )
    node["additionalProperties"] = False
    node["required"] = list(node["properties"])


def _strict_children(node: dict[str, Any], root: dict[str, Any]) -> None:
    # Walk by keyword so that a property *named* "title" or "default" is kept.
    for keyword in ("properties", "$defs"):
        if keyword in node:
            node[keyword] = {name: _strict_node(sub, root) for name, sub in node[keyword].items()}
    for keyword in ("anyOf", "allOf", "prefixItems"):
        if keyword in node:
            node[keyword] = [_strict_node(sub, root) for sub in node[keyword]]
    if isinstance(node.get("items"), dict):
        node["items"] = _strict_node(node["items"], root)


def _resolve_ref(root: dict[str, Any], ref: str) -> dict[str, Any]:
    if not ref.startswith("#/"):
        raise ValueError(f"only local $refs are supported, got {ref!r}")
    target: Any = root
    for part in ref[2:].split("/"):
        target = target[part]
    return copy.deepcopy(target)


def _cache_key(*, model: str, task: str, system: str, user: str, schema: dict[str, Any]) -> str:
    # A JSON array keeps the parts apart: ("ab", "c") and ("a", "bc") differ.
    material = json.dumps([model, task, system, user, schema], sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(material.encode("utf-8")).hexdigest()


def _parse_answer(content: str | None, schema: type[T]) -> T:
    """The answer as `schema`, or _BadAnswer saying why not (shown to the model)."""
    if not content:
        raise _BadAnswer("the answer was empty")
    if len(content) > MAX_ANSWER_CHARS:
        raise _BadAnswer(f"the answer has {len(content)} characters, over {MAX_ANSWER_CHARS}")
    try:
        data = json.loads(content)
    except (ValueError, RecursionError) as exc:
        raise _BadAnswer(f"the answer is not valid JSON: {exc}") from exc
    if _depth(data) > MAX_ANSWER_DEPTH:
        raise _BadAnswer(f"the answer is nested deeper than {MAX_ANSWER_DEPTH} levels")
    try:
        return schema.model_validate(data)
    except ValidationError as exc:
        raise _BadAnswer(f"the answer does not match the schema: {exc}") from exc


def _depth(value: Any) -> int:
    """Nesting depth of parsed JSON, iteratively so a hostile answer cannot blow the stack."""
    deepest, stack = 0, [(value, 1)]
    while stack and deepest <= MAX_ANSWER_DEPTH:
        item, level = stack.pop()
        if isinstance(item, dict):
            item = list(item.values())
        if isinstance(item, list):
            deepest = max(deepest, level)
            stack.extend((child, level + 1) for child in item)
    return deepest


def _repair_messages(bad: str | None, problem: str) -> list[ChatCompletionMessageParam]:
    return [
        {"role": "assistant", "content": (bad or "")[:MAX_ANSWER_CHARS]},
        {"role": "user", "content": REPAIR_PROMPT.format(problem=problem[:MAX_REPAIR_ERROR_CHARS])},
    ]


def _content_of(completion: ChatCompletion) -> str | None:
    """The answer text; raises LLMRefused when the model declined."""
    if not completion.choices:
        return None
    choice = completion.choices[0]
    if choice.message.refusal:
        raise LLMRefused(choice.message.refusal)
    if choice.finish_reason == "content_filter":
        raise LLMRefused("the answer was stopped by the content filter")
    return choice.message.content


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


class LLMClient:
    """Structured answers and embeddings from one OpenAI-compatible API.

    Usable from several event loops in turn (the graph runtime's, a worker's
    `asyncio.run`): the `openai` client underneath is remade when the loop changes.
    """

    def __init__(
        self,
        config: LLMConfig,
        *,
        cache: LLMCache | None = None,
        usage: LLMUsage | None = None,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        self.config = config
        self.usage = usage if usage is not None else LLMUsage()
        self._cache = cache
        self._sleep = sleep
        self._openai: openai.AsyncOpenAI | None = None
        self._openai_loop: asyncio.AbstractEventLoop | None = None

    async def structured(self, *, task: str, schema: type[T], system: str, user: str) -> T:
        """`schema` filled in by the model for `task` (a response_format name).

        Raises LLMRefused, LLMInvalidAnswer, LLMQuotaExceeded, LLMUnavailable or LLMError.
        """
        if not _TASK_NAME.fullmatch(task):
            raise ValueError(f"task must match [A-Za-z0-9_-]{{1,64}}, got {task!r}")
        json_schema = strict_json_schema(schema)
        key = _cache_key(
            model=self.config.model, task=task, system=system, user=user, schema=json_schema
        )
        cached = await self._from_cache(key, schema)
        if cached is not None:
            return cached
        messages: list[ChatCompletionMessageParam] = [
            {"role": "system", "content": system},
            {"role": "user", "content": user},
        ]
        answer, completion = await self._answer(task, json_schema, messages, schema)
        await self._to_cache(key, task, completion)
        return answer

    async def embed(
        self, texts: list[str], *, model: str, dimensions: int | None = None
    ) -> list[list[float]]:
        """One vector per text, in order; requests hold at most EMBED_BATCH texts."""
        vectors: list[list[float]] = []
        for start in range(0, len(texts), EMBED_BATCH):
            batch = texts[start : start + EMBED_BATCH]
            vectors.extend(await self._embed_batch(batch, model, dimensions))
        return vectors

    async def aclose(self) -> None:
        """Close the HTTP connections of the current event loop's client."""
        if self._openai is not None:
            await self._openai.close()
            self._openai = None

    def _api(self) -> openai.AsyncOpenAI:
        # httpx connection pools belong to the loop that opened them; a client reused
        # from another loop (graph runtime thread, asyncio.run per task) would fail.
        loop = asyncio.get_running_loop()
        if self._openai is None or self._openai_loop is not loop:
            self._openai = openai.AsyncOpenAI(
                base_url=self.config.base_url,
                api_key=self.config.api_key or "not-needed",
                timeout=self.config.timeout,
                max_retries=0,
            )
            self._openai_loop = loop
        return self._openai

    async def _from_cache(self, key: str, schema: type[T]) -> T | None:
        if self._cache is None:
            return None
        value = await self._cache.get(key)
        if value is None:
            return None
        try:
            answer = _parse_answer(value, schema)
        except _BadAnswer:
            return None  # the schema's validators changed since it was stored: ask again
        self.usage.cache_hits += 1
        return answer

    async def _to_cache(self, key: str, task: str, completion: _Completion) -> None:
        if self._cache is None or completion.content is None:
            return
        await self._cache.put(
            key,
            completion.content,
            task=task,
            model=self.config.model,
            prompt_tokens=completion.prompt_tokens,
            completion_tokens=completion.completion_tokens,
        )

    async def _answer(
        self,
        task: str,
        json_schema: dict[str, Any],
        messages: list[ChatCompletionMessageParam],
        schema: type[T],
    ) -> tuple[T, _Completion]:
        """The validated answer and the completion it came from, tokens of both tries summed."""
        first = await self._complete(task, json_schema, messages)
        try:
            return _parse_answer(first.content, schema), first
        except _BadAnswer as problem:
            repair = messages + _repair_messages(first.content, str(problem))
            second = await self._complete(task, json_schema, repair)
        spent = _Completion(
            content=second.content,
            prompt_tokens=first.prompt_tokens + second.prompt_tokens,
            completion_tokens=first.completion_tokens + second.completion_tokens,
        )
        try:
            return _parse_answer(second.content, schema), spent
        except _BadAnswer as still:
            raise LLMInvalidAnswer(f"{task}: {still}"[:MAX_REPAIR_ERROR_CHARS]) from still

    async def _complete(
        self,
        task: str,
        json_schema: dict[str, Any],
        messages: list[ChatCompletionMessageParam],
    ) -> _Completion:
        completion = await self._with_retries(
            lambda: self._api().chat.completions.create(
                model=self.config.model,
                messages=messages,
                response_format={
                    "type": "json_schema",
                    "json_schema": {"name": task, "schema": json_schema, "strict": True},
                },
                temperature=0,
            )
        )
        usage = self._count(completion.usage)
        return _Completion(_content_of(completion), usage.prompt_tokens, usage.completion_tokens)

    async def _embed_batch(
        self, batch: list[str], model: str, dimensions: int | None
    ) -> list[list[float]]:
        response = await self._with_retries(
            lambda: self._api().embeddings.create(
                input=batch,
                model=model,
                dimensions=openai.omit if dimensions is None else dimensions,
                # The SDK asks for base64 by default; plain floats work on every
                # OpenAI-compatible server.
                encoding_format="float",
            )
        )
        self.usage.calls += 1
        self.usage.prompt_tokens += response.usage.prompt_tokens if response.usage else 0
        rows = sorted(response.data, key=lambda row: row.index)
        if len(rows) != len(batch):
            raise LLMError(f"asked for {len(batch)} embeddings, got {len(rows)}")
        return [list(row.embedding) for row in rows]

    def _count(self, usage: CompletionUsage | None) -> CompletionUsage:
        usage = usage or CompletionUsage(prompt_tokens=0, completion_tokens=0, total_tokens=0)
        self.usage.calls += 1
        self.usage.prompt_tokens += usage.prompt_tokens
        self.usage.completion_tokens += usage.completion_tokens
        return usage

    async def _with_retries(self, request: Callable[[], Awaitable[R]]) -> R:
        attempt = 0
        while True:
            try:
                return await request()
            except openai.APIError as exc:
                fatal = _fatal_error(exc)
                if fatal is not None:
                    raise fatal from exc
                if attempt >= self.config.max_retries:
                    reason = _reason(exc, self.config.timeout)
                    raise LLMUnavailable(f"gave up after {attempt + 1} tries: {reason}") from exc
                await self._sleep(self._backoff(attempt, exc))
                self.usage.retries += 1
                attempt += 1

    def _backoff(self, attempt: int, exc: openai.APIError) -> float:
        """The server's retry-after if it gave one, else exponential backoff, full jitter."""
        requested = _retry_after(exc)
        if requested is not None:
            return min(requested, self.config.backoff_max)
        ceiling = min(self.config.backoff_max, self.config.backoff_base * 2**attempt)
        return ceiling * random.random()
