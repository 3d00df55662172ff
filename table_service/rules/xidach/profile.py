"""Rule profiles: every difference between the Xì Dách seeds, as data.

The engine has no ``if profile == "classic"``; it reads these fields. A table picks a
profile by name (the TOML files shipped beside this module) or from its own TOML file,
so a house-rule change is a configuration change, reviewed like one.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from fractions import Fraction
from importlib import resources
from pathlib import Path
from typing import Any, TypeVar

from table_service.rules.xidach.errors import ProfileError

_T = TypeVar("_T")

PROFILE_NAMES = ("room", "classic", "forced-draw")
PUNTER_ACTIONS = frozenset({"hit", "stand", "double", "split", "surrender"})


@dataclass(frozen=True, slots=True)
class AceRule:
    """An Ace's possible values while the hand is small, and 1 beyond that."""

    values: tuple[int, ...]
    flexible_up_to_cards: int

    def values_for(self, n_cards: int) -> tuple[int, ...]:
        return self.values if n_cards <= self.flexible_up_to_cards else (1,)


@dataclass(frozen=True, slots=True)
class Ranking:
    under_16: str  # "above_bust" | "below_bust"
    bust_vs_bust: str  # "push" | "punter_loses"


@dataclass(frozen=True, slots=True)
class Payouts:
    """Winnings per unit staked, exact fractions (rounded down only when applied to money).

    ``commission`` is the share of a punter's net win the house keeps (0 by default):
    the lever a studio pulls when a profile's house edge is negative.
    """

    natural: Fraction
    ngu_linh: Fraction
    win: Fraction
    commission: Fraction = Fraction(0)


@dataclass(frozen=True, slots=True)
class PunterRules:
    actions: frozenset[str]
    must_draw_below: int
    must_stand_from: int
    natural_settles_at_once: bool
    bust_loses_at_once: bool
    privacy: bool
    timer_s: int
    timer_scope: str
    auto_stand_at: int
    leave: str
    no_bet: str = "sits_out"  # "removed": a seated punter who does not bet loses the seat


@dataclass(frozen=True, slots=True)
class BankerRules:
    must_draw_below: int
    must_stand_from: int
    check_from: int  # 0: no check in this profile
    draw_after_check: bool
    natural_ends_round: bool
    timer_s: int
    auto_stand_at: int
    leave: str

    @property
    def may_check(self) -> bool:
        return self.check_from > 0


@dataclass(frozen=True, slots=True)
class HousePolicy:
    """What the house banker (the dealer's hand) does, published with the profile.

    The house has no discretion: at every banker decision exactly one action is legal.
    ``check_before_draw = "beaten"`` makes the house, from ``banker.check_from`` and
    below ``draw_below``, check each punter whose every open hand its current hand
    beats before it draws again (seed 003: the banker checks whoever it thinks is bust);
    ``"none"`` (the contract's default) never checks before drawing.
    """

    draw_below: int  # draw while the total is under this
    then: str  # "stand" | "check_all": what the house does once it stops drawing
    check_before_draw: str  # "none" | "beaten"


@dataclass(frozen=True, slots=True)
class SeatedBankerRules:
    bankroll_multiple_of_max_bet: int
    keep_while_at_least_min_bet: bool
    rotation: str
    cover: str


@dataclass(frozen=True, slots=True)
class Profile:
    name: str
    seed: str
    decks: int
    max_punters: int
    max_cards: int
    draw_direction: str  # "clockwise" | "counterclockwise": the punters' turns
    deal_direction: str  # "clockwise" | "counterclockwise": the two rounds of the deal
    banker_face_down: int  # how many of the banker's two dealt cards are face down (first ones)
    turn_style: str  # "whole_hand" | "rounds"
    hit_on_21: bool
    banker_modes: frozenset[str]
    round_start_delay_s: int
    ace: AceRule
    ranking: Ranking
    payouts: Payouts
    punter: PunterRules
    banker: BankerRules
    house_policy: HousePolicy
    seated_banker: SeatedBankerRules
    betting_closes_when_all_bet: bool = False  # room: "or earlier once every punter has bet"

    @property
    def min_punters(self) -> int:
        """Seeds count players including the banker and need two of them: one punter."""
        return 1


def _get(table: dict[str, Any], key: str, kind: type[_T], where: str) -> _T:
    if key not in table:
        raise ProfileError(f"{where}: missing field {key!r}")
    value = table[key]
    if (kind is int and isinstance(value, bool)) or not isinstance(value, kind):
        raise ProfileError(f"{where}.{key}: expected {kind.__name__}, got {value!r}")
    return value


def _choice(table: dict[str, Any], key: str, options: tuple[str, ...], where: str) -> str:
    value = _get(table, key, str, where)
    if value not in options:
        raise ProfileError(f"{where}.{key}: {value!r} is not one of {', '.join(options)}")
    return value


def _fraction(table: dict[str, Any], key: str) -> Fraction:
    value = _get(table, key, list, "payouts")
    if len(value) != 2 or not all(_is_int(v) and v > 0 for v in value):
        raise ProfileError(f"payouts.{key}: expected [numerator, denominator] > 0, got {value!r}")
    return Fraction(value[0], value[1])


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _commission(table: dict[str, Any]) -> Fraction:
    """``commission = [5, 100]``: 5 % of each net win; absent means none."""
    if "commission" not in table:
        return Fraction(0)
    value = _get(table, "commission", list, "payouts")
    if len(value) != 2 or not all(_is_int(v) for v in value) or value[1] <= 0:
        raise ProfileError(f"payouts.commission: expected [numerator, denominator], got {value!r}")
    share = Fraction(value[0], value[1])
    if not 0 <= share < 1:
        raise ProfileError(f"payouts.commission: a share in [0, 1), got {share}")
    return share


def _house_policy(data: dict[str, Any], banker: BankerRules) -> HousePolicy:
    """The published house policy; absent fields take the contract's default."""
    table = data.get("house_policy", {})
    if not isinstance(table, dict):
        raise ProfileError("house_policy: expected a table")
    where = "house_policy"
    draw_below = _get(table, "draw_below", int, where) if "draw_below" in table else 17
    default_then = "check_all" if banker.may_check else "stand"
    then = (
        _choice(table, "then", ("stand", "check_all"), where) if "then" in table else default_then
    )
    check = (
        _choice(table, "check_before_draw", ("none", "beaten"), where)
        if "check_before_draw" in table
        else "none"
    )
    return HousePolicy(draw_below, then, check)


def _section(data: dict[str, Any], key: str) -> dict[str, Any]:
    return _get(data, key, dict, "profile")


def profile_from_dict(data: dict[str, Any]) -> Profile:
    """Build and validate a profile; raises :class:`ProfileError` with the offending field."""
    ace = _section(data, "ace")
    ranking = _section(data, "ranking")
    payouts = _section(data, "payouts")
    punter = _section(data, "punter")
    banker = _section(data, "banker")
    seated = _section(data, "seated_banker")
    ace_values = tuple(_get(ace, "values", list, "ace"))
    if not ace_values or not all(isinstance(v, int) and 1 <= v <= 11 for v in ace_values):
        raise ProfileError(f"ace.values: expected values between 1 and 11, got {ace_values!r}")
    if 1 not in ace_values:
        raise ProfileError("ace.values: an Ace must be allowed to count 1")
    actions = frozenset(_get(punter, "actions", list, "punter"))
    unknown = actions - PUNTER_ACTIONS
    if unknown or not {"hit", "stand"} <= actions:
        raise ProfileError(f"punter.actions: need hit and stand, unknown {sorted(unknown)}")
    draw_direction = _choice(data, "draw_direction", ("clockwise", "counterclockwise"), "profile")
    deal_direction = (
        _choice(data, "deal_direction", ("clockwise", "counterclockwise"), "profile")
        if "deal_direction" in data
        else draw_direction
    )
    face_down = _get(data, "banker_face_down", int, "profile") if "banker_face_down" in data else 1
    modes = frozenset(_get(data, "banker_modes", list, "profile"))
    if not modes or not modes <= {"house", "seated"}:
        raise ProfileError(f"banker_modes: expected house and/or seated, got {sorted(modes)}")
    banker_rules = BankerRules(
        must_draw_below=_get(banker, "must_draw_below", int, "banker"),
        must_stand_from=_get(banker, "must_stand_from", int, "banker"),
        check_from=_get(banker, "check_from", int, "banker"),
        draw_after_check=_get(banker, "draw_after_check", bool, "banker"),
        natural_ends_round=_get(banker, "natural_ends_round", bool, "banker"),
        timer_s=_get(banker, "timer_s", int, "banker"),
        auto_stand_at=_get(banker, "auto_stand_at", int, "banker"),
        leave=_choice(banker, "leave", ("punters_win",), "banker"),
    )
    profile = Profile(
        name=_get(data, "name", str, "profile"),
        seed=_get(data, "seed", str, "profile"),
        decks=_get(data, "decks", int, "profile"),
        max_punters=_get(data, "max_punters", int, "profile"),
        max_cards=_get(data, "max_cards", int, "profile"),
        draw_direction=draw_direction,
        deal_direction=deal_direction,
        banker_face_down=face_down,
        turn_style=_choice(data, "turn_style", ("whole_hand", "rounds"), "profile"),
        hit_on_21=_get(data, "hit_on_21", bool, "profile"),
        banker_modes=modes,
        round_start_delay_s=_get(data, "round_start_delay_s", int, "profile"),
        betting_closes_when_all_bet=(
            _get(data, "betting_closes_when_all_bet", bool, "profile")
            if "betting_closes_when_all_bet" in data
            else False
        ),
        ace=AceRule(
            values=tuple(sorted(set(ace_values))),
            flexible_up_to_cards=_get(ace, "flexible_up_to_cards", int, "ace"),
        ),
        ranking=Ranking(
            under_16=_choice(ranking, "under_16", ("above_bust", "below_bust"), "ranking"),
            bust_vs_bust=_choice(ranking, "bust_vs_bust", ("push", "punter_loses"), "ranking"),
        ),
        payouts=Payouts(
            natural=_fraction(payouts, "natural"),
            ngu_linh=_fraction(payouts, "ngu_linh"),
            win=_fraction(payouts, "win"),
            commission=_commission(payouts),
        ),
        punter=PunterRules(
            actions=actions,
            must_draw_below=_get(punter, "must_draw_below", int, "punter"),
            must_stand_from=_get(punter, "must_stand_from", int, "punter"),
            natural_settles_at_once=_get(punter, "natural_settles_at_once", bool, "punter"),
            bust_loses_at_once=_get(punter, "bust_loses_at_once", bool, "punter"),
            privacy=_get(punter, "privacy", bool, "punter"),
            timer_s=_get(punter, "timer_s", int, "punter"),
            timer_scope=_choice(punter, "timer_scope", ("all_punters", "per_punter"), "punter"),
            auto_stand_at=_get(punter, "auto_stand_at", int, "punter"),
            leave=_choice(punter, "leave", ("lose",), "punter"),
            no_bet=(
                _choice(punter, "no_bet", ("sits_out", "removed"), "punter")
                if "no_bet" in punter
                else "sits_out"
            ),
        ),
        banker=banker_rules,
        house_policy=_house_policy(data, banker_rules),
        seated_banker=SeatedBankerRules(
            bankroll_multiple_of_max_bet=_get(
                seated, "bankroll_multiple_of_max_bet", int, "seated_banker"
            ),
            keep_while_at_least_min_bet=_get(
                seated, "keep_while_at_least_min_bet", bool, "seated_banker"
            ),
            rotation=_choice(seated, "rotation", ("clockwise",), "seated_banker"),
            cover=_choice(seated, "cover", ("pro_rata",), "seated_banker"),
        ),
    )
    _check_consistency(profile)
    return profile


def _check_consistency(p: Profile) -> None:
    if not 1 <= p.decks <= 8:
        raise ProfileError(f"decks: expected 1–8, got {p.decks}")
    if p.max_cards != 5:
        raise ProfileError("max_cards: Ngũ Linh is a five-card hand, so a hand holds at most 5")
    if not 1 <= p.max_punters <= 8:
        raise ProfileError(f"max_punters: expected 1–8, got {p.max_punters}")
    if p.punter.must_draw_below > p.punter.must_stand_from:
        raise ProfileError("punter: must_draw_below above must_stand_from leaves no legal move")
    if p.banker.must_draw_below > p.banker.must_stand_from:
        raise ProfileError("banker: must_draw_below above must_stand_from leaves no legal move")
    if not p.punter.must_draw_below <= p.punter.auto_stand_at <= p.punter.must_stand_from:
        raise ProfileError("punter.auto_stand_at must lie between the forced draw and stand totals")
    if not p.banker.must_draw_below <= p.banker.auto_stand_at <= p.banker.must_stand_from:
        raise ProfileError("banker.auto_stand_at must lie between the forced draw and stand totals")
    if p.banker.may_check and p.banker.check_from < p.banker.must_draw_below:
        raise ProfileError("banker.check_from below must_draw_below: checking would skip a draw")
    if p.banker_face_down not in (0, 1, 2):
        raise ProfileError(f"banker_face_down: 0, 1 or 2 dealt cards, got {p.banker_face_down}")
    for name, seconds in (
        ("punter.timer_s", p.punter.timer_s),
        ("banker.timer_s", p.banker.timer_s),
        ("round_start_delay_s", p.round_start_delay_s),
    ):
        if not 1 <= seconds <= 600:
            raise ProfileError(f"{name}: expected 1–600 seconds, got {seconds}")
    house = p.house_policy
    if "house" in p.banker_modes:
        if not p.banker.must_draw_below <= house.draw_below <= p.banker.must_stand_from:
            raise ProfileError(
                "house_policy.draw_below must lie between the banker's forced draw "
                f"({p.banker.must_draw_below}) and forced stand ({p.banker.must_stand_from})"
            )
        if house.then == "check_all" and not p.banker.may_check:
            raise ProfileError("house_policy.then = check_all in a profile without checks")
        if house.check_before_draw == "beaten" and not (
            p.banker.may_check
            and p.banker.draw_after_check
            and p.banker.check_from < house.draw_below
        ):
            raise ProfileError(
                "house_policy.check_before_draw = beaten needs checks from below draw_below "
                "and a draw after a check"
            )


def load_profile(name: str) -> Profile:
    """One of the shipped profiles (``room``, ``classic``, ``forced-draw``)."""
    if name not in PROFILE_NAMES:
        raise ProfileError(f"unknown profile {name!r}; expected one of {', '.join(PROFILE_NAMES)}")
    text = resources.files(__package__).joinpath("profiles", f"{name}.toml").read_text("utf-8")
    return _parse(text, name)


def load_profile_file(path: Path) -> Profile:
    """A table's own profile file (``--rules FILE``)."""
    try:
        text = path.read_text("utf-8")
    except OSError as exc:
        raise ProfileError(f"cannot read profile {path}: {exc.strerror}") from exc
    return _parse(text, str(path))


def _parse(text: str, where: str) -> Profile:
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ProfileError(f"{where}: not valid TOML: {exc}") from exc
    return profile_from_dict(data)
