"""Every game a live table can run, by name (python-chess ``find_variant``).

The table service, the audit replay and the contract test find a game here and never
import a game package directly; a new game registers one :class:`LiveGame` adapter.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from table_service.rules.baccarat.live import GAME as BACCARAT
from table_service.rules.blackjack.live import GAME as BLACKJACK
from table_service.rules.game import LiveGame, RulesRefusal
from table_service.rules.xidach.live import GAME as XIDACH

GAMES: Mapping[str, LiveGame] = MappingProxyType(
    {BACCARAT.name: BACCARAT, BLACKJACK.name: BLACKJACK, XIDACH.name: XIDACH}
)

DEFAULT_GAME: str = BACCARAT.name
"""The game of a table whose configuration names none (every table once ran baccarat, and a
configuration recorded then says no game): the one place that default is written."""


class UnknownGame(RulesRefusal):
    code = "unknown_game"


def find_game(name: str) -> LiveGame:
    """The game called ``name``; raises :class:`UnknownGame` naming the known ones."""
    try:
        return GAMES[name]
    except KeyError:
        raise UnknownGame(f"no game {name!r}; known: {', '.join(sorted(GAMES))}") from None
