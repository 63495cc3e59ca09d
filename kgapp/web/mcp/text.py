"""Records as the short lines a model reads: each starts with the id a follow-up call
takes, and says when a fact was true (valid time) and when the graph held it (system
time). Input is the JSON form of records (kgapp.graph.records.to_json)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

Row = Mapping[str, Any]
EXCERPT = 240  # characters of an episode's content shown in a list


def lines(title: str, rows: Iterable[str], empty: str) -> str:
    shown = list(rows)
    if not shown:
        return f"{title}: {empty}"
    return "\n".join([f"{title}:", *shown])


def fact(row: Row) -> str:
    """`- relates_to:k  Alice WORKS_AT Acme Corp: "..." | valid ... | known ...`"""
    source = row.get("source_name") or row.get("source") or row.get("in")
    target = row.get("target_name") or row.get("target") or row.get("out")
    parts = [f"- {row['id']}  {source} {row.get('relation')} {target}"]
    if row.get("fact"):
        parts[0] += f': "{row["fact"]}"'
    parts.append(f"valid {row.get('valid_at')} to {row.get('invalid_at') or 'now'}")
    parts.append(f"known {row.get('created_at')} to {row.get('expired_at') or 'now'}")
    for link in ("supersedes", "superseded_by", "revision_of"):
        if row.get(link):
            parts.append(f"{link.replace('_', ' ')} {row[link]}")
    if row.get("score") is not None:
        parts.append(f"score {float(row['score']):.3f}")
    return " | ".join(parts)


def entity(row: Row) -> str:
    """`- entity:k  Alice (Person): summary`"""
    kind = f" ({row['entity_type']})" if row.get("entity_type") else ""
    summary = f": {row['summary']}" if row.get("summary") else ""
    merged = f" | merged into {row['merged_into']}" if row.get("merged_into") else ""
    return f"- {row['id']}  {row.get('name')}{kind}{summary}{merged}"


def episode(row: Row) -> str:
    """`- episode:k  2024-01-15T00:00:00Z  text [name, source description]: content...`"""
    content = " ".join(str(row.get("content", "")).split())
    if len(content) > EXCERPT:
        content = content[:EXCERPT] + "..."
    about = ", ".join(str(v) for v in (row.get("name"), row.get("source_description")) if v)
    about = f" [{about}]" if about else ""
    return f"- {row['id']}  {row.get('valid_at')}  {row.get('source')}{about}: {content}"


def job(row: Row) -> str:
    head = f"Job {row['id']} ({row.get('kind')}): {row.get('status')}"
    if row.get("total"):
        head += f", {row.get('progress', 0)} of {row['total']}"
    said = [head]
    counts = {k: v for k, v in (row.get("counts") or {}).items() if v}
    if counts:
        said.append("counts: " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())))
    if row.get("error"):
        said.append(f"error: {row['error']}")
    said += [f"note: {note}" for note in row.get("notes") or []]
    if row.get("status") in ("queued", "running"):
        said.append("Not finished: call job_status again in a few seconds.")
    return "\n".join(said)


def counts(title: str, values: Mapping[str, Any]) -> str:
    return f"{title}: " + ", ".join(f"{k.replace('_', ' ')} {v}" for k, v in values.items())
