"""`livetable settle baccarat`: the spec's example, refusals, error lines, round trips."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
import typer
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from table_service.cli.games import baccarat as baccarat_cli
from table_service.rules.baccarat import (
    BET_TYPES,
    default_paytable,
    outcome,
    settle_bet,
    split_round,
)
from table_service.rules.baccarat.settle_command import settle_request
from table_service.rules.cards import RANKS, SUITS, parse_cards
from table_service.rules.settle_io import run_jsonl
from tests.support.crash_harness import run_cli

PT = default_paytable()

app = typer.Typer()
app.command("rtp")(baccarat_cli.rtp)
app.command("settle")(baccarat_cli.settle)
runner = CliRunner()

SPEC_IN = {
    "round": "r1",
    "game_number": 12,
    "cards": ["2S", "5H", "KD", "TC", "3S"],
    "bets": [
        {"id": "b1", "type": "player", "stake": 1000},
        {"id": "b2", "type": "tiger", "stake": 500},
    ],
}
SPEC_OUT = {
    "round": "r1",
    "game_number": 12,
    "player": {"cards": ["2S", "KD", "3S"], "total": 5},
    "banker": {"cards": ["5H", "TC"], "total": 5},
    "winner": "tie",
    "unused_cards": [],
    "bets": [
        {"id": "b1", "type": "player", "stake": 1000, "result": "push", "returned": 1000},
        {"id": "b2", "type": "tiger", "stake": 500, "result": "lose", "returned": 0},
    ],
}


def settle_lines(*lines: str, args: tuple[str, ...] = ()) -> list[dict[str, Any]]:
    result = runner.invoke(app, ["settle", *args], input="\n".join(lines) + "\n")
    assert result.exit_code == 0, result.output
    return [json.loads(line) for line in result.stdout.splitlines()]


def test_the_spec_example() -> None:
    assert settle_lines(json.dumps(SPEC_IN)) == [SPEC_OUT]


def test_unused_cards_and_10_codes() -> None:
    [out] = settle_lines(json.dumps({"cards": ["9S", "2H", "10D", "5C", "3S", "4H"]}))
    assert out["player"] == {"cards": ["9S", "TD"], "total": 9}
    assert out["unused_cards"] == ["3S", "4H"]
    assert out["winner"] == "player" and out["bets"] == []
    assert "round" not in out and "game_number" not in out


@pytest.mark.parametrize(("bet", "open_game"), [("big", 20), ("small", 20), ("perfect_pair", 30)])
def test_cut_offs_refuse_in_place(bet: str, open_game: int) -> None:
    def line(game: int) -> str:
        return json.dumps(
            {"game_number": game, "cards": ["KS", "QH", "9D", "8C"],
             "bets": [{"id": "x", "type": bet, "stake": 100},
                      {"id": "y", "type": "player", "stake": 100}]}
        )  # fmt: skip

    accepted, refused = settle_lines(line(open_game), line(open_game + 1))
    assert accepted["bets"][0]["result"] in {"win", "lose"}
    assert refused["bets"][0]["result"] == "refused"
    assert refused["bets"][0]["code"] == "bet_closed"
    assert f"game {open_game + 1}" in refused["bets"][0]["reason"]
    assert refused["bets"][0]["returned"] == 0
    assert refused["bets"][1] == accepted["bets"][1] == {
        "id": "y", "type": "player", "stake": 100, "result": "win", "returned": 200
    }  # fmt: skip


def test_unknown_type_and_bad_stakes_are_refused() -> None:
    [out] = settle_lines(
        json.dumps(
            {"cards": ["KS", "QH", "9D", "8C"],
             "bets": [{"id": 1, "type": "lucky7", "stake": 10},
                      {"id": 2, "type": "banker", "stake": 0},
                      {"id": 3, "type": "banker", "stake": -1},
                      {"id": 4, "type": "banker", "stake": "10"}]}
        )
    )  # fmt: skip
    assert [b["code"] for b in out["bets"]] == [
        "unknown_bet_type",
        "non_positive_stake",
        "non_positive_stake",
        "invalid_stake",
    ]
    assert all(b["result"] == "refused" and b["returned"] == 0 for b in out["bets"])


def test_malformed_lines_get_error_lines_and_processing_continues() -> None:
    good = json.dumps(SPEC_IN)
    lines = [
        "this is not json",
        json.dumps(["a", "list"]),
        json.dumps({"cards": "2S 5H KD TC"}),
        json.dumps({"cards": ["2S", "5H", "ZZ", "TC"]}),
        json.dumps({"cards": ["2S", "5H", "KD", "TC"]}),  # Player 2 must draw: incomplete
        json.dumps({"cards": ["KS", "QH", "9D", "8C"], "bets": [{"type": "tie"}]}),
        json.dumps({"cards": ["KS", "QH", "9D", "8C"], "game_number": 0}),
        good,
    ]
    out = settle_lines(*lines)
    assert len(out) == len(lines)
    for number, line in enumerate(out[:-1], start=1):
        assert line["line"] == number and line["error"], line
    assert "IncompleteRound" in out[4]["error"]
    assert "CardError" in out[3]["error"]
    assert out[-1] == SPEC_OUT


def test_rules_file_changes_the_pays(tmp_path: Path) -> None:
    rules = tmp_path / "table.toml"
    rules.write_text("[bets.tie]\npays = { win = 9 }\ncloses_after = 5\n", encoding="utf-8")
    line = json.dumps(
        {"game_number": 5, "cards": SPEC_IN["cards"],
         "bets": [{"type": "tie", "stake": 10}, {"type": "player", "stake": 10}]}
    )  # fmt: skip
    [out] = settle_lines(line, args=("--rules", str(rules)))
    assert out["bets"][0]["returned"] == 100
    assert out["bets"][1]["code"] == "bet_not_offered"
    bad = tmp_path / "bad.toml"
    bad.write_text("[bets.tie]\npays = { win = -1 }\n", encoding="utf-8")
    result = runner.invoke(app, ["settle", "--rules", str(bad)], input="")
    assert result.exit_code == 2
    assert "negative" in result.output


def test_through_the_installed_command() -> None:
    done = run_cli(["settle", "baccarat"], input=json.dumps(SPEC_IN) + "\nnot json\n", timeout=120)
    done.check_returncode()
    first, second = done.stdout.splitlines()
    assert json.loads(first) == SPEC_OUT
    assert json.loads(second)["line"] == 2


# --- round trips ---------------------------------------------------------------------------

codes_st = st.builds(lambda r, s: r + s, st.sampled_from(RANKS), st.sampled_from(SUITS))
bets_st = st.lists(
    st.fixed_dictionaries(
        {
            "id": st.integers(0, 999),
            "type": st.sampled_from(BET_TYPES),
            "stake": st.integers(1, 10**7),
        }
    ),
    max_size=6,
)


@settings(max_examples=100)
@given(
    st.lists(codes_st, min_size=6, max_size=8),
    bets_st,
    st.one_of(st.none(), st.integers(1, 60)),
)
def test_settle_round_trips(cards: list[str], bets: list[dict[str, Any]], game: int | None) -> None:
    request: dict[str, Any] = {"round": "r", "cards": cards, "bets": bets}
    if game is not None:
        request["game_number"] = game
    source = io.StringIO(json.dumps(request) + "\n")
    sink = io.StringIO()
    assert run_jsonl(source, sink, lambda r: settle_request(r, PT)) == 0
    response = json.loads(sink.getvalue())
    # The cards come back, split by side, and re-interleave into shoe order.
    player, banker = response["player"]["cards"], response["banker"]["cards"]
    shoe_order = [player[0], banker[0], player[1], banker[1], *player[2:], *banker[2:]]
    assert shoe_order + response["unused_cards"] == [c for c in cards]
    used, _ = split_round(parse_cards(cards))
    expected = outcome(used)
    assert response["winner"] == expected.winner
    assert response["player"]["total"] == expected.player_total
    assert response["banker"]["total"] == expected.banker_total
    assert len(response["bets"]) == len(bets)
    for bet, line in zip(bets, response["bets"], strict=True):
        assert (line["id"], line["type"], line["stake"]) == (bet["id"], bet["type"], bet["stake"])
        closes = PT.closes_after(bet["type"])
        if game is not None and closes is not None and game > closes:
            assert line["result"] == "refused" and line["returned"] == 0
            continue
        settled = settle_bet(bet["type"], bet["stake"], expected, PT)
        assert (line["result"], line["returned"]) == (settled.result, settled.returned)
        if line["result"] == "lose":
            assert line["returned"] == 0
    # Settling the same line again gives the same answer.
    assert settle_request(json.loads(json.dumps(request)), PT) == response
