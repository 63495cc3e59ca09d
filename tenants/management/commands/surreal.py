from __future__ import annotations

import os
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from kgapp import surreal_server


class Command(BaseCommand):
    help = (
        "Run the local SurrealDB server (the official engine over WebSocket RPC); it admits"
        " only the root credentials of the settings (SURREAL_USER / SURREAL_PASS, or"
        " var/surreal-credentials.json)."
    )

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
        # The app's credentials (SURREAL_USER / SURREAL_PASS, else var/'s file) are the
        # only ones the server admits; they go in its environment, not its argv.
        if not (settings.SURREAL_USER and settings.SURREAL_PASS):
            raise CommandError("set both SURREAL_USER and SURREAL_PASS, or neither")
        credentials = surreal_server.Credentials(settings.SURREAL_USER, settings.SURREAL_PASS)
        os.chdir(surreal_server.ROOT)
        # Replace this process, so signals (Ctrl-C, SIGTERM) reach the server directly.
        os.execve(argv[0], argv, {**os.environ, **credentials.env()})
