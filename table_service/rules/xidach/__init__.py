"""Xì Dách rules (rules/xidach.md): one engine, three house-rule profiles as data.

Pure functions and frozen values, no I/O: the live table, ``livetable settle xidach``
and ``livetable rtp xidach`` all run this package, so a rule is written once.
"""

from __future__ import annotations

from table_service.rules.xidach.actions import (
    BANKER,
    Action,
    Check,
    Deal,
    Double,
    HandRef,
    Hide,
    Hit,
    Leave,
    NoDecision,
    Split,
    Stand,
    Surrender,
)
from table_service.rules.xidach.bank import can_take_bank, keeps_bank, next_banker, take_bank
from table_service.rules.xidach.engine import (
    apply,
    awaiting,
    legal_actions,
    new_round,
    next_card_target,
    play_order,
)
from table_service.rules.xidach.errors import XiDachError
from table_service.rules.xidach.hands import HandValue, Kind, classify, compare, rank_key
from table_service.rules.xidach.profile import (
    PROFILE_NAMES,
    Profile,
    load_profile,
    load_profile_file,
)
from table_service.rules.xidach.settlement import Settlement, settle
from table_service.rules.xidach.state import Phase, RoundState, SeatBet, TableLimits, Target
from table_service.rules.xidach.view import public_view

__all__ = [
    "BANKER",
    "PROFILE_NAMES",
    "Action",
    "Check",
    "Deal",
    "Double",
    "HandRef",
    "HandValue",
    "Hide",
    "Hit",
    "Kind",
    "Leave",
    "NoDecision",
    "Phase",
    "Profile",
    "RoundState",
    "SeatBet",
    "Settlement",
    "Split",
    "Stand",
    "Surrender",
    "TableLimits",
    "Target",
    "XiDachError",
    "apply",
    "awaiting",
    "can_take_bank",
    "classify",
    "compare",
    "keeps_bank",
    "legal_actions",
    "load_profile",
    "load_profile_file",
    "new_round",
    "next_banker",
    "next_card_target",
    "play_order",
    "public_view",
    "rank_key",
    "settle",
    "take_bank",
]
