"""The tools that read (viewer): search facts and entities, an entity or a fact by id,
the episodes, the query context with an answer, the diff between two moments, a job.
Each calls what the REST route for the same read calls.

A parameter's type, limits and default come from the API schema's field for the same
input (`Annotated[..., SearchIn.model_fields["limit"], ...]`), so the tool and the
route refuse the same values; the description after it is written for a model."""

from __future__ import annotations

from typing import Annotated

from mcp.server.mcpserver import Context
from mcp.types import CallToolResult
from pydantic import Field

from kgapp.graph import jobs
from kgapp.graph.ingest import service
from kgapp.graph.records import parse_record_id, to_json
from kgapp.graph.search import diff as diffs
from kgapp.graph.search import history, reads
from kgapp.graph.search.diff import Axis
from kgapp.graph.search.query import Mode
from kgapp.web.mcp import text
from kgapp.web.mcp.calls import answer, caller, parsed
from kgapp.web.schemas import (
    DiffIn,
    DiffOut,
    EpisodeFilter,
    Instant,
    QueryIn,
    QueryOut,
    SearchIn,
    SearchOut,
    TimeIn,
)
from tenants.wiring import llm_model, query_with_models, search_with_models

_SEARCH = SearchIn.model_fields
_QUERY = QueryIn.model_fields
AS_OF = (
    "Valid time (ISO 8601, e.g. 2023-06-01T00:00:00Z): what was true in the world at that"
    " moment. Default: now."
)
KNOWN_AT = (
    "System time (ISO 8601): what the graph believed at that moment, before later"
    " corrections. Default: now."
)
CENTRE = "An entity id (from search_entities): results near it in the graph rank first."


async def search_facts(
    ctx: Context,
    query: Annotated[
        str, _SEARCH["query"], Field(description="What to look for: names, a relation, a topic.")
    ],
    as_of: Annotated[Instant | None, _SEARCH["as_of"], Field(description=AS_OF)],
    known_at: Annotated[Instant | None, _SEARCH["known_at"], Field(description=KNOWN_AT)],
    current_only: Annotated[
        bool,
        Field(
            default=True,
            description="Facts true now as known now (the default). A moment given in as_of"
            " or known_at takes its place.",
        ),
    ],
    entity_types: Annotated[
        list[str], _SEARCH["entity_types"], Field(description="Only facts touching these types.")
    ],
    relations: Annotated[
        list[str], _SEARCH["relations"], Field(description="Only these relations, e.g. WORKS_AT.")
    ],
    center_entity: Annotated[str | None, _SEARCH["center_entity"], Field(description=CENTRE)],
    limit: Annotated[int, _SEARCH["limit"], Field(description="How many facts at most.")],
) -> CallToolResult:
    """Search the facts of the knowledge graph by words and meaning, at any moment: each
    fact says when it was true (valid time) and when the graph held it (system time), and
    which fact superseded it. Use as_of for the past, known_at for what was believed then."""
    who = caller(ctx)
    recipe = "fact_node_distance" if center_entity else "fact_rrf"
    payload = parsed(
        SearchIn,
        query=query,
        recipe=recipe,
        as_of=as_of,
        known_at=known_at,
        current_only=current_only and not (as_of or known_at),
        entity_types=entity_types,
        relations=relations,
        center_entity=center_entity,
        limit=limit,
    )
    found = SearchOut.of(await who.graph.arun(search_with_models, payload.request()))
    hits = found.model_dump(mode="json", exclude_unset=True)["facts"]
    title = f"Facts for {query!r}, {_moment(payload)}"
    said = text.lines(title, map(text.fact, hits), "none found; try other words or moments")
    return answer(said, {"facts": hits})


async def search_entities(
    ctx: Context,
    query: Annotated[str, _SEARCH["query"], Field(description="A name, or words about it.")],
    entity_types: Annotated[
        list[str], _SEARCH["entity_types"], Field(description="Only these types, e.g. Person.")
    ],
    center_entity: Annotated[str | None, _SEARCH["center_entity"], Field(description=CENTRE)],
    limit: Annotated[int, _SEARCH["limit"], Field(description="How many entities at most.")],
) -> CallToolResult:
    """Search the entities (people, organisations, places, ...) by name and meaning.
    Answers their ids, for get_entity and for center_entity in search_facts."""
    who = caller(ctx)
    recipe = "entity_node_distance" if center_entity else "entity_rrf"
    payload = parsed(
        SearchIn,
        query=query,
        recipe=recipe,
        entity_types=entity_types,
        center_entity=center_entity,
        limit=limit,
    )
    found = SearchOut.of(await who.graph.arun(search_with_models, payload.request()))
    hits = found.model_dump(mode="json", exclude_unset=True)["entities"]
    said = text.lines(f"Entities for {query!r}", map(text.entity, hits), "none found")
    return answer(said, {"entities": hits})


async def get_entity(
    ctx: Context,
    entity_id: Annotated[str, Field(description="The entity's id, e.g. 'entity:alice'.")],
    as_of: Annotated[Instant | None, TimeIn.model_fields["as_of"], Field(description=AS_OF)],
    known_at: Annotated[
        Instant | None, TimeIn.model_fields["known_at"], Field(description=KNOWN_AT)
    ],
) -> CallToolResult:
    """An entity with its aliases, and its facts at a moment (default: now)."""
    who = caller(ctx)
    moment = parsed(TimeIn, as_of=as_of, known_at=known_at)
    record = parse_record_id(entity_id, "entity")
    entity = to_json(await who.graph.arun(reads.entity_get, record))
    facts = to_json(await who.graph.arun(reads.entity_facts, record, moment.moment()))
    aliases = ", ".join(entity.get("aliases") or []) or "none"
    said = "\n".join(
        [
            text.entity(entity).removeprefix("- "),
            f"aliases: {aliases}",
            text.lines(f"Facts, {_moment(moment)}", map(text.fact, facts), "none"),
        ]
    )
    return answer(said, {"entity": entity, "facts": facts})


async def get_fact(
    ctx: Context,
    fact_id: Annotated[str, Field(description="The fact's id, e.g. 'relates_to:abc123'.")],
) -> CallToolResult:
    """A fact, with its supersession chain: the versions before and after it, oldest
    first, each with when it was true and when the graph held it."""
    who = caller(ctx)
    record = parse_record_id(fact_id, "relates_to")
    fact = to_json(await who.graph.arun(reads.fact_get, record))
    chain = to_json(await who.graph.arun(history.fact_history, record))
    said = "\n".join(
        [
            text.fact(fact).removeprefix("- "),
            text.lines("Supersession chain, oldest first", map(text.fact, chain), "this fact only"),
        ]
    )
    return answer(said, {"fact": fact, "history": chain})


async def get_episodes(
    ctx: Context,
    saga: Annotated[
        str | None, EpisodeFilter.model_fields["saga"], Field(description="Only this saga's.")
    ],
    document: Annotated[
        str | None,
        EpisodeFilter.model_fields["document"],
        Field(description="Only this document's, e.g. 'document:abc'."),
    ],
    limit: Annotated[int, EpisodeFilter.model_fields["limit"]],
    offset: Annotated[int, EpisodeFilter.model_fields["offset"]],
) -> CallToolResult:
    """The episodes (source passages), newest first: their ids, times and content."""
    who = caller(ctx)
    page = parsed(EpisodeFilter, saga=saga, document=document, limit=limit, offset=offset)
    rows = await who.graph.arun(
        service.episode_list, **page.records(), limit=page.limit, offset=page.offset
    )
    episodes = to_json(rows)
    said = text.lines("Episodes, newest first", map(text.episode, episodes), "none")
    return answer(said, {"episodes": episodes})


async def ask(
    ctx: Context,
    query: Annotated[str, _QUERY["query"], Field(description="The question.")],
    mode: Annotated[
        Mode,
        _QUERY["mode"],
        Field(
            description="local: around the entities named; global: by relations and themes;"
            " hybrid: both; naive: source passages only; mix: all."
        ),
    ],
    as_of: Annotated[Instant | None, _QUERY["as_of"], Field(description=AS_OF)],
    known_at: Annotated[Instant | None, _QUERY["known_at"], Field(description=KNOWN_AT)],
    top_k: Annotated[int, _QUERY["top_k"], Field(description="Entities and passages to read.")],
    max_entity_tokens: Annotated[int, _QUERY["max_entity_tokens"]],
    max_relation_tokens: Annotated[int, _QUERY["max_relation_tokens"]],
    max_total_tokens: Annotated[int, _QUERY["max_total_tokens"]],
) -> CallToolResult:
    """Answer a question from the graph: the context (entities, facts with their validity,
    source passages cited [S1], [S2], ...) within token budgets, and, when the server has
    a model configured, its answer citing those sources."""
    who = caller(ctx)
    await who.limit("query")
    payload = parsed(
        QueryIn,
        query=query,
        mode=mode,
        as_of=as_of,
        known_at=known_at,
        top_k=top_k,
        max_entity_tokens=max_entity_tokens,
        max_relation_tokens=max_relation_tokens,
        max_total_tokens=max_total_tokens,
        answer=llm_model() is not None,
    )
    context = QueryOut.model_validate(await who.graph.arun(query_with_models, payload.request()))
    said = context.context_text
    if context.answer:
        said = f"Answer: {context.answer}\n\n{said}"
    elif not payload.answer:
        said = f"(No model is configured on the server: the context only.)\n\n{said}"
    return answer(said, context.model_dump(mode="json", exclude_unset=True))


async def diff(
    ctx: Context,
    from_moment: Annotated[Instant, Field(description="The first moment (ISO 8601).")],
    to_moment: Annotated[Instant, Field(description="The second moment (ISO 8601).")],
    axis: Annotated[
        Axis,
        DiffIn.model_fields["axis"],
        Field(
            description="valid: what was true in the world at each moment, as known now."
            " known: what the graph believed at each moment."
        ),
    ],
    limit: Annotated[int, DiffIn.model_fields["limit"], Field(description="Facts per list.")],
) -> CallToolResult:
    """What changed between two moments: facts added, ended, and changed (their text or
    validity), on one time axis. from_moment may be after to_moment (the diff runs back)."""
    who = caller(ctx)
    payload = parsed(DiffIn, **{"from": from_moment, "to": to_moment}, axis=axis, limit=limit)
    found = DiffOut.of(await who.graph.arun(diffs.graph_diff, payload.request()))
    result = found.model_dump(mode="json", by_alias=True, exclude_unset=True)
    said = [
        text.counts(
            f"Diff on the {axis} axis, {result['from']} to {result['to']}", result["totals"]
        )
    ]
    said.append(text.lines("Added", map(text.fact, result["added"]), "none"))
    said.append(text.lines("Ended", map(text.fact, result["ended"]), "none"))
    changes = [
        text.fact(c["after"]) + f" | changed {', '.join(c['fields'])}" for c in result["changed"]
    ]
    said.append(text.lines("Changed (as at the second moment)", changes, "none"))
    if result["truncated"]:
        said.append("Lists are cut at `limit`; the totals count them all.")
    return answer("\n".join(said), result)


async def job_status(
    ctx: Context,
    job_id: Annotated[str, Field(description="The job's id, e.g. 'job:abc123'.")],
) -> CallToolResult:
    """A job's status (queued, running, completed, failed), progress, counts (episodes,
    entities, facts created, superseded) and error, if any."""
    who = caller(ctx)
    job = to_json(await who.graph.arun(jobs.job_get, parse_record_id(job_id, "job")))
    return answer(text.job(job), {"job": job})


def _moment(time: TimeIn) -> str:
    if not (time.as_of or time.known_at):
        return "true now, as known now"
    as_of = to_json(time.as_of) if time.as_of else "now"
    known = to_json(time.known_at) if time.known_at else "now"
    return f"true at {as_of}, as known at {known}"
