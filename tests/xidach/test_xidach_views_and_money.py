"""What spectators and the dealer see, checks paid at once, and the commission line."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from table_service.rules.cards import parse_card
from table_service.rules.xidach.actions import BANKER, Check, Deal, HandRef, Hide, Hit, Stand
from table_service.rules.xidach.engine import apply, new_round
from table_service.rules.xidach.errors import ProfileError
from table_service.rules.xidach.profile import Profile, load_profile, profile_from_dict
from table_service.rules.xidach.settlement import settle, settled_so_far
from table_service.rules.xidach.state import RoundState, SeatBet
from table_service.rules.xidach.view import view
from tests.xidach.conftest import profile_data, seated_variant

P1, P2 = HandRef(1), HandRef(2)


def with_commission(name: str, share: list[int]) -> Profile:
    data = profile_data(name)
    data["payouts"]["commission"] = share
    return profile_from_dict(data)


def test_a_punter_natural_result_waits_for_the_banker_reveal_on_the_public_view(
    dealt: Callable[..., RoundState],
) -> None:
    # room: seat 1 Xì Dách is compared at once with the banker's A + K: a push that
    # would tell spectators the face-down card is an Ace
    state = dealt("room", ["AS", "TS", "AC", "KH", "9H", "KD"], [100, 100])
    assert state.hands[0].result is not None  # decided (and payable) at once
    public = view(state, "public")
    assert public["banker"]["cards"] == ["XX", "KD"] and "total" not in public["banker"]
    assert "result" not in public["hands"][0]
    assert public["hands"][0]["classification"] == "xi_dach"
    dealer = view(state, "dealer")
    assert dealer["banker"]["cards"] == ["AC", "KD"] and dealer["banker"]["total"] == 21
    assert dealer["hands"][0]["result"] == "push"


def test_the_dealer_view_names_the_house_move(dealt: Callable[..., RoundState]) -> None:
    state = apply(dealt("classic", ["TS", "TC", "9H", "5D"]), Stand(P1))  # banker 15
    assert view(state, "dealer")["house_move"] == "draw"
    state = apply(apply(state, Hit(BANKER)), Deal(parse_card("2H")))
    assert view(state, "dealer")["house_move"] == "check all"
    assert "house_move" not in view(state, "public")


def test_a_hidden_seat_shows_face_down_until_its_check(dealt: Callable[..., RoundState]) -> None:
    profile = seated_variant("forced-draw")
    state = dealt(profile, ["TS", "9D", "TC", "7H", "8S", "7D"], [100, 100])  # banker 17
    state = apply(apply(apply(state, Hide(1)), Stand(P2)), Stand(P1))
    assert view(state, "public")["hands"][1]["cards"] == ["XX", "XX"]
    state = apply(state, Check(1))  # seat 1 (17) checked: push, shown at once
    shown = view(state, "public")["hands"][1]
    assert (shown["cards"], shown["result"], shown["settled_by"]) == (["9D", "8S"], "push", "check")


def test_a_check_is_paid_at_once_and_the_final_settlement_agrees(
    dealt: Callable[..., RoundState],
) -> None:
    profile = seated_variant("classic")
    state = dealt(profile, ["TS", "9D", "TC", "7H", "8S", "5D"], [1000, 400])  # 17, 17; 15
    state = apply(apply(state, Stand(P1)), Stand(P2))
    assert settled_so_far(state) == ()
    state = apply(state, Check(2))  # a seated banker's winner waits for the end (cover)
    assert settled_so_far(state) == ()
    house = apply(
        apply(
            new_round(load_profile("classic"), [SeatBet(1, 1000), SeatBet(2, 400)]),
            Deal(parse_card("TS")),
        ),
        Deal(parse_card("9D")),
    )
    for code in ["TC", "7H", "8S", "7D"]:  # banker 17 against the house: check all
        house = apply(house, Deal(parse_card(code)))
    house = apply(apply(house, Stand(P1)), Stand(P2))
    house = apply(house, Check(None))
    early = settled_so_far(house)
    assert [(h.seat, h.result.value, h.returned) for h in early] == [
        (1, "push", 1000),
        (2, "push", 400),
    ]
    assert early == settle(house).hands


def test_commission_is_its_own_line_rounded_down() -> None:
    profile = with_commission("classic", [5, 100])
    state = new_round(profile, [SeatBet(1, 1010), SeatBet(2, 1000)])
    for code in ["AS", "9D", "TC", "KH", "9H", "7D"]:  # seat 1 Xì Dách, seat 2 18, house 17
        state = apply(state, Deal(parse_card(code)))
    state = apply(apply(state, Stand(P2)), Check(None))
    natural, plain = settle(state).hands
    assert (natural.owed, natural.commission, natural.returned) == (
        1010 + 1515,
        1515 * 5 // 100,  # 75.75 rounded down
        1010 + 1515 - 75,
    )
    assert (plain.owed, plain.commission, plain.returned) == (2000, 50, 1950)
    assert settle(state).total_commission == 125


def test_commission_on_a_seated_bank_comes_from_the_win_actually_paid(
    play: Callable[..., dict[str, Any]],
) -> None:
    profile = with_commission("room", [10, 100])
    out = play(
        profile,
        ["TS", "TD", "TH", "TC", "9S", "9D", "9H", "7D"],  # three 19s, banker 17
        [{"seat": s, "action": "stand"} for s in (1, 2, 3)]
        + [{"seat": "banker", "action": "stand"}],
        [1000, 1000, 1000],
        banker={"seat": 5, "balance": 1000},
        table={"min_bet": 100, "max_bet": 2000},
    )
    # pro rata: each win of 1000 is paid 333; the house keeps 10 % of 333 = 33
    assert [(h["shortfall"], h["commission"], h["returned"]) for h in out["hands"]] == [
        (667, 33, 1300)
    ] * 3
    assert out["bank"]["balance_after"] == 1
    assert [b["commission"] for b in out["bets"]] == [33, 33, 33]


@pytest.mark.parametrize(
    ("section", "field", "value", "message"),
    [
        ("payouts", "commission", [1, 1], "commission"),
        ("payouts", "commission", [-1, 100], "commission"),
        ("house_policy", "draw_below", 23, "draw_below"),
        ("house_policy", "then", "sideways", "then"),
        ("house_policy", "check_before_draw", "beaten", None),  # fine in classic
        ("punter", "timer_s", 0, "timer_s"),
        ("punter", "no_bet", "kicked", "no_bet"),
    ],
)
def test_new_profile_fields_are_validated(
    section: str, field: str, value: object, message: str | None
) -> None:
    data = profile_data("classic")
    data[section][field] = value
    if message is None:
        assert profile_from_dict(data).house_policy.check_before_draw == "beaten"
        return
    with pytest.raises(ProfileError, match=message):
        profile_from_dict(data)


def test_room_refuses_check_all_as_its_house_policy() -> None:
    data = profile_data("room")
    data["house_policy"]["then"] = "check_all"
    with pytest.raises(ProfileError, match="without checks"):
        profile_from_dict(data)


def test_deal_direction_is_its_own_setting() -> None:
    data = profile_data("forced-draw")
    data["deal_direction"] = "clockwise"  # deal clockwise, play counter-clockwise
    profile = profile_from_dict(data)
    state = new_round(profile, [SeatBet(1, 100), SeatBet(2, 100)])
    assert [t.seat for t in state.queue] == [1, 2, None, 1, 2, None]
    assert [s.seat for s in state.seats] == [2, 1]
