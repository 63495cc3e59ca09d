"""Browser pages answer 503 with a readable page when the graph store is down."""

from __future__ import annotations

from collections.abc import Callable

from django.http import HttpRequest, HttpResponse

from kgapp.graph.errors import GraphUnavailable
from tenants.middleware import error_page


class GraphUnavailableMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return self.get_response(request)

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        if isinstance(exception, GraphUnavailable):
            response = error_page(
                request, 503, "The knowledge graph store is unavailable; retry in a moment."
            )
            response["Retry-After"] = "5"
            return response
        return None
