"""The demo's parts on their own: mistake bag, shoe stack, round log, bot principals."""

from __future__ import annotations

import io
import random
import socket
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rich.console import Console

from hardware_sim.virtual_shoe import CUT, VirtualShoe
from table_service.config import Settings
from table_service.demo.bots import MISTAKE_KINDS, MistakeBag, consumes
from table_service.demo.credentials import TOKENS_FILE, ensure_principals
from table_service.demo.roundlog import RoundLog, positions
from table_service.demo.run import DemoError, DemoOptions, run_demo
from table_service.demo.shoestack import ShoeStack, SupplyExhausted
from table_service.models import Principal
from table_service.principals import authenticate
from table_service.rules.cards import standard_deck
from table_service.runtime import Runtime


# -- mistakes --------------------------------------------------------------------------------
@given(seed=st.integers(0, 2**32 - 1), bags=st.integers(1, 5))
def test_mistake_bag_gives_every_kind_once_per_bag_at_full_rate(seed: int, bags: int) -> None:
    bag = MistakeBag(1.0, random.Random(seed))
    drawn = [bag.draw() for _ in range(bags * len(MISTAKE_KINDS))]
    draws = [kind for kind in drawn if kind is not None]
    assert len(draws) == len(drawn)  # at the full rate every draw is a mistake
    for start in range(0, len(draws), len(MISTAKE_KINDS)):
        assert sorted(draws[start : start + len(MISTAKE_KINDS)]) == sorted(MISTAKE_KINDS)


@given(seed=st.integers(0, 2**32 - 1), missed=st.sets(st.integers(0, 7)))
def test_a_mistake_that_could_not_be_made_is_drawn_again_next(seed: int, missed: set[int]) -> None:
    """A kind owed (drawn, but the round could not show it) comes up the very next round, and
    every kind is still made within the rounds it was put off for."""
    bag = MistakeBag(1.0, random.Random(seed))
    made: list[str] = []
    for i in range(2 * len(MISTAKE_KINDS) + len(missed)):
        kind = bag.draw()
        assert kind is not None
        if i in missed:
            # another kind made instead counts for nothing (a second card that came out
            # after betting closed leaves an exposed card where a double exposure was due)
            bag.made(kind, [k for k in MISTAKE_KINDS if k != kind][:1])
            assert bag.draw() == kind
            bag.owe(kind)
        else:
            bag.made(kind, [kind])
            made.append(kind)
    assert sorted(made) == sorted(MISTAKE_KINDS * 2)


def test_mistake_bag_rate_zero_never_errs_and_rate_is_checked() -> None:
    bag = MistakeBag(0.0, random.Random(1))
    assert all(bag.draw() is None for _ in range(1000))
    with pytest.raises(ValueError, match=r"within 0\.\.1"):
        MistakeBag(1.5, random.Random(1))


def test_mistake_bag_rate_is_about_the_share_of_rounds() -> None:
    bag = MistakeBag(0.25, random.Random(7))
    made = sum(bag.draw() is not None for _ in range(4000))
    assert 850 < made < 1150


# -- the physical shoes ----------------------------------------------------------------------
@settings(max_examples=20)
@given(seed=st.integers(0, 10_000), cut_after=st.integers(20, 400))
def test_each_prepared_shoe_is_full_decks_with_the_cut_card_in_place(
    seed: int, cut_after: int
) -> None:
    device = VirtualShoe("framed", decks=8, seed=seed)
    stack = ShoeStack(device, decks=8, seed=seed, cut_after=cut_after, shoes=3)
    assert stack.starts == [0, 417, 834]
    full = Counter(c.code for c in standard_deck() for _ in range(8))
    for start in stack.starts:
        shoe = stack.cards[start : start + 417]
        assert shoe[cut_after] == CUT
        assert Counter(c for c in shoe if c != CUT) == full
    assert device.remaining == stack.cards


def test_pull_discard_and_exhaustion_through_a_running_shoe() -> None:
    with VirtualShoe("framed", decks=6, seed=5) as device:
        stack = ShoeStack(device, decks=6, seed=5, cut_after=20, shoes=2)
        assert stack.fresh and stack.discard_rest() == 0
        first = stack.pull(scan=False)
        assert first.card == stack.cards[0] and first.shoe_index == 0
        assert not stack.fresh
        assert stack.peek() == stack.cards[1]
        assert stack.discard_rest() == 6 * 52 + 1 - 1
        assert stack.fresh and stack.shoe_index == 1
        assert stack.pull(scan=False).card == stack.cards[313]
        with pytest.raises(SupplyExhausted):
            stack.discard_rest()


def test_a_camera_over_the_shoe_sees_every_card_slid_out_but_not_the_rest_lifted_out() -> None:
    """A camera over the mouth is told of a card slid out past the reader or not (an
    exposed card is still seen), never of the rest of a shoe taken out at a shoe change:
    otherwise it would report cards the table never dealt."""
    with VirtualShoe("framed", decks=6, seed=5) as device:
        seen: list[str] = []
        device.observers.append(seen.append)
        stack = ShoeStack(device, decks=6, seed=5, cut_after=20, shoes=2)
        read = stack.pull()
        unread = stack.pull(scan=False)
        assert seen == [read.card, unread.card]
        assert stack.discard_rest() == 6 * 52 + 1 - 2
        assert seen == [read.card, unread.card]
        assert len(device.dealt) == 6 * 52 + 1
        nxt = stack.pull()
        assert seen == [read.card, unread.card, nxt.card] and nxt.shoe_index == 1


@pytest.mark.parametrize("cut_after", [0, 19, 8 * 52 - 9])
def test_cut_card_outside_the_shoe_is_refused(cut_after: int) -> None:
    with pytest.raises(ValueError, match="cut_after"):
        ShoeStack.check_cut_after(8, cut_after)


# -- round log -------------------------------------------------------------------------------
def test_positions_follow_the_dealing_order() -> None:
    # Player 2+3=5 draws (P3 = 4 → v 4); Banker 10+5=5 with v 4 draws: six cards.
    assert positions(["2S", "TD", "3H", "5C", "4D", "9S"]) == ["P1", "B1", "P2", "B2", "P3", "B3"]
    # Player stands on 7, banker 10+6=6 stands: four cards; anything more is extra.
    assert positions(["3S", "TD", "4H", "6C", "9D"]) == ["P1", "B1", "P2", "B2", "extra"]
    # Player stands on 6, banker 2+2=4 draws: B3 comes fifth.
    assert positions(["3S", "2D", "3H", "2C", "9D"]) == ["P1", "B1", "P2", "B2", "B3"]


def _event(
    seq: int, kind: str, payload: dict[str, Any], round_id: str | None = None
) -> dict[str, Any]:
    return {
        "seq": seq,
        "table_id": "bac-1",
        "round_id": round_id,
        "type": kind,
        "actor": "reader:bac-1-shoe",
        "ts": "2026-11-29T12:00:00.000000Z",
        "payload": payload,
    }


def test_round_log_prints_a_round_from_its_events() -> None:
    out = io.StringIO()
    roundlog = RoundLog(Console(file=out, width=200, color_system=None))
    rid = "bac-1-s2-g7"
    events = [
        _event(1, "betting_opened", {"round_id": rid, "game_number": 7, "closes_at": "x" * 19}),
        _event(
            2,
            "bets_placed",
            {
                "round_id": rid,
                "bets": [
                    {"account": "a", "stake": 500, "type": "player", "bet_id": "1", "key": "k"},
                    {"account": "b", "stake": 1500, "type": "tie", "bet_id": "2", "key": "l"},
                ],
            },
            rid,
        ),
        _event(3, "betting_closed", {"round_id": rid, "reason": "countdown"}, rid),
        _event(4, "card_dealt", {"round_id": rid, "card": "TH", "position": "P1"}, rid),
        _event(
            5,
            "incident_raised",
            {
                "incident_id": "bac-1-i3",
                "kind": "missed_scan",
                "blocking": True,
                "round_id": rid,
                "details": {"index": 1, "card": "5C", "procedure": "rule 6: enter it"},
                "raised_by": "dealer:d",
            },
            rid,
        ),
        _event(
            6,
            "cards_rearranged",
            {"round_id": rid, "cards": ["TH", "5C"], "entered": ["5C"]},
            rid,
        ),
        _event(
            7,
            "incident_resolved",
            {"incident_id": "bac-1-i3", "resolution": "entered", "resolved_by": "supervisor:s"},
            rid,
        ),
        _event(
            8,
            "round_result",
            {
                "round_id": rid,
                "outcome": {
                    "player": {"cards": ["TH", "8S"], "total": 8},
                    "banker": {"cards": ["5C", "2D"], "total": 7},
                    "winner": "player",
                    "natural": True,
                },
            },
            rid,
        ),
        _event(9, "round_settled", {"round_id": rid, "bets": 2, "staked": 2000, "returned": 1000}),
    ]
    for event in events:
        roundlog.on_event(event)
    text = out.getvalue()
    assert "round 1 · bac-1-s2-g7 · game 7 of the shoe" in text
    assert "2 bets from 2 players, 2,000 staked" in text
    assert "s2·g7   card       P1  10♥" in text
    assert "⚠ bac-1-i3 missed_scan [blocking: table paused]" in text
    assert "rule 6: enter it" in text
    assert "in shoe order: P1 10♥  B1 5♣" in text
    assert "✔ bac-1-i3 by supervisor:s: entered" in text
    assert "PLAYER wins 8–7   P 10♥ 8♠  B 5♣ 2♦" in text
    assert "(natural)" in text
    assert "returned 1,000 (house +1,000)" in text
    assert roundlog.totals.rounds_settled == 1
    assert roundlog.totals.incidents == {"bac-1-i3": "missed_scan"}
    assert roundlog.totals.resolved == {"bac-1-i3": "supervisor:s"}


def test_a_card_is_consumed_only_by_the_readers_record_of_it() -> None:
    dealt = _event(5, "card_dealt", {"card": "5C"})
    assert consumes("5C", dealt)
    assert not consumes("5D", dealt)
    assert not consumes("5C", {**dealt, "actor": "supervisor:s"})
    assert consumes("5C", _event(6, "card_set_aside", {"card": "5C"}))
    assert consumes(CUT, _event(7, "cut_card_drawn", {"shoe_no": 1}))
    assert not consumes(CUT, dealt)


# -- principals ------------------------------------------------------------------------------
def test_bot_principals_are_reused_and_replaced_when_their_tokens_are_lost(
    tmp_path: Path,
) -> None:
    data = tmp_path / "data"
    runtime = Runtime.from_settings(
        Settings(data_dir=data, database_url=f"sqlite:///{tmp_path / 'db.sqlite'}"), upgrade=True
    )
    try:
        first = ensure_principals(runtime, data, "bac-1")
        assert {p.role for p in first.values()} == {"dealer", "supervisor", "operator", "regulator"}
        assert ensure_principals(runtime, data, "bac-1") == first
        with runtime.sessions() as s:
            dealer = authenticate(s, first["dealer"].token)
            assert dealer is not None and dealer.table_id == "bac-1"
        (data / TOKENS_FILE).unlink()
        second = ensure_principals(runtime, data, "bac-1")
        assert second["supervisor"].name == "demo-supervisor-2"
        with runtime.sessions() as s:
            assert authenticate(s, first["supervisor"].token) is None  # the lost one revoked
            lost = s.get(Principal, "demo-supervisor")
            assert lost is not None and lost.revoked_at is not None
            assert authenticate(s, second["supervisor"].token) is not None
    finally:
        runtime.close()


# -- start-up --------------------------------------------------------------------------------
async def test_a_taken_port_is_refused_before_anything_starts(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        options = DemoOptions(port=taken.getsockname()[1], data_dir=tmp_path / "data")
        with pytest.raises(DemoError, match="cannot listen on"):
            await run_demo(options, Console(file=io.StringIO()))
    assert not (tmp_path / "data").exists()


# -- the blackjack players' basic strategy ---------------------------------------------------
ALL_MOVES = {"hit", "stand", "double", "split", "surrender", "insurance"}


@pytest.mark.parametrize(
    ("cards", "up", "move"),
    [
        (["TS", "7H"], "6D", "stand"),  # hard 17: never doubled
        (["TS", "7H"], "AD", "stand"),
        (["KS", "QH"], "TD", "stand"),  # 20: never split, never surrendered
        (["6S", "5H"], "AD", "double"),  # 11 doubles against anything (original bets only)
        (["5S", "4H"], "2D", "hit"),  # 9 against a 2
        (["5S", "4H"], "4D", "double"),
        (["AS", "AH"], "TD", "split"),
        (["8S", "8H"], "TD", "split"),
        (["9S", "7H"], "9D", "surrender"),  # hard 16 against a 9
        (["9S", "7H"], "7D", "hit"),
        (["TS", "2H"], "4D", "stand"),
        (["TS", "2H"], "3D", "hit"),
        (["AS", "7H"], "9D", "hit"),  # soft 18 against a 9
        (["AS", "7H"], "4D", "double"),
        (["AS", "7H", "TC"], "4D", "stand"),  # hard 18 now
        (["5S", "5H"], "6D", "double"),  # fives are a ten
    ],
)
def test_basic_strategy_known_values(cards: list[str], up: str, move: str) -> None:
    from table_service.demo.strategy import basic_move

    assert basic_move(cards, up, ALL_MOVES) == move


def test_basic_strategy_falls_back_when_a_double_is_not_offered() -> None:
    from table_service.demo.strategy import basic_move

    assert basic_move(["AS", "7H"], "4D", {"hit", "stand"}) == "stand"  # soft 18
    assert basic_move(["6S", "5H"], "AD", {"hit", "stand"}) == "hit"
    assert basic_move(["9S", "7H"], "9D", {"hit", "stand"}) == "hit"
    assert basic_move(["9S", "7H"], "9D", set()) is None


CARD_CODES = [r + s for r in "A23456789TJQK" for s in "SHDC"]


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.sampled_from(CARD_CODES), min_size=2, max_size=5),
    st.sampled_from(CARD_CODES),
    st.sets(st.sampled_from(sorted(ALL_MOVES)), min_size=1),
)
def test_basic_strategy_picks_a_legal_move_and_never_a_foolish_one(
    cards: list[str], up: str, legal: set[str]
) -> None:
    from table_service.demo.strategy import basic_move, deviation, hand_value

    move = basic_move(cards, up, legal)
    total, soft = hand_value(cards)
    assert move in legal - {"insurance"} or (legal == {"insurance"} and move is None)
    if {"hit", "stand"} <= legal:  # as at a real table: hitting and standing are offered
        if move == "surrender":
            assert total in (15, 16) and not soft
        if move == "double":
            assert total <= 11 or (soft and total <= 18)
        if total >= 19 or (total == 17 and not soft):
            assert move not in ("hit", "double", "surrender")
    hunch = deviation(move, legal, total)
    assert hunch in legal | {None}
    assert hunch not in ("double", "surrender") or hunch == move
