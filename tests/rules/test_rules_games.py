"""The game registry and the baccarat adapter behind the LiveGame interface."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from table_service.rules.baccarat.paytable import BET_TYPES
from table_service.rules.cards import parse_card, parse_cards
from table_service.rules.game import (
    Bet,
    BettingContext,
    Complete,
    LiveGame,
    Move,
    RoundSetup,
    RulesRefusal,
    Spot,
    drive,
)
from table_service.rules.games import GAMES, UnknownGame, find_game
from table_service.table.config import TableConfig


def test_registry_finds_games_by_name_and_refuses_unknown_ones() -> None:
    assert find_game("baccarat") is GAMES["baccarat"]
    with pytest.raises(UnknownGame) as refused:
        find_game("poker")
    assert refused.value.code == "unknown_game"
    assert isinstance(refused.value, RulesRefusal) and "baccarat" in refused.value.reason


def test_table_config_asks_the_game_about_decks_and_names() -> None:
    with pytest.raises(ValueError, match="unknown game"):
        TableConfig(table_id="t", game="poker")
    with pytest.raises(ValueError, match="6 to 8 decks"):
        TableConfig(table_id="t", decks=5)
    with pytest.raises(ValueError, match="unknown bet types"):
        TableConfig(table_id="t", bet_limits={"main": {"min_stake": 1, "max_stake": 2}})


def _round(bets: tuple[Bet, ...] = ()) -> tuple[LiveGame, Any]:
    game = find_game("baccarat")
    rules = TableConfig(table_id="t").rules
    return game, game.new_round(rules, RoundSetup("r1", 1, bets))


def test_baccarat_positions_then_complete_then_the_settle_command_agrees() -> None:
    game, state = _round((Bet("b1", "a", "tie", 500), Bet("b2", "a", "player", 1000)))
    seen = []
    for card in parse_cards(["2S", "5H", "KD", "TC", "3S"]):  # spec example: tie 5-5
        nxt = game.next(state)
        assert isinstance(nxt, Spot)
        seen.append(nxt.code)
        state = game.apply(state, card)
    assert seen == ["P1", "B1", "P2", "B2", "P3"]
    assert isinstance(game.next(state), Complete)
    live = game.settle(state)
    assert {ln.stake_id: ln.returned for ln in live.lines} == {"b1": 4500, "b2": 1000}
    assert live.outcome["winner"] == "tie"
    setup = RoundSetup("r1", 1, (Bet("b1", "a", "tie", 500), Bet("b2", "a", "player", 1000)))
    replayed = game.recompute(
        TableConfig(table_id="t").rules,
        game.settle_input(state, setup, ()),
    )
    assert [(ln.stake_id, ln.returned, ln.result) for ln in replayed.lines] == [
        (ln.stake_id, ln.returned, ln.result) for ln in live.lines
    ]


def test_a_card_the_round_does_not_take_is_left_over_and_moves_are_refused() -> None:
    game, state = _round()
    replay = drive(game, state, parse_cards(["9S", "2H", "KD", "5C", "7D"]))
    assert [c.code for c in replay.leftover] == ["7D"]
    with pytest.raises(RulesRefusal) as refused:
        game.apply(replay.state, parse_card("7D"))
    assert refused.value.code == "card_not_owed"
    with pytest.raises(RulesRefusal) as refused:
        game.apply(replay.state, Move("seat:1", "hit"))
    assert refused.value.code == "no_decisions"


def test_baccarat_bet_refusals_keep_their_codes() -> None:
    game = find_game("baccarat")
    rules = TableConfig(table_id="t").rules
    ctx = BettingContext(game_number=31)
    with pytest.raises(RulesRefusal) as refused:
        game.check_bet(rules, Bet("b", "a", "perfect_pair", 100), ctx)
    assert refused.value.code == "bet_closed"
    with pytest.raises(RulesRefusal) as refused:
        game.check_bet(rules, Bet("b", "a", "nope", 100), ctx)
    assert refused.value.code == "unknown_bet_type"
    game.check_bet(rules, Bet("b", "a", "player", 100), ctx)
    assert game.burn_count(rules, parse_card("KS")) == 10
    assert game.burn_count(rules, parse_card("AS")) == 1


_STAKES = st.one_of(
    st.integers(-3, 3),
    st.sampled_from([100, 10**12, True, False, 1.0, 2.5, "100", None]),
)


@given(
    bets=st.lists(
        st.tuples(st.sampled_from([*BET_TYPES, "nope", "", "main"]), _STAKES), max_size=40
    ),
    game_number=st.integers(1, 80),
)
@example(bets=[("player", 1), ("player", True), ("player", 1.0), ("tie", 0)], game_number=1)
def test_baccarat_checks_a_request_as_it_checks_each_bet(
    bets: list[tuple[str, Any]], game_number: int
) -> None:
    """check_bets (a request at once, each distinct type and stake asked once) answers
    as check_bet does bet by bet: the same refusal code and reason, or none; a True
    stake is not taken for 1, nor 1.0 for 1."""
    game = find_game("baccarat")
    rules = TableConfig(table_id="t").rules
    ctx = BettingContext(game_number=game_number)
    request = [Bet(f"b{n}", f"a{n % 3}", t, stake) for n, (t, stake) in enumerate(bets)]
    expected: list[tuple[str, str] | None] = []
    for bet in request:
        try:
            game.check_bet(rules, bet, ctx)
            expected.append(None)
        except RulesRefusal as exc:
            expected.append((exc.code, exc.reason))
    got = game.check_bets(rules, request, ctx)
    assert got is not None
    assert [None if r is None else (r.code, r.reason) for r in got] == expected


def test_seat_games_check_each_bet_after_those_before_it() -> None:
    """Blackjack and Xì Dách read the bets accepted before a bet (a seat's main bet, a
    seat's one bet): no check of a request at once."""
    for name in ("blackjack", "xidach"):
        assert GAMES[name].check_bets(None, [], BettingContext(game_number=1)) is None


HOOKS = (
    "seated_bank",
    "check_bets",
    "opening_terms",
    "decks_for",
    "betting_seconds_for",
    "check_seat",
    "betting_complete",
    "bank_taker",
    "fresh_deck_each_round",
    "revealed",
    "settled_early",
    "default_paytable_toml",
    "theoretical_rtp",
    "house_banker",
    "shoe_roads",
    "layout",
)


def test_every_game_answers_every_question_the_table_asks() -> None:
    """What only some games do is declared on the protocol with neutral answers in
    GameBase; every game extends it, and the table finds no hook at run time."""
    import re
    from pathlib import Path

    from table_service.rules.game import GameBase, LiveGame

    declared = set(LiveGame.__annotations__) | {n for n in vars(LiveGame) if not n.startswith("_")}
    assert set(HOOKS) <= declared
    for name, game in GAMES.items():
        assert isinstance(game, GameBase), name
        for hook in HOOKS:
            assert hasattr(type(game), hook), (name, hook)
    base = GameBase()
    assert base.opening_terms(None) == {} and base.bank_taker(None, {}, None, None, {}) == (
        None,
        None,
    )
    assert not base.seated_bank and GAMES["xidach"].seated_bank
    assert base.default_paytable_toml() is None and base.theoretical_rtp(None) == {}
    assert "[bets.player]" in (GAMES["baccarat"].default_paytable_toml() or "")
    for banker in ("house", "seated"):
        config = TableConfig(
            table_id="x", game="xidach", profile="room", game_rules={"banker": banker}
        )
        assert config.game_impl.house_banker(config.rules) is (banker == "house")
    assert not GAMES["baccarat"].house_banker(TableConfig(table_id="b").rules)
    roads = GAMES["baccarat"].shoe_roads(())
    assert roads is not None and roads["counts"]["rounds"] == 0
    assert GAMES["blackjack"].shoe_roads(()) is None
    layout = GAMES["baccarat"].layout(["2S", "5H", "KD", "TC", "3S"])
    assert layout is not None  # baccarat lays its hands out
    hands = layout["hands"]
    assert [(h["hand"], h["total"]) for h in hands] == [("player", 5), ("banker", 5)]
    assert GAMES["xidach"].layout(["2S"]) is None  # its consoles show the game's view
    root = Path(__file__).resolve().parents[2] / "table_service"
    names = "|".join(HOOKS)
    asked = re.compile(rf"""(?:getattr|hasattr)\([^)]*["']({names})["']""")
    found = [
        f"{path.relative_to(root)}: {m.group(1)}"
        for path in root.rglob("*.py")
        if "rules" not in path.relative_to(root).parts[:1]
        for m in asked.finditer(path.read_text(encoding="utf-8"))
    ]
    assert not found, found


def test_no_code_outside_a_game_package_names_a_game() -> None:
    """The table, consoles, regulator and CLI ask the registry and the game's adapter; a
    game's name is written only in its own package (and in the per-game modules that play
    or command one game each: the demo and its command, ``cli/games/<game>.py``)."""
    import re
    from pathlib import Path

    root = Path(__file__).resolve().parents[2] / "table_service"
    named = re.compile(r"""["'](%s)["']""" % "|".join(GAMES))  # noqa: UP031
    found = []
    for path in root.rglob("*.py"):
        parts = path.relative_to(root).parts
        own = (parts[0] == "rules" and parts[1] in GAMES) or (
            parts[:2] == ("cli", "games") and path.stem in GAMES
        )
        if parts[0] == "demo" or parts == ("cli", "demo.py") or own:
            continue
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if named.search(line):
                found.append(f"{'/'.join(parts)}:{n}: {line.strip()}")
    assert not found, "\n".join(found)
