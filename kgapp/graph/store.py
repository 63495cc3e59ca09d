"""Connections to SurrealDB, bound to one tenant namespace each.

Layers, bottom up:
- `Pool`: a few WebSocket connections that have all done `USE NS <ns> DB kg` once.
  A connection never changes namespace: SurrealDB session parameters (`LET $x`)
  survive a `USE`, so moving a connection between tenants could leak values.
- `TenantStore`: parameterised queries on one pool, with a deadline, typed errors and
  reconnect-with-backoff when opening connections.
- `GraphRuntime`: one event loop in a background thread that owns every pool of the
  process. Sync code (Celery, Django's sync views) and async code on other loops
  (Daphne, Channels) all hop onto it, so a connection is only ever touched by the
  loop that opened it.
- `TenantGraph`: what the edges hold: a namespace plus the runtime, with `query` /
  `aquery` and `run` / `arun` to execute core functions that take a `TenantStore`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import threading
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine, Mapping
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any, ParamSpec, TypeVar, cast

from surrealdb.connections import async_ws
from surrealdb.connections.async_ws import AsyncWsSurrealConnection
from surrealdb.errors import SurrealError
from surrealdb.request_message.descriptors import cbor_ws
from websockets.exceptions import WebSocketException

from kgapp.graph import queries, wire
from kgapp.graph.errors import (
    GraphError,
    GraphTimeout,
    GraphUnavailable,
    QueryFailed,
    UniqueViolation,
)

logger = logging.getLogger(__name__)

T = TypeVar("T")
P = ParamSpec("P")

# A query's parameters by name ($name in its SurrealQL): values are never spliced in.
Params = Mapping[str, Any]

_CONNECTION_ERRORS = (OSError, WebSocketException, EOFError, asyncio.IncompleteReadError)


# What the SDK's connection encodes each request and decodes each response with.
# This module is the raw SurrealDB layer: a query's parameters (`params`) are whatever
# values the SDK encodes, by name, and a response is the SDK's decoded JSON; both stay
# untyped dicts here, as the SDK types them. Typed records start above the store
# (records.py).
async_ws.decode = wire.decode
cbor_ws.encode = wire.encode


@dataclass(frozen=True)
class StoreConfig:
    """How to reach SurrealDB. Built by the edge from settings; the core reads no env."""

    url: str
    database: str = "kg"
    username: str | None = None
    password: str | None = None
    pool_size: int = 4
    query_timeout: float = 30.0
    connect_timeout: float = 5.0
    connect_attempts: int = 4
    backoff_base: float = 0.25
    backoff_max: float = 4.0


class Connection(AsyncWsSurrealConnection):
    """The SDK connection, plus live notifications with their action and record."""

    # A live notification as the SDK queues it (its `live_queues` type).
    async def subscribe_notifications(self, live_id: str) -> asyncio.Queue[dict[str, Any]]:
        queue: asyncio.Queue[dict[str, Any]] = asyncio.Queue()  # the SDK's raw notifications
        self.live_queues.setdefault(live_id, []).append(queue)
        return queue

    @property
    def closed(self) -> bool:
        return self.socket is None or self.recv_task is None or self.recv_task.done()


async def open_connection(config: StoreConfig, namespace: str | None) -> Connection:
    """Open one connection, signed in and bound to `namespace` (root level when None).

    Retries with exponential backoff and jitter; raises GraphUnavailable when every
    attempt failed.
    """
    last_error: BaseException | None = None
    for attempt in range(config.connect_attempts):
        if attempt:
            delay = min(config.backoff_max, config.backoff_base * 2 ** (attempt - 1))
            await asyncio.sleep(delay * (0.5 + random.random() / 2))
        connection = Connection(config.url)
        try:
            async with asyncio.timeout(config.connect_timeout):
                await connection.connect()
                if config.username:
                    await connection.signin(
                        {"username": config.username, "password": config.password or ""}
                    )
                if namespace is not None:
                    await connection.use(namespace, config.database)
            return connection
        except (*_CONNECTION_ERRORS, TimeoutError) as error:
            last_error = error
            await _close_quietly(connection)
        except SurrealError as error:
            # Refused credentials (or none where the server wants them): no retry mends it.
            await _close_quietly(connection)
            who = f"user {config.username!r}" if config.username else "no credentials"
            raise GraphUnavailable(
                f"SurrealDB at {config.url} refused the connection ({who}): {error}; check"
                " SURREAL_USER / SURREAL_PASS (the local server's are in"
                " var/surreal-credentials.json)"
            ) from error
    raise GraphUnavailable(
        f"SurrealDB at {config.url} is unreachable after {config.connect_attempts} attempts"
        f" ({type(last_error).__name__}: {last_error})"
    )


async def _close_quietly(connection: Connection) -> None:
    with contextlib.suppress(Exception):
        await connection.close()


def check_response(response: dict[str, Any]) -> list[Any]:  # the SDK's raw response
    """Results of every statement of a query response; raises on any failed one."""
    error = response.get("error")
    if error is not None:
        message = error.get("message", str(error)) if isinstance(error, dict) else str(error)
        kind = error.get("kind") if isinstance(error, dict) else None
        raise QueryFailed(message, kind=kind)
    statements = response.get("result") or []
    failures = [
        (index, statement)
        for index, statement in enumerate(statements)
        if statement.get("status") == "ERR"
    ]
    if failures:
        # Inside BEGIN/COMMIT every statement reports the rollback; the cause is the
        # one that says something else.
        index, statement = next(
            (f for f in failures if not queries.is_rollback_notice(str(f[1].get("result")))),
            failures[0],
        )
        message = str(statement.get("result"))
        error_type = (
            UniqueViolation
            if queries.is_unique_violation(message) or queries.is_conflict(message)
            else QueryFailed
        )
        raise error_type(message, kind=statement.get("kind"), statement=index)
    return [statement.get("result") for statement in statements]


class Pool:
    """Connections bound to one namespace, opened lazily up to `config.pool_size`."""

    def __init__(self, config: StoreConfig, namespace: str | None):
        self.config = config
        self.namespace = namespace
        self._idle: list[Connection] = []
        self._available = asyncio.Semaphore(config.pool_size)
        self._version: str | None = None

    # Raw parameters in, the SDK's raw response out (see the comment at the top).
    async def execute(self, sql: str, params: Params | None) -> dict[str, Any]:
        """Send one query and return the raw response; GraphUnavailable on transport loss."""
        async with self._available:
            connection = self._idle.pop() if self._idle else None
            if connection is None or connection.closed:
                if connection is not None:
                    await _close_quietly(connection)
                connection = await open_connection(self.config, self.namespace)
            keep = False
            try:
                async with asyncio.timeout(self.config.query_timeout):
                    response = await connection.query_raw(sql, dict(params or {}))
                keep = True
                return response
            except TimeoutError as error:
                raise GraphTimeout(
                    f"SurrealDB did not answer within {self.config.query_timeout:g}s"
                ) from error
            except _CONNECTION_ERRORS as error:
                raise GraphUnavailable(f"lost the connection to SurrealDB: {error}") from error
            except asyncio.CancelledError:
                # The SDK cancels pending replies when its socket closes; that is a lost
                # connection unless our own task is the one being cancelled.
                task = asyncio.current_task()
                if task is not None and task.cancelling():
                    raise
                raise GraphUnavailable("lost the connection to SurrealDB") from None
            finally:
                # A connection whose query timed out may still get that reply later:
                # never reuse it, so replies cannot cross.
                if keep and not connection.closed:
                    self._idle.append(connection)
                else:
                    await _close_quietly(connection)

    async def server_version(self) -> str:
        """The server's version string, e.g. "surrealdb-3.0.2"."""
        if self._version is None:
            connection = await open_connection(self.config, self.namespace)
            try:
                async with asyncio.timeout(self.config.query_timeout):
                    self._version = str(await connection.version())
            except (*_CONNECTION_ERRORS, TimeoutError) as error:
                raise GraphUnavailable(f"could not ask SurrealDB its version: {error}") from error
            finally:
                await _close_quietly(connection)
        return self._version

    async def close(self) -> None:
        idle, self._idle = self._idle, []
        for connection in idle:
            await _close_quietly(connection)


class TenantStore:
    """Parameterised SurrealQL on one namespace. Lives on the runtime's loop."""

    def __init__(self, pool: Pool):
        self._pool = pool

    @property
    def namespace(self) -> str | None:
        return self._pool.namespace

    # `params`: the query's raw parameters, here and below (see the top of the module).
    async def query(self, sql: str, params: Params | None = None) -> list[Any]:
        """Run `sql` (one or more statements) and return each statement's result."""
        return check_response(await self._pool.execute(sql, params))

    async def query_one(self, sql: str, params: Params | None = None) -> Any:
        """The result of the last statement of `sql`."""
        results = await self.query(sql, params)
        return results[-1] if results else None

    async def server_version(self) -> str:
        return await self._pool.server_version()

    async def transaction(self, sql: str, params: Params | None = None) -> list[Any]:
        """Run `sql` atomically: a failed statement rolls every one of them back."""
        return await self.query(queries.in_transaction(sql), params)


class GraphRuntime:
    """A private event loop in a daemon thread that owns every SurrealDB connection."""

    def __init__(self, config: StoreConfig):
        self.config = config
        self._pools: dict[str | None, Pool] = {}
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._run_loop, name="graph-runtime", daemon=True)
        self._thread.start()

    def _run_loop(self) -> None:
        asyncio.set_event_loop(self._loop)
        self._loop.run_forever()

    @property
    def loop(self) -> asyncio.AbstractEventLoop:
        return self._loop

    def submit(self, coroutine: Coroutine[Any, Any, T]) -> Future[T]:
        return asyncio.run_coroutine_threadsafe(coroutine, self._loop)

    def run(self, coroutine: Coroutine[Any, Any, T]) -> T:
        """Run on the runtime loop and wait; for sync callers (Celery, sync views)."""
        if _running_loop() is self._loop:
            coroutine.close()
            raise GraphError("GraphRuntime.run() called from its own loop; await it instead")
        return self.submit(coroutine).result()

    async def call(self, coroutine: Coroutine[Any, Any, T]) -> T:
        """Await on the runtime loop from any other loop (Daphne, Channels)."""
        if _running_loop() is self._loop:
            return await coroutine
        return await asyncio.wrap_future(self.submit(coroutine))

    def store(self, namespace: str | None) -> TenantStore:
        """The store bound to `namespace` (root level when None). Call on the loop."""
        pool = self._pools.get(namespace)
        if pool is None:
            pool = self._pools[namespace] = Pool(self.config, namespace)
        return TenantStore(pool)

    def tenant(self, namespace: str) -> TenantGraph:
        queries.check_namespace(namespace)
        return TenantGraph(self, namespace)

    async def drop_pool(self, namespace: str | None) -> None:
        pool = self._pools.pop(namespace, None)
        if pool is not None:
            await pool.close()

    def close(self) -> None:
        async def close_all() -> None:
            for namespace in list(self._pools):
                await self.drop_pool(namespace)

        if self._loop.is_running():
            with contextlib.suppress(Exception):
                self.submit(close_all()).result(timeout=5)
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(timeout=5)


class TenantGraph:
    """One tenant's graph, as handed to the edges. Safe to use from any thread or loop."""

    def __init__(self, runtime: GraphRuntime, namespace: str):
        self.runtime = runtime
        self.namespace = namespace

    def run(self, operation: Callable[..., Awaitable[T]], *args: Any, **kwargs: Any) -> T:
        """Run `await operation(store, *args, **kwargs)` on the runtime; sync."""
        return self.runtime.run(self._bind(operation, args, kwargs))

    async def arun(self, operation: Callable[..., Awaitable[T]], *args: Any, **kwargs: Any) -> T:
        return await self.runtime.call(self._bind(operation, args, kwargs))

    async def astream(
        self, operation: Callable[..., AsyncIterator[T]], *args: Any, **kwargs: Any
    ) -> AsyncIterator[T]:
        """Iterate `operation(store, *args, **kwargs)` on the runtime loop, item by item,
        from any other loop (a streamed response): one item is in flight at a time."""

        async def start() -> AsyncIterator[T]:
            return operation(self.runtime.store(self.namespace), *args, **kwargs)

        iterator = await self.runtime.call(start())

        async def step() -> tuple[bool, T | None]:
            try:
                return True, await anext(iterator)
            except StopAsyncIteration:
                return False, None

        try:
            while True:
                more, item = await self.runtime.call(step())
                if not more:
                    return
                yield cast(T, item)
        finally:
            await self.runtime.call(_closed(iterator))

    # `params`: the query's raw parameters (see the top of the module).
    def query(self, sql: str, params: Params | None = None) -> list[Any]:
        return self.run(TenantStore.query, sql, params)

    async def aquery(self, sql: str, params: Params | None = None) -> list[Any]:
        return await self.arun(TenantStore.query, sql, params)

    # `kwargs`: the keyword arguments of whichever core function `operation` is.
    async def _bind(
        self, operation: Callable[..., Awaitable[T]], args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> T:
        return await operation(self.runtime.store(self.namespace), *args, **kwargs)


async def _closed(iterator: AsyncIterator[Any]) -> None:
    aclose = getattr(iterator, "aclose", None)
    if aclose is not None:
        await aclose()


def _running_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None
