"""Every LLM call of the pipeline goes through `LLMClient`: strict structured outputs,
a content-addressed cache, one retry policy and one repair attempt per answer; each
answered request is counted, per model, in the client's `usage`.

The parts: `transport` (the API connection and the retry policy), `schema` (strict
response schemas), `answers` (reading, checking and repairing answers), `cache` (the
answer cache) and `errors` (the typed `LLMError`s every failure leaves as).
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import openai
from openai.types.chat import ChatCompletionMessageParam
from openai.types.completion_usage import CompletionUsage
from pydantic import BaseModel

from kgapp.graph.llm.answers import (
    MAX_REPAIR_ERROR_CHARS,
    BadAnswer,
    Completion,
    content_of,
    parse_answer,
    repair_messages,
)
from kgapp.graph.llm.cache import LLMCache, cache_key
from kgapp.graph.llm.errors import LLMError, LLMInvalidAnswer
from kgapp.graph.llm.schema import strict_json_schema
from kgapp.graph.llm.transport import Connection, LLMConfig, with_retries
from kgapp.graph.llm.usage import LLMUsage

T = TypeVar("T", bound=BaseModel)
R = TypeVar("R")

EMBED_BATCH = 256

# The API's rule for response_format names; checked here so a bad task name fails
# before any request (and before it becomes part of a cache key).
_TASK_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")


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
        self._connection = Connection(config)

    async def structured(self, *, task: str, schema: type[T], system: str, user: str) -> T:
        """`schema` filled in by the model for `task` (a response_format name).

        Raises LLMRefused, LLMInvalidAnswer, LLMQuotaExceeded, LLMUnavailable or LLMError.
        """
        if not _TASK_NAME.fullmatch(task):
            raise ValueError(f"task must match [A-Za-z0-9_-]{{1,64}}, got {task!r}")
        json_schema = strict_json_schema(schema)
        key = cache_key(
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
        await self._connection.aclose()

    async def _from_cache(self, key: str, schema: type[T]) -> T | None:
        if self._cache is None:
            return None
        value = await self._cache.get(key)
        if value is None:
            return None
        try:
            answer = parse_answer(value, schema)
        except BadAnswer:
            return None  # the schema's validators changed since it was stored: ask again
        self.usage.cache_hits += 1
        return answer

    async def _to_cache(self, key: str, task: str, completion: Completion) -> None:
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
    ) -> tuple[T, Completion]:
        """The validated answer and the completion it came from, tokens of both tries summed."""
        first = await self._complete(task, json_schema, messages)
        try:
            return parse_answer(first.content, schema), first
        except BadAnswer as problem:
            repair = messages + repair_messages(first.content, str(problem))
            second = await self._complete(task, json_schema, repair)
        spent = Completion(
            content=second.content,
            prompt_tokens=first.prompt_tokens + second.prompt_tokens,
            completion_tokens=first.completion_tokens + second.completion_tokens,
        )
        try:
            return parse_answer(second.content, schema), spent
        except BadAnswer as still:
            raise LLMInvalidAnswer(f"{task}: {still}"[:MAX_REPAIR_ERROR_CHARS]) from still

    async def _complete(
        self,
        task: str,
        json_schema: dict[str, Any],
        messages: list[ChatCompletionMessageParam],
    ) -> Completion:
        completion = await self._with_retries(
            lambda: self._connection.api().chat.completions.create(
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
        return Completion(content_of(completion), usage.prompt_tokens, usage.completion_tokens)

    async def _embed_batch(
        self, batch: list[str], model: str, dimensions: int | None
    ) -> list[list[float]]:
        response = await self._with_retries(
            lambda: self._connection.api().embeddings.create(
                input=batch,
                model=model,
                dimensions=openai.omit if dimensions is None else dimensions,
                # The SDK asks for base64 by default; plain floats work on every
                # OpenAI-compatible server.
                encoding_format="float",
            )
        )
        self.usage.record(model, response.usage.prompt_tokens if response.usage else 0)
        rows = sorted(response.data, key=lambda row: row.index)
        if len(rows) != len(batch):
            raise LLMError(f"asked for {len(batch)} embeddings, got {len(rows)}")
        return [list(row.embedding) for row in rows]

    def _count(self, usage: CompletionUsage | None) -> CompletionUsage:
        usage = usage or CompletionUsage(prompt_tokens=0, completion_tokens=0, total_tokens=0)
        self.usage.record(self.config.model, usage.prompt_tokens, usage.completion_tokens)
        return usage

    async def _with_retries(self, request: Callable[[], Awaitable[R]]) -> R:
        # `_sleep` is looked up at each call: a test may replace it to observe the waits.
        return await with_retries(request, self.config, sleep=self._sleep, retried=self._retried)

    def _retried(self) -> None:
        self.usage.retries += 1
