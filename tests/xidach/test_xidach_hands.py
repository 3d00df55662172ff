"""Known values for points, the Ace rules, classification and ranking (rules document)."""

from __future__ import annotations

import pytest

from table_service.rules.cards import parse_cards
from table_service.rules.xidach.hands import (
    HandValue,
    Kind,
    Outcome,
    classify,
    compare,
    hand_total,
    rank_key,
)
from table_service.rules.xidach.profile import Profile, load_profile

ROOM, CLASSIC, FORCED = (load_profile(n) for n in ("room", "classic", "forced-draw"))
ALL = (ROOM, CLASSIC, FORCED)


def value(codes: str, profile: Profile = CLASSIC, natural: bool = True) -> HandValue:
    return classify(parse_cards(codes.split()), profile, natural_eligible=natural)


@pytest.mark.parametrize("profile", ALL, ids=lambda p: p.name)
@pytest.mark.parametrize(
    ("codes", "total"),
    [("2S 3H", 5), ("TS 9H", 19), ("JS 5H", 15), ("QS KH", 20), ("KD 6C", 16), ("7S 8H 6D", 21)],
)
def test_points_face_value_and_court_cards_ten(profile: Profile, codes: str, total: int) -> None:
    assert hand_total(parse_cards(codes.split()), profile.ace) == total


def test_classic_ace_as_11_with_two_cards() -> None:
    assert value("AS 9H").total == 20


def test_classic_ace_as_10_with_three_cards() -> None:
    # the rules document's example: A+9+2 = 21 with the Ace as 10
    assert value("AS 9H 2D").total == 21


@pytest.mark.parametrize("profile", [CLASSIC, FORCED], ids=lambda p: p.name)
def test_ace_counts_one_in_four_and_five_card_hands(profile: Profile) -> None:
    assert value("AS 2H 3D 4C", profile).total == 10
    assert value("AS 2H 3D 4C 5S", profile).total == 15
    assert value("AS 9H 2D", profile).total == 21  # three cards: still flexible


def test_room_ace_is_1_or_11_at_any_size() -> None:
    assert value("AS 9H 2D", ROOM).total == 12  # no 10 in room: 11 would bust
    assert value("AS 2H 3D 4C", ROOM).total == 20  # 11 with four cards
    assert value("AS 6H", ROOM).total == 17
    assert value("AS AH 9D", ROOM).total == 21


def test_two_aces_choose_independently() -> None:
    assert value("AS AH 9D").total == 21  # 11 + 1 + 9
    assert value("AS AH", ROOM).total == 12


@pytest.mark.parametrize("profile", ALL, ids=lambda p: p.name)
def test_xi_bang_is_two_dealt_aces(profile: Profile) -> None:
    assert value("AS AH", profile).kind is Kind.XI_BANG
    assert value("AS AH", profile, natural=False).kind is not Kind.XI_BANG  # split hand
    assert value("AS AH 9D", profile).kind is not Kind.XI_BANG


@pytest.mark.parametrize("profile", ALL, ids=lambda p: p.name)
@pytest.mark.parametrize("ten", ["TS", "JS", "QS", "KS"])
def test_xi_dach_is_ace_and_ten_value(profile: Profile, ten: str) -> None:
    assert value(f"AH {ten}", profile).kind is Kind.XI_DACH
    assert value(f"{ten} AH", profile).kind is Kind.XI_DACH


@pytest.mark.parametrize("profile", ALL, ids=lambda p: p.name)
def test_a_later_21_is_not_xi_dach(profile: Profile) -> None:
    v = value("7S 4H KD", profile)
    assert (v.kind, v.total) == (Kind.DU_TUOI, 21)
    assert value("AS 9H", profile).kind is not Kind.XI_DACH


@pytest.mark.parametrize("profile", ALL, ids=lambda p: p.name)
def test_ngu_linh_is_five_cards_at_most_21(profile: Profile) -> None:
    assert value("2S 3H 4D 5C 6S", profile).kind is Kind.NGU_LINH
    assert value("2S 3H 4D 5C TS", profile).kind is Kind.QUAC  # 24
    assert value("2S 3H 4D 5C", profile).kind is Kind.NON  # four cards are not enough


@pytest.mark.parametrize("profile", ALL, ids=lambda p: p.name)
def test_bust_du_tuoi_and_non(profile: Profile) -> None:
    assert value("KS QH 2D", profile).kind is Kind.QUAC
    assert value("KS 6H", profile).kind is Kind.DU_TUOI
    assert value("KS 5H", profile).kind is Kind.NON
    assert value("KS 9H 2C", profile).kind is Kind.DU_TUOI


@pytest.mark.parametrize("profile", ALL, ids=lambda p: p.name)
def test_special_hands_strongest_first(profile: Profile) -> None:
    order = ["AS AH", "AD KH", "2S 3H 4D 5C 6S", "TS 9H 2D", "TS 6H"]
    keys = [rank_key(value(h, profile), profile) for h in order]
    assert keys == sorted(keys, reverse=True)
    assert len(set(keys)) == len(keys)


@pytest.mark.parametrize("profile", ALL, ids=lambda p: p.name)
def test_two_ngu_linh_lower_total_wins_equal_pushes(profile: Profile) -> None:
    low, high = value("2S 3H 4D AC 5S", profile), value("2D 3C 4S 5H 6C", profile)
    assert (low.total, high.total) == (15, 20)
    assert compare(low, high, profile) is Outcome.WIN
    assert compare(high, low, profile) is Outcome.LOSE
    assert compare(high, value("2H 3S 4C 5D 6H", profile), profile) is Outcome.PUSH


@pytest.mark.parametrize("profile", ALL, ids=lambda p: p.name)
def test_higher_wins_lower_loses_equal_pushes(profile: Profile) -> None:
    assert compare(value("TS 9H", profile), value("TD 8H", profile), profile) is Outcome.WIN
    assert compare(value("TS 7H", profile), value("TD 8H", profile), profile) is Outcome.LOSE
    assert compare(value("TS 8C", profile), value("9D 9H", profile), profile) is Outcome.PUSH


@pytest.mark.parametrize("profile", ALL, ids=lambda p: p.name)
def test_xi_bang_beats_xi_dach_and_naturals_push_each_other(profile: Profile) -> None:
    assert compare(value("AS AH", profile), value("AD KH", profile), profile) is Outcome.WIN
    assert compare(value("AC QH", profile), value("AD KH", profile), profile) is Outcome.PUSH
    assert compare(value("AC AH", profile), value("AD AS", profile), profile) is Outcome.PUSH


@pytest.mark.parametrize("profile", [ROOM, CLASSIC], ids=lambda p: p.name)
def test_under_16_ranks_above_a_bust_in_room_and_classic(profile: Profile) -> None:
    assert compare(value("TS 5H", profile), value("TD 8H 7C", profile), profile) is Outcome.WIN


def test_forced_draw_under_16_loses_even_to_a_bust() -> None:
    assert compare(value("TS 5H", FORCED), value("TD 8H 7C", FORCED), FORCED) is Outcome.LOSE
    assert compare(value("TD 8H 7C", FORCED), value("TS 5H", FORCED), FORCED) is Outcome.WIN


def test_bust_against_bust() -> None:
    bust_a, bust_b = value("TS 8H 7C"), value("KS QH 2C")
    assert compare(bust_a, bust_b, ROOM) is Outcome.PUSH
    assert compare(bust_a, bust_b, FORCED) is Outcome.PUSH
    assert compare(bust_a, bust_b, CLASSIC) is Outcome.LOSE
