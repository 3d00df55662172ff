"""Two real ``serve`` processes on one PostgreSQL share a studio's tables; one is SIGKILLed
mid-round and the other takes its tables over, resumes the round and settles it once."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import connect

from tests.studio.studio_helpers import ROUND_CARDS, SHOE_CARDS, StudioClient, table_file
from tests.support.crash_harness import Server, check_money, open_runtime, principals, server_env

pytestmark = pytest.mark.timeout(600)

TABLES = ["s-1", "s-2", "s-3", "s-4"]
TAKEOVER = 3.0


def _directory(base: str, token: str) -> dict[str, dict[str, Any]]:
    answer = httpx.get(
        f"{base}/api/v1/studio/tables", headers={"Authorization": f"Bearer {token}"}, timeout=5
    )
    assert answer.status_code == 200, answer.text
    return {t["table_id"]: t for t in answer.json()["tables"]}


def _wait_for(condition: Callable[[], object], seconds: float, what: str) -> float:
    started = time.monotonic()
    while not condition():
        assert time.monotonic() - started < seconds, what
        time.sleep(0.05)
    return time.monotonic() - started


@pytest.mark.parametrize("db_url", ["postgresql"], indirect=True)
def test_two_processes_share_tables_and_take_over_after_kill9(tmp_path: Path, db_url: str) -> None:
    env = server_env(tmp_path / "data", db_url, takeover_seconds=str(TAKEOVER))
    runtime = open_runtime(env)
    tokens = principals(runtime, "studio")
    tables = table_file(tmp_path / "tables.toml", TABLES)
    a = Server(env, tables, tmp_path / "a.log", "node-a")
    b = Server(env, tables, tmp_path / "b.log", "node-b")
    try:
        a.start()
        b.start()
        sup = tokens["supervisor"]

        def balanced() -> bool:
            here = _directory(a.base, sup)
            owners = [here[t]["owner"] for t in TABLES]
            return owners.count("node-a") == 2 and owners.count("node-b") == 2

        _wait_for(balanced, 10 * TAKEOVER, "the two processes never shared the tables 2/2")
        directory = _directory(b.base, sup)
        on_b = [t for t in TABLES if directory[t]["owner"] == "node-b"]
        on_a = [t for t in TABLES if directory[t]["owner"] == "node-a"]
        assert directory[on_b[0]]["owner_url"] == b.base

        # The wrong process answers 421 and names the right one; nothing is done there.
        wrong = httpx.post(
            f"{a.base}/api/v1/tables/{on_b[0]}/shoe",
            headers={"Authorization": f"Bearer {sup}"},
            timeout=5,
        )
        assert wrong.status_code == 421, wrong.text
        assert wrong.json()["error"] == "table_elsewhere"
        assert wrong.json()["owner_url"] == b.base
        assert wrong.headers["location"] == f"{b.base}/api/v1/tables/{on_b[0]}/shoe"

        # A stream opened on the wrong process is closed with 4421 and the owner's address.
        ws_url = f"ws://127.0.0.1:{a.port}/api/v1/public/tables/{on_b[0]}/stream"
        with connect(ws_url) as ws, pytest.raises(ConnectionClosed) as closed:
            ws.recv(timeout=10)
        assert closed.value.rcvd is not None  # the server's close frame came
        assert (closed.value.rcvd.code, closed.value.rcvd.reason) == (4421, b.base)

        client = StudioClient(a.base, tokens)
        client.ok(
            "operator", "POST", "/accounts/p1/credit", json={"amount": 100_000, "reference": "c1"}
        )

        def bets(table_id: str) -> list[dict[str, Any]]:
            return [
                {"key": f"{table_id}-{i}", "account": "p1", "type": t, "stake": 1_000}
                for i, t in enumerate(["player", "banker", "tie"])
            ]

        # A round on each of b's tables, caught in betting with bets on it.
        for table_id in on_b:
            client.ok("supervisor", "POST", f"/tables/{table_id}/shoe")
            for card in SHOE_CARDS:
                client.ok("supervisor", "POST", f"/tables/{table_id}/cards", json={"card": card})
            client.ok("dealer", "POST", f"/tables/{table_id}/betting/open")
            placed = client.ok(
                "operator", "POST", f"/tables/{table_id}/bets", json={"bets": bets(table_id)}
            )
            assert [r["status"] for r in placed["results"]] == ["placed"] * 3
        assert client.misdirected >= 1

        b.kill()
        killed = time.monotonic()

        def all_on_a() -> bool:
            here = _directory(a.base, sup)
            return all(here[t]["owner"] == "node-a" and here[t]["here"] for t in TABLES)

        _wait_for(all_on_a, TAKEOVER + 10, "node-a did not take node-b's tables over")
        takeover = time.monotonic() - killed
        assert takeover <= TAKEOVER + 10

        # The rounds resumed from the log on node-a: the retried bets are known, not new.
        for table_id in on_b:
            state = client.ok("supervisor", "GET", f"/tables/{table_id}")
            assert state["round"]["phase"] == "betting"
            again = client.ok(
                "operator", "POST", f"/tables/{table_id}/bets", json={"bets": bets(table_id)}
            )
            assert [r["status"] for r in again["results"]] == ["duplicate"] * 3
            client.ok("dealer", "POST", f"/tables/{table_id}/betting/close")
            for card in ROUND_CARDS:
                client.ok("supervisor", "POST", f"/tables/{table_id}/cards", json={"card": card})
            assert client.ok("supervisor", "GET", f"/tables/{table_id}")["round"]["phase"] == (
                "settled"
            )
        for table_id in on_a:  # node-a's own tables were never disturbed
            client.ok("supervisor", "GET", f"/tables/{table_id}")

        # The money: every bet staked once and returned once; the balance is the ledger;
        # the chain verifies; nothing closed twice.
        money = check_money(runtime)
        statuses = [b.status for b in money.bets.values()]
        assert len(statuses) == 3 * len(on_b)
        assert set(statuses) == {"settled"}, statuses
        assert len([e for e in money.entries if e.bet_id is not None]) == 2 * len(statuses)

        # Restarted, node-b rejoins and the tables are shared out again.
        b.start()
        _wait_for(balanced, 20 * TAKEOVER, "node-b did not get its share back")
    finally:
        a.stop()
        b.stop()
        runtime.close()
