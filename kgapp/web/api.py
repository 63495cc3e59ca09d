"""The REST API: one NinjaAPI, one router per area, errors mapped in one place."""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterable

from django.conf import settings
from django.core.exceptions import (
    RequestDataTooBig,
    TooManyFieldsSent,
    TooManyFilesSent,
    ValidationError,
)
from django.http import HttpRequest, HttpResponse
from django.http.multipartparser import MultiPartParserError
from ninja import NinjaAPI
from ninja.errors import ValidationError as RequestInvalid

from kgapp.graph.errors import GraphError
from kgapp.web import refusals
from kgapp.web.auth import API_AUTH, TokenRefused
from kgapp.web.ratelimits import RateLimited
from kgapp.web.routers import (
    ask,
    health,
    ingest,
    jobs,
    members,
    retention,
    search,
    tenants,
    tokens,
    transfer,
    usage,
)
from tenants.errors import TenantAccessError

logger = logging.getLogger(__name__)

api = NinjaAPI(
    title="kgapp",
    version="1",
    description="Multi-tenant bi-temporal knowledge graph. Authenticate with"
    " `Authorization: Bearer <token>` (create one at POST /api/v1/tokens) or a browser session.",
    auth=API_AUTH,
    docs_url="/docs",
    urls_namespace="api",
)
api.add_router("/v1/", health.router)
api.add_router("/v1/", tokens.router)
api.add_router("/v1/", tenants.router)
api.add_router("/v1/", members.router)
api.add_router("/v1/", jobs.router)
api.add_router("/v1/", ingest.router)
api.add_router("/v1/", search.router)
api.add_router("/v1/", ask.router)
api.add_router("/v1/", usage.router)
api.add_router("/v1/", retention.router)
api.add_router("/v1/", transfer.router)


def _error(
    request: HttpRequest, status: int, detail: str, headers: dict[str, str] | None = None
) -> HttpResponse:
    response = api.create_response(request, {"detail": detail}, status=status)
    for name, value in (headers or {}).items():
        response[name] = value
    return response


@api.exception_handler(TenantAccessError)
def _tenant_access(request: HttpRequest, error: TenantAccessError) -> HttpResponse:
    return _error(request, error.status, str(error))


def _refused(request: HttpRequest, error: Exception) -> HttpResponse:
    """A failure of a kind in refusals.REFUSALS, answered as the table says."""
    refusal = refusals.refusal_for(error)
    assert refusal is not None  # registered for the table's kinds only
    if refusal.logged:
        logger.warning("%s: %s", type(error).__name__, error)
    headers = {"Retry-After": str(refusal.retry_after)} if refusal.retry_after else None
    return _error(request, refusal.status, refusal.said(error), headers)


for _kind in refusals.REFUSALS:
    api.exception_handler(_kind)(_refused)


@api.exception_handler(TokenRefused)
def _token_refused(request: HttpRequest, error: TokenRefused) -> HttpResponse:
    return _error(request, 401, str(error), {"WWW-Authenticate": 'Bearer error="invalid_token"'})


@api.exception_handler(RateLimited)
def _rate_limited(request: HttpRequest, error: RateLimited) -> HttpResponse:
    return _error(request, 429, str(error), {"Retry-After": str(error.retry_after)})


@api.exception_handler(ValidationError)
def _invalid(request: HttpRequest, error: ValidationError) -> HttpResponse:
    messages = (
        [f"{field}: {'; '.join(errs)}" for field, errs in error.message_dict.items()]
        if hasattr(error, "error_dict")
        else error.messages
    )
    return _error(request, 422, " ".join(messages))


@api.exception_handler(RequestInvalid)
def _request_invalid(request: HttpRequest, error: RequestInvalid) -> HttpResponse:
    """Pydantic's findings on the request, one per field, as the one `detail` string
    every declared error body has."""
    findings = (_finding(e.get("loc") or (), str(e.get("msg", "invalid"))) for e in error.errors)
    return _error(request, 422, "; ".join(findings))


def _finding(where: Iterable[object], message: str) -> str:
    # where: the place ("body", "query", "path", "file"), the handler's argument, the field.
    loc = [str(part) for part in where][1:]
    if loc and loc[0] == "payload":
        loc = loc[1:]
    return refusals.finding(loc, message)


# Django refuses these request bodies while reading them (they reach the API as
# exceptions raised by `request.body` / `request.FILES`); each is the client's to fix.
@api.exception_handler(RequestDataTooBig)
def _body_too_big(request: HttpRequest, error: RequestDataTooBig) -> HttpResponse:
    limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
    return _error(
        request,
        413,
        f"The request body is over the {limit} byte limit for a JSON or form body. "
        "Send less; files go in the `files` field of a multipart upload.",
    )


@api.exception_handler(TooManyFilesSent)
def _too_many_files(request: HttpRequest, error: TooManyFilesSent) -> HttpResponse:
    return _error(
        request, 422, f"at most {ingest.MAX_FILES} files per upload; send the rest separately"
    )


@api.exception_handler(TooManyFieldsSent)
def _too_many_fields(request: HttpRequest, error: TooManyFieldsSent) -> HttpResponse:
    limit = settings.DATA_UPLOAD_MAX_NUMBER_FIELDS
    return _error(request, 400, f"The form has more than {limit} fields; send fewer.")


@api.exception_handler(MultiPartParserError)
def _unreadable_form(request: HttpRequest, error: MultiPartParserError) -> HttpResponse:
    # Django reads at most 1 KB of headers per part, and a file's name is one of them.
    hint = (
        " A file name over about 900 characters does this: rename the file (names are"
        " kept to 255 characters)."
        if "header size" in str(error)
        else ""
    )
    return _error(request, 400, f"The multipart form could not be read: {error}.{hint}")


@api.exception_handler(GraphError)
def _graph_error(request: HttpRequest, error: GraphError) -> HttpResponse:
    reference = uuid.uuid4().hex[:12]
    logger.error("graph error %s: %s", reference, error)
    return _error(request, 500, f"The graph store rejected the operation (reference {reference}).")


@api.exception_handler(Exception)
def _unexpected(request: HttpRequest, error: Exception) -> HttpResponse:
    reference = uuid.uuid4().hex[:12]
    logger.exception("unhandled API error %s", reference)
    return _error(request, 500, f"Internal error (reference {reference}); it has been logged.")
