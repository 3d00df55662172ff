"""A ``serve`` process stopped with SIGSTOP for longer than its lease: a peer takes its
table over with a new fencing token and plays on; when the stopped process wakes, the
request it had been sent before it stopped is answered with a refusal (the fence, or the
table found elsewhere) and nothing it holds reaches the log; its metrics count the lease
it lost. Every stake is settled once, by the new owner."""

from __future__ import annotations

import os
import signal
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import select

from table_service.models import BetRow
from tests.operations.ops_helpers import freeze, scrape, value, wait_for
from tests.studio.studio_helpers import ROUND_CARDS, SHOE_CARDS, StudioClient, table_file
from tests.support.crash_harness import (
    Server,
    check_money,
    free_port,
    open_runtime,
    principals,
    server_env,
)

pytestmark = pytest.mark.timeout(300)

TAKEOVER = 2.0  # leases of 1.2 s, renewed every 0.2 s
TABLES = ["f-1", "f-2"]


def _directory(base: str, token: str) -> dict[str, dict[str, Any]]:
    answer = httpx.get(
        f"{base}/api/v1/studio/tables", headers={"Authorization": f"Bearer {token}"}, timeout=10
    )
    assert answer.status_code == 200, answer.text
    return {t["table_id"]: t for t in answer.json()["tables"]}


@pytest.mark.parametrize("db_url", ["postgresql"], indirect=True)
def test_a_process_stopped_past_its_lease_never_commits_after_waking(
    tmp_path: Path, db_url: str
) -> None:
    env = server_env(tmp_path / "data", db_url, takeover_seconds=str(TAKEOVER))
    runtime = open_runtime(env)
    tokens = principals(runtime, "fence")
    sup = tokens["supervisor"]
    tables = table_file(tmp_path / "tables.toml", TABLES)
    ports = {"a": free_port(), "b": free_port()}
    a = Server(
        {**env, "LIVETABLE_METRICS_ADDRESS": f"127.0.0.1:{ports['a']}"}, tables,
        tmp_path / "a.log", "node-a",
    )  # fmt: skip
    b = Server(
        {**env, "LIVETABLE_METRICS_ADDRESS": f"127.0.0.1:{ports['b']}"}, tables,
        tmp_path / "b.log", "node-b",
    )  # fmt: skip
    stopped = False
    try:
        a.start()
        b.start()
        wait_for(
            lambda: (
                sorted(str(t["owner"]) for t in _directory(a.base, sup).values())  # unowned: None
                == ["node-a", "node-b"]
            ),
            "the two processes never shared the tables",
        )
        table = next(t for t, d in _directory(a.base, sup).items() if d["owner"] == "node-a")
        token_before = _directory(a.base, sup)[table]["token"]
        client = StudioClient(b.base, tokens)
        client.ok(
            "operator", "POST", "/accounts/p1/credit", json={"amount": 10**6, "reference": "c"}
        )
        client.ok("supervisor", "POST", f"/tables/{table}/shoe")
        for card in SHOE_CARDS:
            client.ok("supervisor", "POST", f"/tables/{table}/cards", json={"card": card})
        client.ok("dealer", "POST", f"/tables/{table}/betting/open")
        first = [{"key": "before", "account": "p1", "type": "player", "stake": 1000}]
        client.ok("operator", "POST", f"/tables/{table}/bets", json={"bets": first})

        assert a.proc is not None
        freeze(a.proc.pid)
        stopped = True
        # A request sent to the stopped process: the kernel takes the connection, the
        # process will read it only when it wakes, believing it still runs the table.
        late: dict[str, httpx.Response] = {}
        stale = [{"key": "stale", "account": "p1", "type": "banker", "stake": 2000}]

        def send() -> None:
            late["answer"] = httpx.post(
                f"{a.base}/api/v1/tables/{table}/bets",
                headers={"Authorization": f"Bearer {tokens['operator']}"},
                json={"bets": stale},
                timeout=120,
            )

        sender = threading.Thread(target=send)
        sender.start()
        wait_for(
            lambda: (
                (d := _directory(b.base, sup)[table])["owner"] == "node-b"
                and d["token"] > token_before
            ),
            "node-b did not take the table over from the stopped process",
        )
        # node-b runs it now: the round resumed (baccarat), bets go on there
        later = [{"key": "after", "account": "p1", "type": "tie", "stake": 500}]
        client.ok("operator", "POST", f"/tables/{table}/bets", json={"bets": later})
        client.ok("dealer", "POST", f"/tables/{table}/betting/close")
        time.sleep(TAKEOVER)  # well past the lease: the process has been stopped long

        os.kill(a.proc.pid, signal.SIGCONT)
        stopped = False
        sender.join(120)
        answer = late["answer"]
        assert answer.status_code in (421, 503), answer.text
        assert answer.json()["code"] in ("table_elsewhere", "lease_lost"), answer.text
        wait_for(
            lambda: value(
                scrape(f"http://127.0.0.1:{ports['a']}/metrics"), "livetable_lease_lost_total",
                table=table,
            ) >= 1,
            "the woken process did not count the lease it lost",
        )  # fmt: skip
        for card in ROUND_CARDS:
            client.ok("supervisor", "POST", f"/tables/{table}/cards", json={"card": card})
        assert client.ok("supervisor", "GET", f"/tables/{table}")["round"]["phase"] == "settled"
    finally:
        if stopped and a.proc is not None:
            os.kill(a.proc.pid, signal.SIGCONT)
        a.stop()
        b.stop()
    with runtime.sessions() as session:
        keys = {k.split("|", 1)[1] for k in session.scalars(select(BetRow.idempotency_key))}
    assert keys == {"before", "after"}, keys  # the stale process wrote nothing
    money = check_money(runtime)
    assert all(bet.status == "settled" for bet in money.bets.values())
    runtime.close()
