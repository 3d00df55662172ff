"""Money at the end of a round: what each hand returns, and the seated banker's cover.

Hands already carry their result (decided when they were shown, checked or compared);
this module turns results into payments. Only a seated banker can run short: winners
are then paid pro rata to what each won, rounded down, and the unpaid part is recorded
per hand so the ledger shows the shortfall exactly.
"""

from __future__ import annotations

from dataclasses import dataclass

from table_service.rules.cards import Card
from table_service.rules.xidach.errors import RoundNotOverError
from table_service.rules.xidach.hands import HandValue
from table_service.rules.xidach.state import Basis, Phase, Result, RoundState


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
    returned: int  # what is actually paid back
    shortfall: int  # owed - returned (a seated banker who could not cover)


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
    seat_ids = {s.seat: s.bet_id for s in state.seats}
    hands = tuple(
        HandSettlement(
            seat=h.seat,
            hand=h.index,
            bet_id=seat_ids[h.seat],
            cards=h.cards,
            value=h.value(profile),
            stake=h.stake,
            result=h.result.result if h.result else Result.PUSH,
            basis=h.result.basis if h.result else Basis.SHOWDOWN,
            owed=o,
            returned=p,
            shortfall=o - p,
        )
        for h, o, p in zip(state.hands, owed, paid, strict=True)
    )
    banker_value = state.banker.value(profile) if len(state.banker.cards) >= 2 else None
    return Settlement(profile.name, state.banker.cards, banker_value, hands, bank)
