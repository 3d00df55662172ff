"""Live Xì Dách at the table, through decide/apply (pure, controlled clock), per profile."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from audit.store import StoredEvent
from table_service.rules.games import find_game
from table_service.rules.xidach.replay import handle_line
from table_service.table import commands as c
from table_service.table.audience import Audience
from table_service.table.config import TableConfig
from table_service.table.errors import NotYourTurn, RulesRefused, WrongPhase
from table_service.table.recall import record_of
from table_service.table.state import settle_input_of
from table_service.table.stream import dealer_view
from table_service.table.view import (
    DEALER_VIEWER,
    Context,
    ReadModel,
    Viewer,
    face_down,
    table_view,
    view,
)
from tests.table.table_helpers import RICH, Harness


class Table(Harness):
    def turn(self) -> dict[str, Any]:
        """The turn now: a test that reads it expects one (a decision is awaited)."""
        turn: dict[str, Any] | None = self.state.public_summary()["round"]["turn"]
        assert turn is not None, "no turn now"
        return turn

    def results(self) -> dict[str, int]:
        return {r["bet_id"]: r["returned"] for r in self.events("bets_settled")[-1]["results"]}


def xtable(profile: str, *seats: int, banker: str = "house", **rules: Any) -> Table:
    config = TableConfig(
        table_id="xd",
        game="xidach",
        profile=profile,
        game_rules={"banker": banker, **rules},
        limits={"min_stake": 100, "max_stake": 2000},  # the room's bets
        bet_limits={"bank": {"min_stake": 100, "max_stake": 10**9}},  # what a bank may hold
    )
    h = Table(config)
    h.run(c.InsertShoe())
    for n in seats:
        h.run(c.TakeSeat(n, f"p{n}"))
    h.run(c.OpenBetting())
    return h


def test_a_table_takes_its_decks_from_the_profile_and_records_the_edge_it_opens_with() -> None:
    config = TableConfig(table_id="xd", game="xidach", profile="forced-draw")
    assert config.decks == 1 and config.snapshot()["profile"] == "forced-draw"
    assert config.betting_seconds == 20  # seed 001: a round starts 20 s after the last
    h = Table(config)
    terms = h.events("table_opened")[0]["terms"]
    assert (terms["house_edge_ppm"], terms["house_edge"]) == (-23416, "-2.3416%")
    assert terms["profile"] == "forced-draw"
    with pytest.raises(ValueError, match="deals from 1 deck"):
        TableConfig(table_id="xd", game="xidach", profile="room", decks=8)
    with pytest.raises(ValueError, match="unknown profile"):
        TableConfig(table_id="xd", game="xidach", profile="vegas")


def test_a_classic_round_the_house_draws_to_17_and_checks_all_then_a_fresh_deck() -> None:
    h = xtable("classic", 1, 2)
    h.seat_bet("p1", "main", 1000, 1)
    h.seat_bet("p2", "main", 500, 2)
    h.run(c.CloseBetting())
    positions = [
        h.deal(card).drafts[0].payload["position"] for card in ["9S", "5H", "7D", "AS", "6H", "8D"]
    ]
    assert positions == ["S1H1", "S2H1", "BANKER", "S1H1", "S2H1", "BANKER"]
    assert h.turn()["actors"] == ["seat:1"] and h.turn()["seconds"] == 30
    with pytest.raises(NotYourTurn):
        h.act("seat:2", "hit", "p2")
    h.act("seat:1", "hit", "p1")
    h.deal("2C")  # 9 + A + 2 = 21 (Ace as 10)
    h.act("seat:2", "hit", "p2")
    h.deal("KC")  # 5 + 6 + K = 21
    h.act("seat:1", "stand", "p1")
    h.act("seat:2", "stand", "p2")
    turn = h.turn()
    assert turn["actors"] == ["banker"]
    with pytest.raises(RulesRefused) as refused:
        h.act("banker", "stand", "banker")  # the house at 15 may not stand
    assert refused.value.code == "house_policy"
    h.act("banker", "hit", "banker")
    h.deal("3H")  # 18
    decision = h.act("banker", "check", "banker", target="all")
    assert h.types(decision)[-2:] == ["round_settled", "shoe_ended"]
    assert h.events("shoe_ended")[-1]["reason"] == "one deck: a fresh deck each round"
    assert h.results() == {"b1": 2000, "b2": 1000}
    assert h.state.round is not None
    request = settle_input_of(h.state.round)
    assert request is not None
    answer = handle_line(request, None)  # `livetable settle xidach` on the recorded round
    assert {b["id"]: b["returned"] for b in answer["bets"]} == h.results()
    again = find_game("xidach").recompute(h.config.rules, request)
    assert {ln.stake_id: ln.returned for ln in again.lines} == h.results()
    with pytest.raises(Exception, match="shoe"):
        h.run(c.OpenBetting())  # the next round needs a fresh deck first
    h.run(c.InsertShoe())
    h.run(c.OpenBetting())
    assert h.replayed() == h.state


def test_room_shared_timer_runs_out_and_plays_every_punter_then_unbet_seats_are_freed() -> None:
    h = xtable("room", 1, 2, 3)
    h.seat_bet("p1", "main", 100, 1)
    h.seat_bet("p2", "main", 100, 2)  # seat 3 does not bet: removed after the round (seed 001)
    h.run(c.CloseBetting())
    h.deal("TS", "TD", "TC", "TH", "3H", "7D")  # seat 1: 20, seat 2: 13, banker 17
    turn = h.turn()
    assert (turn["actors"], turn["clock"], turn["seconds"]) == (["seat:1"], "punters", 30)
    h.act("seat:1", "stand", "p1")
    assert h.turn()["clock"] == "punters" and h.turn()["deadline"] == turn["deadline"]
    with pytest.raises(WrongPhase):
        h.run(c.TurnTimeout("punters"))  # the shared 30 s are not over
    h.tick(30)
    h.run(c.TurnTimeout("punters"))
    assert h.events("action_taken")[-1]["auto"] == "timeout"
    h.deal("4C")  # seat 2: 17, stands by itself
    turn = h.turn()
    assert (turn["actors"], turn["clock"], turn["seconds"]) == (["banker"], "banker", 20)
    h.act("banker", "stand", "banker")
    assert h.results() == {"b1": 200, "b2": 100}
    released = [(r["seat"], r["account"]) for r in h.events("seat_released")]
    assert released == [(3, "p3")]


def test_a_seated_bank_is_debited_at_the_close_and_credited_with_the_settlement() -> None:
    h = xtable("room", 1, 2, 9, banker="seated")
    h.seat_bet("p1", "main", 1000, 1)
    h.seat_bet("p2", "main", 2000, 2)
    assert h.seat_bet("p9", "bank", 9999, 9)["error"] == "bankroll"  # 5x the max bet: 10000
    assert h.seat_bet("p9", "bank", 10_000, 9)["status"] == "placed"
    assert h.events("betting_closed")[-1]["reason"] == "every seated player has bet"
    h.deal("AS", "TD", "9C", "KH", "9H", "8D")  # seat 1 Xì Dách, seat 2 19, banker 17
    h.act("seat:2", "stand", "p2")
    h.act("banker", "stand", "p9")
    assert h.results() == {"b1": 2500, "b2": 4000, "b4": 10_000 - 1500 - 2000}
    placed = {b["bet_id"]: b["account"] for e in h.events("bets_placed") for b in e["bets"]}
    assert placed["b4"] == "p9"  # the bank is the banker's own account


def test_a_forced_draw_hidden_bet_deals_its_cards_face_down() -> None:
    h = xtable("forced-draw", 1, 2)
    h.seat_bet("p1", "hidden", 100, 1)
    h.seat_bet("p2", "main", 100, 2)
    h.run(c.CloseBetting())
    dealt = [h.deal(card).drafts[0].payload for card in ["TS", "9D", "TC", "7H", "8S", "7D"]]
    assert [(p["position"], p.get("face_up", True)) for p in dealt] == [
        ("S2H1", True),
        ("S1H1", False),
        ("BANKER", False),
        ("S2H1", True),
        ("S1H1", False),
        ("BANKER", True),
    ]


def test_a_misdeal_voids_and_refunds_every_stake_once() -> None:
    h = xtable("room", 1)
    h.seat_bet("p1", "main", 1000, 1)
    assert h.current_round().phase == "dealing"  # all have bet
    h.deal("8S", "6D", "8C")
    h.run(c.RaiseIncident("misdeal", {"note": "card to the wrong seat"}), "supervisor:s1")
    refunds = [r for e in h.events("bets_refunded") for r in e["refunds"]]
    assert [(r["bet_id"], r["returned"]) for r in refunds] == [("b1", 1000)]
    assert h.current_round().phase == "voided"


def test_a_commission_is_recorded_on_the_settled_line_and_out_of_the_return() -> None:
    text = Path("table_service/rules/xidach/profiles/classic.toml").read_text()
    taxed = text.replace("commission = [0, 100]", "commission = [5, 100]")
    h = Table(
        TableConfig(
            table_id="xd",
            game="xidach",
            game_rules={"profile_toml": taxed},
            limits={"min_stake": 100, "max_stake": 2000},
        )
    )
    assert h.events("table_opened")[0]["terms"]["commission"] == "1/20"
    h.run(c.InsertShoe())
    h.run(c.TakeSeat(1, "p1"))
    h.run(c.OpenBetting())
    h.seat_bet("p1", "main", 1000, 1)
    h.run(c.CloseBetting())
    h.deal("TS", "7C", "9H", "KD")  # 19 against the house's 17
    h.act("seat:1", "stand", "p1")
    h.act("banker", "check", "banker", target="all")
    (line,) = h.events("bets_settled")[-1]["results"]
    assert (line["returned"], line["commission"], line["result"]) == (1950, 50, "win")


def test_a_check_settles_that_punter_at_once_while_the_round_goes_on() -> None:
    text = Path("table_service/rules/xidach/profiles/forced-draw.toml").read_text()
    beaten = text.replace('check_before_draw = "none"', 'check_before_draw = "beaten"')
    h = Table(TableConfig(table_id="xd", game="xidach", game_rules={"profile_toml": beaten}))
    h.run(c.InsertShoe())
    for n in (1, 2):
        h.run(c.TakeSeat(n, f"p{n}"))
    h.run(c.OpenBetting())
    h.seat_bet("p1", "main", 1000, 1)
    h.seat_bet("p2", "main", 1000, 2)
    h.run(c.CloseBetting())
    h.deal("9D", "TS", "TC", "8S", "5H", "6D")  # seat 2: 17, seat 1: 15, banker 16
    h.act("seat:2", "stand", "p2")
    h.act("seat:1", "hit", "p1")
    h.deal("KH")  # seat 1: 25, a bust forced-draw keeps hidden until checked
    assert h.state.public_summary()["round"]["dealer_view"]["house_move"] == "check seat 1"
    decision = h.act("banker", "check", "banker", target="1")
    assert "bets_settled" in h.types(decision) and "round_settled" not in h.types(decision)
    early = h.events("bets_settled")[-1]
    assert early["early"] is True
    assert [(r["bet_id"], r["result"], r["returned"]) for r in early["results"]] == [
        ("b1", "lose", 0)
    ]
    h.act("banker", "hit", "banker")
    decision = h.deal("3C")  # 19
    h.act("banker", "check", "banker", target="all")
    final = h.events("bets_settled")[-1]["results"]
    assert [(r["bet_id"], r["result"], r["returned"]) for r in final] == [("b2", "lose", 0)]
    assert h.current_round().phase == "settled"
    assert h.replayed() == h.state


def test_a_missed_card_entered_by_the_supervisor_keeps_the_hole_card_off_the_public_stream() -> (
    None
):
    from audit.store import StoredEvent
    from table_service.table.stream import public_view

    h = xtable("room", 1)
    h.seat_bet("p1", "main", 1000, 1)
    assert h.current_round().phase == "dealing"  # all have bet
    h.deal("TS")  # seat 1; the banker's face-down card was pulled but not scanned
    # the shoe's sequence numbers show it (rules/xidach.md: a missed card the reader
    # reports is put right by entering it; the dealer's re-arranging kinds are baccarat's)
    h.run(c.ReaderFault("missed_card_suspected", {"expected_seq": 2, "missing": 1, "seq": 3}))
    incident = next(iter(h.state.incidents))
    h.run(c.ResolveIncident(incident, "entered by hand", entered=(c.EnteredCard("KC", 1),)))
    payload = h.events("cards_rearranged")[-1]
    assert payload["cards"] == ["TS", "KC"] and payload["face_down"] == [1]
    event = StoredEvent(1, "xd", "r", "cards_rearranged", "test", "t", payload, "", "")
    public = public_view(event)
    assert public is not None and public["data"]["cards"] == ["TS", None]
    h.deal("9H", "7D")  # the round goes on from the entered card: seat 1 19, banker K 7
    assert h.turn()["actors"] == ["seat:1"]
    assert h.state.public_summary()["round"]["view"]["banker"]["cards"] == ["XX", "7D"]


def test_leaving_before_the_reveal_a_punter_loses_and_a_seated_banker_pays_everyone() -> None:
    h = xtable("room", 1, 2, 3, 9, banker="seated")
    h.seat_bet("p1", "main", 1000, 1)
    h.seat_bet("p2", "main", 500, 2)
    h.seat_bet("p3", "main", 200, 3)
    h.seat_bet("p9", "bank", 20_000, 9)  # everyone has bet: betting closes
    h.deal("TS", "5D", "9C", "KC", "7H", "2H", "8D", "4S")  # 20, 12, 11; banker K 8
    assert h.turn()["actors"] == ["seat:1"]
    h.act("seat:3", "leave", "p3")  # out of turn: leaving is always open, and loses
    h.act("seat:1", "stand", "p1")
    with pytest.raises(NotYourTurn):
        h.act("banker", "stand", "p9")  # the banker's decisions wait for its turn
    h.act("banker", "leave", "p9")  # before revealing: every punter still in wins 1x
    assert h.results() == {"b1": 2000, "b2": 1000, "b3": 0, "b4": 20_000 - 1000 - 500 + 200}
    released = [r["seat"] for r in h.events("seat_released")]
    assert released == [3, 9]  # the punter and the banker who left


def test_nobody_holds_the_bank_the_room_closes_and_every_stake_goes_back() -> None:
    h = xtable("room", 1, 2, 9, banker="seated")
    h.seat_bet("p1", "main", 1000, 1)
    h.seat_bet("p2", "main", 500, 2)
    assert h.seat_bet("p9", "bank", 5000, 9)["error"] == "bankroll"  # 5x the maximum: 10000
    decision = h.run(c.CloseBetting())
    assert "round_settled" in h.types(decision)
    assert h.results() == {"b1": 1000, "b2": 500}
    assert h.events("round_result")[-1]["outcome"]["room_closed"] is True
    assert h.state.round is not None
    request = settle_input_of(h.state.round)
    assert request is not None
    again = find_game("xidach").recompute(h.config.rules, request)
    assert {ln.stake_id: ln.returned for ln in again.lines} == h.results()


def test_a_banker_keeps_the_bank_with_less_than_the_take_requirement_until_under_the_minimum() -> (
    None
):
    h = xtable("room", 1, 2, 9, banker="seated")
    h.seat_bet("p1", "main", 2000, 1)
    h.seat_bet("p2", "main", 2000, 2)
    h.seat_bet("p9", "bank", 10_000, 9)  # exactly 5x the maximum bet
    h.deal("TS", "TD", "7C", "KH", "9H", "TC")  # 20, 19 against the banker's 17
    h.act("seat:1", "stand", "p1")
    h.act("seat:2", "stand", "p2")
    h.act("banker", "stand", "p9")
    assert h.results()["b3"] == 6000  # paid 4000: the bank holds 6000, still over 100
    assert h.state.bank_seat == 9
    h.run(c.InsertShoe())
    h.run(c.OpenBetting())
    refused = h.seat_bet("p1", "bank", 20_000, 1)
    assert refused["error"] == "bank_kept"  # seat 9 keeps the bank
    assert h.seat_bet("p9", "bank", 6000, 9)["status"] == "placed"  # under 5x, but kept
    assert h.replayed() == h.state


def test_a_card_the_one_deck_cannot_hold_is_a_blocking_incident_never_dealt() -> None:
    h = xtable("classic", 1)
    h.seat_bet("p1", "main", 1000, 1)
    h.run(c.CloseBetting())
    h.deal("TS", "9C")
    decision = h.deal("TS")  # a second ten of spades from one deck: a foreign card
    assert "incident_raised" in h.types(decision) and h.state.paused
    assert h.current_round().cards == ("TS", "9C")  # not dealt
    incident = next(iter(h.state.incidents))
    h.run(c.ResolveIncident(incident, "foreign card removed"))
    h.deal("5H", "8D")  # seat 1: 15, house 17
    assert h.turn()["actors"] == ["seat:1"]


def test_a_table_file_may_name_its_own_profile_file(tmp_path: Path) -> None:
    from table_service.table.config import ConfigError, load_tables

    text = Path("table_service/rules/xidach/profiles/classic.toml").read_text()
    (tmp_path / "house.toml").write_text(
        text.replace("commission = [0, 100]", "commission = [3, 100]")
    )
    (tmp_path / "tables.toml").write_text(
        '[[tables]]\ntable_id = "xd-own"\ngame = "xidach"\nprofile_file = "house.toml"\n'
    )
    (table,) = load_tables(tmp_path / "tables.toml")
    assert (table.decks, table.rules.profile.name) == (1, "classic")
    assert str(table.rules.profile.payouts.commission) == "3/100"
    (tmp_path / "tables.toml").write_text(
        '[[tables]]\ntable_id = "xd-own"\ngame = "xidach"\nprofile_file = "missing.toml"\n'
    )
    with pytest.raises(ConfigError, match="profile_file"):
        load_tables(tmp_path / "tables.toml")


def test_the_hole_card_is_turned_for_the_public_at_the_banker_turn() -> None:
    h = xtable("room", 1, 2)
    h.seat_bet("p1", "main", 100, 1)
    h.seat_bet("p2", "main", 100, 2)
    h.deal("TS", "TD", "6C", "TH", "9H", "KD")  # banker: 6C face down, KD up
    assert h.events("cards_revealed") == []
    h.act("seat:1", "stand", "p1")
    assert h.events("cards_revealed") == []  # seat 2 still to play: the card stays down
    h.act("seat:2", "stand", "p2")
    assert h.events("cards_revealed")[-1]["cards"] == [{"index": 2, "card": "6C"}]
    assert h.state.public_summary()["round"]["view"]["banker"]["cards"] == ["6C", "KD"]
    assert h.replayed() == h.state


def _bank_bid(h: Table, seat: int, stake: int, balances: dict[str, int]) -> dict[str, Any]:
    """A bank bid with the seated players' balances as the table reads them."""
    h.bet_no += 1
    request = c.BetRequest(f"b{h.bet_no}", f"k{h.bet_no}", f"p{seat}", "bank", stake, seat=seat)
    result: dict[str, Any] = h.run(c.PlaceBets((request,), balances)).answer["results"][0]
    return result


def _banker_leaves(h: Table, banker: int, punters: tuple[int, ...]) -> None:
    for n in punters:
        h.seat_bet(f"p{n}", "main", 100, n)
    h.seat_bet(f"p{banker}", "bank", 20_000, banker)  # everyone has bet: betting closes
    h.deal(*["TS", "TD", "7C", "KH", "9H", "TC", "5S", "6S"][: 2 * (len(punters) + 1)])
    h.act("banker", "leave", f"p{banker}")  # the banker leaves: the bank passes
    assert h.events("round_result")[-1]["outcome"]["bank"]["keeps_bank"] is False
    assert h.state.bank_from == banker and h.state.bank_seat is None
    h.run(c.InsertShoe())
    h.run(c.OpenBetting())


def test_the_bank_passes_clockwise_skipping_a_player_who_does_not_qualify() -> None:
    h = xtable("room", 1, 2, 3, 9, banker="seated")
    _banker_leaves(h, 9, (1, 2, 3))
    balances = {"p1": 5000, "p2": RICH, "p3": RICH}  # seat 1 holds under 5x the maximum
    refused = _bank_bid(h, 3, 20_000, balances)
    assert (refused["error"], "seat 2" in refused["reason"]) == ("bank_passes", True)
    assert _bank_bid(h, 1, 5000, balances)["error"] == "bank_passes"
    assert _bank_bid(h, 2, 20_000, balances)["status"] == "placed"  # the next who qualifies
    assert h.replayed() == h.state  # the pass is recorded: a restart sees the same table


def test_the_bank_passes_clockwise_wrapping_around_to_the_first_seat() -> None:
    h = xtable("room", 1, 2, 3, banker="seated")
    _banker_leaves(h, 2, (1, 3))
    balances = {"p1": RICH, "p3": 9999}  # seat 3 is next but under 10000: on to seat 1
    assert _bank_bid(h, 3, 9999, balances)["error"] == "bank_passes"
    assert _bank_bid(h, 1, 10_000, balances)["status"] == "placed"
    h.seat_bet("p3", "main", 100, 3)
    assert h.replayed() == h.state


def test_the_room_closes_when_nobody_qualifies_for_the_passing_bank() -> None:
    h = xtable("room", 1, 2, 9, banker="seated")
    _banker_leaves(h, 9, (1, 2))
    balances = {"p1": 9999, "p2": 500}
    assert _bank_bid(h, 1, 9999, balances)["error"] == "room_closed"
    assert _bank_bid(h, 2, 10_000, {"p1": 9999, "p2": 10_000 - 1})["error"] == "room_closed"
    h.seat_bet("p1", "main", 100, 1)
    h.seat_bet("p2", "main", 100, 2)  # every seated punter has bet: betting closes
    assert h.events("round_result")[-1]["outcome"]["room_closed"] is True
    assert h.results() == {"b6": 100, "b7": 100}  # every stake goes back
    assert h.state.bank_from == 9  # the pass still stands for the next round
    assert h.replayed() == h.state


def _dealer_reads(h: Table) -> list[str]:
    """What a dealer reads of the table: its stream (every event so far), the table's
    summary (``GET /tables/{t}``, the dealer console) and the round's detail."""
    rnd = h.state.round
    assert rnd is not None
    hands = {b.seat if b.bet_type != "bank" else None: b.account for b in rnd.bets.values()}
    stream = dealer_view(lambda _round, seat: hands.get(seat) is not None)
    hidden, _ = face_down(rnd, DEALER_VIEWER)
    detail = {
        "round_id": rnd.round_id,
        "cards": list(rnd.cards),
        **record_of(rnd),
    }
    stored = [
        StoredEvent(n, "xd", d.round_id, d.type, "test", "ts", d.payload, "", "")
        for n, d in enumerate(h.log, 1)
    ]
    return [
        *(json.dumps(stream(e)) for e in stored),
        json.dumps(table_view(h.state, DEALER_VIEWER)),
        json.dumps(view(ReadModel("round_detail", detail, Context(hidden)), DEALER_VIEWER)),
    ]


def test_the_dealer_never_sees_a_seated_bankers_face_down_card_before_it_is_turned() -> None:
    """The rules: "the banker's first card face down (seen only by the banker)". At a
    seated bank the dealer is a third party (who could signal it): it sees the card when
    it is turned, as the public does; the supervisor sees it (the full record)."""
    h = xtable("room", 1, 9, banker="seated")
    h.seat_bet("p1", "main", 1000, 1)
    h.seat_bet("p9", "bank", 10_000, 9)
    h.deal("TS", "6C", "TD", "KD")  # banker: 6C face down, KD up
    assert h.events("card_dealt")[1]["face_up"] is False
    assert not any('"6C"' in text for text in _dealer_reads(h))
    supervisor = json.dumps(table_view(h.state, Viewer(Audience.SUPERVISOR)))
    assert '"6C"' in supervisor
    banker = table_view(h.state, Viewer(Audience.OWNER, "B", lambda a: a == "p9"))["round"]
    assert banker["cards"][1] == "6C" and banker["view"]["banker"]["cards"] == ["6C", "KD"]
    punter = table_view(h.state, Viewer(Audience.OWNER, "A", lambda a: a == "p1"))["round"]
    assert "6C" not in json.dumps(punter)
    h.act("seat:1", "stand", "p1")  # the banker's turn: the card is turned
    assert '"6C"' in _dealer_reads(h)[-2]


def test_the_dealer_sees_the_house_bankers_hole_card_it_plays() -> None:
    h = xtable("room", 1, 2)
    h.seat_bet("p1", "main", 100, 1)
    h.seat_bet("p2", "main", 100, 2)
    h.deal("TS", "TD", "6C", "TH", "9H", "KD")  # house: 6C face down, KD up
    assert all('"6C"' in text for text in _dealer_reads(h)[-2:])
