"""The tools that write (editor): add an episode, add a fact, delete an episode. Each
calls what the REST route for the same write calls.

A parameter's type, limits and default come from the API schema's field for the same
input (`Annotated[..., EpisodeIn.model_fields["content"], ...]`), so the tool and the
route refuse the same values; the description after it is written for a model."""

from __future__ import annotations

from typing import Annotated

from asgiref.sync import sync_to_async
from channels.db import database_sync_to_async
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult
from pydantic import Field

from kgapp import tasks
from kgapp.graph import jobs
from kgapp.graph.ingest import service
from kgapp.graph.records import parse_record_id, to_json
from kgapp.graph.search import reads
from kgapp.web.mcp import text
from kgapp.web.mcp.calls import answer, caller, parsed
from kgapp.web.schemas import EntityRefIn, EpisodeIn, EpisodeSource, FactAddedOut, FactIn, Instant
from tenants.models import Role
from tenants.wiring import embedder

_EPISODE = EpisodeIn.model_fields
_FACT = FactIn.model_fields


async def add_memory(
    ctx: Context,
    content: Annotated[
        str,
        _EPISODE["content"],
        Field(description="What to remember: a passage, a note, a conversation, a JSON record."),
    ],
    source: Annotated[
        EpisodeSource,
        _EPISODE["source"],
        Field(
            description="text: prose. message: a conversation, one 'speaker: text' per line."
            " json: a JSON document."
        ),
    ],
    reference_time: Annotated[
        Instant | None,
        _EPISODE["reference_time"],
        Field(
            description="When the content was true or said (ISO 8601, UTC unless it has an"
            " offset, e.g. 2024-03-01T09:00:00Z); dates in the text are read relative to it."
            " Default: now."
        ),
    ],
    name: Annotated[str, _EPISODE["name"], Field(description="A short title for the episode.")],
    source_description: Annotated[
        str,
        _EPISODE["source_description"],
        Field(description="Where it comes from, e.g. 'Slack #sales' or 'meeting notes'."),
    ],
    saga: Annotated[
        str | None,
        _EPISODE["saga"],
        Field(description="Groups episodes in order, e.g. one conversation or one project."),
    ],
) -> CallToolResult:
    """Add an episode to the knowledge graph (editor role). Entities and facts are
    extracted from it by a background job, resolved against what the graph knows, and
    facts it contradicts are superseded, not deleted. Answers the episode id and the job
    id: call job_status until the job is completed, then search_facts finds what it said."""
    who = caller(ctx, Role.EDITOR)
    payload = parsed(
        EpisodeIn,
        content=content,
        source=source,
        reference_time=reference_time,
        name=name,
        source_description=source_description,
        saga=saga,
    )
    episode_id, queued = await database_sync_to_async(tasks.queue_episode)(
        who.tenant, payload.episode(), created_by=who.username
    )
    job = to_json(await who.graph.arun(jobs.job_get, parse_record_id(queued["id"], "job")))
    said = f"Episode {episode_id} added; its ingestion is job {job['id']}.\n{text.job(job)}"
    return answer(said, {"episode_id": episode_id, "job_id": job["id"], "job": job})


async def add_fact(
    ctx: Context,
    source: Annotated[
        EntityRefIn,
        _FACT["source"],
        Field(description="The subject: {name, type?}, e.g. {'name': 'Alice', 'type': 'Person'}."),
    ],
    relation: Annotated[
        str, _FACT["relation"], Field(description="e.g. 'works at' (stored as WORKS_AT).")
    ],
    target: Annotated[
        EntityRefIn,
        _FACT["target"],
        Field(description="The object: {name, type?}, e.g. {'name': 'Acme Corp'}."),
    ],
    fact: Annotated[
        str | None, _FACT["fact"], Field(description="The fact in one sentence (optional).")
    ],
    valid_at: Annotated[
        Instant | None, _FACT["valid_at"], Field(description="When it became true. Default: now.")
    ],
    invalid_at: Annotated[
        Instant | None,
        _FACT["invalid_at"],
        Field(description="When it stopped being true, if it has (after valid_at)."),
    ],
    confidence: Annotated[float, _FACT["confidence"], Field(description="0 to 1.")],
) -> CallToolResult:
    """Add one fact as a triplet, source -relation-> target (editor role). Names are
    resolved to existing entities as extracted facts are, and a single-valued relation
    supersedes the fact it replaces. Answers the fact with its id; a fact the graph
    already held is given back, not added twice."""
    who = caller(ctx, Role.EDITOR)
    payload = parsed(
        FactIn,
        source=source,
        relation=relation,
        target=target,
        fact=fact,
        valid_at=valid_at,
        invalid_at=invalid_at,
        confidence=confidence,
    )
    try:
        added = await who.graph.arun(
            payload.add, embedder=await sync_to_async(embedder)(), created_by=who.username
        )
    except ValueError as error:  # what the route answers with 422
        raise ToolError(str(error)) from error
    row = FactAddedOut.model_validate(added.fact).model_dump(
        mode="json", by_alias=True, exclude_unset=True
    )
    named = to_json(await who.graph.arun(reads.fact_get, parse_record_id(row["id"])))
    said = "Fact added:" if added.created else "The graph already held this fact:"
    return answer(f"{said}\n{text.fact(named)}", {"fact": row, "created": added.created})


async def delete_episode(
    ctx: Context,
    episode_id: Annotated[str, Field(description="The episode's id, e.g. 'episode:abc123'.")],
) -> CallToolResult:
    """Delete an episode (editor role), with every fact and entity that only it
    supported; facts it had superseded become current again. Answers what was removed."""
    who = caller(ctx, Role.EDITOR)
    record = parse_record_id(episode_id, "episode")
    removed = (await who.graph.arun(service.episode_delete, record)).as_dict()
    return answer(text.counts(f"Episode {episode_id} deleted", removed), removed)
