"""Request and response bodies of the REST API."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import asdict, replace
from datetime import UTC, datetime
from typing import Annotated, Any, Literal, TypeVar

from ninja import Schema
from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    JsonValue,
    PlainSerializer,
    WithJsonSchema,
    model_validator,
)
from surrealdb.data.types.record_id import RecordID

from kgapp.graph.documents.messages import parse_message_lines
from kgapp.graph.embeddings import Embedder
from kgapp.graph.ingest.model import EpisodeInput
from kgapp.graph.ingest.prepare import saga_record
from kgapp.graph.ingest.service import FactAdded, fact_add
from kgapp.graph.jobs import JOB_STATUSES
from kgapp.graph.ontology import EntityType, Ontology, RelationType
from kgapp.graph.records import parse_record_id, record_key, to_json
from kgapp.graph.resolution.canonical import relation_name
from kgapp.graph.search.ask import Sources
from kgapp.graph.search.diff import DIFF_LIMIT, DIFF_MAX_LIMIT, DiffRequest, DiffResult
from kgapp.graph.search.model import Hit, Method, Reranker, Scope, SearchRequest, SearchResults
from kgapp.graph.search.query import QueryRequest
from kgapp.graph.search.recipes import RECIPES, Recipe
from kgapp.graph.store import TenantStore
from kgapp.graph.time import Moment, in_utc

H = TypeVar("H", bound=BaseModel)
R = TypeVar("R", bound=Mapping[str, object])

RoleName = Literal["viewer", "editor", "curator", "owner"]
_ROLE_NAMES: dict[str, RoleName] = {
    "viewer": "viewer",
    "editor": "editor",
    "curator": "curator",
    "owner": "owner",
}


def role_name(role: str) -> RoleName:
    """A role as stored (tenants.models.Role's value), as the API names it."""
    return _ROLE_NAMES[role]


# Paging: an offset past every row answers an empty page; past this it is refused (the
# store's START takes a 64-bit integer, and no tenant holds this many rows).
MAX_OFFSET = 100_000_000
Offset = Annotated[int, Field(ge=0, le=MAX_OFFSET, description="rows to skip")]


class Page(Schema):
    """One page of a list: `limit` rows after skipping `offset`."""

    limit: int = Field(default=50, ge=1, le=500)
    offset: Offset = 0


# --- moments ------------------------------------------------------------------------------
# Every moment the API takes is stored as a UTC instant with microsecond precision, from
# 0001-01-01T00:00:00Z to 9999-12-31T23:59:59.999999Z. An offset that carries a moment out
# of that range, or a fraction finer than a microsecond, is refused (not clipped or rounded:
# what is stored is what was sent).
MOMENT_RANGE = "0001-01-01T00:00:00Z to 9999-12-31T23:59:59.999999Z"
_FINE_FRACTION = re.compile(r"[T ]\d{2}:\d{2}:\d{2}[.,]\d{6}(\d*)")


def _no_finer_than_microseconds(value: Any) -> Any:
    if isinstance(value, str):
        match = _FINE_FRACTION.search(value)
        if match and match.group(1).strip("0"):
            raise ValueError("moments are kept to the microsecond: give at most 6 fraction digits")
    return value


def _in_utc(value: datetime) -> datetime:
    try:
        return in_utc(value)
    except OverflowError:
        raise ValueError(f"in UTC this moment falls outside {MOMENT_RANGE}") from None


Instant = Annotated[datetime, BeforeValidator(_no_finer_than_microseconds), AfterValidator(_in_utc)]
"""A moment given to the API: an ISO 8601 date-time, in UTC once read (no offset: UTC)."""

Stamp = Annotated[
    datetime,
    AfterValidator(_in_utc),
    PlainSerializer(to_json, return_type=str),
    WithJsonSchema({"type": "string", "format": "date-time"}),
]
"""A moment the API answers with: ISO 8601 in UTC ("Z"), to the microsecond (what is
stored, so that it can be sent back as `known_at` and match)."""


def _record_text(value: object) -> object:
    return record_key(value) if isinstance(value, RecordID) else value


Key = Annotated[str, BeforeValidator(_record_text)]
"""A record id as the API shows it ("entity:abc"); a store's RecordID is read as that."""

JsonField = Annotated[dict[str, JsonValue], BeforeValidator(to_json)]
"""A free-form JSON object (a job's counts, a user's attributes), store values in it
(record ids, datetimes) made JSON."""


class ErrorOut(Schema):
    detail: str


class HealthOut(Schema):
    status: Literal["ok", "degraded"]
    graph: Literal["ok", "unavailable"]
    graph_version: str | None = None


class TenantIn(Schema):
    slug: str = Field(min_length=1, max_length=40, examples=["acme"])
    name: str = Field(default="", max_length=200)
    owner: str | None = Field(default=None, description="username of the first owner")


class TenantOut(Schema):
    slug: str
    name: str
    namespace: str
    schema_version: int
    embedding_dim: int
    created_at: Stamp


class TenantDetailOut(TenantOut):
    role: RoleName
    counts: dict[str, int]


class DeleteConfirmIn(Schema):
    confirm: str = Field(description="the tenant's slug, typed again")


class MemberIn(Schema):
    username: str = Field(min_length=1, max_length=150)
    role: RoleName


class MemberOut(Schema):
    username: str
    role: RoleName
    status: Literal["member", "invited"] = Field(
        description="invited: asked to join, not yet accepted (whether or not the username exists)"
    )
    created_at: Stamp


class InvitationOut(Schema):
    id: int
    tenant: str = Field(description="the tenant's slug")
    tenant_name: str
    role: RoleName
    invited_by: str | None
    created_at: Stamp


class TokenIn(Schema):
    name: str = Field(min_length=1, max_length=100)


class TokenOut(Schema):
    id: int
    name: str
    prefix: str
    created_at: Stamp
    last_used_at: Stamp | None
    revoked_at: Stamp | None


class TokenCreatedOut(TokenOut):
    token: str = Field(description="the secret; shown only now")


class UsageRowOut(Schema):
    """What one model's calls used; `cost_usd` null: the price table has no price for it."""

    model: str
    calls: int
    input_tokens: int
    output_tokens: int
    cost_usd: float | None = None


class JobOut(Schema):
    id: Key
    kind: str
    status: str
    progress: int = 0
    total: int = 0
    phase: str | None = None
    counts: JsonField = {}
    timings: JsonField = {}
    failures: list[JsonField] = []
    notes: list[str] = []
    error: str | None = None
    result: JsonField = {}  # what a kind of job keeps (a retention run: its archive)
    document: Key | None = None
    file_name: str | None = Field(default=None, description="the document's file name (in lists)")
    created_by: str | None = None
    created_at: Stamp | None = None
    started_at: Stamp | None = None
    finished_at: Stamp | None = None
    usage: list[UsageRowOut] = Field(default=[], description="model calls, tokens, cost")


class JobFilter(Page):
    status: str | None = Field(default=None, pattern="^(" + "|".join(JOB_STATUSES) + ")$")


class JobQueuedOut(Schema):
    job_id: Key
    status: str


class UsageFilter(Schema):
    months: int = Field(default=12, ge=1, le=60, description="how many calendar months back")


class MonthUsageOut(Schema):
    """A calendar month (UTC) of a tenant's jobs; `cost_usd` adds up priced calls only,
    `unpriced_models` names the models that had no price."""

    month: str = Field(description="YYYY-MM")
    jobs: int
    calls: int
    input_tokens: int
    output_tokens: int
    cost_usd: float
    unpriced_models: list[str] = []


class EstimateOut(Schema):
    """What ingesting would take; `cost_usd` null when the model has no price."""

    chunks: int
    calls: int
    input_tokens: int
    output_tokens: int
    cost_usd: float | None


class FileEstimateOut(EstimateOut):
    file_name: str


class UploadEstimateOut(Schema):
    model: str | None = Field(description="null: no model configured, the offline extractor runs")
    files: list[FileEstimateOut]
    total: EstimateOut
    confirm_above_tokens: int
    needs_confirmation: bool = Field(description="total input tokens over confirm_above_tokens")


# --- ingestion ------------------------------------------------------------------------


EpisodeSource = Literal["text", "message", "json"]


class EpisodeIn(Schema):
    content: str = Field(min_length=1, max_length=200_000)
    source: EpisodeSource = "text"
    reference_time: Instant | None = Field(
        default=None, description="When the content was true or said; default: now."
    )
    name: str = Field(default="", max_length=200)
    source_description: str = Field(default="", max_length=500)
    saga: str | None = Field(
        default=None, max_length=200, description="Group episodes (a conversation)."
    )

    @model_validator(mode="after")
    def _messages_have_speakers(self) -> EpisodeIn:
        if self.source == "message":
            parse_message_lines(self.content)  # DocumentError (a ValueError) names the line
        return self

    def episode(self) -> EpisodeInput:
        """The episode to submit; without a reference time, it was said now."""
        return EpisodeInput(
            content=self.content,
            source=self.source,
            reference_time=(self.reference_time or datetime.now(UTC)).astimezone(UTC),
            name=self.name,
            source_description=self.source_description,
            saga=self.saga,
        )


class EpisodeFilter(Page):
    saga: str | None = Field(default=None, max_length=200)
    document: str | None = None

    def records(self) -> dict[str, RecordID | None]:
        """The saga and the document whose episodes to list (None: any); InvalidRecordId
        for a `document` that is not a document id."""
        return {
            "saga": saga_record(self.saga) if self.saga else None,
            "document": parse_record_id(self.document, "document") if self.document else None,
        }


class DocumentFilter(Page):
    status: str | None = Field(
        default=None, pattern="^(pending|chunking|extracting|indexing|completed|failed)$"
    )


class EpisodeQueuedOut(Schema):
    episode_id: Key
    job_id: Key


class DocumentUploadIn(Schema):
    """The form fields sent with uploaded files."""

    reference_time: Instant | None = Field(
        default=None,
        description="When the files' content was true or said (their episodes' reference "
        "time); default: the upload's time. A conversation's own timestamps come first.",
    )


class DocumentQueuedOut(Schema):
    document_id: Key
    job_id: Key | None = Field(description="null when the same file was already uploaded")
    duplicate: bool = False
    version: int = Field(default=1, description="2 and up: a new version of a document")


class RemovalPreviewOut(Schema):
    """What deleting a document would remove, and what stays because another document,
    an API call or a curator still holds it (nothing is changed)."""

    episodes_deleted: int
    episodes_kept: int
    facts_deleted: int
    facts_kept: int
    facts_restored: int
    entities_deleted: int
    entities_kept: int
    entity_names_deleted: list[str] = Field(description="up to 20 of them")
    entity_names_kept: list[str] = Field(description="up to 20 of them")


class EntityRefIn(Schema):
    name: str = Field(min_length=1, max_length=300)
    type: str | None = Field(default=None, max_length=80)


class FactIn(Schema):
    source: EntityRefIn
    relation: str = Field(min_length=1, max_length=80)
    target: EntityRefIn
    fact: str | None = Field(default=None, max_length=1000)
    valid_at: Instant | None = None
    invalid_at: Instant | None = None
    confidence: float = Field(default=1.0, ge=0, le=1)

    @model_validator(mode="after")
    def _ends_after_it_starts(self) -> FactIn:
        if self.valid_at and self.invalid_at and self.invalid_at <= self.valid_at:
            raise ValueError("invalid_at must be after valid_at")
        return self

    async def add(self, store: TenantStore, *, embedder: Embedder, created_by: str) -> FactAdded:
        """This fact added to the store's tenant (`service.fact_add`): what the route and
        the MCP tool both run. ValueError for a fact the graph cannot take."""
        return await fact_add(
            store,
            source=(self.source.name, self.source.type),
            relation=self.relation,
            target=(self.target.name, self.target.type),
            fact=self.fact,
            valid_at=self.valid_at,
            invalid_at=self.invalid_at,
            confidence=self.confidence,
            embedder=embedder,
            created_by=created_by,
        )


class EntityTypeIO(Schema):
    name: str = Field(min_length=1, max_length=80, pattern=r"^[A-Za-z][A-Za-z0-9_ ]*$")
    description: str = Field(default="", max_length=500)


class RelationTypeIO(Schema):
    name: str = Field(min_length=1, max_length=80, description="stored UPPER_SNAKE")
    description: str = Field(default="", max_length=500)
    single_valued: bool = False
    aliases: list[Annotated[str, Field(min_length=1, max_length=80)]] = Field(
        default_factory=list, max_length=50
    )


class OntologyIO(Schema):
    entity_types: list[EntityTypeIO] = Field(max_length=200)
    relation_types: list[RelationTypeIO] = Field(max_length=500)

    def ontology(self) -> Ontology:
        """The ontology to save (relation names in their stored UPPER_SNAKE form)."""
        return Ontology(
            entity_types=tuple(EntityType(t.name, t.description) for t in self.entity_types),
            relation_types=tuple(
                RelationType(
                    relation_name(r.name), r.description, r.single_valued, tuple(r.aliases)
                )
                for r in self.relation_types
            ),
        )


class OntologyOut(OntologyIO):
    notice: str | None = Field(
        default=None,
        description="set when the default stands in for a stored ontology that no longer loads",
    )

    @classmethod
    def of(cls, current: Ontology) -> OntologyOut:
        return cls(
            entity_types=[
                EntityTypeIO(name=t.name, description=t.description) for t in current.entity_types
            ],
            relation_types=[
                RelationTypeIO(
                    name=r.name,
                    description=r.description,
                    single_valued=r.single_valued,
                    aliases=list(r.aliases),
                )
                for r in current.relation_types
            ],
            notice=current.fallback or None,
        )


class GraphRecord(BaseModel):
    """A graph record as the API answers with it: every field it may carry is named (a
    field added to the store is added here to reach clients). Built from the store's
    record as read (record ids, datetimes) or from its JSON form."""


class FactCore(GraphRecord):
    """A fact: `source` -relation-> `target`, valid over [valid_at, invalid_at) in the
    world and known over [created_at, expired_at) in the graph."""

    id: Key
    source: Key
    target: Key
    relation: str
    edge_type: str
    fact: str
    confidence: float
    valid_at: Stamp
    invalid_at: Stamp | None = None
    created_at: Stamp
    expired_at: Stamp | None = None
    supersedes: Key | None = None
    superseded_by: Key | None = None
    revision_of: Key | None = None


class FactOut(FactCore):
    episodes: list[Key] = Field(description="the episodes that say it")


class StatementOut(BaseModel):
    """One way an episode stated a fact (a fact said again keeps each wording)."""

    episode: Key
    fact: str
    valid_at: Stamp
    confidence: float


class FactAddedOut(FactOut):
    """A fact as stored (`POST facts`): its endpoints also under the store's names `in`
    and `out` (the route answers by alias)."""

    in_: Key = Field(alias="in")
    out: Key
    attributes: JsonField = {}
    statements: list[StatementOut] | None = None
    retrieval_count: float = 0.0

    @model_validator(mode="before")
    @classmethod
    def _ends_named(cls, fact: object) -> object:
        """A stored fact (`in` -relation-> `out`) with its endpoints named source and
        target too."""
        if isinstance(fact, dict) and "in" in fact:
            return {**fact, "source": fact["in"], "target": fact.get("out")}
        return fact


# --- retrieval requests --------------------------------------------------------------------

RecipeName = Literal[tuple(RECIPES)]  # type: ignore[valid-type]


class TimeIn(Schema):
    as_of: Instant | None = Field(default=None, description="valid time; default now")
    known_at: Instant | None = Field(default=None, description="system time; default now")
    current_only: bool = Field(
        default=False, description="valid now and not expired (the default without a moment)"
    )

    @model_validator(mode="after")
    def _one_moment(self) -> TimeIn:
        if self.current_only and (self.as_of or self.known_at):
            raise ValueError("current_only means now: leave out as_of and known_at, or unset it")
        return self

    def moment(self) -> Moment:
        return Moment.of(self.as_of, self.known_at)


class SearchIn(TimeIn):
    query: str = Field(min_length=1, max_length=2000)
    recipe: RecipeName | None = Field(  # type: ignore[valid-type]
        default=None, description="a named configuration; sets scopes, methods and reranker"
    )
    scopes: list[Scope] = Field(default=[Scope.FACTS, Scope.ENTITIES], min_length=1)
    methods: list[Method] = Field(default=[Method.BM25, Method.COSINE], min_length=1)
    reranker: Reranker = Reranker.RRF
    center_entity: str | None = None
    limit: int = Field(default=10, ge=1, le=100)
    min_score: float = Field(default=0.0, ge=0)
    mmr_lambda: float = Field(default=0.5, ge=0, le=1)
    entity_types: list[str] = Field(default_factory=list, max_length=50)
    relations: list[str] = Field(default_factory=list, max_length=50)
    edge_types: list[Literal["semantic", "temporal", "causal", "entity"]] = Field(
        default_factory=list
    )

    def request(self) -> SearchRequest:
        """The core's search; a recipe's scopes, methods and reranker win over the fields'.
        InvalidRecordId for a `center_entity` that is not an entity id."""
        center = parse_record_id(self.center_entity, "entity") if self.center_entity else None
        chosen = RECIPES.get(self.recipe or "") or Recipe(
            tuple(self.scopes), tuple(self.methods), self.reranker
        )
        return SearchRequest(
            query=self.query,
            scopes=chosen.scopes,
            methods=chosen.methods,
            reranker=chosen.reranker,
            moment=self.moment(),
            center_entity=center,
            limit=self.limit,
            min_score=self.min_score,
            mmr_lambda=self.mmr_lambda,
            entity_types=tuple(self.entity_types),
            relations=tuple(relation_name(r) for r in self.relations),
            edge_types=tuple(self.edge_types),
        )


class PinIn(Schema):
    pinned: bool = Field(description="true pins the entity into the first view; false unpins")


class Lookup(Schema):
    q: str = Field(min_length=1, max_length=300)
    limit: int = Field(default=10, ge=1, le=100)


class EntityEpisodesPage(Page):
    limit: int = Field(default=20, ge=1, le=100)


class Neighbourhood(TimeIn):
    depth: int = Field(default=1, ge=1, le=3)
    limit: int = Field(default=200, ge=1, le=2000)


class GraphIn(Schema):
    as_of: Instant | None = None
    known_at: Instant | None = None
    seed: str | None = Field(default=None, description="an entity id to centre on")
    depth: int = Field(default=2, ge=1, le=3, description="hops around the seed")
    entity_types: list[str] = Field(default_factory=list, max_length=50)
    limit: int = Field(default=200, ge=1, le=5000)

    def moment(self) -> Moment | None:
        """The moment to read at; None: every fact with its whole history."""
        return Moment.of(self.as_of, self.known_at) if self.as_of or self.known_at else None


class LayoutIn(Schema):
    count: int = Field(ge=0, le=20000, description="how many nodes")
    edges: list[tuple[int, int]] = Field(default_factory=list, max_length=100000)
    aspect: float = Field(1.0, ge=0.1, le=10, description="width / height of the drawing area")

    @model_validator(mode="after")
    def _in_range(self) -> LayoutIn:
        if any(not (0 <= a < self.count and 0 <= b < self.count) for a, b in self.edges):
            raise ValueError("every edge joins two node numbers between 0 and count - 1")
        return self


class QuestionIn(TimeIn):
    """A question, the moment to read the graph at, and how (`POST query`, `POST ask`)."""

    query: str = Field(min_length=1, max_length=2000)
    mode: Literal["local", "global", "hybrid", "naive", "mix"] = "hybrid"
    top_k: int = Field(default=10, ge=1, le=100)
    max_entity_tokens: int = Field(default=1500, ge=50, le=50_000)
    max_relation_tokens: int = Field(default=2500, ge=50, le=50_000)
    max_total_tokens: int = Field(default=6000, ge=100, le=200_000)

    def request(self) -> QueryRequest:
        return QueryRequest(
            question=self.query,
            mode=self.mode,
            moment=self.moment(),
            top_k=self.top_k,
            max_entity_tokens=self.max_entity_tokens,
            max_relation_tokens=self.max_relation_tokens,
            max_total_tokens=self.max_total_tokens,
        )


class QueryIn(QuestionIn):
    answer: bool = False

    def request(self) -> QueryRequest:
        return replace(super().request(), answer=self.answer)


class AskIn(QuestionIn):
    mode: Literal["local", "global", "hybrid", "naive", "mix"] = Field(
        default="mix",
        description="mix (the default here): entities, facts and the source passages the"
        " answer cites as [S1], [S2], ...",
    )


class CommunitiesIn(Schema):
    as_of: Instant | None = Field(default=None, description="a past detection; default current")
    limit: int = Field(default=100, ge=1, le=1000)


class RebuildIn(Schema):
    as_of: Instant | None = Field(
        default=None, description="detect for the graph as it was then (kept apart)"
    )


# --- graph records, as the API answers with them ------------------------------------------


class RecordOut(GraphRecord):
    id: Key


class FactView(FactOut):
    """A fact as retrieval reads it: its endpoints' names and how often it was retrieved."""

    source_name: str | None = None
    target_name: str | None = None
    retrieval_count: float = 0.0


class EntityOut(RecordOut):
    name: str
    entity_type: str | None = None  # absent on a search hit found by activation alone
    summary: str = ""
    degree: int = 0
    merged_into: Key | None = None


class EntityMatchOut(EntityOut):
    """An entity found by its name (`score`: how close), or reached by spreading
    activation from a question's names (`activation`)."""

    score: float | None = None
    activation: float | None = None


class EntityDetailOut(EntityOut):
    canonical_name: str | None = None
    pinned: bool = False
    aliases: list[str] = []
    labels: list[str] = []
    attributes: JsonField = {}
    created_at: Stamp | None = None
    first_seen_at: Stamp | None = None
    last_seen_at: Stamp | None = None


class EpisodeFields(RecordOut):
    """What every episode the API answers with has."""

    name: str = ""
    content: str
    source: str
    source_description: str = ""
    valid_at: Stamp
    created_at: Stamp | None = None
    content_hash: str | None = None
    document: Key | None = None
    saga: Key | None = None


class EpisodeOut(EpisodeFields):
    """An episode as listed: also the documents that hold it, and its place in the first."""

    documents: list[Key] = []
    chunk_index: int | None = None


class DocumentVersionOut(Schema):
    version: int
    content_hash: str
    file_name: str
    size: int
    uploaded_by: str | None = None
    uploaded_at: Stamp
    summary: str | None = Field(default=None, description="what the version changed")


class DocumentOut(RecordOut):
    file_name: str
    title: str | None = None
    kind: str
    mime: str | None = None
    size: int
    status: str
    chunk_count: int = 0
    episode_count: int | None = Field(
        default=None, description="episodes its current version holds, shared ones too (in lists)"
    )
    fact_count: int | None = Field(
        default=None, description="current facts those episodes support (in lists)"
    )
    error: str | None = Field(default=None, description="why its last job failed")
    content_hash: str
    job: Key | None = None
    saga: Key | None = None
    uploaded_by: str | None = None
    reference_time: Stamp | None = None
    created_at: Stamp
    updated_at: Stamp | None = None
    usage: list[UsageRowOut] = []
    version: int = 1
    versions: list[DocumentVersionOut] = []


class RemovedOut(GraphRecord):
    """What a deletion took away (facts that only the deleted episodes supported), and
    the facts it brought back (ones the deleted episodes had superseded)."""

    model_config = ConfigDict(from_attributes=True)

    episodes_deleted: int = 0
    episodes_kept: int = 0
    facts_deleted: int = 0
    facts_restored: int = 0
    entities_deleted: int = 0
    entities_changed: int = 0


class CommunityOut(RecordOut):
    name: str
    summary: str = ""
    level: int = 0
    member_count: int = 0
    fact_count: int | None = None
    resolution: float | None = None
    as_of: Stamp | None = None
    created_at: Stamp | None = None


class CommunityMemberOut(RecordOut):
    name: str
    entity_type: str
    degree: int = 0


class CommunityDetailOut(CommunityOut):
    fingerprint: str | None = None
    updated_at: Stamp | None = None
    members: list[CommunityMemberOut] = []


# --- retrieval answers ---------------------------------------------------------------------


class Scored(BaseModel):
    score: float
    found_by: list[str]


class FactHitOut(FactView, Scored):
    """A fact a search found, with its score and the methods that found it."""


class EntityHitOut(EntityOut, Scored):
    activation: float | None = None


class EpisodeHitOut(EpisodeFields, Scored):
    """An episode a search found (a passage), with its score."""


class CommunityHitOut(CommunityOut, Scored):
    """A community a search found, with its score."""


class SearchOut(BaseModel):
    facts: list[FactHitOut]
    entities: list[EntityHitOut]
    episodes: list[EpisodeHitOut]
    communities: list[CommunityHitOut]

    @classmethod
    def of(cls, results: SearchResults) -> SearchOut:
        return cls(
            facts=_hits(FactHitOut, results.facts),
            entities=_hits(EntityHitOut, results.entities),
            episodes=_hits(EpisodeHitOut, results.episodes),
            communities=_hits(CommunityHitOut, results.communities),
        )


def _hits(kind: type[H], hits: Sequence[Hit[R]]) -> list[H]:
    # The hit's own score wins over a method's score left on the record.
    return [
        kind.model_validate({**h.record, "id": h.id, "score": h.score, "found_by": h.found_by})
        for h in hits
    ]


class KeywordsOut(BaseModel):
    high_level: list[str]
    low_level: list[str]


class ChunkOut(EpisodeFields):
    """A source passage of the context: its episode, the excerpts kept, its reference."""

    score: float | None = None
    ref: str
    excerpts: list[str] = []


class QueryOut(BaseModel):
    """The context of a question (read from the core's QueryResult)."""

    model_config = ConfigDict(from_attributes=True)

    keywords: KeywordsOut
    entities: list[EntityMatchOut]
    facts: list[FactView]
    chunks: list[ChunkOut]
    context_text: str
    answer: str | None = None


# --- POST ask: its answer, one JSON object a line ---------------------------------------


class PassageOut(BaseModel):
    """A passage the answer may cite by its `ref` ([S1]): where it came from and when."""

    ref: str
    episode: str
    name: str
    document: str | None = Field(description="the document's title or file name, if any")
    said_at: Stamp
    excerpts: list[str]


class SourceFactOut(BaseModel):
    id: str
    fact: str
    relation: str
    source: str
    source_name: str
    target: str
    target_name: str
    valid_at: Stamp
    invalid_at: Stamp | None


class SourceEntityOut(BaseModel):
    id: str
    name: str
    entity_type: str | None


class SourcesLine(BaseModel):
    """The first line: what the answer is drawn from."""

    type: Literal["sources"] = "sources"
    passages: list[PassageOut]
    facts: list[SourceFactOut]
    entities: list[SourceEntityOut]

    @classmethod
    def of(cls, sources: Sources) -> SourcesLine:
        return cls.model_validate(asdict(sources))


class DeltaLine(BaseModel):
    """The next piece of the answer's text, as the model wrote it."""

    type: Literal["delta"] = "delta"
    text: str


class DoneLine(BaseModel):
    """The answer is complete; what its model call used."""

    type: Literal["done"] = "done"
    usage: list[UsageRowOut]


class AnswerUnavailableLine(BaseModel):
    """No model is configured: the sources are all there is."""

    type: Literal["answer_unavailable"] = "answer_unavailable"
    detail: str


class AnswerErrorLine(BaseModel):
    """The model failed while answering; the sources still stand."""

    type: Literal["error"] = "error"
    detail: str


class QuestionOut(Schema):
    text: str
    as_of: Stamp | None
    known_at: Stamp | None
    asked_at: Stamp


class NodeDataOut(RecordOut):
    label: str
    type: str
    degree: int = 0
    mentions: int = Field(0, description="episodes that mention the entity")
    named: bool = Field(False, description="whether its name reads as a proper name")
    pinned: bool = Field(False, description="pinned by a curator: always in the first view")
    salience: float = Field(
        0, description="what the first view ranks by: mentions, facts, a proper name, a pin"
    )
    summary: str = ""
    created_at: Stamp | None = None
    community: Key | None = None


class EdgeDataOut(FactCore):
    pass


class NodeOut(BaseModel):
    data: NodeDataOut


class EdgeOut(BaseModel):
    data: EdgeDataOut


class GraphOut(BaseModel):
    """Cytoscape.js elements."""

    nodes: list[NodeOut]
    edges: list[EdgeOut]


class LayoutOut(BaseModel):
    positions: list[Annotated[list[float], Field(min_length=2, max_length=2)]] = Field(
        description="[x, y] of each node, in node order"
    )


# --- diff between two moments -------------------------------------------------------------


class DiffIn(Schema):
    """Two moments on one axis: valid time (as known now) or system time ("as known at",
    over all valid times). `from` may be after `to`: the diff then runs backwards."""

    model_config = ConfigDict(populate_by_name=True)

    from_: Instant = Field(alias="from", description="the first moment (ISO 8601)")
    to: Instant = Field(description="the second moment (ISO 8601)")
    axis: Literal["valid", "known"] = Field(
        default="valid", description="valid: true in the world then; known: believed then"
    )
    limit: int = Field(default=DIFF_LIMIT, ge=1, le=DIFF_MAX_LIMIT, description="facts per list")

    def request(self) -> DiffRequest:
        return DiffRequest(from_=self.from_, to=self.to, axis=self.axis, limit=self.limit)


class DiffFactOut(FactCore):
    source_name: str | None = None
    target_name: str | None = None


class DiffChangeOut(BaseModel):
    before: DiffFactOut = Field(description="the fact's version at `from`")
    after: DiffFactOut = Field(description="its version at `to`")
    fields: list[str] = Field(description="what differs: fact, valid_at, invalid_at")


class DiffTotals(BaseModel):
    added: int
    ended: int
    changed: int


class DiffOut(BaseModel):
    """Facts present at `to` and not at `from` (added), the reverse (ended), and the
    facts present at both in two versions (changed). Each list holds at most `limit`
    facts, earliest valid first; `totals` counts them all."""

    model_config = ConfigDict(populate_by_name=True)

    axis: Literal["valid", "known"]
    from_: Stamp = Field(alias="from")
    to: Stamp
    added: list[DiffFactOut]
    ended: list[DiffFactOut]
    changed: list[DiffChangeOut]
    totals: DiffTotals
    truncated: bool = Field(description="a list holds fewer facts than its total")

    @classmethod
    def of(cls, result: DiffResult) -> DiffOut:
        return cls.model_validate(
            {
                "axis": result.request.axis,
                "from": result.request.from_,
                "to": result.request.to,
                "added": result.added,
                "ended": result.ended,
                "changed": [
                    {"before": c.before, "after": c.after, "fields": list(c.fields)}
                    for c in result.changed
                ],
                "totals": result.totals,
                "truncated": result.truncated,
            }
        )


# --- retention ----------------------------------------------------------------------------


class RetentionPolicyIO(Schema):
    """keep_all (the default), or drop: facts ended in system time more than
    `facts_ended_days` ago, episodes stored more than `episodes_days` ago (either may be
    empty: that kind is kept)."""

    mode: Literal["keep_all", "drop"] = "keep_all"
    facts_ended_days: int | None = Field(default=None, description="1 to 36500 days")
    episodes_days: int | None = Field(default=None, description="1 to 36500 days")


class RetentionHistoryOut(Schema):
    id: str
    actor: str
    action: str
    at: str
    before: JsonField | None = None
    after: JsonField | None = None


class RetentionOut(Schema):
    policy: RetentionPolicyIO
    history: list[RetentionHistoryOut]


class RetentionPreviewOut(Schema):
    policy: RetentionPolicyIO
    now: str
    facts_ended_before: str | None = None
    episodes_before: str | None = None
    counts: dict[str, int]
    sample: dict[str, list[JsonField]]


class RetentionArchiveOut(Schema):
    name: str
    size: int
    modified_at: datetime
