"""``livetable rtp GAME`` and ``livetable settle GAME``: each game's reports and its
settlement from the cards, one module per game."""

from __future__ import annotations

import importlib

import typer

from table_service.rules.games import GAMES

rtp_app = typer.Typer(help="Return-to-player reports from the rules code.", no_args_is_help=True)
settle_app = typer.Typer(
    help="Recompute rounds from their cards (JSON lines in, JSON lines out).", no_args_is_help=True
)
for _game in GAMES:  # each registered game's commands: table_service/cli/games/<game>.py
    _module = importlib.import_module(f"table_service.cli.games.{_game}")
    rtp_app.command(_game)(_module.rtp)
    settle_app.command(_game)(_module.settle)
