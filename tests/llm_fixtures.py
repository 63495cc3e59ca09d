"""Pytest fixtures around `tests.llm_server`; imported into tests/conftest.py."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.llm_server import ScriptedLLM


@pytest.fixture
def scripted_llm() -> Iterator[ScriptedLLM]:
    """A started ScriptedLLM with an empty script, stopped after the test."""
    with ScriptedLLM() as server:
        yield server
