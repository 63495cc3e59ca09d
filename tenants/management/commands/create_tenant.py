from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError, CommandParser

from kgapp.graph.errors import GraphError
from tenants import services
from tenants.errors import TenantAccessError
from tenants.models import Role, Tenant


class Command(BaseCommand):
    help = "Create a tenant and provision its SurrealDB namespace (or re-provision one)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("slug")
        parser.add_argument("--name", default="")
        parser.add_argument("--owner", help="username to make the tenant's owner")
        parser.add_argument(
            "--if-missing", action="store_true", help="succeed if the tenant already exists"
        )

    def handle(self, *args: Any, slug: str, name: str, owner: str | None, **options: Any) -> None:
        user = None
        if owner:
            user = get_user_model().objects.filter(username=owner).first()
            if user is None:
                raise CommandError(f"no user {owner!r}")
        try:
            existing = Tenant.objects.filter(slug=slug).first()
            if existing is not None and options["if_missing"]:
                applied = services.tenant_provision(existing)
                if user is not None:
                    services.membership_set(tenant=existing, user=user, role=Role.OWNER)
                self.stdout.write(
                    f"tenant {slug} exists; schema: {', '.join(applied) or 'up to date'}"
                )
                return
            tenant = services.tenant_create(slug=slug, name=name, owner=user)
        except (ValidationError, TenantAccessError, GraphError) as error:
            raise CommandError(str(error)) from error
        self.stdout.write(self.style.SUCCESS(f"created tenant {tenant.slug} ({tenant.namespace})"))
