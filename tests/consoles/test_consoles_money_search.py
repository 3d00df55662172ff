"""The pit's money and the recall's search, through HTTP on SQLite and PostgreSQL, and who
may see them: stakes in play equal the open stakes; the table's result for the shoe and
the day; a search by round id, table and time for staff, by account only for a regulator
or the operator owning the account, never another operator's; the public view counts and
sums the stakes but names no account."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from urllib.parse import quote

import pytest
from fastapi.testclient import TestClient

from table_service.app import build_app
from table_service.consoles import money
from table_service.principals import add_principal
from table_service.runtime import Runtime
from table_service.table.config import TableConfig
from table_service.table.state import OpenBet
from tests.consoles.consoles_rig import Rig


@pytest.fixture
def rig(make_runtime: Callable[..., Runtime]) -> Iterator[Rig]:
    runtime = make_runtime()
    tokens = {}
    with runtime.sessions.begin() as session:
        for name, role, bound in (
            ("dealer", "dealer", "bac-1"),
            ("supervisor", "supervisor", None),
            ("regulator", "regulator", None),
            ("operator", "operator", None),
            ("other-operator", "operator", None),
            ("admin", "admin", None),
        ):
            tokens[name] = add_principal(
                session, runtime.store, name, role, table_id=bound, actor="test"
            )
    configs = [TableConfig(table_id="bac-1", betting_seconds=60)]
    with TestClient(build_app(runtime, configs, with_readers=False)) as client:
        r = Rig(client, tokens)
        for account, who in (("acct-1", "operator"), ("acct-9", "other-operator")):
            body = {"amount": 100_000, "reference": f"fund-{account}"}
            r.post(f"/accounts/{account}/credit", who, body)
        r.post("/tables/bac-1/shoe", "supervisor")
        r.cards("2S", "3H", "4H")
        yield r


BETS = [
    {"key": "k1", "account": "acct-1", "type": "player", "stake": 1000},
    {"key": "k2", "account": "acct-1", "type": "tie", "stake": 300},
]
OTHER = [{"key": "k9", "account": "acct-9", "type": "banker", "stake": 5000}]


def _open_round(rig: Rig) -> str:
    opened = rig.post("/tables/bac-1/betting/open", "dealer")
    rig.post("/tables/bac-1/bets", "operator", {"bets": BETS})
    rig.post("/tables/bac-1/bets", "other-operator", {"bets": OTHER})
    return str(opened["round_id"])


def test_stakes_in_play_are_the_open_stakes_and_the_result_follows_settlement(rig: Rig) -> None:
    round_id = _open_round(rig)
    pit = rig.get("/console/overview?large_above=2000", "supervisor")[0]
    detail = rig.get(f"/rounds/{round_id}", "supervisor")
    assert pit["money"]["in_play"] == sum(b["stake"] for b in detail["bets"]) == 6300
    assert pit["money"]["by_type"] == {"banker": 5000, "player": 1000, "tie": 300}
    assert [b["account"] for b in pit["money"]["large_bets"]] == ["acct-9"]
    assert pit["round"]["table_round"] == 1
    public = rig.get("/public/tables/bac-1/view", None)
    assert public["round"]["stakes"] == {"players": 2, "bets": 3, "staked": 6300}
    assert "acct-1" not in str(public) and "money" not in public
    # the dealer sees no account either: stakes per seat only (baccarat has none)
    dealer = rig.get("/console/tables/bac-1/view", "dealer")
    assert "acct-1" not in str(dealer) and dealer["round"]["seat_stakes"] == []
    # only staff read the pit: it names accounts
    for role in ("dealer", "operator", None):
        status = 401 if role is None else 403
        rig.get("/console/overview", role, status=status)
        rig.get("/console/timeline", role, status=status)

    rig.post("/tables/bac-1/betting/close", "dealer")
    rig.cards("9S", "2H", "KD", "5C")  # player 9, banker 7: player wins
    pit = rig.get("/console/overview", "supervisor")[0]
    assert pit["money"]["in_play"] == 0
    # player 1000 returns 2000; tie 300 and banker 5000 lost: the house +4300
    assert pit["money"]["shoe"]["house"] == pit["money"]["day"]["house"] == 4300
    assert pit["money"]["day"]["bets"] == 3


def test_a_search_finds_rounds_by_id_table_time_and_by_account_for_whom_it_may(
    rig: Rig,
) -> None:
    first = _open_round(rig)
    rig.post("/tables/bac-1/betting/close", "dealer")
    rig.cards("9S", "2H", "KD", "5C")
    second = rig.post("/tables/bac-1/betting/open", "dealer")["round_id"]

    found = rig.get(f"/recall/search?round_id={first}", "supervisor")
    assert [r["round_id"] for r in found["rounds"]] == [first]
    assert found["rounds"][0]["staked"] == 6300 and found["rounds"][0]["opened_at"]
    prefix = rig.get("/recall/search?round_id=bac-1-s1&table_id=bac-1", "admin")
    assert [r["round_id"] for r in prefix["rounds"]] == [second, first]  # newest first
    now = datetime.now(UTC)
    window = tuple(
        quote(t.isoformat()) for t in (now - timedelta(hours=1), now + timedelta(hours=1))
    )
    timed = rig.get(f"/recall/search?from={window[0]}&to={window[1]}", "regulator")
    assert {r["round_id"] for r in timed["rounds"]} == {first, second}
    later = (now + timedelta(days=2)).date().isoformat()
    assert rig.get(f"/recall/search?from={later}", "regulator")["rounds"] == []
    rig.get("/recall/search?from=yesterday", "regulator", status=422)
    rig.get(f"/recall/search?from={window[1]}&to={window[0]}", "regulator", status=422)

    # by account: a regulator, or the operator that owns it, and only that account's bets
    mine = rig.get("/recall/search?account=acct-1", "operator")
    assert [r["round_id"] for r in mine["rounds"]] == [first]
    assert {b["type"] for b in mine["rounds"][0]["account_bets"]} == {"player", "tie"}
    assert "acct-9" not in str(mine)
    regulator = rig.get("/recall/search?account=acct-9", "regulator")
    assert [b["stake"] for b in regulator["rounds"][0]["account_bets"]] == [5000]
    rig.get("/recall/search?account=acct-9", "operator", status=404)  # not its own
    rig.get("/recall/search?account=acct-1", "supervisor", status=403)
    rig.get("/recall/search?account=acct-1", "admin", status=403)
    rig.get("/recall/search?round_id=bac-1", "operator", status=403)  # by its accounts only
    rig.get("/recall/search?account=acct-1", None, status=401)
    rig.get("/recall/search?account=acct-1", "dealer", status=403)

    # one round's record, found by its id
    record = rig.get(f"/tables/bac-1/recall/{first}", "regulator")
    assert record["round_id"] == first and record["table_round"] == 1
    result = next(s for s in record["steps"] if s["type"] == "round_result")
    assert result["by_rules"] and result["hash"]
    rig.get("/tables/bac-1/recall/nope", "regulator", status=404)
    rig.get(f"/tables/bac-1/recall/{first}", "operator", status=403)
    rig.get(f"/tables/bac-1/recall/{first}", "dealer", status=403)


def test_money_functions_keep_a_seated_bank_apart() -> None:
    bets = [
        OpenBet("b1", "p1", "main", 1000, 1),
        OpenBet("b2", "p1", "main", 500, 2, parent="b1", part="split"),
        OpenBet("b3", "p2", "pair", 200, 2),
        OpenBet("bank", "banker9", "bank", 200_000, 5),
    ]
    assert money.stake_totals(bets) == {"players": 2, "bets": 3, "staked": 1700}
    assert money.stakes_by_type(bets) == {"main": 1500, "pair": 200}
    assert money.seat_stakes(bets) == [
        {"seat": 1, "stakes": {"main": 1000}, "total": 1000},
        {"seat": 2, "stakes": {"main": 500, "pair": 200}, "total": 700},
    ]
    assert money.bank_of(bets) == {"account": "banker9", "seat": 5, "balance": 200_000}
    assert [b["bet_id"] for b in money.large_bets(bets, 400)] == ["b1", "b2"]
