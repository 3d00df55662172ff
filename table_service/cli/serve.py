"""``livetable serve``: the table service and its API, on the configured tables."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from table_service.cli.common import config_problems, console, err, open_runtime, settings_or_exit


def serve(
    host: str | None = typer.Option(None, help="Bind address (default from settings)"),
    port: int | None = typer.Option(None, help="Port (default from settings)"),
    tables: Path | None = typer.Option(
        None, "--tables", help="Table configuration TOML (default: LIVETABLE_TABLE_CONFIG)"
    ),
    metrics: str | None = typer.Option(
        None,
        "--metrics",
        help="Prometheus metrics on this HOST:PORT, a listener apart from the API "
        "(default: LIVETABLE_METRICS_ADDRESS; none if unset; port 0: any free port)",
    ),
) -> None:
    """Run the table service and API on the configured tables and shoes (migrates first).

    Start it several times with the same --tables against one PostgreSQL and the processes
    share the tables out, one writer per table; a table whose process dies is taken over
    within LIVETABLE_TAKEOVER_SECONDS (default 10). A request for a table another process
    runs is answered 421 with that process's address (the manual: docs/operations/studio.md)."""
    import gc
    import sys

    import uvicorn

    from table_service.app import build_app
    from table_service.studio.coordinator import studio_for
    from table_service.table.config import ConfigError, load_tables

    settings = settings_or_exit()
    path = tables or settings.table_config
    configs = []
    if path is not None:  # the whole table file is checked before anything starts
        try:
            configs = load_tables(path)
        except ConfigError as exc:
            config_problems(exc)
            raise typer.Exit(2) from exc
    runtime = open_runtime(upgrade=True)
    if path is None:
        err.print("no table configuration (--tables or LIVETABLE_TABLE_CONFIG): API only")
    bind_host, bind_port = host or settings.host, port or settings.port
    exposer = _metrics_listener(metrics or settings.metrics_address, settings.metrics_path)
    app = build_app(runtime, configs, manager=studio_for(runtime, configs, bind_host, bind_port))
    _freeze_once_started(app)
    from table_service.regulator.watchdog import AuditWatchdog

    watchdog = AuditWatchdog(
        runtime,
        seal_seconds=settings.checkpoint_max_age,
        read_model_seconds=settings.read_model_check_seconds,
    )
    watchdog.start()
    from table_service.memory_trace import start_from_settings

    trace = start_from_settings(settings.memory_trace_seconds, settings.memory_trace_file)
    # A command's worker thread needs the interpreter after each of its database round
    # trips; while the event loop sends a crowd's stream frames, it waited up to the switch
    # interval for it each time (Python's 5 ms), several times per write.
    sys.setswitchinterval(settings.gil_switch_ms / 1000)
    # What the process holds once started (the modules, the app: ~140,000 objects) lives
    # as long as it does; left to the collector, each of its full passes walked all of it,
    # holding the interpreter 85-170 ms on a loaded host while cards and frames waited.
    # Frozen, a full pass walks only what came after.
    gc.collect()
    gc.freeze()
    try:
        uvicorn.run(
            app,
            host=bind_host,
            port=bind_port,
            log_config=None,
            ws=settings.stream_websocket,
            ws_per_message_deflate=settings.stream_compression,
        )
    finally:
        watchdog.stop()
        if trace is not None:
            trace.stop()
        if exposer is not None:
            exposer.close()


def _freeze_once_started(app: Any) -> None:
    """Once the app has started (its tables loaded, the streams and NATS set up), freeze
    what it holds too, as ``serve`` freezes its modules before it starts (see there): the
    collector's full passes then walk only what the running studio adds."""
    import gc
    from collections.abc import AsyncIterator
    from contextlib import asynccontextmanager

    started = app.router.lifespan_context

    @asynccontextmanager
    async def lifespan(running: Any) -> AsyncIterator[Any]:
        async with started(running) as state:
            gc.collect()
            gc.freeze()
            yield state

    app.router.lifespan_context = lifespan


def _metrics_listener(address: str | None, path: str) -> Any:
    """The metrics listener of ``serve`` (printed), or None when none is configured."""
    if not address:
        console.print("metrics: off (--metrics HOST:PORT or LIVETABLE_METRICS_ADDRESS)")
        return None
    from table_service.metrics import MetricsAddressError, serve_metrics

    try:
        exposer = serve_metrics(address, path)
    except MetricsAddressError as exc:
        err.print(f"[red]metrics:[/red] {exc}")
        raise typer.Exit(2) from exc
    console.print(f"metrics at {exposer.url}", soft_wrap=True)
    return exposer
