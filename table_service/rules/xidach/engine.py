"""The Xì Dách round engine: ``new_round``, ``apply``, ``legal_actions``, ``next_card_target``.

One engine for the three seeds; every difference is read from the :class:`Profile`.
The engine is pure: no clock, no randomness, no I/O. Timers live in the table service,
which turns a timeout into :class:`NoDecision`; the shoe is outside too, and each card
arrives as :class:`Deal`. After every action the engine runs whatever needs no decision
(naturals shown at once, automatic play, a bust banker's showdown) so the state always
waits either for a card (``next_card_target``) or for a decision (``awaiting``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from table_service.rules.cards import Card
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
from table_service.rules.xidach.errors import (
    ActionNotAllowedError,
    BankrollError,
    CardAwaitedError,
    CheckNotAllowedError,
    DuplicateCardError,
    ForcedDrawError,
    HousePolicyError,
    NoCardAwaitedError,
    NotACardError,
    NotYourTurnError,
    RoundOverError,
    RoundSetupError,
    UnknownSeatError,
    XiDachError,
)
from table_service.rules.xidach.hands import (
    NATURALS,
    HandValue,
    Kind,
    compare,
    is_pair_natural,
    win_rate,
)
from table_service.rules.xidach.policy import (
    hit_refusal,
    house_step,
    punter_auto_draws,
)
from table_service.rules.xidach.profile import Profile
from table_service.rules.xidach.state import (
    BankerHand,
    Basis,
    Hand,
    HandResult,
    Phase,
    Result,
    RoundState,
    Seat,
    SeatBet,
    TableLimits,
    Target,
    evolve,
)

# ---------------------------------------------------------------------------- setup


def play_order(
    seats: Sequence[int],
    profile: Profile,
    banker_seat: int | None,
    direction: str | None = None,
) -> list[int]:
    """Seats in the order they act (``direction`` defaults to the profile's turns).

    Seats are numbered clockwise. Clockwise play starts at the first seat after the
    banker (the house sits before seat 1); counter-clockwise play is the reverse.
    The deal uses the same rule with the profile's ``deal_direction``.
    """
    ordered = sorted(seats)
    if banker_seat is not None:
        ordered = [s for s in ordered if s > banker_seat] + [s for s in ordered if s < banker_seat]
    if (direction or profile.draw_direction) == "counterclockwise":
        ordered.reverse()
    return ordered


def deal_order(seats: Sequence[int], profile: Profile, banker_seat: int | None) -> list[int]:
    """Seats in the order they receive the dealt cards (the banker after them, twice)."""
    return play_order(seats, profile, banker_seat, profile.deal_direction)


def new_round(
    profile: Profile,
    bets: Sequence[SeatBet],
    *,
    banker_seat: int | None = None,
    banker_balance: int | None = None,
    limits: TableLimits | None = None,
) -> RoundState:
    """A round whose betting has closed; the next action is the first card of the deal."""
    if not bets:
        raise RoundSetupError("a round needs at least one punter with a bet")
    if len(bets) > profile.max_punters:
        raise RoundSetupError(
            f"{len(bets)} punters, but profile {profile.name} seats at most {profile.max_punters}"
        )
    numbers = [b.seat for b in bets]
    if len(set(numbers)) != len(numbers):
        raise RoundSetupError(f"a seat holds at most one bet: {sorted(numbers)}")
    if limits is not None and not 0 < limits.min_bet <= limits.max_bet:
        raise RoundSetupError(f"table limits must satisfy 0 < min <= max: {limits}")
    for bet in bets:
        if isinstance(bet.seat, bool) or not isinstance(bet.seat, int) or bet.seat < 1:
            raise RoundSetupError(f"seat numbers are positive integers, got {bet.seat!r}")
        if isinstance(bet.stake, bool) or not isinstance(bet.stake, int) or bet.stake <= 0:
            raise RoundSetupError(f"seat {bet.seat}: a stake is a positive integer in minor units")
        if limits is not None and not limits.min_bet <= bet.stake <= limits.max_bet:
            raise RoundSetupError(
                f"seat {bet.seat}: stake {bet.stake} outside the table limits "
                f"{limits.min_bet}–{limits.max_bet}"
            )
        if bet.hidden and not profile.punter.privacy:
            raise ActionNotAllowedError(f"profile {profile.name} has no privacy flag")
    if banker_seat is None:
        if "house" not in profile.banker_modes:
            raise RoundSetupError(f"profile {profile.name} needs a seated banker")
        if banker_balance is not None:
            raise RoundSetupError("the house banker has no balance to state")
    else:
        _check_seated_banker(profile, banker_seat, banker_balance, limits, numbers)
    order = play_order(numbers, profile, banker_seat)
    by_seat = {b.seat: b for b in bets}
    seats = tuple(
        Seat(s, by_seat[s].stake, by_seat[s].bet_id, hidden=by_seat[s].hidden) for s in order
    )
    hands = tuple(Hand(s, 1, (), by_seat[s].stake) for s in order)
    queue: list[Target] = []
    dealing = deal_order(numbers, profile, banker_seat)
    for k in range(2):  # two cards each; the banker's first ``banker_face_down`` face down
        queue.extend(Target(s, 1, True) for s in dealing)
        queue.append(Target(None, 0, k >= profile.banker_face_down))
    return RoundState(
        profile=profile,
        limits=limits,
        banker=BankerHand(banker_seat, banker_balance),
        seats=seats,
        hands=hands,
        phase=Phase.DEALING,
        queue=tuple(queue),
        turn=None,
    )


def _check_seated_banker(
    profile: Profile,
    seat: int,
    balance: int | None,
    limits: TableLimits | None,
    punter_seats: Sequence[int],
) -> None:
    if "seated" not in profile.banker_modes:
        raise RoundSetupError(f"profile {profile.name} has no seated banker; the house banks")
    if isinstance(seat, bool) or not isinstance(seat, int) or seat < 1:
        raise RoundSetupError(f"the banker's seat is a positive integer, got {seat!r}")
    if seat in punter_seats:
        raise RoundSetupError(f"seat {seat} cannot both bank and bet")
    if limits is None:
        raise RoundSetupError("a seated banker needs the table limits (min and max bet)")
    if isinstance(balance, bool) or not isinstance(balance, int) or balance < 0:
        raise BankrollError("a seated banker's balance is a non-negative integer")
    if balance < limits.min_bet:
        raise BankrollError(
            f"banker balance {balance} is below the minimum bet {limits.min_bet}: the bank passes"
        )


# ---------------------------------------------------------------------------- queries


def next_card_target(state: RoundState) -> Target | None:
    """Where the next card out of the shoe belongs, or None if a decision comes first."""
    return state.queue[0] if state.queue else None


def awaiting(state: RoundState) -> Actor | None:
    """Whose decision the round waits for (None while a card is owed or once settled)."""
    if state.queue or state.phase is Phase.SETTLED:
        return None
    if state.phase is Phase.BANKER:
        return BANKER
    if state.phase is Phase.PUNTERS and state.turn is not None:
        return state.hands[state.turn].ref
    return None


def hand_done(hand: Hand, profile: Profile) -> bool:
    """A hand that can take no further decision."""
    if hand.result is not None or hand.stood:
        return True
    n = len(hand.cards)
    if n < 2:
        return False
    if (hand.doubled and n >= 3) or n >= profile.max_cards:
        return True
    kind = hand.value(profile).kind
    return kind in NATURALS or kind is Kind.QUAC


def legal_actions(state: RoundState, actor: int | str) -> tuple[Action, ...]:
    """Every action ``actor`` (a seat number or ``"banker"``) may take now.

    Derived by trying each candidate on the immutable state, so it can never disagree
    with :func:`apply`.
    """
    candidates: list[Action] = []
    if actor == BANKER:
        candidates = [Hit(BANKER), Stand(BANKER), NoDecision(BANKER), Leave(BANKER)]
        candidates += [Check(s.seat) for s in state.seats] + [Check(None)]
    elif isinstance(actor, int):
        for h in state.hands:
            if h.seat == actor:
                r = h.ref
                candidates += [Hit(r), Stand(r), Double(r), Split(r), Surrender(r), NoDecision(r)]
        candidates += [Leave(actor), Hide(actor)]
    legal = []
    for action in candidates:
        try:
            apply(state, action)
        except XiDachError:
            continue
        legal.append(action)
    return tuple(legal)


# ---------------------------------------------------------------------------- apply


def apply(state: RoundState, action: Action) -> RoundState:
    """The state after ``action``; raises a :class:`XiDachError` subclass if refused."""
    if state.phase is Phase.SETTLED:
        raise RoundOverError("the round is settled")
    match action:
        case Deal(card):
            new = _deal(state, card)
        case Leave(who):
            new = _leave(state, who)
        case Hide(seat):
            new = _hide(state, seat)
        case NoDecision(actor) if isinstance(actor, HandRef):
            new = _punter_timeout(state, actor)
        case _:
            if state.queue:
                raise CardAwaitedError(f"deal the next card first (to {state.queue[0]})")
            if isinstance(action, Check) or getattr(action, "actor", None) == BANKER:
                new = _banker_decision(state, action)
            else:
                new = _punter_decision(state, action)
    return _progress(new)


def _deal(state: RoundState, card: Card) -> RoundState:
    if not isinstance(card, Card):
        raise NotACardError(f"a dealt card must be a Card, got {card!r}")
    if not state.queue:
        raise NoCardAwaitedError(f"no card is owed now; awaiting a decision by {awaiting(state)}")
    if state.dealt.count(card) >= state.profile.decks:
        raise DuplicateCardError(
            f"{card.code} already dealt {state.profile.decks} time(s): "
            f"more than {state.profile.decks} deck(s) hold"
        )
    target, queue = state.queue[0], state.queue[1:]
    dealt = (*state.dealt, card)
    if target.is_banker:
        banker = evolve(state.banker, cards=(*state.banker.cards, card))
        return evolve(state, banker=banker, queue=queue, dealt=dealt)
    index = _hand_index(state, HandRef(target.seat or 0, target.hand))
    hand = state.hands[index]
    hand = evolve(hand, cards=(*hand.cards, card))
    profile = state.profile
    if (
        hand.result is None
        and profile.punter.bust_loses_at_once
        and hand.value(profile).kind is Kind.QUAC
    ):
        hand = evolve(hand, result=HandResult(Result.LOSE, 0, Basis.BUST, None))
    hands = _put(state.hands, index, hand)
    turn = state.turn
    if state.phase is Phase.PUNTERS and profile.turn_style == "rounds" and not queue:
        turn = _next_open(hands, profile, index + 1)  # one card per turn, then pass on
    return evolve(state, hands=hands, queue=queue, dealt=dealt, turn=turn)


def _punter_timeout(state: RoundState, ref: HandRef) -> RoundState:
    if state.phase is not Phase.PUNTERS:
        raise NotYourTurnError(f"no punter decision is awaited in phase {state.phase}")
    index = _hand_index(state, ref)
    hand = state.hands[index]
    if hand_done(hand, state.profile):
        raise ActionNotAllowedError(f"{ref} is already complete")
    return evolve(state, hands=_put(state.hands, index, evolve(hand, auto=True)))


def _punter_decision(state: RoundState, action: Action) -> RoundState:
    ref = getattr(action, "actor", None)
    if not isinstance(ref, HandRef):
        raise ActionNotAllowedError(f"not a punter action: {action!r}")
    index = _hand_index(state, ref)
    if state.phase is not Phase.PUNTERS:
        raise NotYourTurnError(f"no punter decision is awaited in phase {state.phase}")
    if state.turn != index:
        raise NotYourTurnError(f"awaiting {awaiting(state)}, not {ref}")
    profile = state.profile
    name = type(action).__name__.lower()
    if name not in profile.punter.actions:
        raise ActionNotAllowedError(f"profile {profile.name} does not offer {name}")
    hand = state.hands[index]
    total = hand.value(profile).total
    match action:
        case Hit():
            _check_may_hit(len(hand.cards), total, profile, profile.punter.must_stand_from)
            return evolve(state, queue=(Target(ref.seat, ref.hand, True),))
        case Stand():
            if total < profile.punter.must_draw_below:
                raise ForcedDrawError(
                    f"{ref} has {total}: a punter may stand only at "
                    f"{profile.punter.must_draw_below} or more"
                )
            hands = _put(state.hands, index, evolve(hand, stood=True))
            turn = _next_open(hands, profile, index + 1)
            return evolve(state, hands=hands, turn=turn)
        case Double():
            if len(hand.cards) != 2:
                raise ActionNotAllowedError(f"{ref}: double only on the first two cards")
            _check_may_hit(len(hand.cards), total, profile, profile.punter.must_stand_from)
            hand = evolve(hand, doubled=True, stake=hand.stake * 2)
            hands = _put(state.hands, index, hand)
            return evolve(state, hands=hands, queue=(Target(ref.seat, ref.hand, True),))
        case Split():
            return _split(state, index, hand)
        case Surrender():
            if len(hand.cards) != 2 or hand.from_split:
                raise ActionNotAllowedError(f"{ref}: surrender only on the first two dealt cards")
            result = HandResult(Result.HALF_REFUND, hand.stake // 2, Basis.SURRENDER, None)
            return evolve(state, hands=_put(state.hands, index, evolve(hand, result=result)))
    raise ActionNotAllowedError(f"not a punter action: {action!r}")


def _split(state: RoundState, index: int, hand: Hand) -> RoundState:
    seat = state.seat(hand.seat)
    if len(hand.cards) != 2 or hand.cards[0].rank != hand.cards[1].rank:
        raise ActionNotAllowedError(f"{hand.ref}: split needs two cards of the same rank")
    if seat.has_split or hand.from_split:
        raise ActionNotAllowedError(f"seat {hand.seat}: one split per seat per round")
    left = Hand(hand.seat, 1, hand.cards[:1], hand.stake, from_split=True)
    right = Hand(hand.seat, 2, hand.cards[1:], hand.stake, from_split=True)
    hands = (*state.hands[:index], left, right, *state.hands[index + 1 :])
    seats = tuple(evolve(s, has_split=True) if s.seat == hand.seat else s for s in state.seats)
    # one more card to each hand, left then right; the left hand is then played first
    queue = (Target(hand.seat, 1, True), Target(hand.seat, 2, True))
    return evolve(state, hands=hands, seats=seats, queue=queue, turn=index)


def _check_may_hit(n_cards: int, total: int, profile: Profile, must_stand_from: int) -> None:
    refusal = hit_refusal(n_cards, total, profile, must_stand_from)
    if refusal is not None:
        raise refusal


def _banker_decision(state: RoundState, action: Action) -> RoundState:
    if state.phase is not Phase.BANKER:
        raise NotYourTurnError(f"the banker acts after the punters (phase {state.phase})")
    profile = state.profile
    value = state.banker.value(profile)
    step = house_step(state)
    if step is not None and not isinstance(action, NoDecision) and action != step.action:
        raise HousePolicyError(
            f"the house banker has no discretion: with {value.total} its published policy "
            f"is to {step.text}"
        )
    match action:
        case Hit():
            rules = profile.banker
            _check_may_hit(len(state.banker.cards), value.total, profile, rules.must_stand_from)
            checked = any(h.result and h.result.basis is Basis.CHECK for h in state.hands)
            if checked and not rules.draw_after_check:
                raise ActionNotAllowedError(f"profile {profile.name}: no draw after a check")
            return evolve(state, queue=(Target(None, 0, True),))
        case Stand():
            if value.total < profile.banker.must_draw_below:
                raise ForcedDrawError(
                    f"banker has {value.total}: may stand only at "
                    f"{profile.banker.must_draw_below} or more"
                )
            return _showdown(state, Basis.SHOWDOWN)
        case Check(seat):
            if not profile.banker.may_check:
                raise CheckNotAllowedError(f"profile {profile.name} has no check (xét)")
            if value.total < profile.banker.check_from:
                raise CheckNotAllowedError(
                    f"banker has {value.total}: may check only from {profile.banker.check_from}"
                )
            if seat is None:
                return _showdown(state, Basis.CHECK)
            state.seat(seat)
            open_hands = [h for h in state.hands if h.seat == seat and h.result is None]
            if not open_hands:
                raise ActionNotAllowedError(f"seat {seat} is already settled")
            return _settle_where(state, lambda h: h.seat == seat, value, Basis.CHECK)
        case NoDecision():
            return evolve(state, banker=evolve(state.banker, auto=True))
    raise ActionNotAllowedError(f"not a banker action: {action!r}")


def _leave(state: RoundState, who: int | str) -> RoundState:
    if who == BANKER:
        if not state.banker.seated:
            raise ActionNotAllowedError("the house banker does not leave the table")
        if state.phase is Phase.BANKER:  # already revealed: the system plays the hand out
            return evolve(state, banker=evolve(state.banker, left=True, auto=True))
        banker = evolve(state.banker, left=True)
        hands = tuple(
            evolve(h, result=HandResult(Result.WIN, h.stake * 2, Basis.BANKER_LEFT, None))
            if h.result is None
            else h
            for h in state.hands
        )
        return evolve(state, banker=banker, hands=hands, queue=(), phase=Phase.SETTLED)
    if not isinstance(who, int):
        raise UnknownSeatError(f"who leaves: a seat number or 'banker', got {who!r}")
    seat = state.seat(who)
    if seat.left:
        raise ActionNotAllowedError(f"seat {who} has already left")
    seats = tuple(evolve(s, left=True) if s.seat == who else s for s in state.seats)
    if state.phase is Phase.BANKER:  # after the reveal the hands stand as they are
        return evolve(state, seats=seats)
    lost = HandResult(Result.LOSE, 0, Basis.LEFT, None)
    hands = tuple(
        evolve(h, result=lost) if h.seat == who and h.result is None else h for h in state.hands
    )
    return evolve(state, seats=seats, hands=hands)


def _hide(state: RoundState, number: int) -> RoundState:
    if not state.profile.punter.privacy:
        raise ActionNotAllowedError(f"profile {state.profile.name} has no privacy flag")
    seat = state.seat(number)
    if seat.hidden:
        raise ActionNotAllowedError(f"seat {number} is already hidden")
    seats = tuple(evolve(s, hidden=True) if s.seat == number else s for s in state.seats)
    return evolve(state, seats=seats)


# ---------------------------------------------------------------------------- progress


def _progress(state: RoundState) -> RoundState:
    """Run everything that needs no decision, until a card or a decision is awaited."""
    profile = state.profile
    while state.phase is not Phase.SETTLED and not state.queue:
        if state.phase is Phase.DEALING:
            state = _after_deal(state)
        elif state.phase is Phase.PUNTERS:
            turn = state.turn
            if turn is None or hand_done(state.hands[turn], profile):
                turn = _next_open(state.hands, profile, 0 if turn is None else turn + 1)
            if turn is None:
                banker = evolve(state.banker, revealed=True)
                state = evolve(state, phase=Phase.BANKER, turn=None, banker=banker)
                continue
            if turn != state.turn:
                state = evolve(state, turn=turn)
            hand = state.hands[turn]
            if not hand.auto:
                return state
            state = _auto_punter(state, turn, hand)
        else:
            state = _banker_progress(state)
            if state.phase is Phase.BANKER and not state.queue and not state.banker.auto:
                return state
    return state


def _after_deal(state: RoundState) -> RoundState:
    profile = state.profile
    banker_value = state.banker.value(profile)
    if is_pair_natural(state.banker.cards) and profile.banker.natural_ends_round:
        state = evolve(state, banker=evolve(state.banker, revealed=True))
        return _showdown(state, Basis.BANKER_NATURAL)
    if profile.punter.natural_settles_at_once:
        state = _settle_where(
            state, lambda h: h.value(profile).is_natural, banker_value, Basis.NATURAL
        )
    return evolve(state, phase=Phase.PUNTERS, turn=None)


def _auto_punter(state: RoundState, index: int, hand: Hand) -> RoundState:
    """The timeout policy: hit until the profile's total, within the forced rules."""
    profile = state.profile
    if punter_auto_draws(len(hand.cards), hand.value(profile).total, profile):
        return evolve(state, queue=(Target(hand.seat, hand.index, True),))
    hands = _put(state.hands, index, evolve(hand, stood=True))
    return evolve(state, hands=hands, turn=_next_open(hands, profile, index + 1))


def _banker_progress(state: RoundState) -> RoundState:
    profile = state.profile
    if all(h.result is not None for h in state.hands):
        return evolve(state, phase=Phase.SETTLED)
    value = state.banker.value(profile)
    rules = profile.banker
    if value.kind is Kind.QUAC or len(state.banker.cards) >= profile.max_cards or value.is_natural:
        return _showdown(state, Basis.SHOWDOWN)  # bust, five cards or a natural: all show
    if state.banker.auto:
        step = house_step(state)
        if step is not None:  # the house: its published policy, one step at a time
            return _banker_decision(state, step.action)
        if value.total < rules.auto_stand_at and (
            hit_refusal(len(state.banker.cards), value.total, profile, rules.must_stand_from)
            is None
        ):
            return evolve(state, queue=(Target(None, 0, True),))
        return _showdown(state, Basis.SHOWDOWN)
    return state


# ---------------------------------------------------------------------------- settling


def payout(stake: int, value: HandValue, result: Result, profile: Profile) -> int:
    """What a hand returns to the punter (stake included), rounded down."""
    if result is Result.LOSE:
        return 0
    if result is Result.PUSH:
        return stake
    if result is Result.HALF_REFUND:
        return stake // 2
    rate = win_rate(value, profile)
    return stake + stake * rate.numerator // rate.denominator


def _showdown(state: RoundState, basis: Basis) -> RoundState:
    value = state.banker.value(state.profile)
    state = _settle_where(state, lambda h: True, value, basis)
    return evolve(state, phase=Phase.SETTLED, queue=())


def _settle_where(
    state: RoundState, which: Callable[[Hand], bool], banker_value: HandValue, basis: Basis
) -> RoundState:
    profile = state.profile
    if not any(h.result is None and which(h) for h in state.hands):
        return state
    hands = []
    for h in state.hands:
        if h.result is None and which(h):
            value = h.value(profile)
            result = Result(compare(value, banker_value, profile).value)
            returned = payout(h.stake, value, result, profile)
            h = evolve(h, result=HandResult(result, returned, basis, banker_value))
        hands.append(h)
    return evolve(state, hands=tuple(hands))


# ---------------------------------------------------------------------------- helpers


def _hand_index(state: RoundState, ref: HandRef) -> int:
    for i, h in enumerate(state.hands):
        if h.seat == ref.seat and h.index == ref.hand:
            return i
    raise UnknownSeatError(f"no {ref} in this round")


def _next_open(hands: Sequence[Hand], profile: Profile, start: int) -> int | None:
    """The first hand from ``start`` (cyclically) that still takes decisions."""
    n = len(hands)
    for k in range(n):
        i = (start + k) % n
        if not hand_done(hands[i], profile):
            return i
    return None


def _put(hands: tuple[Hand, ...], index: int, hand: Hand) -> tuple[Hand, ...]:
    return (*hands[:index], hand, *hands[index + 1 :])
