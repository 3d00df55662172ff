"""The table's procedures, command by command, on the pure core (rules/baccarat.md)."""

from __future__ import annotations

from typing import Any

import pytest

from shoe_reader.events import UnreadableCard
from table_service.table import commands as c
from table_service.table.config import TableConfig
from table_service.table.errors import (
    BadCard,
    BadResolution,
    BettingClosed,
    NoShoe,
    ShoeFinished,
    ShoeNotReady,
    TablePaused,
    UnknownIncident,
    WrongPhase,
)
from table_service.table.reader_pump import reader_command
from tests.table.table_helpers import Harness


def _command(event: Any) -> c.Command:
    """The table's command for a reader's event that the table acts on."""
    command = reader_command(event)
    assert command is not None
    return command


def test_burn_procedure_counts_the_indicator_value() -> None:
    h = Harness()
    h.run(c.InsertShoe())
    h.run(c.CardScanned("KD"))  # K counts 10
    assert h.current_shoe().burn_remaining == 10
    with pytest.raises(ShoeNotReady):
        h.run(c.OpenBetting())
    for card in ["2C", "3C", "4C", "5C", "6C", "7C", "8C", "9C", "TC", "JC"]:
        h.run(c.CardScanned(card))
    assert h.current_shoe().ready
    assert len(h.events("card_burnt")) == 11
    h.run(c.OpenBetting())


def test_ace_indicator_burns_one_more_card() -> None:
    h = Harness()
    h.run(c.InsertShoe())
    h.run(c.CardScanned("AS"))
    assert h.current_shoe().burn_remaining == 1
    assert not h.current_shoe().ready
    with pytest.raises(ShoeNotReady):
        h.run(c.OpenBetting())
    h.run(c.CardScanned("9D"))
    assert h.current_shoe().ready and h.current_shoe().games == 0
    burnt = h.events("card_burnt")
    assert [(b["card"], b["indicator"]) for b in burnt] == [("AS", True), ("9D", False)]
    h.run(c.OpenBetting())
    h.run(c.CloseBetting())
    assert h.deal("2C").drafts[0].payload["position"] == "P1"  # the next card is dealt


def test_a_full_round_settles_every_bet_once() -> None:
    h = Harness()
    h.ready_shoe()
    h.run(c.OpenBetting())
    assert h.bet("player", 1000)["status"] == "placed"
    assert h.bet("tie", 500)["status"] == "placed"
    assert h.bet("banker", 1000)["status"] == "placed"
    h.run(c.CloseBetting())
    assert h.next_spot() == "P1"
    decision = h.deal("2S", "5H", "KD", "TC", "3S")  # spec example: tie 5-5
    assert h.types(decision)[-3:] == ["round_result", "bets_settled", "round_settled"]
    results = {r["type"]: r for r in h.events("bets_settled")[0]["results"]}
    assert results["player"]["returned"] == 1000 and results["player"]["result"] == "push"
    assert results["tie"]["returned"] == 4500
    assert results["banker"]["returned"] == 1000
    assert h.current_round().phase == "settled" and not h.current_round().bets
    assert h.replayed() == h.state


def test_positions_follow_the_drawing_rules() -> None:
    h = Harness()
    h.ready_shoe()
    h.run(c.OpenBetting())
    h.run(c.CloseBetting())
    positions = [h.deal(card).drafts[0].payload["position"] for card in ["2S", "5H", "3D", "TC"]]
    assert positions == ["P1", "B1", "P2", "B2"]
    assert h.next_spot() == "P3"


def test_bets_refused_outside_the_window_and_by_the_rules() -> None:
    h = Harness(
        TableConfig(
            table_id="t1",
            betting_seconds=10,
            bet_limits={"tie": {"min_stake": 100, "max_stake": 1000}},
        )
    )
    h.ready_shoe()
    with pytest.raises(BettingClosed):
        h.bet("player", 100)
    h.run(c.OpenBetting())
    assert h.bet("nope", 100)["error"] == "unknown_bet_type"
    assert h.bet("player", 0)["error"] == "non_positive_stake"
    assert h.bet("player", 1.5)["error"] == "invalid_stake"  # type: ignore[arg-type]  # a float stake is the test
    assert h.bet("tie", 1001)["error"] == "outside_limits"
    assert h.bet("player", 99)["error"] == "outside_limits"
    assert h.bet("player", 500, balances={"a1": 499})["error"] == "insufficient_funds"
    assert h.events("bets_placed") == []
    h.tick(10)
    with pytest.raises(BettingClosed):
        h.bet("player", 100)
    h.run(c.CloseBetting("countdown"))
    with pytest.raises(BettingClosed):
        h.bet("player", 100)


def test_balance_is_checked_across_a_batch() -> None:
    h = Harness()
    h.ready_shoe()
    h.run(c.OpenBetting())
    bets = tuple(c.BetRequest(f"b{i}", f"k{i}", "a1", "player", 400) for i in range(3))
    decision = h.run(c.PlaceBets(bets, {"a1": 1000}))
    statuses = [r["status"] for r in decision.answer["results"]]
    assert statuses == ["placed", "placed", "refused"]
    assert len(h.events("bets_placed")[0]["bets"]) == 2


def test_game_number_cut_offs_apply_per_shoe() -> None:
    h = Harness(TableConfig(table_id="t1", betting_seconds=1))
    h.ready_shoe()
    for game in range(1, 22):
        h.run(c.OpenBetting())
        answer = h.bet("big", 100)
        assert (answer["status"] == "placed") == (game <= 20), game
        h.run(c.VoidRound("test", change_shoe=False))
    assert h.bet_no == 21


def test_unneeded_card_is_carried_to_the_next_round() -> None:
    h = Harness()
    h.ready_shoe()
    h.run(c.OpenBetting())
    h.run(c.CloseBetting())
    h.deal("9S", "2H", "KD", "5C")  # player natural 9: round complete on 4 cards
    assert h.current_round().phase == "settled"
    h.deal("7D")  # the dealer draws a card the rules do not need
    assert h.state.carried == ("7D",)
    assert h.events("incident_raised")[-1]["kind"] == "unneeded_card"
    h.run(c.OpenBetting())
    h.run(c.CloseBetting())
    assert h.current_round().cards == ("7D",)
    assert h.next_spot() == "B1"


def test_one_exposed_card_during_betting_is_burnt_two_void_the_round() -> None:
    h = Harness()
    h.ready_shoe()
    h.run(c.OpenBetting())
    h.bet("player", 1000)
    h.deal("4C")
    assert h.current_round().phase == "betting" and h.current_round().exposed == 1
    decision = h.deal("5C")
    assert "round_voided" in h.types(decision) and "shoe_ended" in h.types(decision)
    refunds = h.events("bets_refunded")[0]["refunds"]
    assert [(r["stake"], r["returned"]) for r in refunds] == [(1000, 1000)]
    assert h.state.shoe is None
    with pytest.raises(NoShoe):
        h.run(c.OpenBetting())


def test_reported_exposure_of_two_cards_voids_and_needs_a_new_shoe() -> None:
    h = Harness()
    h.ready_shoe()
    h.run(c.OpenBetting())
    h.bet("banker", 700)
    h.run(c.CloseBetting())
    h.deal("2S")
    h.run(c.RaiseIncident("cards_exposed", {"count": 2}), actor="supervisor:s1")
    assert h.current_round().phase == "voided"
    assert h.events("bets_refunded")[0]["refunds"][0]["returned"] == 700
    assert h.state.shoe is None


def test_card_exposed_in_shoe_refunds_only_insurance_type_bets() -> None:
    h = Harness(TableConfig(table_id="t1", insurance_bet_types=("either_natural",)))
    h.ready_shoe()
    h.run(c.OpenBetting())
    h.bet("player", 1000)
    h.bet("either_natural", 300)
    h.run(c.CloseBetting())
    decision = h.run(c.RaiseIncident("card_exposed_in_shoe", {"card": "QS"}))
    refunds = h.events("bets_refunded")[0]["refunds"]
    assert [r["type"] for r in refunds] == ["either_natural"]
    assert decision.answer["blocking"] is False
    h.deal("9S", "2H", "KD", "5C")
    settled = h.events("bets_settled")[0]["results"]
    assert [r["type"] for r in settled] == ["player"]


def test_missed_scan_is_entered_and_positions_rearranged() -> None:
    h = Harness()
    h.ready_shoe()
    h.run(c.OpenBetting())
    h.bet("player", 1000)
    h.run(c.CloseBetting())
    # Shoe order is 2S 5H KD TC 3S but the dealer forgot to scan 5H.
    h.deal("2S")
    incident = h.run(c.RaiseIncident("missed_scan", {"index": 1})).answer["incident_id"]
    assert h.state.paused
    h.deal("KD", "TC", "3S")  # later scans are kept in shoe order while paused
    assert h.current_round().phase == "dealing"
    with pytest.raises(TablePaused):
        h.run(c.OpenBetting())
    with pytest.raises(BadResolution):
        h.run(c.ResolveIncident(incident, ""))
    decision = h.run(c.ResolveIncident(incident, "entered 5H", (c.EnteredCard("5H", 1),)))
    assert h.current_round().cards == ("2S", "5H", "KD", "TC", "3S")
    assert "round_settled" in h.types(decision)
    assert h.events("round_result")[0]["outcome"]["winner"] == "tie"


def test_multi_pull_reassigned_in_shoe_order() -> None:
    h = Harness()
    h.ready_shoe()
    h.run(c.OpenBetting())
    h.run(c.CloseBetting())
    h.deal("2S")
    incident = h.run(c.RaiseIncident("multi_pull", {"cards": 2})).answer["incident_id"]
    h.deal("KD", "5H")  # read in the wrong order while pulled together
    with pytest.raises(BadResolution):
        h.run(c.ResolveIncident(incident, "reorder", order=("5H", "QS")))
    h.run(c.ResolveIncident(incident, "put back in shoe order", order=("5H", "KD")))
    assert h.current_round().cards == ("2S", "5H", "KD")
    assert h.next_spot() == "B2"


def test_reader_faults_pause_dealing_until_resolved() -> None:
    h = Harness()
    h.ready_shoe()
    h.run(c.OpenBetting())
    h.run(c.CloseBetting())
    h.deal("2S")
    h.run(c.ReaderFault("missed_card_suspected", {"expected_seq": 10, "missing": 1}))
    incident = next(iter(h.state.incidents))
    assert h.state.incidents[incident].details["index"] == 1
    h.deal("KD", "TC", "3S")
    assert h.current_round().phase == "dealing"
    h.run(c.ResolveIncident(incident, "card 5H was missed", (c.EnteredCard("5H", 1),)))
    assert h.current_round().phase == "settled"
    with pytest.raises(UnknownIncident):
        h.run(c.ResolveIncident(incident, "again"))


def test_unreadable_card_is_entered_by_the_supervisor() -> None:
    h = Harness()
    h.ready_shoe()
    h.run(c.OpenBetting())
    h.run(c.CloseBetting())
    h.deal("9S", "2H", "KD")
    h.run(c.ReaderFault("unreadable", {}))
    incident = next(iter(h.state.incidents))
    with pytest.raises(BadCard):
        h.run(c.ResolveIncident(incident, "entered", (c.EnteredCard("ZZ", 3),)))
    h.run(c.ResolveIncident(incident, "entered 5C", (c.EnteredCard("5C", 3),)))
    assert h.current_round().phase == "settled"


@pytest.mark.parametrize("cause", ["blurred", "covered", "outside"])
def test_a_camera_card_seen_blurred_covered_or_in_part_is_shown_again_then_an_incident(
    cause: str,
) -> None:
    """The camera says why it could not read the card: the dealer is asked to show the same
    card again (no incident, the table not paused), twice; a third time is an incident."""
    h = Harness()
    h.ready_shoe()
    h.run(c.OpenBetting())
    h.run(c.CloseBetting())
    h.deal("9S", "2H")
    unreadable = UnreadableCard(reader_id="camera", reason="no confident read", cause=cause)
    for times in (1, 2):
        h.run(_command(unreadable))
        assert not h.state.paused and not h.state.incidents
        asked = h.events("card_show_again")[-1]
        assert (asked["index"], asked["cause"], asked["times"]) == (2, cause, times)
        assert h.current_round().show_again == {"index": 2, "cause": cause, "times": times}
    h.run(_command(unreadable))
    assert h.state.paused
    raised = h.events("incident_raised")[-1]
    assert raised["kind"] == "unreadable_card"
    assert raised["details"]["cause"] == cause and raised["details"]["index"] == 2


def test_a_card_shown_again_and_read_is_dealt_where_it_was_owed() -> None:
    h = Harness()
    h.ready_shoe()
    h.run(c.OpenBetting())
    h.run(c.CloseBetting())
    h.deal("9S", "2H")
    h.run(_command(UnreadableCard(reader_id="camera", cause="covered")))
    h.deal("KD")
    assert h.current_round().cards == ("9S", "2H", "KD")
    assert h.current_round().show_again is None
    # The next unreadable card is asked for again from the first time.
    h.run(_command(UnreadableCard(reader_id="camera", cause="blurred")))
    assert h.events("card_show_again")[-1]["times"] == 1 and not h.state.paused


@pytest.mark.parametrize("cause", ["unknown", ""])
def test_a_card_of_an_unknown_face_or_from_a_reader_that_cannot_say_is_an_incident(
    cause: str,
) -> None:
    h = Harness()
    h.ready_shoe()
    h.run(c.OpenBetting())
    h.run(c.CloseBetting())
    h.deal("9S")
    h.run(_command(UnreadableCard(reader_id="camera", cause=cause)))
    assert h.state.paused and not h.events("card_show_again")
    assert h.events("incident_raised")[-1]["kind"] == "unreadable_card"


def test_a_foreign_card_is_an_incident_and_not_dealt() -> None:
    h = Harness(TableConfig(table_id="t1", decks=6))
    h.ready_shoe("3S", ("AS", "AS", "AS"))
    h.run(c.OpenBetting())
    h.run(c.CloseBetting())
    h.deal("AS", "AS", "AS", "AS")  # the 7th ace of spades in a 6-deck shoe
    assert h.current_round().cards == ("AS", "AS", "AS")
    assert h.state.paused
    assert h.events("incident_raised")[-1]["kind"] == "foreign_card"


def test_cut_card_ends_the_shoe_after_the_round() -> None:
    h = Harness()
    h.ready_shoe()
    h.run(c.OpenBetting())
    h.run(c.CloseBetting())
    h.deal("2S", "5H")
    h.run(c.CutCard())
    assert h.state.shoe is not None and h.state.shoe.cut_card_drawn
    decision = h.deal("KD", "TC", "3S")
    assert h.types(decision)[-1] == "shoe_ended"
    with pytest.raises(NoShoe):
        h.run(c.OpenBetting())
    h.ready_shoe()
    assert h.state.shoe.shoe_no == 2


def test_cut_card_between_rounds_ends_the_shoe_now() -> None:
    h = Harness()
    h.ready_shoe()
    h.run(c.CutCard())
    assert h.state.shoe is None


def test_cut_card_drawn_flag_refuses_new_rounds() -> None:
    h = Harness()
    h.ready_shoe()
    h.run(c.OpenBetting())
    h.run(c.CutCard())
    h.run(c.VoidRound("studio power cut", change_shoe=False))
    assert h.state.shoe is None  # the cut card was out: the shoe ends with the round
    with pytest.raises(NoShoe):
        h.run(c.OpenBetting())


def test_void_refunds_every_open_bet_once_and_cannot_repeat() -> None:
    h = Harness()
    h.ready_shoe()
    h.run(c.OpenBetting())
    for stake in (100, 200, 300):
        h.bet("player", stake)
    h.run(c.CloseBetting())
    h.deal("2S")
    h.run(c.VoidRound("dealer error"))
    assert sorted(r["returned"] for r in h.events("bets_refunded")[0]["refunds"]) == [100, 200, 300]
    with pytest.raises(WrongPhase):
        h.run(c.VoidRound("again"))


def test_wrong_phase_commands_are_refused_without_events() -> None:
    h = Harness()
    before = len(h.log)
    with pytest.raises(WrongPhase):
        h.run(c.CloseBetting())
    with pytest.raises(NoShoe):
        h.run(c.ChangeShoe())
    h.ready_shoe()
    h.run(c.OpenBetting())
    with pytest.raises(WrongPhase):
        h.run(c.OpenBetting())
    with pytest.raises(WrongPhase):
        h.run(c.ChangeShoe())
    with pytest.raises(WrongPhase):
        h.run(c.InsertShoe())
    with pytest.raises(BadCard):
        h.run(c.CardScanned("XX"))
    assert len(h.log) == before + 5  # only the shoe, burn and betting events


def test_ascii_burn_mode_cards_are_set_aside() -> None:
    h = Harness()
    h.ready_shoe()
    h.run(c.CardScanned("9H", burn_mode=True))
    assert h.events("card_set_aside")[-1]["reason"] == "burn_mode"
    assert h.state.carried == ()


def test_shoe_finished_after_cut_card_is_refused_for_betting() -> None:
    h = Harness()
    h.ready_shoe()
    h.run(c.OpenBetting())
    h.run(c.CutCard())
    h.run(c.CloseBetting())
    with pytest.raises(ShoeFinished):
        h.run(c.OpenBetting())
