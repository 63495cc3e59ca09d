"""Stage: screen the episode, then extract entities and facts (LLM or offline)."""

from __future__ import annotations

import asyncio
import math
from dataclasses import dataclass, field, replace
from typing import cast

from kgapp.graph.embeddings import EmbeddingError
from kgapp.graph.ingest.indexing import embed_units_aside, episode_units
from kgapp.graph.ingest.model import EpisodeInput, EpisodeWork, IngestContext
from kgapp.graph.ingest.offline.extractor import (
    DEFAULT_MODEL,
    ExtractorUnavailable,
    OfflineExtractor,
)
from kgapp.graph.ingest.screen import screen_text
from kgapp.graph.llm.prompts import extract as prompt
from kgapp.graph.llm.prompts.extract import ExtractedFact, Extraction
from kgapp.graph.records import record_key
from kgapp.graph.resolution.canonical import canonical_name, clean_text, display_name, visible_text
from kgapp.graph.resolution.model import EntityDraft, FactDraft
from kgapp.graph.time import parse_when


async def extract(ctx: IngestContext, work: EpisodeWork) -> None:
    episode = work.input
    screening = screen_text(_screened_text(episode))
    if screening.flagged:
        work.screened_out = screening.reasons
        ctx.counts["episodes_screened_out"] += 1
        reasons = ", ".join(screening.reasons)
        ctx.notes.append(f"{record_key(work.record)} stored but not extracted: {reasons}")
        return
    if ctx.llm is None:
        offline = await _extract_offline(ctx, work)
        if offline is None:
            return
        extraction = offline
    else:
        extraction = await _extracted_by_model(ctx, work)
    work.extraction = extraction
    note_left_out(ctx, work, drafts_from(ctx, work, extraction))
    ctx.counts["entities_extracted"] += len(work.entities)
    ctx.counts["facts_extracted"] += len(work.facts)


async def _extracted_by_model(ctx: IngestContext, work: EpisodeWork) -> Extraction:
    """The model's extraction. The passage units are known before it answers: they are
    embedded aside meanwhile (`embed_units_aside`)."""
    assert ctx.llm is not None
    episode = work.input
    embed_units_aside(ctx, work)
    with ctx.timings.measure("extract"):
        return await ctx.llm.structured(
            task=prompt.TASK,
            schema=Extraction,
            system=prompt.system_prompt(
                [t.name for t in ctx.ontology.entity_types],
                [r.name for r in ctx.ontology.relation_types],
            ),
            user=prompt.user_prompt(
                content=episode.content,
                reference_time=episode.reference_time,
                source_description=episode.source_description,
                context=work.context,
            ),
        )


def _screened_text(episode: EpisodeInput) -> str:
    """The text that is screened: a message episode's messages without their speakers
    (speaker labels such as "assistant:" are data here, not role switches)."""
    if episode.source != "message":
        return episode.content
    return "\n".join(m.text for m in episode.turns)


def extract_ahead(ctx: IngestContext, episode: EpisodeInput) -> None:
    """Start the offline extraction of an episode that the job reaches next, and the
    embedding of the names it finds, in a thread: parsing it then overlaps the database
    work of the episodes before it. `extract` takes the result when it gets there."""
    extractor = ctx.extractor or OfflineExtractor(DEFAULT_MODEL)
    key = _ahead_key(episode)
    if ctx.llm is not None or key in ctx.ahead or not extractor.available:
        return
    messages = [replace(m, text=visible_text(m.text)) for m in episode.turns]
    before = _previous_chunk(ctx, episode)

    def run() -> _Parsed:
        if messages:
            extraction = extractor.extract_conversation(
                messages, reference_time=episode.reference_time
            )
        else:
            extraction = extractor.extract(
                visible_text(episode.content),
                reference_time=episode.reference_time,
                context=visible_text(before),
            )
        return _embedded_ahead(ctx, episode, extraction)

    ctx.ahead[key] = asyncio.ensure_future(asyncio.to_thread(run))


@dataclass
class _Parsed:
    """An offline extraction done ahead, with the vectors of its facts (by text) and of
    its episode's passage units (None where embedding failed)."""

    extraction: Extraction
    fact_vectors: dict[str, list[float]]
    unit_vectors: list[list[float]] | None


def _embedded_ahead(ctx: IngestContext, episode: EpisodeInput, extraction: Extraction) -> _Parsed:
    """In the extraction's thread, one model call for what resolution and persist will
    need: the new names (into ctx.name_vectors), the facts' texts and the passage units
    (indexing.embed_episode takes them), so that embedding too overlaps the database
    work of the episodes before."""
    names = list(dict.fromkeys(display_name(e.name) for e in extraction.entities))
    names = [n for n in names if n and n not in ctx.name_vectors]
    facts = list(dict.fromkeys(t for t in map(_fact_text, extraction.facts) if t))
    units = episode_units(episode.source, episode.content)
    try:
        vectors = ctx.embedder.embed([*names, *facts, *units])
    except EmbeddingError:  # resolution embeds them itself, and reports the error there
        return _Parsed(extraction, {}, None)
    ctx.name_vectors.update(zip(names, vectors, strict=False))
    found = dict(zip(facts, vectors[len(names) :], strict=False))
    return _Parsed(extraction, found, vectors[len(names) + len(facts) :])


def _previous_chunk(ctx: IngestContext, episode: EpisodeInput) -> str:
    """The document's chunk read before this one in the job ("" for the first, and for
    episodes of no document); remembers this one for the next."""
    if episode.document is None or episode.source != "chunk":
        return ""
    key = record_key(episode.document)
    before = ctx.previous_text.get(key, "")
    ctx.previous_text[key] = episode.content
    return before


def _ahead_key(episode: EpisodeInput) -> str:
    return f"{episode.reference_time.isoformat()}|{episode.chunk_index}|{episode.content}"


async def _extract_offline(ctx: IngestContext, work: EpisodeWork) -> Extraction | None:
    """The offline extractor's answer, started ahead or now (parsing is CPU work: off the
    event loop that serves every tenant's queries); None when it cannot run: the
    episode is then stored unextracted, and the reason noted once per job."""
    extractor = ctx.extractor or OfflineExtractor(DEFAULT_MODEL)
    extract_ahead(ctx, work.input)  # nothing when it was started ahead
    ahead = ctx.ahead.pop(_ahead_key(work.input), None)
    if ahead is not None:
        with ctx.timings.measure("extract"):
            try:
                parsed = cast(_Parsed, await ahead)
            except ExtractorUnavailable:
                pass  # it failed to load: `problem` now says why
            else:
                work.fact_vectors = parsed.fact_vectors
                if parsed.unit_vectors is not None:
                    work.unit_vectors = parsed.unit_vectors
                return parsed.extraction
    ctx.counts["episodes_not_extracted"] += 1
    note = f"stored but not extracted: {extractor.problem}"
    if note not in ctx.notes:
        ctx.notes.append(note)
    return None


@dataclass
class LeftOut:
    """What `drafts_from` did not keep of an answer, for the job's notes."""

    long_names: list[str] = field(default_factory=list)  # entity names over MAX_NAME_CHARS
    facts_of_long_names: int = 0
    entities_over_cap: int = 0  # listed after MAX_ENTITIES others
    facts_over_cap: int = 0  # after MAX_FACTS others, or naming one entity too many

    def __bool__(self) -> bool:
        return bool(
            self.long_names
            or self.facts_of_long_names
            or self.entities_over_cap
            or self.facts_over_cap
        )


def drafts_from(ctx: IngestContext, work: EpisodeWork, extraction: Extraction) -> LeftOut:
    """Turn the answer into drafts: names cleaned, types and relations mapped onto the
    ontology, dates parsed, one draft per (canonical name, type).

    At most MAX_ENTITIES entities (those listed first, then those only facts name) and
    MAX_FACTS facts are kept. A name over MAX_NAME_CHARS is not a name (a sentence or
    junk): it is left out with every fact that uses it, and the rest is kept. What was
    left out is returned, for the job's notes."""
    work.facts = []
    left_out = LeftOut()
    by_name: dict[str, EntityDraft] = {}
    for item in extraction.entities:
        name = clean_text(item.name)
        if len(name) > prompt.MAX_NAME_CHARS:
            left_out.long_names.append(name)
            continue
        shown = display_name(name)
        key = canonical_name(shown)
        if not shown or key in by_name:
            continue
        if len(by_name) == prompt.MAX_ENTITIES:
            left_out.entities_over_cap += 1
            continue
        by_name[key] = EntityDraft(
            name=shown,
            entity_type=ctx.ontology.entity_type(item.entity_type),
            summary=display_name(item.summary)[: prompt.MAX_SUMMARY_CHARS],
            canonical=key,
        )
    for found in extraction.facts:
        names = (clean_text(found.source), clean_text(found.target))
        if any(len(name) > prompt.MAX_NAME_CHARS for name in names):
            left_out.facts_of_long_names += 1
            continue
        keys = [canonical_name(display_name(name)) for name in names]
        if not all(names) or keys[0] == keys[1]:
            continue
        unlisted = {key for key in keys if key not in by_name}
        if (
            len(work.facts) == prompt.MAX_FACTS
            or len(by_name) + len(unlisted) > prompt.MAX_ENTITIES
        ):
            left_out.facts_over_cap += 1
            continue
        source, target = (_endpoint(ctx, by_name, name) for name in names)
        work.facts.append(_fact_draft(ctx, work, found, source, target))
    work.entities = list(by_name.values())
    return left_out


def _fact_draft(
    ctx: IngestContext,
    work: EpisodeWork,
    found: ExtractedFact,
    source: EntityDraft,
    target: EntityDraft,
) -> FactDraft:
    reference = work.input.reference_time
    valid_at = parse_when(found.valid_at)
    invalid_at = parse_when(found.invalid_at)
    if valid_at is None:
        # Only the end is stated ("left Acme last month"): the fact held until then,
        # from an unknown start; never make it start at the reference time, after
        # its own end.
        valid_at = min(reference, invalid_at) if invalid_at else reference
    elif invalid_at is not None and invalid_at <= valid_at:
        invalid_at = None
    relation = found.relation[: prompt.MAX_TYPE_CHARS]
    confidence = found.confidence if math.isfinite(found.confidence) else 0.0
    return FactDraft(
        source=source,
        target=target,
        relation=ctx.ontology.relation(relation),
        fact=_fact_text(found) or f"{source.name} {relation} {target.name}",
        edge_type=found.edge_type,
        confidence=round(min(max(confidence, 0.0), 1.0), 4),
        valid_at=valid_at,
        invalid_at=invalid_at,
    )


def _endpoint(ctx: IngestContext, by_name: dict[str, EntityDraft], name: str) -> EntityDraft:
    shown = display_name(name)
    key = canonical_name(shown)
    if key not in by_name:  # a fact about an entity the model forgot to list
        by_name[key] = EntityDraft(
            name=shown,
            entity_type=ctx.ontology.entity_type(None),
            summary="",
            canonical=key,
        )
    return by_name[key]


def note_left_out(ctx: IngestContext, work: EpisodeWork, left_out: LeftOut) -> None:
    """Count and note on the job what `drafts_from` left out of one episode's answer."""
    if not left_out:
        return
    episode = record_key(work.record)
    if left_out.long_names or left_out.facts_of_long_names:
        count = len(left_out.long_names)
        first = left_out.long_names[0][:60] + "..." if left_out.long_names else ""
        ctx.counts["entities_left_out"] += count
        ctx.counts["facts_left_out"] += left_out.facts_of_long_names
        ctx.notes.append(
            f"{episode}: left out {count} entity name(s) over {prompt.MAX_NAME_CHARS} "
            f"characters and the {left_out.facts_of_long_names} fact(s) naming them"
            + (f" (first: '{first}')" if first else "")
            + "; the episode's other entities and facts were kept"
        )
    if left_out.entities_over_cap or left_out.facts_over_cap:
        ctx.counts["entities_left_out"] += left_out.entities_over_cap
        ctx.counts["facts_left_out"] += left_out.facts_over_cap
        ctx.notes.append(
            f"{episode}: the extractor gave more than {prompt.MAX_ENTITIES} entities or "
            f"{prompt.MAX_FACTS} facts; left out {left_out.entities_over_cap} entities and "
            f"{left_out.facts_over_cap} facts past those caps"
        )


def _fact_text(found: ExtractedFact) -> str:
    return display_name(found.fact)[: prompt.MAX_FACT_CHARS]
