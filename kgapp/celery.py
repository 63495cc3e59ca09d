"""The Celery app, configured from Django settings (CELERY_*)."""

from __future__ import annotations

import os

from celery import Celery
from celery.signals import worker_process_init, worker_process_shutdown, worker_ready

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "kgapp.settings.dev")

app = Celery("kgapp")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks(["kgapp"])


@app.on_after_configure.connect
def _make_queue_dirs(sender: Celery, **kwargs: object) -> None:
    # The filesystem transport needs its folders before the first message.
    options = sender.conf.broker_transport_options or {}
    for key in ("data_folder_in", "data_folder_out", "processed_folder", "control_folder"):
        if options.get(key):
            os.makedirs(options[key], exist_ok=True)


@worker_process_init.connect
def _fresh_runtime(**kwargs: object) -> None:
    # A forked child must not share the parent's SurrealDB sockets or loop thread.
    from tenants.wiring import reset_graph_runtime

    reset_graph_runtime()


@worker_process_shutdown.connect
def _close_runtime(**kwargs: object) -> None:
    from tenants.wiring import reset_graph_runtime

    reset_graph_runtime()


@worker_ready.connect
def _requeue_stale_jobs(**kwargs: object) -> None:
    # Jobs whose worker died while none ran are sent again now, not at beat's first tick.
    from kgapp.tasks import requeue_stale_jobs

    requeue_stale_jobs.delay()
