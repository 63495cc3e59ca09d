"""The LLM response cache, content-addressed: keyed by a hash of model, task, prompts
and schema, so that re-running a job costs no second call. `SurrealCache` keeps it in
the tenant's own namespace (`llm_cache`); `MemoryCache` in the process."""

from __future__ import annotations

import contextlib
import hashlib
import json
from typing import Protocol

from kgapp.graph import queries
from kgapp.graph.errors import UniqueViolation
from kgapp.graph.records import JsonObject
from kgapp.graph.store import TenantStore


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


# `schema`: the answer's JSON Schema, free-form JSON (llm/schema.py).
def cache_key(*, model: str, task: str, system: str, user: str, schema: JsonObject) -> str:
    # A JSON array keeps the parts apart: ("ab", "c") and ("a", "bc") differ.
    material = json.dumps([model, task, system, user, schema], sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(material.encode("utf-8")).hexdigest()


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


class SurrealCache:
    def __init__(self, store: TenantStore):
        self._store = store

    async def get(self, key: str) -> str | None:
        value = await self._store.query_one(queries.LLM_CACHE_GET, {"key": key})
        return value if isinstance(value, str) else None

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
        """Keep an answer. One stored a moment ago under the same key (the same question
        from two requests at once) stands: that is no error."""
        with contextlib.suppress(UniqueViolation):
            await self._store.query(
                queries.LLM_CACHE_PUT,
                {
                    "key": key,
                    "kind": task,
                    "model": model,
                    "response": value,
                    "prompt_tokens": prompt_tokens,
                    "completion_tokens": completion_tokens,
                },
            )
