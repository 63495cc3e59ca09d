"""Writes on tenants, memberships, tokens and asked questions. Graph side effects go
through the core."""

from __future__ import annotations

import hashlib
import logging
import secrets
from datetime import datetime

from django.conf import settings
from django.contrib.auth.models import User
from django.contrib.auth.validators import UnicodeUsernameValidator
from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from kgapp.graph import namespaces, schema
from kgapp.graph.index import directories as search_index
from tenants import events
from tenants.access import check_slug
from tenants.errors import InvitationNotFound, LastOwner, TooManyInvitations
from tenants.models import (
    QUESTIONS_KEPT,
    ApiToken,
    Invitation,
    Membership,
    Question,
    Role,
    Tenant,
)
from tenants.wiring import graph_runtime, migrations, tenant_graph

logger = logging.getLogger(__name__)

TOKEN_PREFIX = "kg"


def tenant_create(*, slug: str, name: str, owner: User | None = None) -> Tenant:
    """Create the tenant row and provision its namespace; neither exists if either fails."""
    check_slug(slug)
    if Tenant.objects.filter(slug=slug).exists():
        raise ValidationError({"slug": f"a tenant {slug!r} already exists"})
    with transaction.atomic():
        tenant = Tenant.objects.create(
            slug=slug, name=name or slug, embedding_dim=settings.EMBEDDING_DIM
        )
        if owner is not None:
            Membership.objects.create(user=owner, tenant=tenant, role=Role.OWNER)
        tenant_provision(tenant)
    return tenant


def tenant_provision(tenant: Tenant) -> list[str]:
    """Define the namespace and apply pending schema migrations; idempotent."""
    runtime = graph_runtime()
    runtime.run(
        namespaces.namespace_define(
            runtime.store(None), tenant.namespace, settings.SURREAL_DATABASE
        )
    )
    graph = tenant_graph(tenant)
    applied = graph.run(schema.migrate, migrations(), embedding_dim=tenant.embedding_dim)
    version = graph.run(schema.schema_version)
    if version != tenant.schema_version:
        tenant.schema_version = version
        tenant.save(update_fields=["schema_version"])
    if applied:
        logger.info("tenant %s: applied %s", tenant.slug, ", ".join(applied))
    return applied


def tenant_delete(*, tenant: Tenant, confirm: str) -> None:
    """Remove the namespace (all of the tenant's graph) and the tenant row.

    `confirm` must repeat the slug: deleting is not reversible.
    """
    if confirm != tenant.slug:
        raise ValidationError({"confirm": f"type the slug {tenant.slug!r} to confirm"})
    runtime = graph_runtime()
    runtime.run(runtime.drop_pool(tenant.namespace))
    runtime.run(namespaces.namespace_remove(runtime.store(None), tenant.namespace))
    search_index.remove(tenant.namespace)  # this machine's; an indexer drops its own
    tenant.delete()


def membership_set(*, tenant: Tenant, user: User, role: Role) -> Membership:
    """Give `user` `role` in the tenant (staff, fixtures, accepted invitations). Refuses
    (LastOwner) to demote the tenant's only owner."""
    with transaction.atomic():
        _lock(tenant)
        if role != Role.OWNER:
            _keep_an_owner(tenant, user)
        membership, _ = Membership.objects.update_or_create(
            tenant=tenant, user=user, defaults={"role": role}
        )
    return membership


def membership_remove(*, tenant: Tenant, user: User) -> bool:
    """Remove the user from the tenant; their open sockets of it are closed. Refuses
    (LastOwner) to remove the tenant's only owner."""
    with transaction.atomic():
        _lock(tenant)
        _keep_an_owner(tenant, user)
        deleted, _ = Membership.objects.filter(tenant=tenant, user=user).delete()
    if deleted:
        events.send_access_revoked(namespace=tenant.namespace, user_id=user.pk)
    return bool(deleted)


def owners_left(tenant: Tenant, *, without: list[int]) -> bool:
    """Whether the tenant keeps an owner once the users `without` are owners no more.
    A tenant that has no owner now (staff made it without one) has nothing to keep."""
    owners = Membership.objects.filter(tenant=tenant, role=Role.OWNER)
    return not owners.exists() or owners.exclude(user__in=without).exists()


def _keep_an_owner(tenant: Tenant, user: User) -> None:
    if not owners_left(tenant, without=[user.pk]):
        raise LastOwner(
            f"{user.get_username()!r} is the only owner of {tenant.slug!r}: make another"
            " member owner first (or delete the tenant)"
        )


def _lock(tenant: Tenant) -> None:
    """Serialise membership changes of one tenant (two owners demoting each other)."""
    Tenant.objects.select_for_update().filter(pk=tenant.pk).first()


def member_invite(
    *, tenant: Tenant, username: str, role: Role, invited_by: User
) -> Membership | Invitation:
    """Change a member's role, or invite `username` to the tenant.

    Whether a user of that name exists is never looked up here: a non-member gets an
    invitation (accepted with `invitation_accept`), so the answer and the member list
    are the same for a taken and a free username."""
    UnicodeUsernameValidator()(username)
    with transaction.atomic():
        _lock(tenant)
        membership = (
            Membership.objects.filter(tenant=tenant, user__username=username)
            .select_related("user")
            .first()
        )
        if membership is not None:
            return membership_set(tenant=tenant, user=membership.user, role=role)
        _room_for_an_invitation(tenant, username)
        invitation, _ = Invitation.objects.update_or_create(
            tenant=tenant, username=username, defaults={"role": role, "invited_by": invited_by}
        )
    return invitation


def _room_for_an_invitation(tenant: Tenant, username: str) -> None:
    """Refuses (TooManyInvitations) a new invitation past the tenant's cap on pending
    ones; changing the role of one already pending is always allowed."""
    pending = Invitation.objects.filter(tenant=tenant)
    cap = settings.INVITATIONS_MAX_PENDING
    if not pending.filter(username=username).exists() and pending.count() >= cap:
        raise TooManyInvitations(
            f"{tenant.slug!r} has {cap} pending invitations, the most it keeps: withdraw"
            " some (DELETE /api/v1/t/{tenant}/members/{username}) before inviting more"
        )


def member_uninvite(*, tenant: Tenant, username: str) -> bool:
    deleted, _ = Invitation.objects.filter(tenant=tenant, username=username).delete()
    return bool(deleted)


def invitation_accept(*, invitation_id: int, user: User) -> Membership:
    """`user` joins with the role they were invited to (a member already keeps theirs)."""
    with transaction.atomic():
        invitation = _invitation_of(invitation_id, user)
        membership, _ = Membership.objects.get_or_create(
            tenant=invitation.tenant, user=user, defaults={"role": invitation.role}
        )
        invitation.delete()
    return membership


def invitation_decline(*, invitation_id: int, user: User) -> None:
    _invitation_of(invitation_id, user).delete()


def _invitation_of(invitation_id: int, user: User) -> Invitation:
    invitation = (
        Invitation.objects.select_related("tenant")
        .filter(pk=invitation_id, username=user.get_username())
        .first()
    )
    if invitation is None:
        raise InvitationNotFound(f"you have no invitation {invitation_id}")
    return invitation


def token_create(*, user: User, name: str) -> tuple[ApiToken, str]:
    """A new token and its secret, `kg_<prefix>_<secret>`: the only time it is visible."""
    prefix = secrets.token_hex(6)
    secret = secrets.token_urlsafe(32)
    token = ApiToken.objects.create(user=user, name=name, prefix=prefix, digest=_digest(secret))
    return token, f"{TOKEN_PREFIX}_{prefix}_{secret}"


def token_revoke(*, token: ApiToken) -> None:
    if token.revoked_at is None:
        token.revoked_at = timezone.now()
        token.save(update_fields=["revoked_at"])


def token_authenticate(raw: str) -> User | None:
    """The active user a token belongs to, or None (unknown, malformed, revoked)."""
    parts = raw.split("_", 2)
    if len(parts) != 3 or parts[0] != TOKEN_PREFIX:
        return None
    token = ApiToken.objects.select_related("user").filter(prefix=parts[1]).first()
    if token is None or not token.is_active or not token.user.is_active:
        return None
    if not secrets.compare_digest(token.digest, _digest(parts[2])):
        return None
    ApiToken.objects.filter(pk=token.pk).update(last_used_at=timezone.now())
    return token.user


def _digest(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


@transaction.atomic
def question_record(
    *,
    user: User,
    tenant: Tenant,
    text: str,
    as_of: datetime | None = None,
    known_at: datetime | None = None,
) -> Question:
    """Keep a question `user` asked of `tenant`'s graph as their newest; the same
    question at the same moments asked again moves up rather than appearing twice, and
    only the QUESTIONS_KEPT newest of the user's in that tenant stay."""
    mine = Question.objects.filter(user=user, tenant=tenant)
    mine.filter(text=text, as_of=as_of, known_at=known_at).delete()
    question = Question.objects.create(
        user=user, tenant=tenant, text=text, as_of=as_of, known_at=known_at
    )
    kept = list(mine.order_by("-asked_at", "-pk").values_list("pk", flat=True)[:QUESTIONS_KEPT])
    mine.exclude(pk__in=kept).delete()
    return question
