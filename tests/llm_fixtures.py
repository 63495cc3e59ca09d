"""Pytest fixtures around `harness.llm_server`; imported into tests/conftest.py."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from harness.llm_server import ScriptedLLM


@pytest.fixture
def scripted_llm() -> Iterator[ScriptedLLM]:
    """A started ScriptedLLM with an empty script, stopped after the test."""
    with ScriptedLLM() as server:
        yield server


def works_at(person: str, organization: str) -> Callable[[dict[str, Any]], dict[str, Any]]:
    """A scripted chat answer: extraction finds `person` WORKS_AT `organization`; any other
    prompt (resolution) finds nothing to merge or end."""

    def answer(body: dict[str, Any]) -> dict[str, Any]:
        if body["response_format"]["json_schema"]["name"] != "extract_graph":
            return {"entities": [], "facts": []}
        return {
            "entities": [
                {"name": person, "entity_type": "Person", "summary": ""},
                {"name": organization, "entity_type": "Organization", "summary": ""},
            ],
            "facts": [
                {
                    "source": person,
                    "relation": "WORKS_AT",
                    "target": organization,
                    "fact": f"{person} works at {organization}.",
                    "edge_type": "semantic",
                    "confidence": 1.0,
                    "valid_at": None,
                    "invalid_at": None,
                }
            ],
        }

    return answer
