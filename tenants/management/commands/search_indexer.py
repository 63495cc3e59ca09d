from __future__ import annotations

import asyncio
import signal
import threading
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from kgapp.graph.errors import GraphError
from kgapp.graph.index.indexer import CHECKPOINT_EVERY, Indexer
from kgapp.graph.store import TenantStore
from tenants.models import Tenant
from tenants.wiring import graph_runtime

TENANTS_EVERY = 2.0  # seconds between reads of the tenant list


class Command(BaseCommand):
    help = (
        "Keep this machine's search indexes (KG_SEARCH_DIR) up to date with every tenant's"
        " change feed. Run one per machine (`make run` does); web and worker processes"
        " then only read the indexes."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--poll", type=float, default=0.2, help="seconds between passes")
        parser.add_argument("--once", action="store_true", help="one pass over every tenant")

    def handle(self, *args: Any, poll: float, once: bool, **options: Any) -> None:
        runtime = graph_runtime()
        namespaces = self._namespaces()

        def stores() -> dict[str, TenantStore]:
            return {namespace: runtime.store(namespace) for namespace in namespaces}

        # One pass commits everything it indexed; a running indexer commits when due.
        indexer = Indexer(stores, poll=poll, checkpoint_every=0 if once else CHECKPOINT_EVERY)
        if once:
            runtime.run(indexer.run_once())
            self.stdout.write(f"indexed {len(namespaces)} tenants")
            return
        stop = threading.Event()
        for number in (signal.SIGINT, signal.SIGTERM):
            signal.signal(number, lambda *_: stop.set())
        stopping = runtime.run(_event())
        running = runtime.submit(indexer.run(stopping))
        self.stdout.write(f"search indexer: {len(namespaces)} tenants, a pass every {poll} s")
        while not stop.wait(TENANTS_EVERY) and not running.done():
            namespaces[:] = self._namespaces()
        runtime.loop.call_soon_threadsafe(stopping.set)
        try:
            running.result(timeout=30)
        except GraphError as error:
            raise CommandError(str(error)) from error

    def _namespaces(self) -> list[str]:
        return [tenant.namespace for tenant in Tenant.objects.all()]


async def _event() -> asyncio.Event:
    return asyncio.Event()  # made on the runtime's loop, which waits on it
