"""The betting window: opened (a seated bank's room first), bets taken within the table's
limits and the game's rules, closed by the dealer, the clock or every seated player."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any

from audit.chain import utc_timestamp
from table_service.rules.game import (
    Bet,
    BetLike,
    BettingContext,
    RulesRefusal,
)
from table_service.table import commands as c
from table_service.table import events as ev
from table_service.table.config import StakeLimits
from table_service.table.decide.cards import deal
from table_service.table.decide.decision import (
    Decision,
    config_of,
    next_position,
)
from table_service.table.decide.settlement import (
    progress,
)
from table_service.table.errors import (
    BettingClosed,
    NoShoe,
    RoomClosed,
    ShoeFinished,
    ShoeNotReady,
    TablePaused,
    WrongPhase,
)
from table_service.table.state import TableState, game_of


def open_betting(d: Decision, cmd: c.OpenBetting, now: datetime, actor: str) -> None:
    config = config_of(d.state)
    shoe = d.state.shoe
    if shoe is None:
        raise NoShoe("insert and burn a shoe before opening betting")
    if not shoe.ready:
        raise ShoeNotReady("the burn procedure is not finished", burn_remaining=shoe.burn_remaining)
    if shoe.cut_card_drawn:
        raise ShoeFinished("the cut card was drawn; change the shoe")
    if d.state.paused:
        raise TablePaused("an incident is open; a supervisor must resolve it")
    rnd = d.state.round
    if rnd is not None and rnd.active:
        raise WrongPhase(f"round {rnd.round_id} is still {rnd.phase}")
    if cmd.balances is not None:
        room_opens(d, cmd.balances)
    game = shoe.games + 1
    round_id = f"{d.state.table_id}-s{shoe.shoe_no}-g{game}"
    closes_at = utc_timestamp(now + timedelta(seconds=config.betting_seconds))
    opened = ev.BettingOpened(
        round_id=round_id, game_number=game, closes_at=closes_at, shoe_no=shoe.shoe_no
    )
    d.emit(opened, round_id=round_id)
    d.answer = {"round_id": round_id, "game_number": game, "closes_at": closes_at}


def bank_taker(
    state: TableState, balances: Mapping[str, int]
) -> tuple[int | None, dict[str, Any] | None]:
    """Who may take a seated bank next, or why the room is closed (games without a
    seated bank: nobody in particular, never closed)."""
    game, rules = game_of(state)
    seats = state.seats_for_round()
    return game.bank_taker(
        rules,
        seats,
        state.bank_seat,
        state.bank_from,
        balances,
        joined=state.joined_order(),
        bank_joined=state.bank_joined,
    )


def room_opens(d: Decision, balances: Mapping[str, int]) -> None:
    """A seated bank that passed with nobody to take it keeps the room closed: no round
    opens until a seated player qualifies (seed 001: "if nobody qualifies, the room
    closes"). Refused with the reason while so; reopened, and recorded, once someone does."""
    seat, closed = bank_taker(d.state, balances)
    if closed is not None:
        raise RoomClosed(closed["reason"], needs=closed["needs"], passes_from=closed["passes_from"])
    if d.state.room_closed is not None:
        passes_from = d.state.room_closed.get("passes_from")
        d.emit(ev.RoomReopened(seat=seat, passes_from=passes_from))


def review_room(d: Decision, cmd: c.ReviewRoom, now: datetime, actor: str) -> None:
    """After a round: record the room closed if its bank passes and nobody qualifies."""
    config_of(d.state)
    rnd = d.state.round
    if d.state.room_closed is not None or (rnd is not None and rnd.active):
        return
    _, closed = bank_taker(d.state, cmd.balances)
    if closed is not None:
        room = ev.RoomClosed(
            reason=closed["reason"], needs=closed["needs"], passes_from=closed["passes_from"]
        )
        d.emit(room)


def _bet_refusal(exc: RulesRefusal) -> dict[str, Any]:
    return {"status": "refused", "error": exc.code, "reason": exc.reason}


class Placed(Sequence[Bet]):
    """The round's bets placed before this command, as the game sees them, built only if
    the game looks (blackjack does, per seat; baccarat does not): building them for every
    batch made a round's intake quadratic in its bets. The bets accepted in this command
    are kept as their plain fields until then."""

    def __init__(self, bets: Iterable[Any], added: list[BetLike]) -> None:
        self._source = bets
        self._items: list[Bet] | None = None
        self._added = added  # accepted earlier in this command, appended by the caller
        self._seen = 0  # of them, in _items

    def _all(self) -> list[Bet]:
        if self._items is None:
            self._items = [
                Bet(b.bet_id, b.account, b.bet_type, b.stake, b.seat)
                for b in self._source
                if b.parent is None
            ]
        if self._seen < len(self._added):
            self._items.extend(_bet(b) for b in self._added[self._seen :])
            self._seen = len(self._added)
        return self._items

    def __getitem__(self, index: Any) -> Any:
        return self._all()[index]

    def __len__(self) -> int:
        return len(self._all())

    def __iter__(self) -> Iterator[Bet]:
        return iter(self._all())


def _bet(b: BetLike) -> Bet:
    return Bet(b.bet_id, b.account, b.bet_type, b.stake, b.seat)


def place_bets(d: Decision, cmd: c.PlaceBets, now: datetime, actor: str) -> None:
    config = config_of(d.state)
    rnd = d.state.round
    if rnd is None or rnd.phase != "betting":
        raise BettingClosed("no round is open for betting")
    if utc_timestamp(now) >= rnd.closes_at:
        raise BettingClosed(f"betting for {rnd.round_id} closed at {rnd.closes_at}")
    if d.state.paused:
        raise TablePaused("an incident is open; betting is suspended")
    balances = dict(cmd.balances)
    accepted: list[dict[str, Any]] = []
    answers: list[dict[str, Any]] = []
    game, rules = config.game_impl, config.rules
    taken: list[BetLike] = []  # the requests accepted so far
    placed = Placed(rnd.bets.values(), taken)
    context = BettingContext(
        rnd.game_number,
        dict(d.state.seats_for_round()),
        placed,
        d.state.bank_seat,
        d.state.bank_from,
        dict(cmd.balances),
        d.state.joined_order(),
        d.state.bank_joined,
    )
    # The rules' verdicts: all at once where the game's check of a bet reads no other bet
    # of the request (baccarat), else bet by bet below, each seeing those accepted before.
    verdicts = game.check_bets(rules, cmd.bets, context)
    limits_of: dict[str, StakeLimits] = {}  # per bet type, looked up once a request
    scope = cmd.scope  # the log records the key in the caller's namespace; answers its own
    for n, bet in enumerate(cmd.bets):
        if verdicts is not None:
            refusal = verdicts[n]
        else:
            refusal = None
            try:
                game.check_bet(rules, _bet(bet), context)
            except RulesRefusal as exc:  # the game's typed refusal; anything else is a defect
                refusal = exc
        if refusal is not None:
            answers.append({"key": bet.key, **_bet_refusal(refusal)})
            continue
        limits = limits_of.get(bet.bet_type)
        if limits is None:
            limits = limits_of[bet.bet_type] = config.limits_for(bet.bet_type)
        if not limits.min_stake <= bet.stake <= limits.max_stake:
            answers.append(
                {
                    "key": bet.key,
                    "status": "refused",
                    "error": "outside_limits",
                    "reason": f"stake {bet.stake} outside the table limits "
                    f"{limits.min_stake}..{limits.max_stake} for {bet.bet_type}",
                }
            )
            continue
        balance = balances.get(bet.account, 0)
        if balance < bet.stake:
            answers.append(
                {
                    "key": bet.key,
                    "status": "refused",
                    "error": "insufficient_funds",
                    "reason": f"account {bet.account} balance {balance} < stake {bet.stake}",
                }
            )
            continue
        balances[bet.account] = balance - bet.stake
        item: dict[str, Any] = {
            "bet_id": bet.bet_id,
            "key": scope + bet.key,
            "account": bet.account,
            "type": bet.bet_type,
            "stake": bet.stake,
        }
        if bet.seat is not None:
            item["seat"] = bet.seat
        accepted.append(item)
        taken.append(bet)
        answers.append({"key": bet.key, "status": "placed", "bet_id": bet.bet_id})
    d.emit_chunks(ev.BetsPlaced(round_id=rnd.round_id, bets=accepted), rnd.round_id)
    d.answer = {"round_id": rnd.round_id, "results": answers}
    # Xì Dách room: betting closes once every seated player has bet
    if accepted and game.betting_complete(rules, context.seats, placed):
        answer = d.answer
        close_betting(d, c.CloseBetting("every seated player has bet"), now, actor)
        d.answer = {**answer, "betting_closed": True}


def close_betting(d: Decision, cmd: c.CloseBetting, now: datetime, actor: str) -> None:
    config_of(d.state)
    rnd = d.state.round
    if rnd is None or rnd.phase != "betting":
        raise WrongPhase("no round is open for betting")
    d.emit(ev.BettingClosed(round_id=rnd.round_id, reason=cmd.reason), round_id=rnd.round_id)
    for card in d.state.carried:
        deal(d, card, source="carried", reader_seq=None)
    progress(d)
    d.answer = {"round_id": rnd.round_id, "next_position": next_position(d.state)}
