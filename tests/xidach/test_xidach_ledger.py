"""Xì Dách money in the ledger, on SQLite and PostgreSQL: the house's commission as its
own line to the table's house account, round totals that count a check's early lines
once, and a void after a check (the checked stakes stand, the rest is refunded)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import func, select

from audit.store import EventStore
from table_service.app import build_app
from table_service.models import Account, LedgerEntry, house_account
from table_service.regulator.readmodels import _agree, check_read_models
from table_service.regulator.replay import ReplayTotals, fold_rounds, replay_round
from table_service.regulator.report import build_report
from table_service.table.config import TableConfig
from table_service.table.service import TableManager
from tests.table.test_table_api import Clock
from tests.xidach.test_xidach_api import Client, _tokens

T = "xd-money"
PROFILES = Path(__file__).parents[2] / "table_service/rules/xidach/profiles"


def _forced_draw(commission: str = "[5, 100]") -> str:
    """forced-draw with a 5 % commission, the house checking each punter it beats first."""
    text = (PROFILES / "forced-draw.toml").read_text("utf-8")
    text = text.replace("commission = [0, 100]", f"commission = {commission}")
    return text.replace('check_before_draw = "none"', 'check_before_draw = "beaten"')


def _room(commission: str = "[5, 100]") -> str:
    text = (PROFILES / "room.toml").read_text("utf-8")
    return text.replace("commission = [0, 100]", f"commission = {commission}")


def _act(
    t: Client, actor: str, action: str, account: str, role: str = "operator", **kw: Any
) -> dict[str, Any]:
    body = {"actor": actor, "action": action, "account": account, **kw}
    answer: dict[str, Any] = t.post(f"/tables/{T}/actions", role, body)
    return answer


def _client(make_runtime: Any, config: TableConfig) -> Iterator[Client]:
    runtime = make_runtime()
    manager = TableManager(runtime, [config], clock=Clock())
    with TestClient(build_app(runtime, [config], manager=manager)) as client:
        t = Client(client, _tokens(runtime))
        t.runtime = runtime
        yield t


@pytest.fixture
def fd(make_runtime: Any) -> Iterator[Client]:
    config = TableConfig(
        table_id=T,
        game="xidach",
        game_rules={"profile_toml": _forced_draw()},
        limits={"min_stake": 100, "max_stake": 5000},
    )
    yield from _client(make_runtime, config)


def _open_forced_draw(t: Client) -> str:
    for account in ("alice", "bob"):
        t.post(f"/accounts/{account}/credit", "operator", {"amount": 10_000, "reference": account})
    t.post(f"/tables/{T}/shoe", "supervisor")
    t.post(f"/tables/{T}/seats", "operator", {"seat": 1, "account": "alice"})
    t.post(f"/tables/{T}/seats", "operator", {"seat": 2, "account": "bob"})
    opened = t.post(f"/tables/{T}/betting/open", "dealer")
    bets = [
        {"key": "a1", "account": "alice", "type": "main", "stake": 1000, "seat": 1},
        {"key": "b1", "account": "bob", "type": "main", "stake": 1000, "seat": 2},
    ]
    t.post(f"/tables/{T}/bets", "operator", {"bets": bets})
    t.post(f"/tables/{T}/betting/close", "dealer")
    # counter-clockwise: seat 2 9D 8S = 17, seat 1 TS 5H = 15, the house TC 6D = 16
    for card in ("9D", "TS", "TC", "8S", "5H", "6D"):
        t.post(f"/tables/{T}/cards", "supervisor", {"card": card})
    _act(t, "seat:2", "stand", "bob")
    _act(t, "seat:1", "hit", "alice")
    t.post(f"/tables/{T}/cards", "supervisor", {"card": "KH"})  # seat 1: 25, hidden bust
    # the house beats it: xét (the house's move, confirmed by the dealer)
    checked = _act(t, "banker", "check", "banker", "dealer", target="1")
    assert checked["round_id"] == opened["round_id"]
    return str(opened["round_id"])


def _events(t: Client, kind: str) -> list[dict[str, Any]]:
    with t.runtime.sessions() as session:
        return [e.payload for e in EventStore.read(session, table_id=T) if e.type == kind]


def _money_checks(t: Client) -> dict[str, int]:
    """The ledger sums to the balances, one line of each kind per bet, the read models
    equal a fold of the log, and every closed round replays through the rules code.
    Returns the balances."""
    runtime = t.runtime
    with runtime.sessions() as session:
        total = session.scalar(select(func.coalesce(func.sum(Account.balance), 0)))
        assert total == session.scalar(select(func.coalesce(func.sum(LedgerEntry.amount), 0)))
        lines = Counter(
            (e.bet_id, e.kind) for e in session.scalars(select(LedgerEntry)) if e.bet_id
        )
        assert set(lines.values()) == {1}  # no stake paid, refunded or taxed twice
        for bet_id, _ in lines:
            assert not {(bet_id, "return"), (bet_id, "refund")} <= set(lines)
        assert check_read_models(session) == []
        assert _agree(session)  # and in bounded memory, not by the full fold's fallback
        events = EventStore.read(session)
        folded = fold_rounds(events)
        totals = ReplayTotals()
        for fold in folded.rounds.values():
            replay_round(fold, folded.rules[fold.rules_ref], None, totals)
        assert totals.rounds == len([f for f in folded.rounds.values() if f.status != "open"])
        return {a.account_id: a.balance for a in session.scalars(select(Account))}


def test_commission_is_its_own_line_to_the_house_and_round_totals_count_a_check_once(
    fd: Client,
) -> None:
    round_id = _open_forced_draw(fd)
    early = _events(fd, "bets_settled")
    assert [(r["account"], r["returned"]) for r in early[0]["results"]] == [("alice", 0)]
    assert early[0]["early"] is True
    _act(fd, "banker", "hit", "banker", "dealer")  # the house's published move: draw at 16
    fd.post(f"/tables/{T}/cards", "supervisor", {"card": "9C"})  # the house: 25, bust
    (settled,) = _events(fd, "round_settled")
    # seat 2's 17 beats the bust house: 2000 less 5 % of the 1000 won; seat 1 lost at the
    # check, and counts in the round's totals once, with its early line
    assert settled == {
        "round_id": round_id,
        "bets": 2,
        "settled_early": 1,
        "staked": 2000,
        "returned": 1950,
        "commission": 50,
    }
    final = [r for e in _events(fd, "bets_settled") for r in e["results"]]
    assert [r["account"] for r in final] == ["alice", "bob"]  # alice's line only once
    balances = _money_checks(fd)
    house = house_account(T)
    assert (balances["alice"], balances["bob"], balances[house]) == (9000, 10_950, 50)
    with fd.runtime.sessions() as session:
        (line,) = session.scalars(select(LedgerEntry).where(LedgerEntry.account_id == house))
        assert (line.kind, line.amount) == ("commission", 50)
        events = EventStore.read(session)
    detail = fd.get(f"/rounds/{round_id}")
    assert {b["account"]: (b["returned"], b["commission"]) for b in detail["bets"]} == {
        "alice": (0, 0),
        "bob": (1950, 50),
    }
    (group,) = build_report(events)
    assert (group.staked, group.returned, group.commission) == (2000, 1950, 50)


def test_a_void_after_a_check_refunds_only_the_open_stakes_and_the_check_stands(
    fd: Client,
) -> None:
    round_id = _open_forced_draw(fd)
    fd.post(
        f"/tables/{T}/round/void",
        "supervisor",
        {"reason": "the house's next card fell face up", "change_shoe": True},
    )
    (voided,) = _events(fd, "round_voided")
    refunds = [r for e in _events(fd, "bets_refunded") for r in e["refunds"]]
    assert [(r["account"], r["returned"]) for r in refunds] == [("bob", 1000)]
    detail = fd.get(f"/rounds/{round_id}")
    assert detail["phase"] == "voided"
    assert {b["account"]: (b["status"], b["returned"]) for b in detail["bets"]} == {
        "alice": ("settled", 0),  # lost at the check: that settlement stands
        "bob": ("refunded", 1000),
    }
    assert voided["stood"] == [b["bet_id"] for b in detail["bets"] if b["account"] == "alice"]
    balances = _money_checks(fd)  # the replay accepts the checked stake in a voided round
    assert (balances["alice"], balances["bob"]) == (9000, 10_000)


def test_a_forged_early_line_in_a_voided_round_is_caught_by_the_replay(fd: Client) -> None:
    """The replay recomputes a checked stake of a voided round from its cards: a log
    claiming that stake won is refused, as is a settled line the rules never settled."""
    from table_service.regulator.replay import ReplayError

    _open_forced_draw(fd)
    fd.post(f"/tables/{T}/round/void", "supervisor", {"reason": "misdeal", "change_shoe": True})
    with fd.runtime.sessions() as session:
        events = EventStore.read(session)
    folded = fold_rounds(events)
    (fold,) = folded.rounds.values()
    alice = next(b for b in fold.bets.values() if b.account == "alice")
    bob = next(b for b in fold.bets.values() if b.account == "bob")
    alice.result, alice.returned = "win", 2000
    with pytest.raises(ReplayError, match="rules give lose returning 0"):
        replay_round(fold, folded.rules[fold.rules_ref], None, ReplayTotals())
    alice.result, alice.returned = "lose", 0
    bob.status, bob.result, bob.returned = "settled", "win", 2000
    fold.early_bets.add(bob.bet_id)
    with pytest.raises(ReplayError):
        replay_round(fold, folded.rules[fold.rules_ref], None, ReplayTotals())


@pytest.fixture
def room(make_runtime: Any) -> Iterator[Client]:
    config = TableConfig(
        table_id=T,
        game="xidach",
        game_rules={"profile_toml": _room(), "banker": "seated"},
        limits={"min_stake": 100, "max_stake": 2000},
        bet_limits={"bank": {"min_stake": 100, "max_stake": 10**9}},
    )
    yield from _client(make_runtime, config)


def test_against_a_seated_bank_punters_bank_and_commission_sum_to_zero(room: Client) -> None:
    accounts = {"p1": 10_000, "p2": 10_000, "banker": 20_000}
    for account, amount in accounts.items():
        room.post(
            f"/accounts/{account}/credit", "operator", {"amount": amount, "reference": account}
        )
    room.post(f"/tables/{T}/shoe", "supervisor")
    for seat, account in ((1, "p1"), (2, "p2"), (9, "banker")):
        room.post(f"/tables/{T}/seats", "operator", {"seat": seat, "account": account})
    opened = room.post(f"/tables/{T}/betting/open", "dealer")
    bets = [
        {"key": "1", "account": "p1", "type": "main", "stake": 2000, "seat": 1},
        {"key": "2", "account": "p2", "type": "main", "stake": 1000, "seat": 2},
        {"key": "9", "account": "banker", "type": "bank", "stake": 20_000, "seat": 9},
    ]
    answer = room.post(f"/tables/{T}/bets", "operator", {"bets": bets})
    assert answer.get("betting_closed") is True  # every seated player has bet
    # clockwise: seat 1 TS 9D = 19, seat 2 AS KD = Xì Dách, the banker 7C 8C = 15 then 5H
    for card in ("TS", "AS", "7C", "9D", "KD", "8C"):
        room.post(f"/tables/{T}/cards", "supervisor", {"card": card})
    _act(room, "seat:1", "stand", "p1")
    _act(room, "banker", "hit", "banker")
    room.post(f"/tables/{T}/cards", "supervisor", {"card": "5H"})  # 20: the banker stands
    _act(room, "banker", "stand", "banker")
    (settled,) = _events(room, "round_settled")
    # seat 1 loses 2000 to the bank; seat 2's natural wins 1500, of which 75 is commission
    assert (settled["staked"], settled["returned"], settled["commission"]) == (23_000, 22_925, 75)
    balances = _money_checks(room)
    assert balances["p1"] == 8000 and balances["p2"] == 11_425
    assert balances["banker"] == 20_000 + 2000 - 1500
    assert balances[house_account(T)] == 75
    with room.runtime.sessions() as session:
        round_lines = session.scalar(
            select(func.sum(LedgerEntry.amount)).where(
                LedgerEntry.bet_id.in_(
                    [b["bet_id"] for b in room.get(f"/rounds/{opened['round_id']}")["bets"]]
                )
            )
        )
    assert round_lines == 0  # punters + bank + commission: the round moves no money away
