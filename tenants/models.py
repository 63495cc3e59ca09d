"""Tenants, who belongs to them with which role, API tokens, and the questions members
asked."""

from __future__ import annotations

from django.conf import settings
from django.core.validators import RegexValidator
from django.db import models

from kgapp.graph.namespaces import namespace_for

SLUG_PATTERN = r"^[a-z0-9]+(?:-[a-z0-9]+)*$"
SLUG_MAX_LENGTH = 40


class Role(models.TextChoices):
    """Ordered: each role can do what the ones before it can."""

    VIEWER = "viewer", "Viewer (read, explore, search)"
    EDITOR = "editor", "Editor (upload, ingest)"
    CURATOR = "curator", "Curator (review merges, edit facts)"
    OWNER = "owner", "Owner (members, settings, delete)"

    @property
    def rank(self) -> int:
        return list(Role).index(self)


class Tenant(models.Model):
    slug = models.CharField(
        max_length=SLUG_MAX_LENGTH,
        unique=True,
        validators=[
            RegexValidator(
                SLUG_PATTERN, "Use lowercase letters and digits, separated by single hyphens."
            )
        ],
        help_text="Lowercase letters, digits and single hyphens; names the URL and the namespace.",
    )
    name = models.CharField(max_length=200)
    created_at = models.DateTimeField(auto_now_add=True)
    embedding_dim = models.PositiveIntegerField(default=384)
    schema_version = models.PositiveIntegerField(default=0)
    # Retention (kgapp/graph/retention/policy.py): keep_all, or drop facts ended and
    # episodes stored more than N days ago. Set by an owner (tenants/retention.py).
    retention_mode = models.CharField(
        max_length=16,
        choices=[("keep_all", "Keep everything"), ("drop", "Drop what has aged")],
        default="keep_all",
    )
    retention_facts_ended_days = models.PositiveIntegerField(null=True, blank=True)
    retention_episodes_days = models.PositiveIntegerField(null=True, blank=True)

    class Meta:
        ordering = ["slug"]

    def __str__(self) -> str:
        return self.name or self.slug

    @property
    def namespace(self) -> str:
        return namespace_for(self.slug)


class Membership(models.Model):
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memberships"
    )
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="memberships")
    role = models.CharField(max_length=16, choices=Role.choices, default=Role.VIEWER)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["user", "tenant"], name="one_membership_per_tenant")
        ]
        ordering = ["tenant__slug", "user__username"]

    def __str__(self) -> str:
        return f"{self.user} in {self.tenant.slug} as {self.role}"


class Invitation(models.Model):
    """An owner's offer of a role, by username, until that user accepts or declines.

    Adding a member always goes through one, whether or not the username exists, so
    an owner cannot learn from the answer (or from the member list) which usernames
    are taken."""

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="invitations")
    username = models.CharField(max_length=150)
    role = models.CharField(max_length=16, choices=Role.choices, default=Role.VIEWER)
    invited_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["tenant", "username"], name="one_invitation_per_name")
        ]
        ordering = ["tenant__slug", "username"]

    def __str__(self) -> str:
        return f"{self.username} invited to {self.tenant.slug} as {self.role}"


class ApiToken(models.Model):
    """A bearer token. Only its SHA-256 digest is stored; the secret is shown once."""

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens"
    )
    name = models.CharField(max_length=100)
    prefix = models.CharField(max_length=16, unique=True, editable=False)
    digest = models.CharField(max_length=64, editable=False)
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True, editable=False)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.name} ({self.prefix}…)"

    @property
    def is_active(self) -> bool:
        return self.revoked_at is None


QUESTIONS_KEPT = 20  # a user's last questions kept per tenant


class Question(models.Model):
    """A question a member asked of a tenant's graph (the Ask page, `POST ask`), with the
    moments it was asked at; the last QUESTIONS_KEPT per user and tenant are kept, for the
    page's history (tenants/services.py question_record)."""

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="questions"
    )
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="questions")
    text = models.TextField()
    as_of = models.DateTimeField(null=True, blank=True)
    known_at = models.DateTimeField(null=True, blank=True)
    asked_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-asked_at", "-pk"]
        indexes = [models.Index(fields=["user", "tenant", "-asked_at"], name="questions_of_user")]

    def __str__(self) -> str:
        return f"{self.user} in {self.tenant.slug}: {self.text[:60]}"
