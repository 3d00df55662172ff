"""One live blackjack round as an immutable state: who takes the next card, what may be decided.

Modelled on python-chess / OpenSpiel game modules: ``new_round`` builds the initial
state, ``legal_actions`` lists the decisions open now, ``next_card_target`` names the
position the next scanned card belongs to, and ``apply`` returns a *new* state or
raises a typed :mod:`errors` exception leaving the old one untouched. The table
service folds events through ``apply``; the settle command and the exact RTP engine
run the very same code, so live play, replay and the RTP report cannot drift apart.

Choices where the rules document is silent (each in the manual,
docs/regulator/blackjack.md):
- after a split, hand 1 takes its second card and is played out, then hand 2;
- a hand reaching 21 (or a blackjack) is complete without a decision;
- insurance is offered to a seat at its turn, before its other decisions; a seat
  holding blackjack gets a turn for that offer alone when the dealer shows an Ace
  (even money: seed 000 offers insurance whenever the dealer's card is an Ace);
- the dealer always takes the second card; further cards only while some hand can
  still win or lose against the dealer's total;
- open bet-behind follow offers hold the next card until answered (accept,
  decline or timeout).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from enum import StrEnum
from typing import Any, Literal

from table_service.rules.blackjack.config import BlackjackRules
from table_service.rules.blackjack.errors import (
    FollowOfferError,
    IllegalDecision,
    NotYourTurn,
    RoundSetupError,
    UnexpectedCard,
)
from table_service.rules.blackjack.hand import (
    Total,
    auto_play_hits,
    card_value,
    dealer_must_hit,
    hand_total,
    is_natural_values,
)
from table_service.rules.cards import Card


class Move(StrEnum):
    HIT = "hit"
    STAND = "stand"
    DOUBLE = "double"
    SPLIT = "split"
    SURRENDER = "surrender"
    INSURANCE = "insurance"
    NO_DECISION = "no_decision"


class Answer(StrEnum):
    ACCEPT = "accept"
    DECLINE = "decline"
    TIMEOUT = "timeout"


class Phase(StrEnum):
    DEAL = "deal"
    PLAY = "play"
    DEALER = "dealer"
    COMPLETE = "complete"


@dataclass(frozen=True, slots=True)
class Decision:
    """A seated player's decision; ``hand`` counts from 1."""

    seat: int
    hand: int
    move: Move


@dataclass(frozen=True, slots=True)
class FollowAnswer:
    """A bet-behind player's answer to a split/double follow offer (timeout = declined)."""

    bet_id: str
    answer: Answer


@dataclass(frozen=True, slots=True)
class Deal:
    """A card scanned out of the shoe."""

    card: Card


Action = Decision | FollowAnswer | Deal


@dataclass(frozen=True, slots=True)
class SeatTarget:
    seat: int
    hand: int  # from 1


@dataclass(frozen=True, slots=True)
class DealerTarget:
    pass


Target = SeatTarget | DealerTarget


@dataclass(frozen=True, slots=True)
class Hand:
    cards: tuple[Card, ...] = ()
    from_split: bool = False
    doubled: bool = False
    surrendered: bool = False
    stood: bool = False
    auto: bool = False
    wants_card: bool = False

    @property
    def values(self) -> tuple[int, ...]:
        return tuple(card_value(c) for c in self.cards)

    @property
    def total(self) -> Total:
        return hand_total(self.cards)

    @property
    def blackjack(self) -> bool:
        """Ace + ten-value as the first two cards; never after a split."""
        return not self.from_split and is_natural_values(self.values)

    @property
    def split_aces(self) -> bool:
        return self.from_split and bool(self.cards) and self.cards[0].rank == 1

    def complete(self, rules: BlackjackRules) -> bool:
        if self.surrendered or self.stood:
            return True
        if len(self.cards) < 2 or self.wants_card:
            return False
        total = self.total
        if total.bust or total.points == 21 or self.doubled:
            return True
        if self.split_aces and not rules.hit_split_aces:
            return True
        return self.auto and not auto_play_hits(total, rules.auto_play_hit_max)

    def needs_card(self, rules: BlackjackRules) -> bool:
        return not self.complete(rules) and (len(self.cards) < 2 or self.wants_card or self.auto)


@dataclass(frozen=True, slots=True)
class Seat:
    number: int
    bet_id: str
    stake: int
    hands: tuple[Hand, ...] = (Hand(),)
    insured: bool = False
    acted: bool = False
    timed_out: bool = False

    @property
    def split(self) -> bool:
        return len(self.hands) > 1

    @property
    def first_two_cards(self) -> tuple[Card, ...]:
        """The seat's two dealt cards (before any split): what the pair bet looks at."""
        if self.split:
            return (self.hands[0].cards[0], self.hands[1].cards[0])
        return self.hands[0].cards[:2]

    @property
    def insurance_stake(self) -> int:
        return self.stake // 2


@dataclass(frozen=True, slots=True)
class SideBet:
    """A pair bet (from the seated player or a bet-behind player) on a seat."""

    id: str
    seat: int
    stake: int


@dataclass(frozen=True, slots=True)
class BehindBet:
    """A bet behind a seat: follows hand 1; may follow hand 2 and doubles on accepted offers."""

    id: str
    seat: int
    stake: int
    hands: tuple[int, ...] = (0,)
    doubled: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True)
class FollowOffer:
    bet_id: str
    kind: Literal["split", "double"]
    hand: int  # index from 0


@dataclass(frozen=True, slots=True)
class RoundState:
    rules: BlackjackRules
    seats: tuple[Seat, ...]
    dealer: tuple[Card, ...] = ()
    pairs: tuple[SideBet, ...] = ()
    behind: tuple[BehindBet, ...] = ()
    offers: tuple[FollowOffer, ...] = ()
    phase: Phase = Phase.DEAL
    turn: int = 0

    @property
    def dealer_total(self) -> Total:
        return hand_total(self.dealer)

    @property
    def dealer_blackjack(self) -> bool:
        return is_natural_values(tuple(card_value(c) for c in self.dealer))

    def seat(self, number: int) -> Seat:
        for seat in self.seats:
            if seat.number == number:
                return seat
        raise NotYourTurn(f"seat {number} is not playing this round")


@dataclass(frozen=True, slots=True)
class SeatBet:
    """The main bet that occupies a seat for the round."""

    seat: int
    bet_id: str
    stake: int


def new_round(
    rules: BlackjackRules,
    seats: Sequence[SeatBet],
    pairs: Iterable[SideBet] = (),
    behind: Iterable[BehindBet] = (),
) -> RoundState:
    """The state after betting closed; seats act in seat-number order (first seat first)."""
    if not seats:
        raise RoundSetupError("a round needs at least one seat with a main bet")
    numbers = [s.seat for s in seats]
    if len(set(numbers)) != len(numbers):
        raise RoundSetupError("a seat can hold only one main bet")
    ids: set[str] = set()
    pairs, behind = tuple(pairs), tuple(behind)
    every: tuple[SeatBet | SideBet | BehindBet, ...] = (*seats, *pairs, *behind)
    for bet in every:
        bet_id = bet.bet_id if isinstance(bet, SeatBet) else bet.id
        if not isinstance(bet_id, str) or not bet_id:
            raise RoundSetupError("every bet needs a non-empty string id")
        if bet_id in ids:
            raise RoundSetupError(f"duplicate bet id {bet_id!r}")
        ids.add(bet_id)
        if isinstance(bet.stake, bool) or not isinstance(bet.stake, int) or bet.stake <= 0:
            raise RoundSetupError(f"bet {bet_id!r}: stake must be a positive integer")
        if not 1 <= bet.seat <= rules.seats:
            raise RoundSetupError(f"bet {bet_id!r}: seat must be 1..{rules.seats}")
    extras: tuple[SideBet | BehindBet, ...] = (*pairs, *behind)
    for bet in extras:
        if bet.seat not in numbers:
            raise RoundSetupError(f"bet {bet.id!r}: seat {bet.seat} has no main bet")
    ordered = tuple(
        Seat(number=s.seat, bet_id=s.bet_id, stake=s.stake)
        for s in sorted(seats, key=lambda s: s.seat)
    )
    clean_behind = tuple(BehindBet(b.id, b.seat, b.stake) for b in behind)
    return RoundState(rules=rules, seats=ordered, pairs=pairs, behind=clean_behind)


# --- where the next card goes -------------------------------------------------------


def insurance_owed(state: RoundState, seat: Seat) -> bool:
    """Whether ``seat``, holding blackjack, still has the insurance offer (even money) to
    answer: the dealer shows an Ace and the seat has neither answered nor timed out. Its
    hand is complete, so this offer is the seat's only turn."""
    rules = state.rules
    return (
        rules.insurance
        and len(state.dealer) == 1
        and card_value(state.dealer[0]) == 1
        and not seat.split
        and seat.hands[0].blackjack
        and not (seat.insured or seat.acted or seat.timed_out)
        and seat.insurance_stake > 0
    )


def _current(state: RoundState) -> tuple[int, int] | None:
    """(seat index, hand index) of the hand being played, in the PLAY phase."""
    if state.phase is not Phase.PLAY:
        return None
    seat = state.seats[state.turn]
    for index, hand in enumerate(seat.hands):
        if not hand.complete(state.rules):
            return state.turn, index
    if insurance_owed(state, seat):
        return state.turn, 0
    return None  # pragma: no cover - _advance never leaves a finished seat current


def _dealer_needs_card(state: RoundState) -> bool:
    if len(state.dealer) < 2:
        return True
    contending = any(
        not (h.total.bust or h.surrendered or h.blackjack) for s in state.seats for h in s.hands
    )
    return contending and dealer_must_hit(state.dealer_total, state.rules.dealer_hits_soft_17)


def next_card_target(state: RoundState) -> Target | None:
    """The position the next scanned card belongs to; None while a decision is awaited."""
    if state.phase is Phase.DEAL:
        n = len(state.seats)
        dealt = sum(len(s.hands[0].cards) for s in state.seats) + len(state.dealer)
        if dealt < n:
            return SeatTarget(state.seats[dealt].number, 1)
        if dealt == n:
            return DealerTarget()
        return SeatTarget(state.seats[dealt - n - 1].number, 1)
    if state.phase is Phase.PLAY:
        if state.offers:
            return None
        current = _current(state)
        assert current is not None
        seat_i, hand_i = current
        if state.seats[seat_i].hands[hand_i].needs_card(state.rules):
            return SeatTarget(state.seats[seat_i].number, hand_i + 1)
        return None
    if state.phase is Phase.DEALER and _dealer_needs_card(state):
        return DealerTarget()
    return None


def _advance(state: RoundState) -> RoundState:
    """Move the turn past finished seats; into the dealer phase, then completion."""
    turn = state.turn
    while (
        turn < len(state.seats)
        and all(h.complete(state.rules) for h in state.seats[turn].hands)
        and not insurance_owed(state, state.seats[turn])
    ):
        turn += 1
    if turn < len(state.seats):
        return replace(state, turn=turn, phase=Phase.PLAY)
    state = replace(state, turn=turn, phase=Phase.DEALER)
    if not _dealer_needs_card(state):
        state = replace(state, phase=Phase.COMPLETE)
    return state


def _replace_hand(
    state: RoundState, seat_i: int, hand_i: int, hand: Hand, **seat_changes: Any
) -> RoundState:
    seat = state.seats[seat_i]
    hands = (*seat.hands[:hand_i], hand, *seat.hands[hand_i + 1 :])
    new_seat = replace(seat, hands=hands, **seat_changes)
    return replace(state, seats=(*state.seats[:seat_i], new_seat, *state.seats[seat_i + 1 :]))


def _deal(state: RoundState, card: Card) -> RoundState:
    target = next_card_target(state)
    if target is None:
        if state.phase is Phase.COMPLETE:
            raise UnexpectedCard(f"card {card} after the round was complete")
        if state.offers:
            raise UnexpectedCard(f"card {card} while bet-behind follow offers are open")
        raise UnexpectedCard(f"card {card} while a player decision is awaited")
    if isinstance(target, DealerTarget):
        state = replace(state, dealer=(*state.dealer, card))
        if state.phase is Phase.DEALER and not _dealer_needs_card(state):
            state = replace(state, phase=Phase.COMPLETE)
        return state
    seat_i = next(i for i, s in enumerate(state.seats) if s.number == target.seat)
    hand_i = target.hand - 1
    hand = state.seats[seat_i].hands[hand_i]
    state = _replace_hand(
        state, seat_i, hand_i, replace(hand, cards=(*hand.cards, card), wants_card=False)
    )
    if state.phase is Phase.DEAL:
        if all(len(s.hands[0].cards) == 2 for s in state.seats):
            return _advance(replace(state, phase=Phase.PLAY, turn=0))
        return state
    return _advance(state)


# --- decisions -------------------------------------------------------------------------


def _refusal(state: RoundState, seat: Seat, hand_i: int, move: Move) -> str | None:
    """Why ``move`` is not allowed for this hand now, or None when it is."""
    rules = state.rules
    hand = seat.hands[hand_i]
    two_cards = len(hand.cards) == 2
    up = card_value(state.dealer[0])
    first_decision = not seat.acted and not seat.split and not seat.insured
    if hand.complete(rules) and move not in (Move.INSURANCE, Move.STAND, Move.NO_DECISION):
        return "the hand holds blackjack: only the insurance offer (even money) is open"
    if move in (Move.HIT, Move.STAND, Move.NO_DECISION):
        return None
    if move is Move.DOUBLE:
        if not two_cards:
            return "double only on the first two cards of a hand"
        if hand.from_split and not rules.double_after_split:
            return "no double after a split at this table"
        if hand.split_aces and not rules.double_split_aces:
            return "no double on split Aces"
        return None
    if move is Move.SPLIT:
        if seat.split:
            return "one split per seat per round"
        if not two_cards:
            return "split only on the first two cards"
        a, b = hand.cards
        same = card_value(a) == card_value(b) if rules.split_ten_values else a.rank == b.rank
        if not same:
            return "split needs two cards of equal value"
        return None
    if move is Move.SURRENDER:
        if not rules.surrender:
            return "no surrender at this table"
        if not (first_decision and two_cards):
            return "surrender only as the first decision on the first two cards"
        if up not in rules.surrender_dealer_values:
            return f"no surrender against a dealer {state.dealer[0].rank_char}"
        return None
    if move is Move.INSURANCE:
        if not rules.insurance:
            return "no insurance at this table"
        if up != 1:
            return "insurance only when the dealer's card is an Ace"
        if not first_decision:
            return "insurance only before the seat's other decisions"
        if seat.insurance_stake <= 0:
            return "main bet too small for an insurance stake"
        return None
    return f"unknown decision {move!r}"  # pragma: no cover - Move is closed


def legal_actions(state: RoundState) -> list[Decision | FollowAnswer]:
    """The decisions open now: follow-offer answers first, else the current hand's moves."""
    if state.offers:
        return [FollowAnswer(o.bet_id, a) for o in state.offers for a in Answer]
    current = _current(state)
    if current is None or next_card_target(state) is not None:
        return []
    seat_i, hand_i = current
    seat = state.seats[seat_i]
    return [
        Decision(seat.number, hand_i + 1, move)
        for move in Move
        if _refusal(state, seat, hand_i, move) is None
    ]


def _decide(state: RoundState, decision: Decision) -> RoundState:
    if state.phase is not Phase.PLAY:
        raise NotYourTurn(f"no player decisions in the {state.phase} phase")
    if state.offers:
        open_ids = ", ".join(o.bet_id for o in state.offers)
        raise FollowOfferError(f"bet-behind follow offers still open: {open_ids}")
    current = _current(state)
    assert current is not None
    seat_i, hand_i = current
    seat = state.seats[seat_i]
    if (decision.seat, decision.hand) != (seat.number, hand_i + 1):
        raise NotYourTurn(
            f"seat {seat.number} hand {hand_i + 1} is to act, "
            f"not seat {decision.seat} hand {decision.hand}"
        )
    hand = seat.hands[hand_i]
    if hand.needs_card(state.rules):
        raise IllegalDecision(f"seat {seat.number} hand {hand_i + 1} is waiting for a card")
    try:
        move = Move(decision.move)
    except ValueError:
        raise IllegalDecision(f"unknown decision {decision.move!r}") from None
    reason = _refusal(state, seat, hand_i, move)
    if reason is not None:
        raise IllegalDecision(f"{move.value} refused: {reason}")
    if move is Move.NO_DECISION:
        state = _replace_hand(state, seat_i, hand_i, replace(hand, auto=True), timed_out=True)
        return _advance(state)
    if move is Move.INSURANCE:  # a seat holding blackjack has no other decision: it moves on
        return _advance(_replace_hand(state, seat_i, hand_i, hand, insured=True, acted=True))
    if move is Move.HIT:
        return _replace_hand(state, seat_i, hand_i, replace(hand, wants_card=True), acted=True)
    if move in (Move.STAND, Move.SURRENDER):
        changed = (
            replace(hand, stood=True) if move is Move.STAND else replace(hand, surrendered=True)
        )
        return _advance(_replace_hand(state, seat_i, hand_i, changed, acted=True))
    offers = tuple(
        FollowOffer(b.id, "double", hand_i)
        for b in state.behind
        if b.seat == seat.number and hand_i in b.hands
    )
    if move is Move.DOUBLE:
        state = _replace_hand(
            state, seat_i, hand_i, replace(hand, doubled=True, wants_card=True), acted=True
        )
        return replace(state, offers=offers)
    # split: two one-card hands; hand 1 takes its second card first
    first, second = hand.cards
    new_seat = replace(
        seat,
        hands=(Hand((first,), from_split=True), Hand((second,), from_split=True)),
        acted=True,
    )
    offers = tuple(FollowOffer(b.id, "split", 1) for b in state.behind if b.seat == seat.number)
    seats = (*state.seats[:seat_i], new_seat, *state.seats[seat_i + 1 :])
    return replace(state, seats=seats, offers=offers)


def _follow(state: RoundState, answer: FollowAnswer) -> RoundState:
    offer = next((o for o in state.offers if o.bet_id == answer.bet_id), None)
    if offer is None:
        raise FollowOfferError(f"no open follow offer for bet {answer.bet_id!r}")
    try:
        accepted = Answer(answer.answer) is Answer.ACCEPT
    except ValueError:
        raise FollowOfferError(f"unknown follow answer {answer.answer!r}") from None
    offers = tuple(o for o in state.offers if o is not offer)
    if not accepted:
        return replace(state, offers=offers)
    behind = []
    for bet in state.behind:
        if bet.id == offer.bet_id:
            if offer.kind == "split":
                bet = replace(bet, hands=(*bet.hands, offer.hand))
            else:
                bet = replace(bet, doubled=(*bet.doubled, offer.hand))
        behind.append(bet)
    return replace(state, offers=offers, behind=tuple(behind))


def apply(state: RoundState, action: Action) -> RoundState:
    """The state after ``action``; raises a :class:`BlackjackError` subclass if refused."""
    if isinstance(action, Deal):
        return _deal(state, action.card)
    if isinstance(action, FollowAnswer):
        return _follow(state, action)
    if isinstance(action, Decision):
        return _decide(state, action)
    raise IllegalDecision(f"not a blackjack action: {action!r}")


def removed_seats(state: RoundState) -> tuple[int, ...]:
    """Seats whose player let every decision time out: they leave the seat after the round."""
    return tuple(s.number for s in state.seats if s.timed_out and not s.acted)
