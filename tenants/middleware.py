"""Resolves the tenant of browser pages under /t/<slug>/ once, at the edge."""

from __future__ import annotations

import re
from collections.abc import Callable

from django.contrib.auth.views import redirect_to_login
from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse

from tenants.access import tenant_access
from tenants.errors import TenantAccessError

_TENANT_PATH = re.compile(r"^/t/(?P<slug>[^/]+)/")


class TenantMiddleware:
    """Sets `request.tenant_access` for /t/<slug>/ pages, or refuses the request.

    Views then ask for a role with `require_role`; the lookup happens here only.
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        match = _TENANT_PATH.match(request.path_info)
        request.tenant_access = None  # type: ignore[attr-defined]
        if match is not None:
            if not request.user.is_authenticated:
                return redirect_to_login(request.get_full_path())
            try:
                request.tenant_access = tenant_access(  # type: ignore[attr-defined]
                    request.user, match.group("slug")
                )
            except TenantAccessError as error:
                return error_page(request, error.status, str(error))
        return self.get_response(request)


def error_page(request: HttpRequest, status: int, message: str) -> HttpResponse:
    response = TemplateResponse(
        request, "error.html", {"status": status, "message": message}, status=status
    )
    return response.render()
