"""The LLM response cache in the tenant's own namespace (`llm_cache`), keyed by a hash
of model, task, prompts and schema: re-running a job costs no second call."""

from __future__ import annotations

import contextlib

from kgapp.graph import queries
from kgapp.graph.errors import UniqueViolation
from kgapp.graph.store import TenantStore


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
