from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError, CommandParser

from kgapp.graph.errors import GraphError
from tenants import services
from tenants.models import Tenant


class Command(BaseCommand):
    help = "Delete a tenant and its whole graph namespace. Not reversible."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("slug")
        parser.add_argument("--confirm", required=True, help="repeat the slug to confirm")

    def handle(self, *args: Any, slug: str, confirm: str, **options: Any) -> None:
        tenant = Tenant.objects.filter(slug=slug).first()
        if tenant is None:
            raise CommandError(f"no tenant {slug!r}")
        try:
            services.tenant_delete(tenant=tenant, confirm=confirm)
        except (ValidationError, GraphError) as error:
            raise CommandError(str(error)) from error
        self.stdout.write(self.style.SUCCESS(f"deleted tenant {slug}"))
