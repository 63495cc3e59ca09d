"""The suite's fixtures (tests/conftest.py) for the long runs in bench/ written as pytest
modules (bench/faults.py): real SurrealDB server, tenants, the scripted model."""

from tests.conftest import *  # noqa: F403
from tests.conftest import _graph_settings  # noqa: F401  (autouse)
