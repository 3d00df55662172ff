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
) -> None:
    """Print the operator's bet results and settlements as JSON lines, in order.

    A durable JetStream consumer keeps the operator's place while this client is down;
    delivery is at least once and each line's ``seq`` (per table) is the idempotency key:
    with ``--state`` a redelivered message is recognised and not printed again.
    """
    from table_service.studio.operator_feed import FeedState, run_feed

    settings = Settings()
    url = nats_url or settings.nats_url or "nats://127.0.0.1:4222"

    def deliver(message: dict[str, Any]) -> None:
        sys.stdout.write(json.dumps(message, separators=(",", ":")) + "\n")
        sys.stdout.flush()

    async def main() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            with contextlib.suppress(NotImplementedError):
                loop.add_signal_handler(sig, stop.set)
        await run_feed(
            url,
            operator,
            deliver,
            stream=stream or settings.nats_stream,
            state=FeedState(state),
            stop=stop,
        )

    asyncio.run(main())
