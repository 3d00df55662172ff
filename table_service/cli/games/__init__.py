"""``livetable rtp GAME`` and ``livetable settle GAME``: each game's reports and its
settlement from the cards, one module per game."""

from __future__ import annotations

import typer

from table_service.cli.games import baccarat, blackjack, xidach

rtp_app = typer.Typer(help="Return-to-player reports from the rules code.", no_args_is_help=True)
settle_app = typer.Typer(
    help="Recompute rounds from their cards (JSON lines in, JSON lines out).", no_args_is_help=True
)
for _game, _module in {"baccarat": baccarat, "blackjack": blackjack, "xidach": xidach}.items():
    rtp_app.command(_game)(_module.rtp)
    settle_app.command(_game)(_module.settle)
