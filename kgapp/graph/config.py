"""The core's own configuration: one typed, validated object, set once by the edge.

The core reads no environment. The edge (tenants/wiring.py, from Django settings)
builds a `CoreConfig` and hands it to `configure` when the process starts (web, Celery
worker, search indexer); a script that drives the core without Django does the same.
Until then the defaults below hold: the checkout's var/ folder.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from pathlib import Path

_VAR = Path(__file__).resolve().parents[2] / "var"


@dataclass(frozen=True, slots=True)
class CoreConfig:
    """Where the core keeps its derived files on this machine, and how much it holds."""

    # Every tenant's search index (kgapp/graph/index/): derived data.
    search_dir: Path = field(default_factory=lambda: _VAR / "search")
    # Tenants whose opened indexes one process keeps.
    search_tenants: int = 32
    # Passage unit vectors one process keeps for `query` (index/unit_vectors.py).
    unit_vectors: int = 200_000
    # Where the local embedding model's ONNX files are built (local_model.py).
    model_dir: Path = field(default_factory=lambda: _VAR / "models")

    def __post_init__(self) -> None:
        for name in ("search_dir", "model_dir"):
            if not isinstance(getattr(self, name), Path):
                raise TypeError(f"CoreConfig.{name} must be a Path")
        if self.search_tenants < 1:
            raise ValueError("CoreConfig.search_tenants must be at least 1")
        if self.unit_vectors < 0:
            raise ValueError("CoreConfig.unit_vectors must not be negative")


_lock = threading.Lock()
_current = CoreConfig()


def configure(config: CoreConfig) -> None:
    """Make `config` this process's configuration (the edge calls it at start-up)."""
    global _current
    if not isinstance(config, CoreConfig):
        raise TypeError("configure() takes a CoreConfig")
    with _lock:
        _current = config


def core_config() -> CoreConfig:
    """This process's configuration."""
    return _current
