from __future__ import annotations

import secrets
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser

from kgapp import surreal_server
from kgapp.demo.load import demo_load
from tenants import services
from tenants.models import Role, Tenant


class Command(BaseCommand):
    help = (
        "Create (once) the demo tenant and an admin login, and queue the demo data (once, "
        "unless KG_DEMO_DATA=0); print the login. Safe to re-run."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--username", default="admin")
        parser.add_argument("--tenant", default="demo")
        parser.add_argument("--wait", type=float, default=30, help="seconds to wait for SurrealDB")
        parser.add_argument(
            "--url", default="http://127.0.0.1:8000/", help="where the web server answers"
        )

    def handle(
        self, *args: Any, username: str, tenant: str, wait: float, url: str, **options: Any
    ) -> None:
        if not surreal_server.wait_healthy(settings.SURREAL_URL, timeout=wait):
            raise CommandError(f"SurrealDB at {settings.SURREAL_URL} did not answer in {wait:g}s")
        credentials = settings.VAR_DIR / "demo-login.txt"
        User = get_user_model()
        user = User.objects.filter(username=username).first()
        if user is None or not credentials.exists():
            password = secrets.token_urlsafe(12)
            if user is None:
                user = User.objects.create_superuser(username, f"{username}@example.com", password)
            else:
                user.set_password(password)
                user.save(update_fields=["password"])
            credentials.parent.mkdir(parents=True, exist_ok=True)
            credentials.write_text(f"{username}\n{password}\n")
            credentials.chmod(0o600)
        password = credentials.read_text().splitlines()[1]
        demo = Tenant.objects.filter(slug=tenant).first()
        if demo is None:
            demo = services.tenant_create(slug=tenant, name="Demo", owner=user)
        else:
            services.tenant_provision(demo)
            services.membership_set(tenant=demo, user=user, role=Role.OWNER)
        if settings.DEMO_DATA:
            self._load(demo)
        self.stdout.write(
            self.style.SUCCESS(
                f"\n  Open {url}  and log in as  {username} / {password}\n"
                f"  Demo tenant: /t/{demo.slug}/   API docs: /api/docs\n"
            )
        )

    def _load(self, demo: Tenant) -> None:
        queued = demo_load(demo)
        if queued:
            self.stdout.write(
                f"Loading the demo data into /t/{demo.slug}/: {len(queued)} files queued "
                "for ingestion (the worker runs them in the background; KG_DEMO_DATA=0 skips)"
            )
