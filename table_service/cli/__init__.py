"""The ``livetable`` command: one entry point, one module of this package per command
group (``db``, ``principal``, ``audit`` and ``report``, ``serve``, ``demo``,
``operator-feed``, ``rtp`` and ``settle`` in ``games/``), the helpers they share in
``common``; ``shoe`` and ``camera`` drive the readers and the simulator.

This module only mounts them, so the groups can grow without touching each other.
"""

from __future__ import annotations

import os
import sys

import typer

from table_service.cli.audit import audit_app, report
from table_service.cli.camera import app as camera_app
from table_service.cli.db import db_app
from table_service.cli.demo import demo
from table_service.cli.games import rtp_app, settle_app
from table_service.cli.principal import principal_app
from table_service.cli.serve import serve
from table_service.cli.shoe import app as shoe_app
from table_service.cli.studio import operator_feed

app = typer.Typer(
    name="livetable",
    help="Live-dealer table back-office.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)

app.add_typer(rtp_app, name="rtp")
app.add_typer(settle_app, name="settle")
app.add_typer(shoe_app, name="shoe")
app.add_typer(camera_app, name="camera")
app.add_typer(db_app, name="db")
app.add_typer(principal_app, name="principal")
app.add_typer(audit_app, name="audit")
app.command("report")(report)
app.command("serve")(serve)
app.command("demo")(demo)
app.command("operator-feed")(operator_feed)


@app.callback()
def _root(
    log_level: str | None = typer.Option(
        None,
        "--log-level",
        help="DEBUG, INFO, WARNING, ERROR or CRITICAL for every command "
        "(default: LIVETABLE_LOG_LEVEL, else each command's own).",
    ),
) -> None:
    """Live-dealer table back-office."""
    from table_service.config import SettingsFileError, check_config_file
    from table_service.logs import configure_for_command

    try:  # every command reads it (its log level at least): a broken one stops them all
        check_config_file()
    except SettingsFileError as exc:
        typer.echo(f"livetable: {exc}", err=True)
        raise typer.Exit(2) from exc

    if log_level:
        configure_for_command(log_level)
        # Commands configure logging again from the settings: they must see this level.
        os.environ["LIVETABLE_LOG_LEVEL"] = log_level


def main() -> None:
    """Logs go to standard error from the start, so commands whose standard output is data
    (``settle``, ``shoe read``, ``camera read``) never mix a log line into it. Each command
    may then configure logging again from its own ``--log-level``. A broken file or
    database that escapes a command ends in one line and exit 2 (``errors``)."""
    from table_service.logs import LogLevelError, configure_logging

    try:
        configure_logging()
    except LogLevelError:
        configure_logging(level="INFO")  # the command that reads the level will say why
    try:
        app()
    except Exception as exc:  # a broken file or database: one line, never a traceback
        from table_service.cli.errors import command_path
        from table_service.cli.errors import report as report_error

        command = command_path(typer.main.get_command(app), sys.argv[1:])
        raise SystemExit(report_error(exc, command)) from None
