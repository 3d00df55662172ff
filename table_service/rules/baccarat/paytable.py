"""Paytables as data: every pay figure and every game-number cut-off of a table.

The rules document's table is the default (``default_paytable.toml`` next to this
module); a table may load its own file. Pays are exact fractions so that money is
never computed in floating point.
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from functools import cache
from importlib import resources
from pathlib import Path
from types import MappingProxyType
from typing import Any

from table_service.rules.baccarat.errors import BetNotOffered, PaytableError, UnknownBetType

SUPER_TIES = tuple(f"super_tie_{n}" for n in range(10))

#: Every bet id of rules/baccarat.md, in the order of its table.
BET_TYPES: tuple[str, ...] = (
    "player",
    "banker",
    "banker_no_commission",
    "tie",
    "player_pair",
    "banker_pair",
    "any_pair",
    "perfect_pair",
    "big",
    "small",
    "lucky6",
    "player_dragon_bonus",
    "banker_dragon_bonus",
    "tiger_tie",
    "big_tiger",
    "small_tiger",
    "tiger_pair",
    "panda8",
    "dragon7",
    *SUPER_TIES,
    "banker_natural",
    "player_natural",
    "either_natural",
    "dragon",
    "tiger",
    "dragon_tiger_tie",
)

_MARGINS = frozenset(f"margin_{m}" for m in range(1, 10))

#: The pay keys each bet type understands: (required, optional).
PAY_KEYS: Mapping[str, tuple[frozenset[str], frozenset[str]]] = MappingProxyType(
    {
        **{bet: (frozenset({"win"}), frozenset()) for bet in BET_TYPES},
        "banker_no_commission": (frozenset({"win", "win_on_6"}), frozenset()),
        "lucky6": (frozenset({"two_cards", "three_cards"}), frozenset()),
        "player_dragon_bonus": (frozenset({"natural"}), _MARGINS),
        "banker_dragon_bonus": (frozenset({"natural"}), _MARGINS),
        "tiger_pair": (frozenset({"identical", "both", "one"}), frozenset()),
    }
)

DEFAULT_PAYTABLE_RESOURCE = "default_paytable.toml"


@dataclass(frozen=True, slots=True)
class BetTerms:
    """What one bet pays and until which game of a shoe it is accepted."""

    pays: Mapping[str, Fraction]
    closes_after: int | None = None


@dataclass(frozen=True, slots=True)
class Paytable:
    """The bets a table offers, with their pays and cut-offs."""

    bets: Mapping[str, BetTerms]
    decks: int = 8
    source: str = field(default="default", compare=False)

    @property
    def offered(self) -> tuple[str, ...]:
        return tuple(bet for bet in BET_TYPES if bet in self.bets)

    def terms(self, bet_type: str) -> BetTerms:
        """Raises :class:`UnknownBetType` / :class:`BetNotOffered`."""
        terms = self.bets.get(bet_type)
        if terms is not None:
            return terms
        if bet_type in BET_TYPES:
            raise BetNotOffered(f"bet type {bet_type!r} is not offered at this table")
        raise UnknownBetType(f"unknown bet type {bet_type!r}")

    def pays(self, bet_type: str) -> Mapping[str, Fraction]:
        return self.terms(bet_type).pays

    def closes_after(self, bet_type: str) -> int | None:
        return self.terms(bet_type).closes_after


def parse_pay(value: Any, where: str) -> Fraction:
    """An exact pay from a TOML integer, decimal string, fraction string or float.

    A TOML float is read through its shortest decimal spelling (0.95 -> 19/20), which is
    exactly what the file's author wrote.
    """
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise PaytableError(f"{where}: a pay must be a number or a string, got {value!r}")
    try:
        pay = Fraction(str(value).strip())
    except (ValueError, ZeroDivisionError) as exc:
        raise PaytableError(f"{where}: not an exact pay: {value!r}") from exc
    if pay < 0:
        raise PaytableError(f"{where}: a pay cannot be negative: {value!r}")
    return pay


def _parse_terms(bet_type: str, raw: Any) -> BetTerms:
    where = f"bets.{bet_type}"
    if not isinstance(raw, dict):
        raise PaytableError(f"{where} must be a table")
    unknown = set(raw) - {"pays", "closes_after"}
    if unknown:
        raise PaytableError(f"{where}: unknown keys {sorted(unknown)}")
    pays_raw = raw.get("pays")
    if not isinstance(pays_raw, dict):
        raise PaytableError(f"{where}.pays must be a table")
    required, optional = PAY_KEYS[bet_type]
    missing = required - set(pays_raw)
    extra = set(pays_raw) - required - optional
    if missing:
        raise PaytableError(f"{where}.pays is missing {sorted(missing)}")
    if extra:
        raise PaytableError(f"{where}.pays has unknown keys {sorted(extra)}")
    pays = {key: parse_pay(value, f"{where}.pays.{key}") for key, value in pays_raw.items()}
    closes_after = raw.get("closes_after")
    if closes_after is not None and (
        isinstance(closes_after, bool) or not isinstance(closes_after, int) or closes_after < 1
    ):
        raise PaytableError(f"{where}.closes_after must be a positive game number")
    return BetTerms(pays=MappingProxyType(pays), closes_after=closes_after)


def paytable_from_dict(data: Mapping[str, Any], source: str = "<dict>") -> Paytable:
    """Build and check a paytable from parsed TOML."""
    unknown = set(data) - {"decks", "bets"}
    if unknown:
        raise PaytableError(f"{source}: unknown top-level keys {sorted(unknown)}")
    decks = data.get("decks", 8)
    if isinstance(decks, bool) or not isinstance(decks, int) or decks < 1:
        raise PaytableError(f"{source}: decks must be a positive integer")
    bets_raw = data.get("bets")
    if not isinstance(bets_raw, dict) or not bets_raw:
        raise PaytableError(f"{source}: [bets] must list at least one bet")
    unknown_bets = [bet for bet in bets_raw if bet not in BET_TYPES]
    if unknown_bets:
        raise PaytableError(f"{source}: unknown bet ids {unknown_bets}")
    bets = {bet: _parse_terms(bet, bets_raw[bet]) for bet in BET_TYPES if bet in bets_raw}
    return Paytable(bets=MappingProxyType(bets), decks=decks, source=source)


def load_paytable(path: Path | None = None) -> Paytable:
    """Load a table's paytable file, or the rules document's default when ``path`` is None."""
    if path is None:
        text = resources.files(__package__).joinpath(DEFAULT_PAYTABLE_RESOURCE).read_text("utf-8")
        source = "default"
    else:
        try:
            text = Path(path).read_text(encoding="utf-8")
        except OSError as exc:
            raise PaytableError(f"cannot read paytable {path}: {exc}") from exc
        source = str(path)
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise PaytableError(f"{source}: not valid TOML: {exc}") from exc
    return paytable_from_dict(data, source=source)


@cache
def default_paytable() -> Paytable:
    """The rules document's table, parsed once (it is immutable)."""
    return load_paytable(None)
