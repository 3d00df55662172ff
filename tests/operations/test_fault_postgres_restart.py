"""PostgreSQL restarted under a running studio: the tables that meet it pause and answer
503 with ``Retry-After`` (nothing written), the card the dealer draws meanwhile is kept,
and when the server is back they resume by themselves: the kept card is recorded with no
one asking, the refused bets sent again are placed once, the rounds settle, and the log,
the read models and the money check out.

The outage outlasts the tables' leases (1.2 s here): when the server is back, a kept card
refused by the fence (the lease not renewed yet) is kept again and recorded once the lease
is. The server restarted is the test's own (initdb in a temporary folder, a free port),
never the machine's shared PostgreSQL that other tests use.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from tests.operations.ops_helpers import (
    ShoeStudio,
    money_after,
    private_postgres,
    scrape,
    seal_and_verify,
    value,
    wait_for,
)

pytestmark = pytest.mark.timeout(300)


def _bets(prefix: str, count: int) -> dict[str, object]:
    kinds = ["player", "banker", "tie"]
    return {
        "bets": [
            {"key": f"{prefix}-{i}", "account": "acct-1", "type": kinds[i % 3], "stake": 500}
            for i in range(count)
        ]
    }


def test_tables_pause_while_postgres_restarts_and_resume_by_themselves(tmp_path: Path) -> None:
    with private_postgres() as pg:
        url = pg.createdb("studio")
        # leases of 1.2 s: the outage outlasts them, as a real restart may
        studio = ShoeStudio(tmp_path, url, ["pg-1", "pg-2"], settings={"takeover_seconds": "2"})
        try:
            studio.server.start()
            credit = {"amount": 10**9, "reference": "seed"}
            studio.ok("operator", "POST", "/accounts/acct-1/credit", json=credit)
            for table_id in ("pg-1", "pg-2"):
                studio.ready_shoe(table_id)
                studio.ok("dealer", "POST", f"/tables/{table_id}/betting/open")
                studio.ok(
                    "operator", "POST", f"/tables/{table_id}/bets", json=_bets(f"{table_id}-a", 20)
                )
            studio.ok("dealer", "POST", "/tables/pg-1/betting/close")  # pg-1 deals
            seen = studio.table("pg-1")["shoe"]["cards_seen"]

            # The server goes away under the studio. Even a token cannot be checked now:
            # every call is a 503 with Retry-After, nothing is written.
            pg.stop("fast")
            refused = studio.request(
                "operator", "POST", "/tables/pg-2/bets", json=_bets("during", 20)
            )
            assert refused.status_code == 503, refused.text
            assert refused.json()["code"] == "database_unavailable", refused.text
            assert int(refused.headers["retry-after"]) >= 1
            credit_during = studio.request(
                "operator", "POST", "/accounts/acct-1/credit",
                json={"amount": 5, "reference": "during"},
            )  # fmt: skip
            assert credit_during.status_code == 503, credit_during.text
            assert credit_during.headers["retry-after"]
            studio.deal("pg-1", wait=False)  # the dealer goes on: the card must be kept
            wait_for(
                lambda: value(
                    scrape(studio.metrics_url), "livetable_table_paused",
                    table="pg-1", reason="database_unavailable",
                ) == 1,
                "pg-1 did not pause",
            )  # fmt: skip
            ready = studio.http.get(f"{studio.server.base}/readyz")
            assert ready.status_code == 503

            time.sleep(2.5)  # down longer than the tables' leases
            pg.start()  # back: no one calls pg-1, it resumes and records the kept card
            wait_for(
                lambda: studio.table("pg-1")["shoe"]["cards_seen"] == seen + 1,
                "pg-1 did not record the card drawn while PostgreSQL was down",
            )
            placed = studio.retry("operator", "POST", "/tables/pg-2/bets", json=_bets("during", 20))
            assert {r["status"] for r in placed["results"]} == {"placed"}
            twice = studio.ok("operator", "POST", "/tables/pg-2/bets", json=_bets("during", 20))
            assert {r["status"] for r in twice["results"]} == {"duplicate"}
            studio.retry(
                "operator", "POST", "/accounts/acct-1/credit",
                json={"amount": 5, "reference": "during"},
            )  # fmt: skip
            studio.retry("dealer", "POST", "/tables/pg-2/betting/close")
            for table_id in ("pg-1", "pg-2"):
                assert studio.finish_round(table_id)["phase"] == "settled"
            samples = scrape(studio.metrics_url)
            assert value(samples, "livetable_table_paused", table="pg-1", reason="none") == 0
            assert value(samples, "livetable_database_unavailable_total", table="pg-1") >= 1
            assert value(samples, "livetable_lease_lost_total", table="pg-1") == 0
        finally:
            studio.close()
        money = money_after(studio.env)
        assert len(money.bets) == 60
        assert all(b.status == "settled" for b in money.bets.values())
        assert money.credits == 10**9 + 5
        seal_and_verify(studio.env)
