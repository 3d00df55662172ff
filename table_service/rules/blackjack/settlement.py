"""Settlement of a finished blackjack round: what every stake returns.

``hand_outcomes`` is the single statement of the settlement table of
``shared/rules/blackjack.md``; ``settle`` applies it to a live round, and the exact
RTP engine builds its payoff table from the very same function. Each stake is
settled separately (the original stake, a split stake, a double stake), so a
refund under "original bets only" is visible as its own line and the money always
satisfies ``returned = floor(stake * factor)``.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from fractions import Fraction
from math import floor

from table_service.rules.blackjack.config import BlackjackRules
from table_service.rules.blackjack.errors import RoundNotComplete
from table_service.rules.blackjack.round_state import Hand, Phase, RoundState, removed_seats


class Result(StrEnum):
    WIN = "win"
    LOSE = "lose"
    PUSH = "push"
    HALF_REFUND = "half_refund"


@dataclass(frozen=True, slots=True)
class HandFacts:
    """What settlement needs to know about one player hand."""

    points: int
    blackjack: bool = False
    surrendered: bool = False
    doubled: bool = False
    second_of_split: bool = False

    @property
    def bust(self) -> bool:
        return self.points > 21


@dataclass(frozen=True, slots=True)
class DealerFacts:
    points: int
    blackjack: bool = False

    @property
    def bust(self) -> bool:
        return self.points > 21


@dataclass(frozen=True, slots=True)
class StakeOutcome:
    """One stake's fate: ``part`` is original, split or double; returned = stake * factor."""

    part: str
    result: Result
    factor: Fraction
    reason: str | None = None


WIN, PUSH, LOSE = Result.WIN, Result.PUSH, Result.LOSE


def hand_outcomes(
    hand: HandFacts, dealer: DealerFacts, rules: BlackjackRules
) -> tuple[StakeOutcome, ...]:
    """The settlement table for one hand (bet-behind stakes settle through it too)."""
    base = "split" if hand.second_of_split else "original"
    if hand.surrendered:
        return (StakeOutcome(base, Result.HALF_REFUND, Fraction(1, 2), "surrender"),)
    win = Fraction(1) + rules.win_pays
    if dealer.blackjack:
        if hand.blackjack:
            return (StakeOutcome(base, PUSH, Fraction(1), "both blackjack"),)
        obo = rules.original_bets_only
        refund = StakeOutcome(base, PUSH, Fraction(1), "original bets only")
        lost = StakeOutcome(base, LOSE, Fraction(0), "dealer blackjack")
        first = refund if obo and hand.second_of_split else lost
        if not hand.doubled:
            return (first,)
        double = (
            StakeOutcome("double", PUSH, Fraction(1), "original bets only")
            if obo
            else StakeOutcome("double", LOSE, Fraction(0), "dealer blackjack")
        )
        return (first, double)
    if hand.bust:
        result = (LOSE, Fraction(0), "bust")
    elif hand.blackjack:
        result = (WIN, Fraction(1) + rules.blackjack_pays, "blackjack")
    elif dealer.bust:
        result = (WIN, win, "dealer bust")
    elif hand.points > dealer.points:
        result = (WIN, win, "higher total")
    elif hand.points == dealer.points:
        result = (PUSH, Fraction(1), "equal totals")
    else:
        result = (LOSE, Fraction(0), "lower total")
    outcomes: tuple[StakeOutcome, ...] = (StakeOutcome(base, *result),)
    if hand.doubled:
        outcomes += (StakeOutcome("double", *result),)
    return outcomes


def insurance_outcome(dealer: DealerFacts, rules: BlackjackRules) -> StakeOutcome:
    if dealer.blackjack:
        return StakeOutcome(
            "insurance", WIN, Fraction(1) + rules.insurance_pays, "dealer blackjack"
        )
    return StakeOutcome("insurance", LOSE, Fraction(0), "no dealer blackjack")


def pair_outcome(first_rank: int, second_rank: int, rules: BlackjackRules) -> StakeOutcome:
    if first_rank == second_rank:
        return StakeOutcome("pair", WIN, Fraction(1) + rules.pair_pays, "pair")
    return StakeOutcome("pair", LOSE, Fraction(0), "no pair")


def returned(stake: int, factor: Fraction) -> int:
    """Money back for a stake: fractions of a minor unit are rounded down."""
    return floor(stake * factor)


@dataclass(frozen=True, slots=True)
class BetResult:
    """One settled stake of one bet (a bet that split or doubled has several lines)."""

    bet_id: str
    type: str  # main, pair, insurance, behind
    seat: int
    hand: int | None  # from 1; None for pair and insurance
    part: str
    stake: int
    result: Result
    returned: int
    reason: str | None = None


@dataclass(frozen=True, slots=True)
class Settlement:
    bets: tuple[BetResult, ...]
    removed_seats: tuple[int, ...]


def hand_facts(hand: Hand, index: int) -> HandFacts:
    return HandFacts(
        points=hand.total.points,
        blackjack=hand.blackjack,
        surrendered=hand.surrendered,
        doubled=hand.doubled,
        second_of_split=index == 1,
    )


def dealer_facts(state: RoundState) -> DealerFacts:
    return DealerFacts(state.dealer_total.points, state.dealer_blackjack)


def settle(state: RoundState) -> Settlement:
    """Every stake of a complete round, in seat order: main, insurance, pair, behind."""
    if state.phase is not Phase.COMPLETE:
        raise RoundNotComplete(f"the round is still in the {state.phase} phase")
    rules = state.rules
    dealer = dealer_facts(state)
    lines: list[BetResult] = []

    def add(
        bet_id: str, kind: str, seat: int, hand: int | None, stake: int, o: StakeOutcome
    ) -> None:
        lines.append(
            BetResult(
                bet_id,
                kind,
                seat,
                hand,
                o.part,
                stake,
                o.result,
                returned(stake, o.factor),
                o.reason,
            )
        )

    for seat in state.seats:
        facts = [hand_facts(h, i) for i, h in enumerate(seat.hands)]
        for i, f in enumerate(facts):
            for o in hand_outcomes(f, dealer, rules):
                add(seat.bet_id, "main", seat.number, i + 1, seat.stake, o)
        if seat.insured:
            o = insurance_outcome(dealer, rules)
            add(seat.bet_id, "insurance", seat.number, None, seat.insurance_stake, o)
        a, b = seat.first_two_cards
        for pair in state.pairs:
            if pair.seat == seat.number:
                add(
                    pair.id,
                    "pair",
                    seat.number,
                    None,
                    pair.stake,
                    pair_outcome(a.rank, b.rank, rules),
                )
        for bet in state.behind:
            if bet.seat != seat.number:
                continue
            for i in bet.hands:
                f = facts[i]
                f = HandFacts(f.points, f.blackjack, f.surrendered, i in bet.doubled, i == 1)
                for o in hand_outcomes(f, dealer, rules):
                    add(bet.id, "behind", seat.number, i + 1, bet.stake, o)
    return Settlement(tuple(lines), removed_seats(state))


@dataclass(frozen=True, slots=True)
class PlacedStake:
    bet_id: str
    type: str
    seat: int
    hand: int | None
    part: str
    stake: int


def placed_stakes(state: RoundState) -> tuple[PlacedStake, ...]:
    """Every stake on the table now, in settlement order (any phase of the round)."""
    stakes: list[PlacedStake] = []
    for seat in state.seats:
        for i, hand in enumerate(seat.hands):
            base = "split" if i == 1 else "original"
            stakes.append(PlacedStake(seat.bet_id, "main", seat.number, i + 1, base, seat.stake))
            if hand.doubled:
                stakes.append(
                    PlacedStake(seat.bet_id, "main", seat.number, i + 1, "double", seat.stake)
                )
        if seat.insured:
            stakes.append(
                PlacedStake(
                    seat.bet_id, "insurance", seat.number, None, "insurance", seat.insurance_stake
                )
            )
        for pair in state.pairs:
            if pair.seat == seat.number:
                stakes.append(PlacedStake(pair.id, "pair", seat.number, None, "pair", pair.stake))
        for bet in state.behind:
            if bet.seat != seat.number:
                continue
            for i in bet.hands:
                part = "split" if i == 1 else "original"
                stakes.append(PlacedStake(bet.id, "behind", seat.number, i + 1, part, bet.stake))
                if i in bet.doubled:
                    stakes.append(
                        PlacedStake(bet.id, "behind", seat.number, i + 1, "double", bet.stake)
                    )
    return tuple(stakes)


def void_refunds(state: RoundState, reason: str = "round void") -> Settlement:
    """A void round (server failure, misdeal): every stake placed is returned, exactly once."""
    return Settlement(
        tuple(
            BetResult(s.bet_id, s.type, s.seat, s.hand, s.part, s.stake, PUSH, s.stake, reason)
            for s in placed_stakes(state)
        ),
        (),
    )
