from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError, CommandParser

from kgapp.graph.errors import GraphError
from tenants import services, transfer
from tenants.models import Tenant


class Command(BaseCommand):
    help = (
        "Load a tenant export (export_tenant, or GET export?format=jsonl) into an empty"
        " tenant, made first with --create. The whole file is checked before anything is"
        " written; a failure leaves the tenant empty."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("slug")
        parser.add_argument("path", type=Path, help="the export file (.jsonl or .jsonl.gz)")
        parser.add_argument("--create", action="store_true", help="create the tenant first")
        parser.add_argument("--name", default="", help="the new tenant's name (with --create)")

    def handle(self, *args: Any, slug: str, path: Path, create: bool, **options: Any) -> None:
        if not path.is_file():
            raise CommandError(f"no file {path}")
        try:
            tenant = Tenant.objects.filter(slug=slug).first()
            if tenant is None and create:
                tenant = services.tenant_create(slug=slug, name=options["name"] or slug)
            if tenant is None:
                raise CommandError(f"no tenant {slug!r} (add --create to make it)")
            job = transfer.import_file(tenant, path, created_by="manage.py import_tenant")
        except (ValidationError, GraphError) as error:
            raise CommandError(str(error)) from error
        if job["status"] != "completed":
            raise CommandError(f"the import failed: {job.get('error')}")
        records = (job.get("counts") or {}).get("records", 0)
        self.stdout.write(self.style.SUCCESS(f"imported {records:,} records into {slug}"))
