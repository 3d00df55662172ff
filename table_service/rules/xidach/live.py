"""Live Xì Dách behind the :class:`~table_service.rules.game.LiveGame` interface.

An adapter over the round engine (``engine``), its settlement, the timers, the views
and the settle command's request format (``replay``): no rule is restated here. What
it adds is the table's vocabulary:

- actors: ``seat:N`` for a punter, ``banker`` for the banker (the dealer confirming the
  house's published move, or the operator for a seated banker in ``room``);
- positions: ``S3H1`` (seat 3, hand 1; hand 2 after a split) and ``BANKER``; a card is
  dealt face down when spectators may not see it yet (the banker's first card, a hidden
  seat's cards);
- bets: ``main``; ``hidden`` (a main bet with the privacy flag, ``forced-draw``); ``bank``
  (a seated banker commits their bank for the round: its stake is debited when betting
  closes and its line returns the bank's balance after the round, so the banker's
  account moves in the same transaction as every punter's);
- stakes the round adds (a double, a split) get their own ids, so each is its own
  ledger line, as in blackjack.
"""

from __future__ import annotations

import tomllib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from types import MappingProxyType
from typing import Any, Literal

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
from table_service.rules.xidach import errors as e
from table_service.rules.xidach.actions import (
    BANKER,
    Action,
    Actor,
    Check,
    Deal,
    Double,
    HandRef,
    Hide,
    Hit,
    Leave,
    NoDecision,
    Split,
    Stand,
    Surrender,
)
from table_service.rules.xidach.bank import (
    bank_requirement,
    next_banker,
    unseated_for_not_betting,
)
from table_service.rules.xidach.engine import (
    apply,
    awaiting,
    legal_actions,
    new_round,
    next_card_target,
)
from table_service.rules.xidach.exact import ExactEdge, exact_edge
from table_service.rules.xidach.profile import (
    PROFILE_NAMES,
    Profile,
    load_profile,
    profile_from_dict,
)
from table_service.rules.xidach.replay import final_state, replay, settlement_to_json
from table_service.rules.xidach.settlement import HandSettlement, settled_so_far
from table_service.rules.xidach.settlement import Settlement as RoundSettlement
from table_service.rules.xidach.settlement import settle as settle_round
from table_service.rules.xidach.state import Basis, Phase, RoundState, SeatBet, TableLimits
from table_service.rules.xidach.timers import clock
from table_service.rules.xidach.view import view as round_view

BET_TYPES = ("main", "hidden", "bank")
PUNTER_WORDS: Mapping[str, Callable[[HandRef], Action]] = MappingProxyType(
    {
        "hit": Hit,
        "stand": Stand,
        "double": Double,
        "split": Split,
        "surrender": Surrender,
        "no_decision": NoDecision,
    }
)

_CODES: tuple[tuple[type[e.XiDachError], str], ...] = (
    (e.HousePolicyError, "house_policy"),
    (e.HitOn21Error, "hit_on_21"),
    (e.ForcedDrawError, "must_draw"),
    (e.ForcedStandError, "must_stand"),
    (e.MaxCardsError, "max_cards"),
    (e.CheckNotAllowedError, "check_not_allowed"),
    (e.NotYourTurnError, "not_your_turn"),
    (e.NoCardAwaitedError, "card_not_owed"),
    (e.CardAwaitedError, "card_awaited"),
    (e.DuplicateCardError, "duplicate_card"),
    (e.NotACardError, "not_a_card"),
    (e.UnknownSeatError, "unknown_seat"),
    (e.RoundOverError, "round_over"),
    (e.BankrollError, "bankroll"),
    (e.RoundSetupError, "bad_round"),
    (e.ProfileError, "bad_rules"),
    (e.ActionNotAllowedError, "illegal_decision"),
)


def refusal(exc: e.XiDachError) -> RulesRefusal:
    code = next((c for kind, c in _CODES if isinstance(exc, kind)), "rules_refusal")
    return RulesRefusal(exc.reason, code=code)


CONFIRMED = (
    "the table pauses; the supervisor confirms it and the round is void: every stake still "
    "open (main, hidden, double, split, bank) refunded once, a stake a check settled "
    "stands; a fresh deck"
)
"""rules/xidach.md: a misdealt, exposed or unscanned card follows the same supervised
procedure as live blackjack (seed 000's system or human error). Nothing is re-arranged
or re-assigned in shoe order: those are baccarat's procedures, not this game's."""

VOID_ON_CONFIRM = frozenset({"void_on_confirm"})


def _error(kind: str, what: str) -> IncidentKind:
    return IncidentKind(kind, True, f"system or human error ({what}): {CONFIRMED}", VOID_ON_CONFIRM)


INCIDENTS: Mapping[str, IncidentKind] = MappingProxyType(
    {
        k.kind: k
        for k in (
            IncidentKind(
                "misdeal",
                False,
                "system or human error: round cancelled, every stake refunded; "
                "a fresh deck is shuffled",
                frozenset({"void", "end_shoe"}),
            ),
            _error(
                "wrong_position",
                "a card dealt to the wrong hand, or one not scanned so that the cards "
                "after it went to the wrong hands",
            ),
            _error("cards_exposed", "a card exposed outside the deal"),
            _error("system_error", "the studio's systems failed during the round"),
            _error("other", "another human error that changes a hand"),
            # raised by the table itself: a card no position is owed (never re-assigned)
            _error("card_not_owed", "a card came out that no position is owed"),
        )
    }
)


@dataclass(frozen=True, slots=True)
class XiDachRules:
    """A table's Xì Dách terms: the profile, the limits a seated bank is measured by,
    and who banks (``house`` or ``seated``)."""

    profile: Profile
    limits: TableLimits
    banker: Literal["house", "seated"] = "house"

    @property
    def seats(self) -> int:
        """Seats at the table: the punters, and the banker's own seat when seated."""
        return self.profile.max_punters + (1 if self.banker == "seated" else 0)

    @property
    def edge(self) -> ExactEdge:
        """The exact house edge of these terms (one punter against the house)."""
        return exact_edge(self.profile)


@dataclass(frozen=True, slots=True)
class XiDachRound:
    """The engine's round (None: no punter bet) and what the table knows of it."""

    rules: XiDachRules
    engine: RoundState | None
    setup: RoundSetup
    cards: tuple[Card, ...] = ()
    bank_bet: Bet | None = None
    room_closed: bool = False  # a seated-bank table where nobody took the bank
    dealt_to: tuple[tuple[int | None, int, bool], ...] = ()  # per card: seat, hand, face up


def rules_from_settings(settings: Mapping[str, Any]) -> XiDachRules:
    """``game_rules``: ``profile`` (a shipped name) or ``profile_toml`` (a table's own
    profile file), ``banker`` (``house``/``seated``), ``min_bet``/``max_bet`` (the room's
    limits, which a seated bank is measured by; default: the table's stake limits). The
    table's ``decks`` must be the profile's: a Xì Dách profile says how many decks it
    deals from (the table configuration takes them from it when it does not say)."""
    data = dict(settings.get("game_rules") or {})
    unknown = sorted(set(data) - {"profile", "profile_toml", "banker", "min_bet", "max_bet"})
    if unknown:
        raise RulesRefusal(f"unknown xidach game_rules keys {unknown}", code="bad_rules")
    if settings.get("paytable_toml"):
        raise RulesRefusal(
            "xidach takes its terms from its profile, not a paytable", code="bad_rules"
        )
    try:
        if data.get("profile_toml"):
            profile = profile_from_dict(tomllib.loads(str(data["profile_toml"])))
        else:
            profile = load_profile(str(data.get("profile", "room")))
    except tomllib.TOMLDecodeError as exc:
        raise RulesRefusal(f"profile_toml: not valid TOML: {exc}", code="bad_rules") from exc
    except e.XiDachError as exc:
        raise refusal(exc) from exc
    decks = settings.get("decks", profile.decks)
    if decks != profile.decks:
        raise RulesRefusal(
            f"profile {profile.name} deals from {profile.decks} deck(s); the table says {decks}",
            code="bad_rules",
        )
    banker = data.get("banker", "house")
    if banker not in ("house", "seated") or banker not in profile.banker_modes:
        modes = ", ".join(sorted(profile.banker_modes))
        raise RulesRefusal(
            f"profile {profile.name}: the banker is {modes}, not {banker!r}", code="bad_rules"
        )
    table_min, table_max = settings.get("limits", (100, 5_000_000))
    min_bet, max_bet = data.get("min_bet", table_min), data.get("max_bet", table_max)
    if not all(isinstance(v, int) and not isinstance(v, bool) for v in (min_bet, max_bet)) or not (
        0 < min_bet <= max_bet
    ):
        raise RulesRefusal(
            f"min_bet/max_bet: 0 < min <= max, got {min_bet}/{max_bet}", code="bad_rules"
        )
    return XiDachRules(profile, TableLimits(min_bet, max_bet), banker)


def actor_name(actor: Actor) -> str:
    return f"seat:{actor.seat}" if isinstance(actor, HandRef) else BANKER


def spot_code(seat: int | None, hand: int) -> str:
    return "BANKER" if seat is None else f"S{seat}H{hand}"


def stake_id(bet_id: str, part: str, hand: int) -> str:
    """The ledger id of a stake: the bet's id for its first stake, a suffix for the
    stakes the round adds (``~split``, ``~double1``, ``~double2``)."""
    if part == "original":
        return bet_id
    if part == "split":
        return f"{bet_id}~split"
    return f"{bet_id}~double{hand}"


def _hand_stakes(bet: Bet, hand: int, base: int, stake: int, from_split: bool) -> list[Stake]:
    """A hand's stakes: its first (the bet's, or the split's) and a double's extra."""
    first_part = "split" if from_split and hand == 2 else "original"
    out = [
        Stake(
            stake_id(bet.bet_id, first_part, hand),
            bet.bet_id,
            bet.bet_type,
            first_part,
            base,
            bet.seat,
            hand,
        )
    ]
    if stake > base:
        out.append(
            Stake(
                stake_id(bet.bet_id, "double", hand),
                bet.bet_id,
                bet.bet_type,
                "double",
                stake - base,
                bet.seat,
                hand,
            )
        )
    return out


class XiDachGame(GameBase):
    """Live Xì Dách in the three house-rule profiles (rules/xidach.md)."""

    name = "xidach"
    stray_card: Literal["carry", "incident"] = "incident"
    on_restart: Literal["resume", "void"] = "void"
    incidents = INCIDENTS
    shoe_burn = False
    profiles = PROFILE_NAMES
    seated_bank = True  # profile room: a seated player may hold the bank

    # -- the table ---------------------------------------------------------------------------
    def load_rules(self, settings: Mapping[str, Any]) -> XiDachRules:
        return rules_from_settings(settings)

    def bet_types(self, rules: XiDachRules) -> tuple[str, ...]:
        return BET_TYPES

    def seats(self, rules: XiDachRules) -> int:
        return rules.seats

    def decks_for(self, game_rules: Mapping[str, Any]) -> int:
        """The decks a table of these rules deals from: its profile's."""
        return rules_from_settings({"game_rules": game_rules}).profile.decks

    def betting_seconds_for(self, game_rules: Mapping[str, Any]) -> float:
        """The betting window: a round starts this long after the previous one (seed 001)."""
        return float(rules_from_settings({"game_rules": game_rules}).profile.round_start_delay_s)

    def betting_complete(
        self, rules: XiDachRules, seats: Mapping[int, str], placed: Sequence[Bet]
    ) -> bool:
        """Betting closes early once every seated player has bet (``room``: "or earlier
        once every punter has bet"), the seated banker's bank included."""
        if not rules.profile.betting_closes_when_all_bet or not seats:
            return False
        return set(seats) <= {b.seat for b in placed}

    def fresh_deck_each_round(self, rules: XiDachRules) -> bool:
        """A one-deck profile shuffles a fresh deck for every round (seeds 002, 003)."""
        return rules.profile.decks == 1

    def house_banker(self, rules: XiDachRules) -> bool:
        """The house banks: the dealer makes its published moves (rules/xidach.md)."""
        return rules.banker == "house"

    def opening_terms(self, rules: XiDachRules) -> dict[str, Any]:
        """What a table records and logs when it opens: the edge of the terms it runs."""
        edge = rules.edge
        return {
            "profile": rules.profile.name,
            "banker": rules.banker,
            "decks": rules.profile.decks,
            "commission": str(rules.profile.payouts.commission),
            # parts per million, integers (the log takes no floats): -23416 = -2.3416 %
            "house_edge_ppm": round(edge.house_edge * 1_000_000),
            "house_edge_before_commission_ppm": round(edge.house_edge_before_commission * 1e6),
            "house_edge": f"{edge.house_edge:+.4%}",
            "house_edge_method": "exact: one punter against the house, automatic play",
        }

    def bank_taker(
        self,
        rules: XiDachRules,
        seats: Mapping[int, str],
        bank_seat: int | None,
        bank_from: int | None,
        balances: Mapping[str, int],
        *,
        joined: Mapping[int, int] | None = None,
        bank_joined: int | None = None,
    ) -> tuple[int | None, dict[str, Any] | None]:
        """Who may bank the next round of a seated-bank table: ``(seat, None)``, the
        keeper or the first qualifying player after a lost or left bank, by the order
        players came to the table after the banker (``joined``: seat → order; clockwise
        breaks a tie, see :func:`~table_service.rules.xidach.bank.succession`);
        ``(None, None)`` when no bank is passing (any qualifying player may bid); or
        ``(None, closure)`` when the bank passes and nobody qualifies: the room closes
        (``closure``: reason, needs, passes_from)."""
        if rules.banker != "seated":
            return None, None
        passes_from = bank_from
        if bank_seat is not None:
            if bank_seat in seats:
                return bank_seat, None
            passes_from = bank_seat  # the banker left between rounds
        if passes_from is None:
            return None, None
        players = [(seat, balances.get(account, 0)) for seat, account in seats.items()]
        players = [p for p in players if p[0] != passes_from]
        successor = next_banker(
            rules.profile, rules.limits, players, passes_from, joined, bank_joined
        )
        if successor is not None:
            return successor, None
        need = bank_requirement(rules.profile, rules.limits)
        reason = (
            f"the bank of seat {passes_from} passes on and nobody seated holds {need} "
            f"({rules.profile.seated_banker.bankroll_multiple_of_max_bet}x the maximum bet): "
            "the room is closed until a player who does takes the bank"
        )
        return None, {"reason": reason, "needs": need, "passes_from": passes_from}

    def check_bet(self, rules: XiDachRules, bet: Bet, context: BettingContext) -> None:
        if bet.bet_type not in BET_TYPES:
            raise RulesRefusal(
                f"unknown bet type {bet.bet_type!r}; xidach takes {', '.join(BET_TYPES)}",
                code="unknown_bet_type",
            )
        if isinstance(bet.stake, bool) or not isinstance(bet.stake, int) or bet.stake <= 0:
            raise RulesRefusal(
                f"stake must be a positive integer, got {bet.stake!r}", code="invalid_stake"
            )
        seat = bet.seat
        if seat is None or isinstance(seat, bool) or not 1 <= seat <= rules.seats:
            raise RulesRefusal(f"a xidach bet names a seat 1..{rules.seats}", code="bad_seat")
        player = context.seats.get(seat)
        if player is None:
            raise RulesRefusal(f"seat {seat} is free: nobody plays it", code="seat_free")
        if bet.account != player:
            raise RulesRefusal(f"seat {seat} is taken by another player", code="not_your_seat")
        if any(b.seat == seat for b in context.placed):
            raise RulesRefusal(f"seat {seat} has its bet for this round already", code="bet_placed")
        profile = rules.profile
        if bet.bet_type == "bank":
            if rules.banker != "seated":
                raise RulesRefusal("the house banks at this table", code="house_banks")
            if any(b.bet_type == "bank" for b in context.placed):
                raise RulesRefusal("the bank is taken for this round", code="bank_taken")
            keeper = context.bank_seat
            if keeper is not None and keeper != seat and keeper in context.seats:
                raise RulesRefusal(
                    f"seat {keeper} keeps the bank until its balance falls under the minimum bet",
                    code="bank_kept",
                )
            held = keeper == seat
            passes_from = context.bank_from
            if keeper is not None and keeper not in context.seats:
                passes_from = keeper  # the banker left between rounds
            if passes_from is not None and not held:
                successor = _successor(rules, context, passes_from, seat, bet.stake)
                if successor is None:
                    raise RulesRefusal(
                        f"the bank of seat {passes_from} passes on and nobody holds "
                        f"{bank_requirement(profile, rules.limits)}: the room closes",
                        code="room_closed",
                    )
                if successor != seat:
                    raise RulesRefusal(
                        f"the bank of seat {passes_from} passes to seat {successor}, the next "
                        "player to have come to the table after the banker",
                        code="bank_passes",
                    )
            need = rules.limits.min_bet if held else bank_requirement(profile, rules.limits)
            if bet.stake < need:
                multiple = profile.seated_banker.bankroll_multiple_of_max_bet
                rule = (
                    "a banker keeps the bank while it holds the minimum bet"
                    if held
                    else f"taking the bank needs {multiple}x the maximum bet {rules.limits.max_bet}"
                )
                raise RulesRefusal(f"{rule}: {need} needed, {bet.stake} offered", code="bankroll")
            return
        if bet.bet_type == "hidden" and not profile.punter.privacy:
            raise RulesRefusal(f"profile {profile.name} has no privacy flag", code="no_privacy")
        limits = rules.limits
        if not limits.min_bet <= bet.stake <= limits.max_bet:
            raise RulesRefusal(
                f"stake {bet.stake} outside the room's limits {limits.min_bet}-{limits.max_bet}",
                code="stake_limits",
            )
        punters = sum(1 for b in context.placed if b.bet_type != "bank")
        if punters >= profile.max_punters:
            raise RulesRefusal(
                f"profile {profile.name} takes at most {profile.max_punters} punters",
                code="table_full",
            )

    def burn_count(self, rules: XiDachRules, first_card: Card) -> int:
        """The seeds describe no burn: the first card of a fresh deck is dealt."""
        return 0

    # -- the round ---------------------------------------------------------------------------
    def new_round(self, rules: XiDachRules, setup: RoundSetup) -> XiDachRound:
        bank = next((b for b in setup.bets if b.bet_type == "bank"), None)
        if rules.banker == "seated" and bank is None:
            # nobody holds the bank: the room closes for this round, every stake goes back
            return XiDachRound(rules, None, setup, room_closed=True)
        bets = [
            SeatBet(b.seat or 0, b.stake, b.bet_id, b.bet_type == "hidden")
            for b in setup.bets
            if b.bet_type != "bank"
        ]
        if not bets:
            return XiDachRound(rules, None, setup, bank_bet=bank)
        try:
            engine = new_round(
                rules.profile,
                bets,
                banker_seat=bank.seat if bank else None,
                banker_balance=bank.stake if bank else None,
                limits=rules.limits,
            )
        except e.XiDachError as exc:
            raise refusal(exc) from exc
        return XiDachRound(rules, engine, setup, bank_bet=bank)

    def next(self, state: XiDachRound) -> Next:
        engine = state.engine
        if engine is None or engine.phase is Phase.SETTLED:
            return Complete()
        target = next_card_target(engine)
        if target is not None:
            hidden = target.seat is not None and engine.seat(target.seat).hidden
            return Spot(
                spot_code(target.seat, target.hand),
                target.seat,
                None if target.seat is None else target.hand,
                target.face_up and not hidden,
            )
        running = clock(engine)
        actor = awaiting(engine)
        assert running is not None and actor is not None  # a card or a decision is owed
        return Turn((actor_name(actor),), float(running.seconds), running.key)

    def legal_actions(self, state: XiDachRound, actor: str) -> tuple[Move, ...]:
        engine = state.engine
        if engine is None or engine.phase is Phase.SETTLED:
            return ()
        key = self._engine_actor(actor)
        moves: list[Move] = []
        for action in legal_actions(engine, key):
            move = self._move(action, actor)
            if move is not None:
                moves.append(move)
        return tuple(moves)

    @staticmethod
    def _engine_actor(actor: str) -> int | str:
        if actor == BANKER:
            return BANKER
        kind, _, who = actor.partition(":")
        if kind != "seat" or not who.isdigit():
            raise RulesRefusal(
                f"no xidach actor {actor!r} (seat:N or banker)", code="unknown_actor"
            )
        return int(who)

    @staticmethod
    def _move(action: Action, actor: str) -> Move | None:
        match action:
            case NoDecision():
                return None  # the clock's, not a player's
            case Check(seat):
                return Move(BANKER, "check", target="all" if seat is None else str(seat))
            case Leave():
                return Move(actor, "leave")
            case Hide():
                return Move(actor, "hide")
            case Hit(who) | Stand(who) if who == BANKER:
                return Move(BANKER, type(action).__name__.lower())
            case Hit(who) | Stand(who) | Double(who) | Split(who) | Surrender(who):
                assert isinstance(who, HandRef)  # the banker's hit and stand are the case above
                return Move(actor, type(action).__name__.lower(), who.hand)
        return None

    def _action(self, state: XiDachRound, move: Move) -> Action:
        key = self._engine_actor(move.actor)
        word = move.action
        if key == BANKER:
            if word == "check":
                target = move.target or "all"
                if target != "all" and not target.isdigit():
                    raise RulesRefusal(
                        f"check a seat number or all, not {target!r}", code="illegal_decision"
                    )
                return Check(None if target == "all" else int(target))
            simple: dict[str, Action] = {
                "hit": Hit(BANKER),
                "stand": Stand(BANKER),
                "leave": Leave(BANKER),
                "no_decision": NoDecision(BANKER),
            }
            if word not in simple:
                raise RulesRefusal(f"unknown banker decision {word!r}", code="illegal_decision")
            return simple[word]
        seat = int(key)
        if word == "leave":
            return Leave(seat)
        if word == "hide":
            return Hide(seat)
        kind = PUNTER_WORDS.get(word)
        if kind is None:
            raise RulesRefusal(f"unknown decision {word!r}", code="illegal_decision")
        hand = move.hand if move.hand is not None else self._current_hand(state, seat)
        return kind(HandRef(seat, hand))

    @staticmethod
    def _current_hand(state: XiDachRound, seat: int) -> int:
        engine = state.engine
        actor = awaiting(engine) if engine is not None else None
        if isinstance(actor, HandRef) and actor.seat == seat:
            return actor.hand
        return 1

    def apply(self, state: XiDachRound, item: Input) -> XiDachRound:
        if state.engine is None:
            raise RulesRefusal("no punter plays this round", code="card_not_owed")
        try:
            if isinstance(item, Card):
                target = next_card_target(state.engine)
                spot = self.next(state)
                face_up = isinstance(spot, Spot) and spot.face_up
                where = (target.seat, target.hand, face_up) if target else (None, 0, True)
                return replace(
                    state,
                    engine=apply(state.engine, Deal(item)),
                    cards=(*state.cards, item),
                    dealt_to=(*state.dealt_to, where),
                )
            return replace(state, engine=apply(state.engine, self._action(state, item)))
        except e.XiDachError as exc:
            raise refusal(exc) from exc

    def face_down(self, state: XiDachRound) -> tuple[int, ...]:
        """Indexes (in the round) of the cards dealt face down: the public sees them when
        a ``cards_revealed`` event turns them (see :meth:`revealed`)."""
        return tuple(i for i, (_, _, face_up) in enumerate(state.dealt_to) if not face_up)

    def face_down_hands(self, state: XiDachRound) -> dict[int, int | None]:
        """The seat whose hand each face-down card is in (None: the banker's first card)."""
        return {i: seat for i, (seat, _, face_up) in enumerate(state.dealt_to) if not face_up}

    def revealed(self, state: XiDachRound) -> tuple[tuple[int, str], ...]:
        """Cards dealt face down that the public may see now (index in the round, code):
        the banker's once it reveals, a hidden seat's once that hand is settled."""
        engine = state.engine
        if engine is None:
            return ()
        over = engine.phase is Phase.SETTLED
        shown = []
        for index, ((seat, hand, face_up), card) in enumerate(
            zip(state.dealt_to, state.cards, strict=True)
        ):
            if face_up:
                continue
            if seat is None:
                visible = over or engine.banker.revealed
            else:
                h = next((x for x in engine.hands if x.seat == seat and x.index == hand), None)
                visible = over or (h is not None and h.result is not None)
            if visible:
                shown.append((index, card.code))
        return tuple(shown)

    def timeout_action(self, state: XiDachRound, actor: str) -> Move:
        key = self._engine_actor(actor)
        if key == BANKER:
            return Move(BANKER, "no_decision")
        return Move(actor, "no_decision", self._current_hand(state, int(key)))

    def placed_stakes(self, state: XiDachRound) -> tuple[Stake, ...]:
        stakes: list[Stake] = []
        if state.bank_bet is not None:
            b = state.bank_bet
            stakes.append(Stake(b.bet_id, b.bet_id, "bank", "original", b.stake, b.seat))
        engine = state.engine
        if engine is None:
            if state.room_closed:  # the punters' stakes wait to go back
                stakes += [
                    Stake(b.bet_id, b.bet_id, b.bet_type, "original", b.stake, b.seat)
                    for b in state.setup.bets
                ]
            return tuple(stakes)
        bets = {b.bet_id: b for b in state.setup.bets}
        for seat in engine.seats:
            bet = bets[seat.bet_id or ""]
            for h in engine.hands:
                if h.seat == seat.seat:
                    stakes += _hand_stakes(bet, h.index, seat.stake, h.stake, h.from_split)
        return tuple(stakes)

    # -- settlement --------------------------------------------------------------------------
    def _hand_lines(self, state: XiDachRound, h: HandSettlement) -> list[Line]:
        bet = next(b for b in state.setup.bets if b.bet_id == h.bet_id)
        engine = state.engine
        assert engine is not None  # a settled hand is the engine's: the round has one
        seat = next(s for s in engine.seats if s.seat == h.seat)
        return _split_hand(h, _hand_stakes(bet, h.hand, seat.stake, h.stake, h.hand == 2))

    def settled_early(self, state: XiDachRound) -> tuple[Line, ...]:
        """The lines of hands a check (xét) has settled while the round goes on: the table
        pays them at once. Against a seated bank a checked winner waits for the end of the
        round (a bank that cannot cover pays every winner pro rata)."""
        engine = state.engine
        if engine is None or engine.phase is Phase.SETTLED:
            return ()
        lines: list[Line] = []
        for h in settled_so_far(engine):
            if h.basis is Basis.CHECK:
                lines += self._hand_lines(state, h)
        return tuple(lines)

    def _lines(self, state: XiDachRound, result: RoundSettlement) -> tuple[Line, ...]:
        lines: list[Line] = []
        for h in result.hands:
            lines += self._hand_lines(state, h)
        if state.bank_bet is not None:
            b = state.bank_bet
            after = result.bank.balance_after if result.bank is not None else b.stake
            reason = None
            if result.bank is not None and result.bank.shortfall:
                reason = f"winners paid pro rata; shortfall {result.bank.shortfall}"
            lines.append(
                Line(
                    b.bet_id,
                    b.bet_id,
                    "bank",
                    "original",
                    b.stake,
                    _bank_result(b.stake, after),
                    after,
                    reason,
                    b.seat,
                )
            )
        return tuple(lines)

    def _outcome(self, state: XiDachRound, result: RoundSettlement | None) -> dict[str, Any]:
        if result is None:
            return {"profile": state.rules.profile.name, "banker": None, "hands": []}
        out = settlement_to_json(result, state.setup.round_id, [])
        out.pop("unused_cards", None)
        out.pop("round", None)
        out.pop("bets", None)
        for hand in out["hands"]:
            hand.pop("stake", None)  # money stays in the ledger lines, not the stream
            hand.pop("returned", None)
            hand.pop("commission", None)
            hand.pop("shortfall", None)
        if result.bank is not None:
            out["bank"] = {
                "seat": result.bank.seat,
                "keeps_bank": result.bank.keeps_bank,
                "left": result.bank.left,
            }
        return out

    def settle(self, state: XiDachRound) -> Settlement:
        engine = state.engine
        if engine is None and state.room_closed:
            refunds = tuple(
                Line(
                    b.bet_id,
                    b.bet_id,
                    b.bet_type,
                    "original",
                    b.stake,
                    "push",
                    b.stake,
                    "nobody holds the bank: the room closes",
                    b.seat,
                )
                for b in state.setup.bets
            )
            outcome = {"profile": state.rules.profile.name, "room_closed": True, "hands": []}
            return Settlement(refunds, outcome, self._released(state, None))
        if engine is None:
            lines: tuple[Line, ...] = ()
            if state.bank_bet is not None:
                b = state.bank_bet
                lines = (
                    Line(
                        b.bet_id,
                        b.bet_id,
                        "bank",
                        "original",
                        b.stake,
                        "push",
                        b.stake,
                        "no punter bet",
                        b.seat,
                    ),
                )
            return Settlement(lines, self._outcome(state, None), self._released(state, None))
        try:
            result = settle_round(engine)
        except e.XiDachError as exc:
            raise refusal(exc) from exc
        bank_net = None
        if result.bank is not None:
            bank_net = result.bank.balance_after - result.bank.balance_before
        return Settlement(
            self._lines(state, result),
            self._outcome(state, result),
            self._released(state, engine),
            bank_net,
        )

    def _released(self, state: XiDachRound, engine: RoundState | None) -> tuple[int, ...]:
        """Seats the rules free after the round: a ``room`` punter who did not bet, a
        punter or a seated banker who left mid-round."""
        betting = [b.seat or 0 for b in state.setup.bets]
        released = set(
            unseated_for_not_betting(state.rules.profile, list(state.setup.seats), betting)
        )
        if engine is not None:
            released |= {s.seat for s in engine.seats if s.left}
            if engine.banker.seated and engine.banker.left and engine.banker.seat is not None:
                released.add(engine.banker.seat)  # the bank passes: the banker has left
        return tuple(sorted(released))

    def view(self, state: XiDachRound, audience: Audience) -> dict[str, Any]:
        engine = state.engine
        if engine is None:
            return {
                "game": self.name,
                "profile": state.rules.profile.name,
                "banker": {"cards": []},
                "hands": [],
            }
        out: dict[str, Any] = {
            "game": self.name,
            "profile": state.rules.profile.name,
            **round_view(engine, audience),
        }
        if audience == "dealer":
            out["next"] = self.next(state).to_json()
        return out

    # -- recall ------------------------------------------------------------------------------
    def settle_input(
        self, state: XiDachRound, setup: RoundSetup, moves: Sequence[Move]
    ) -> dict[str, Any]:
        profile = state.rules.profile
        request: dict[str, Any] = {
            "round": setup.round_id,
            "profile": profile.name,
            "cards": [c.code for c in state.cards],
            "seats": [
                {"seat": b.seat, "stake": b.stake, "id": b.bet_id, "hidden": b.bet_type == "hidden"}
                for b in setup.bets
                if b.bet_type != "bank"
            ],
            "decisions": [_decision(m) for m in moves],
            "table": {"min_bet": state.rules.limits.min_bet, "max_bet": state.rules.limits.max_bet},
        }
        if state.room_closed:
            request["room_closed"] = True  # nobody held the bank: every stake went back
        if state.bank_bet is not None:
            request["banker"] = {
                "seat": state.bank_bet.seat,
                "balance": state.bank_bet.stake,
                "id": state.bank_bet.bet_id,
            }
        return request

    def recompute(self, rules: XiDachRules, settle_input: Mapping[str, Any]) -> Settlement:
        request = dict(settle_input)
        if request.get("room_closed"):
            closed_bets = tuple(
                Bet(
                    str(x.get("id")),
                    "",
                    "hidden" if x.get("hidden") else "main",
                    int(x["stake"]),
                    int(x["seat"]),
                )
                for x in request.get("seats", [])
            )
            closed = RoundSetup(str(request.get("round")), 0, closed_bets)
            return self.settle(XiDachRound(rules, None, closed, room_closed=True))
        try:
            result, _ = replay(request, rules.profile)
        except RulesRefusal as exc:  # an engine, card or input refusal of this request
            raise RulesRefusal(exc.reason, code="bad_settle_input") from exc
        bets = [
            Bet(
                str(s.get("id")),
                "",
                "hidden" if s.get("hidden") else "main",
                int(s["stake"]),
                int(s["seat"]),
            )
            for s in request.get("seats", [])
        ]
        bank = None
        banker = request.get("banker")
        if isinstance(banker, dict):
            bank = Bet(
                str(banker.get("id", "bank")),
                "",
                "bank",
                int(banker["balance"]),
                int(banker["seat"]),
            )
            bets.append(bank)
        setup = RoundSetup(str(request.get("round")), 0, tuple(bets))
        engine = _final_engine(request, rules.profile)
        state = XiDachRound(rules, engine, setup, bank_bet=bank)
        released = self._released(state, engine)  # seats left mid-round (seating is not input)
        return Settlement(
            self._lines(state, result), self._outcome(state, result), released, _bank_net(result)
        )


def _successor(
    rules: XiDachRules, context: BettingContext, after: int, bidder: int, offered: int
) -> int | None:
    """The seat the bank passes to: the first qualifying player to have come to the table
    after the banker at ``after`` (clockwise for a tie; seed 001).

    A player's balance is the one the table read for this request; a bidder whose balance
    was not read counts with the stake it offers.
    """
    players = []
    for seat, account in context.seats.items():
        if seat == after:
            continue  # a banker who lost or left the bank cannot take it straight back
        balance = context.balances.get(account)
        if balance is None:
            balance = offered if seat == bidder else 0
        players.append((seat, balance))
    joined = context.joined or None  # a context without the joining order: clockwise
    return next_banker(rules.profile, rules.limits, players, after, joined, context.bank_joined)


def _final_engine(request: Mapping[str, Any], profile: Profile) -> RoundState:
    """The engine state a recorded round ends in (for the stake layout of its hands)."""
    return final_state(dict(request), profile)


def _bank_net(result: RoundSettlement) -> int | None:
    return None if result.bank is None else result.bank.balance_after - result.bank.balance_before


def _bank_result(stake: int, after: int) -> str:
    return "win" if after > stake else "lose" if after < stake else "push"


def _split_hand(h: HandSettlement, parts: list[Stake]) -> list[Line]:
    """A hand's payment over its stakes, in proportion (the last stake takes what a
    rounding leaves); the hand's commission and shortfall are noted on its first."""
    lines = []
    left = h.returned
    for i, part in enumerate(parts):
        share = left if i == len(parts) - 1 else h.returned * part.amount // h.stake
        left -= share
        reason = h.basis.value
        if i == 0 and h.shortfall:
            reason += f"; shortfall {h.shortfall}"
        lines.append(
            Line(
                part.stake_id,
                part.bet_id,
                part.bet_type,
                part.part,
                part.amount,
                h.result.value,
                share,
                reason,
                h.seat,
                h.hand,
                h.commission if i == 0 else 0,
            )
        )
    return lines


def _decision(move: Move) -> dict[str, Any]:
    if move.actor == BANKER:
        out: dict[str, Any] = {"seat": BANKER, "action": move.action}
        if move.action == "check":
            target = move.target or "all"
            out["target"] = target if target == "all" else int(target)
        return out
    seat = int(move.actor.partition(":")[2])
    out = {"seat": seat, "action": move.action}
    if move.hand is not None:
        out["hand"] = move.hand
    return out


GAME = XiDachGame()
