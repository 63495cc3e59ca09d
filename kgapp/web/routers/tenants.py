"""Tenants as a whole: listing (members), creating and deleting (staff); your invitations."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.http import HttpRequest
from ninja import Router, Status
from ninja.errors import HttpError

from kgapp.web.auth import AuthenticatedHttpRequest
from kgapp.web.routers.members import member_out
from kgapp.web.schemas import (
    DeleteConfirmIn,
    ErrorOut,
    InvitationOut,
    MemberOut,
    TenantIn,
    TenantOut,
    role_name,
)
from tenants import selectors, services
from tenants.models import Invitation, Tenant

router = Router(tags=["tenants"])


def _staff_only(request: HttpRequest) -> None:
    if not request.user.is_staff:
        raise HttpError(403, "only staff can create or delete tenants")


@router.get("/tenants", response=list[TenantOut])
def tenant_list(request: AuthenticatedHttpRequest) -> list[Tenant]:
    """The tenants you belong to (every tenant, for staff)."""
    return list(selectors.tenants_of_user(request.user))


@router.post("/tenants", response={201: TenantOut, 403: ErrorOut, 422: ErrorOut})
def tenant_create(request: HttpRequest, payload: TenantIn) -> Status[Tenant]:
    """Create a tenant and provision its graph namespace (staff)."""
    _staff_only(request)
    owner = None
    if payload.owner:
        owner = get_user_model().objects.filter(username=payload.owner).first()
        if owner is None:
            raise HttpError(422, f"no user {payload.owner!r}")
    tenant = services.tenant_create(slug=payload.slug, name=payload.name, owner=owner)
    return Status(201, tenant)


@router.delete("/tenants/{slug}", response={204: None, 403: ErrorOut, 404: ErrorOut})
def tenant_delete(request: HttpRequest, slug: str, payload: DeleteConfirmIn) -> Status[None]:
    """Delete a tenant and its whole graph (staff). `confirm` must repeat the slug."""
    _staff_only(request)
    tenant = Tenant.objects.filter(slug=slug).first()
    if tenant is None:
        raise HttpError(404, f"no tenant {slug!r}")
    services.tenant_delete(tenant=tenant, confirm=payload.confirm)
    return Status(204, None)


@router.get("/invitations", response=list[InvitationOut])
def invitation_list(request: AuthenticatedHttpRequest) -> list[InvitationOut]:
    """The tenants that invited you and are waiting for your answer."""
    return [_invitation(i) for i in selectors.invitations_of_user(request.user)]


@router.post("/invitations/{invitation_id}/accept", response={200: MemberOut, 404: ErrorOut})
def invitation_accept(request: AuthenticatedHttpRequest, invitation_id: int) -> MemberOut:
    """Join the tenant with the role you were invited to."""
    return member_out(services.invitation_accept(invitation_id=invitation_id, user=request.user))


@router.delete("/invitations/{invitation_id}", response={204: None, 404: ErrorOut})
def invitation_decline(request: AuthenticatedHttpRequest, invitation_id: int) -> Status[None]:
    services.invitation_decline(invitation_id=invitation_id, user=request.user)
    return Status(204, None)


def _invitation(invitation: Invitation) -> InvitationOut:
    return InvitationOut(
        id=invitation.pk,
        tenant=invitation.tenant.slug,
        tenant_name=invitation.tenant.name,
        role=role_name(invitation.role),
        invited_by=invitation.invited_by.get_username() if invitation.invited_by else None,
        created_at=invitation.created_at,
    )
