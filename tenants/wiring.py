"""The bridge from Django settings to the graph core: one runtime per process."""

from __future__ import annotations

import functools
import threading
from pathlib import Path

from django.conf import settings
from django.core.signals import setting_changed

from kgapp.graph.config import CoreConfig, configure
from kgapp.graph.documents.pdf import PdfLimits
from kgapp.graph.embeddings import Embedder, OpenAIEmbedder, local_embedder
from kgapp.graph.ingest.offline import OfflineExtractor
from kgapp.graph.llm.cache import SurrealCache
from kgapp.graph.llm.client import LLMClient
from kgapp.graph.llm.transport import LLMConfig
from kgapp.graph.llm.usage import LLMUsage
from kgapp.graph.schema import Migration, load_migrations
from kgapp.graph.search import hybrid
from kgapp.graph.search.ask import Retrieved, ask_sources
from kgapp.graph.search.model import SearchRequest, SearchResults
from kgapp.graph.search.query import QueryRequest, QueryResult, query
from kgapp.graph.store import GraphRuntime, StoreConfig, TenantGraph, TenantStore
from tenants.models import Tenant

_lock = threading.Lock()
_runtime: GraphRuntime | None = None


def store_config() -> StoreConfig:
    return StoreConfig(
        url=settings.SURREAL_URL,
        database=settings.SURREAL_DATABASE,
        username=settings.SURREAL_USER,
        password=settings.SURREAL_PASS,
        pool_size=settings.SURREAL_POOL_SIZE,
        query_timeout=settings.SURREAL_QUERY_TIMEOUT,
        connect_attempts=settings.SURREAL_CONNECT_ATTEMPTS,
    )


def core_config() -> CoreConfig:
    """The core's configuration, from settings (validated as it is built)."""
    return CoreConfig(
        search_dir=Path(settings.SEARCH_DIR),
        search_tenants=settings.SEARCH_TENANTS,
        unit_vectors=settings.UNIT_VECTORS,
        model_dir=Path(settings.MODEL_DIR),
    )


def configure_core() -> None:
    """Hand the core its configuration: at start-up (TenantsConfig.ready, so the web
    server, the Celery worker and every management command, the search indexer's
    included) and whenever a test changes the settings it is built from."""
    configure(core_config())


def graph_runtime() -> GraphRuntime:
    global _runtime
    with _lock:
        if _runtime is None:
            _runtime = GraphRuntime(store_config())
        return _runtime


def reset_graph_runtime() -> None:
    """Close every connection; the next use opens new ones from current settings."""
    global _runtime
    with _lock:
        runtime, _runtime = _runtime, None
    if runtime is not None:
        runtime.close()


def tenant_graph(tenant: Tenant) -> TenantGraph:
    return graph_runtime().tenant(tenant.namespace)


def migrations() -> list[Migration]:
    return load_migrations(settings.SCHEMA_DIR)


_CORE_SETTINGS = frozenset({"SEARCH_DIR", "SEARCH_TENANTS", "UNIT_VECTORS", "MODEL_DIR"})


def _on_setting_changed(setting: str, **kwargs: object) -> None:
    if setting.startswith("SURREAL_"):
        reset_graph_runtime()
    if setting in _CORE_SETTINGS:
        configure_core()


setting_changed.connect(_on_setting_changed)


def llm_config() -> LLMConfig:
    return LLMConfig(
        base_url=settings.OPENAI_BASE_URL,
        api_key=settings.OPENAI_API_KEY,
        model=settings.OPENAI_MODEL,
        timeout=settings.LLM_TIMEOUT,
        max_retries=settings.LLM_MAX_RETRIES,
    )


def llm_model() -> str | None:
    """The model ingestion calls, or None: no model is configured (offline extraction)."""
    if not (settings.OPENAI_BASE_URL or settings.OPENAI_API_KEY):
        return None
    return str(settings.OPENAI_MODEL)


def llm_client(store: TenantStore) -> LLMClient | None:
    """The tenant's LLM client (cache in its namespace) for one job, counting what its
    calls use at the configured prices; None: offline extraction."""
    if llm_model() is None:
        return None
    usage = LLMUsage(prices=settings.LLM_PRICES)
    return LLMClient(llm_config(), cache=SurrealCache(store), usage=usage)


async def search_with_models(store: TenantStore, spec: SearchRequest) -> SearchResults:
    """Hybrid search with this process's embedder and, when one is configured, the model
    (the cross-encoder reranker needs it)."""
    return await hybrid.search(store, spec, embedder(), llm=llm_client(store))


async def query_with_models(store: TenantStore, spec: QueryRequest) -> QueryResult:
    """The query context with this process's embedder and, when one is configured, the
    model (keywords, and the answer when asked for: AnswerUnavailable without one)."""
    return await query(store, spec, embedder(), llm_client(store))


async def ask_with_models(store: TenantStore, spec: QueryRequest) -> Retrieved:
    """Ask's sources with this process's embedder and, when one is configured, the model
    (the question's keywords)."""
    return await ask_sources(store, spec, embedder(), llm_client(store))


def answer_client() -> LLMClient | None:
    """A client for one streamed answer, counting what it uses at the configured prices;
    None: no model is configured. It has no cache: a streamed answer is read once."""
    if llm_model() is None:
        return None
    return LLMClient(llm_config(), usage=LLMUsage(prices=settings.LLM_PRICES))


def offline_extractor() -> OfflineExtractor:
    """The extractor used without an LLM, for settings.SPACY_MODEL; its pipeline loads
    on first use, once per process."""
    return _offline_extractor(settings.SPACY_MODEL)


@functools.cache
def _offline_extractor(model_name: str) -> OfflineExtractor:
    return OfflineExtractor(model_name)


def pdf_limits() -> PdfLimits:
    """What the worker may spend reading one uploaded PDF."""
    return PdfLimits(
        seconds=settings.PDF_MAX_SECONDS,
        pages=settings.PDF_MAX_PAGES,
        stream_bytes=settings.PDF_MAX_STREAM_BYTES,
        text_chars=settings.PDF_MAX_TEXT_CHARS,
        memory_bytes=settings.PDF_MAX_MEMORY_BYTES,
    )


def embedder() -> Embedder:
    if settings.EMBEDDER == "openai":
        return _openai_embedder()
    if settings.EMBEDDER == "local-fp32":
        return local_embedder("fp32")
    return local_embedder()


def _openai_embedder() -> Embedder:
    client = LLMClient(llm_config())
    runtime = graph_runtime()

    def embed_batch(texts: list[str]) -> list[list[float]]:
        # Called from a worker thread; the HTTP client lives on the runtime loop.
        future = runtime.submit(
            client.embed(
                texts, model=settings.OPENAI_EMBEDDING_MODEL, dimensions=settings.EMBEDDING_DIM
            )
        )
        return future.result()

    return OpenAIEmbedder(
        name=f"openai:{settings.OPENAI_EMBEDDING_MODEL}",
        dimension=settings.EMBEDDING_DIM,
        embed_batch=embed_batch,
    )
