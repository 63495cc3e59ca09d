from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from kgapp.graph.errors import GraphError
from tenants import transfer
from tenants.models import Tenant


class Command(BaseCommand):
    help = (
        "Write a tenant's whole graph to a JSON Lines file (gzip-compressed when the name"
        " ends in .gz), for a backup or to import elsewhere with import_tenant."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("slug")
        parser.add_argument("path", type=Path, help="the file to write, e.g. acme.jsonl.gz")

    def handle(self, *args: Any, slug: str, path: Path, **options: Any) -> None:
        tenant = Tenant.objects.filter(slug=slug).first()
        if tenant is None:
            raise CommandError(f"no tenant {slug!r}")
        if path.exists():
            raise CommandError(f"{path} exists; choose a new file name")
        try:
            size = transfer.export_to_file(tenant, path)
        except (GraphError, OSError) as error:
            path.unlink(missing_ok=True)
            raise CommandError(f"the export failed: {error}") from error
        self.stdout.write(self.style.SUCCESS(f"exported {slug} to {path} ({size:,} bytes)"))
