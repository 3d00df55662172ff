"""Profile `classic` (seed 002): one known-value test per rule sentence of the document."""

from __future__ import annotations

import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from table_service.rules.cards import parse_card
from table_service.rules.xidach.actions import (
    BANKER,
    Check,
    Deal,
    HandRef,
    Hit,
    NoDecision,
    Stand,
)
from table_service.rules.xidach.engine import apply, awaiting, legal_actions, new_round
from table_service.rules.xidach.errors import (
    ActionNotAllowedError,
    CheckNotAllowedError,
    DuplicateCardError,
    ForcedDrawError,
    HitOn21Error,
    HousePolicyError,
    NotYourTurnError,
)
from table_service.rules.xidach.profile import load_profile, load_profile_file, profile_from_dict
from table_service.rules.xidach.state import Phase, RoundState, SeatBet
from tests.xidach.conftest import SEATED_KW, house_move, result_of, seated_variant

CLASSIC = load_profile("classic")
# The banker's own rules (stand from 15, check from 15) bind a banker who decides; in a
# live studio the house does not decide, so they are exercised with a seated banker.
SEATED_CLASSIC = seated_variant("classic")
P1, P2 = HandRef(1), HandRef(2)


def test_one_52_card_deck_a_card_cannot_come_twice(dealt: Callable[..., RoundState]) -> None:
    state = dealt("classic", ["TS", "TC", "9H"])
    with pytest.raises(DuplicateCardError):
        apply(state, Deal(parse_card("TS")))


def test_decks_are_configurable(tmp_path: Path, dealt: Callable[..., RoundState]) -> None:
    text = Path("table_service/rules/xidach/profiles/classic.toml").read_text()
    custom = tmp_path / "two-decks.toml"
    custom.write_text(text.replace("decks = 1", "decks = 2", 1))
    assert load_profile_file(custom).decks == 2


def test_two_cards_each_and_up_to_three_more(play: Callable[..., dict[str, Any]]) -> None:
    out = play(
        "classic",
        ["2S", "TC", "3H", "7D", "2C", "3C", "4C"],  # 5, then 7, 10, 14 with five cards
        [{"seat": 1, "action": "hit"}] * 3 + [{"seat": "banker", "action": "check"}],
    )
    assert len(out["hands"][0]["cards"]) == 5
    assert out["hands"][0]["classification"] == "ngu_linh"


def test_a_punter_may_stand_only_at_16_or_more(dealt: Callable[..., RoundState]) -> None:
    state = dealt("classic", ["TS", "TC", "5H", "7D"])  # punter 15
    with pytest.raises(ForcedDrawError):
        apply(state, Stand(P1))
    assert {type(a).__name__ for a in legal_actions(state, 1)} == {"Hit", "NoDecision", "Leave"}
    state = dealt("classic", ["TS", "TC", "6H", "7D"])  # punter 16
    assert apply(state, Stand(P1)).phase is Phase.BANKER


def test_the_banker_may_stand_and_check_only_at_15_or_more(
    dealt: Callable[..., RoundState],
) -> None:
    state = apply(dealt(SEATED_CLASSIC, ["TS", "TC", "9H", "4D"]), Stand(P1))  # banker 14
    for action in (Stand(BANKER), Check(1), Check(None)):
        with pytest.raises((ForcedDrawError, CheckNotAllowedError)):
            apply(state, action)
    state = apply(apply(state, Hit(BANKER)), Deal(parse_card("AH")))  # 14 + A(1) = 15
    assert apply(state, Check(1)).phase is Phase.SETTLED


@pytest.mark.parametrize("second", ["5D", "6D"])
def test_the_house_banker_draws_at_15_and_16(dealt: Callable[..., RoundState], second: str) -> None:
    """The deviation fixed: the house may not stand or check at 15 or 16 (seed 002 §3.4)."""
    state = apply(dealt("classic", ["TS", "TC", "9H", second]), Stand(P1))  # banker 15 / 16
    assert house_move(state).text == "draw"
    assert legal_actions(state, BANKER) == (Hit(BANKER), NoDecision(BANKER))
    for action in (Stand(BANKER), Check(1), Check(None)):
        with pytest.raises(HousePolicyError, match="draw"):
            apply(state, action)
    state = apply(apply(state, Hit(BANKER)), Deal(parse_card("2H")))  # 17 / 18
    assert house_move(state).text == "check all"
    assert legal_actions(state, BANKER) == (NoDecision(BANKER), Check(None))
    for move in (Hit(BANKER), Stand(BANKER), Check(1)):
        with pytest.raises(HousePolicyError, match="check all"):
            apply(state, move)
    done = apply(state, Check(None))
    assert done.phase is Phase.SETTLED and result_of(done.hands[0]).basis.value == "check"


def test_house_banker_timeout_draws_until_17(play: Callable[..., dict[str, Any]]) -> None:
    out = play(
        "classic",
        ["TS", "TC", "9H", "5D", "AH", "AD"],  # banker 15 -> 16 (A as 1) -> 17
        [{"seat": 1, "action": "stand"}, {"seat": "banker", "action": "no_decision"}],
    )
    assert (out["banker"]["cards"], out["banker"]["total"]) == (["TC", "5D", "AH", "AD"], 17)
    assert out["hands"][0]["result"] == "win"


def test_a_hit_on_21_is_refused_with_a_clear_error(dealt: Callable[..., RoundState]) -> None:
    state = dealt("classic", ["AS", "TC", "9H", "7D"])
    state = apply(apply(state, Hit(P1)), Deal(parse_card("2D")))  # A+9+2 = 21, Ace as 10
    with pytest.raises(HitOn21Error) as refused:
        apply(state, Hit(P1))
    assert "21" in refused.value.reason
    assert apply(state, Stand(P1)).phase is Phase.BANKER


def test_a_busted_punter_loses_at_once_even_if_the_banker_busts(
    play: Callable[..., dict[str, Any]],
) -> None:
    out = play(
        "classic",
        ["TS", "9D", "TC", "5H", "8S", "6D", "KH", "KD"],  # punter 15 -> 25; banker 16 -> 26
        [
            {"seat": 1, "action": "hit"},
            {"seat": 2, "action": "stand"},
            {"seat": "banker", "action": "hit"},
        ],
        [1000, 1000],
    )
    first, second = out["hands"]
    assert (first["result"], first["settled_by"]) == ("lose", "bust")
    assert (second["result"], second["returned"]) == ("win", 2000)


def test_a_punter_natural_does_not_draw_and_is_compared_at_once(
    dealt: Callable[..., RoundState],
) -> None:
    state = dealt("classic", ["AS", "9D", "TC", "KH", "9H", "7D"], [1000, 1000])
    natural = state.hands[0]
    assert natural.result is not None and natural.result.returned == 2500
    assert awaiting(state) == P2  # seat 1 takes no turn
    with pytest.raises(NotYourTurnError):
        apply(state, Hit(P1))


@pytest.mark.parametrize(
    ("punter", "result", "returned"),
    [
        (["AS", "AD"], "win", 2500),  # Xì Bàng beats the banker's Xì Dách
        (["AS", "QD"], "push", 1000),  # equal natural
        (["TS", "TD"], "lose", 0),
        (["5S", "4D"], "lose", 0),
    ],
)
def test_a_banker_natural_stops_the_round(
    play: Callable[..., dict[str, Any]], punter: list[str], result: str, returned: int
) -> None:
    out = play("classic", [punter[0], "AC", punter[1], "KC"])  # no decision at all
    assert out["banker"]["classification"] == "xi_dach"
    hand = out["hands"][0]
    assert (hand["result"], hand["returned"], hand["settled_by"]) == (
        result,
        returned,
        "banker_natural",
    )


def test_check_one_punter_then_go_on_drawing(play: Callable[..., dict[str, Any]]) -> None:
    out = play(
        SEATED_CLASSIC,
        ["TS", "9D", "TC", "7H", "8S", "5D", "KH"],  # punters 17, 17; banker 15
        [
            {"seat": 1, "action": "stand"},
            {"seat": 2, "action": "stand"},
            {"seat": "banker", "action": "check", "target": 2},
            {"seat": "banker", "action": "hit"},  # 15 + K = 25: bust
        ],
        [1000, 1000],
    )
    first, second = out["hands"]
    assert (second["result"], second["settled_by"]) == ("win", "check")  # 17 beats 15
    assert (first["result"], first["settled_by"]) == ("win", "showdown")  # banker bust


def test_check_all(play: Callable[..., dict[str, Any]]) -> None:
    out = play(
        "classic",
        ["TS", "9D", "TC", "7H", "8S", "8D"],  # punters 17, 17; banker 18
        [
            {"seat": 1, "action": "stand"},
            {"seat": 2, "action": "stand"},
            {"seat": "banker", "action": "check", "target": "all"},
        ],
        [1000, 1000],
    )
    assert [(h["result"], h["settled_by"]) for h in out["hands"]] == [("lose", "check")] * 2


def test_a_checked_seat_cannot_be_checked_again(dealt: Callable[..., RoundState]) -> None:
    state = dealt(SEATED_CLASSIC, ["TS", "9D", "TC", "7H", "8S", "8D"], [1000, 1000])
    state = apply(apply(apply(state, Stand(P1)), Stand(P2)), Check(2))
    with pytest.raises(ActionNotAllowedError):
        apply(state, Check(2))


def test_the_banker_at_15_beats_a_bust_and_loses_to_16(play: Callable[..., dict[str, Any]]) -> None:
    out = play(
        SEATED_CLASSIC,
        ["TS", "9D", "TC", "6H", "7S", "5D", "KS"],  # 16; 16 -> bust; banker 15
        [
            {"seat": 1, "action": "stand"},
            {"seat": 2, "action": "hit"},
            {"seat": "banker", "action": "stand"},
        ],
        [1000, 1000],
    )
    assert [h["result"] for h in out["hands"]] == ["win", "lose"]


def test_draws_go_round_the_table_one_card_at_a_time(dealt: Callable[..., RoundState]) -> None:
    state = dealt("classic", ["TS", "9D", "TC", "3H", "4S", "7D"], [1000, 1000])  # 13, 13
    state = apply(apply(state, Hit(P1)), Deal(parse_card("2C")))
    assert awaiting(state) == P2  # seat 1 waits for the next round of draws
    state = apply(apply(state, Hit(P2)), Deal(parse_card("2D")))
    assert awaiting(state) == P1


def test_wins_pay_1x_and_naturals_1_5x(play: Callable[..., dict[str, Any]]) -> None:
    out = play(
        "classic",
        ["AS", "TS", "TC", "KH", "9H", "8D"],  # Xì Dách; 19; banker 18
        [{"seat": 2, "action": "stand"}, {"seat": "banker", "action": "check"}],
        [1000, 1000],
    )
    assert [h["returned"] for h in out["hands"]] == [2500, 2000]


def test_the_banker_is_refused_a_hit_on_21_too(dealt: Callable[..., RoundState]) -> None:
    state = apply(dealt(SEATED_CLASSIC, ["TS", "AC", "9H", "5D"]), Stand(P1))  # banker A+5
    state = apply(apply(state, Hit(BANKER)), Deal(parse_card("6C")))  # Ace as 10: 21
    assert state.banker.value(CLASSIC).total == 21
    with pytest.raises(HitOn21Error):
        apply(state, Hit(BANKER))
    assert apply(state, Stand(BANKER)).phase is Phase.SETTLED


def test_a_profile_may_forbid_drawing_after_a_check(dealt: Callable[..., RoundState]) -> None:
    data = tomllib.loads(Path("table_service/rules/xidach/profiles/classic.toml").read_text())
    data["banker"]["draw_after_check"] = False
    data["banker_modes"] = ["house", "seated"]
    strict = profile_from_dict(data)
    state = new_round(strict, [SeatBet(1, 100), SeatBet(2, 100)], **SEATED_KW)
    for code in ["TS", "9D", "TC", "7H", "8S", "5D"]:
        state = apply(state, Deal(parse_card(code)))
    state = apply(apply(apply(state, Stand(P1)), Stand(P2)), Check(1))
    with pytest.raises(ActionNotAllowedError):
        apply(state, Hit(BANKER))
