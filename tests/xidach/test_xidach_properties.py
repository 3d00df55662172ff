"""Hypothesis properties of the Xì Dách engine, over all three profiles.

Rounds are played on random shuffles with random *legal* decisions (taken from
``legal_actions``), so the properties cover splits, doubles, surrenders, checks,
timeouts, leaving and the seated banker's cover.
"""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from table_service.rules.cards import Card, parse_cards, standard_deck
from table_service.rules.xidach.actions import (
    BANKER,
    Action,
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
from table_service.rules.xidach.engine import (
    apply,
    awaiting,
    legal_actions,
    new_round,
    next_card_target,
)
from table_service.rules.xidach.errors import ForcedDrawError, XiDachError
from table_service.rules.xidach.hands import (
    NATURALS,
    HandValue,
    Kind,
    Outcome,
    classify,
    compare,
    rank_key,
)
from table_service.rules.xidach.policy import house_step
from table_service.rules.xidach.profile import Profile, load_profile, profile_from_dict
from table_service.rules.xidach.replay import handle_line
from table_service.rules.xidach.settlement import settle
from table_service.rules.xidach.state import Basis, Phase, Result, RoundState, SeatBet, TableLimits
from table_service.rules.xidach.view import view
from tests.xidach.conftest import profile_data

PROFILES = [load_profile(n) for n in ("room", "classic", "forced-draw")]
DECK = standard_deck()
LIMITS = TableLimits(100, 5000)
_taxed = profile_data("room")
_taxed["payouts"]["commission"] = [3, 100]
# rounds are also played with a commission, so the money properties cover that line
ROUND_PROFILES = [*PROFILES, profile_from_dict(_taxed)]

hands = st.lists(st.sampled_from(DECK), min_size=2, max_size=5, unique=True)


@st.composite
def round_setup(draw: st.DrawFn) -> tuple[RoundState, list[Card]]:
    profile = draw(st.sampled_from(ROUND_PROFILES))
    n = draw(st.integers(1, min(4, profile.max_punters)))
    seats = draw(st.lists(st.integers(1, 9), min_size=n, max_size=n, unique=True))
    stakes = draw(st.lists(st.integers(LIMITS.min_bet, LIMITS.max_bet), min_size=n, max_size=n))
    banker_seat = balance = None
    limits = None
    if "seated" in profile.banker_modes and draw(st.booleans()):
        free = [s for s in range(1, 10) if s not in seats]
        banker_seat = draw(st.sampled_from(free))
        balance = draw(st.integers(LIMITS.min_bet, 40_000))
        limits = LIMITS
    hidden = profile.punter.privacy and draw(st.booleans())
    bets = [SeatBet(s, k, f"b{s}", hidden) for s, k in zip(seats, stakes, strict=True)]
    state = new_round(profile, bets, banker_seat=banker_seat, banker_balance=balance, limits=limits)
    return state, list(draw(st.permutations(DECK)))


def _belongs(action: Action, actor: HandRef | str) -> bool:
    if actor == BANKER:
        return True
    if isinstance(action, Leave | Hide):
        return True
    return getattr(action, "actor", None) == actor


def play_randomly(
    state: RoundState, deck: list[Card], data: st.DataObject
) -> tuple[RoundState, list[Action], list[RoundState]]:
    """Play to the end with random legal decisions; returns the final state and the log."""
    log: list[Action] = []
    seen = [state]
    position = 0
    while state.phase is not Phase.SETTLED:
        if next_card_target(state) is not None:
            action: Action = Deal(deck[position])
            position += 1
        else:
            actor = awaiting(state)
            assert actor is not None, "the engine awaits neither a card nor a decision"
            key = BANKER if actor == BANKER else actor.seat
            options = [a for a in legal_actions(state, key) if _belongs(a, actor)]
            if state.banker.seated and actor != BANKER:  # a seated banker may walk out
                options += [a for a in legal_actions(state, BANKER) if isinstance(a, Leave)]
            assert options, f"no legal action for {actor}"
            action = data.draw(st.sampled_from(options))
        state = apply(state, action)
        log.append(action)
        seen.append(state)
        assert len(log) < 200, "a round must end"
    return state, log, seen


@settings(max_examples=150)
@given(round_setup(), st.data())
def test_no_hand_exceeds_five_cards(
    setup: tuple[RoundState, list[Card]], data: st.DataObject
) -> None:
    state, deck = setup
    _, _, seen = play_randomly(state, deck, data)
    for s in seen:
        assert all(len(h.cards) <= 5 for h in s.hands)
        assert len(s.banker.cards) <= 5


@settings(max_examples=150)
@given(round_setup(), st.data())
def test_settlement_conserves_money(
    setup: tuple[RoundState, list[Card]], data: st.DataObject
) -> None:
    state, deck = setup
    final, _, _ = play_randomly(state, deck, data)
    result = settle(final)
    for h in result.hands:
        assert h.returned + h.shortfall + h.commission == h.owed
        assert 0 <= h.returned <= h.owed
        if h.result is Result.LOSE:
            assert h.owed == 0
        elif h.result is Result.PUSH:
            assert h.owed == h.stake
        elif h.result is Result.HALF_REFUND:
            assert h.owed == h.stake // 2
        else:
            assert h.owed > h.stake and h.returned >= h.stake
    bank = result.bank
    if bank is None:
        assert all(h.shortfall == 0 for h in result.hands)
    else:
        assert bank.balance_after >= 0
        # what the punters take out is exactly what the banker's balance lost
        assert (
            result.total_returned + result.total_commission + bank.balance_after
            == result.total_staked + bank.balance_before
        )
        assert bank.shortfall == sum(h.shortfall for h in result.hands)
        if bank.shortfall:
            assert bank.balance_after < sum(1 for h in result.hands if h.result is Result.WIN)


@settings(max_examples=150)
@given(round_setup(), st.data())
def test_forced_draws_never_let_a_punter_stand_under_the_minimum(
    setup: tuple[RoundState, list[Card]], data: st.DataObject
) -> None:
    state, deck = setup
    final, _, seen = play_randomly(state, deck, data)
    minimum = state.profile.punter.must_draw_below
    for s in seen:
        actor = awaiting(s)
        if isinstance(actor, HandRef) and s.hand(actor).value(s.profile).total < minimum:
            try:
                apply(s, Stand(actor))
            except ForcedDrawError:
                pass
            else:
                raise AssertionError(f"{actor} stood under {minimum}")
    for h in final.hands:
        value = h.value(final.profile)
        stopped_early = h.result is not None and h.result.basis in {
            Basis.LEFT,
            Basis.BANKER_LEFT,
            Basis.BANKER_NATURAL,
            Basis.SURRENDER,
        }
        ended_by_rule = value.kind in NATURALS or value.kind is Kind.QUAC or len(h.cards) == 5
        if h.stood or not (stopped_early or ended_by_rule or h.doubled):
            assert value.total >= minimum, (h, value)


@settings(max_examples=100)
@given(round_setup(), st.data())
def test_every_refusal_is_typed_and_the_replay_agrees_with_the_engine(
    setup: tuple[RoundState, list[Card]], data: st.DataObject
) -> None:
    state, deck = setup
    final, log, seen = play_randomly(state, deck, data)
    probe = data.draw(st.sampled_from(seen))
    for action in _all_candidates(probe):
        try:
            apply(probe, action)
        except XiDachError as exc:
            assert exc.reason
    request = _to_request(state, log)
    out = handle_line(request, state.profile)  # a variant may share a shipped name
    expected = settle(final)
    assert [
        (h["seat"], h["hand"], h["result"], h["returned"], h["commission"]) for h in out["hands"]
    ] == [(h.seat, h.hand, h.result.value, h.returned, h.commission) for h in expected.hands]


def _all_candidates(state: RoundState) -> list[Action]:
    actions: list[Action] = [Hit(BANKER), Stand(BANKER), Check(None), Leave(BANKER)]
    actions.append(NoDecision(BANKER))
    for h in state.hands:
        r = h.ref
        actions += [Hit(r), Stand(r), Double(r), Split(r), Surrender(r), NoDecision(r)]
        actions += [Check(h.seat), Leave(h.seat), Hide(h.seat)]
    actions += [Hit(HandRef(42)), Check(42), Deal(DECK[0])]
    return actions


def _to_request(start: RoundState, log: list[Action]) -> dict[str, Any]:
    decisions: list[dict[str, Any]] = []
    names = {Hit: "hit", Stand: "stand", Double: "double", Split: "split", Surrender: "surrender"}
    for a in log:
        match a:
            case Deal():
                continue
            case Check(seat):
                decisions.append({"seat": "banker", "action": "check", "target": seat or "all"})
            case Leave(who):
                decisions.append({"seat": who, "action": "leave"})
            case Hide(seat):
                decisions.append({"seat": seat, "action": "hide"})
            case NoDecision(actor) if actor == BANKER:
                decisions.append({"seat": "banker", "action": "no_decision"})
            case NoDecision(actor):
                assert isinstance(actor, HandRef)  # the banker's is the case above
                decisions.append({"seat": actor.seat, "hand": actor.hand, "action": "no_decision"})
            case _ if a.actor == BANKER:
                decisions.append({"seat": "banker", "action": names[type(a)]})
            case _:
                ref = a.actor
                assert isinstance(ref, HandRef)  # the banker's actions are the case above
                decisions.append({"seat": ref.seat, "hand": ref.hand, "action": names[type(a)]})
    request: dict[str, Any] = {
        "round": "p",
        "profile": start.profile.name,
        "cards": [a.card.code for a in log if isinstance(a, Deal)],
        "seats": [
            {"seat": s.seat, "stake": s.stake, "id": s.bet_id, "hidden": s.hidden}
            for s in start.seats
        ],
        "decisions": decisions,
    }
    if start.banker.seated:
        request["banker"] = {"seat": start.banker.seat, "balance": start.banker.balance}
        request["table"] = {"min_bet": LIMITS.min_bet, "max_bet": LIMITS.max_bet}
    return request


# The ranking as the contract (rules/xidach.md) states it, strongest first, written
# independently of ``rank_key``; ties inside a class go by total (lower for Ngũ Linh).
CONTRACT_ORDER = {
    "room": ["xi_bang", "xi_dach", "ngu_linh", "du_tuoi", "non", "quac"],
    "classic": ["xi_bang", "xi_dach", "ngu_linh", "du_tuoi", "non", "quac"],
    "forced-draw": ["xi_bang", "xi_dach", "ngu_linh", "du_tuoi", "quac", "non"],
}


def contract_outcome(punter: HandValue, banker: HandValue, profile: Profile) -> Outcome:
    if punter.kind is Kind.QUAC and banker.kind is Kind.QUAC:
        return Outcome.PUSH if profile.ranking.bust_vs_bust == "push" else Outcome.LOSE
    order = CONTRACT_ORDER[profile.name]
    i, j = order.index(punter.kind.value), order.index(banker.kind.value)
    if i != j:
        return Outcome.WIN if i < j else Outcome.LOSE
    if punter.kind in (Kind.XI_BANG, Kind.XI_DACH, Kind.QUAC):
        return Outcome.PUSH
    mine, theirs = punter.total, banker.total
    if punter.kind is Kind.NGU_LINH:  # two Ngũ Linh: the lower total wins
        mine, theirs = -mine, -theirs
    return Outcome.WIN if mine > theirs else Outcome.LOSE if mine < theirs else Outcome.PUSH


@given(st.sampled_from(PROFILES), hands, hands, hands)
def test_compare_follows_the_contract_ranking_and_is_transitive(
    profile: Profile, a: list[Card], b: list[Card], c: list[Card]
) -> None:
    va, vb, vc = (classify(h, profile) for h in (a, b, c))
    ab, ba = compare(va, vb, profile), compare(vb, va, profile)
    assert ab == contract_outcome(va, vb, profile)
    if va.kind is Kind.QUAC and vb.kind is Kind.QUAC:
        assert ab == ba  # both busted: the profile's rule, the same either way round
    else:
        assert (ab, ba) in {
            (Outcome.WIN, Outcome.LOSE),
            (Outcome.LOSE, Outcome.WIN),
            (Outcome.PUSH, Outcome.PUSH),
        }
        ka, kb = rank_key(va, profile), rank_key(vb, profile)
        assert (ab is Outcome.WIN) == (ka > kb)
    bc, ac = compare(vb, vc, profile), compare(va, vc, profile)
    if ab is Outcome.WIN and bc is Outcome.WIN:
        assert ac is Outcome.WIN  # beating a hand that beats c beats c
    if ab is Outcome.PUSH and bc is Outcome.PUSH and Kind.QUAC not in (va.kind, vb.kind):
        assert ac is Outcome.PUSH


def test_the_contract_ranking_on_known_hands() -> None:
    """Hands where the profiles disagree: a non (15) against a bust."""
    room, classic, forced = PROFILES
    non, bust = (
        classify(parse_cards(["TS", "5D"]), room),
        classify(parse_cards(["TS", "5D", "KH"]), room),
    )
    assert compare(non, bust, room) is Outcome.WIN
    assert compare(non, bust, classic) is Outcome.WIN
    assert compare(non, bust, forced) is Outcome.LOSE  # "giằng non" loses even to a bust
    low, high = (
        classify(parse_cards(c), forced)
        for c in (["AS", "2D", "3H", "4C", "5S"], ["2S", "3D", "4H", "5C", "6S"])
    )
    assert (low.kind, high.kind) == (Kind.NGU_LINH, Kind.NGU_LINH)
    assert compare(low, high, forced) is Outcome.WIN  # the lower Ngũ Linh wins


@given(st.sampled_from(PROFILES), hands)
def test_the_best_total_never_busts_when_a_choice_fits(profile: Profile, cards: list[Card]) -> None:
    value = classify(cards, profile)
    low = sum(min(c.rank, 10) for c in cards)
    assert value.total >= low  # an Ace is never worth less than 1
    if low <= 21:
        assert value.total <= 21


@settings(max_examples=100)
@given(round_setup(), st.data())
def test_the_house_banker_has_exactly_one_move(
    setup: tuple[RoundState, list[Card]], data: st.DataObject
) -> None:
    state, deck = setup
    _, _, seen = play_randomly(state, deck, data)
    for s in seen:
        step = house_step(s)
        if awaiting(s) != BANKER or s.banker.seated:
            assert step is None
            continue
        assert step is not None  # the house banker is awaited: it has its move
        moves = [a for a in legal_actions(s, BANKER) if not isinstance(a, NoDecision | Leave)]
        assert moves == [step.action], (step, moves)
        total = s.banker.value(s.profile).total
        policy = s.profile.house_policy
        assert (step.kind == "draw") == (total < policy.draw_below) or step.kind == "check"


@settings(max_examples=100)
@given(round_setup(), st.data())
def test_the_public_view_never_shows_a_hidden_card(
    setup: tuple[RoundState, list[Card]], data: st.DataObject
) -> None:
    state, deck = setup
    _, _, seen = play_randomly(state, deck, data)
    for s in seen:
        text = json.dumps(view(s, "public"))
        secret: list[Card] = []
        if not s.banker.revealed and s.phase is not Phase.SETTLED:
            secret += s.banker.cards[: s.profile.banker_face_down]
        hidden = {x.seat for x in s.seats if x.hidden}
        secret += [c for h in s.hands if h.seat in hidden and h.result is None for c in h.cards]
        for card in secret:
            assert f'"{card.code}"' not in text, (card, text)
        staff = json.dumps(view(s, "dealer"))
        for card in s.dealt:  # the dealer (and the audit log) always see every card
            assert f'"{card.code}"' in staff
