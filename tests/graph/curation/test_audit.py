"""The audit log's typed payloads read the entries as they are stored, older ones too."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from surrealdb.data.types.record_id import RecordID

from kgapp.graph.audit import as_audit, audit_written, auto_merge_of, merge_of
from kgapp.graph.errors import GraphError

AT = datetime(2024, 1, 1, tzinfo=UTC)
E = RecordID("entity", "kath")


def entry(action: str, **fields: object) -> dict[str, object]:
    return {"id": RecordID("audit", "a1"), "actor": "c", "action": action, "at": AT, **fields}


def test_an_auto_merge_reads_as_persist_wrote_it() -> None:
    stored = {
        "survivor": E,
        "merged": RecordID("entity", "kate"),
        "name": "Kate",
        "survivor_name": "Kath",
        "rule": "typo",
        "score": 0.91,
        "cosine": None,
        "episode": RecordID("episode", "e1"),
        "facts": [RecordID("relates_to", "f1")],
        "alias": RecordID("alias", "x"),
    }
    assert auto_merge_of(as_audit(entry("auto_merge", after=stored))) == stored


def test_an_older_merge_entry_reads_its_missing_lists_as_empty() -> None:
    before = {"entities": [], "facts": []}
    after = {"survivor": E, "merged": E, "alias_created": RecordID("alias", "m")}
    typed_before, typed_after = merge_of(as_audit(entry("merge", before=before, after=after)))
    assert typed_before["mentions"] == typed_before["candidates"] == []
    assert typed_after["facts_created"] == typed_after["mentions_created"] == []


def test_the_entry_a_transaction_wrote_is_its_last_with_an_action() -> None:
    written = entry("undo", after={"undid": E})
    assert audit_written([None, {"x": 1}, written, []]) == written
    with pytest.raises(GraphError, match="without actor"):
        as_audit({"id": E, "action": "merge", "at": AT})
    with pytest.raises(GraphError, match="has no after"):
        auto_merge_of(as_audit(entry("auto_merge")))
