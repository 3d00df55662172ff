"""The SQLite volume fills up under a running table: the write is refused cleanly (503
``database_full`` with ``Retry-After``, nothing half-written), the table pauses with that
reason (a metric says so), the card the dealer drew meanwhile is kept, and when space
returns the table resumes by itself: the kept card is recorded, the refused bets sent again
are placed once, the round settles, and the log and the money check out.

The volume is a tmpfs of a few megabytes mounted by the test (a real file system that
answers ENOSPC; a loop-mounted image would behave the same and needs an image file).
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from tests.operations.ops_helpers import (
    ShoeStudio,
    fill,
    money_after,
    scrape,
    seal_and_verify,
    small_volume,
    value,
    wait_for,
)

pytestmark = pytest.mark.timeout(300)


def _bets(prefix: str, count: int, stake: int = 100) -> dict[str, object]:
    kinds = ["player", "banker"]
    return {
        "bets": [
            {"key": f"{prefix}-{i}", "account": "acct-1", "type": kinds[i % 2], "stake": stake}
            for i in range(count)
        ]
    }


def _paused(studio: ShoeStudio) -> str | None:
    """The pause reason the table's metrics show (None: running)."""
    samples = scrape(studio.metrics_url)
    for key, v in samples.items():
        if key.startswith("livetable_table_paused{") and v == 1:
            return key.split('reason="', 1)[1].split('"', 1)[0]
    assert value(samples, "livetable_table_paused", table="full-1", reason="none") == 0
    return None


def test_a_full_volume_pauses_the_table_and_it_resumes_when_space_returns(
    tmp_path: Path,
) -> None:
    with small_volume(tmp_path / "vol", 24) as volume:
        data = volume / "data"
        studio = ShoeStudio(tmp_path, "sqlite", ["full-1"], data_dir=data)
        try:
            studio.server.start()
            credit = {"amount": 10**9, "reference": "seed"}
            studio.ok("operator", "POST", "/accounts/acct-1/credit", json=credit)
            studio.ready_shoe("full-1")
            studio.ok("dealer", "POST", "/tables/full-1/betting/open")
            first = studio.ok("operator", "POST", "/tables/full-1/bets", json=_bets("a", 10))
            assert {r["status"] for r in first["results"]} == {"placed"}

            # 1. The volume fills up: bet batches until one needs room there is not (the
            # WAL reuses the room it already has, so the first ones may still fit).
            filler = fill(volume)
            refused = None
            for n in range(40):
                answer = studio.request(
                    "operator", "POST", "/tables/full-1/bets", json=_bets(f"b{n}", 500)
                )
                if answer.status_code == 503:
                    refused = n
                    break
                assert answer.status_code == 200, answer.text
            assert refused is not None, "the full volume never refused a write"
            body = answer.json()
            assert body["code"] == "database_full", body
            assert answer.headers["retry-after"] == "2"
            assert answer.headers["content-type"].startswith("application/problem+json")
            # Paused with its reason: every command is refused until space returns.
            again = studio.request("dealer", "POST", "/tables/full-1/betting/close")
            assert again.status_code == 503 and again.json()["code"] == "database_full"
            assert _paused(studio) == "database_full"
            samples = scrape(studio.metrics_url)
            assert value(samples, "livetable_database_unavailable_total", reason="database_full")
            with sqlite3.connect(data / "livetable.db") as db:  # nothing half-written
                rows = db.execute(
                    "SELECT count(*) FROM bets WHERE idempotency_key LIKE ?", (f"%|b{refused}-%",)
                ).fetchone()[0]
            assert rows == 0

            # 2. Space returns: the table resumes by itself; the batch sent again is placed
            # once, and a third time is a duplicate.
            filler.unlink()
            wait_for(lambda: _paused(studio) is None, "the table did not resume")
            batch = _bets(f"b{refused}", 500)
            placed = studio.retry("operator", "POST", "/tables/full-1/bets", json=batch)
            assert {r["status"] for r in placed["results"]} == {"placed"}
            twice = studio.ok("operator", "POST", "/tables/full-1/bets", json=batch)
            assert {r["status"] for r in twice["results"]} == {"duplicate"}

            # 3. Full again while the dealer deals: the card drawn is kept, then recorded.
            studio.retry("dealer", "POST", "/tables/full-1/betting/close")
            filler = fill(volume)
            for m in range(5000):
                probe = studio.request(
                    "operator", "POST", "/accounts/acct-2/credit",
                    json={"amount": 1, "reference": f"probe-{m}"},
                )  # fmt: skip
                if probe.status_code == 503:
                    assert probe.json()["code"] == "database_full", probe.text
                    break
                assert probe.status_code == 200, probe.text
            else:
                pytest.fail("the full volume never refused a credit")
            seen = studio.table("full-1")["shoe"]["cards_seen"]
            studio.deal("full-1", wait=False)
            wait_for(lambda: _paused(studio) == "database_full", "the card's write did not fail")
            assert studio.table("full-1")["shoe"]["cards_seen"] == seen
            filler.unlink()
            wait_for(
                lambda: studio.table("full-1")["shoe"]["cards_seen"] == seen + 1,
                "the card drawn while the volume was full was not recorded once space returned",
            )
            rnd = studio.finish_round("full-1")
            assert rnd["phase"] == "settled", rnd
        finally:
            studio.close()
        money = money_after(studio.env, "full-1")
        assert len(money.bets) == 10 + 500 * (refused + 1)
        assert all(b.status == "settled" for b in money.bets.values())
        seal_and_verify(studio.env)
        with sqlite3.connect(data / "livetable.db") as db:
            assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
