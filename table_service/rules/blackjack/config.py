"""The table configuration of live blackjack: every number of the rules document as data.

The defaults are the table of ``shared/rules/blackjack.md``; ``--rules FILE`` loads a
TOML file with the same keys (see ``default_rules.toml`` next to this module), so a
studio can change a payout or a dealer rule without a code change, and the RTP report
follows automatically.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, fields
from fractions import Fraction
from pathlib import Path
from typing import Any

from table_service.rules.blackjack.errors import RulesConfigError

DEFAULT_RULES_FILE = Path(__file__).with_name("default_rules.toml")


@dataclass(frozen=True, slots=True)
class BlackjackRules:
    """One blackjack table's rules. Payouts are exact ratios (winnings per unit staked)."""

    decks: int = 8
    seats: int = 7
    dealer_hits_soft_17: bool = False
    blackjack_pays: Fraction = Fraction(3, 2)
    win_pays: Fraction = Fraction(1)
    insurance_pays: Fraction = Fraction(2)
    pair_pays: Fraction = Fraction(11)
    double_after_split: bool = True
    double_split_aces: bool = False
    split_ten_values: bool = True
    hit_split_aces: bool = False
    surrender: bool = True
    surrender_dealer_values: tuple[int, ...] = (2, 3, 4, 5, 6, 7, 8, 9)
    insurance: bool = True
    original_bets_only: bool = True
    auto_play_hit_max: int = 11
    betting_seconds: int = 15
    decision_seconds: int = 10
    follow_seconds: int = 5

    def __post_init__(self) -> None:
        if not 1 <= self.decks <= 16:
            raise RulesConfigError(f"decks must be 1..16, got {self.decks}")
        if not 1 <= self.seats <= 7:
            raise RulesConfigError(f"seats must be 1..7, got {self.seats}")
        for timer in ("betting_seconds", "decision_seconds", "follow_seconds"):
            seconds = getattr(self, timer)
            if not 1 <= seconds <= 600:
                raise RulesConfigError(f"{timer} must be 1..600 seconds, got {seconds}")
        for name in ("blackjack_pays", "win_pays", "insurance_pays", "pair_pays"):
            value = getattr(self, name)
            if not isinstance(value, Fraction) or value < 0:
                raise RulesConfigError(f"{name} must be a non-negative ratio, got {value!r}")
        bad = [v for v in self.surrender_dealer_values if not 1 <= v <= 10]
        if bad:
            raise RulesConfigError(f"surrender_dealer_values must be card values 1..10: {bad}")
        if not 4 <= self.auto_play_hit_max <= 11:
            raise RulesConfigError(
                "auto_play_hit_max must be 4..11 (the automatic play never busts)"
            )


def parse_ratio(text: Any, name: str) -> Fraction:
    """``"3:2"`` -> 3/2; plain integers are accepted (``11`` = 11:1)."""
    try:
        if isinstance(text, bool):
            raise ValueError
        if isinstance(text, int):
            return Fraction(text)
        if isinstance(text, str) and ":" in text:
            win, stake = text.split(":", 1)
            return Fraction(int(win), int(stake))
        raise ValueError
    except (ValueError, ZeroDivisionError):
        raise RulesConfigError(f'{name}: expected a ratio like "3:2", got {text!r}') from None


def rules_from_mapping(data: dict[str, Any]) -> BlackjackRules:
    """Build rules from a TOML table; unknown keys are refused so a typo is never ignored."""
    table = data.get("blackjack", data)
    if not isinstance(table, dict):
        raise RulesConfigError("[blackjack] must be a table")
    known = {f.name: f for f in fields(BlackjackRules)}
    unknown = sorted(set(table) - set(known))
    if unknown:
        raise RulesConfigError(f"unknown rule keys: {', '.join(unknown)}")
    kwargs: dict[str, Any] = {}
    for key, value in table.items():
        default = getattr(BlackjackRules(), key)
        if isinstance(default, Fraction):
            kwargs[key] = parse_ratio(value, key)
        elif isinstance(default, bool):
            if not isinstance(value, bool):
                raise RulesConfigError(f"{key} must be true or false, got {value!r}")
            kwargs[key] = value
        elif isinstance(default, int):
            if isinstance(value, bool) or not isinstance(value, int):
                raise RulesConfigError(f"{key} must be an integer, got {value!r}")
            kwargs[key] = value
        elif isinstance(default, tuple):
            if not isinstance(value, list) or not all(
                isinstance(v, int) and not isinstance(v, bool) for v in value
            ):
                raise RulesConfigError(f"{key} must be a list of integers, got {value!r}")
            kwargs[key] = tuple(value)
    return BlackjackRules(**kwargs)


def load_rules(path: Path | str | None = None) -> BlackjackRules:
    """The rules in ``path`` (TOML), or the rules document's defaults."""
    if path is None:
        return BlackjackRules()
    try:
        with Path(path).open("rb") as handle:
            data = tomllib.load(handle)
    except OSError as exc:
        raise RulesConfigError(f"cannot read rules file {path}: {exc}") from exc
    except tomllib.TOMLDecodeError as exc:
        raise RulesConfigError(f"rules file {path} is not valid TOML: {exc}") from exc
    return rules_from_mapping(data)
