"""The round log's rendering of the table's events: what a person watching reads."""

from __future__ import annotations

import io
from typing import Any

from rich.console import Console

from table_service.demo.roundlog import RoundLog


def _log() -> tuple[RoundLog, io.StringIO]:
    out = io.StringIO()
    return RoundLog(Console(file=out, width=100, color_system=None)), out


def _event(
    kind: str, payload: dict[str, Any], round_id: str | None = "bac-1-s1-g2"
) -> dict[str, Any]:
    return {
        "type": kind,
        "payload": payload,
        "ts": "2026-12-01T09:16:36.123456+00:00",
        "round_id": round_id,
        "actor": "reader:bac-1-shoe",
        "table_id": "bac-1",
    }


def test_incident_details_show_cards_as_card_lines_do() -> None:
    log, out = _log()
    log.on_event(
        _event(
            "incident_raised",
            {
                "incident_id": "bac-1-i3",
                "kind": "cards_exposed",
                "blocking": False,
                "round_id": "bac-1-s1-g2",
                "details": {"count": 2, "last_card": "TS", "reason": "TS is not a card name"},
            },
        )
    )
    text = out.getvalue()
    assert "count=2, last_card=10♠" in text
    assert "reason=TS is not a card name" in text  # free text is left alone
    assert "=TS," not in text


def test_settled_round_says_which_bets_won_and_pushed() -> None:
    log, out = _log()
    results = [
        {
            "bet_id": "1",
            "account": "p-1",
            "type": "banker",
            "stake": 1000,
            "result": "win",
            "returned": 1950,
        },
        {
            "bet_id": "2",
            "account": "p-2",
            "type": "player",
            "stake": 500,
            "result": "lose",
            "returned": 0,
        },
        {
            "bet_id": "3",
            "account": "p-3",
            "type": "dragon",
            "stake": 200,
            "result": "push",
            "returned": 200,
        },
    ]
    log.on_event(_event("bets_settled", {"round_id": "bac-1-s1-g2", "results": results[:2]}))
    log.on_event(_event("bets_settled", {"round_id": "bac-1-s1-g2", "results": results[2:]}))
    log.on_event(
        _event(
            "round_settled",
            {"round_id": "bac-1-s1-g2", "bets": 3, "staked": 1700, "returned": 2150},
        )
    )
    lines = out.getvalue().splitlines()
    assert "house −450" in lines[0]
    assert lines[1].split(maxsplit=3)[2] == "payouts"
    assert lines[1].endswith("won: p-1 banker 1,000 → 1,950 · push: p-3 dragon 200 → 200 · 1 lost")
    assert log.totals.rounds_settled == 1


def test_long_lines_are_not_wrapped_and_rules_fit_a_line() -> None:
    out = io.StringIO()
    log = RoundLog(Console(file=out, width=1000, color_system=None, soft_wrap=True))
    log.note("dealer", "x" * 300, "bac-1-s1-g1")
    log.on_event(
        _event(
            "betting_opened",
            {"round_id": "bac-1-s1-g2", "game_number": 2, "closes_at": "2026-12-01T09:16:41Z"},
        )
    )
    first, rule, betting = out.getvalue().splitlines()
    assert first.endswith("x" * 300)
    assert len(rule) <= 90 and "round 1 · bac-1-s1-g2 · game 2 of the shoe" in rule
    assert betting.endswith("open until 09:16:41 UTC")


def test_a_surrender_gets_half_back_and_a_side_bet_is_named_once() -> None:
    log, out = _log()
    results = [
        {
            "account": "p-1",
            "type": "main",
            "part": "original",
            "seat": 1,
            "stake": 1000,
            "result": "half_refund",
            "returned": 500,
        },
        {
            "account": "p-1",
            "type": "pair",
            "part": "pair",
            "seat": 1,
            "stake": 200,
            "result": "lose",
            "returned": 0,
        },
        {
            "account": "p-2",
            "type": "insurance",
            "part": "insurance",
            "seat": 2,
            "stake": 250,
            "result": "win",
            "returned": 750,
        },
        {
            "account": "p-2",
            "type": "main",
            "part": "double",
            "seat": 2,
            "stake": 500,
            "result": "lose",
            "returned": 0,
        },
    ]
    log.on_event(_event("bets_settled", {"round_id": "bj-1-s1-g1", "results": results}))
    log.on_event(
        _event(
            "round_settled",
            {"round_id": "bj-1-s1-g1", "bets": 4, "staked": 1950, "returned": 1250},
        )
    )
    text = out.getvalue()
    assert "surrendered, half back: p-1 seat 1 main 1,000 → 500" in text
    assert "p-1 seat 1 pair 200" in text and "pair pair" not in text
    assert "p-2 seat 2 insurance 250 → 750" in text and "insurance insurance" not in text
    assert "p-2 seat 2 main double 500" in text
    lost = text.split("lost: ", 1)[1]
    assert "main 1,000" not in lost  # a surrender is not listed as lost


def test_a_card_not_owed_says_in_words_what_the_table_awaited() -> None:
    log, out = _log()
    expected = {"kind": "decision", "actors": ["seat:1"], "ms": 10000, "clock": "seat:1:h1:c2:i0"}
    log.on_event(
        _event(
            "incident_raised",
            {
                "incident_id": "bj-1-i2",
                "kind": "card_not_owed",
                "blocking": True,
                "round_id": "bj-1-s1-g2",
                "details": {"card": "QH", "expected": expected},
            },
            "bj-1-s1-g2",
        )
    )
    text = out.getvalue()
    assert "card=Q♥, expected a decision from seat 1" in text
    assert "{" not in text and "clock" not in text


def test_a_rearranged_seat_round_shows_each_cards_position() -> None:
    log, out = _log()
    log.on_event(
        _event(
            "cards_rearranged",
            {
                "round_id": "bj-1-s1-g1",
                "cards": ["JD", "7D", "5H", "4S"],
                "positions": ["S1H1", "DEALER", "S1H1", "S2H1"],
                "entered": ["5H"],
            },
        )
    )
    assert "S1H1 J♦  DEALER 7♦  S1H1 5♥  S2H1 4♠  (entered by hand: 5♥)" in out.getvalue()


def test_a_xidach_round_names_special_hands_and_keeps_the_bank_out_of_the_stakes() -> None:
    log, out = _log()
    rid = "xd-room-s4-g1"
    log.on_event(
        _event(
            "betting_opened",
            {"round_id": rid, "game_number": 1, "closes_at": "2026-12-01T09:16:41Z"},
            rid,
        )
    )
    bets = [
        {"bet_id": "b", "account": "banker9", "type": "bank", "stake": 200_000, "seat": 5},
        {"bet_id": "p", "account": "punter1", "type": "main", "stake": 1_000, "seat": 1},
    ]
    log.on_event(_event("bets_placed", {"round_id": rid, "bets": bets}, rid))
    log.on_event(_event("betting_closed", {"round_id": rid, "reason": "countdown"}, rid))
    outcome = {
        "banker": {"seat": 5, "cards": ["AS", "AH"], "classification": "xi_bang", "total": 12},
        "hands": [
            {
                "seat": 1,
                "hand": 1,
                "cards": ["2C", "3D", "4H", "5S", "AC"],
                "classification": "ngu_linh",
                "total": 15,
                "result": "lose",
                "settled_by": "showdown",
            },
        ],
    }
    log.on_event(_event("round_result", {"round_id": rid, "outcome": outcome}, rid))
    lines = [
        {
            "account": "banker9",
            "type": "bank",
            "seat": 5,
            "stake": 200_000,
            "result": "win",
            "returned": 201_000,
        },
        {
            "account": "punter1",
            "type": "main",
            "seat": 1,
            "stake": 1_000,
            "result": "lose",
            "returned": 0,
        },
    ]
    log.on_event(_event("bets_settled", {"round_id": rid, "results": lines}, rid))
    log.on_event(
        _event(
            "round_settled",
            {"round_id": rid, "bets": 2, "staked": 201_000, "returned": 201_000},
            rid,
        )
    )
    text = out.getvalue()
    assert "1 bet from 1 player, 1,000 staked; the bank: banker9 at seat 5 commits 200,000" in text
    assert "BANKER (seat 5) A♠ A♥ XÌ BÀNG" in text and "= 12" not in text
    assert "NGŨ LINH  loses (showdown)" in text
    assert "1 bet settled: staked 1,000, returned 0; the bank (banker9, seat 5)" in text
    assert "200,000 → 201,000 (+1,000)" in text
    assert log.totals.staked == 1_000 and log.totals.returned == 0
    assert log.totals.bank_net == 1_000


def test_rounds_are_numbered_as_the_table_counts_them() -> None:
    out = io.StringIO()
    log = RoundLog(Console(file=out, width=100, color_system=None), rounds_before=41)
    payload = {"round_id": "bj-1-s3-g2", "game_number": 2, "closes_at": "2026-12-01T09:16:41Z"}
    log.on_event(_event("betting_opened", payload))
    assert "round 42 · bj-1-s3-g2 · game 2 of the shoe" in out.getvalue()


def test_a_void_refunds_the_punters_stakes_and_gives_the_bank_back_apart() -> None:
    log, out = _log()
    refunds = [
        {
            "bet_id": "b",
            "account": "banker9",
            "type": "bank",
            "stake": 199_500,
            "returned": 199_500,
        },
        {"bet_id": "a", "account": "punter3", "type": "main", "stake": 300, "returned": 300},
    ]
    round_id = "xd-room-s3-g1"
    reason = "demo stopped mid-round: every stake refunded"
    log.on_event(_event("bets_refunded", {"round_id": round_id, "refunds": refunds}, round_id))
    log.on_event(_event("round_voided", {"round_id": round_id, "reason": reason}, round_id))
    text = out.getvalue()
    assert f"ROUND VOID ({reason}): 1 stake refunded, 300 in total" in text
    assert "the bank's 199,500 back to its holder" in text


def test_the_summary_lists_a_few_mistakes_and_counts_many() -> None:
    from table_service.cli.demo import mistakes_line

    few = [("bj-1-s1-g2", "missed_scan"), ("bj-1-s1-g5", "exposed_card")]
    assert mistakes_line(few) == (
        "dealer mistakes: missed_scan in bj-1-s1-g2, exposed_card in bj-1-s1-g5"
    )
    many = [(f"xd-s{n}-g1", "missed_scan" if n % 3 else "card_not_owed") for n in range(1, 92)]
    line = mistakes_line(many)
    assert line.startswith("dealer mistakes: 91 (card_not_owed 30, missed_scan 61); the first: ")
    assert line.endswith("missed_scan in xd-s5-g1") and len(line) < 300
