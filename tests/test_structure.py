"""The shape of the graph core: rooms small enough to read, functions short enough to
follow (issue 13). queries.py, the one home of SurrealQL, is the exception in size."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

CORE = Path(__file__).resolve().parents[1] / "kgapp" / "graph"
MAX_MODULE_LINES = 400
MAX_FUNCTION_LINES = 60
LARGE_BY_DESIGN = {"queries.py"}

MODULES = sorted(CORE.rglob("*.py"))


def _name(path: Path) -> str:
    return str(path.relative_to(CORE))


@pytest.mark.parametrize("path", MODULES, ids=_name)
def test_core_modules_are_at_most_400_lines(path: Path) -> None:
    if path.name in LARGE_BY_DESIGN:
        return
    lines = len(path.read_text().splitlines())
    assert lines <= MAX_MODULE_LINES, f"{_name(path)} has {lines} lines"


@pytest.mark.parametrize("path", MODULES, ids=_name)
def test_core_functions_are_at_most_60_lines(path: Path) -> None:
    tree = ast.parse(path.read_text())
    long = [
        f"{node.name} ({node.end_lineno - node.lineno + 1} lines)"
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        and node.end_lineno is not None
        and node.end_lineno - node.lineno + 1 > MAX_FUNCTION_LINES
    ]
    assert not long, f"{_name(path)}: {', '.join(long)}"


@pytest.mark.parametrize("path", MODULES, ids=_name)
def test_core_modules_bind_each_top_level_name_once(path: Path) -> None:
    # A second `NAME = ...` silently replaces the first for every caller (a query of
    # queries.py once did, and its first callers got another statement).
    seen: dict[str, int] = {}
    twice = []
    for node in ast.parse(path.read_text()).body:
        targets = (
            node.targets
            if isinstance(node, ast.Assign)
            else ([node.target] if isinstance(node, ast.AnnAssign) else [])
        )
        for target in targets:
            if isinstance(target, ast.Name):
                if target.id in seen:
                    twice.append(f"{target.id} (lines {seen[target.id]} and {node.lineno})")
                seen[target.id] = node.lineno
    assert not twice, f"{_name(path)}: {', '.join(twice)}"
