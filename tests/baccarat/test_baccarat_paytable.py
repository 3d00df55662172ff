"""Paytables are data: the default is the rules document's table; files are checked."""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

import pytest

from table_service.rules.baccarat import (
    BET_TYPES,
    PaytableError,
    load_paytable,
    paytable_from_dict,
)

DOC_PAYS: dict[str, dict[str, int | Fraction]] = {
    "player": {"win": 1},
    "banker": {"win": Fraction(95, 100)},
    "banker_no_commission": {"win": 1, "win_on_6": Fraction(1, 2)},
    "tie": {"win": 8},
    "player_pair": {"win": 11},
    "banker_pair": {"win": 11},
    "any_pair": {"win": 5},
    "perfect_pair": {"win": 25},
    "big": {"win": Fraction(1, 2)},
    "small": {"win": Fraction(3, 2)},
    "lucky6": {"two_cards": 12, "three_cards": 20},
    "tiger_tie": {"win": 40},
    "big_tiger": {"win": 50},
    "small_tiger": {"win": 22},
    "tiger_pair": {"identical": 100, "both": 20, "one": 4},
    "panda8": {"win": 25},
    "dragon7": {"win": 40},
    "banker_natural": {"win": 4},
    "player_natural": {"win": 4},
    "either_natural": {"win": Fraction(8, 5)},
    "dragon": {"win": 1},
    "tiger": {"win": 1},
    "dragon_tiger_tie": {"win": 8},
    **{
        f"super_tie_{n}": {"win": pay}
        for n, pay in enumerate([125, 180, 190, 170, 100, 90, 40, 40, 70, 70])
    },
    **{
        f"{side}_dragon_bonus": {
            "natural": 1, "margin_9": 30, "margin_8": 10, "margin_7": 5,
            "margin_6": 3, "margin_5": 2, "margin_4": 1,
        }
        for side in ("player", "banker")
    },
}  # fmt: skip


def test_default_is_the_rules_document() -> None:
    table = load_paytable()
    assert table.offered == BET_TYPES and len(BET_TYPES) == 35
    assert table.decks == 8
    for bet, pays in DOC_PAYS.items():
        assert dict(table.pays(bet)) == {k: Fraction(v) for k, v in pays.items()}, bet
    assert all(isinstance(p, Fraction) for bet in BET_TYPES for p in table.pays(bet).values())


def test_paytable_is_immutable() -> None:
    table = load_paytable()
    with pytest.raises(TypeError):
        table.bets["tie"] = table.bets["player"]  # type: ignore[index]  # read-only: the test
    with pytest.raises(TypeError):
        table.pays("tie")["win"] = Fraction(9)  # type: ignore[index]  # read-only: the test


@pytest.mark.parametrize(
    ("raw", "expected"),
    [(0.95, Fraction(19, 20)), ("0.95", Fraction(19, 20)), ("19/20", Fraction(19, 20)),
     (8, Fraction(8)), ("1.6", Fraction(8, 5))],
)  # fmt: skip
def test_pays_are_exact(raw: object, expected: Fraction) -> None:
    table = paytable_from_dict({"bets": {"banker": {"pays": {"win": raw}}}})
    assert table.pays("banker")["win"] == expected


def test_a_table_file(tmp_path: Path) -> None:
    path = tmp_path / "t.toml"
    path.write_text(
        "decks = 6\n[bets.big]\npays = { win = 0.54 }\ncloses_after = 40\n"
        '[bets.player_dragon_bonus]\npays = { natural = 1, margin_9 = 30, margin_3 = "1/2" }\n',
        encoding="utf-8",
    )
    table = load_paytable(path)
    assert table.decks == 6 and table.offered == ("big", "player_dragon_bonus")
    assert table.closes_after("big") == 40
    assert table.pays("player_dragon_bonus")["margin_3"] == Fraction(1, 2)


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"bets": {"roulette": {"pays": {"win": 35}}}}, "unknown bet ids"),
        ({"bets": {"tie": {"pays": {}}}}, "missing"),
        ({"bets": {"tie": {"pays": {"win": 8, "jackpot": 1}}}}, "unknown keys"),
        ({"bets": {"tie": {"pays": {"win": -8}}}}, "negative"),
        ({"bets": {"tie": {"pays": {"win": "eight"}}}}, "not an exact pay"),
        ({"bets": {"tie": {"pays": {"win": True}}}}, "number or a string"),
        ({"bets": {"tie": {"pays": {"win": 8}, "closes_after": 0}}}, "positive game number"),
        ({"bets": {"tie": {"pays": {"win": 8}}}, "decks": 0}, "decks"),
        ({"bets": {}}, "at least one bet"),
        ({"bets": {"tie": {"pays": {"win": 8}}}, "colour": "red"}, "top-level"),
    ],
)
def test_bad_tables_are_refused(data: dict[str, object], message: str) -> None:
    with pytest.raises(PaytableError, match=message):
        paytable_from_dict(data)


def test_bad_files(tmp_path: Path) -> None:
    with pytest.raises(PaytableError, match="cannot read"):
        load_paytable(tmp_path / "missing.toml")
    broken = tmp_path / "broken.toml"
    broken.write_text("[bets.tie\n", encoding="utf-8")
    with pytest.raises(PaytableError, match="not valid TOML"):
        load_paytable(broken)
