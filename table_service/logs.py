"""structlog, routed through the standard library's ``logging`` so one place decides where
every line goes.

Our own lines (structlog) and the libraries' (uvicorn, httpx, alembic) pass the same
handlers: standard error for what a person at the terminal must see, and optionally a log
file for everything else (``livetable demo`` keeps its terminal for the round log). The
CLI configures logging once at start-up from the settings and again when a command reads
its own ``--log-level``: ``configure_logging`` may be called any number of times and the
last call wins.

Context (table, round and request ids) is bound with ``structlog.contextvars`` so every
line logged while handling a command carries it without passing loggers around.
"""

from __future__ import annotations

import logging
import re
import sys
from pathlib import Path
from typing import Any, TextIO

import structlog

QUIET_LIBRARIES = (
    "httpx",
    "httpcore",
    "httpx2",
    "httpcore2",
    "alembic",
    "websockets",
    "uvicorn.access",
    "asyncio",
)
"""Libraries whose INFO lines are noise (one line per HTTP request, per migration step):
they log from WARNING up unless DEBUG was asked for."""

_HANDLER_MARK = "_livetable_handler"

_SECRET_PARAMETER = re.compile(r"([?&](?:token|access_token)=)[^&\s\"']+", re.IGNORECASE)


def redact_secrets(_logger: Any, _name: str, event_dict: Any) -> Any:
    """Take a bearer token out of every URL a line carries: a stream accepts its token as
    ``?token=T`` and uvicorn logs each accepted WebSocket with its query at INFO, so
    without this every token that opened a stream sat in the log in clear (the database
    keeps only a SHA-256 of it)."""
    for key, value in event_dict.items():
        if isinstance(value, str) and "token=" in value.lower():
            event_dict[key] = _SECRET_PARAMETER.sub(r"\1<redacted>", value)
    return event_dict


class LogLevelError(ValueError):
    """A log level name that ``logging`` does not know."""


def parse_level(level: str | int) -> int:
    """``"warning"``/``"WARNING"``/``30`` → 30; anything else is refused, never ignored."""
    if isinstance(level, int):
        return level
    numeric = logging.getLevelNamesMapping().get(level.strip().upper())
    if numeric is None:
        known = "DEBUG, INFO, WARNING, ERROR, CRITICAL"
        raise LogLevelError(f"unknown log level {level!r} (one of {known})")
    return numeric


class _StderrHandler(logging.StreamHandler[TextIO]):
    """Writes to whatever ``sys.stderr`` is at the time of the call, so a handler set up
    under a test runner that swaps the stream (pytest's capture) never writes past it to
    the real terminal, nor to a stream already closed."""

    def __init__(self) -> None:
        super().__init__(sys.stderr)

    @property
    def stream(self) -> TextIO:
        return sys.stderr

    @stream.setter
    def stream(self, _value: TextIO) -> None:
        pass


def _renderer(fmt: str, *, colors: bool) -> structlog.typing.Processor:
    if fmt == "json":
        return structlog.processors.JSONRenderer()
    return structlog.dev.ConsoleRenderer(colors=colors)


def _from_settings() -> tuple[str, str | None]:
    """``LIVETABLE_LOG_FORMAT`` and ``LIVETABLE_LOG_LEVEL`` (or the config file's)."""
    from table_service.config import Settings

    try:
        settings = Settings()
    except ValueError:
        return "console", None
    return settings.log_format, settings.log_level


def configure_logging(
    fmt: str | None = None,
    level: str | int | None = None,
    *,
    log_file: Path | None = None,
    stderr_level: str | int | None = None,
) -> None:
    """Send log lines at ``level`` and above to standard error, or, with ``log_file``, to
    that file, with only ``stderr_level`` (default WARNING) and above also on standard
    error. ``fmt="json"`` gives JSON lines (production), anything else a readable console.
    A format or level not given comes from the settings, else console and INFO.

    Raises ``LogLevelError`` for an unknown level name.
    """
    if fmt is None or level is None:
        configured_fmt, configured_level = _from_settings()
        fmt = fmt or configured_fmt
        level = level if level is not None else (configured_level or "INFO")
    numeric = parse_level(level)
    err_numeric = numeric if stderr_level is None else parse_level(stderr_level)
    if log_file is not None and stderr_level is None:
        err_numeric = max(numeric, logging.WARNING)

    shared: list[structlog.typing.Processor] = [
        structlog.contextvars.merge_contextvars,
        redact_secrets,
        structlog.stdlib.add_logger_name,
        structlog.stdlib.add_log_level,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
        structlog.processors.StackInfoRenderer(),
    ]
    structlog.configure(
        processors=[
            structlog.stdlib.filter_by_level,
            *shared,
            structlog.stdlib.ProcessorFormatter.wrap_for_formatter,
        ],
        wrapper_class=structlog.stdlib.BoundLogger,
        logger_factory=structlog.stdlib.LoggerFactory(),
        cache_logger_on_first_use=True,
    )

    def formatter(colors: bool) -> logging.Formatter:
        return structlog.stdlib.ProcessorFormatter(
            foreign_pre_chain=shared,
            processors=[
                structlog.stdlib.ProcessorFormatter.remove_processors_meta,
                structlog.processors.format_exc_info,
                _renderer(fmt, colors=colors),
            ],
        )

    root = logging.getLogger()
    for old in [h for h in root.handlers if getattr(h, _HANDLER_MARK, False)]:
        root.removeHandler(old)
        old.close()
    handlers: list[logging.Handler] = []
    stderr_handler = _StderrHandler()
    stderr_handler.setLevel(err_numeric)
    stderr_handler.setFormatter(formatter(colors=sys.stderr.isatty()))
    handlers.append(stderr_handler)
    if log_file is not None:
        log_file.parent.mkdir(parents=True, exist_ok=True)
        file_handler = logging.FileHandler(log_file, encoding="utf-8")
        file_handler.setLevel(numeric)
        file_handler.setFormatter(formatter(colors=False))
        handlers.append(file_handler)
    for handler in handlers:
        setattr(handler, _HANDLER_MARK, True)
        root.addHandler(handler)
    lowest = min(h.level for h in handlers)
    root.setLevel(lowest)
    for name in QUIET_LIBRARIES:
        logging.getLogger(name).setLevel(lowest if lowest <= logging.DEBUG else logging.WARNING)


def configure_for_command(
    level: str | None = None,
    *,
    default: str = "INFO",
    log_file: Path | None = None,
    option: str = "--log-level",
) -> None:
    """Logging for one CLI command. The level is the command's ``--log-level`` when given,
    else ``LIVETABLE_LOG_LEVEL`` (or the config file's ``log_level``), else the command's
    own default; a bad name is a usage error naming where it came from."""
    import typer

    fmt, configured = _from_settings()
    chosen = level or configured or default
    try:
        configure_logging(fmt, chosen, log_file=log_file)
    except LogLevelError as exc:
        hint = option if level else "LIVETABLE_LOG_LEVEL"
        raise typer.BadParameter(str(exc), param_hint=hint) from exc


def bind_context(**ids: str | int | None) -> None:
    """Bind table_id / round_id / request_id (or any id) to every later log line."""
    structlog.contextvars.bind_contextvars(**{k: v for k, v in ids.items() if v is not None})
