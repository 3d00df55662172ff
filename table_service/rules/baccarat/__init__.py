"""Live baccarat rules (rules/baccarat.md): pure functions and frozen values, no I/O.

The live table, the settle command and the RTP report all use this package, so a rule
is written once.
"""

from __future__ import annotations

from table_service.rules.baccarat.dealing import (
    IncompleteRound,
    Position,
    banker_draws,
    next_position,
    player_draws,
    positions,
    round_length,
    split_round,
)
from table_service.rules.baccarat.errors import (
    BetClosed,
    BetNotOffered,
    BetRefused,
    InvalidStake,
    NonPositiveStake,
    PaytableError,
    UnknownBetType,
)
from table_service.rules.baccarat.outcome import BANKER, PLAYER, TIE, Outcome, Winner, outcome
from table_service.rules.baccarat.paytable import (
    BET_TYPES,
    BetTerms,
    Paytable,
    default_paytable,
    load_paytable,
    paytable_from_dict,
)
from table_service.rules.baccarat.points import baccarat_value, hand_total
from table_service.rules.baccarat.settlement import (
    BetResult,
    check_stake,
    classify,
    settle_bet,
    validate_bet,
)

__all__ = [
    "BANKER",
    "BET_TYPES",
    "PLAYER",
    "TIE",
    "BetClosed",
    "BetNotOffered",
    "BetRefused",
    "BetResult",
    "BetTerms",
    "IncompleteRound",
    "InvalidStake",
    "NonPositiveStake",
    "Outcome",
    "Paytable",
    "PaytableError",
    "Position",
    "UnknownBetType",
    "Winner",
    "baccarat_value",
    "banker_draws",
    "check_stake",
    "classify",
    "default_paytable",
    "hand_total",
    "load_paytable",
    "next_position",
    "outcome",
    "paytable_from_dict",
    "player_draws",
    "positions",
    "round_length",
    "settle_bet",
    "split_round",
    "validate_bet",
]
