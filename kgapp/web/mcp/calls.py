"""What every MCP tool shares: who calls (admitted by the door), whether their role
allows the tool, arguments checked by the API's own schemas, refusals turned into tool
errors a model can act on, and the answer's shape (text, plus the API's JSON)."""

from __future__ import annotations

import functools
import logging
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from asgiref.sync import sync_to_async
from django.http import HttpRequest
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult, TextContent
from pydantic import BaseModel, ValidationError

from kgapp.graph.errors import GraphError, InvalidRecordId, NotFound
from kgapp.graph.records import JsonObject
from kgapp.graph.store import TenantGraph
from kgapp.web import ratelimits, refusals
from kgapp.web.ratelimits import RateLimited
from tenants.access import TenantAccess
from tenants.errors import TenantAccessError
from tenants.models import Role, Tenant
from tenants.wiring import tenant_graph

logger = logging.getLogger(__name__)

CALLER = "kgapp.mcp.caller"
"""The ASGI scope key under which the door leaves the caller it admitted."""

M = TypeVar("M", bound=BaseModel)
R = TypeVar("R")


@dataclass(frozen=True)
class Caller:
    """Who calls, for one HTTP request: the request (its user and token set by the API's
    token authentication) and their access to the tenant its path names."""

    request: HttpRequest
    access: TenantAccess

    @property
    def tenant(self) -> Tenant:
        return self.access.tenant

    @property
    def graph(self) -> TenantGraph:
        return tenant_graph(self.access.tenant)

    @property
    def username(self) -> str:
        return str(self.request.user.get_username())

    async def limit(self, scope: str) -> None:
        """Count a request of rate-limit `scope` for this user and token, as the API
        does (kgapp/web/ratelimits.py); RateLimited when over."""
        await sync_to_async(ratelimits.check)(self.request, scope)


def caller(ctx: Context, role: Role = Role.VIEWER) -> Caller:
    """The caller the door admitted; a tool error naming the role when theirs is lower."""
    request = ctx.request_context.request
    found = getattr(request, "scope", {}).get(CALLER)
    if not isinstance(found, Caller):
        raise ToolError("this server answers only at /mcp/t/<tenant slug>/ with an API token")
    if not found.access.allows(role):
        raise ToolError(
            f"this tool needs the {role.value} role in {found.tenant.slug!r}; the token's user"
            f" is a {found.access.role.value} there. Use the read tools, or ask an owner of"
            f" the tenant for the {role.value} role."
        )
    return found


def parsed(model: type[M], **values: Any) -> M:
    """`values` as the API's schema for the same input reads them: its limits, and the
    rules between fields (a moment with current_only, an end before a start)."""
    try:
        return model.model_validate(values)
    except ValidationError as error:
        raise ToolError(findings(error)) from None


def findings(error: ValidationError) -> str:
    """Pydantic's findings, one per field, as one line."""
    return "; ".join(
        refusals.finding(item.get("loc") or (), str(item.get("msg", "invalid")))
        for item in error.errors()
    )


def answer(text: str, data: JsonObject) -> CallToolResult:  # data: the API's JSON
    """What a tool returns: short text a model reads, with ids for follow-up calls, and
    the same data as the REST API's JSON (structured content)."""
    return CallToolResult(content=[TextContent(type="text", text=text)], structured_content=data)


def refusing(tool: Callable[..., Awaitable[R]]) -> Callable[..., Awaitable[R]]:
    """The tool, with what the API answers as a 4xx or 503 turned into a tool error that
    says what to change or when to retry; anything else is logged under a reference."""

    @functools.wraps(tool)
    async def run(*args: Any, **kwargs: Any) -> R:
        try:
            return await tool(*args, **kwargs)
        except ToolError:
            raise
        except Exception as error:  # every failure becomes a tool error, never a 500
            raise ToolError(refusal(error)) from error

    return run


def refusal(error: Exception) -> str:
    """The tool error's message for a failure (the API's wording for the same one,
    refusals.REFUSALS)."""
    if isinstance(error, NotFound | InvalidRecordId):
        return f"{error}. Ids come from earlier results (search_facts, search_entities, ...)."
    if isinstance(error, ValidationError):
        return findings(error)
    known = refusals.refusal_for(error)
    if known is not None:
        if known.logged:
            logger.warning("%s: %s", type(error).__name__, error)
        return known.said(error)
    if isinstance(error, RateLimited | TenantAccessError):
        return str(error)
    reference = uuid.uuid4().hex[:12]
    if isinstance(error, GraphError):
        logger.error("graph error %s: %s", reference, error)
        return f"The graph store rejected the operation (reference {reference})."
    logger.error("unhandled MCP tool error %s", reference, exc_info=error)
    return f"Internal error (reference {reference}); it has been logged."
