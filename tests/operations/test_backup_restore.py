"""``livetable db backup`` taken mid-round while the table runs, ``livetable db restore``
into a new place, ``livetable audit verify --read-models`` on it, and a ``serve`` on the
restored database: the round found in play is resumed (baccarat) or voided and refunded
(blackjack) by its game's restart rule, and every stake is settled or refunded once.

SQLite: the online backup API. PostgreSQL: ``pg_dump`` / ``pg_restore`` into a new
database of a private server (the test creates databases; the machine's shared server is
left alone).
"""

from __future__ import annotations

import json
import shutil
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from table_service.scratch_servers import PrivatePostgres
from tests.operations.ops_helpers import (
    ShoeStudio,
    livetable,
    money_after,
    private_postgres,
)

pytestmark = pytest.mark.timeout(400)


@contextmanager
def backend(kind: str) -> Iterator[tuple[str, str, PrivatePostgres | None]]:
    """(database URL of the studio, of the restore target, the private server if any)."""
    if kind == "sqlite":
        yield "sqlite", "sqlite", None
        return
    with private_postgres() as pg:
        yield pg.createdb("studio"), pg.createdb("restored"), pg


def _mid_round(studio: ShoeStudio, table_id: str, game: str) -> tuple[str, int]:
    """A round with bets and two cards dealt; (round id, stakes)."""
    studio.ok(
        "operator", "POST", "/accounts/acct-1/credit", json={"amount": 10**7, "reference": "s"}
    )
    studio.ready_shoe(table_id)
    if game == "blackjack":
        studio.ok(
            "operator", "POST", f"/tables/{table_id}/seats", json={"seat": 1, "account": "acct-1"}
        )
        bets: list[dict[str, Any]] = [
            {"key": "m1", "account": "acct-1", "type": "main", "stake": 2000, "seat": 1}
        ]
    else:
        bets = [
            {"key": "p1", "account": "acct-1", "type": "player", "stake": 1000},
            {"key": "b1", "account": "acct-1", "type": "banker", "stake": 3000},
        ]
    studio.ok("dealer", "POST", f"/tables/{table_id}/betting/open")
    answer = studio.ok("operator", "POST", f"/tables/{table_id}/bets", json={"bets": bets})
    assert {r["status"] for r in answer["results"]} == {"placed"}, answer
    studio.ok("dealer", "POST", f"/tables/{table_id}/betting/close")
    studio.deal(table_id)
    studio.deal(table_id)
    rnd = studio.table(table_id)["round"]
    assert rnd["phase"] == "dealing" and len(rnd["cards"]) == 2, rnd
    return rnd["round_id"], sum(b["stake"] for b in bets)


def _tampered_copy_is_refused(backup: Path, tmp_path: Path, env: dict[str, str]) -> None:
    """An insider edits a stake in a copy of the backup (append-only triggers dropped
    first): restoring it is refused, and nothing is installed."""
    tampered = tmp_path / "tampered.db"
    shutil.copy2(backup, tampered)
    with sqlite3.connect(tampered) as db:
        for (name,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'trigger'"):
            db.execute(f'DROP TRIGGER "{name}"')
        db.execute(
            "UPDATE audit_events SET payload = replace(payload, '3000', '30000') "
            "WHERE type = 'bets_placed'"
        )
    target = tmp_path / "elsewhere"
    target.mkdir()
    for key in Path(env["LIVETABLE_DATA_DIR"]).glob("signing-key*"):
        shutil.copy2(key, target / key.name)
    done = livetable({**env, "LIVETABLE_DATA_DIR": str(target)}, "db", "restore", str(tampered))
    assert done.returncode == 2, done.stdout + done.stderr
    assert "does not verify" in done.stderr
    assert not (target / "livetable.db").exists()


@pytest.mark.parametrize(("kind", "game"), [("sqlite", "baccarat"), ("postgresql", "blackjack")])
def test_a_backup_taken_mid_round_restores_and_the_table_resumes_by_its_rule(
    tmp_path: Path, kind: str, game: str
) -> None:
    with backend(kind) as (source_url, target_url, _pg):
        first = tmp_path / "first"
        first.mkdir()
        studio = ShoeStudio(first, source_url, ["bk-1"], game=game)
        backup = tmp_path / "studio.backup"
        try:
            studio.server.start()
            round_id, _stakes = _mid_round(studio, "bk-1", game)
            # taken while the table runs (its process renews its lease every second)
            made = livetable(studio.env, "db", "backup", str(backup))
            assert made.returncode == 0, made.stdout + made.stderr
            assert "backup" in made.stdout and "signed checkpoint" in made.stdout
            manifest = json.loads(Path(f"{backup}.manifest.json").read_text())
            assert manifest["backend"] == kind and manifest["checkpoint_size"] > 0
            if kind == "sqlite":
                again = livetable(studio.env, "db", "backup", str(backup))
                assert again.returncode == 2 and "exists" in again.stderr  # never overwritten
                _tampered_copy_is_refused(backup, tmp_path, studio.env)
            # the original table goes on after the backup: these events are not in it
            if game == "baccarat":
                assert studio.finish_round("bk-1")["phase"] == "settled"
        finally:
            studio.close()

        # Restore somewhere new: the operator brings the studio's signing key back first.
        second = tmp_path / "second"
        (second / "data").mkdir(parents=True)
        for key in (first / "data").glob("signing-key*"):
            shutil.copy2(key, second / "data" / key.name)

        def restore(env: dict[str, str]) -> None:
            done = livetable(env, "db", "restore", str(backup))
            assert done.returncode == 0, done.stdout + done.stderr
            assert "restored" in done.stdout and "verifies" in done.stdout

        restored = ShoeStudio(
            second, target_url, ["bk-1"], game=game, before_open=restore, tokens=studio.tokens
        )
        try:
            verify = livetable(restored.env, "audit", "verify", "--read-models")
            assert verify.returncode == 0, verify.stdout + verify.stderr
            assert verify.stdout.startswith("OK"), verify.stdout
            if kind == "sqlite":
                once_more = livetable(restored.env, "db", "restore", str(backup))
                assert once_more.returncode == 2  # never over a database in place

            restored.server.start()
            rnd = restored.table("bk-1")["round"]
            assert rnd["round_id"] == round_id
            if game == "baccarat":  # resumed where the backup left it: two cards in
                assert rnd["phase"] == "dealing" and len(rnd["cards"]) == 2, rnd
                assert restored.finish_round("bk-1")["phase"] == "settled"
                closed = "settled"
            else:  # blackjack voids a round interrupted by a server failure, and refunds
                assert rnd["phase"] == "voided", rnd
                closed = "refunded"
        finally:
            restored.close()
        money = money_after(restored.env, "bk-1")
        assert money.bets and all(b.status == closed for b in money.bets.values())
        if closed == "refunded":
            assert all(b.returned == b.stake for b in money.bets.values())
