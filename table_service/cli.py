"""The ``livetable`` command: one entry point, one sub-command group per area.

Each area owns its own commands in its own module; this file only mounts them,
so the areas can grow without touching each other.
"""

from __future__ import annotations

import os
import sys

import typer

from shoe_reader.camera.cli import app as camera_app
from shoe_reader.cli import app as shoe_app
from table_service.cli_foundation import register as register_foundation
from table_service.demo.cli import demo
from table_service.rules.baccarat import cli as baccarat_cli
from table_service.rules.blackjack import cli as blackjack_cli
from table_service.rules.xidach import cli as xidach_cli
from table_service.studio.cli import operator_feed

app = typer.Typer(
    name="livetable",
    help="Live-dealer table back-office.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)

rtp_app = typer.Typer(help="Return-to-player reports from the rules code.", no_args_is_help=True)
settle_app = typer.Typer(
    help="Recompute rounds from their cards (JSON lines in, JSON lines out).", no_args_is_help=True
)
_GAMES = {"baccarat": baccarat_cli, "blackjack": blackjack_cli, "xidach": xidach_cli}
for game, module in _GAMES.items():
    rtp_app.command(game)(module.rtp)
    settle_app.command(game)(module.settle)

app.add_typer(rtp_app, name="rtp")
app.add_typer(settle_app, name="settle")
app.add_typer(shoe_app, name="shoe")
app.add_typer(camera_app, name="camera")

register_foundation(app)
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
    from shoe_reader.logs import configure_for_command
    from shoe_reader.settings import SettingsFileError, check_config_file

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
    database that escapes a command ends in one line and exit 2 (``cli_errors``)."""
    from shoe_reader.logs import LogLevelError, configure_logging

    try:
        configure_logging()
    except LogLevelError:
        configure_logging(level="INFO")  # the command that reads the level will say why
    try:
        app()
    except Exception as exc:  # a broken file or database: one line, never a traceback
        from table_service.cli_errors import command_path, report

        command = command_path(typer.main.get_command(app), sys.argv[1:])
        raise SystemExit(report(exc, command)) from None


if __name__ == "__main__":
    main()
