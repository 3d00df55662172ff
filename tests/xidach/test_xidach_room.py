"""Profile `room` (seed 001): one known-value test per rule sentence of the document."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from table_service.rules.cards import parse_card
from table_service.rules.xidach.actions import (
    BANKER,
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
    after_round,
    can_take_bank,
    keeps_bank,
    next_banker,
    take_bank,
    unseated_for_not_betting,
)
from table_service.rules.xidach.engine import apply, awaiting, new_round, next_card_target
from table_service.rules.xidach.errors import (
    ActionNotAllowedError,
    BankrollError,
    CardAwaitedError,
    ForcedDrawError,
    ForcedStandError,
    NoCardAwaitedError,
    NotACardError,
    NotYourTurnError,
    RoundOverError,
    RoundSetupError,
)
from table_service.rules.xidach.profile import load_profile
from table_service.rules.xidach.state import Phase, RoundState, SeatBet, TableLimits, Target
from table_service.rules.xidach.view import public_view
from tests.xidach.conftest import SEATED_KW, result_of, running_clock

ROOM = load_profile("room")
P1 = HandRef(1)
LIMITS = {"min_bet": 100, "max_bet": 1000}


def test_deal_two_cards_each_clockwise_banker_first_card_face_down() -> None:
    state = new_round(ROOM, [SeatBet(1, 100), SeatBet(2, 100), SeatBet(3, 100)])
    targets = []
    for code in ["2S", "3S", "4S", "5S", "6S", "7S", "8S", "9S"]:
        targets.append(next_card_target(state))
        state = apply(state, Deal(parse_card(code)))
    assert targets == [
        Target(1, 1, True),
        Target(2, 1, True),
        Target(3, 1, True),
        Target(None, 0, False),
        Target(1, 1, True),
        Target(2, 1, True),
        Target(3, 1, True),
        Target(None, 0, True),
    ]
    assert public_view(state)["banker"]["cards"] == ["XX", "9S"]  # seen only by the banker


def test_seated_banker_play_starts_with_the_seat_after_the_banker() -> None:
    state = new_round(
        ROOM,
        [SeatBet(1, 100), SeatBet(2, 100), SeatBet(6, 100)],
        banker_seat=4,
        banker_balance=5000,
        limits=TableLimits(100, 1000),
    )
    assert [s.seat for s in state.seats] == [6, 1, 2]


def test_banker_may_hit_only_below_17_and_must_stand_on_17(
    dealt: Callable[..., RoundState],
) -> None:
    state = dealt("room", ["TS", "TC", "9H", "6D"], **SEATED_KW)  # punter 19, banker 16
    state = apply(state, Stand(P1))
    with pytest.raises(ForcedDrawError):
        apply(state, Stand(BANKER))
    state = apply(apply(state, Hit(BANKER)), Deal(parse_card("AD")))  # 16 + A(1) = 17
    assert state.banker.value(ROOM).total == 17
    with pytest.raises(ForcedStandError):
        apply(state, Hit(BANKER))
    assert apply(state, Stand(BANKER)).phase is Phase.SETTLED


def test_double_two_cards_only_doubles_the_stake_one_card_then_stops(
    play: Callable[..., dict[str, Any]],
) -> None:
    out = play(
        "room",
        ["5S", "TC", "6H", "7D", "9C"],  # punter 11, banker 17; double draws 9 -> 20
        [{"seat": 1, "action": "double"}, {"seat": "banker", "action": "stand"}],
    )
    hand = out["hands"][0]
    assert (hand["cards"], hand["stake"], hand["result"], hand["returned"]) == (
        ["5S", "6H", "9C"],
        2000,
        "win",
        4000,
    )


def test_double_refused_after_a_hit(dealt: Callable[..., RoundState]) -> None:
    state = dealt("room", ["5S", "TC", "3H", "7D"])
    state = apply(apply(state, Hit(P1)), Deal(parse_card("2C")))
    with pytest.raises(ActionNotAllowedError):
        apply(state, Double(P1))


def test_split_two_hands_second_stake_one_card_each_left_first(
    play: Callable[..., dict[str, Any]], dealt: Callable[..., RoundState]
) -> None:
    cards = ["8S", "TC", "8H", "7D", "3C", "KD", "9S"]
    state = dealt("room", cards[:4])
    state = apply(state, Split(P1))
    assert [next_card_target(state)] == [Target(1, 1, True)]
    state = apply(apply(state, Deal(parse_card("3C"))), Deal(parse_card("KD")))
    assert awaiting(state) == HandRef(1, 1)  # the left hand is played first
    with pytest.raises(NotYourTurnError):
        apply(state, Stand(HandRef(1, 2)))
    out = play(
        "room",
        cards,
        [
            {"seat": 1, "action": "split"},
            {"seat": 1, "hand": 1, "action": "hit"},
            {"seat": 1, "hand": 1, "action": "stand"},
            {"seat": 1, "hand": 2, "action": "stand"},
            {"seat": "banker", "action": "stand"},
        ],
    )
    left, right = out["hands"]
    assert (left["cards"], left["total"], left["result"]) == (["8S", "3C", "9S"], 20, "win")
    assert (right["cards"], right["total"], right["result"]) == (["8H", "KD"], 18, "win")
    assert out["bets"] == [
        {"id": None, "seat": 1, "stake": 2000, "returned": 4000, "commission": 0}
    ]


@pytest.mark.parametrize("pair", [["8S", "9H"], ["KS", "QH"]])
def test_split_needs_two_cards_of_the_same_rank(
    dealt: Callable[..., RoundState], pair: list[str]
) -> None:
    state = dealt("room", [pair[0], "TC", pair[1], "7D"])
    with pytest.raises(ActionNotAllowedError):
        apply(state, Split(P1))


def test_a_split_hand_of_king_and_ace_is_not_xi_dach(play: Callable[..., dict[str, Any]]) -> None:
    out = play(
        "room",
        ["KS", "TC", "KH", "7D", "AD", "5C"],
        [
            {"seat": 1, "action": "split"},
            {"seat": 1, "hand": 1, "action": "stand"},
            {"seat": 1, "hand": 2, "action": "stand"},
            {"seat": "banker", "action": "stand"},
        ],
    )
    left, right = out["hands"]
    assert (left["classification"], left["total"], left["returned"]) == ("du_tuoi", 21, 2000)
    assert (right["total"], right["result"]) == (15, "lose")


def test_surrender_loses_half_the_stake_rounded_down(play: Callable[..., dict[str, Any]]) -> None:
    out = play("room", ["TS", "TC", "6H", "7D"], [{"seat": 1, "action": "surrender"}], [1001])
    hand = out["hands"][0]
    assert (hand["result"], hand["returned"], hand["settled_by"]) == (
        "half_refund",
        500,
        "surrender",
    )


def test_timeout_plays_hit_until_17_or_more_then_stand(play: Callable[..., dict[str, Any]]) -> None:
    out = play(
        "room",
        ["TS", "TC", "2H", "6D", "3C", "4D", "5S"],  # punter 12 -> 15 -> 19; banker 16 -> 21
        [{"seat": 1, "action": "no_decision"}, {"seat": "banker", "action": "no_decision"}],
    )
    assert out["hands"][0]["cards"] == ["TS", "2H", "3C", "4D"]
    assert out["banker"]["cards"] == ["TC", "6D", "5S"]
    assert out["hands"][0]["result"] == "lose"


def test_timeout_policy_stops_at_five_cards(play: Callable[..., dict[str, Any]]) -> None:
    out = play(
        "room",
        ["2S", "TC", "3H", "7D", "4C", "2D", "3D"],  # 5, 9, 11, 14 with five cards
        [{"seat": 1, "action": "no_decision"}, {"seat": "banker", "action": "stand"}],
    )
    hand = out["hands"][0]
    assert (len(hand["cards"]), hand["classification"], hand["result"]) == (5, "ngu_linh", "win")


def test_xi_dach_wins_one_and_a_half_at_once(play: Callable[..., dict[str, Any]]) -> None:
    out = play("room", ["AS", "TC", "KH", "7D"])
    hand = out["hands"][0]
    assert (hand["classification"], hand["returned"], hand["settled_by"]) == (
        "xi_dach",
        2500,
        "natural",
    )


def test_xi_dach_against_banker_xi_dach_pushes(play: Callable[..., dict[str, Any]]) -> None:
    out = play("room", ["AS", "AC", "KH", "QD"])
    assert (out["hands"][0]["result"], out["hands"][0]["returned"]) == ("push", 1000)


def test_xi_bang_wins_one_and_a_half_and_beats_xi_dach(play: Callable[..., dict[str, Any]]) -> None:
    out = play("room", ["AS", "AC", "AH", "QD"])
    assert (out["hands"][0]["classification"], out["hands"][0]["returned"]) == ("xi_bang", 2500)


def test_a_21_made_later_wins_1x(play: Callable[..., dict[str, Any]]) -> None:
    out = play(
        "room",
        ["7S", "TC", "4H", "8D", "KC"],
        [
            {"seat": 1, "action": "hit"},
            {"seat": 1, "action": "stand"},
            {"seat": "banker", "action": "stand"},
        ],
    )
    assert (out["hands"][0]["total"], out["hands"][0]["returned"]) == (21, 2000)


def test_ngu_linh_wins_1x_unless_the_banker_ranks_higher(
    play: Callable[..., dict[str, Any]],
) -> None:
    draws = [{"seat": 1, "action": "hit"}] * 3
    out = play(
        "room",
        ["2S", "TC", "3H", "8D", "4C", "5D", "6S"],
        [*draws, {"seat": "banker", "action": "stand"}],
    )
    assert out["banker"]["total"] == 18
    assert (out["hands"][0]["classification"], out["hands"][0]["returned"]) == ("ngu_linh", 2000)
    out = play("room", ["2S", "AC", "3H", "KD", "4C", "5D", "6S"], draws)
    assert out["banker"]["classification"] == "xi_dach"
    assert out["hands"][0]["result"] == "lose"


def test_punter_bust_loses_but_pushes_if_the_banker_busts_too(
    play: Callable[..., dict[str, Any]],
) -> None:
    decisions = [
        {"seat": 1, "action": "hit"},
        {"seat": 2, "action": "stand"},
        {"seat": "banker", "action": "hit"},
    ]
    out = play("room", ["TS", "9D", "TC", "5H", "9S", "6D", "KH", "KD"], decisions, [1000, 1000])
    first, second = out["hands"]
    assert out["banker"]["classification"] == "quac"
    assert (first["classification"], first["result"], first["returned"]) == ("quac", "push", 1000)
    assert (second["result"], second["returned"]) == ("win", 2000)
    out = play(
        "room",
        ["TS", "9D", "TC", "5H", "KS", "8D", "KH"],
        [decisions[0], decisions[1], {"seat": "banker", "action": "stand"}],
        [1000, 1000],
    )
    assert [h["result"] for h in out["hands"]] == ["lose", "win"]  # 19 beats the banker's 18


def test_higher_total_wins_1x_equal_totals_push(play: Callable[..., dict[str, Any]]) -> None:
    stand = [{"seat": 1, "action": "stand"}, {"seat": 2, "action": "stand"}]
    banker = [{"seat": "banker", "action": "stand"}]
    out = play("room", ["TS", "9D", "TC", "9H", "9C", "8D"], stand + banker, [1000, 1000])
    assert [h["result"] for h in out["hands"]] == ["win", "push"]


def test_a_punter_who_leaves_before_the_reveal_loses(play: Callable[..., dict[str, Any]]) -> None:
    out = play(
        "room",
        ["TS", "9D", "TC", "9H", "KC", "8D"],
        [
            {"seat": 1, "action": "leave"},
            {"seat": 2, "action": "stand"},
            {"seat": "banker", "action": "stand"},
        ],
        [1000, 1000],
    )
    assert [(h["result"], h["settled_by"]) for h in out["hands"]] == [
        ("lose", "left"),
        ("win", "showdown"),
    ]


def test_a_seated_banker_who_leaves_before_revealing_loses_to_every_punter(
    play: Callable[..., dict[str, Any]],
) -> None:
    out = play(
        "room",
        ["TS", "5D", "TC", "2H", "8C", "8D"],
        [{"seat": "banker", "action": "leave"}],
        [1000, 500],
        banker={"seat": 5, "balance": 10000},
        table=LIMITS,
    )
    assert [(h["result"], h["returned"]) for h in out["hands"]] == [("win", 2000), ("win", 1000)]
    assert out["bank"]["balance_after"] == 8500
    assert out["bank"]["keeps_bank"] is False


def test_the_house_banker_does_not_leave(dealt: Callable[..., RoundState]) -> None:
    state = dealt("room", ["TS", "TC", "9H", "7D"])
    with pytest.raises(ActionNotAllowedError):
        apply(state, Leave(BANKER))


def test_seated_banker_who_cannot_cover_pays_pro_rata_and_records_the_shortfall(
    play: Callable[..., dict[str, Any]],
) -> None:
    out = play(
        "room",
        ["AS", "TS", "TD", "TC", "KH", "9H", "6C", "7D"],  # natural, 19, 16 vs banker 17
        [
            {"seat": 2, "action": "stand"},
            {"seat": 3, "action": "stand"},
            {"seat": "banker", "action": "stand"},
        ],
        [1000, 1000, 500],
        banker={"seat": 5, "balance": 1000},
        table=LIMITS,
    )
    # owed winnings 1500 + 1000; cover = balance 1000 + lost stake 500 = 1500
    assert [(h["result"], h["returned"], h["shortfall"]) for h in out["hands"]] == [
        ("win", 1000 + 1500 * 1500 // 2500, 1500 - 900),
        ("win", 1000 + 1000 * 1500 // 2500, 1000 - 600),
        ("lose", 0, 0),
    ]
    assert out["bank"] == {
        "seat": 5,
        "balance_before": 1000,
        "balance_after": 0,
        "shortfall": 1000,
        "keeps_bank": False,
        "left": False,
    }


def test_pro_rata_rounds_down_and_the_shortfall_is_exact(
    play: Callable[..., dict[str, Any]],
) -> None:
    out = play(
        "room",
        ["TS", "TD", "TH", "TC", "9S", "9D", "9H", "7D"],  # three punters on 19, banker 17
        [{"seat": s, "action": "stand"} for s in (1, 2, 3)]
        + [{"seat": "banker", "action": "stand"}],
        [1000, 1000, 1000],
        banker={"seat": 5, "balance": 1000},
        table=LIMITS,
    )
    assert [(h["returned"], h["shortfall"]) for h in out["hands"]] == [(1333, 667)] * 3
    assert (out["bank"]["balance_after"], out["bank"]["shortfall"]) == (1, 2001)


def test_seated_banker_needs_five_times_the_max_bet_and_keeps_it_above_the_min_bet() -> None:
    limits = TableLimits(100, 1000)
    assert can_take_bank(ROOM, limits, 5000) and not can_take_bank(ROOM, limits, 4999)
    with pytest.raises(BankrollError):
        take_bank(ROOM, limits, 4999)
    assert keeps_bank(ROOM, limits, 100) and not keeps_bank(ROOM, limits, 99)
    with pytest.raises(BankrollError):
        new_round(ROOM, [SeatBet(1, 100)], banker_seat=5, banker_balance=99, limits=limits)


def test_the_bank_passes_clockwise_to_the_next_who_qualifies_or_the_room_closes() -> None:
    limits = TableLimits(100, 1000)
    players = [(1, 9000), (2, 100), (4, 6000), (7, 4000)]
    assert next_banker(ROOM, limits, players, after_seat=3) == 4
    assert next_banker(ROOM, limits, players, after_seat=4) == 1  # 7 lacks 5000: wraps to 1
    assert next_banker(ROOM, limits, [(2, 100), (7, 4000)], after_seat=3) is None


def test_a_seated_banker_only_where_the_profile_allows_it() -> None:
    classic = load_profile("classic")
    with pytest.raises(RoundSetupError):
        new_round(
            classic,
            [SeatBet(1, 100)],
            banker_seat=5,
            banker_balance=9000,
            limits=TableLimits(100, 1000),
        )


def test_room_has_no_privacy_flag(dealt: Callable[..., RoundState]) -> None:
    state = dealt("room", ["TS", "TC", "9H", "7D"])
    with pytest.raises(ActionNotAllowedError):
        apply(state, Hide(1))


def test_one_shared_30_s_timer_for_all_punters_then_20_s_for_the_banker(
    dealt: Callable[..., RoundState],
) -> None:
    # seat 1: 20, seat 2: 13, banker 17 (dealt seat 1, seat 2, banker, twice)
    state = dealt("room", ["TS", "TD", "TC", "TH", "3H", "7D"], [100, 100], **SEATED_KW)
    running = running_clock(state)
    assert (running.key, running.seconds) == ("punters", 30)
    assert running.actors == (P1, HandRef(2))
    state = apply(state, Stand(P1))  # the turn passes to seat 2: the same timer runs on
    assert running_clock(state).key == running.key and running_clock(state).actors == (HandRef(2),)
    for action in running_clock(state).on_expiry:  # it runs out: seat 2 (13) plays automatically
        state = apply(state, action)
    state = apply(state, Deal(parse_card("4C")))  # 13 + 4 = 17: stands
    assert awaiting(state) == BANKER
    banker = running_clock(state)
    assert (banker.key, banker.seconds, banker.actors) == ("banker", 20, (BANKER,))
    for action in banker.on_expiry:  # a seated banker timing out: hit until 17, stand
        state = apply(state, action)
    assert state.phase is Phase.SETTLED  # banker 17 stood: seat 1 (20) wins, seat 2 pushes
    assert [result_of(h).result.value for h in state.hands] == ["win", "push"]


def test_the_shared_timer_plays_every_open_hand_when_it_runs_out(
    dealt: Callable[..., RoundState],
) -> None:
    state = dealt("room", ["TS", "TD", "TC", "TH", "3H", "7D"], [100, 100])
    for action in running_clock(state).on_expiry:
        state = apply(state, action)
    assert state.hands[0].stood  # seat 1 on 20 stands at once
    state = apply(state, Deal(parse_card("4C")))  # seat 2: 13 + 4 = 17
    assert running_clock(state).key == "banker" and state.hands[1].stood


def test_the_round_starts_20_s_after_the_last_and_a_punter_without_a_bet_is_removed() -> None:
    assert ROOM.round_start_delay_s == 20
    assert unseated_for_not_betting(ROOM, [1, 2, 4], [2]) == (1, 4)
    assert unseated_for_not_betting(load_profile("classic"), [1, 2, 4], [2]) == ()


def test_after_a_round_the_bank_is_kept_passed_clockwise_or_the_room_closes() -> None:
    limits = TableLimits(100, 1000)
    players = [(1, 9000), (2, 100), (4, 6000), (5, 99)]
    kept = after_round(ROOM, limits, players, banker_seat=5, banker_balance=100)
    assert (kept.banker, kept.passed, kept.reason) == (5, False, "keeps")
    broke = after_round(ROOM, limits, players, banker_seat=5, banker_balance=99)
    assert (broke.banker, broke.passed, broke.reason) == (1, True, "below_min_bet")  # wraps
    left = after_round(
        ROOM, limits, players, banker_seat=2, banker_balance=90_000, banker_left=True
    )
    assert (left.banker, left.reason) == (4, "left")  # clockwise after seat 2: seat 4
    closes = after_round(ROOM, limits, [(2, 100), (5, 99)], banker_seat=5, banker_balance=99)
    assert closes.room_closes and closes.banker is None


def test_no_decision_may_mark_any_open_hand_when_the_shared_timer_runs_out(
    dealt: Callable[..., RoundState],
) -> None:
    state = dealt("room", ["TS", "TD", "TC", "9H", "8H", "7D"], [100, 100])
    state = apply(state, NoDecision(HandRef(2)))  # seat 2 timed out while seat 1 decides
    assert awaiting(state) == P1
    state = apply(state, Stand(P1))
    assert awaiting(state) == BANKER  # seat 2 stood automatically on 18


def test_surrender_only_as_the_first_decision(dealt: Callable[..., RoundState]) -> None:
    state = dealt("room", ["5S", "TC", "3H", "7D"])
    state = apply(apply(state, Hit(P1)), Deal(parse_card("2C")))
    with pytest.raises(ActionNotAllowedError):
        apply(state, Surrender(P1))


def test_refusals_are_typed_and_leave_the_state_unchanged(dealt: Callable[..., RoundState]) -> None:
    state = dealt("room", ["TS", "TC", "9H"])
    with pytest.raises(NotACardError):
        apply(state, Deal("7D"))  # type: ignore[arg-type]  # a code, not a Card: refused
    with pytest.raises(CardAwaitedError):
        apply(state, Stand(P1))
    full = apply(state, Deal(parse_card("7D")))
    with pytest.raises(NoCardAwaitedError):
        apply(full, Deal(parse_card("2D")))
    assert full.dealt == tuple(parse_card(c) for c in ["TS", "TC", "9H", "7D"])
    done = apply(apply(full, Stand(P1)), Stand(BANKER))
    with pytest.raises(RoundOverError):
        apply(done, Hit(BANKER))


def test_natural_payout_fractions_are_rounded_down(play: Callable[..., dict[str, Any]]) -> None:
    out = play("room", ["AS", "TC", "KH", "7D"], stakes=[101])
    assert out["hands"][0]["returned"] == 101 + 151  # 1.5 × 101 = 151.5, rounded down


def test_the_banker_reveals_the_face_down_card_at_the_banker_turn(
    dealt: Callable[..., RoundState],
) -> None:
    state = dealt("room", ["TS", "4C", "9H", "7D"])
    assert public_view(state)["banker"]["cards"] == ["XX", "7D"]
    state = apply(state, Stand(P1))
    assert public_view(state)["banker"]["cards"] == ["4C", "7D"]
