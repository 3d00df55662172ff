"""The round log's rendering of the table's events: what a person watching reads."""

from __future__ import annotations

import io

from rich.console import Console

from table_service.demo.roundlog import RoundLog


def _log() -> tuple[RoundLog, io.StringIO]:
    out = io.StringIO()
    return RoundLog(Console(file=out, width=100, color_system=None)), out


def _event(kind: str, payload: dict, round_id: str | None = "bac-1-s1-g2") -> dict:  # type: ignore[type-arg]
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
    assert len(rule) <= 90 and "round bac-1-s1-g2 · game 2" in rule
    assert betting.endswith("open until 09:16:41 UTC")
