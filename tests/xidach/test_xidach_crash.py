"""Crash safety of a Xì Dách table: SIGKILL a real `livetable serve` mid-round, restart.

The round in play is voided and every stake (a double's included) refunded exactly once;
a round settled just before a kill stays settled; the ledger adds up and the audit chain
verifies. The server's log shows the exact house edge of the terms it opened with.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx

from tests.support.crash_harness import Server, check_money, open_runtime, principals, server_env

TABLE = "xd-crash"


class Api:
    def __init__(self, server: Server, tokens: dict[str, str]) -> None:
        self.server, self.tokens = server, tokens

    def post(self, role: str, path: str, body: Any = None) -> dict[str, Any]:
        response = httpx.post(
            f"{self.server.base}/api/v1{path}",
            json=body,
            headers={"Authorization": f"Bearer {self.tokens[role]}"},
            timeout=10,
        )
        assert response.status_code == 200, response.text
        answer: dict[str, Any] = response.json()
        return answer

    def get(self, path: str) -> dict[str, Any]:
        response = httpx.get(
            f"{self.server.base}/api/v1{path}",
            headers={"Authorization": f"Bearer {self.tokens['supervisor']}"},
            timeout=10,
        )
        assert response.status_code == 200, response.text
        answer: dict[str, Any] = response.json()
        return answer


def _round(api: Api, cards: list[str]) -> str:
    api.post("supervisor", f"/tables/{TABLE}/shoe")
    round_id: str = api.post("dealer", f"/tables/{TABLE}/betting/open")["round_id"]
    bets = [
        {"key": f"{round_id}-a", "account": "alice", "type": "main", "stake": 1000, "seat": 1},
        {"key": f"{round_id}-b", "account": "bob", "type": "main", "stake": 500, "seat": 2},
    ]
    answer = api.post("operator", f"/tables/{TABLE}/bets", {"bets": bets})
    assert [r["status"] for r in answer["results"]] == ["placed", "placed"]
    assert answer["betting_closed"] is True  # room: betting closes once every punter has bet
    for card in cards:
        api.post("supervisor", f"/tables/{TABLE}/cards", {"card": card})
    return round_id


def test_a_killed_xidach_round_is_voided_and_refunded_once(tmp_path: Path, db_url: str) -> None:
    env = server_env(tmp_path / "data", db_url, log_level="INFO")
    runtime = open_runtime(env)
    table_file = tmp_path / "tables.toml"
    table_file.write_text(
        f"""
[[tables]]
table_id = "{TABLE}"
game = "xidach"
profile = "room"
betting_seconds = 60
limits = {{ min_stake = 100, max_stake = 2000 }}
"""
    )
    server = Server(env, table_file, tmp_path / "server.log")
    try:
        api = Api(server, principals(runtime, "crash"))
        server.start()
        for account in ("alice", "bob"):
            api.post(
                "operator", f"/accounts/{account}/credit", {"amount": 10_000, "reference": account}
            )
        api.post("operator", f"/tables/{TABLE}/seats", {"seat": 1, "account": "alice"})
        api.post("operator", f"/tables/{TABLE}/seats", {"seat": 2, "account": "bob"})
        # a first round settles (seat 1: 20, seat 2: 19, banker 17), then the server dies
        settled = _round(api, ["TS", "TD", "TC", "KH", "9H", "7D"])
        api.post(
            "operator",
            f"/tables/{TABLE}/actions",
            {"actor": "seat:1", "action": "stand", "account": "alice"},
        )
        api.post(
            "operator",
            f"/tables/{TABLE}/actions",
            {"actor": "seat:2", "action": "stand", "account": "bob"},
        )
        api.post(  # the house's move, confirmed by the dealer
            "dealer",
            f"/tables/{TABLE}/actions",
            {"actor": "banker", "action": "stand", "account": "banker"},
        )
        server.kill()
        server.start()
        assert api.get(f"/rounds/{settled}")["phase"] == "settled"
        # the second round is killed mid-play, after a double added a stake
        killed = _round(api, ["5S", "TD", "TC", "6H", "9H", "6D"])  # seat 1: 11
        api.post(
            "operator",
            f"/tables/{TABLE}/actions",
            {"actor": "seat:1", "action": "double", "account": "alice"},
        )
        server.kill()
        server.start()
        summary = api.get(f"/tables/{TABLE}")
        assert summary["round"]["phase"] == "voided" and summary["shoe"] is None
        detail = api.get(f"/rounds/{killed}")
        assert {b["status"] for b in detail["bets"]} == {"refunded"}
        assert sorted(b["stake"] for b in detail["bets"]) == [500, 1000, 1000]  # the double too
        assert all(b["returned"] == b["stake"] for b in detail["bets"])
        balances = {a: api.get(f"/accounts/{a}")["balance"] for a in ("alice", "bob")}
        assert balances == {"alice": 10_000 + 1000, "bob": 10_000 + 500}  # only round 1 counts
        log = server.tail()
        assert "table.terms" in log and "-2.5448%" in log  # the edge `serve` opened with
    finally:
        server.stop()
    money = check_money(runtime)  # the chain, one stake and one return per bet, balances
    runtime.close()
    assert money.bets and {b.status for b in money.bets.values()} <= {"settled", "refunded"}
