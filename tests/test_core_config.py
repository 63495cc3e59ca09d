"""The core's configuration: built by the edge from settings, validated, and what the
core's modules read instead of the environment."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from django.test import override_settings

from kgapp.graph.config import CoreConfig, configure, core_config
from kgapp.graph.index import directories
from tenants import wiring


@pytest.mark.parametrize(
    "bad",
    [
        {"search_dir": "var/search"},
        {"model_dir": "var/models"},
        {"search_tenants": 0},
        {"unit_vectors": -1},
    ],
)
def test_a_config_out_of_bounds_is_refused(bad: dict[str, Any]) -> None:
    with pytest.raises((TypeError, ValueError)):
        CoreConfig(**bad)


def test_the_edge_hands_the_core_its_settings(tmp_path: Path) -> None:
    before = core_config()
    try:
        with override_settings(SEARCH_DIR=tmp_path / "search", SEARCH_TENANTS=3):
            assert core_config().search_dir == tmp_path / "search"
            assert core_config().search_tenants == 3
            assert directories.root() == tmp_path / "search"
            assert directories.tenant_dir("t_x") == tmp_path / "search" / "t_x"
        assert core_config() == wiring.core_config()
    finally:
        configure(before)


def test_configure_takes_only_a_core_config() -> None:
    settings_like: Any = {"search_dir": Path("x")}
    with pytest.raises(TypeError):
        configure(settings_like)
