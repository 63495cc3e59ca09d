"""Asking the graph: `POST ask` answers with its sources first and the model's answer
streamed after them; `GET questions` lists what the caller asked before."""

from __future__ import annotations

import logging

from django.http import StreamingHttpResponse
from ninja import Router
from ninja.errors import HttpError

from kgapp.graph.llm.errors import LLMError
from kgapp.graph.search.ask import Retrieved
from kgapp.graph.search.query import QueryRequest
from kgapp.web import ratelimits
from kgapp.web.answer_lines import answer_lines
from kgapp.web.auth import AuthenticatedHttpRequest
from kgapp.web.routers.shared import DENIED, LIMITED
from kgapp.web.schemas import AskIn, ErrorOut, QuestionOut
from tenants import selectors, services
from tenants.access import tenant_access
from tenants.models import Question, Tenant
from tenants.wiring import answer_client, ask_with_models, tenant_graph

logger = logging.getLogger(__name__)
router = Router(tags=["ask"])

MODEL_DOWN = "The model did not answer while reading the question; retry in a moment."
_NDJSON_ANSWER = {
    "description": "The answer as NDJSON, one JSON object a line, each as it is ready:"
    ' `{"type": "sources", "passages": [...], "facts": [...], "entities": [...]}` first'
    ' (passages labelled `ref` S1, S2, ...); then `{"type": "delta", "text": ...}` pieces of'
    ' the answer, citing [S1], ..., and `{"type": "done", "usage": [...]}`. Without a model:'
    ' the sources, then `{"type": "answer_unavailable", "detail": ...}`. A model that fails'
    ' while answering ends the stream with `{"type": "error", "detail": ...}`.',
    "content": {"application/x-ndjson": {"schema": {"type": "string"}}},
}


@router.post(
    "/t/{tenant}/ask",
    response={422: ErrorOut, **DENIED, **LIMITED},
    openapi_extra={"responses": {"200": _NDJSON_ANSWER}},
)
def ask(request: AuthenticatedHttpRequest, tenant: str, payload: AskIn) -> StreamingHttpResponse:
    """Answer a question from the graph as of `as_of` / `known_at` (viewer): its sources
    first, then the model's answer as it is written. The question joins your history
    (GET questions). A refusal before the first line is a JSON error, as elsewhere."""
    ratelimits.check(request, "query")
    access = tenant_access(request.user, tenant)
    retrieved = _retrieved(access.tenant, payload.request())
    services.question_record(
        user=request.user,
        tenant=access.tenant,
        text=payload.query,
        as_of=payload.as_of,
        known_at=payload.known_at,
    )
    response = StreamingHttpResponse(
        answer_lines(retrieved, answer_client()), content_type="application/x-ndjson"
    )
    response["Cache-Control"] = "no-store"
    response["X-Accel-Buffering"] = "no"  # a proxy (nginx) would otherwise hold lines back
    return response


@router.get("/t/{tenant}/questions", response={200: list[QuestionOut], **DENIED})
def question_list(request: AuthenticatedHttpRequest, tenant: str) -> list[Question]:
    """The questions you asked in this tenant, newest first (the last 20): the Ask page's
    history. Nobody else's, and none of another tenant's."""
    access = tenant_access(request.user, tenant)
    return list(selectors.questions_of(user=request.user, tenant=access.tenant))


def _retrieved(tenant: Tenant, spec: QueryRequest) -> Retrieved:
    try:
        return tenant_graph(tenant).run(ask_with_models, spec)
    except LLMError as error:  # the question's keywords, when a model is configured
        logger.warning("ask: keywords failed: %s: %s", type(error).__name__, error)
        raise HttpError(503, MODEL_DOWN) from error
