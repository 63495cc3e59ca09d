"""One tenant, its members and its invitations: /api/v1/t/{tenant}/ and .../members."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.http import HttpRequest
from ninja import Router, Status
from ninja.errors import HttpError

from kgapp.graph import stats
from kgapp.web.auth import AuthenticatedHttpRequest
from kgapp.web.routers.shared import DENIED, moved
from kgapp.web.schemas import ErrorOut, MemberIn, MemberOut, TenantDetailOut, role_name
from tenants import selectors, services
from tenants.access import tenant_access
from tenants.models import Invitation, Membership, Role
from tenants.wiring import tenant_graph

router = Router(tags=["tenant"])


@router.get(
    "/t/{tenant}/",
    response={200: TenantDetailOut, **DENIED},
    operation_id=moved("tenant", "tenant_detail"),
)
def tenant_detail(request: HttpRequest, tenant: str) -> TenantDetailOut:
    """The tenant, your role in it, and how big its graph is."""
    access = tenant_access(request.user, tenant)
    counts = tenant_graph(access.tenant).run(stats.graph_counts)
    t = access.tenant
    return TenantDetailOut(
        slug=t.slug,
        name=t.name,
        namespace=t.namespace,
        schema_version=t.schema_version,
        embedding_dim=t.embedding_dim,
        created_at=t.created_at,
        role=role_name(access.role.value),
        counts=counts,
    )


@router.get(
    "/t/{tenant}/members",
    response={200: list[MemberOut], **DENIED},
    operation_id=moved("tenant", "member_list"),
)
def member_list(request: HttpRequest, tenant: str) -> list[MemberOut]:
    """Members, then the usernames invited and not yet joined."""
    access = tenant_access(request.user, tenant)
    members = selectors.memberships_of_tenant(access.tenant)
    invited = selectors.invitations_of_tenant(access.tenant)
    return [member_out(m) for m in members] + [member_out(i) for i in invited]


@router.put(
    "/t/{tenant}/members",
    response={200: MemberOut, 202: MemberOut, 409: ErrorOut, 422: ErrorOut, **DENIED},
    operation_id=moved("tenant", "member_set"),
)
def member_set(
    request: AuthenticatedHttpRequest, tenant: str, payload: MemberIn
) -> Status[MemberOut]:
    """Change a member's role (200), or invite a username (202, the same answer whether
    or not such a user exists: they join when they accept). Owner."""
    access = tenant_access(request.user, tenant, Role.OWNER)
    done = services.member_invite(
        tenant=access.tenant,
        username=payload.username,
        role=Role(payload.role),
        invited_by=request.user,
    )
    return Status(202 if isinstance(done, Invitation) else 200, member_out(done))


@router.delete(
    "/t/{tenant}/members/{username}",
    response={204: None, 409: ErrorOut, **DENIED},
    operation_id=moved("tenant", "member_remove"),
)
def member_remove(request: HttpRequest, tenant: str, username: str) -> Status[None]:
    """Remove a member or withdraw an invitation (owner); a removed member's open
    explorer sockets are closed. The only owner cannot be removed (409)."""
    access = tenant_access(request.user, tenant, Role.OWNER)
    user = (
        get_user_model()
        .objects.filter(username=username, memberships__tenant=access.tenant)
        .first()
    )
    if user is not None:
        services.membership_remove(tenant=access.tenant, user=user)
    elif not services.member_uninvite(tenant=access.tenant, username=username):
        raise HttpError(404, f"{username!r} is neither a member of nor invited to {tenant!r}")
    return Status(204, None)


def member_out(row: Membership | Invitation) -> MemberOut:
    """A member, or a username invited and not yet joined."""
    if isinstance(row, Invitation):
        return MemberOut(
            username=row.username,
            role=role_name(row.role),
            status="invited",
            created_at=row.created_at,
        )
    return MemberOut(
        username=row.user.get_username(),
        role=role_name(row.role),
        status="member",
        created_at=row.created_at,
    )
