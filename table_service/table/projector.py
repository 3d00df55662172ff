"""Read models from events, written in the same transaction as the events themselves.

Fixed statements straight to the driver keep large batches (thousands of bets) cheap. Every
money movement asserts what it expects (a balance sufficient) and the schema's constraints
back it up (a bet's return entry is unique, a balance never negative), so a bug can abort
a transaction but never pay twice.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from operator import itemgetter
from typing import Any

from sqlalchemy import Table, insert, select, update
from sqlalchemy.orm import Session

from audit.store import StoredEvent
from table_service.models import IncidentRow, LedgerEntry, RoundRow


def _table_of(model: type[RoundRow]) -> Table:
    """A model's table, as the Table it is (the declarative base types it as any FromClause)."""
    table = model.__table__
    if not isinstance(table, Table):
        raise TypeError(f"{model.__name__} is not mapped to one table")
    return table


_ROUNDS = _table_of(RoundRow)  # Core statements: no ORM bulk-update bookkeeping per card


class ProjectionError(RuntimeError):
    """The read models disagree with an event: the transaction must not commit."""


def _dumps(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def _move_money(session: Session, deltas: dict[str, int], seq: int) -> None:
    """Apply balance changes; a debit that would go below zero aborts the transaction.

    One statement per kind of write, not a statement per account: a settlement touches
    thousands of accounts. The caller holds the log's write lock, so nothing moves between
    a read and the writes; the guard in the UPDATE and the schema's CHECK stay as the
    backstop. On PostgreSQL the guarded UPDATE itself says which accounts it moved (no
    read before it: a round trip less for every bet, credit and settlement).
    """
    moves = {account: delta for account, delta in deltas.items() if delta != 0}
    if not moves:
        return
    conn = session.connection()
    if conn.dialect.name == "postgresql":
        accounts = list(moves)
        moved = {
            row[0]
            for row in conn.exec_driver_sql(
                "UPDATE accounts AS a SET balance = a.balance + v.delta, updated_seq = %s"
                " FROM unnest(%s::text[], %s::bigint[]) AS v(account_id, delta)"
                " WHERE a.account_id = v.account_id AND a.balance + v.delta >= 0"
                " RETURNING a.account_id",
                (seq, accounts, [moves[a] for a in accounts]),
            )
        }
        missing = [a for a in accounts if a not in moved]
        short = [a for a in missing if moves[a] < 0]  # no account, or not enough in it
        if short:
            raise ProjectionError(
                f"account {short[0]}: debit {moves[short[0]]} exceeds the balance"
            )
        new = [(a, moves[a], seq) for a in missing]
    else:
        known = balances(session, moves)
        short_debits = {a: d for a, d in moves.items() if d < 0 and known.get(a, 0) + d < 0}
        if short_debits:
            account, delta = next(iter(short_debits.items()))
            raise ProjectionError(f"account {account}: debit {delta} exceeds the balance")
        existing = [(a, d) for a, d in moves.items() if a in known]
        if existing:
            done = _executemany(
                session,
                "UPDATE accounts SET balance = balance + ?, updated_seq = ?"
                " WHERE account_id = ? AND balance + ? >= 0",
                [(d, seq, a, d) for a, d in existing],
            )
            if done not in (-1, len(existing)):
                raise ProjectionError(f"{len(existing)} balances to move, {done} moved")
        new = [(a, d, seq) for a, d in moves.items() if a not in known]
    if new:
        _executemany(
            session, "INSERT INTO accounts (account_id, balance, updated_seq) VALUES (?, ?, ?)", new
        )


_CUSTOM_PLANS = "projector_custom_plans"


def custom_plans(session: Session) -> None:
    """Plan this transaction's statements for their actual parameters (PostgreSQL): a
    generic plan made while a table was small would scan it sequentially for an array of
    thousands of keys. Once per transaction, not once per statement (a round trip each)."""
    transaction = session.get_transaction()
    if session.info.get(_CUSTOM_PLANS) is transaction:
        return
    session.connection().exec_driver_sql("SET LOCAL plan_cache_mode = force_custom_plan")
    session.info[_CUSTOM_PLANS] = transaction


def balances(session: Session, accounts: Iterable[str]) -> dict[str, int]:
    """The balances of these accounts (locked for this transaction on PostgreSQL), read
    with fixed SQL straight to the driver: one statement over an array on PostgreSQL,
    chunks of 500 markers on SQLite."""
    return {a: balance for a, (balance, _) in balances_and_owners(session, accounts).items()}


def balances_and_owners(
    session: Session, accounts: Iterable[str]
) -> dict[str, tuple[int, str | None]]:
    """account → (balance, owning operator) for those of ``accounts`` that exist, in one
    statement (locked for this transaction on PostgreSQL)."""
    wanted = sorted(set(accounts))
    if not wanted:
        return {}
    conn = session.connection()
    if conn.dialect.name == "postgresql":
        custom_plans(session)
        rows = conn.exec_driver_sql(
            "SELECT account_id, balance, owner FROM accounts WHERE account_id = ANY(%s) FOR UPDATE",
            (wanted,),
        )
        return {account: (balance, owner) for account, balance, owner in rows}
    found: dict[str, tuple[int, str | None]] = {}
    for start in range(0, len(wanted), 500):
        chunk = wanted[start : start + 500]
        rows = conn.exec_driver_sql(
            "SELECT account_id, balance, owner FROM accounts WHERE account_id IN"
            f" ({', '.join('?' * len(chunk))})",
            tuple(chunk),
        )
        found.update({account: (balance, owner) for account, balance, owner in rows})
    return found


@dataclass
class _BetRows:
    """The bet and ledger rows of one command, written together at its end."""

    deltas: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    placed: list[tuple[Any, ...]] = field(default_factory=list)
    stakes: list[tuple[Any, ...]] = field(default_factory=list)
    returns: list[tuple[Any, ...]] = field(default_factory=list)

    def write(self, session: Session, seq: int) -> None:
        """One executemany (one ``COPY`` on PostgreSQL) per table for the whole command,
        in key order within each event: a settlement of 100k bets arrives as 100 events,
        and rows that reach each index in order touch each page once, where 100 batches
        in random order would touch most pages 100 times."""
        if self.placed:
            self.placed.sort(key=_seq_then_bet)
            _executemany(session, _INSERT_BET, self.placed)
        for sql, rows in ((_INSERT_LEDGER, self.stakes), (_INSERT_RETURN, self.returns)):
            if rows:
                rows.sort(key=_ledger_order)
                _executemany(session, sql, rows)
        _move_money(session, self.deltas, seq)


_seq_then_bet = itemgetter(7, 0)  # a placed bet row: placed_seq, bet_id
_ledger_order = itemgetter(4, 3)  # a ledger row: seq, bet_id


def project(session: Session, events: Iterable[StoredEvent]) -> None:
    """Apply one command's events to the read models.

    Bet rows and balance changes from bets are gathered over the whole command and written
    once at the end (a settlement of 100k bets arrives as 100 events touching the same
    accounts); the transaction is the unit that must never take a balance below zero.
    """
    rows = _BetRows()
    last = 0
    for event in events:
        last = event.seq
        handler = _HANDLERS.get(event.type)
        if handler is None:
            continue
        if event.type in _BET_MONEY:
            handler(event, rows)
        else:
            handler(session, event)
    rows.write(session, last)


def _betting_opened(session: Session, e: StoredEvent) -> None:
    p = e.payload
    shoe_no = p.get("shoe_no")
    if shoe_no is None:  # recorded before the event carried it: the round id names it
        shoe_no = int(p["round_id"].rsplit("-s", 1)[1].split("-g")[0])
    session.execute(
        insert(RoundRow).values(
            round_id=p["round_id"],
            table_id=e.table_id,
            shoe_no=shoe_no,
            game_number=p["game_number"],
            phase="betting",
            closes_at=p["closes_at"],
            cards="[]",
            opened_seq=e.seq,
        )
    )


def _round_phase(phase: str, **extra: Any) -> Any:
    def handler(session: Session, e: StoredEvent) -> None:
        values: dict[str, Any] = {"phase": phase}
        for column, key in extra.items():
            values[column] = e.payload.get(key)
        if phase in ("settled", "voided"):
            values["closed_seq"] = e.seq
        session.connection().execute(
            update(_ROUNDS).where(_ROUNDS.c.round_id == e.payload["round_id"]).values(**values)
        )

    return handler


def _cards(session: Session, round_id: str) -> list[str]:
    raw = session.connection().scalar(select(_ROUNDS.c.cards).where(_ROUNDS.c.round_id == round_id))
    return json.loads(raw) if raw else []


ROUND_CARDS = "projector_round_cards"


def _card_dealt(session: Session, e: StoredEvent) -> None:
    """The round's cards after this command, when the service says what they are (it has
    just computed them); otherwise read, append, write."""
    p = e.payload
    known = session.info.get(ROUND_CARDS)
    if known is not None and known[0] == p["round_id"]:
        cards = list(known[1])
    else:
        cards = [*_cards(session, p["round_id"]), p["card"]]
    _executemany(
        session, "UPDATE rounds SET cards = ? WHERE round_id = ?", [(_dumps(cards), p["round_id"])]
    )


def _cards_rearranged(session: Session, e: StoredEvent) -> None:
    p = e.payload
    session.execute(
        update(RoundRow).where(RoundRow.round_id == p["round_id"]).values(cards=_dumps(p["cards"]))
    )


def _card_set_aside(session: Session, e: StoredEvent) -> None:
    p = e.payload
    if p.get("from_round"):
        session.execute(
            update(RoundRow)
            .where(RoundRow.round_id == p["from_round"])
            .values(cards=_dumps(p["round_cards"]))
        )


def _round_result(session: Session, e: StoredEvent) -> None:
    p = e.payload
    session.execute(
        update(RoundRow)
        .where(RoundRow.round_id == p["round_id"])
        .values(phase="result", outcome=_dumps(p["outcome"]))
    )


def _executemany(session: Session, sql: str, rows: list[tuple[Any, ...]]) -> int:
    """A hot executemany straight through the driver (``?`` becomes the driver's marker).

    For the tens of thousands of bet and ledger rows of one command, building a parameter
    dict per row through the SQL expression layer costs as much as the database's own
    work; the statements are fixed text with positional parameters, so nothing is lost.
    On PostgreSQL a statement per row costs a server round of parsing and executing each,
    so inserts go through ``COPY`` (every value is a parameter, none is written in the SQL).
    """
    connection = session.connection()
    if connection.dialect.paramstyle == "qmark":
        return connection.exec_driver_sql(sql, rows).rowcount
    if not sql.startswith("INSERT") or len(rows) == 1:
        return connection.exec_driver_sql(sql.replace("?", "%s"), rows).rowcount
    # PostgreSQL: COPY, one stream for all rows instead of a statement per row.
    table_and_columns = sql.split(" VALUES ", 1)[0].removeprefix("INSERT INTO ")
    driver = connection.connection.driver_connection
    if driver is None:  # only a connection already closed or invalidated has none
        raise RuntimeError("the database connection was closed under the projector")
    cursor = driver.cursor()
    with cursor.copy(f"COPY {table_and_columns} FROM STDIN") as copy:
        for row in rows:
            copy.write_row(row)
    return len(rows)


_INSERT_BET = (
    "INSERT INTO placed_bets (bet_id, idempotency_key, table_id, round_id, account_id,"
    " bet_type, stake, placed_seq) VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
)
_INSERT_LEDGER = (
    "INSERT INTO ledger_entries (account_id, amount, kind, bet_id, seq) VALUES (?, ?, ?, ?, ?)"
)
_INSERT_RETURN = (
    "INSERT INTO ledger_entries (account_id, amount, kind, bet_id, seq, result)"
    " VALUES (?, ?, ?, ?, ?, ?)"
)


def _bets_placed(e: StoredEvent, rows: _BetRows) -> None:
    bets = e.payload["bets"]
    round_id, seq, table_id = e.payload["round_id"], e.seq, e.table_id
    deltas = rows.deltas
    for b in bets:
        deltas[b["account"]] -= b["stake"]
    rows.placed.extend(
        (b["bet_id"], b["key"], table_id, round_id, b["account"], b["type"], b["stake"], seq)
        for b in bets
    )
    rows.stakes.extend((b["account"], -b["stake"], "stake", b["bet_id"], seq) for b in bets)


def _close_bets(key: str) -> Any:
    """Settling or refunding bets is one row each: the bet's return entry in the ledger
    (the ``bets`` view derives status, result and return from it). ``(bet_id, kind)`` is
    unique, so a second settlement or refund of a bet aborts the transaction."""

    def handler(e: StoredEvent, rows: _BetRows) -> None:
        seq = e.seq
        deltas = rows.deltas
        for i in e.payload[key]:
            deltas[i["account"]] += i["returned"]
        rows.returns.extend(
            (i["account"], i["returned"], "return", i["bet_id"], seq, i.get("result", "refunded"))
            for i in e.payload[key]
        )

    return handler


def _incident_raised(session: Session, e: StoredEvent) -> None:
    p = e.payload
    session.execute(
        insert(IncidentRow).values(
            incident_id=p["incident_id"],
            table_id=e.table_id,
            round_id=p.get("round_id"),
            kind=p["kind"],
            blocking=bool(p["blocking"]),
            status="open",
            details=_dumps(p.get("details", {})),
            raised_by=p.get("raised_by") or e.actor,
            raised_seq=e.seq,
        )
    )


def _incident_resolved(session: Session, e: StoredEvent) -> None:
    p = e.payload
    session.execute(
        update(IncidentRow)
        .where(IncidentRow.incident_id == p["incident_id"])
        .values(
            status="resolved",
            resolution=p["resolution"],
            resolved_by=p.get("resolved_by") or e.actor,
            resolved_seq=e.seq,
        )
    )


def _account_credited(session: Session, e: StoredEvent) -> None:
    p = e.payload
    _move_money(session, {p["account"]: p["amount"]}, e.seq)
    session.execute(
        insert(LedgerEntry).values(
            account_id=p["account"],
            amount=p["amount"],
            kind="credit",
            reference=p["reference"],
            seq=e.seq,
        )
    )


def _account_debited(session: Session, e: StoredEvent) -> None:
    p = e.payload
    _move_money(session, {p["account"]: -p["amount"]}, e.seq)
    session.execute(
        insert(LedgerEntry).values(
            account_id=p["account"],
            amount=-p["amount"],
            kind="debit",
            reference=p["reference"],
            seq=e.seq,
        )
    )


def _commission_credited(session: Session, e: StoredEvent) -> None:
    """The house's share of a settlement's wins: one ``commission`` line per bet, to the
    table's house account (created with its first line)."""
    p = e.payload
    _move_money(session, {p["account"]: p["amount"]}, e.seq)
    session.execute(
        insert(LedgerEntry),
        [
            {
                "account_id": p["account"],
                "amount": line["commission"],
                "kind": "commission",
                "bet_id": line["bet_id"],
                "seq": e.seq,
            }
            for line in p["lines"]
        ],
    )


_BET_MONEY = frozenset({"bets_placed", "bets_settled", "bets_refunded"})

_HANDLERS: dict[str, Any] = {
    "betting_opened": _betting_opened,
    "betting_closed": _round_phase("dealing"),
    "card_dealt": _card_dealt,
    "cards_rearranged": _cards_rearranged,
    "card_set_aside": _card_set_aside,
    "round_result": _round_result,
    "round_settled": _round_phase("settled"),
    "round_voided": _round_phase("voided", void_reason="reason"),
    "bets_placed": _bets_placed,
    "bets_settled": _close_bets("results"),
    "bets_refunded": _close_bets("refunds"),
    "incident_raised": _incident_raised,
    "incident_resolved": _incident_resolved,
    "account_credited": _account_credited,
    "account_debited": _account_debited,
    "commission_credited": _commission_credited,
}
