"""The one assembly of the service: the HTTP application with its foundation routes
(health, readiness, administration, the audit read API and the log's tiles), the tables'
routes and streams, the studio's routes, and the consoles, all behind one authentication.

Everything else is a part: ``api/`` (foundation routes, problems, limits), ``routes/``
(the tables' routes and streams), ``studio/`` and ``consoles/``. Only this module, the CLI,
the demo and the benchmarks put them together.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterable
from contextlib import asynccontextmanager
from typing import Any

import anyio
import anyio.to_thread
from fastapi import APIRouter, FastAPI
from fastapi.responses import JSONResponse
from fastapi_offline import FastAPIOffline

from table_service import metrics
from table_service.api.foundation import Health, Readiness, RequestContext, admin_router
from table_service.api.limits import BodyLimits
from table_service.api.problems import install_problem_handlers, install_problem_openapi
from table_service.api.tiles import tiles_router
from table_service.consoles.routes import mount_consoles
from table_service.principals import revoked_among
from table_service.routes.sockets import Connections
from table_service.routes.tables import table_router
from table_service.runtime import Runtime
from table_service.studio.api import studio_router, table_elsewhere
from table_service.studio.coordinator import Studio
from table_service.studio.errors import TableElsewhere
from table_service.table.config import TableConfig
from table_service.table.service import TableManager, Tables
from table_service.table.stream import StreamHub, Writes, WritesFirst
from table_service.table.view import PUBLIC_VIEWER, ReadModel, model_view


def _revoked_among(runtime: Runtime, names: frozenset[str]) -> set[str]:
    """The stream hub's check before a batch reaches principals' streams (a thread)."""
    with runtime.reads() as session:
        return revoked_among(session, names)


def create_app(
    runtime: Runtime, routers: Iterable[APIRouter] = (), lifespan: Any = None
) -> FastAPI:
    # /docs and /redoc from packaged Swagger UI and ReDoc assets: they work with no internet.
    app = FastAPIOffline(
        title="livetable",
        description="Live-dealer table back-office API",
        version="0.1.0",
        lifespan=lifespan,
        static_url="/docs-assets",
    )
    app.state.runtime = runtime
    install_problem_handlers(app)
    install_problem_openapi(app)

    # The health checks do not queue behind the API's blocking endpoints (at most
    # ``request_threads`` of them run at once): a probe starved by a crowd of requests
    # would mark a busy but healthy process dead, and an orchestrator would restart the
    # very process that is serving the crowd. /healthz needs no thread; /readyz's database
    # check runs on a thread of its own pool.
    health_threads = anyio.CapacityLimiter(1)

    @app.get("/healthz", response_model=Health)
    async def healthz() -> dict[str, Any]:
        return model_view(ReadModel("health", {"status": "ok"}), PUBLIC_VIEWER)

    @app.get(
        "/readyz",
        response_model=Readiness,
        responses={503: {"model": Readiness, "description": "not ready, and why"}},
    )
    async def readyz() -> JSONResponse:
        ready, reason = await anyio.to_thread.run_sync(
            runtime.database_ready, limiter=health_threads
        )
        answer = {"status": "ready" if ready else "not ready", "reason": reason}
        return JSONResponse(
            model_view(ReadModel("health", answer), PUBLIC_VIEWER),
            status_code=200 if ready else 503,
        )

    app.include_router(admin_router())
    app.include_router(tiles_router())
    for router in routers:
        app.include_router(router)
    mount_consoles(app)
    app.add_middleware(RequestContext)
    # Outermost: a body past the limit or not strict JSON never reaches routing.
    app.add_middleware(BodyLimits, max_body_bytes=runtime.settings.max_body_bytes)
    return app


def build_app(
    runtime: Runtime,
    configs: list[TableConfig],
    *,
    with_readers: bool = True,
    reader_options: dict[str, Any] | None = None,
    manager: Tables | None = None,
) -> FastAPI:
    """The whole service: foundation routes, table routes, stream; tables start with it."""
    manager = manager or TableManager(runtime, configs, reader_options=reader_options)
    writes = Writes()

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        settings = runtime.settings
        # The API's blocking endpoints run on anyio's threads: 40 of them by default. While
        # a studio process is taken over, ~100 subscribers of its tables ask the survivor
        # where their tables run, 100-230 directory requests a second: 53-60 threads were
        # alive there, and a card's command thread, which needs the interpreter after each
        # database round trip, took its turn behind all of them. On two cores more threads
        # cannot answer it faster; the rest of the crowd waits on the loop, taking no turns.
        anyio.to_thread.current_default_thread_limiter().total_tokens = settings.request_threads
        hub = StreamHub(
            asyncio.get_running_loop(),
            max_public_per_table=settings.stream_max_public_per_table,
            max_public_per_address=settings.stream_max_public_per_address,
            replay_workers=settings.stream_replay_workers,
            replay_concurrency=settings.stream_replay_concurrency,
            replay_rate=settings.stream_replay_rate,
            replay_share=settings.stream_replay_share,
            writes=writes,
            revoked_among=lambda names: _revoked_among(runtime, names),
        )
        metrics.watch_runtime(runtime)
        runtime.store.subscribe(hub.publish)
        app.state.hub = hub
        metrics.watch("hubs", hub)
        for_dropped = getattr(manager, "on_dropped", None)
        if for_dropped is not None:
            for_dropped.append(hub.end)
        publisher = None
        if runtime.settings.nats_url:
            from table_service.table.nats_stream import JetStreamPublisher

            # In a studio only a table's lease holder publishes it (from the log).
            studio = manager if isinstance(manager, Studio) else None
            publisher = JetStreamPublisher(
                runtime,
                runtime.settings.nats_url,
                stream=runtime.settings.nats_stream,
                root=runtime.settings.nats_subject_root,
                tables=() if studio is not None else None,
            )
            await publisher.start()
            metrics.watch("publishers", publisher)
            if studio is not None:
                studio.on_acquired.append(publisher.add_table)
                studio.on_dropped.append(publisher.drop_table)
        await manager.start(with_readers=with_readers)
        try:
            yield
        finally:
            await manager.stop()
            if publisher is not None:
                metrics.unwatch("publishers", publisher)
                await publisher.stop()
            metrics.unwatch("hubs", hub)
            metrics.unwatch_runtime(runtime)
            hub.close()

    routers = [table_router()]
    if isinstance(manager, Studio):
        routers.append(studio_router())
    app = create_app(runtime, routers=routers, lifespan=lifespan)
    app.state.tables = manager
    app.add_middleware(WritesFirst, writes=writes)  # stream replays give way to writes
    # Starlette types a handler as taking any Exception; this one takes the one it is for.
    app.add_exception_handler(TableElsewhere, table_elsewhere)  # type: ignore[arg-type]
    app.add_middleware(metrics.ResponseCounter)
    # Outermost, where a WebSocket's send is its server protocol's own: the live streams
    # write their frames to it (table_service/routes/sockets.py).
    app.add_middleware(Connections)

    return app
