"""What ingesting an upload will cost, before it is stored: its chunks (cut by the
worker's own chunker), the model calls the pipeline makes for them, their tokens, and
the cost at the price table's rate for the configured model.

Per chunk the pipeline makes one extraction call (`extract.py`), whose prompt holds the
system prompt with the tenant's ontology, the chunk and up to three earlier chunks of
the same document as context (`prepare.CONTEXT_EPISODES`), and at most one batched
resolution call (`decide.py`), made when something extracted may repeat or contradict
what the graph holds; the estimate counts it for every chunk but the first, which
meets an empty document. Input tokens are counted with `chunking.count_tokens` (an
approximation of cl100k that errs high; no tokenizer package is installed), the JSON
schema sent as `response_format` included. What a model answers cannot be counted
before it answers: output tokens are estimated as shares of the input (constants
below), which `bench/cost.py` holds against what a run reports.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from functools import cache

from pydantic import BaseModel
from surrealdb.data.types.record_id import RecordID

from kgapp.graph.chunking import count_tokens
from kgapp.graph.documents.pdf import PdfLimits, pdf_text
from kgapp.graph.documents.upload import ParsedDocument
from kgapp.graph.ingest.chunk import DocumentContent, chunk
from kgapp.graph.ingest.model import EpisodeInput
from kgapp.graph.ingest.prepare import CONTEXT_EPISODES
from kgapp.graph.llm.prices import PriceTable, cost_usd
from kgapp.graph.llm.prompts import extract as extract_prompt
from kgapp.graph.llm.prompts import resolve as resolve_prompt
from kgapp.graph.llm.schema import strict_json_schema
from kgapp.graph.ontology import Ontology, ontology_load
from kgapp.graph.store import TenantStore

# An extraction answer restates the chunk's entities and facts as JSON: about this
# share of the chunk's tokens.
EXTRACTION_OUTPUT_SHARE = 0.6
# A resolution prompt lists the extracted facts with the existing ones they may repeat:
# about this multiple of the extraction's answer; its answer, this share of its prompt.
RESOLUTION_INPUT_FACTOR = 1.5
RESOLUTION_OUTPUT_SHARE = 0.15

_PLACEHOLDER = RecordID("document", "estimate")


@dataclass(frozen=True)
class Estimate:
    """What ingesting something will take; `cost_usd` None: the model has no price."""

    chunks: int
    calls: int
    input_tokens: int
    output_tokens: int
    cost_usd: float | None

    def as_dict(self) -> dict[str, int | float | None]:
        return asdict(self)


@dataclass(frozen=True)
class Upload:
    file_name: str
    data: bytes
    parsed: ParsedDocument


async def upload_estimates(
    store: TenantStore,
    uploads: Sequence[Upload],
    *,
    model: str | None,
    prices: PriceTable,
    pdf: PdfLimits,
) -> list[Estimate]:
    """One estimate per upload, nothing stored; `model` None: the offline extractor
    runs (no calls, no cost). A PDF's text is read as the worker would (DocumentError
    when it cannot be)."""
    ontology = await ontology_load(store)
    estimates = []
    for upload in uploads:
        episodes = await upload_episodes(upload, pdf)
        estimates.append(episodes_estimate(episodes, ontology, model=model, prices=prices))
    return estimates


async def upload_episodes(upload: Upload, pdf: PdfLimits) -> list[EpisodeInput]:
    """The episodes the worker will cut the upload into."""
    parsed = upload.parsed
    text = (
        await pdf_text(upload.file_name, upload.data, pdf) if parsed.kind == "pdf" else parsed.text
    )
    row: DocumentContent = {
        "kind": "conversation" if parsed.kind == "conversation" else "text",
        "text": text,
        "messages": [
            {
                "speaker": m.speaker,
                "text": m.text,
                "timestamp": m.timestamp.isoformat() if m.timestamp else None,
            }
            for m in parsed.messages
        ],
        "file_name": upload.file_name,
        "created_at": datetime.now(UTC),
    }
    return chunk(_PLACEHOLDER, row)


def episodes_estimate(
    episodes: Sequence[EpisodeInput], ontology: Ontology, *, model: str | None, prices: PriceTable
) -> Estimate:
    if model is None:
        return Estimate(len(episodes), 0, 0, 0, 0.0)
    system = extract_prompt.system_prompt(
        [t.name for t in ontology.entity_types], [r.name for r in ontology.relation_types]
    )
    fixed = count_tokens(system) + _schema_tokens(extract_prompt.Extraction)
    resolve_fixed = count_tokens(resolve_prompt.SYSTEM) + _schema_tokens(resolve_prompt.Resolution)
    calls = input_tokens = output_tokens = 0
    for index, episode in enumerate(episodes):
        context = [e.content for e in episodes[max(0, index - CONTEXT_EPISODES) : index]]
        user = extract_prompt.user_prompt(
            content=episode.content,
            reference_time=episode.reference_time,
            source_description=episode.source_description,
            context=context,
        )
        answer = round(EXTRACTION_OUTPUT_SHARE * count_tokens(episode.content))
        calls += 1
        input_tokens += fixed + count_tokens(user)
        output_tokens += answer
        if index > 0:  # the resolution call
            prompt = resolve_fixed + round(RESOLUTION_INPUT_FACTOR * answer)
            calls += 1
            input_tokens += prompt
            output_tokens += round(RESOLUTION_OUTPUT_SHARE * prompt)
    cost = cost_usd(prices, model, input_tokens, output_tokens)
    return Estimate(len(episodes), calls, input_tokens, output_tokens, cost)


def estimates_total(estimates: Sequence[Estimate]) -> Estimate:
    """The estimates together; the cost unknown when any one's is."""
    costs = [e.cost_usd for e in estimates]
    return Estimate(
        chunks=sum(e.chunks for e in estimates),
        calls=sum(e.calls for e in estimates),
        input_tokens=sum(e.input_tokens for e in estimates),
        output_tokens=sum(e.output_tokens for e in estimates),
        cost_usd=None if None in costs else sum(c for c in costs if c is not None),
    )


@cache
def _schema_tokens(schema: type[BaseModel]) -> int:
    return count_tokens(json.dumps(strict_json_schema(schema)))
