"""Who reads, for the projection (:func:`table_service.table.view.view`): the viewer of an
authenticated principal, with an operator's ownership lookups (memoised: an account's owner
never changes, nor who plays a hand once it is dealt). Every route that returns table,
round, bet, account or incident data builds its answer with ``view(…, viewer_for(…))``.
"""

from __future__ import annotations

from collections.abc import Callable

from fastapi import Request

from table_service.api.auth import get_runtime
from table_service.principals import Identity
from table_service.runtime import Runtime
from table_service.table.audience import Audience
from table_service.table.recall import round_hands
from table_service.table.view import Viewer, viewer_of
from table_service.table.wallet import owns

HANDS_KEPT = 64  # rounds whose hands a stream keeps (one indexed read per round)


def ownership(runtime: Runtime, actor: str) -> Callable[[str], bool]:
    """Which accounts belong to ``actor`` (memoised: an account's owner never changes).

    Called on the replay pool for replays; live events of accounts not seen before are
    looked up too, which is one indexed primary-key read per new account.
    """
    known: dict[str, bool] = {}

    def owned(account: str) -> bool:
        if account not in known:
            known[account] = owns(runtime, account, actor)
        return known[account]

    return owned


def holding(
    runtime: Runtime, owned: Callable[[str], bool]
) -> Callable[[str | None, int | None], bool]:
    """Whether an operator's account plays a hand of a round (seat; None: the seated
    bank), for its stream's face-down cards: read from the round's bets in the log once
    per round once its betting is closed (before a card is dealt; an answer asked while
    betting is open, for an incident, is read again next time), the last few rounds kept."""
    known: dict[str, dict[int | None, str]] = {}

    def holds(round_id: str | None, seat: int | None) -> bool:
        if round_id is None:
            return False
        hands = known.get(round_id)
        if hands is None:
            with runtime.reads() as session:
                hands, final = round_hands(session, round_id)
            if final:
                if len(known) >= HANDS_KEPT:
                    known.pop(next(iter(known)))
                known[round_id] = hands
        account = hands.get(seat)
        return account is not None and owned(account)

    return holds


def anyone(_account: str) -> bool:
    """Any account playing the hand: for a dealer, whether a seated player banks."""
    return True


def viewer_for(request: Request, who: Identity) -> Viewer:
    """The viewer of ``who``: an operator with its accounts and hands (memoised lookups)."""
    if who.operator_id is None:
        viewer = viewer_of(who)
        if viewer.role is Audience.DEALER:  # whether a seated player banks a round
            return Viewer(Audience.DEALER, holds=holding(get_runtime(request), anyone))
        return viewer
    runtime = get_runtime(request)
    owned = ownership(runtime, who.operator_id)
    return viewer_of(who, owned, holding(runtime, owned))
