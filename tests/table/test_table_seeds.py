"""Seed conformance at the live table (issue 31): each point of the seeds that the live
table once got wrong, played through decide/apply as the table plays it, and checked
against the one rules code (``livetable settle``'s recompute and the audit replay).

The seeds are ``shared/seeds/*.txt``; the decisions are ``docs/rules/*.md``.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any
from unittest.mock import ANY

import pytest

from table_service.regulator.records import fold_records
from table_service.regulator.replay import ReplayError, ReplayTotals, fold_rounds, replay_round
from table_service.rules.games import find_game
from table_service.table import commands as c
from table_service.table.config import TableConfig
from table_service.table.errors import BadResolution, NoShoe, RulesRefused, TablePaused
from table_service.table.incidents import dealer_may_report
from table_service.table.reader_pump import disagreement_command
from tests.table.table_helpers import Harness


@dataclass(frozen=True)
class _Logged:
    """A harness draft as the audit replay reads an event."""

    seq: int
    table_id: str
    round_id: str | None
    type: str
    ts: str
    payload: dict[str, Any]
    actor: str = "reader:t1-shoe"


def logged(h: Harness) -> list[_Logged]:
    return [
        _Logged(n + 1, h.config.table_id, d.round_id, d.type, "2026-01-01T12:00:00Z", d.payload)
        for n, d in enumerate(h.log)
    ]


def replayed_rounds(h: Harness) -> ReplayTotals:
    """Every closed round of the harness's log recomputed by the audit replay."""
    folded = fold_rounds(logged(h))
    totals = ReplayTotals()
    for fold in folded.rounds.values():
        replay_round(fold, folded.rules[fold.rules_ref], None, totals)
    return totals


# -- 3. Tiger Pair (Hổ đôi) has no 30-game cut-off (seed 004) -----------------------------------
def test_tiger_pair_is_taken_after_game_30_unlike_the_other_tiger_bets() -> None:
    h = Harness(TableConfig(table_id="t1", betting_seconds=1))
    h.ready_shoe()
    answers: dict[int, dict[str, str]] = {}
    for game in range(1, 33):
        h.run(c.OpenBetting())
        if game in (30, 31, 32):
            answers[game] = {
                bet: h.bet(bet, 100)["status"] for bet in ("tiger_pair", "tiger_tie", "big_tiger")
            }
        h.run(c.VoidRound("test", change_shoe=False))
    assert answers[30] == {"tiger_pair": "placed", "tiger_tie": "placed", "big_tiger": "placed"}
    for game in (31, 32):
        assert answers[game] == {
            "tiger_pair": "placed",
            "tiger_tie": "refused",
            "big_tiger": "refused",
        }, game


def test_tiger_pair_in_game_31_settles_through_the_rules_code() -> None:
    h = Harness(TableConfig(table_id="t1", betting_seconds=1))
    h.ready_shoe()
    for _ in range(30):
        h.run(c.OpenBetting())
        h.run(c.VoidRound("test", change_shoe=False))
    h.run(c.OpenBetting())
    assert h.state.round is not None and h.state.round.game_number == 31
    assert h.bet("tiger_pair", 100)["status"] == "placed"
    h.run(c.CloseBetting())
    h.deal("5S", "7H", "5D", "7C", "KS")  # both sides pair: 20
    (line,) = h.events("bets_settled")[0]["results"]
    assert (line["type"], line["result"], line["returned"]) == ("tiger_pair", "win", 2100)
    assert replayed_rounds(h).bets == 1


# -- 4. Baccarat procedure 8: the insurance card forgotten (seed 004) ----------------------------
def _insured_round() -> Harness:
    """A table configured with an insurance-type bet, a round being dealt."""
    h = Harness(TableConfig(table_id="t1", insurance_bet_types=("either_natural",)))
    h.ready_shoe()
    h.run(c.OpenBetting())
    h.bet("player", 1000, account="a1")
    h.bet("either_natural", 300, account="a1")
    h.bet("either_natural", 200, account="a2")
    h.run(c.CloseBetting())
    h.deal("9S")
    return h


def test_forgotten_insurance_card_forfeits_insurance_type_bets_and_the_game_goes_on() -> None:
    h = _insured_round()
    decision = h.run(c.RaiseIncident("insurance_card_forgotten", {"card": "2H"}), "dealer:d1")
    assert decision.answer["blocking"] is False and not h.state.paused
    assert not h.events("bets_refunded")  # forfeited, not refunded
    forfeited = h.events("bets_settled")[0]["results"]
    assert sorted((r["bet_id"], r["result"], r["returned"]) for r in forfeited) == [
        ("b2", "forfeited", 0),
        ("b3", "forfeited", 0),
    ]
    h.deal("2H", "KD", "5C")  # the round goes on: player 9 + K = 9, a natural win
    assert h.state.round is not None and h.state.round.phase == "settled"
    settled = [r for e in h.events("bets_settled") for r in e["results"]]
    assert sorted(r["bet_id"] for r in settled) == ["b1", "b2", "b3"]  # each closed once
    assert next(r for r in settled if r["bet_id"] == "b1")["returned"] == 2000
    # the round's totals count the forfeited stakes once, as kept by the house
    totals = h.events("round_settled")[0]
    assert (totals["bets"], totals["staked"], totals["returned"]) == (3, 1500, 2000)
    assert replayed_rounds(h).returned == 2000
    assert h.replayed() == h.state


def test_forfeited_insurance_stands_when_the_round_is_voided_later() -> None:
    h = _insured_round()
    h.run(c.RaiseIncident("insurance_card_forgotten", {}), "dealer:d1")
    h.run(c.VoidRound("supervisor decision"), "supervisor:s1")
    refunds = [r["bet_id"] for e in h.events("bets_refunded") for r in e["refunds"]]
    assert refunds == ["b1"]  # never both forfeited and refunded
    assert h.events("round_voided")[0]["stood"] == ["b2", "b3"]
    replayed_rounds(h)


def test_a_forfeit_the_procedure_did_not_order_is_a_replay_finding() -> None:
    h = _insured_round()
    h.run(c.RaiseIncident("insurance_card_forgotten", {}), "dealer:d1")
    h.deal("2H", "KD", "5C")
    for draft in h.log:  # forge: the incident was never raised
        if draft.type == "incident_raised":
            draft.payload["kind"] = "other"
    with pytest.raises(ReplayError, match="forfeited without the procedure"):
        replayed_rounds(h)


def test_forgotten_insurance_card_forfeits_nothing_on_a_table_without_insurance() -> None:
    h = Harness()
    h.ready_shoe()
    h.run(c.OpenBetting())
    h.bet("player", 1000)
    h.run(c.CloseBetting())
    h.run(c.RaiseIncident("insurance_card_forgotten", {}), "dealer:d1")
    assert not h.events("bets_settled") and not h.events("bets_refunded")
    h.deal("9S", "2H", "KD", "5C")
    assert h.events("bets_settled")[0]["results"][0]["returned"] == 2000


# -- blackjack ---------------------------------------------------------------------------------
class BlackjackTable(Harness):
    def turn(self) -> dict[str, Any] | None:
        rnd = self.state.public_summary()["round"]
        return rnd["turn"] if rnd else None

    def legal(self, actor: str) -> set[str]:
        turn = self.turn()
        assert turn is not None
        return {m["action"] for m in turn["legal_actions"].get(actor, [])}


def blackjack(*seats: int, **config: Any) -> BlackjackTable:
    h = BlackjackTable(TableConfig(table_id="bj", game="blackjack", **config))
    h.run(c.InsertShoe())
    for n in seats:
        h.run(c.TakeSeat(n, f"p{n}"))
    h.run(c.OpenBetting())
    return h


# -- 1. a seated player may not bet behind (seed 000 "Cược Ăn Theo") ----------------------------
def test_a_seated_player_may_not_bet_behind_any_seat() -> None:
    h = blackjack(1, 2)
    assert h.seat_bet("p1", "main", 1000, 1)["status"] == "placed"
    assert h.seat_bet("p2", "main", 1000, 2)["status"] == "placed"
    refused = h.seat_bet("p1", "behind", 500, 2)
    assert refused["status"] == "refused" and refused["error"] == "seated_player"
    assert "seat 1" in refused["reason"]
    assert h.seat_bet("p2", "behind", 500, 1)["error"] == "seated_player"
    assert h.seat_bet("p9", "behind", 500, 2)["status"] == "placed"  # not seated: may
    placed = [b for e in h.events("bets_placed") for b in e["bets"]]
    assert [(b["account"], b["type"]) for b in placed] == [
        ("p1", "main"),
        ("p2", "main"),
        ("p9", "behind"),
    ]


def test_taking_a_seat_with_a_bet_behind_open_is_refused_until_the_round_is_over() -> None:
    h = blackjack(1)
    h.seat_bet("p1", "main", 1000, 1)
    assert h.seat_bet("p9", "behind", 500, 1)["status"] == "placed"
    with pytest.raises(RulesRefused) as refused:
        h.run(c.TakeSeat(2, "p9"))  # betting still open: it would seat a bettor behind
    assert refused.value.code == "behind_bet_open"
    h.run(c.CloseBetting())
    h.deal("TS", "7D")
    with pytest.raises(RulesRefused):
        h.run(c.TakeSeat(2, "p9"))  # the round is being dealt
    assert 2 not in h.state.seats
    h.run(c.TakeSeat(3, "p3"))  # anyone else takes a seat as before (from the next round)
    h.deal("9C")  # seat 1: T 9 = 19
    h.act("seat:1", "stand", "p1")
    h.deal("TD")  # dealer 17
    assert h.state.round is not None and h.state.round.phase == "settled"
    h.run(c.TakeSeat(2, "p9"))  # the round is over: the seat is p9's
    h.run(c.OpenBetting())
    assert h.seat_bet("p9", "main", 100, 2)["status"] == "placed"
    assert h.seat_bet("p9", "behind", 100, 2)["error"] == "own_seat"


# -- 2. blackjack's system or human error (seed 000 "Xử lý sự cố") -------------------------------
def _round_with_every_stake() -> BlackjackTable:
    """Seat 1 with main, pair, insurance, a split, a double; p9 behind it following both."""
    h = blackjack(1)
    h.seat_bet("p1", "main", 1000, 1)  # b1
    h.seat_bet("p1", "pair", 100, 1)  # b2
    h.seat_bet("p9", "behind", 400, 1)  # b3
    h.run(c.CloseBetting())
    h.deal("8S", "AD", "8C")  # 8 8 against a dealer Ace
    h.act("seat:1", "insurance", "p1")
    h.act("seat:1", "split", "p1")
    h.act("behind:b3", "accept", "p9")
    h.deal("3H")  # hand 1: 8 3 = 11
    h.act("seat:1", "double", "p1")
    h.act("behind:b3", "accept", "p9")
    return h


def _placed(h: Harness) -> dict[str, int]:
    return {b["bet_id"]: b["stake"] for e in h.events("bets_placed") for b in e["bets"]}


def test_a_reported_error_pauses_the_table_and_the_confirmed_error_refunds_every_stake() -> None:
    h = _round_with_every_stake()
    stakes = _placed(h)
    assert set(stakes) == {
        "b1",
        "b2",
        "b3",
        "b1~insurance",
        "b1~split",
        "b1~double1",
        "b3~split",
        "b3~double1",
    }
    answer = h.run(c.RaiseIncident("wrong_position", {"seat": 1}), "dealer:d1").answer
    assert answer["blocking"] is True and h.state.paused
    assert h.state.round is not None and h.state.round.phase == "dealing"
    assert not h.events("bets_refunded")  # nothing happens before the supervisor confirms
    with pytest.raises(TablePaused):
        h.act("seat:1", "stand", "p1")
    h.deal("9D")  # a card while paused is kept for the supervisor, never dealt on
    h.run(c.ResolveIncident(answer["incident_id"], "confirmed: 3H went to hand 2"), "supervisor:s")
    refunds = [r for e in h.events("bets_refunded") for r in e["refunds"]]
    assert sorted((r["bet_id"], r["returned"]) for r in refunds) == sorted(stakes.items())
    assert h.current_round().phase == "voided" and not h.state.paused
    assert not h.events("bets_settled")  # every stake refunded exactly once, none settled
    assert h.state.shoe is None  # the whole shoe re-shuffled: a new shoe is required
    with pytest.raises(NoShoe):
        h.run(c.OpenBetting())
    assert replayed_rounds(h).rounds == 1
    assert h.replayed() == h.state


def test_a_supervisor_raising_the_error_confirms_it_at_once() -> None:
    h = _round_with_every_stake()
    h.run(c.RaiseIncident("misdeal", {}), "supervisor:s1")
    refunds = {r["bet_id"] for e in h.events("bets_refunded") for r in e["refunds"]}
    assert refunds == set(_placed(h))
    assert h.state.round is not None and h.state.round.phase == "voided"
    assert h.state.shoe is None and not h.state.incidents


def test_a_confirmation_above_the_void_threshold_takes_two_supervisors() -> None:
    h = blackjack(1, void_approval_above=500)
    h.seat_bet("p1", "main", 1000, 1)
    h.run(c.CloseBetting())
    h.deal("8S", "6D", "8C")
    incident = h.run(c.RaiseIncident("misdeal", {}), "supervisor:s1").answer["incident_id"]
    assert h.state.paused and not h.events("bets_refunded")  # not one supervisor's void
    with pytest.raises(RulesRefused) as refused:
        h.run(c.ResolveIncident(incident, "confirmed"), "supervisor:s1")
    assert refused.value.code == "void_needs_approval"
    h.run(c.VoidRound("misdeal confirmed by two supervisors"), "supervisor:s2")
    assert h.state.round is not None and h.state.round.phase == "voided"
    assert not h.state.incidents


def test_a_card_no_position_is_owed_is_an_error_the_round_is_not_settled() -> None:
    h = blackjack(1)
    h.seat_bet("p1", "main", 1000, 1)
    h.run(c.CloseBetting())
    h.deal("8S", "6D", "8C")  # seat 1 to decide
    h.deal("KD")  # a card while a decision is awaited
    (raised,) = h.events("incident_raised")
    assert raised["kind"] == "card_not_owed" and h.state.paused
    h.run(c.ResolveIncident(raised["incident_id"], "KD seen by the camera"), "supervisor:s")
    assert h.state.round is not None and h.state.round.phase == "voided"
    assert [r["bet_id"] for e in h.events("bets_refunded") for r in e["refunds"]] == ["b1"]
    assert not h.events("round_result") and h.state.shoe is None


def test_blackjack_errors_are_not_put_right_by_re_arranging_cards() -> None:
    h = blackjack(1)
    h.seat_bet("p1", "main", 1000, 1)
    h.run(c.CloseBetting())
    h.deal("8S", "6D")
    for kind in ("missed_scan", "multi_pull"):  # baccarat's procedures, not blackjack's
        with pytest.raises(BadResolution):
            h.run(c.RaiseIncident(kind, {"index": 1}), "dealer:d1")
    incident = h.run(c.RaiseIncident("wrong_position", {}), "dealer:d1").answer["incident_id"]
    with pytest.raises(BadResolution):
        h.run(c.ResolveIncident(incident, "swap", order=("6D", "8S")), "supervisor:s")
    assert h.state.round is not None and h.state.round.cards == ("8S", "6D")


def test_the_blackjack_dealer_catalogue_is_blackjacks_own() -> None:
    kinds = [k.kind for k in dealer_may_report("blackjack")]
    assert kinds == ["misdeal", "wrong_position", "cards_exposed", "system_error", "other"]
    for kind in find_game("blackjack").incidents.values():
        assert kind.blocking and kind.effects == {"void_on_confirm"}, kind
        assert "refunded" in kind.procedure and "new shoe" in kind.procedure
        assert "re-arrange" not in kind.procedure and "shoe order" not in kind.procedure


# -- Xì Dách: "the same supervised incident procedure as live blackjack" (rules/xidach.md) ---------
def xidach_round(**config: Any) -> BlackjackTable:
    """Profile ``classic``, the house banks; seat 1 holds 9 6 (must draw) against 5 T."""
    h = BlackjackTable(
        TableConfig(
            table_id="xd",
            game="xidach",
            profile="classic",
            game_rules={"banker": "house"},
            limits={"min_stake": 100, "max_stake": 2000},
            **config,
        )
    )
    h.run(c.InsertShoe())
    h.run(c.TakeSeat(1, "p1"))
    h.run(c.OpenBetting())
    h.seat_bet("p1", "main", 1000, 1)
    h.run(c.CloseBetting())
    h.deal("9S", "5C", "6D", "TC")
    now = h.turn()
    assert now is not None and now["actors"] == ["seat:1"]
    return h


def test_the_xidach_dealer_catalogue_is_live_blackjacks_procedure() -> None:
    kinds = [k.kind for k in dealer_may_report("xidach")]
    assert kinds == ["wrong_position", "cards_exposed", "system_error", "other"]
    catalogue = find_game("xidach").incidents
    assert not {"multi_pull", "missed_scan"} & set(catalogue)  # baccarat's, not Xì Dách's
    for kind in [*kinds, "card_not_owed"]:
        entry = catalogue[kind]
        assert entry.blocking and entry.effects == {"void_on_confirm"}, kind
        assert "refunded" in entry.procedure and "shoe order" not in entry.procedure


def test_a_xidach_error_pauses_and_the_supervisors_confirmation_voids_the_round() -> None:
    h = xidach_round()
    answer = h.run(c.RaiseIncident("wrong_position", {"seat": 1}), "dealer:d1").answer
    assert answer["blocking"] is True and h.state.paused and not h.events("bets_refunded")
    with pytest.raises(BadResolution):  # nothing is re-arranged
        h.run(c.ResolveIncident(answer["incident_id"], "swap", order=("TC", "6D")), "supervisor:s")
    h.run(c.ResolveIncident(answer["incident_id"], "confirmed"), "supervisor:s")
    assert [r["bet_id"] for e in h.events("bets_refunded") for r in e["refunds"]] == ["b1"]
    assert h.state.round is not None and h.state.round.phase == "voided"
    assert h.state.shoe is None and not h.state.paused  # a fresh deck
    assert replayed_rounds(h).rounds == 1


def test_a_card_no_position_is_owed_in_xidach_is_the_same_error() -> None:
    h = xidach_round()
    h.deal("KD")  # pulled while seat 1 decides
    (raised,) = h.events("incident_raised")
    assert raised["kind"] == "card_not_owed" and h.state.paused
    h.run(c.ResolveIncident(raised["incident_id"], "KD on the table"), "supervisor:s")
    assert h.state.round is not None and h.state.round.phase == "voided"
    assert not h.events("round_result") and h.state.shoe is None


def test_a_void_raised_by_a_dealer_waits_for_a_supervisor() -> None:
    h = xidach_round()
    h.run(c.RaiseIncident("misdeal", {}), "dealer:d1")  # the supervisor's kind
    assert h.state.paused and h.state.round is not None and h.state.round.phase == "dealing"
    assert not h.events("bets_refunded")
    (incident,) = h.state.incidents
    h.run(c.ResolveIncident(incident, "confirmed: a misdeal"), "supervisor:s")
    assert h.current_round().phase == "voided" and h.state.shoe is None


@pytest.mark.parametrize(
    ("game", "kind", "details"),
    [
        ("xidach", "misdeal", {}),
        ("xidach", "wrong_position", {}),
        ("baccarat", "cards_exposed", {"count": 2}),
    ],
)
def test_every_incident_void_above_the_threshold_takes_two_supervisors(
    game: str, kind: str, details: dict[str, Any]
) -> None:
    if game == "xidach":
        h: Harness = xidach_round(void_approval_above=500)
    else:
        h = Harness(TableConfig(table_id="t1", void_approval_above=500))
        h.ready_shoe()
        h.run(c.OpenBetting())
        h.bet("player", 1000)
        h.run(c.CloseBetting())
        h.deal("9S")
    answer = h.run(c.RaiseIncident(kind, details), "supervisor:s1").answer
    assert answer["void_needs_approval"] is True
    assert h.state.paused and not h.events("bets_refunded")  # not one supervisor's void
    assert h.state.round is not None and h.state.round.phase == "dealing"
    if game == "xidach":  # resolving would confirm the void: refused
        with pytest.raises(RulesRefused) as refused:
            h.run(c.ResolveIncident(answer["incident_id"], "confirmed"), "supervisor:s1")
        assert refused.value.code == "void_needs_approval"
    h.run(c.VoidRound(f"{kind}: requested by s1, approved by s2"), "supervisor:s2")
    assert h.current_round().phase == "voided" and not h.state.incidents


@pytest.mark.parametrize("game", ["blackjack", "xidach"])
def test_two_cards_exposed_while_betting_are_an_error_the_supervisor_confirms(game: str) -> None:
    terms: dict[str, Any] = {"profile": "classic"} if game == "xidach" else {}
    h = Harness(TableConfig(table_id="g", game=game, void_approval_above=500, **terms))
    h.run(c.InsertShoe())
    h.run(c.TakeSeat(1, "p1"))
    h.run(c.OpenBetting())
    h.seat_bet("p1", "main", 1000, 1)
    h.deal("7S")  # exposed while betting is open: set aside
    assert not h.state.paused
    h.deal("8D")  # a second: seed 000's error (baccarat's rule 4 would void at once)
    (error,) = [e for e in h.events("incident_raised") if e["kind"] == "cards_exposed"]
    assert error["blocking"] and h.state.paused and not h.events("round_voided")
    h.deal("9C")  # a third is set aside under the same error
    assert [e["kind"] for e in h.events("incident_raised")].count("cards_exposed") == 1
    with pytest.raises(RulesRefused):  # above the threshold: two supervisors
        h.run(c.ResolveIncident(error["incident_id"], "confirmed"), "supervisor:s1")
    h.run(c.VoidRound("two cards exposed: requested by s1, approved by s2"), "supervisor:s2")
    assert [r["bet_id"] for e in h.events("bets_refunded") for r in e["refunds"]] == ["b1"]
    assert h.state.round is not None and h.state.round.phase == "voided"
    assert h.state.shoe is None and not h.state.incidents


def test_a_card_the_reader_could_not_read_stays_a_reader_incident() -> None:
    h = blackjack(1)
    h.seat_bet("p1", "main", 1000, 1)
    h.run(c.CloseBetting())
    h.deal("8S")
    h.run(c.ReaderFault("unreadable", {}))
    (raised,) = h.events("incident_raised")
    assert raised["kind"] == "unreadable_card" and h.state.paused
    h.run(
        c.ResolveIncident(raised["incident_id"], "6D read off the card", (c.EnteredCard("6D", 1),)),
        "supervisor:s",
    )
    assert h.state.round is not None and h.state.round.phase == "dealing"
    assert h.state.round.cards == ("8S", "6D") and not h.events("bets_refunded")
    h.deal("TC")
    h.act("seat:1", "stand", "p1")
    h.deal("TH")  # dealer 16: draws
    h.deal("2S")  # 18 beats 18? dealer 6 T 2 = 18, seat 8 T = 18: push
    assert h.events("bets_settled")[0]["results"][0]["result"] == "push"


def _shoe_resends(*cards: str) -> list[c.Command]:
    """The table commands of a serial shoe (its framed session, bytes in) that reads
    ``cards``, loses its cable before the last card's ACK, and sends that card again
    after reconnecting: the same physical card read twice."""
    from datetime import UTC, datetime

    from shoe_reader.framed_session import FramedSession
    from shoe_reader.framing import encode_frame
    from shoe_reader.session import Stamp
    from table_service.table.reader_pump import reader_command

    hello = encode_frame(0, "HLO", "M;1;S")
    session, t0 = FramedSession("bj-shoe"), datetime(2026, 1, 1, tzinfo=UTC)
    frames = b"".join(encode_frame(n, "CRD", card) for n, card in enumerate(cards, 1))
    events, _ = session.receive(hello + frames, Stamp(1.0, t0))
    events += session.connection_lost("device lost", Stamp(1.1, t0))
    again, _ = session.receive(hello + encode_frame(1, "CRD", cards[-1]), Stamp(4.0, t0))
    return [cmd for cmd in map(reader_command, events + again) if cmd is not None]


def _resolve_reader(h: Harness, kind: str, note: str, **kw: Any) -> None:
    (incident,) = [i for i in h.state.incidents.values() if i.kind == kind]
    h.run(c.ResolveIncident(incident.incident_id, note, **kw), "supervisor:s")


def test_a_card_the_shoe_read_twice_during_a_decision_is_a_reader_incident() -> None:
    h = blackjack(1)
    h.seat_bet("p1", "main", 1000, 1)
    h.run(c.CloseBetting())
    commands = _shoe_resends("8S", "6D", "8C")  # seat 1 to decide; 8C comes again
    assert c.ReaderFault("possible_duplicate", {"card": "8C", "text": ANY}) in commands
    for cmd in commands:
        h.run(cmd)
    raised = {e["kind"]: e for e in h.events("incident_raised")}
    assert set(raised) == {"reader_offline", "possible_duplicate"} and h.state.paused
    assert raised["possible_duplicate"]["details"]["index"] == 3
    _resolve_reader(h, "reader_offline", "cable plugged back")
    _resolve_reader(h, "possible_duplicate", "one 8C on the table: a re-send", read_twice=True)
    # put right without changing any hand: no dealing error, nothing refunded
    assert [e["kind"] for e in h.events("incident_raised")] == list(raised)
    rnd = h.state.round
    assert rnd is not None and rnd.phase == "dealing" and not h.state.paused
    assert rnd.cards == ("8S", "6D", "8C") and not h.events("bets_refunded")
    assert h.state.shoe is not None and h.state.shoe.seen["8C"] == 1  # one card, not two
    (moved,) = h.events("cards_rearranged")
    assert moved["read_twice"] == {"card": "8C", "index": 3}
    assert h.turn()["actors"] == ["seat:1"]
    h.act("seat:1", "stand", "p1")
    h.deal("TD", "9H")  # dealer 6 T = 16 draws 9: busts; seat 16 wins
    assert [(r["bet_id"], r["returned"]) for r in h.events("bets_settled")[0]["results"]] == [
        ("b1", 2000)
    ]
    assert h.state.shoe.seen["8C"] == 1 and h.state.shoe.seen["9H"] == 1
    assert replayed_rounds(h).returned == 2000
    # the regulator's records: one 8C dealt, the shoe indexes of the cards without a gap
    records = fold_records(logged(h))
    (shoe,) = records.shoes
    assert shoe["by_card"]["8C"]["dealt"] == 1 and shoe["duplicates"] == ["8C"]
    (record,) = records.rounds.values()
    dealt = [(x["card"], x["shoe_index"]) for x in record["cards"]]
    assert dealt == [("8S", 1), ("6D", 2), ("8C", 3), ("TD", 4), ("9H", 5)]
    assert h.replayed() == h.state


def test_a_card_read_twice_on_a_position_owed_leaves_that_position_to_the_next_card() -> None:
    h = blackjack(1)
    h.seat_bet("p1", "main", 1000, 1)
    h.run(c.CloseBetting())
    for cmd in _shoe_resends("8S"):  # seat 1's first card read twice: it lands on the dealer
        h.run(cmd)
    assert h.state.round is not None and h.state.round.cards == ("8S", "8S")
    _resolve_reader(h, "reader_offline", "cable plugged back")
    _resolve_reader(h, "possible_duplicate", "one 8S on the table", read_twice=True)
    assert h.current_round().cards == ("8S",)
    spot = h.current_round().next_position()
    assert spot is not None and spot.code == "DEALER"
    h.deal("6D")
    spot = h.current_round().next_position()
    assert spot is not None and spot.code == "S1H1"
    h.deal("TC")  # seat 1: 8 T = 18
    h.act("seat:1", "stand", "p1")
    h.deal("TH", "3S")  # dealer 6 T 3 = 19 beats 18
    (line,) = h.events("bets_settled")[0]["results"]
    assert (line["result"], line["returned"]) == ("lose", 0)
    outcome = h.events("round_result")[0]["outcome"]
    assert outcome["dealer"]["cards"] == ["6D", "TH", "3S"], outcome
    assert replayed_rounds(h).rounds == 1
    assert h.replayed() == h.state


def test_a_card_sent_again_after_its_round_settled_ends_nothing() -> None:
    h = blackjack(1)
    h.seat_bet("p1", "main", 1000, 1)
    h.run(c.CloseBetting())
    h.deal("TS", "6D", "9C")  # seat 1: 19
    h.act("seat:1", "stand", "p1")
    h.deal("TD")  # dealer 16 draws
    for cmd in _shoe_resends("2H"):  # dealer 18: settled; the cable goes, 2H comes again
        h.run(cmd)
    assert h.state.round is not None and h.state.round.phase == "settled"
    kinds = [e["kind"] for e in h.events("incident_raised")]
    assert kinds == ["reader_offline", "possible_duplicate"]  # not blackjack's error rule
    assert h.state.shoe is not None and not h.events("shoe_ended")
    assert h.events("card_set_aside")[-1]["reason"] == "possible_duplicate"
    _resolve_reader(h, "reader_offline", "cable plugged back")
    _resolve_reader(h, "possible_duplicate", "one 2H, read twice")
    h.run(c.OpenBetting())  # the shoe goes on
    assert h.current_round().phase == "betting"


def test_a_real_copy_no_position_is_owed_is_still_the_error_rule() -> None:
    h = blackjack(1)
    h.seat_bet("p1", "main", 1000, 1)
    h.run(c.CloseBetting())
    for cmd in _shoe_resends("8S", "6D", "8C"):
        h.run(cmd)
    _resolve_reader(h, "reader_offline", "cable plugged back")
    _resolve_reader(h, "possible_duplicate", "two 8C on the table: a real copy")
    assert h.events("incident_raised")[-1]["kind"] == "card_not_owed" and h.state.paused
    assert h.state.shoe is not None and h.state.shoe.seen["8C"] == 2


def test_only_a_possible_duplicate_takes_a_card_out_as_read_twice() -> None:
    h = blackjack(1)
    h.seat_bet("p1", "main", 1000, 1)
    h.run(c.CloseBetting())
    h.deal("8S")
    h.run(c.ReaderFault("unreadable", {}))
    with pytest.raises(BadResolution):
        _resolve_reader(h, "unreadable_card", "8S twice", read_twice=True)
    assert h.state.round is not None and h.state.round.cards == ("8S",) and h.state.paused


def test_a_card_the_camera_alone_saw_stays_a_reader_incident() -> None:
    # shoe and camera together: a card only the camera reported (seen twice) never deals
    h = blackjack(1)
    h.seat_bet("p1", "main", 1000, 1)
    h.run(c.CloseBetting())
    h.deal("8S", "6D", "8C")
    seen_again = SimpleNamespace(serial=None, camera="8C", detail="the shoe reported no card")
    h.run(disagreement_command(seen_again))  # what cross_check yields, as the pump sends it
    assert (
        h.state.paused
        and h.state.round is not None
        and h.state.round.cards
        == (
            "8S",
            "6D",
            "8C",
        )
    )
    _resolve_reader(h, "reader_disagreement", "8C shown twice to the camera")
    assert not h.state.paused and h.turn()["actors"] == ["seat:1"]
    assert [e["kind"] for e in h.events("incident_raised")] == ["reader_disagreement"]


# -- 5. insurance (even money) for a seat holding blackjack (seed 000 "Bảo Hiểm") ---------------
def test_a_seat_holding_blackjack_is_offered_insurance_against_an_ace() -> None:
    h = blackjack(1, 2)
    h.seat_bet("p1", "main", 1000, 1)
    h.seat_bet("p2", "main", 1000, 2)
    h.run(c.CloseBetting())
    h.deal("AS", "9H", "AD", "KC", "7C")  # seat 1: A K blackjack; seat 2: 9 7; dealer Ace
    turn = h.turn()
    assert turn is not None and turn["actors"] == ["seat:1"]
    assert h.legal("seat:1") == {"insurance", "stand"}  # never a hit on blackjack
    h.act("seat:1", "insurance", "p1")
    assert h.events("bets_placed")[-1]["bets"][0]["stake"] == 500
    then = h.turn()
    assert then is not None and then["actors"] == ["seat:2"]
    h.act("seat:2", "stand", "p2")
    h.deal("QD")  # dealer blackjack: insurance pays 2:1, blackjack pushes
    lines = {r["bet_id"]: r for r in h.events("bets_settled")[0]["results"]}
    assert {k: v["returned"] for k, v in lines.items()} == {
        "b1": 1000,
        "b1~insurance": 1500,
        "b2": 0,
    }
    assert replayed_rounds(h).returned == 2500


def test_even_money_declined_or_timed_out_and_settled_by_the_same_rule() -> None:
    h = blackjack(1, 2)
    h.seat_bet("p1", "main", 1000, 1)
    h.seat_bet("p2", "main", 1000, 2)
    h.run(c.CloseBetting())
    h.deal("AS", "AH", "AD", "KC", "QH")  # both seats hold blackjack against an Ace
    h.act("seat:1", "stand", "p1")  # declines
    turn = h.turn()
    assert turn is not None and turn["actors"] == ["seat:2"]
    h.tick(10)
    h.run(c.TurnTimeout(turn["clock"]))  # no answer: declined by the no-decision rule
    h.deal("5D")  # dealer A 5: no blackjack, stands on soft 16? draws
    h.deal("2C")  # A 5 2 = soft 18
    lines = {r["bet_id"]: r["returned"] for r in h.events("bets_settled")[0]["results"]}
    assert lines == {"b1": 2500, "b2": 2500}  # 3:2, no insurance stake taken
    # seat 2 took no action in the round (seed 000): it leaves the seat, seat 1 stays
    assert [r["seat"] for r in h.events("seat_released")] == [2]
    assert replayed_rounds(h).rounds == 1


# -- 6. Xì Dách: the bank passes by the order players joined the room (seed 001) -----------------
def _room(*seats: int) -> Harness:
    """Profile ``room`` with a seated bank; players take their seats in the order given."""
    config = TableConfig(
        table_id="xd",
        game="xidach",
        profile="room",
        game_rules={"banker": "seated"},
        limits={"min_stake": 100, "max_stake": 2000},  # taking the bank needs 5x 2000
        bet_limits={"bank": {"min_stake": 100, "max_stake": 10**9}},
    )
    h = Harness(config)
    h.run(c.InsertShoe())
    for n in seats:
        h.run(c.TakeSeat(n, f"p{n}"))
    return h


def _bank_bid(h: Harness, seat: int, balances: dict[str, int]) -> dict[str, Any]:
    h.bet_no += 1
    request = c.BetRequest(f"b{h.bet_no}", f"k{h.bet_no}", f"p{seat}", "bank", 10_000, seat)
    line: dict[str, Any] = h.run(c.PlaceBets((request,), balances)).answer["results"][0]
    return line


def test_the_bank_passes_to_the_player_who_came_in_after_the_banker_not_clockwise() -> None:
    # the banker (seat 3) opened the room; then seat 6, seat 1 and seat 5 came in
    h = _room(3, 6, 1, 5)
    rich = {f"p{n}": 50_000 for n in (1, 3, 5, 6)}
    h.run(c.OpenBetting(rich))
    assert _bank_bid(h, 3, rich)["status"] == "placed"
    for n in (6, 1, 5):
        assert h.seat_bet(f"p{n}", "main", 100, n)["status"] == "placed"
    assert h.state.round is not None and h.state.round.phase == "dealing"
    h.deal("TS", "TD", "TH", "7C", "KH", "9H", "KD", "TC")
    h.act("banker", "leave", "p3")  # the banker leaves: every punter wins, the bank passes
    assert h.current_round().phase == "settled" and 3 not in h.state.seats
    h.run(c.InsertShoe())  # one deck: a fresh deck each round
    h.run(c.OpenBetting(rich))
    # clockwise from seat 3 would be seat 5; the player who came in after the banker is 6
    refused = _bank_bid(h, 5, rich)
    assert (refused["status"], refused["error"]) == ("refused", "bank_passes")
    assert "seat 6" in refused["reason"]
    assert _bank_bid(h, 6, rich)["status"] == "placed"
    assert h.replayed() == h.state


def test_a_closed_room_reopens_with_the_next_player_to_have_joined_who_qualifies() -> None:
    h = _room(3, 6, 1, 5)
    rich = {"p1": 50_000, "p3": 50_000, "p5": 50_000, "p6": 50_000}
    h.run(c.OpenBetting(rich))
    _bank_bid(h, 3, rich)
    for n in (6, 1, 5):
        h.seat_bet(f"p{n}", "main", 100, n)
    h.deal("TS", "TD", "TH", "7C", "KH", "9H", "KD", "TC")
    h.act("banker", "leave", "p3")
    poor = {"p1": 500, "p5": 500, "p6": 500}
    h.run(c.ReviewRoom(poor))
    assert h.state.room_closed is not None
    h.run(c.InsertShoe())
    # seats 1 and 5 both qualify now; seat 1 came in before seat 5 (6, then 1, then 5)
    decision = h.run(c.OpenBetting({"p1": 10_000, "p5": 10_000, "p6": 500}))
    assert h.types(decision) == ["room_reopened", "betting_opened"]
    assert h.events("room_reopened")[0]["seat"] == 1


def test_the_joining_order_decides_and_clockwise_only_breaks_a_tie() -> None:
    from table_service.rules.xidach.bank import succession

    players = [(1, 0), (2, 0), (5, 0), (7, 0)]
    # the banker at seat 4 came in second: 7 (3rd), then 1 (5th); then, wrapping, 5 (1st)
    joined = {1: 5, 2: 9, 5: 1, 7: 3}
    assert [s for s, _ in succession(players, 4, joined, 2)] == [7, 1, 2, 5]
    # seats 1 and 7 came in together (the same place in the order): clockwise from 4
    tie = {1: 3, 2: 9, 5: 1, 7: 3}
    assert [s for s, _ in succession(players, 4, tie, 2)] == [7, 1, 2, 5]
    assert [s for s, _ in succession(players, 6, tie, 2)] == [7, 1, 2, 5]
    assert [s for s, _ in succession(players, 0, tie, 2)] == [1, 7, 2, 5]


# -- 7. the recorded decision: a punter's Xì Dách against the banker's (seed 002) ----------------
SEED_002_SECTION_2 = (
    "Xì dách: 1 lá Át cộng với bất cứ con nào sau đây: J, Q, K và 10 (Nếu nhà cái có Xì "
    "bàn hoặc Xì dách coi như bạn thua)."
)
SEED_002_SECTION_3_3 = (
    "Ngoại trừ tình huống người chơi nào có bài bằng hoặc là cao hơn so với nhà cái nếu "
    "không nhà cái cò xì dách hay xì bàn sẽ ăn hết."
)


def _xidach_decision() -> str:
    from pathlib import Path

    import table_service  # the checkout whose code is under test holds its rules documents

    root = Path(table_service.__file__).resolve().parents[1]
    doc = (root / "docs" / "rules" / "xidach.md").read_text()
    head = "**Decision (a punter's Xì Dách against the banker's Xì Dách):**"
    assert head in doc, "docs/rules/xidach.md records no decision on Xì Dách against Xì Dách"
    return " ".join(doc[doc.index(head) :].split("\n\n")[0].split())


def test_the_xi_dach_against_xi_dach_decision_quotes_each_section_of_seed_002() -> None:
    decision = _xidach_decision()
    assert "§2" in decision and SEED_002_SECTION_2 in decision  # the punter loses
    assert "§3.3" in decision and SEED_002_SECTION_3_3 in decision  # equal hands excepted
    assert "push" in decision and "every profile" in decision


@pytest.mark.parametrize("profile", ["classic", "forced-draw", "room"])
@pytest.mark.parametrize(
    ("punter", "result", "returned"),
    [
        (("AS", "KD"), "push", 1000),  # Xì Dách against Xì Dách: the recorded decision
        (("AS", "AH"), "win", 2500),  # Xì Bàng beats it, 1.5x
        (("9S", "9D"), "lose", 0),  # anything lower loses to it
    ],
)
def test_the_live_table_settles_a_banker_xi_dach_as_the_decision_says(
    profile: str, punter: tuple[str, str], result: str, returned: int
) -> None:
    assert "push" in _xidach_decision()
    config = TableConfig(
        table_id="xd",
        game="xidach",
        profile=profile,
        game_rules={"banker": "house"},
        limits={"min_stake": 100, "max_stake": 2000},
    )
    h = Harness(config)
    h.run(c.InsertShoe())
    h.run(c.TakeSeat(1, "p1"))
    h.run(c.OpenBetting())
    h.seat_bet("p1", "main", 1000, 1)
    if h.state.round is not None and h.state.round.phase == "betting":
        h.run(c.CloseBetting())  # (room closes it once every punter has bet)
    h.deal(punter[0], "AC", punter[1], "QC")  # the banker: A Q, Xì Dách
    if h.state.round is not None and h.state.round.phase == "dealing":
        h.act("seat:1", "stand", "p1")  # room: the hole card shows at the banker's turn
    rnd = h.state.round
    assert rnd is not None and rnd.phase == "settled", profile
    (line,) = [r for e in h.events("bets_settled") for r in e["results"]]
    assert (line["result"], line["returned"]) == (result, returned)
    assert replayed_rounds(h).returned == returned
