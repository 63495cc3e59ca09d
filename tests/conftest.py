"""Shared fixtures: a real SurrealDB server (the local Node server, mem://) for the
whole session, tenants provisioned in it, users and API clients."""

from __future__ import annotations

import itertools
import os
import secrets
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings
from django.contrib.auth import get_user_model
from django.test import Client

from kgapp import surreal_server
from kgapp.graph import schema
from kgapp.graph.namespaces import namespace_remove
from kgapp.graph.store import GraphRuntime, StoreConfig, TenantStore
from tenants import services
from tenants.models import Role, Tenant
from tenants.wiring import configure_core, graph_runtime, reset_graph_runtime
from tests.llm_fixtures import scripted_llm  # noqa: E402,F401  (a fixture)

_slugs = itertools.count(1)


@pytest.fixture(scope="session")
def surreal() -> Iterator[surreal_server.RunningServer]:
    """The local SurrealDB server on a free port, in memory, for the whole run; it admits
    only its own (random) root credentials, as `make run`'s does."""
    log = Path(settings.VAR_DIR) / "surreal-test.log"
    server = surreal_server.start(storage="mem://", log=log)
    yield server
    server.stop()


@pytest.fixture(scope="session", autouse=True)
def _search_dir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The tenants' search indexes of this run, in a directory of their own (the worker
    processes the tests start inherit it)."""
    previous = os.environ.get("KG_SEARCH_DIR")
    directory = tmp_path_factory.mktemp("search")
    os.environ["KG_SEARCH_DIR"] = str(directory)
    # This process's core gets it from settings, through the edge (tenants.wiring).
    previous_setting, settings.SEARCH_DIR = settings.SEARCH_DIR, directory
    configure_core()
    yield directory
    settings.SEARCH_DIR = previous_setting
    configure_core()
    if previous is None:
        os.environ.pop("KG_SEARCH_DIR", None)
    else:
        os.environ["KG_SEARCH_DIR"] = previous


@pytest.fixture(scope="session", autouse=True)
def _graph_settings(surreal: surreal_server.RunningServer) -> Iterator[None]:
    names = ("SURREAL_URL", "SURREAL_USER", "SURREAL_PASS")
    previous = {name: getattr(settings, name) for name in names}
    current = {"SURREAL_URL": surreal.url, **surreal.credentials.env()}
    for name, value in current.items():
        setattr(settings, name, value)
        os.environ[name] = value  # for the worker processes the tests start
    reset_graph_runtime()
    yield
    for name, value in previous.items():
        setattr(settings, name, value)
    reset_graph_runtime()


@pytest.fixture
def runtime() -> GraphRuntime:
    return graph_runtime()


def unique_slug(prefix: str = "t") -> str:
    return f"{prefix}{next(_slugs)}-{secrets.token_hex(3)}"


@pytest.fixture
def make_tenant(db: None) -> Iterator[Callable[..., Tenant]]:
    """Create provisioned tenants; their namespaces are removed afterwards."""
    made: list[Tenant] = []

    def make(slug: str | None = None, **kwargs: Any) -> Tenant:
        tenant = services.tenant_create(
            slug=slug or unique_slug(), name=kwargs.pop("name", ""), **kwargs
        )
        made.append(tenant)
        return tenant

    yield make
    runtime = graph_runtime()
    for tenant in made:
        runtime.run(runtime.drop_pool(tenant.namespace))
        runtime.run(namespace_remove(runtime.store(None), tenant.namespace))


@pytest.fixture
def make_user(db: None) -> Callable[..., Any]:
    def make(username: str | None = None, *, staff: bool = False) -> Any:
        name = username or f"user{next(_slugs)}"
        user = get_user_model().objects.create_user(name, password="pw-" + name)
        if staff:
            user.is_staff = True
            user.save()
        return user

    return make


@pytest.fixture
def member(make_user: Callable[..., Any]) -> Callable[..., Any]:
    """member(tenant, role) -> a new user with that role in that tenant."""

    def make(tenant: Tenant, role: Role = Role.VIEWER) -> Any:
        user = make_user()
        services.membership_set(tenant=tenant, user=user, role=role)
        return user

    return make


@pytest.fixture
def eager() -> Iterator[None]:
    """Celery tasks run in the calling process, as they are sent."""
    from kgapp.celery import app

    app.conf.task_always_eager = True
    yield
    app.conf.task_always_eager = False


@pytest.fixture
def token_client() -> Callable[[Any], Client]:
    """token_client(user) -> a test client sending a fresh bearer token of `user`."""

    def make(user: Any) -> Client:
        _, secret = services.token_create(user=user, name="test")
        return Client(HTTP_AUTHORIZATION=f"Bearer {secret}")

    return make


@pytest.fixture
def store_config(surreal: surreal_server.RunningServer) -> StoreConfig:
    return StoreConfig(
        url=surreal.url,
        username=surreal.credentials.user,
        password=surreal.credentials.password,
        query_timeout=10,
        connect_attempts=2,
    )


@pytest.fixture
async def raw_namespace(store_config: StoreConfig) -> Any:
    """A factory of empty namespaces on a private runtime-free pool, for core tests."""
    from kgapp.graph.store import Pool

    pools: list[tuple[Pool, str]] = []
    root = TenantStore(Pool(store_config, None))

    async def make() -> TenantStore:
        namespace = "t_" + unique_slug("core").replace("-", "_")
        pool = Pool(store_config, namespace)
        pools.append((pool, namespace))
        return TenantStore(pool)

    yield make
    for pool, namespace in pools:
        await pool.close()
        await namespace_remove(root, namespace)
    await root._pool.close()


@pytest.fixture
async def migrated_store(raw_namespace: Any) -> Any:
    """A factory of namespaces with every migration applied (the vectors of
    `embedding_dim` dimensions, 384 unless told), for core tests."""

    async def make(embedding_dim: int = 384) -> TenantStore:
        store: TenantStore = await raw_namespace()
        migrations = schema.load_migrations(settings.SCHEMA_DIR)
        await schema.migrate(store, migrations, embedding_dim=embedding_dim)
        return store

    return make
