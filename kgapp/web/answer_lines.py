"""`POST ask`'s answer as NDJSON, one JSON object a line (the *Line models of
schemas.py): the sources first, then the answer's text piece by piece as the model
writes it, then `done` with what the call used. Without a model the sources are
followed by `answer_unavailable`. The status (200) goes out with the first line, so a
model that fails mid-answer ends the stream with an `error` line instead: a short
message and a reference to the log, never a trace."""

from __future__ import annotations

import logging
import uuid
from collections.abc import AsyncIterator

from pydantic import BaseModel

from kgapp.graph.llm.client import LLMClient
from kgapp.graph.llm.errors import LLMError, LLMQuotaExceeded, LLMRefused
from kgapp.graph.search.ask import Retrieved, answer_text
from kgapp.web.schemas import (
    AnswerErrorLine,
    AnswerUnavailableLine,
    DeltaLine,
    DoneLine,
    SourcesLine,
)

logger = logging.getLogger(__name__)

NEEDS_MODEL = (
    "Answers need a model: the server has none configured (OPENAI_BASE_URL or"
    " OPENAI_API_KEY). The sources are what the graph holds on the question."
)
_FAILED: dict[type[Exception], str] = {
    LLMQuotaExceeded: "The model's account is out of quota",
    LLMRefused: "The model declined to answer",
}


async def answer_lines(retrieved: Retrieved, llm: LLMClient | None) -> AsyncIterator[bytes]:
    """The lines of one answer; `llm` None: no model is configured."""
    yield _line(SourcesLine.of(retrieved.sources))
    if llm is None:
        yield _line(AnswerUnavailableLine(detail=NEEDS_MODEL))
        return
    try:
        async for text in answer_text(llm, retrieved):
            yield _line(DeltaLine(text=text))
        yield _line(DoneLine.model_validate({"usage": llm.usage.rows()}))
    except Exception as error:  # the 200 is sent: the failure can only be a line now
        yield _line(AnswerErrorLine(detail=_failure(error)))
    finally:
        await llm.aclose()


def _line(line: BaseModel) -> bytes:
    return line.model_dump_json().encode() + b"\n"


def _failure(error: Exception) -> str:
    reference = uuid.uuid4().hex[:12]
    if isinstance(error, LLMError):
        logger.warning("answer %s failed: %s: %s", reference, type(error).__name__, error)
    else:
        logger.exception("answer %s failed", reference)
    said = _FAILED.get(type(error), "The model stopped before the answer was complete")
    return f"{said} (reference {reference}). The sources still stand; ask again in a moment."
