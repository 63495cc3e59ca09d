"""Answers as the schema asked for: read from the completion, checked (size, depth,
schema), and what to tell the model when one cannot be used; and the text that each
chunk of a streamed answer adds."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, TypeVar

from openai.types.chat import ChatCompletion, ChatCompletionChunk, ChatCompletionMessageParam
from pydantic import BaseModel, ValidationError

from kgapp.graph.llm.errors import LLMRefused

T = TypeVar("T", bound=BaseModel)

MAX_ANSWER_CHARS = 200_000
MAX_ANSWER_DEPTH = 32
MAX_REPAIR_ERROR_CHARS = 2_000

REPAIR_PROMPT = (
    "Your previous answer could not be used: {problem}\n"
    "Answer again with only a JSON object that matches the response schema, and nothing else."
)


class BadAnswer(Exception):
    """An answer that cannot become the schema; its text goes into the repair prompt."""


@dataclass(frozen=True)
class Completion:
    """What one completion (or a first try and its repair) gave, and what it cost."""

    content: str | None
    prompt_tokens: int
    completion_tokens: int


def parse_answer(content: str | None, schema: type[T]) -> T:
    """The answer as `schema`, or BadAnswer saying why not (shown to the model)."""
    if not content:
        raise BadAnswer("the answer was empty")
    if len(content) > MAX_ANSWER_CHARS:
        raise BadAnswer(f"the answer has {len(content)} characters, over {MAX_ANSWER_CHARS}")
    try:
        data = json.loads(content)
    except (ValueError, RecursionError) as exc:
        raise BadAnswer(f"the answer is not valid JSON: {exc}") from exc
    if _depth(data) > MAX_ANSWER_DEPTH:
        raise BadAnswer(f"the answer is nested deeper than {MAX_ANSWER_DEPTH} levels")
    try:
        return schema.model_validate(data)
    except ValidationError as exc:
        raise BadAnswer(f"the answer does not match the schema: {exc}") from exc


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


def repair_messages(bad: str | None, problem: str) -> list[ChatCompletionMessageParam]:
    return [
        {"role": "assistant", "content": (bad or "")[:MAX_ANSWER_CHARS]},
        {"role": "user", "content": REPAIR_PROMPT.format(problem=problem[:MAX_REPAIR_ERROR_CHARS])},
    ]


def content_of(completion: ChatCompletion) -> str | None:
    """The answer text; raises LLMRefused when the model declined."""
    if not completion.choices:
        return None
    choice = completion.choices[0]
    if choice.message.refusal:
        raise LLMRefused(choice.message.refusal)
    if choice.finish_reason == "content_filter":
        raise LLMRefused("the answer was stopped by the content filter")
    return choice.message.content


def delta_of(chunk: ChatCompletionChunk) -> str:
    """The text a streamed chunk adds ("" for none); raises LLMRefused when the model
    declines."""
    if not chunk.choices:
        return ""
    choice = chunk.choices[0]
    if choice.delta.refusal:
        raise LLMRefused(choice.delta.refusal)
    if choice.finish_reason == "content_filter":
        raise LLMRefused("the answer was stopped by the content filter")
    return choice.delta.content or ""
