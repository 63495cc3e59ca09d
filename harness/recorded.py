"""Recorded LLM answers (tests/llm_answers/*.json) served by the scripted server."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path
from typing import Any

ANSWERS = Path(__file__).resolve().parents[1] / "tests" / "llm_answers"
_CURRENT = re.compile(r'<episode role="current">\n(.*?)\n</episode>', re.S)


def recorded() -> list[dict[str, Any]]:
    return [json.loads(path.read_text()) for path in sorted(ANSWERS.glob("*.json"))]


def episode_of(body: dict[str, Any]) -> str:
    user = body["messages"][-1]["content"]
    match = _CURRENT.search(user)
    return match.group(1) if match else user


def answer_from_recordings(body: dict[str, Any]) -> dict[str, Any] | None:
    """The recorded answer whose `match` text the request carries; resolve calls with
    no recording get an empty decision (nothing merged, nothing contradicted)."""
    task = body["response_format"]["json_schema"]["name"]
    text = episode_of(body) if task == "extract_graph" else body["messages"][-1]["content"]
    for item in recorded():
        if item["task"] == task and item["match"] in text:
            return item["answer"]
    if task == "resolve_graph":
        return {"entities": [], "facts": []}
    return None


def extraction(body: dict[str, Any], pause: float = 0.0) -> dict[str, Any]:
    """A scripted model for the multi-process runs (faults, cluster): "<person>: I work at
    <place>." is one WORKS_AT fact; nothing is merged or contradicted. `pause`: its
    think time per extraction."""
    if body["response_format"]["json_schema"]["name"] == "resolve_graph":
        return {"entities": [], "facts": []}
    time.sleep(pause)
    speaker, _, text = episode_of(body).partition(": ")
    return works_at(speaker, text.removeprefix("I work at ").removesuffix("."))


def works_at(person: str, place: str) -> dict[str, Any]:
    """An extraction answer: the person, the organisation, and one WORKS_AT fact."""
    return {
        "entities": [
            {"name": person, "entity_type": "Person", "summary": ""},
            {"name": place, "entity_type": "Organization", "summary": ""},
        ],
        "facts": [
            {
                "source": person,
                "relation": "WORKS_AT",
                "target": place,
                "fact": f"{person} works at {place}.",
                "edge_type": "semantic",
                "confidence": 1.0,
                "valid_at": None,
                "invalid_at": None,
            }
        ],
    }
