"""Every LLM call of the pipeline goes through `LLMClient`: strict structured outputs,
a content-addressed cache, one retry policy and one repair attempt per answer; each
answered request is counted, per model, in the client's `usage`. A free-text answer
can also be streamed as it is written (`stream_text`).

The parts: `transport` (the API connection and the retry policy), `schema` (strict
response schemas), `answers` (reading, checking and repairing answers), `cache` (the
answer cache) and `errors` (the typed `LLMError`s every failure leaves as).
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import TypeVar

import openai
from openai import AsyncStream
from openai.types.chat import ChatCompletionChunk, ChatCompletionMessageParam
from openai.types.completion_usage import CompletionUsage
from pydantic import BaseModel

from kgapp.graph.llm.answers import (
    MAX_ANSWER_CHARS,
    MAX_REPAIR_ERROR_CHARS,
    BadAnswer,
    Completion,
    content_of,
    delta_of,
    parse_answer,
    repair_messages,
)
from kgapp.graph.llm.cache import LLMCache, cache_key
from kgapp.graph.llm.errors import LLMError, LLMInvalidAnswer
from kgapp.graph.llm.schema import strict_json_schema
from kgapp.graph.llm.transport import Connection, LLMConfig, stream_error, with_retries
from kgapp.graph.llm.usage import LLMUsage
from kgapp.graph.records import JsonObject

T = TypeVar("T", bound=BaseModel)
R = TypeVar("R")

EMBED_BATCH = 256

# The API's rule for response_format names; checked here so a bad task name fails
# before any request (and before it becomes part of a cache key).
_TASK_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")


@dataclass
class _Opened:
    """A streamed answer whose first text has arrived: the stream (to close), the rest
    of its texts, and that first one ("" when the answer was empty)."""

    stream: AsyncStream[ChatCompletionChunk]
    texts: AsyncIterator[str]
    first: str


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

    async def stream_text(self, *, system: str, user: str) -> AsyncIterator[str]:
        """The model's free-text answer as it is written: its text pieces, in order.

        Opening the stream is retried as any request is, until the first text arrives;
        after that a failure is raised at once, since a retry would write again what the
        reader already has. Usage is counted from the stream's last chunk (asked for with
        `include_usage`). Nothing is cached. Raises LLMRefused, LLMQuotaExceeded,
        LLMUnavailable, LLMInvalidAnswer (past MAX_ANSWER_CHARS) or LLMError.
        """
        messages: list[ChatCompletionMessageParam] = [
            {"role": "system", "content": system},
            {"role": "user", "content": user},
        ]
        opened = await self._with_retries(lambda: self._open_stream(messages))
        written = len(opened.first)
        try:
            if opened.first:
                yield opened.first
            async for text in opened.texts:
                written += len(text)
                if written > MAX_ANSWER_CHARS:
                    raise LLMInvalidAnswer(f"the answer ran past {MAX_ANSWER_CHARS} characters")
                yield text
        except openai.APIError as exc:
            raise stream_error(exc, self.config) from exc
        finally:
            await opened.stream.close()

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
        json_schema: JsonObject,  # a JSON Schema: free-form JSON (llm/schema.py)
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
        json_schema: JsonObject,  # a JSON Schema: free-form JSON (llm/schema.py)
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

    async def _open_stream(self, messages: list[ChatCompletionMessageParam]) -> _Opened:
        """One try at a streamed answer, up to its first text (closed if that fails)."""
        stream = await self._connection.api().chat.completions.create(
            model=self.config.model,
            messages=messages,
            temperature=0,
            stream=True,
            stream_options={"include_usage": True},
        )
        try:
            texts = self._texts(stream)
            return _Opened(stream, texts, await anext(texts, ""))
        except BaseException:
            await stream.close()
            raise

    async def _texts(self, stream: AsyncStream[ChatCompletionChunk]) -> AsyncIterator[str]:
        """The text of each chunk that has some; the usage chunk is counted (a stream
        without one counts as a call of unknown tokens)."""
        counted = False
        async for chunk in stream:
            if chunk.usage is not None:
                self._count(chunk.usage)
                counted = True
            text = delta_of(chunk)
            if text:
                yield text
        if not counted:
            self._count(None)

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
