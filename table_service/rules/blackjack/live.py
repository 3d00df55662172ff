"""Live blackjack behind the :class:`~table_service.rules.game.LiveGame` interface.

An adapter over the round state machine (``round_state``), its settlement and the
settle command's request format (``settle_request``): no rule is restated here. What
it adds is the table's vocabulary: actors (``seat:N`` for a seated player,
``behind:<bet id>`` for a bet-behind player answering a follow offer), positions
(``S3H1`` = seat 3 hand 1, ``DEALER``), clocks, and an id for every stake the round adds
(a split, a double, insurance, an accepted follow offer) so each is its own ledger line.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from types import MappingProxyType
from typing import Any, Literal, cast

from table_service.rules.blackjack.config import BlackjackRules, rules_from_mapping
from table_service.rules.blackjack.errors import (
    BlackjackError,
    FollowOfferError,
    IllegalDecision,
    NotYourTurn,
    RoundInputError,
    UnexpectedCard,
)
from table_service.rules.blackjack.round_state import (
    Answer,
    BehindBet,
    Deal,
    DealerTarget,
    Decision,
    FollowAnswer,
    Phase,
    RoundState,
    SeatBet,
    SideBet,
    apply,
    legal_actions,
    new_round,
    next_card_target,
)
from table_service.rules.blackjack.round_state import Move as BjMove
from table_service.rules.blackjack.settle_request import handle, play_round
from table_service.rules.blackjack.settlement import (
    dealer_facts,
    hand_facts,
    hand_outcomes,
    placed_stakes,
    settle,
)
from table_service.rules.cards import Card
from table_service.rules.game import (
    Audience,
    Bet,
    BettingContext,
    Complete,
    GameBase,
    IncidentKind,
    Input,
    Line,
    Move,
    Next,
    RoundSetup,
    RulesRefusal,
    Settlement,
    Spot,
    Stake,
    Turn,
)

BET_TYPES = ("main", "pair", "behind")
PLAYER_MOVES = tuple(m.value for m in BjMove if m is not BjMove.NO_DECISION)
FOLLOW_ANSWERS = (Answer.ACCEPT.value, Answer.DECLINE.value)

_CODES: tuple[tuple[type[BlackjackError], str], ...] = (
    (UnexpectedCard, "card_not_owed"),
    (NotYourTurn, "not_your_turn"),
    (FollowOfferError, "no_follow_offer"),
    (IllegalDecision, "illegal_decision"),
    (RoundInputError, "bad_settle_input"),
)


def _seat(bet: Bet) -> int:
    """A blackjack bet's seat: check_bet took none without a seat 1..N (a type-level cast)."""
    return cast(int, bet.seat)


def _refusal(exc: BlackjackError) -> RulesRefusal:
    code = next((c for kind, c in _CODES if isinstance(exc, kind)), "rules_refusal")
    return RulesRefusal(str(exc), code=code)


def stake_id(bet_id: str, part: str, hand: int | None) -> str:
    """The ledger id of one stake: the bet's own id for its first stake, a suffix for the
    stakes the round adds (``~split``, ``~double1``, ``~insurance``)."""
    if part in ("original", "pair"):
        return bet_id
    if part == "double":
        return f"{bet_id}~double{hand}"
    return f"{bet_id}~{part}"


CONFIRMED = (
    "the table pauses; the supervisor confirms it and the round is void: every stake "
    "(main, pair, insurance, double, split, behind) refunded once, the shoe re-shuffled "
    "(a new shoe)"
)
"""Seed 000 "Xử lý sự cố": a system or human error pauses the round, the whole shoe is
re-shuffled, the round cancelled and every stake refunded. Nothing is re-arranged: a
card in the wrong place has been seen where it should not have been."""


def _error(kind: str, what: str) -> IncidentKind:
    return IncidentKind(
        kind, True, f"seed 000 system or human error ({what}): {CONFIRMED}", VOID_ON_CONFIRM
    )


VOID_ON_CONFIRM = frozenset({"void_on_confirm"})

INCIDENTS: Mapping[str, IncidentKind] = MappingProxyType(
    {
        k.kind: k
        for k in (
            _error("misdeal", "a misdeal: cards dealt out of the dealing order"),
            _error("wrong_position", "a card dealt to the wrong position"),
            _error("cards_exposed", "a card exposed that cannot be put right"),
            _error("system_error", "the studio's systems failed during the round"),
            _error("other", "another human error that changes a hand"),
            # raised by the table itself: a card no position is owed (never re-assigned)
            _error("card_not_owed", "a card came out that no position is owed"),
        )
    }
)


@dataclass(frozen=True, slots=True)
class BlackjackRound:
    """The engine's round plus what the table knows of it (None: no seat bet)."""

    rules: BlackjackRules
    engine: RoundState | None
    cards: tuple[Card, ...] = ()


class BlackjackGame(GameBase):
    """Live blackjack, seed 000 (rules/blackjack.md)."""

    name = "blackjack"
    stray_card: Literal["carry", "incident"] = "incident"
    on_restart: Literal["resume", "void"] = "void"
    incidents = INCIDENTS
    shoe_burn = False

    # -- the table ---------------------------------------------------------------------------
    def load_rules(self, settings: Mapping[str, Any]) -> BlackjackRules:
        if settings.get("paytable_toml"):
            raise RulesRefusal(
                "blackjack takes its terms from game_rules, not a paytable", code="bad_rules"
            )
        data = dict(settings.get("game_rules") or {})
        if "decks" in data and data["decks"] != settings.get("decks", data["decks"]):
            raise RulesRefusal("give the decks once, as the table's decks", code="bad_rules")
        data["decks"] = settings.get("decks", 8)
        try:
            return rules_from_mapping(data)
        except BlackjackError as exc:
            raise RulesRefusal(str(exc), code="bad_rules") from exc

    def bet_types(self, rules: BlackjackRules) -> tuple[str, ...]:
        return BET_TYPES

    def seats(self, rules: BlackjackRules) -> int:
        return rules.seats

    def check_bet(self, rules: BlackjackRules, bet: Bet, context: BettingContext) -> None:
        if bet.bet_type not in BET_TYPES:
            raise RulesRefusal(
                f"unknown bet type {bet.bet_type!r}; blackjack takes {', '.join(BET_TYPES)} "
                "(insurance is taken at the offer, as a decision)",
                code="unknown_bet_type",
            )
        if isinstance(bet.stake, bool) or not isinstance(bet.stake, int):
            raise RulesRefusal(f"stake must be an integer, got {bet.stake!r}", code="invalid_stake")
        if bet.stake <= 0:
            raise RulesRefusal(
                f"stake must be positive, got {bet.stake}", code="non_positive_stake"
            )
        seat = bet.seat
        if seat is None or isinstance(seat, bool) or not 1 <= seat <= rules.seats:
            raise RulesRefusal(f"a blackjack bet names a seat 1..{rules.seats}", code="bad_seat")
        player = context.seats.get(seat)
        if player is None:
            raise RulesRefusal(f"seat {seat} is free: nobody plays it", code="seat_free")
        on_seat = [b for b in context.placed if b.seat == seat]
        has_main = any(b.bet_type == "main" for b in on_seat)
        if bet.bet_type == "main":
            if bet.account != player:
                raise RulesRefusal(f"seat {seat} is taken by another player", code="not_your_seat")
            if has_main:
                raise RulesRefusal(f"seat {seat} has its main bet already", code="main_bet_placed")
            return
        if not has_main:
            raise RulesRefusal(
                f"seat {seat} has no confirmed main bet yet: main bet first", code="main_bet_first"
            )
        if bet.bet_type == "behind":
            if bet.account == player:
                raise RulesRefusal("a player may not bet behind their own seat", code="own_seat")
            seated = [n for n, account in context.seats.items() if account == bet.account]
            if seated:
                raise RulesRefusal(
                    f"a player seated at seat {seated[0]} may not bet behind another seat "
                    "(seed 000: bet behind is for players who are not seated)",
                    code="seated_player",
                )
            if any(b.bet_type == "behind" and b.account == bet.account for b in on_seat):
                raise RulesRefusal(
                    f"one bet behind seat {seat} per player", code="behind_bet_placed"
                )
            return
        # pair: the seated player, or a player betting behind this seat
        behind = any(b.bet_type == "behind" and b.account == bet.account for b in on_seat)
        if bet.account != player and not behind:
            raise RulesRefusal(
                "a pair bet is on your own seat, or on a seat you bet behind",
                code="not_your_seat",
            )
        if any(b.bet_type == "pair" and b.account == bet.account for b in on_seat):
            raise RulesRefusal(f"one pair bet on seat {seat} per player", code="pair_bet_placed")

    def check_seat(self, rules: BlackjackRules, account: str, placed: Sequence[Bet]) -> None:
        """Taking a seat while the round in play holds ``placed``: refused to a player with
        a bet behind in it (a seated player may not bet behind; the seat is free to take
        once the round is over). **Decision** (rules/blackjack.md, "Betting")."""
        behind = [b for b in placed if b.bet_type == "behind" and b.account == account]
        if behind:
            raise RulesRefusal(
                f"{account} bets behind seat {behind[0].seat} in this round: a seated player "
                "may not bet behind, so the seat can be taken once the round is over",
                code="behind_bet_open",
                seat=behind[0].seat,
            )

    def burn_count(self, rules: BlackjackRules, first_card: Card) -> int:
        """Seed 000 describes no burn: the first card of a new shoe is dealt."""
        return 0

    # -- the round ---------------------------------------------------------------------------
    def new_round(self, rules: BlackjackRules, setup: RoundSetup) -> BlackjackRound:
        bets = setup.bets
        mains = [SeatBet(_seat(b), b.bet_id, b.stake) for b in bets if b.bet_type == "main"]
        if not mains:
            return BlackjackRound(rules, None)
        pairs = [SideBet(b.bet_id, _seat(b), b.stake) for b in bets if b.bet_type == "pair"]
        behind = [BehindBet(b.bet_id, _seat(b), b.stake) for b in bets if b.bet_type == "behind"]
        try:
            engine = new_round(rules, mains, pairs, behind)
        except BlackjackError as exc:
            raise _refusal(exc) from exc
        return BlackjackRound(rules, engine)

    def next(self, state: BlackjackRound) -> Next:
        engine = state.engine
        if engine is None or engine.phase is Phase.COMPLETE:
            return Complete()
        target = next_card_target(engine)
        if isinstance(target, DealerTarget):
            return Spot("DEALER")
        if target is not None:
            return Spot(f"S{target.seat}H{target.hand}", target.seat, target.hand)
        rules = state.rules
        if engine.offers:
            offer = engine.offers[0]
            seat = next(b.seat for b in engine.behind if b.id == offer.bet_id)
            return Turn(
                tuple(f"behind:{o.bet_id}" for o in engine.offers),
                float(rules.follow_seconds),
                f"follow:{offer.kind}:S{seat}H{offer.hand + 1}",
            )
        seat_obj = engine.seats[engine.turn]
        # the hand to act; a seat holding blackjack is here for the insurance offer alone
        hand_i = next((i for i, h in enumerate(seat_obj.hands) if not h.complete(rules)), 0)
        hand = seat_obj.hands[hand_i]
        clock = f"seat:{seat_obj.number}:h{hand_i + 1}:c{len(hand.cards)}:i{int(seat_obj.insured)}"
        return Turn((f"seat:{seat_obj.number}",), float(rules.decision_seconds), clock)

    def legal_actions(self, state: BlackjackRound, actor: str) -> tuple[Move, ...]:
        if state.engine is None:
            return ()
        moves: list[Move] = []
        for action in legal_actions(state.engine):
            if isinstance(action, FollowAnswer):
                who = f"behind:{action.bet_id}"
                if who == actor and action.answer.value in FOLLOW_ANSWERS:
                    moves.append(Move(who, action.answer.value))
            elif f"seat:{action.seat}" == actor and action.move is not BjMove.NO_DECISION:
                moves.append(Move(actor, action.move.value, action.hand))
        return tuple(moves)

    def _engine_action(self, state: BlackjackRound, move: Move) -> Decision | FollowAnswer:
        kind, _, who = move.actor.partition(":")
        if kind == "behind" and who:
            if move.action not in {a.value for a in Answer}:
                raise RulesRefusal(
                    f"a bet-behind player answers accept or decline, not {move.action!r}",
                    code="illegal_decision",
                )
            return FollowAnswer(who, Answer(move.action))
        if kind != "seat" or not who.isdigit():
            raise RulesRefusal(f"no blackjack actor {move.actor!r}", code="unknown_actor")
        if move.action not in {m.value for m in BjMove}:
            raise RulesRefusal(f"unknown decision {move.action!r}", code="illegal_decision")
        hand = move.hand
        if hand is None:
            hand = self._current_hand(state, int(who))
        return Decision(int(who), hand, BjMove(move.action))

    @staticmethod
    def _current_hand(state: BlackjackRound, seat: int) -> int:
        engine = state.engine
        if engine is not None and engine.phase is Phase.PLAY and engine.turn < len(engine.seats):
            current = engine.seats[engine.turn]
            if current.number == seat:
                for i, h in enumerate(current.hands):
                    if not h.complete(state.rules):
                        return i + 1
        return 1

    def apply(self, state: BlackjackRound, item: Input) -> BlackjackRound:
        if state.engine is None:
            raise RulesRefusal("no seat plays this round", code="card_not_owed")
        try:
            if isinstance(item, Card):
                return replace(
                    state, engine=apply(state.engine, Deal(item)), cards=(*state.cards, item)
                )
            return replace(state, engine=apply(state.engine, self._engine_action(state, item)))
        except BlackjackError as exc:
            raise _refusal(exc) from exc

    def timeout_action(self, state: BlackjackRound, actor: str) -> Move:
        if actor.startswith("behind:"):
            return Move(actor, Answer.TIMEOUT.value)
        seat = int(actor.partition(":")[2])
        return Move(actor, BjMove.NO_DECISION.value, self._current_hand(state, seat))

    def placed_stakes(self, state: BlackjackRound) -> tuple[Stake, ...]:
        if state.engine is None:
            return ()
        return tuple(
            Stake(
                stake_id(s.bet_id, s.part, s.hand),
                s.bet_id,
                s.type,
                s.part,
                s.stake,
                s.seat,
                s.hand,
            )
            for s in placed_stakes(state.engine)
        )

    def _outcome(self, engine: RoundState) -> dict[str, Any]:
        total = engine.dealer_total
        return {
            "dealer": {
                "cards": [c.code for c in engine.dealer],
                "total": total.points,
                "blackjack": engine.dealer_blackjack,
                "bust": total.bust,
            },
            "seats": [
                {
                    "seat": s.number,
                    "insured": s.insured,
                    "hands": [
                        {
                            "hand": i + 1,
                            "cards": [c.code for c in h.cards],
                            "total": h.total.points,
                            "blackjack": h.blackjack,
                            "bust": h.total.bust,
                            "doubled": h.doubled,
                            "surrendered": h.surrendered,
                            "auto": h.auto,
                        }
                        for i, h in enumerate(s.hands)
                    ],
                }
                for s in engine.seats
            ],
        }

    def settle(self, state: BlackjackRound) -> Settlement:
        if state.engine is None:
            return Settlement((), {"dealer": None, "seats": []})
        try:
            settlement = settle(state.engine)
        except BlackjackError as exc:
            raise _refusal(exc) from exc
        return Settlement(
            tuple(
                Line(
                    stake_id(b.bet_id, b.part, b.hand),
                    b.bet_id,
                    b.type,
                    b.part,
                    b.stake,
                    b.result.value,
                    b.returned,
                    b.reason,
                    b.seat,
                    b.hand,
                )
                for b in settlement.bets
            ),
            self._outcome(state.engine),
            settlement.removed_seats,
        )

    def view(self, state: BlackjackRound, audience: Audience) -> dict[str, Any]:
        engine = state.engine
        if engine is None:
            return {"game": self.name, "dealer": {"cards": []}, "seats": []}
        view: dict[str, Any] = {"game": self.name, **self._outcome(engine)}
        view["phase"] = engine.phase.value
        if engine.phase is Phase.COMPLETE:
            # each hand's fate against the dealer, by the settlement table (public once
            # the round is complete: the studio's result banner shows it per seat)
            dealer = dealer_facts(engine)
            for seat, shown in zip(engine.seats, view["seats"], strict=True):
                for i, (hand, out) in enumerate(zip(seat.hands, shown["hands"], strict=True)):
                    first = hand_outcomes(hand_facts(hand, i), dealer, engine.rules)[0]
                    out["result"] = first.result.value
                    out["reason"] = first.reason
        if audience == "dealer":
            view["follow_offers"] = [
                {"actor": f"behind:{o.bet_id}", "kind": o.kind, "hand": o.hand + 1}
                for o in engine.offers
            ]
            view["next"] = self.next(state).to_json()
        return view

    # -- recall ------------------------------------------------------------------------------
    def settle_input(
        self, state: BlackjackRound, setup: RoundSetup, moves: Sequence[Move]
    ) -> dict[str, Any]:
        seats: dict[int, list[dict[str, Any]]] = {}
        for bet in setup.bets:
            seats.setdefault(bet.seat or 0, []).append(
                {"id": bet.bet_id, "type": bet.bet_type, "stake": bet.stake}
            )
        if state.engine is not None:
            for seat in state.engine.seats:
                if seat.insured:
                    seats[seat.number].append(
                        {
                            "id": stake_id(seat.bet_id, "insurance", None),
                            "type": "insurance",
                            "stake": seat.insurance_stake,
                        }
                    )
        decisions: list[dict[str, Any]] = []
        for move in moves:
            kind, _, who = move.actor.partition(":")
            if kind == "behind":
                decisions.append({"behind": who, "action": move.action})
            else:
                decisions.append({"seat": int(who), "hand": move.hand or 1, "action": move.action})
        return {
            "round": setup.round_id,
            "seats": [{"seat": n, "bets": bets} for n, bets in sorted(seats.items())],
            "cards": [c.code for c in state.cards],
            "decisions": decisions,
        }

    def recompute(self, rules: BlackjackRules, settle_input: Mapping[str, Any]) -> Settlement:
        if settle_input.get("seats") == [] and not settle_input.get("cards"):
            return Settlement((), {"dealer": None, "seats": []})  # no seat bet this round
        try:
            answer = handle(dict(settle_input), rules)
            engine, _, _ = play_round(dict(settle_input), rules)
        except RulesRefusal as exc:  # a rules, card or input refusal of this request
            raise RulesRefusal(exc.reason, code="bad_settle_input") from exc
        lines = []
        for b in answer["bets"]:
            bet_id = b["id"]
            sid = bet_id if b["type"] == "insurance" else stake_id(bet_id, b["part"], b["hand"])
            lines.append(
                Line(
                    sid,
                    bet_id,
                    b["type"],
                    b["part"],
                    b["stake"],
                    b["result"],
                    b["returned"],
                    b["reason"],
                    b["seat"],
                    b["hand"],
                )
            )
        removed = tuple(s["seat"] for s in answer["seats"] if s["removed"])
        return Settlement(tuple(lines), self._outcome(engine), removed)


GAME = BlackjackGame()
