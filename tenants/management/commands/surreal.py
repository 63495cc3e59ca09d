from __future__ import annotations

import os
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from kgapp import surreal_server


class Command(BaseCommand):
    help = "Run the local SurrealDB server (the official engine over WebSocket RPC)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--bind", default=settings.SURREAL_BIND, help="HOST:PORT (loopback)")
        parser.add_argument(
            "--storage",
            default=settings.SURREAL_STORAGE,
            help="mem:// | rocksdb://PATH | surrealkv://PATH (default: %(default)s)",
        )

    def handle(self, *args: Any, bind: str, storage: str, **options: Any) -> None:
        try:
            argv = surreal_server.command(bind, storage)
        except surreal_server.ServerSetupError as error:
            raise CommandError(str(error)) from error
        os.chdir(surreal_server.ROOT)
        # Replace this process, so signals (Ctrl-C, SIGTERM) reach the server directly.
        os.execv(argv[0], argv)
