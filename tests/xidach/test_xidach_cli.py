"""`livetable settle xidach` and `livetable rtp xidach` through the real CLI root."""

from __future__ import annotations

import json
import math
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from table_service.cli import app
from table_service.rules.xidach.errors import ProfileError
from table_service.rules.xidach.profile import load_profile, load_profile_file
from table_service.rules.xidach.simulate import house_edge

runner = CliRunner()

ROUND = {
    "round": "c1",
    "cards": ["9S", "5H", "7D", "AS", "6H", "8D", "2C", "KC", "3H"],
    "seats": [{"seat": 1, "id": "b1", "stake": 1000}, {"seat": 2, "id": "b2", "stake": 500}],
    "decisions": [
        {"seat": 1, "hand": 1, "action": "hit"},
        {"seat": 2, "hand": 1, "action": "hit"},
        {"seat": 1, "hand": 1, "action": "stand"},
        {"seat": 2, "hand": 1, "action": "stand"},
        {"seat": "banker", "action": "hit"},  # the house draws on 15 (its policy: to 17)
        {"seat": "banker", "action": "check", "target": "all"},  # 18: checks everyone
    ],
}


def settle_lines(args: list[str], lines: list[object]) -> list[dict[str, Any]]:
    text = "\n".join(x if isinstance(x, str) else json.dumps(x) for x in lines) + "\n"
    result = runner.invoke(app, ["settle", "xidach", *args], input=text)
    assert result.exit_code == 0, result.output
    return [json.loads(line) for line in result.stdout.splitlines()]


def test_settle_one_line_per_input_line_errors_in_place() -> None:
    out = settle_lines(
        ["--profile", "classic"],
        [ROUND, "not json", {**ROUND, "cards": ROUND["cards"][:4]}, ROUND],
    )
    assert len(out) == 4
    assert out[0]["bets"] == [
        {"id": "b1", "seat": 1, "stake": 1000, "returned": 2000, "commission": 0},
        {"id": "b2", "seat": 2, "stake": 500, "returned": 1000, "commission": 0},
    ]
    assert out[0]["banker"] == {
        "seat": "house",
        "cards": ["7D", "8D", "3H"],
        "classification": "du_tuoi",
        "total": 18,
    }
    assert out[0]["hands"][1]["settled_by"] == "check"
    assert out[1]["line"] == 2 and "error" in out[1]
    assert out[2]["line"] == 3 and "too few cards" in out[2]["error"]
    assert out[3] == out[0]


def test_settle_reports_illegal_decisions_with_their_position() -> None:
    bad = {**ROUND, "decisions": [{"seat": 1, "action": "double"}]}
    (out,) = settle_lines(["--profile", "classic"], [bad])
    assert out["error"].startswith("ActionNotAllowedError: decision 1:")


def test_settle_refuses_decisions_after_the_round_ended() -> None:
    extra = {**ROUND, "decisions": [*ROUND["decisions"], {"seat": "banker", "action": "stand"}]}
    (out,) = settle_lines(["--profile", "classic"], [extra])
    assert "after the round was settled" in out["error"]


def test_settle_lists_unused_cards() -> None:
    more = {**ROUND, "cards": [*ROUND["cards"], "QS", "4D"]}
    (out,) = settle_lines(["--profile", "classic"], [more])
    assert out["unused_cards"] == ["QS", "4D"]


def test_settle_profile_from_the_line_or_the_option() -> None:
    (named,) = settle_lines([], [{**ROUND, "profile": "classic"}])
    (unnamed,) = settle_lines([], [ROUND])
    (clash,) = settle_lines(["--profile", "room"], [{**ROUND, "profile": "classic"}])
    assert named["profile"] == "classic"
    assert "no profile" in unnamed["error"]
    assert "differs" in clash["error"] or "names profile" in clash["error"]


def test_settle_unknown_profile_is_a_usage_error() -> None:
    result = runner.invoke(app, ["settle", "xidach", "--profile", "vegas"], input="")
    assert result.exit_code == 2
    assert "unknown profile" in result.output


def test_settle_accepts_ten_as_10() -> None:
    line = {**ROUND, "cards": ["10S", "5H", "7D", "9S", "6H", "8D", "KC", "2D"]}
    line["decisions"] = [
        {"seat": 1, "action": "stand"},
        {"seat": 2, "action": "hit"},
        {"seat": 2, "action": "stand"},
        {"seat": "banker", "action": "hit"},
        {"seat": "banker", "action": "check"},
    ]
    (out,) = settle_lines(["--profile", "classic"], [line])
    assert out["hands"][0]["cards"] == ["TS", "9S"]


def test_settle_with_a_rules_file(tmp_path: Path) -> None:
    text = Path("table_service/rules/xidach/profiles/classic.toml").read_text()
    custom = tmp_path / "generous.toml"
    custom.write_text(text.replace("natural = [3, 2]", "natural = [2, 1]"))
    line = {**ROUND, "cards": ["AS", "5H", "7D", "KH", "6H", "8D", "KC", "4C"]}
    line["decisions"] = [
        {"seat": 2, "action": "hit"},
        {"seat": 2, "action": "stand"},
        {"seat": "banker", "action": "hit"},
        {"seat": "banker", "action": "check"},
    ]
    (out,) = settle_lines(["--rules", str(custom)], [line])
    assert out["hands"][0]["returned"] == 3000  # natural pays 2:1 at this table


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (("decks = 1", "decks = 0"), "decks"),
        (("values = [1, 10, 11]", "values = [10, 11]"), "count 1"),
        (("must_draw_below = 16", 'must_draw_below = "16"'), "expected int"),
        (('turn_style = "rounds"', 'turn_style = "sideways"'), "turn_style"),
        (("[payouts]", "[payout]"), "payouts"),
    ],
)
def test_bad_profile_files_are_refused_with_the_field(
    tmp_path: Path, edit: tuple[str, str], message: str
) -> None:
    text = Path("table_service/rules/xidach/profiles/classic.toml").read_text()
    bad = tmp_path / "bad.toml"
    bad.write_text(text.replace(*edit, 1))
    with pytest.raises(ProfileError, match=message):
        load_profile_file(bad)


def test_rtp_json_is_seeded_and_independent_of_workers() -> None:
    args = ["rtp", "xidach", "--profile", "forced-draw", "--rounds", "3000", "--seed", "7"]
    one = runner.invoke(app, [*args, "--workers", "1", "--json"])
    two = runner.invoke(app, [*args, "--workers", "2", "--json"])
    assert one.exit_code == 0 and two.exit_code == 0, one.output + two.output
    report = json.loads(one.stdout)
    assert report == json.loads(two.stdout)
    main = report["bets"]["main"]
    assert report["game"] == "xidach" and report["rounds"] == 3000
    # the exact edge (deck enumeration) must lie in the simulation's CI: a real cross-check
    assert main["ci95"][0] < main["exact_house_edge"] < main["ci95"][1]
    assert main["exact_within_ci95"] is True
    assert main["exact_house_edge"] == pytest.approx(-0.02341573, abs=1e-8)
    assert math.isclose(main["rtp"], 1 - main["house_edge"], abs_tol=1e-6)
    assert math.isclose(sum(o["probability"] for o in main["outcomes"]), 1, abs_tol=1e-5)


def test_rtp_exact_json_and_commission(tmp_path: Path) -> None:
    result = runner.invoke(app, ["rtp", "xidach", "-p", "room", "--exact", "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    main = report["bets"]["main"]
    assert (report["method"], report["commission"]) == ("exact", "0")
    assert main["house_edge"] == pytest.approx(-0.02544772, abs=1e-8)
    share = Fraction(main["commission_for_1pct"])
    text = Path("table_service/rules/xidach/profiles/room.toml").read_text()
    taxed = tmp_path / "room-commission.toml"
    taxed.write_text(
        text.replace(
            "commission = [0, 100]", f"commission = [{share.numerator}, {share.denominator}]"
        )
    )
    result = runner.invoke(app, ["rtp", "xidach", "--rules", str(taxed), "--exact", "--json"])
    with_commission = json.loads(result.stdout)["bets"]["main"]
    assert with_commission["house_edge"] >= 0.01
    assert with_commission["house_edge_before_commission"] == main["house_edge"]
    result = runner.invoke(app, ["rtp", "xidach", "-p", "room", "--exact"])
    assert "commission for an edge of +1 %" in result.stdout


def test_rtp_table_output() -> None:
    result = runner.invoke(app, ["rtp", "xidach", "-p", "room", "-n", "500", "--workers", "1"])
    assert result.exit_code == 0, result.output
    assert "house edge" in result.stdout and "95 % CI" in result.stdout


def test_simulated_natural_frequencies_match_one_deck_odds() -> None:
    report = house_edge(load_profile("classic"), 20_000, seed=3)
    xi_dach = 2 * (4 / 52) * (16 / 51)
    xi_bang = (4 / 52) * (3 / 51)
    for kind, p in (("xi_dach", xi_dach), ("xi_bang", xi_bang)):
        se = math.sqrt(p * (1 - p) / 20_000)
        assert abs(report.kinds[kind] - p) < 4 * se, (kind, report.kinds[kind], p)
