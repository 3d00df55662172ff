"""Every incident kind a table can show, with the procedure the supervisor follows.

A game's own kinds (the ones a person raises: missed scan, exposed cards …) are its
catalogue (:attr:`LiveGame.incidents`). The table raises its own kinds whatever the game
(reader offline, foreign card, a card no position is owed …): they are listed here, once,
in the same shape, so the consoles and the recall read one catalogue per game and never a
list of their own.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from table_service.rules.game import IncidentKind, LiveGame
from table_service.rules.games import DEFAULT_GAME, UnknownGame, find_game

TABLE_INCIDENTS: Mapping[str, IncidentKind] = MappingProxyType(
    {
        k.kind: k
        for k in (
            IncidentKind(
                "foreign_card",
                True,
                "a card the shoe cannot hold (more copies than decks): the card is set "
                "aside; the supervisor checks the shoe, then voids the round or changes "
                "the shoe",
            ),
            IncidentKind(
                "unreadable_card",
                True,
                "the reader could not read a card: the supervisor enters the card at its "
                "shoe-order index from the card itself",
            ),
            IncidentKind(
                "possible_missed_card",
                True,
                "the reader skipped a sequence number: the supervisor looks at the cards "
                "on the table and enters the missed card at its shoe-order index",
            ),
            IncidentKind(
                "possible_duplicate",
                True,
                "a card may have been sent twice after a reconnection: the supervisor "
                "checks the cards on the table; one card read twice is taken out of the "
                "round (read twice: no hand changes), a real copy stays dealt",
            ),
            IncidentKind(
                "reader_offline",
                True,
                "the shoe reader is offline: dealing pauses; the supervisor restores the "
                "reader or enters the cards by hand, then resolves",
            ),
            IncidentKind(
                "hardware_alarm",
                True,
                "the shoe raised an alarm: the supervisor inspects the shoe before dealing goes on",
            ),
            IncidentKind(
                "shoe_empty",
                True,
                "the shoe is empty: the supervisor ends the shoe and inserts a new one; a "
                "round that cannot be completed is voided and refunded",
            ),
            IncidentKind(
                "card_not_owed",
                True,
                "a card no position is owed (a dealing error): the supervisor re-orders "
                "the cards in shoe order if it can be put right, otherwise voids the round "
                "(every stake refunded, new shoe)",
            ),
            IncidentKind(
                "card_exposed",
                False,
                "a card exposed while betting was open is set aside (burnt); a second "
                "exposed card voids the round",
            ),
            IncidentKind(
                "unneeded_card",
                False,
                "a card the rules do not need is set aside as the first card of the next round",
            ),
            IncidentKind(
                "card_without_shoe",
                False,
                "a card read with no shoe in use is set aside",
            ),
            IncidentKind(
                "cut_card_without_shoe",
                False,
                "a cut card read with no shoe in use is ignored",
            ),
        )
    }
)

# What only a supervisor may do: a kind that voids the round or ends the shoe as soon as
# it is raised is the supervisor's decision (DESIGN.md, roles), so a dealer reports the
# problem with a kind that pauses the table for the supervisor instead.
SUPERVISOR_EFFECTS = frozenset({"void", "end_shoe"})


def game_named(name: str | None) -> LiveGame | None:
    try:
        return find_game(name or DEFAULT_GAME)
    except UnknownGame:
        return None


def catalogue(game: str | None) -> dict[str, IncidentKind]:
    """The kinds a table running ``game`` can show: the game's own, then the table's."""
    found = game_named(game)
    kinds = dict(found.incidents) if found is not None else {}
    for kind, entry in TABLE_INCIDENTS.items():
        kinds.setdefault(kind, entry)
    return kinds


def incident_kind(game: str | None, kind: str | None) -> IncidentKind | None:
    return catalogue(game).get(kind or "")


def dealer_may_report(game: str | None) -> tuple[IncidentKind, ...]:
    """The game's kinds a dealer reports from the console, in the catalogue's order."""
    found = game_named(game)
    if found is None:
        return ()
    return tuple(
        k
        for k in found.incidents.values()
        if not k.effects & SUPERVISOR_EFFECTS and k.kind not in TABLE_INCIDENTS
    )
