"""The architecture rules the code review relies on, checked on every run."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SURREALQL = re.compile(
    r"""["'](?:\s*)(SELECT|RELATE|DEFINE|UPSERT|DELETE|UPDATE|CREATE|LIVE SELECT|REMOVE|INSERT)\s""",
)


def tracked_python() -> list[Path]:
    out = subprocess.run(["git", "ls-files", "*.py"], cwd=ROOT, capture_output=True, text=True)
    files = [ROOT / line for line in out.stdout.split()]
    return files or list(ROOT.glob("kgapp/**/*.py")) + list(ROOT.glob("tenants/**/*.py"))


def test_surrealql_lives_only_in_the_queries_module() -> None:
    stray = [
        str(path.relative_to(ROOT))
        for path in tracked_python()
        if path.relative_to(ROOT).parts[0] not in {"tests", "bench"}
        and path.name != "queries.py"
        and SURREALQL.search(path.read_text(encoding="utf-8"))
    ]
    assert stray == []


def test_graph_core_has_no_django_import() -> None:
    offenders = [
        str(path.relative_to(ROOT))
        for path in (ROOT / "kgapp" / "graph").rglob("*.py")
        if re.search(
            r"^\s*(from|import)\s+(django|ninja|channels|celery|tenants)\b",
            path.read_text(encoding="utf-8"),
            re.M,
        )
    ]
    assert offenders == []


def test_no_third_party_javascript_is_committed() -> None:
    out = subprocess.run(
        ["git", "ls-files", "*.js", "*.mjs"], cwd=ROOT, capture_output=True, text=True
    )
    for name in out.stdout.split():
        assert not name.startswith(("node_modules/", "frontend/static/vendor")), name
        text = (ROOT / name).read_text(encoding="utf-8")
        assert "@license" not in text and len(text) < 50_000, f"{name} looks vendored"


def test_graph_core_reads_no_environment() -> None:
    """The core gets its configuration from the edge (kgapp/graph/config.py), never from
    the process environment."""
    offenders = [
        str(path.relative_to(ROOT))
        for path in (ROOT / "kgapp" / "graph").rglob("*.py")
        if re.search(r"os\.environ|getenv", path.read_text(encoding="utf-8"))
    ]
    assert offenders == []
