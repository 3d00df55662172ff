"""Money at the end of a round: what each hand returns, and the seated banker's cover.

Hands already carry their result (decided when they were shown, checked or compared);
this module turns results into payments. Only a seated banker can run short: winners
are then paid pro rata to what each won, rounded down, and the unpaid part is recorded
per hand so the ledger shows the shortfall exactly. A profile's ``commission`` is then
taken from each net win actually paid (rounded down, in the punter's favour) and kept
as its own line, so the ledger shows stake, win and commission apart.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

from table_service.rules.cards import Card
from table_service.rules.xidach.errors import RoundNotOverError
from table_service.rules.xidach.hands import HandValue
from table_service.rules.xidach.state import Basis, Hand, Phase, Result, RoundState


@dataclass(frozen=True, slots=True)
class HandSettlement:
    seat: int
    hand: int
    bet_id: str | None
    cards: tuple[Card, ...]
    value: HandValue
    stake: int
    result: Result
    basis: Basis
    owed: int  # what the rules award back (stake included)
    returned: int  # what is actually paid back: owed - shortfall - commission
    shortfall: int  # what a seated banker who could not cover did not pay
    commission: int = 0  # the house's share of the net win paid (its own ledger line)

    @property
    def net(self) -> int:
        """The punter's gain (+) or loss (-) on this hand."""
        return self.returned - self.stake


@dataclass(frozen=True, slots=True)
class BankSettlement:
    """A seated banker's side of the round."""

    seat: int
    balance_before: int
    balance_after: int
    shortfall: int
    keeps_bank: bool
    left: bool


@dataclass(frozen=True, slots=True)
class Settlement:
    profile: str
    banker_cards: tuple[Card, ...]
    banker_value: HandValue | None  # None if the banker left before completing two cards
    hands: tuple[HandSettlement, ...]
    bank: BankSettlement | None  # None: the house banked

    @property
    def total_staked(self) -> int:
        return sum(h.stake for h in self.hands)

    @property
    def total_returned(self) -> int:
        return sum(h.returned for h in self.hands)

    @property
    def total_commission(self) -> int:
        return sum(h.commission for h in self.hands)


def commission_on(win: int, share: Fraction) -> int:
    """The house's commission on a net win of ``win`` minor units, rounded down."""
    return win * share.numerator // share.denominator if win > 0 else 0


def settle(state: RoundState) -> Settlement:
    """Payments for a finished round (the same code for live bets, replays and RTP)."""
    if state.phase is not Phase.SETTLED:
        raise RoundNotOverError(f"the round is still in phase {state.phase}")
    profile = state.profile
    owed = [h.result.returned if h.result else h.stake for h in state.hands]
    paid = list(owed)
    bank = None
    if state.banker.seated:
        balance = state.banker.balance or 0
        collected = sum(max(h.stake - o, 0) for h, o in zip(state.hands, owed, strict=True))
        winnings = [max(o - h.stake, 0) for h, o in zip(state.hands, owed, strict=True)]
        due = sum(winnings)
        cover = balance + collected
        if due > cover:  # pro rata to what each won, rounded down
            paid = [
                h.stake + w * cover // due if w else o
                for h, o, w in zip(state.hands, owed, winnings, strict=True)
            ]
        paid_out = sum(p - h.stake for h, p in zip(state.hands, paid, strict=True) if p > h.stake)
        after = balance + collected - paid_out
        limits = state.limits
        keeps = (
            not state.banker.left
            and limits is not None
            and (not profile.seated_banker.keep_while_at_least_min_bet or after >= limits.min_bet)
        )
        bank = BankSettlement(
            seat=state.banker.seat or 0,
            balance_before=balance,
            balance_after=after,
            shortfall=sum(owed) - sum(paid),
            keeps_bank=keeps,
            left=state.banker.left,
        )
    hands = tuple(_line(state, h, o, p) for h, o, p in zip(state.hands, owed, paid, strict=True))
    banker_value = state.banker.value(profile) if len(state.banker.cards) >= 2 else None
    return Settlement(profile.name, state.banker.cards, banker_value, hands, bank)


def _line(state: RoundState, h: Hand, owed: int, paid: int) -> HandSettlement:
    commission = commission_on(paid - h.stake, state.profile.payouts.commission)
    return HandSettlement(
        seat=h.seat,
        hand=h.index,
        bet_id=state.seat(h.seat).bet_id,
        cards=h.cards,
        value=h.value(state.profile),
        stake=h.stake,
        result=h.result.result if h.result else Result.PUSH,
        basis=h.result.basis if h.result else Basis.SHOWDOWN,
        owed=owed,
        returned=paid - commission,
        shortfall=owed - paid,
        commission=commission,
    )


def settled_so_far(state: RoundState) -> tuple[HandSettlement, ...]:
    """Hands whose payment is final before the round ends (a check, a natural, a bust).

    The live table pays these at once. Against the house every decided hand is final;
    a seated banker's winners wait for the end of the round, because a banker who
    cannot cover them all pays them pro rata to what each won.
    """
    lines = []
    for h in state.hands:
        if h.result is None:
            continue
        owed = h.result.returned
        if state.banker.seated and owed > h.stake:
            continue
        lines.append(_line(state, h, owed, owed))
    return tuple(lines)
