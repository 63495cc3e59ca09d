"""The model every system is given: the scripted OpenAI-compatible server of the test
suite (harness/llm_server.py) on loopback, answering each system's prompts from the gold
corpus through that system's answerer, with an optional latency per call; and the one
embedder all three use, all-MiniLM-L6-v2 on the CPU (the product's local embedder).

Every call is recorded by the server side, the same way for every system: its task (the
answerer's label), its input and output tokens (the suite's server counts a token per
four characters of the prompt and of the answer, for everybody alike) and the interval
it took, so an episode's time can be split into model time and the system's own.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from harness.llm_server import Reply, ScriptedLLM
from kgapp.graph.embeddings import local_embedder

# An answerer reads one chat request body and returns (task label, answer) where the
# answer is a dict/list (sent as JSON) or a str (sent verbatim), or None when the prompt
# is not one it knows (the call then fails with a 500, which the report counts).
Answerer = Callable[[dict[str, Any]], "tuple[str, Any] | None"]


def tokens(text: str) -> int:
    return max(1, len(text) // 4) if text else 0


@dataclass(frozen=True)
class Call:
    task: str
    started: float
    finished: float
    input_tokens: int
    output_tokens: int
    ok: bool


class BenchModel:
    """Start with `with BenchModel(answerer) as model:`; `model.base_url` then serves."""

    def __init__(self, answerer: Answerer, latency: float = 0.0) -> None:
        self.answerer = answerer
        self.latency = latency
        self.calls: list[Call] = []
        self.unknown: list[str] = []  # the start of prompts no answerer knew
        self._lock = threading.Lock()
        self._server = ScriptedLLM()
        self._server.on_chat(self._answer)

    @property
    def base_url(self) -> str:
        return self._server.base_url

    def __enter__(self) -> BenchModel:
        self._server.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.stop()

    def _answer(self, body: dict[str, Any]) -> Reply:
        started = time.perf_counter()
        prompt = "".join(str(m.get("content") or "") for m in body.get("messages", []))
        try:
            found = self.answerer(body)
        except Exception as exc:  # a broken answerer is a failed call, counted
            found, error = None, repr(exc)
        else:
            error = ""
        if found is None:
            with self._lock:
                self.unknown.append((error + " " + prompt[:300]).strip())
                self.calls.append(
                    Call(
                        "unknown",
                        started,
                        time.perf_counter() + self.latency,
                        tokens(prompt),
                        0,
                        False,
                    )
                )
            return Reply(
                status=500,
                content="the bench model has no answer for this prompt",
                delay=self.latency,
            )
        task, content = found
        text = content if isinstance(content, str) else json.dumps(content)
        with self._lock:
            self.calls.append(
                Call(
                    task,
                    started,
                    time.perf_counter() + self.latency,
                    tokens(prompt),
                    tokens(text),
                    True,
                )
            )
        return Reply(content=content, delay=self.latency)

    def calls_between(self, start: float, end: float) -> list[Call]:
        with self._lock:
            return [c for c in self.calls if start <= c.started < end]


def busy_seconds(calls: Sequence[Call]) -> float:
    """Wall time covered by at least one call (concurrent calls counted once)."""
    total, reach = 0.0, float("-inf")
    for call in sorted(calls, key=lambda c: c.started):
        start = max(call.started, reach)
        if call.finished > start:
            total += call.finished - start
        reach = max(reach, call.finished)
    return total


class Embeddings:
    """all-MiniLM-L6-v2 (384 dimensions), counting calls and texts."""

    dimension = 384

    def __init__(self) -> None:
        self._model = local_embedder()
        self.calls = 0
        self.texts = 0

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        self.calls += 1
        self.texts += len(texts)
        return self._model.embed(list(texts))

    def embed_aside(self, texts: Sequence[str]) -> list[list[float]]:
        """The same vectors on the calling thread, beside `embed` calls (kgapp's
        embeddings.embed_aside: what is needed later, while the rest goes on)."""
        self.calls += 1
        self.texts += len(texts)
        return self._model.embed_aside(list(texts))
