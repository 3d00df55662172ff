"""structlog set up once per process.

Context (table, round and request ids) is bound with ``structlog.contextvars`` so every
line logged while handling a command carries it without passing loggers around.
"""

from __future__ import annotations

import logging
import sys

import structlog

_configured = False


class _StderrLogger(structlog.PrintLogger):
    """Writes to whatever ``sys.stderr`` is at the time of the call, so a logger cached
    under a test runner that swaps the stream never writes to a closed one."""

    def __init__(self) -> None:
        super().__init__(sys.stderr)

    def msg(self, message: str) -> None:  # type: ignore[override]
        stream = sys.stderr
        stream.write(message + "\n")
        stream.flush()

    log = debug = info = warn = warning = err = error = critical = exception = fatal = msg


class _StderrLoggerFactory:
    def __call__(self, *args: object) -> _StderrLogger:
        return _StderrLogger()


def configure_logging(fmt: str = "console", level: str = "INFO") -> None:
    """JSON lines for production (``fmt="json"``), a readable console otherwise."""
    global _configured
    if _configured:
        return
    numeric = logging.getLevelNamesMapping().get(level.upper(), logging.INFO)
    renderer: structlog.typing.Processor = (
        structlog.processors.JSONRenderer()
        if fmt == "json"
        else structlog.dev.ConsoleRenderer(colors=sys.stderr.isatty())
    )
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            structlog.processors.StackInfoRenderer(),
            structlog.processors.format_exc_info,
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(numeric),
        logger_factory=_StderrLoggerFactory(),
        cache_logger_on_first_use=True,
    )
    logging.basicConfig(level=numeric, stream=sys.stderr, format="%(name)s %(message)s")
    logging.getLogger("alembic").setLevel(max(numeric, logging.WARNING))
    _configured = True


def bind_context(**ids: str | int | None) -> None:
    """Bind table_id / round_id / request_id (or any id) to every later log line."""
    structlog.contextvars.bind_contextvars(**{k: v for k, v in ids.items() if v is not None})
