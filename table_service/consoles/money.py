"""The money on a table, as the consoles show it: small functions over the table's open
stakes and its settled bets, one per audience's need, so each response is built from
them (and, once trust-by-construction lands, passes through its one projection).

Who may see what:
- ``stake_totals``: public (the studio's "players and total staked" on screen): counts
  and a sum, never an account or a single stake;
- ``seat_stakes``: the table's dealer and staff (the stake on each seat, by bet type;
  no account);
- ``stakes_by_type``, ``large_bets``, ``bank_of``, ``table_results``: the pit supervisor,
  regulator and admin (accounts included: a supervisor sees everything at the table).

A seated Xì Dách bank (bet type ``bank``) is the banker's committed balance, not a
punter's stake: it is counted apart, never in the stakes in play.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from audit.models import AuditEvent
from table_service.models import BetRow, RoundRow
from table_service.rules.game import BetLike  # an open stake (table.state.OpenBet) is one

BANK = "bank"


def _punters(bets: Iterable[BetLike]) -> list[BetLike]:
    return [b for b in bets if b.bet_type != BANK]


def stake_totals(bets: Iterable[BetLike]) -> dict[str, int]:
    """Players, bets and the total staked in the round (public)."""
    punters = _punters(bets)
    return {
        "players": len({b.account for b in punters}),
        "bets": len(punters),
        "staked": sum(int(b.stake) for b in punters),
    }


def stakes_by_type(bets: Iterable[BetLike]) -> dict[str, int]:
    """The stakes in play by bet type (a split or double counted with its bet's type)."""
    out: dict[str, int] = {}
    for b in _punters(bets):
        out[b.bet_type] = out.get(b.bet_type, 0) + int(b.stake)
    return dict(sorted(out.items()))


def seat_stakes(bets: Iterable[BetLike]) -> list[dict[str, Any]]:
    """Each seat's stakes by bet type and in total (for the dealer: no account)."""
    seats: dict[int, dict[str, int]] = {}
    for b in _punters(bets):
        if b.seat is None:
            continue
        kinds = seats.setdefault(int(b.seat), {})
        kinds[b.bet_type] = kinds.get(b.bet_type, 0) + int(b.stake)
    return [
        {"seat": seat, "stakes": dict(sorted(kinds.items())), "total": sum(kinds.values())}
        for seat, kinds in sorted(seats.items())
    ]


def large_bets(bets: Iterable[BetLike], above: int) -> list[dict[str, Any]]:
    """Open stakes above ``above``, largest first (for the pit supervisor)."""
    found = [b for b in _punters(bets) if int(b.stake) > above]
    found.sort(key=lambda b: (-int(b.stake), b.bet_id))
    return [
        {
            "bet_id": b.bet_id,
            "account": b.account,
            "seat": b.seat,
            "type": b.bet_type,
            "stake": int(b.stake),
        }
        for b in found
    ]


def bank_of(bets: Iterable[BetLike]) -> dict[str, Any] | None:
    """A seated Xì Dách bank this round: who holds it, at which seat, its balance."""
    for b in bets:
        if b.bet_type == BANK:
            return {"account": b.account, "seat": b.seat, "balance": int(b.stake)}
    return None


def first_seq_since(session: Session, since: datetime) -> int | None:
    """The first event at or after ``since``: the log is in time order, so a binary
    search over the sequence numbers finds it in a few primary-key reads."""
    found_head = session.scalar(select(func.max(AuditEvent.seq)))
    if found_head is None:
        return None
    head = int(found_head)  # sequence numbers run 1..head without a gap
    wanted = since.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S")

    class _Times:
        def __len__(self) -> int:
            return head

        def __getitem__(self, index: int) -> str:
            ts = session.scalar(select(AuditEvent.ts).where(AuditEvent.seq == index + 1))
            return str(ts or "")[:19]

    found = bisect.bisect_left(_Times(), wanted)
    return None if found >= head else found + 1


def day_start(now: datetime | None = None) -> datetime:
    """Midnight UTC of today: the day the supervisor's "today" totals cover."""
    now = now or datetime.now(UTC)
    return now.astimezone(UTC).replace(hour=0, minute=0, second=0, microsecond=0)


def table_results(
    session: Session, table_id: str, shoe_no: int | None, since_seq: int | None
) -> dict[str, Any]:
    """The table's result for the house on settled bets: this shoe's and since
    ``since_seq`` (today's). A seated bank's line counts too, so on a player-banked table
    the house's result is its commission."""

    def result(*where: Any) -> dict[str, int]:
        row = session.execute(
            select(
                func.count(BetRow.bet_id),
                func.coalesce(func.sum(BetRow.stake), 0),
                func.coalesce(func.sum(BetRow.returned), 0),
            ).where(BetRow.table_id == table_id, BetRow.status == "settled", *where)
        ).one()
        bets, staked, returned = (int(v or 0) for v in row)
        return {"bets": bets, "staked": staked, "returned": returned, "house": staked - returned}

    shoe = None
    if shoe_no is not None:
        rounds = select(RoundRow.round_id).where(
            RoundRow.table_id == table_id, RoundRow.shoe_no == shoe_no
        )
        shoe = result(BetRow.round_id.in_(rounds))
    empty = {"bets": 0, "staked": 0, "returned": 0, "house": 0}
    day = empty if since_seq is None else result(BetRow.closed_seq >= since_seq)
    return {"shoe": shoe, "day": day}
