"""Browser pages answer 503 with a readable page when the graph store is down."""

from __future__ import annotations

from collections.abc import Callable

from django.http import HttpRequest, HttpResponse

from kgapp.graph.errors import GraphUnavailable
from kgapp.web import refusals
from tenants.middleware import error_page

# The page's wording; its status and Retry-After are the API's (refusals.REFUSALS).
GRAPH_DOWN_PAGE = "The knowledge graph store is unavailable; retry in a moment."


class GraphUnavailableMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return self.get_response(request)

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        if not isinstance(exception, GraphUnavailable):
            return None
        refusal = refusals.REFUSALS[GraphUnavailable]
        response = error_page(request, refusal.status, GRAPH_DOWN_PAGE)
        response["Retry-After"] = str(refusal.retry_after)
        return response
