"""`livetable settle blackjack` and `livetable rtp blackjack` through the real CLI root."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from table_service.cli import app

runner = CliRunner()

ROUND = {
    "round": "r1",
    "seats": [
        {
            "seat": 1,
            "bets": [
                {"id": "m1", "type": "main", "stake": 1000},
                {"id": "p1", "type": "pair", "stake": 100},
                {"id": "bb1", "type": "behind", "stake": 500},
            ],
        },
        {"seat": 3, "bets": [{"id": "m3", "type": "main", "stake": 500}]},
    ],
    "cards": ["8S", "9H", "6D", "8D", "2C", "2H", "TH", "3H", "5H", "TS", "TC", "4D"],
    "decisions": [
        {"seat": 1, "hand": 1, "action": "split"},
        {"behind": "bb1", "action": "accept"},
        {"seat": 1, "hand": 1, "action": "double"},
        {"seat": 1, "hand": 2, "action": "stand"},
        {"seat": 3, "hand": 1, "action": "no_decision"},
    ],
}


def settle_lines(*lines: str, args: tuple[str, ...] = ()) -> list[dict[str, Any]]:
    result = runner.invoke(app, ["settle", "blackjack", *args], input="\n".join(lines) + "\n")
    assert result.exit_code == 0, result.output
    return [json.loads(line) for line in result.stdout.splitlines()]


def test_settle_round_with_split_double_behind_pair_and_timeout() -> None:
    [out] = settle_lines(json.dumps(ROUND))
    assert out["round"] == "r1"
    assert out["dealer"] == {"cards": ["6D", "TS", "TC"], "total": 26, "classification": "bust"}
    seat1, seat3 = out["seats"]
    assert [h["cards"] for h in seat1["hands"]] == [["8S", "2H", "TH"], ["8D", "3H"]]
    assert seat1["hands"][0]["doubled"] and seat1["hands"][0]["total"] == 20
    assert seat3["removed"] and not seat1["removed"]
    assert seat3["hands"][0]["cards"] == ["9H", "2C", "5H"]  # no decision: hit 11, stand 16
    assert out["unused_cards"] == ["4D"]
    returned = {(b["id"], b["hand"], b["part"]): (b["result"], b["returned"]) for b in out["bets"]}
    assert returned == {
        ("m1", 1, "original"): ("win", 2000),
        ("m1", 1, "double"): ("win", 2000),
        ("m1", 2, "split"): ("win", 2000),
        ("p1", None, "pair"): ("win", 1200),
        ("bb1", 1, "original"): ("win", 1000),  # the double offer timed out: no double
        ("bb1", 2, "split"): ("win", 1000),
        ("m3", 1, "original"): ("win", 1000),
    }


def test_impossible_sequences_yield_error_lines_and_processing_continues() -> None:
    short = dict(ROUND, cards=ROUND["cards"][:9])
    illegal = dict(
        ROUND,
        decisions=[
            {"seat": 1, "hand": 1, "action": "hit"},
            {"seat": 1, "hand": 1, "action": "surrender"},
        ],
    )
    wrong_seat = dict(ROUND, decisions=[{"seat": 3, "hand": 1, "action": "stand"}])
    extra = dict(ROUND, decisions=[*ROUND["decisions"], {"seat": 1, "hand": 1, "action": "hit"}])
    out = settle_lines(
        json.dumps(short),
        "{not json",
        json.dumps(illegal),
        json.dumps(wrong_seat),
        json.dumps(extra),
        json.dumps(dict(ROUND, cards=["XX"])),
        json.dumps(ROUND),
    )
    assert out[0] == {"line": 1, "error": "RoundInputError: too few cards: the dealer needs "
                      "the next card"}  # fmt: skip
    assert out[1]["line"] == 2 and "JSONDecodeError" in out[1]["error"]
    assert out[2] == {"line": 3, "error": "IllegalDecision: surrender refused: surrender only "
                      "as the first decision on the first two cards"}  # fmt: skip
    assert out[3]["line"] == 4 and out[3]["error"].startswith("NotYourTurn")
    assert out[4]["line"] == 5 and "after the round was complete" in out[4]["error"]
    assert out[5]["line"] == 6 and out[5]["error"].startswith("CardError")
    assert out[6]["round"] == "r1"


def test_illegal_decision_is_a_typed_error_line() -> None:
    request = {
        "seats": [{"seat": 2, "bets": [{"id": "m", "type": "main", "stake": 100}]}],
        "cards": ["TS", "AD", "9H"],
        "decisions": [{"seat": 2, "hand": 1, "action": "surrender"}],
    }
    [out] = settle_lines(json.dumps(request))
    assert out == {"line": 1, "error": "IllegalDecision: surrender refused: no surrender "
                   "against a dealer A"}  # fmt: skip


def test_insurance_decision_settles_as_its_own_bet() -> None:
    request = {
        "round": "ins",
        "seats": [{"seat": 2, "bets": [{"id": "m", "type": "main", "stake": 1001}]}],
        "cards": ["TS", "AD", "9H", "KC"],
        "decisions": [
            {"seat": 2, "hand": 1, "action": "insurance"},
            {"seat": 2, "hand": 1, "action": "stand"},
        ],
    }
    [out] = settle_lines(json.dumps(request))
    assert out["seats"][0]["insured"] and out["dealer"]["classification"] == "blackjack"
    assert [(b["type"], b["stake"], b["result"], b["returned"]) for b in out["bets"]] == [
        ("main", 1001, "lose", 0),
        ("insurance", 500, "win", 1500),
    ]


def test_settle_with_a_rules_file(tmp_path: Path) -> None:
    rules = tmp_path / "bj.toml"
    rules.write_text("[blackjack]\nblackjack_pays = '6:5'\n")
    request = {
        "seats": [{"seat": 1, "bets": [{"id": "m", "type": "main", "stake": 1000}]}],
        "cards": ["AS", "9D", "KH", "TC"],
    }
    [out] = settle_lines(json.dumps(request), args=("--rules", str(rules)))
    assert out["bets"][0]["returned"] == 2200


def test_bad_rules_file_is_a_clear_error(tmp_path: Path) -> None:
    rules = tmp_path / "bj.toml"
    rules.write_text("[blackjack]\ndecks = 'eight'\n")
    result = runner.invoke(app, ["rtp", "blackjack", "--rules", str(rules)])
    assert result.exit_code == 2
    assert "decks must be an integer" in result.output


def test_rtp_json_for_a_single_deck_table(tmp_path: Path) -> None:
    rules = tmp_path / "one.toml"
    rules.write_text("[blackjack]\ndecks = 1\n")
    result = runner.invoke(app, ["rtp", "blackjack", "--rules", str(rules), "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["game"] == "blackjack" and report["method"] == "exact" and report["decks"] == 1
    main = report["bets"]["main"]
    assert main["rtp"] == round(1 + main["expectation"], 6)
    assert main["house_edge"] == round(-main["expectation"], 6)
    assert report["bets"]["pair"]["outcomes"][0]["probability"] == "1/17"
    assert report["bets"]["insurance"]["rtp_exact"] == "16/17"
    assert report["chart"]["pair A"]["A"] == "split"
    assert "99.54 %" in report["comparison"]


def test_declared_insurance_bet_names_its_line_and_is_checked() -> None:
    request = {
        "seats": [
            {
                "seat": 2,
                "bets": [
                    {"id": "m", "type": "main", "stake": 1000},
                    {"id": "ins", "type": "insurance", "stake": 500},
                ],
            }
        ],
        "cards": ["TS", "AD", "9H", "7C"],
        "decisions": [
            {"seat": 2, "hand": 1, "action": "insurance"},
            {"seat": 2, "hand": 1, "action": "stand"},
        ],
    }
    no_decision = dict(request, decisions=[{"seat": 2, "hand": 1, "action": "stand"}])
    wrong_stake = json.loads(json.dumps(request))
    wrong_stake["seats"][0]["bets"][1]["stake"] = 400
    out = settle_lines(json.dumps(request), json.dumps(no_decision), json.dumps(wrong_stake))
    assert out[0]["bets"][1] == {
        "id": "ins", "type": "insurance", "seat": 2, "hand": None, "part": "insurance",
        "stake": 500, "result": "lose", "returned": 0, "reason": "no dealer blackjack",
    }  # fmt: skip
    assert out[0]["seats"][0]["hands"][0]["result"] == "win"  # 19 v dealer A 7 = soft 18
    assert "without an insurance decision" in out[1]["error"]
    assert "half the main bet (500), got 400" in out[2]["error"]
