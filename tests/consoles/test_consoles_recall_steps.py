"""What a recall's steps carry for the page to say them in words, from the log's events:
a step of few bets names each, of many their count and sum; a settlement its return; a
resolved incident its kind and how; the rules, not the reader, as the actor of what the
rules did on a card the reader reported, while a person's void stays that person's."""

from __future__ import annotations

from typing import Any

from audit.store import StoredEvent
from table_service.consoles.recall import recall_round

ROUND = "bj-1-s2-g2"


def _events(*specs: tuple[str, str, dict[str, Any]]) -> list[StoredEvent]:
    return [
        StoredEvent(
            seq=i + 1,
            table_id="bj-1",
            round_id=ROUND,
            type=kind,
            actor=actor,
            ts=f"2026-12-05T16:55:0{i}.000000+00:00",
            payload={"round_id": ROUND, **payload},
            prev_hash="0" * 64,
            hash=f"{i:064x}",
        )
        for i, (kind, actor, payload) in enumerate(specs)
    ]


def _bet(key: str, seat: int, stake: int, account: str) -> dict[str, Any]:
    return {"bet_id": key, "account": account, "type": "main", "stake": stake, "seat": seat}


def _steps(events: list[StoredEvent]) -> list[dict[str, Any]]:
    row = {"round_id": ROUND, "game_number": 2, "shoe_no": 2, "phase": "voided"}
    record = recall_round(row, events, "demo-dealer", game="blackjack", settle_input=None)
    steps: list[dict[str, Any]] = record["steps"]
    return steps


def test_each_step_carries_what_it_says_and_whose_it_is() -> None:
    few = [_bet("a", 1, 1000, "ann"), _bet("b", 3, 5000, "bo")]
    many = [_bet(f"m{n}", n, 100 * n, f"p{n}") for n in range(1, 5)]
    refunds = [{**b, "returned": b["stake"]} for b in few + many]
    reason = "two or more cards exposed before betting closed"
    steps = _steps(
        _events(
            ("bets_placed", "operator:op", {"bets": few}),
            ("bets_placed", "operator:op", {"bets": many}),
            ("card_set_aside", "reader:bj-1-shoe", {"card": "QD", "reason": "exposed"}),
            ("incident_raised", "reader:bj-1-shoe", {"incident_id": "i4", "kind": "cards_exposed"}),
            ("incident_resolved", "system", {"incident_id": "i4", "resolution": "rule 4: void"}),
            ("bets_refunded", "reader:bj-1-shoe", {"refunds": refunds, "reason": reason}),
            ("round_voided", "reader:bj-1-shoe", {"reason": reason}),
        )
    )
    placed_few, placed_many, aside, raised, resolved, refunded, voided = steps
    assert placed_few["bets"] == 2 and placed_few["stake"] == 6000
    assert placed_few["items"] == [
        {"seat": 1, "type": "main", "stake": 1000, "account": "ann"},
        {"seat": 3, "type": "main", "stake": 5000, "account": "bo"},
    ]
    assert placed_many["bets"] == 4 and placed_many["stake"] == 1000 and "items" not in placed_many
    assert (resolved["kind"], resolved["resolution"]) == ("cards_exposed", "rule 4: void")
    assert refunded["lines"] == 6 and refunded["returned"] == 7000
    assert refunded["reason"] == reason
    # the reader reported the cards; setting one aside and voiding are the rules'
    assert not raised["by_rules"] and raised["by"] == "reader:bj-1-shoe"
    assert aside["by_rules"] and refunded["by_rules"] and voided["by_rules"]


def test_a_persons_void_is_that_persons() -> None:
    refunds = [{**_bet("a", 1, 1000, "ann"), "returned": 1000}]
    steps = _steps(
        _events(
            ("bets_refunded", "supervisor:sup-bao", {"refunds": refunds, "reason": "dropped"}),
            ("round_voided", "supervisor:sup-bao", {"reason": "dropped"}),
        )
    )
    assert not any(s["by_rules"] for s in steps)
    assert {s["actor"] for s in steps} == {"supervisor:sup-bao"}


def test_a_seated_bank_is_told_apart_from_the_punters_bets() -> None:
    results = [
        {"bet_id": "a", "type": "main", "stake": 1300, "result": "lose", "returned": 0},
        {"bet_id": "b", "type": "main", "stake": 600, "result": "win", "returned": 1200},
        {"bet_id": "k", "type": "bank", "stake": 200_000, "result": "win", "returned": 200_700},
    ]
    totals = {"bets": 3, "staked": 201_900, "returned": 201_900}
    settled, totalled = _steps(
        _events(
            ("bets_settled", "dealer:ann", {"results": results}),
            ("round_settled", "dealer:ann", totals),
        )
    )
    assert (settled["lines"], settled["returned"]) == (2, 1200)
    assert settled["bank"] == {"stake": 200_000, "returned": 200_700}
    assert totalled["details"] == totals  # as logged; the bank beside it for the words
    assert totalled["bank"] == {"lines": 1, "stake": 200_000, "returned": 200_700}
