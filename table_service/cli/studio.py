"""``livetable operator-feed``: the reference client of an operator's durable feed."""

from __future__ import annotations

import asyncio
import contextlib
import json
import signal
import sys
from pathlib import Path
from typing import Any

import typer

from table_service.config import Settings


def _stop_on_signals() -> asyncio.Event:
    """An event set by SIGINT or SIGTERM, so a feed stops cleanly and puts back the
    message in flight (call inside the running loop)."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError):
            loop.add_signal_handler(sig, stop.set)
    return stop


def _metrics_listener(address: str | None, path: str, operator: str) -> None:
    """Expose the feed's metrics and its health checks, ``/healthz`` and ``/readyz`` (NATS
    reached), as ``serve`` answers them (a daemon thread for the life of the process)."""
    if not address:
        return
    from table_service.metrics import MetricsAddressError, serve_metrics
    from table_service.studio.operator_feed import readiness

    try:
        exposer = serve_metrics(address, path, lambda: readiness(operator))
    except MetricsAddressError as exc:
        raise typer.BadParameter(str(exc), param_hint="--metrics") from exc
    sys.stderr.write(f"metrics at {exposer.url}\n")
    sys.stderr.flush()


def operator_feed(
    operator: str = typer.Option(..., "--operator", help="The operator principal's name"),
    nats_url: str | None = typer.Option(
        None, "--nats", help="NATS URL (default LIVETABLE_NATS_URL or nats://127.0.0.1:4222)"
    ),
    stream: str | None = typer.Option(
        None, help="JetStream stream (default LIVETABLE_NATS_STREAM)"
    ),
    state: Path | None = typer.Option(
        None, help="File keeping, per table, the last event handled (survives restarts)"
    ),
    webhook: str | None = typer.Option(
        None, help="POST each message to this URL (signed, retried) instead of printing it"
    ),
    secret_file: Path | None = typer.Option(
        None,
        "--secret-file",
        help="The operator's webhook signing secret (default: LIVETABLE_WEBHOOK_SECRET)",
    ),
    dead_letters: Path | None = typer.Option(
        None,
        "--dead-letters",
        help="JSON-lines file of messages the endpoint refused with a 4xx "
        "(default: webhook-dead-letters-OPERATOR.jsonl in the data directory)",
    ),
    max_backoff: float = typer.Option(
        30.0, min=0.1, help="Longest wait between two attempts at one message (seconds)"
    ),
    ack_wait: float = typer.Option(
        60.0,
        min=1.0,
        help="A message this process took and never answered (it was killed) "
        "is redelivered after this many seconds",
    ),
    timeout: float = typer.Option(10.0, min=0.1, help="Seconds to wait for the endpoint"),
    metrics: str | None = typer.Option(
        None,
        "--metrics",
        help="Prometheus metrics on this HOST:PORT (default: LIVETABLE_METRICS_ADDRESS; "
        "none if unset; port 0: any free port); the address is printed on stderr. The "
        "same listener answers GET /healthz (up) and GET /readyz (NATS reached; 503 if not)",
    ),
) -> None:
    """Print the operator's bet results and settlements as JSON lines, in order; or, with
    ``--webhook``, POST each one to the operator's endpoint.

    A durable JetStream consumer keeps the operator's place while this client is down;
    delivery is at least once and each line's ``seq`` (per table) is the idempotency key:
    with ``--state`` a redelivered message is recognised and not printed again.
    """
    from table_service.studio.operator_feed import FeedState, run_feed

    settings = Settings()
    url = nats_url or settings.nats_url or "nats://127.0.0.1:4222"
    _metrics_listener(metrics or settings.metrics_address, settings.metrics_path, operator)
    if webhook is not None:
        _webhook(
            url, operator, webhook, stream or settings.nats_stream, settings, state,
            secret_file, dead_letters, max_backoff, ack_wait, timeout,
        )  # fmt: skip
        return

    def deliver(message: dict[str, Any]) -> None:
        sys.stdout.write(json.dumps(message, separators=(",", ":")) + "\n")
        sys.stdout.flush()

    async def main() -> None:
        stop = _stop_on_signals()
        await run_feed(
            url,
            operator,
            deliver,
            stream=stream or settings.nats_stream,
            root=settings.nats_subject_root,
            state=FeedState(state),
            stop=stop,
        )

    asyncio.run(main())


def _webhook(
    url: str,
    operator: str,
    endpoint: str,
    stream: str,
    settings: Settings,
    state: Path | None,
    secret_file: Path | None,
    dead_letters: Path | None,
    max_backoff: float,
    ack_wait: float,
    timeout: float,
) -> None:
    import os

    from table_service.logs import configure_for_command
    from table_service.studio.operator_feed import FeedState
    from table_service.studio.webhook import DeadLetters, run_webhook
    from table_service.table.nats_stream import subject_token

    if not endpoint.startswith(("http://", "https://")):
        raise typer.BadParameter("an http:// or https:// URL", param_hint="--webhook")
    if secret_file is not None:
        secret = secret_file.read_bytes().strip()
    else:
        secret = os.environ.get("LIVETABLE_WEBHOOK_SECRET", "").encode()
    if not secret:
        raise typer.BadParameter(
            "the operator's signing secret is needed: --secret-file or LIVETABLE_WEBHOOK_SECRET",
            param_hint="--secret-file",
        )
    configure_for_command()
    letters = dead_letters or settings.data_dir / (
        f"webhook-dead-letters-{subject_token(operator)}.jsonl"
    )

    async def main() -> None:
        stop = _stop_on_signals()
        await run_webhook(
            url,
            operator,
            endpoint,
            secret,
            stream=stream,
            root=settings.nats_subject_root,
            state=FeedState(state),
            dead_letters=DeadLetters(letters),
            stop=stop,
            timeout=timeout,
            max_backoff=max_backoff,
            ack_wait=ack_wait,
        )

    asyncio.run(main())
