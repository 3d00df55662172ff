"""Settling a bet against an outcome: the one place where money is computed.

Each bet type has a classifier that names the case the outcome falls in (a pay key of
the paytable such as ``win`` or ``margin_9``, or ``push`` / ``half_refund`` / ``lose``);
the paytable turns the case into money. Live settlement, the settle command and the
RTP analysis all go through :func:`settle_bet`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from fractions import Fraction
from types import MappingProxyType
from typing import Literal

from table_service.rules.baccarat.errors import (
    BetClosed,
    InvalidGameNumber,
    InvalidStake,
    NonPositiveStake,
)
from table_service.rules.baccarat.outcome import BANKER, PLAYER, TIE, Outcome
from table_service.rules.baccarat.paytable import BET_TYPES, Paytable

Result = Literal["win", "lose", "push", "half_refund"]

PUSH = "push"
HALF_REFUND = "half_refund"
LOSE = "lose"


@dataclass(frozen=True, slots=True)
class BetResult:
    """How a bet ended. ``returned`` is everything paid back (0, stake, stake + winnings,
    or half the stake); ``case`` names the rule that applied and ``pays`` its figure."""

    result: Result
    returned: int
    case: str = LOSE
    pays: Fraction | None = None


Classifier = Callable[[Outcome], str]


def _side_bet(side: str) -> Classifier:
    def classify(o: Outcome) -> str:
        if o.winner == side:
            return "win"
        return PUSH if o.winner == TIE else LOSE

    return classify


def _banker_no_commission(o: Outcome) -> str:
    if o.winner == BANKER:
        return "win_on_6" if o.banker_total == 6 else "win"
    return PUSH if o.winner == TIE else LOSE


def _when(predicate: Callable[[Outcome], bool]) -> Classifier:
    return lambda o: "win" if predicate(o) else LOSE


def _lucky6(o: Outcome) -> str:
    if o.winner == BANKER and o.banker_total == 6:
        return "two_cards" if len(o.banker_cards) == 2 else "three_cards"
    return LOSE


def _dragon_bonus(side: str) -> Classifier:
    def classify(o: Outcome) -> str:
        if o.winner == TIE:
            return PUSH if o.player_natural and o.banker_natural else LOSE
        if o.winner != side:
            return LOSE
        won_natural = o.player_natural if side == PLAYER else o.banker_natural
        return "natural" if won_natural else f"margin_{o.margin}"

    return classify


def _tiger_pair(o: Outcome) -> str:
    if o.player_pair and o.banker_pair:
        identical = o.player_perfect_pair and o.banker_perfect_pair
        return "identical" if identical and o.player_cards[0] == o.banker_cards[0] else "both"
    return "one" if o.player_pair or o.banker_pair else LOSE


def _first_card(higher: str) -> Classifier:
    def classify(o: Outcome) -> str:
        if o.banker_first_rank == o.player_first_rank:
            return HALF_REFUND
        banker_higher = o.banker_first_rank > o.player_first_rank
        return "win" if banker_higher == (higher == BANKER) else LOSE

    return classify


def _super_tie(total: int) -> Classifier:
    return _when(lambda o: o.winner == TIE and o.player_total == total)


def _either_natural(o: Outcome) -> bool:
    return (o.winner == PLAYER and o.player_natural) or (o.winner == BANKER and o.banker_natural)


#: The case classifier of every bet id of rules/baccarat.md.
CLASSIFIERS: Mapping[str, Classifier] = MappingProxyType(
    {
        "player": _side_bet(PLAYER),
        "banker": _side_bet(BANKER),
        "banker_no_commission": _banker_no_commission,
        "tie": _when(lambda o: o.winner == TIE),
        "player_pair": _when(lambda o: o.player_pair),
        "banker_pair": _when(lambda o: o.banker_pair),
        "any_pair": _when(lambda o: o.player_pair or o.banker_pair),
        "perfect_pair": _when(lambda o: o.player_perfect_pair or o.banker_perfect_pair),
        "big": _when(lambda o: o.card_count >= 5),
        "small": _when(lambda o: o.card_count == 4),
        "lucky6": _lucky6,
        "player_dragon_bonus": _dragon_bonus(PLAYER),
        "banker_dragon_bonus": _dragon_bonus(BANKER),
        "tiger_tie": _when(lambda o: o.winner == TIE and o.player_total == 6),
        "big_tiger": _when(
            lambda o: o.winner == BANKER and o.banker_total == 6 and len(o.banker_cards) == 3
        ),
        "small_tiger": _when(
            lambda o: o.winner == BANKER and o.banker_total == 6 and len(o.banker_cards) == 2
        ),
        "tiger_pair": _tiger_pair,
        "panda8": _when(
            lambda o: o.winner == PLAYER and o.player_total == 8 and len(o.player_cards) == 3
        ),
        "dragon7": _when(
            lambda o: o.winner == BANKER and o.banker_total == 7 and len(o.banker_cards) == 3
        ),
        **{f"super_tie_{n}": _super_tie(n) for n in range(10)},
        "banker_natural": _when(lambda o: o.winner == BANKER and o.banker_natural),
        "player_natural": _when(lambda o: o.winner == PLAYER and o.player_natural),
        "either_natural": _when(_either_natural),
        "dragon": _first_card(BANKER),
        "tiger": _first_card(PLAYER),
        "dragon_tiger_tie": _when(lambda o: o.banker_first_rank == o.player_first_rank),
    }
)
assert set(CLASSIFIERS) == set(BET_TYPES)


def check_stake(stake: object) -> int:
    """Raises :class:`InvalidStake` / :class:`NonPositiveStake`; returns the stake."""
    if isinstance(stake, bool) or not isinstance(stake, int):
        raise InvalidStake(f"stake must be an integer number of minor units, got {stake!r}")
    if stake <= 0:
        raise NonPositiveStake(f"stake must be positive, got {stake}")
    return stake


def validate_bet(bet_type: str, stake: int, game_number: int | None, paytable: Paytable) -> None:
    """Whether a bet may be placed in game ``game_number`` of the shoe (None: no cut-off
    check). Raises a :class:`~table_service.rules.baccarat.errors.BetRefused` subclass."""
    terms = paytable.terms(bet_type)
    check_stake(stake)
    if game_number is None:
        return
    if isinstance(game_number, bool) or not isinstance(game_number, int) or game_number < 1:
        raise InvalidGameNumber(f"game number must be a positive integer, got {game_number!r}")
    if terms.closes_after is not None and game_number > terms.closes_after:
        raise BetClosed(bet_type, game_number, terms.closes_after)


def classify(bet_type: str, outcome: Outcome, paytable: Paytable) -> str:
    """The case of ``outcome`` for ``bet_type`` (a pay key, ``push``, ``half_refund`` or
    ``lose``). Raises ``UnknownBetType`` / ``BetNotOffered``."""
    paytable.terms(bet_type)
    return CLASSIFIERS[bet_type](outcome)


def settle_bet(bet_type: str, stake: int, outcome: Outcome, paytable: Paytable) -> BetResult:
    """Settle one bet in integer minor units; winnings are rounded down to the unit."""
    terms = paytable.terms(bet_type)
    check_stake(stake)
    case = CLASSIFIERS[bet_type](outcome)
    pay = terms.pays.get(case)
    if pay is not None:
        return BetResult("win", stake + stake * pay.numerator // pay.denominator, case, pay)
    if case == PUSH:
        return BetResult("push", stake, case)
    if case == HALF_REFUND:
        return BetResult("half_refund", stake // 2, case)
    return BetResult("lose", 0, case)
