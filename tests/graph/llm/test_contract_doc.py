"""docs/llm-contract.md shows the schemas the code actually sends."""

from __future__ import annotations

import json
from pathlib import Path

from kgapp.graph.llm.prompts.community import CommunitySummary
from kgapp.graph.llm.prompts.extract import Extraction
from kgapp.graph.llm.prompts.query import Answer, Keywords
from kgapp.graph.llm.prompts.rank import Ranking
from kgapp.graph.llm.prompts.resolve import Resolution
from kgapp.graph.llm.schema import strict_json_schema

DOC = Path(__file__).resolve().parents[3] / "docs" / "llm-contract.md"


def test_documented_schemas_match_the_code() -> None:
    text = DOC.read_text()
    for task, model in (
        ("extract_graph", Extraction),
        ("resolve_graph", Resolution),
        ("rank_passages", Ranking),
        ("query_keywords", Keywords),
        ("answer_query", Answer),
        ("summarize_community", CommunitySummary),
    ):
        assert f"## Task `{task}`" in text
        assert json.dumps(strict_json_schema(model), indent=2, sort_keys=True) in text, task
