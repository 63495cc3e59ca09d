"""kgapp: a multi-tenant bi-temporal knowledge graph on SurrealDB.

The Celery app lives in `kgapp.celery` and is loaded by `kgapp.web` when Django
starts; importing this package alone (as the graph core does) loads neither.
"""
