"""Bet requests that arrive together are committed together, each decided and answered on
its own (the table's group commit)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest
from sqlalchemy import func, select

from table_service.models import Account, BetRow, LedgerEntry
from table_service.principals import Principal
from table_service.table import commands as c
from table_service.table import service as service_module
from table_service.table.config import TableConfig
from table_service.table.errors import BettingClosed, IdempotencyConflict
from table_service.table.projector import ProjectionError, project
from table_service.table.service import Outcome, TableService, new_bet_id
from table_service.table.wallet import Transfer, transfer

OPS = ("operator:a", "operator:b", "operator:c")


@pytest.fixture
async def table(runtime: Any) -> AsyncIterator[TableService]:
    service = TableService(runtime, TableConfig(table_id="grp-1", betting_seconds=600))
    await service.start(with_reader=False)
    for command in (c.InsertShoe(), c.CardScanned("AS"), c.CardScanned("2S"), c.OpenBetting()):
        await service.execute(command, actor="supervisor:s")
    for op in OPS:
        for n in range(3):
            item = Transfer(f"{op[-1]}{n}", 10_000, f"seed-{n}", "credit")
            transfer(runtime, item, actor=op)
    transfer(runtime, Transfer("poor", 300, "seed", "credit"), actor="operator:a")
    yield service
    await service.stop()


def bets(*items: tuple[str, str, int]) -> c.PlaceBets:
    return c.PlaceBets(
        tuple(
            c.BetRequest(new_bet_id(), key, account, "player", stake)
            for key, account, stake in items
        )
    )


def spy_groups(service: TableService, monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The number of requests each group transaction was given."""
    sizes: list[int] = []
    original = service._bet_group_in_transaction

    def counted(items: list[tuple[c.PlaceBets, Principal]], **kwargs: Any) -> Any:
        sizes.append(len(items))
        return original(items, **kwargs)

    monkeypatch.setattr(service, "_bet_group_in_transaction", counted)
    return sizes


async def together(
    service: TableService, requests: list[tuple[c.PlaceBets, str]]
) -> list[Outcome | BaseException]:
    return await asyncio.gather(
        *(service.execute(command, actor=actor) for command, actor in requests),
        return_exceptions=True,
    )


def stored(runtime: Any) -> dict[str, tuple[str, int]]:
    with runtime.sessions() as session:
        return {
            key.split("|", 1)[1]: (account, stake)
            for key, account, stake in session.execute(
                select(BetRow.idempotency_key, BetRow.account_id, BetRow.stake)
            )
        }


def balance(runtime: Any, account: str) -> int:
    with runtime.sessions() as session:
        return int(session.scalar(select(Account.balance).where(Account.account_id == account)))


def ledger_matches_balances(runtime: Any) -> None:
    with runtime.sessions() as session:
        total = session.scalar(select(func.coalesce(func.sum(Account.balance), 0)))
        ledger = session.scalar(select(func.coalesce(func.sum(LedgerEntry.amount), 0)))
    assert total == ledger


async def test_requests_of_several_operators_are_each_answered_on_their_own(
    table: TableService, runtime: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    sizes = spy_groups(table, monkeypatch)
    requests = [
        (bets(("k1", "a0", 100), ("k2", "a1", 200)), "operator:a"),
        (bets(("k1", "b0", 100), ("k2", "a0", 100)), "operator:b"),  # a0 is not b's
        (bets(("x", "c0", 100), ("x", "c1", 100)), "operator:c"),  # one key, two bets
        (bets(("k3", "a2", 20_000)), "operator:a"),  # more than the balance
        (bets(("k1", "c2", 500)), "operator:c"),
    ]
    answers = await together(table, requests)
    assert max(sizes) == len(requests)  # one transaction took them all
    first, second, conflict, broke, fifth = answers
    assert isinstance(first, Outcome) and isinstance(second, Outcome)
    assert [(r["key"], r["status"]) for r in first.answer["results"]] == [
        ("k1", "placed"),
        ("k2", "placed"),
    ]
    assert [(r["key"], r["status"], r.get("error")) for r in second.answer["results"]] == [
        ("k1", "placed", None),
        ("k2", "refused", "insufficient_funds"),
    ]
    assert isinstance(conflict, IdempotencyConflict)
    assert isinstance(broke, Outcome)
    assert broke.answer["results"][0]["error"] == "insufficient_funds"
    assert isinstance(fifth, Outcome) and fifth.answer["results"][0]["status"] == "placed"
    # each request's events are its own, and the log holds exactly what was answered placed
    assert {b["account"] for e in first.events for b in e.payload["bets"]} == {"a0", "a1"}
    assert all(e.actor == "operator:b" for e in second.events)
    assert broke.events == []
    with runtime.sessions() as session:
        keys = set(session.scalars(select(BetRow.idempotency_key)))
    assert keys == {"operator:a|k1", "operator:a|k2", "operator:b|k1", "operator:c|k1"}
    assert balance(runtime, "a0") == 9_900 and balance(runtime, "b0") == 9_900
    assert balance(runtime, "c0") == 10_000 and balance(runtime, "a2") == 10_000
    assert table.state.last_seq == max(
        e.seq for o in answers if isinstance(o, Outcome) for e in o.events
    )
    ledger_matches_balances(runtime)


async def test_balances_carry_from_one_request_to_the_next_in_a_group(
    table: TableService, runtime: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    sizes = spy_groups(table, monkeypatch)
    answers = await together(
        table, [(bets((f"p{n}", "poor", 200)), "operator:a") for n in range(3)]
    )
    assert max(sizes) == 3
    statuses = [o.answer["results"][0]["status"] for o in answers if isinstance(o, Outcome)]
    assert statuses == ["placed", "refused", "refused"]
    assert balance(runtime, "poor") == 100
    ledger_matches_balances(runtime)


async def test_a_retry_racing_its_first_send_is_a_duplicate_of_it(
    table: TableService, runtime: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    sizes = spy_groups(table, monkeypatch)
    same = bets(("once", "a0", 700))
    again = c.PlaceBets((c.BetRequest(new_bet_id(), "once", "a0", "player", 700),))
    other = c.PlaceBets((c.BetRequest(new_bet_id(), "once", "a0", "banker", 700),))
    first, retry, reused = await together(
        table, [(same, "operator:a"), (again, "operator:a"), (other, "operator:a")]
    )
    assert max(sizes) == 3
    assert isinstance(first, Outcome) and isinstance(retry, Outcome)
    placed = first.answer["results"][0]
    duplicate = retry.answer["results"][0]
    assert placed["status"] == "placed" and duplicate["status"] == "duplicate"
    assert duplicate["bet_id"] == placed["bet_id"]
    assert isinstance(reused, IdempotencyConflict)
    assert retry.events == []
    assert balance(runtime, "a0") == 9_300
    # a retry after the commit is answered from the database alike
    later = await table.execute(again, actor="operator:a")
    assert later.answer["results"][0]["bet_id"] == placed["bet_id"]
    assert stored(runtime) == {"once": ("a0", 700)}


async def test_a_failed_group_write_is_retried_request_by_request(
    table: TableService, runtime: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = project  # the service's own (imported from the projector)
    calls: list[int] = []

    def failing_once(session: Any, events: Any) -> None:
        events = list(events)
        calls.append(len(events))
        if len(calls) == 1:
            raise ProjectionError("injected: the group's write fails")
        real(session, events)

    monkeypatch.setattr(service_module, "project", failing_once)
    answers = await together(
        table, [(bets((f"f{n}", f"{op[-1]}0", 100)), op) for n, op in enumerate(OPS)]
    )
    assert len(calls) == 1 + len(OPS)  # the group, then each request on its own
    assert all(
        isinstance(o, Outcome) and o.answer["results"][0]["status"] == "placed" for o in answers
    )
    assert set(stored(runtime)) == {"f0", "f1", "f2"}
    ledger_matches_balances(runtime)


async def test_a_group_after_the_close_is_refused_request_by_request(
    table: TableService, runtime: Any
) -> None:
    await table.execute(c.CloseBetting("dealer"), actor="dealer:d")
    answers = await together(table, [(bets(("late", f"{op[-1]}0", 100)), op) for op in OPS])
    assert all(isinstance(o, BettingClosed) for o in answers)
    assert stored(runtime) == {}


async def test_a_request_under_recorded_keys_is_answered_as_a_lookup_answers_it(
    table: TableService, runtime: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A request is first decided without looking its keys up; whatever the
    keys' history, each bet is answered as the lookup answers it: a recorded key's bet is
    a duplicate (never refused for the money it took), a write under a recorded key fails
    on the unique key and nothing of it commits, and a request whose keys are all known is
    answered after the close."""
    reruns: list[int] = []
    original = table._bet_group_in_transaction

    def counted(items: Any, *, look_up: bool = True) -> Any:
        reruns.append(look_up)
        return original(items, look_up=look_up)

    monkeypatch.setattr(table, "_bet_group_in_transaction", counted)
    first = await table.execute(bets(("k1", "a0", 700), ("k2", "a1", 100)), actor="operator:a")
    ids = {r["key"]: r["bet_id"] for r in first.answer["results"]}
    assert reruns == [False]

    # the recorded bets again with a new one, both accounts funded: the write under the
    # recorded keys fails, and the request runs again looking them up
    reruns.clear()
    retry = bets(("k1", "a0", 700), ("k2", "a1", 100), ("k3", "a2", 100))
    again = await table.execute(retry, actor="operator:a")
    assert [(r["key"], r["status"]) for r in again.answer["results"]] == [
        ("k1", "duplicate"),
        ("k2", "duplicate"),
        ("k3", "placed"),
    ]
    assert [again.answer["results"][i]["bet_id"] for i in (0, 1)] == [ids["k1"], ids["k2"]]
    assert reruns == [False, True]
    assert [len(e.payload["bets"]) for e in again.events] == [1]

    # a recorded key whose account has been emptied since: a duplicate, not refused
    transfer(runtime, Transfer("a0", 9_300, "drain", "debit"), actor="operator:a")
    emptied = await table.execute(bets(("k1", "a0", 700), ("k4", "a0", 100)), actor="operator:a")
    assert [(r["key"], r["status"]) for r in emptied.answer["results"]] == [
        ("k1", "duplicate"),
        ("k4", "refused"),
    ]
    assert emptied.answer["results"][1]["error"] == "insufficient_funds"

    # every key known, after the close: answered from the database
    await table.execute(c.CloseBetting("dealer"), actor="supervisor:s")
    late = await table.execute(bets(("k2", "a1", 100), ("k3", "a2", 100)), actor="operator:a")
    assert [r["status"] for r in late.answer["results"]] == ["duplicate", "duplicate"]
    assert late.events == []
    assert stored(runtime) == {"k1": ("a0", 700), "k2": ("a1", 100), "k3": ("a2", 100)}
    assert (balance(runtime, "a0"), balance(runtime, "a1"), balance(runtime, "a2")) == (
        0,
        9_900,
        9_900,
    )
    ledger_matches_balances(runtime)


async def test_keys_are_recorded_in_the_operators_namespace_and_answered_as_sent(
    table: TableService, runtime: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two operators may send the same key: each is recorded under its operator's
    namespace and answered under the key as sent, a key holding the namespace's
    separator too, alone, in a group, and when retried (a retry of ``x|1`` was answered
    as ``1`` while the answers' keys were cut at the separator)."""
    sizes = spy_groups(table, monkeypatch)
    first = await table.execute(bets(("x|1", "a0", 100), ("k", "a1", 200)), actor="operator:a")
    assert [r["key"] for r in first.answer["results"]] == ["x|1", "k"]
    grouped = await together(
        table,
        [
            (bets(("x|1", "b0", 300)), "operator:b"),
            (bets(("x|1", "a0", 100), ("y|2|3", "a2", 100)), "operator:a"),
        ],
    )
    assert max(sizes) == 2
    other, retry = grouped
    assert isinstance(other, Outcome) and isinstance(retry, Outcome)
    assert [(r["key"], r["status"]) for r in other.answer["results"]] == [("x|1", "placed")]
    assert [(r["key"], r["status"]) for r in retry.answer["results"]] == [
        ("x|1", "duplicate"),
        ("y|2|3", "placed"),
    ]
    assert retry.answer["results"][0]["bet_id"] == first.answer["results"][0]["bet_id"]
    with runtime.sessions() as session:
        keys = set(session.scalars(select(BetRow.idempotency_key)))
    assert keys == {"operator:a|x|1", "operator:a|k", "operator:b|x|1", "operator:a|y|2|3"}
    recorded = [e.payload["bets"] for e in first.events if e.type == "bets_placed"]
    assert [b["key"] for chunk in recorded for b in chunk] == ["operator:a|x|1", "operator:a|k"]
    ledger_matches_balances(runtime)


async def test_a_group_of_new_keys_is_written_without_looking_them_up(
    table: TableService, runtime: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As a lone request's: the keys of a group are taken as new; one already recorded
    fails the write and the group runs again looking them up, with the lookup's answers;
    a group with a refusal is decided again looking up before anything is written."""
    sizes = spy_groups(table, monkeypatch)
    lookups: list[int] = []
    real = service_module._existing_bets

    def counted(session: Any, keys: list[str]) -> Any:
        lookups.append(len(keys))
        return real(session, keys)

    monkeypatch.setattr(service_module, "_existing_bets", counted)
    fresh = await together(
        table, [(bets(("n1", "a0", 100)), "operator:a"), (bets(("n1", "b0", 100)), "operator:b")]
    )
    assert sizes == [2] and lookups == []
    assert all(isinstance(o, Outcome) for o in fresh)
    retried = await together(
        table,
        [(bets(("n2", "a1", 100)), "operator:a"), (bets(("n1", "b0", 100)), "operator:b")],
    )
    assert sizes == [2, 2, 2] and lookups == [2]  # the write failed on the key, then looked up
    new, again = retried
    assert isinstance(new, Outcome) and isinstance(again, Outcome)
    assert new.answer["results"][0]["status"] == "placed"
    assert again.answer["results"][0]["status"] == "duplicate"
    assert isinstance(fresh[1], Outcome)
    assert again.answer["results"][0]["bet_id"] == fresh[1].answer["results"][0]["bet_id"]
    short = await together(
        table,
        [(bets(("n3", "poor", 1_000)), "operator:a"), (bets(("n1", "b0", 100)), "operator:b")],
    )
    assert sizes == [2, 2, 2, 2] and lookups == [2, 2]  # refused: decided again, looked up
    refused, duplicate = short
    assert isinstance(refused, Outcome) and isinstance(duplicate, Outcome)
    assert refused.answer["results"][0]["error"] == "insufficient_funds"
    assert duplicate.answer["results"][0]["status"] == "duplicate"
    assert stored(runtime) == {"n1": ("b0", 100), "n2": ("a1", 100)}
    ledger_matches_balances(runtime)
