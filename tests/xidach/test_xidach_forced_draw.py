"""Profile `forced-draw` (seed 003): one known-value test per rule sentence of the document."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import pytest

from table_service.rules.cards import parse_card
from table_service.rules.xidach.actions import (
    BANKER,
    Check,
    Deal,
    HandRef,
    Hide,
    Hit,
    NoDecision,
    Stand,
)
from table_service.rules.xidach.engine import (
    apply,
    awaiting,
    legal_actions,
    new_round,
    next_card_target,
)
from table_service.rules.xidach.errors import (
    ForcedDrawError,
    ForcedStandError,
    HousePolicyError,
    NotYourTurnError,
)
from table_service.rules.xidach.profile import load_profile, profile_from_dict
from table_service.rules.xidach.state import Phase, RoundState, SeatBet, Target
from table_service.rules.xidach.view import public_view
from tests.xidach.conftest import house_move, profile_data, result_of, running_clock, seated_variant

FORCED = load_profile("forced-draw")
SEATED_FORCED = seated_variant("forced-draw")  # the banker's own choices (checks) need a player
P1 = HandRef(1)


def kinds(actions: Iterable[object]) -> set[str]:
    return {type(a).__name__ for a in actions}


def test_under_16_must_draw(dealt: Callable[..., RoundState]) -> None:
    state = dealt("forced-draw", ["TS", "TC", "5H", "8D"])  # 15
    with pytest.raises(ForcedDrawError):
        apply(state, Stand(P1))
    assert kinds(legal_actions(state, 1)) == {"Hit", "NoDecision", "Leave", "Hide"}


@pytest.mark.parametrize("second", ["6H", "7H"])
def test_16_or_17_may_draw_or_stand(dealt: Callable[..., RoundState], second: str) -> None:
    state = dealt("forced-draw", ["TS", "TC", second, "8D"])
    assert {"Hit", "Stand"} <= kinds(legal_actions(state, 1))


@pytest.mark.parametrize("second", ["8H", "9H", "KH"])
def test_18_or_more_must_stand(dealt: Callable[..., RoundState], second: str) -> None:
    state = dealt("forced-draw", ["TS", "TC", second, "8D"])
    with pytest.raises(ForcedStandError):
        apply(state, Hit(P1))
    assert "Hit" not in kinds(legal_actions(state, 1))


def test_at_most_three_draws_then_the_hand_is_complete(play: Callable[..., dict[str, Any]]) -> None:
    out = play(
        "forced-draw",
        ["2S", "TC", "3H", "8D", "2C", "3C", "4C"],  # 5 -> 7 -> 10 -> 14 with five cards
        [{"seat": 1, "action": "hit"}] * 3 + [{"seat": "banker", "action": "check"}],
    )
    hand = out["hands"][0]
    assert (len(hand["cards"]), hand["classification"], hand["result"]) == (5, "ngu_linh", "win")


def test_once_a_punter_stands_they_draw_no_more(dealt: Callable[..., RoundState]) -> None:
    state = dealt("forced-draw", ["TS", "9D", "TC", "6H", "7S", "8D"], [100, 100])  # 16, 16
    state = apply(state, Stand(HandRef(2)))  # counter-clockwise: seat 2 first
    state = apply(apply(state, Hit(P1)), Deal(parse_card("AC")))  # 17; next round
    assert awaiting(state) == P1  # seat 2 stood: only seat 1 is still drawing
    with pytest.raises(NotYourTurnError):
        apply(state, Hit(HandRef(2)))


def test_draw_order_is_counter_clockwise_banker_last() -> None:
    state = new_round(FORCED, [SeatBet(1, 100), SeatBet(2, 100), SeatBet(3, 100)])
    targets: list[Target | None] = []
    for code in ["2S", "3S", "4S", "5S", "6S", "7S", "8S", "9S"]:
        targets.append(next_card_target(state))
        state = apply(state, Deal(parse_card(code)))
    assert None not in targets  # a card is owed after each of these cards
    assert [t.seat for t in targets if t is not None] == [3, 2, 1, None, 3, 2, 1, None]
    assert targets[3] == Target(None, 0, False)
    assert awaiting(state) == HandRef(3)


def test_timeout_draws_until_over_17(play: Callable[..., dict[str, Any]]) -> None:
    out = play(
        "forced-draw",
        ["TS", "TC", "7H", "8D", "AD", "2C"],  # 17 -> A (1) = 18 -> stands
        [{"seat": 1, "action": "no_decision"}, {"seat": "banker", "action": "check"}],
    )
    assert (out["hands"][0]["cards"], out["hands"][0]["total"]) == (["TS", "7H", "AD"], 18)
    assert out["unused_cards"] == ["2C"]


def test_each_punter_turn_has_its_own_15_s_timer_and_its_expiry_draws_past_17(
    dealt: Callable[..., RoundState],
) -> None:
    state = dealt("forced-draw", ["TS", "9D", "TC", "3H", "4S", "7D"], [100, 100])  # 13, 13
    first = running_clock(state)  # counter-clockwise: seat 2 first
    assert (first.seconds, first.actors) == (15, (HandRef(2),))
    state = apply(apply(state, Hit(HandRef(2))), Deal(parse_card("2C")))  # 15; seat 1's turn
    second = running_clock(state)
    assert second.actors == (P1,) and second.key != first.key
    for action in second.on_expiry:  # seat 1 timed out: drawn until over 17
        state = apply(state, action)
    state = apply(state, Deal(parse_card("AC")))  # 9 + 4 + A = 14 (no Ace value fits)
    third = running_clock(state)  # one card per turn: seat 2 again, with a new 15 s
    assert third.actors == (HandRef(2),) and third.key not in (first.key, second.key)
    state = apply(apply(state, Hit(HandRef(2))), Deal(parse_card("5C")))  # seat 2: 20
    assert next_card_target(state) == Target(1, 1, True)  # seat 1 plays on by itself: 14
    state = apply(state, Deal(parse_card("6C")))  # seat 1: 20, drawn past 17
    assert running_clock(state).actors == (HandRef(2),)  # seat 2 must stand on 20
    state = apply(state, Stand(HandRef(2)))
    assert state.hands[1].stood and state.hands[1].value(FORCED).total == 20  # by itself
    assert awaiting(state) == BANKER


@pytest.mark.parametrize(
    ("punter", "result", "returned"),
    [(["AS", "KD"], "win", 2500), (["AS", "AD"], "win", 2500)],
)
def test_a_punter_natural_shows_at_once_and_wins(
    play: Callable[..., dict[str, Any]], punter: list[str], result: str, returned: int
) -> None:
    out = play("forced-draw", [punter[0], "TC", punter[1], "8D"])
    hand = out["hands"][0]
    assert (hand["result"], hand["returned"], hand["settled_by"]) == (result, returned, "natural")


@pytest.mark.parametrize(
    ("punter", "result"),
    [(["AS", "AD"], "win"), (["AS", "QD"], "push"), (["TS", "9D"], "lose")],
)
def test_a_banker_natural_wins_against_all_but_equal_or_higher(
    play: Callable[..., dict[str, Any]], punter: list[str], result: str
) -> None:
    out = play("forced-draw", [punter[0], "AC", punter[1], "JC"])
    assert (out["hands"][0]["result"], out["hands"][0]["settled_by"]) == (result, "banker_natural")


def test_banker_checks_one_at_more_than_15_then_draws_again(
    play: Callable[..., dict[str, Any]],
) -> None:
    # seats 2 then 1 (counter-clockwise): seat 2 17, seat 1 bust; banker 16
    out = play(
        SEATED_FORCED,
        ["9D", "TS", "TC", "8S", "5H", "6D", "KH", "3C"],
        [
            {"seat": 2, "action": "stand"},
            {"seat": 1, "action": "hit"},  # 15 + K = 25, hidden until checked
            {"seat": "banker", "action": "check", "target": 1},
            {"seat": "banker", "action": "hit"},  # 16 + 3 = 19
            {"seat": "banker", "action": "stand"},
        ],
        [1000, 1000],
    )
    second, first = out["hands"]  # counter-clockwise: seat 2 first
    assert (first["result"], first["settled_by"]) == ("lose", "check")
    assert (second["result"], second["settled_by"]) == ("lose", "showdown")


def test_the_banker_may_not_check_at_15(dealt: Callable[..., RoundState]) -> None:
    state = apply(dealt(SEATED_FORCED, ["TS", "TC", "8H", "5D"]), Stand(P1))  # banker 15
    assert kinds(legal_actions(state, BANKER)) == {"Hit", "NoDecision", "Leave"}
    state = apply(apply(state, Hit(BANKER)), Deal(parse_card("AC")))  # 16
    assert apply(state, Check(1)).phase is Phase.SETTLED


def test_the_house_banker_draws_to_17_then_checks_all(dealt: Callable[..., RoundState]) -> None:
    state = apply(dealt("forced-draw", ["TS", "TC", "8H", "6D"]), Stand(P1))  # banker 16
    assert legal_actions(state, BANKER) == (Hit(BANKER), NoDecision(BANKER))
    state = apply(apply(state, Hit(BANKER)), Deal(parse_card("AC")))  # 17
    assert legal_actions(state, BANKER) == (NoDecision(BANKER), Check(None))


def test_a_beaten_check_policy_checks_a_bust_seat_before_drawing(
    dealt: Callable[..., RoundState],
) -> None:
    data = profile_data("forced-draw")
    data["house_policy"]["check_before_draw"] = "beaten"
    beaten = profile_from_dict(data)
    # seats 2 then 1: seat 2 stands on 17, seat 1 busts (unsettled: shown at the check)
    state = dealt(beaten, ["9D", "TS", "TC", "8S", "5H", "6D"], [100, 100])
    state = apply(apply(state, Stand(HandRef(2))), Hit(P1))
    state = apply(state, Deal(parse_card("KH")))  # seat 1: 25
    step = house_move(state)
    assert (step.kind, step.seat, step.text) == ("check", 1, "check seat 1")  # 16 beats a bust
    with pytest.raises(HousePolicyError, match="check seat 1"):
        apply(state, Hit(BANKER))
    state = apply(state, Check(1))
    assert result_of(state.hands[1]).result.value == "lose"
    assert house_move(state).text == "draw"  # 16 does not beat seat 2's 17: draw on


def test_a_bust_banker_shows_to_every_remaining_punter(play: Callable[..., dict[str, Any]]) -> None:
    out = play(
        "forced-draw",
        ["9D", "TS", "TC", "8S", "5H", "6D", "KH", "KC"],
        [
            {"seat": 2, "action": "stand"},  # 17
            {"seat": 1, "action": "hit"},  # bust, not checked
            {"seat": "banker", "action": "hit"},  # 16 + K: bust
        ],
        [1000, 1000],
    )
    second, first = out["hands"]
    assert (first["classification"], first["result"]) == ("quac", "push")
    assert (second["result"], second["returned"]) == ("win", 2000)


def test_privacy_hides_cards_from_spectators_until_settled(
    dealt: Callable[..., RoundState],
) -> None:
    state = dealt("forced-draw", ["TS", "9D", "TC", "7H", "8S", "7D"], [100, 100])
    state = apply(state, Hide(1))
    view = public_view(state)
    assert [h["cards"] for h in view["hands"]] == [["TS", "7H"], ["XX", "XX"]]  # seats 2, 1
    assert "total" not in view["hands"][1]
    assert state.hands[1].cards == (parse_card("9D"), parse_card("8S"))  # the log keeps them
    state = apply(apply(apply(state, Stand(HandRef(2))), Stand(P1)), Check(None))
    assert public_view(state)["hands"][1]["cards"] == ["9D", "8S"]


def test_privacy_flag_at_bet_time(play: Callable[..., dict[str, Any]]) -> None:
    out = play(
        "forced-draw",
        ["TS", "TC", "8H", "8D"],
        [{"seat": 1, "action": "stand"}, {"seat": "banker", "action": "check"}],
    )
    assert out["hands"][0]["result"] == "push"
    state = new_round(FORCED, [SeatBet(1, 100, hidden=True)])
    assert state.seats[0].hidden


def test_naturals_pay_1_5x_wins_1x(play: Callable[..., dict[str, Any]]) -> None:
    out = play(
        "forced-draw",
        ["AS", "9D", "TC", "KH", "9H", "8D"],  # seat 2 Xì Dách, seat 1 18, banker 18
        [{"seat": 1, "action": "stand"}, {"seat": "banker", "action": "check"}],
        [1000, 1000],
    )
    assert [(h["seat"], h["returned"]) for h in out["hands"]] == [(2, 2500), (1, 1000)]
