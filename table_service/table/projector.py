"""Read models from events, written in the same transaction as the events themselves.

Fixed statements straight to the driver keep large batches (thousands of bets) cheap. Every
money movement asserts what it expects (a balance sufficient) and the schema's constraints
back it up (a bet's return entry is unique, a balance never negative), so a bug can abort
a transaction but never pay twice.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from operator import itemgetter
from typing import Any

import orjson
from sqlalchemy import Table, insert, select, update
from sqlalchemy.orm import Session

from audit.store import EventStore, StoredEvent
from table_service.models import IncidentRow, LedgerEntry, RoundRow
from table_service.table import events as ev
from table_service.table.events import REGISTRY, given, required


def _table_of(model: type[RoundRow]) -> Table:
    """A model's table, as the Table it is (the declarative base types it as any FromClause)."""
    table = model.__table__
    if not isinstance(table, Table):
        raise TypeError(f"{model.__name__} is not mapped to one table")
    return table


_ROUNDS = _table_of(RoundRow)  # Core statements: no ORM bulk-update bookkeeping per card


class ProjectionError(RuntimeError):
    """The read models disagree with an event: the transaction must not commit."""


KEY_CONSTRAINT = "uq_placed_bets_idempotency_key"  # as PostgreSQL names it
KEY_VIOLATED = "UNIQUE constraint failed: placed_bets.idempotency_key"  # as SQLite says it


class KnownKey(RuntimeError):
    """A bet written as new whose idempotency key is already recorded (the unique key on
    ``placed_bets``): the transaction must not commit, and its writer decides again
    after looking the keys up (a writer that skipped the lookup: see the service)."""


def _dumps(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def _move_money(session: Session, deltas: dict[str, int], seq: int) -> None:
    """Apply balance changes; a debit that would go below zero aborts the transaction.

    One statement per kind of write, not a statement per account: a settlement touches
    thousands of accounts. The caller holds the log's write lock, so nothing moves between
    a read and the writes; the guard in the UPDATE and the schema's CHECK stay as the
    backstop. On PostgreSQL the guarded UPDATE itself says which accounts it moved (no
    read before it: a round trip less for every bet, credit and settlement); on SQLite
    credits alone (a settlement, a wallet credit) are one upsert, with no read before it.
    """
    moves = {account: delta for account, delta in deltas.items() if delta != 0}
    if not moves:
        return
    conn = session.connection()
    if conn.dialect.name == "postgresql":
        _money_waits(session)
        accounts = list(moves)
        moved = set(
            conn.exec_driver_sql(
                "UPDATE accounts AS a SET balance = a.balance + v.delta, updated_seq = %s"
                " FROM unnest(%b::text[], %b::bigint[]) AS v(account_id, delta)"
                " WHERE a.account_id = v.account_id AND a.balance + v.delta >= 0"
                " RETURNING a.account_id",
                (seq, accounts, [moves[a] for a in accounts]),
            )
            .scalars()
            .all()  # the rows at once: fetched row by row, 1,000 took 0.45 ms more
        )
        missing = [a for a in accounts if a not in moved]
        short = [a for a in missing if moves[a] < 0]  # no account, or not enough in it
        if short:
            raise ProjectionError(
                f"account {short[0]}: debit {moves[short[0]]} exceeds the balance"
            )
        new = [(a, moves[a], seq) for a in missing]
    elif min(moves.values()) > 0:  # credits only: nothing to check, nothing to read
        _executemany(session, _CREDIT_SQLITE, [(a, d, seq) for a, d in moves.items()])
        return
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


# Credits on SQLite: an account's credit, or the account made with it (what the guarded
# UPDATE and the INSERT of new accounts do for credits), without reading the balances first.
_CREDIT_SQLITE = (
    "INSERT INTO accounts (account_id, balance, updated_seq) VALUES (?, ?, ?)"
    " ON CONFLICT (account_id) DO UPDATE"
    " SET balance = balance + excluded.balance, updated_seq = excluded.updated_seq"
)
_CUSTOM_PLANS = "projector_custom_plans"
_CUSTOM_PLANS_SQL = "SET LOCAL plan_cache_mode = force_custom_plan"


def custom_plans(session: Session) -> None:
    """Plan this transaction's statements for their actual parameters (PostgreSQL): a
    generic plan made while a table was small would scan it sequentially for an array of
    thousands of keys. Once per transaction, not once per statement (a round trip each)."""
    transaction = session.get_transaction()
    if session.info.get(_CUSTOM_PLANS) is transaction:
        return
    session.connection().exec_driver_sql(_CUSTOM_PLANS_SQL)
    session.info[_CUSTOM_PLANS] = transaction


def custom_plans_with_lock(session: Session) -> tuple[str, ...]:
    """:func:`custom_plans`'s setting for the caller to send in the log lock's round trip
    (``EventStore.lock(settings=...)``), taken as set for this transaction: a batch of
    bets reads its accounts' balances right after the lock, and the setting's own round
    trip was one of its seven. Nothing on SQLite."""
    if session.connection().dialect.name != "postgresql":
        return ()
    session.info[_CUSTOM_PLANS] = session.get_transaction()
    return (_CUSTOM_PLANS_SQL,)


def balances(session: Session, accounts: Iterable[str]) -> dict[str, int]:
    """The balances of these accounts (locked for this transaction on PostgreSQL), read
    with fixed SQL straight to the driver: one statement over an array on PostgreSQL,
    chunks of 500 markers on SQLite."""
    return {a: balance for a, (balance, _) in balances_and_owners(session, accounts).items()}


def balances_and_owners(
    session: Session, accounts: Iterable[str], *, lock: bool = True
) -> dict[str, tuple[int, str | None]]:
    """account → (balance, owning operator) for those of ``accounts`` that exist, in one
    statement (locked for this transaction on PostgreSQL).

    Arrays go to PostgreSQL binary (``%b``): as text, psycopg quotes each element through a
    regular expression (5.6 ms of CPU for 5,000 keys, 1.1 ms binary).

    ``lock=False`` (PostgreSQL): read as committed now, rows not locked, with the
    transaction's BEGIN when it is its first statement (``EventStore.fetch``): for a
    transaction reading before the log's lock, whose writes check the balances again
    (:data:`_DEFERRED_DEBITS`)."""
    wanted = sorted(set(accounts))
    if not wanted:
        return {}
    conn = session.connection()
    if conn.dialect.name == "postgresql" and not lock:
        read = EventStore.fetch(session, _UNLOCKED_BALANCES, (orjson.dumps(wanted).decode(),))
        return {account: (balance, owner) for account, balance, owner in read}
    if conn.dialect.name == "postgresql":
        _money_waits(session)
        custom_plans(session)
        rows = conn.exec_driver_sql(
            "SELECT account_id, balance, owner FROM accounts WHERE account_id = ANY(%b) FOR UPDATE",
            (wanted,),
        ).all()  # the rows at once: fetched row by row, 1,000 took 0.45 ms more
        return {account: (balance, owner) for account, balance, owner in rows}
    found: dict[str, tuple[int, str | None]] = {}
    for start in range(0, len(wanted), 500):
        chunk = wanted[start : start + 500]
        rows = conn.exec_driver_sql(
            "SELECT account_id, balance, owner FROM accounts WHERE account_id IN"
            f" ({', '.join('?' * len(chunk))})",
            tuple(chunk),
        ).all()
        found.update({account: (balance, owner) for account, balance, owner in rows})
    return found


_UNLOCKED_BALANCES = (
    "SELECT account_id, balance, owner FROM accounts"
    " WHERE account_id IN (SELECT jsonb_array_elements_text(%s::jsonb))"
)


@dataclass
class _BetRows:
    """The bet and ledger rows of one command, written together at its end."""

    deltas: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    placed: list[tuple[Any, ...]] = field(default_factory=list)
    stakes: list[tuple[Any, ...]] = field(default_factory=list)
    returns: list[tuple[Any, ...]] = field(default_factory=list)
    placed_seq: int = 0  # the last placing event's; 0: none yet, -1: they came out of order
    paying: int = 0  # the settling and refunding events gathered

    def write(self, session: Session, seq: int) -> None:
        """One executemany (one ``COPY`` on PostgreSQL) per table for the whole command,
        in key order within each event: a settlement of 100k bets arrives as 100 events,
        and rows that reach each index in order touch each page once, where 100 batches
        in random order would touch most pages 100 times. Placed bets and their stake
        lines are gathered in that order already (each event's bets by id, the events
        in the log's order), so they are sorted only if the events came out of order:
        sorting 5,000 rows already in order was 4-11 ms of a batch under load.

        On PostgreSQL a command that only pays, with one event (settles or refunds up to
        a chunk of bets: no stake taken, no balance going down, so nothing to check
        before the commit) sends nothing now: its return entries and credits wait for
        the COMMIT (:func:`_defer_credits`). A larger one goes by COPY, as before: the
        server's work is the same for a hundred rows either way, and the COPY's cheaper
        for 100,000 (a settlement of 100k bets 1.8-2.3 s by COPY, 2.3-2.6 s by JSON).

        Likewise a command that only places up to :data:`DEFERRED_PLACING` bets (a bet
        group) sends nothing now: its bets, stake lines and debits wait for the COMMIT
        (:func:`_defer_stakes`), the debits refusing, there, any balance they would take
        below zero."""
        if self.placed_seq < 0:  # the events came out of order
            self.placed.sort(key=_seq_then_bet)
            self.stakes.sort(key=_ledger_order)
        self.returns.sort(key=_ledger_order)
        if (
            self.placed
            and not self.returns
            and len(self.placed) <= DEFERRED_PLACING
            and max(self.deltas.values(), default=0) <= 0
            and session.connection().dialect.name == "postgresql"
        ):
            _defer_stakes(session, self.placed, self.stakes, self.deltas, seq)
            return
        if (
            self.paying == _DEFERRED_PAYING
            and not self.placed
            and min(self.deltas.values(), default=0) >= 0
            and session.connection().dialect.name == "postgresql"
        ):
            _defer_credits(session, self.returns, self.deltas, seq)
            return
        if self.placed:
            _executemany(session, _INSERT_BET, self.placed)
        for sql, rows in ((_INSERT_LEDGER, self.stakes), (_INSERT_RETURN, self.returns)):
            if rows:
                _executemany(session, sql, rows)
        _move_money(session, self.deltas, seq)


_seq_then_bet = itemgetter(7, 0)  # a placed bet row: placed_seq, bet_id

# A command's return entries and credits as statements that wait for the COMMIT
# (PostgreSQL): each takes its rows as one JSON array parameter (one literal when the
# commit binds it: a parameter a value was ~1 us to bind, a hundred rows' arrays ~0.6
# ms), in their order (the ledger's ids follow it, as they followed the COPY's).
_DEFERRED_PAYING = 1  # a command paying with more events writes at once (COPY)
_DEFERRED_RETURNS = (
    "INSERT INTO ledger_entries (account_id, amount, kind, bet_id, seq, result)"
    " SELECT r->>0, (r->>1)::bigint, r->>2, r->>3, (r->>4)::bigint, r->>5"
    " FROM jsonb_array_elements(%s::jsonb) WITH ORDINALITY AS x(r, n) ORDER BY n"
)
# The credit of each account, made if it has none yet: what _move_money's UPDATE and
# INSERT do for credits (no guard to check: no balance goes down).
_DEFERRED_CREDITS = (
    "INSERT INTO accounts AS a (account_id, balance, updated_seq)"
    " SELECT r->>0, (r->>1)::bigint, %s FROM jsonb_array_elements(%s::jsonb) AS x(r)"
    " ON CONFLICT (account_id) DO UPDATE"
    " SET balance = a.balance + EXCLUDED.balance, updated_seq = EXCLUDED.updated_seq"
)
_MONEY_WAITS = "projector_money_waits"  # the transaction whose money waits for its COMMIT
DEFERRED_PLACING = 1000
"""Bets placed by one command up to which their rows wait for the COMMIT (PostgreSQL):
a bet group of a live table's window. A batch larger goes by COPY (intake's 5,000)."""
_DEFERRED_BETS = (
    "INSERT INTO placed_bets (bet_id, idempotency_key, table_id, round_id, account_id,"
    " bet_type, stake, placed_seq)"
    " SELECT r->>0, r->>1, r->>2, r->>3, r->>4, r->>5, (r->>6)::bigint, (r->>7)::bigint"
    " FROM jsonb_array_elements(%s::jsonb) WITH ORDINALITY AS x(r, n) ORDER BY n"
)
_DEFERRED_STAKES = (
    "INSERT INTO ledger_entries (account_id, amount, kind, bet_id, seq)"
    " SELECT r->>0, (r->>1)::bigint, r->>2, r->>3, (r->>4)::bigint"
    " FROM jsonb_array_elements(%s::jsonb) WITH ORDINALITY AS x(r, n) ORDER BY n"
)
# The debit of each account, guarded as _move_money's UPDATE is; fails (an error: the
# commit with it fails whole) unless every account was there with enough in it. Checked
# at the commit, under the log's lock: a transaction that read the balances before its
# lock (the service's bet group) learns there whether they still stand.
_DEBIT_REFUSED = "livetable debit exceeds a balance"
_DEFERRED_DEBITS = (
    "WITH moved AS (UPDATE accounts AS a SET balance = a.balance + (r->>1)::bigint,"
    " updated_seq = %s FROM jsonb_array_elements(%s::jsonb) AS x(r)"
    " WHERE a.account_id = r->>0 AND a.balance + (r->>1)::bigint >= 0 RETURNING 1)"
    f" SELECT (CASE WHEN count(*) = %s THEN '0' ELSE '{_DEBIT_REFUSED}' END)::int FROM moved"
)


def debit_refused(exc: BaseException) -> bool:
    """Whether ``exc`` (the driver's, or SQLAlchemy's around it) is a commit refused by
    :data:`_DEFERRED_DEBITS`: a balance short of a debit that waited for the COMMIT."""
    return _DEBIT_REFUSED in str(getattr(exc, "orig", exc))


def _defer_stakes(
    session: Session,
    placed: list[tuple[Any, ...]],
    stakes: list[tuple[Any, ...]],
    deltas: Mapping[str, int],
    seq: int,
) -> None:
    """Placed bets, their stake lines and debits sent with the COMMIT
    (``EventStore.defer``): a bet group then writes nothing before it (it took four round
    trips more under the log's lock: the COPY of each table, two trips each, and the
    balances' UPDATE). The schema refuses what it refused (a key used before, a bet
    staked twice), at the commit, which fails whole."""
    EventStore.defer(session, _DEFERRED_BETS, (orjson.dumps(placed).decode(),))
    EventStore.defer(session, _DEFERRED_STAKES, (orjson.dumps(stakes).decode(),))
    debits = [(account, delta) for account, delta in deltas.items() if delta]
    if debits:
        EventStore.defer(
            session, _DEFERRED_DEBITS, (seq, orjson.dumps(debits).decode(), len(debits))
        )
    session.info[_MONEY_WAITS] = session.get_transaction()


def _defer_credits(
    session: Session, returns: list[tuple[Any, ...]], deltas: Mapping[str, int], seq: int
) -> None:
    """Return entries and credits sent with the COMMIT (``EventStore.defer``): a settling
    card then reads and writes nothing before it, and commits in one round trip like any
    card (it took four more: the log's lock, the balances' UPDATE, the COPY's two). The
    schema still refuses what it refused: a second return of a bet (the unique key), an
    account past the ceiling (its CHECK), at the commit, which fails whole."""
    EventStore.defer(session, _DEFERRED_RETURNS, (orjson.dumps(returns).decode(),))
    credits = [(account, delta) for account, delta in deltas.items() if delta]
    if credits:
        EventStore.defer(session, _DEFERRED_CREDITS, (seq, orjson.dumps(credits).decode()))
    session.info[_MONEY_WAITS] = session.get_transaction()


def _money_waits(session: Session) -> None:
    """Returns and credits this transaction deferred go now (with whatever waited before
    them), before anything reads or moves a balance."""
    if session.info.get(_MONEY_WAITS) is session.get_transaction():
        del session.info[_MONEY_WAITS]
        EventStore.send_deferred(session)


_ledger_order = itemgetter(4, 3)  # a ledger row: seq, bet_id


def project(session: Session, events: Iterable[StoredEvent]) -> None:
    """Apply one command's events to the read models.

    Each table event is read as its class (the registry's, as the table's fold reads it)
    and dispatched on it; the ledger's own events (a wallet credit or debit) have theirs.
    Bet rows and balance changes from bets are gathered over the whole command and written
    once at the end (a settlement of 100k bets arrives as 100 events touching the same
    accounts); the transaction is the unit that must never take a balance below zero.
    """
    rows = _BetRows()
    last = 0
    for stored in events:
        last = stored.seq
        cls = REGISTRY.get(stored.type)
        if cls is None:
            ledger = _LEDGER.get(stored.type)
            if ledger is not None:
                ledger(session, stored)
            continue
        money = _BET_MONEY.get(cls)
        if money is not None:
            money(rows, stored, cls.from_payload(stored.payload))
            continue
        handler = _HANDLERS.get(cls)
        if handler is not None:
            if cls not in _AFTER_DEFERRED:
                EventStore.send_deferred(session)  # it may read or rewrite what waits
            handler(session, stored, cls.from_payload(stored.payload))
    rows.write(session, last)


def _betting_opened(session: Session, e: StoredEvent, x: ev.BettingOpened) -> None:
    """Nothing reads the new round's row before the commit (a card dealt in the same
    command asks for what waits to be sent first): on PostgreSQL it goes with the COMMIT,
    so opening the betting window commits in one round trip, as a card does."""
    shoe_no = given(x.shoe_no, None)
    if shoe_no is None:  # recorded before the event carried it: the round id names it
        shoe_no = int(x.round_id.rsplit("-s", 1)[1].split("-g")[0])
    EventStore.defer(
        session,
        "INSERT INTO rounds (round_id, table_id, shoe_no, game_number, phase, closes_at,"
        " cards, opened_seq) VALUES (%s, %s, %s, %s, %s, %s, %s, %s)",
        (x.round_id, e.table_id, shoe_no, x.game_number, "betting", x.closes_at, "[]", e.seq),
    )


def _phase(session: Session, round_id: str, phase: str, **values: Any) -> None:
    """Nothing reads the round's row again before the commit: on PostgreSQL the new phase
    goes with the COMMIT, after the round's earlier waiting writes (a settling card was
    two round trips more under the log's lock: its result, then its settlement)."""
    columns = {"phase": phase, **values}
    sets = ", ".join(f"{name} = %s" for name in columns)  # names from this module only
    EventStore.defer(
        session, f"UPDATE rounds SET {sets} WHERE round_id = %s", (*columns.values(), round_id)
    )


def _betting_closed(session: Session, e: StoredEvent, x: ev.BettingClosed) -> None:
    _phase(session, x.round_id, "dealing")


def _round_settled(session: Session, e: StoredEvent, x: ev.RoundSettled) -> None:
    _phase(session, x.round_id, "settled", closed_seq=e.seq)


def _round_voided(session: Session, e: StoredEvent, x: ev.RoundVoided) -> None:
    _phase(session, x.round_id, "voided", void_reason=given(x.reason, None), closed_seq=e.seq)


def _cards(session: Session, round_id: str) -> list[str]:
    raw = session.connection().scalar(select(_ROUNDS.c.cards).where(_ROUNDS.c.round_id == round_id))
    return json.loads(raw) if raw else []


ROUND_CARDS = "projector_round_cards"


def _card_dealt(session: Session, e: StoredEvent, x: ev.CardDealt) -> None:
    """The round's cards after this command, when the service says what they are (it has
    just computed them); otherwise read, append, write."""
    known = session.info.get(ROUND_CARDS)
    if known is not None and known[0] == x.round_id:
        cards = list(known[1])
    else:
        EventStore.send_deferred(session)  # an earlier card of this command, first
        cards = [*_cards(session, x.round_id), x.card]
    # Nothing reads the round's row again before the commit: on PostgreSQL it goes with
    # the COMMIT (a round trip less under the log's lock for every card).
    EventStore.defer(
        session, "UPDATE rounds SET cards = %s WHERE round_id = %s", (_dumps(cards), x.round_id)
    )


def _cards_rearranged(session: Session, e: StoredEvent, x: ev.CardsRearranged) -> None:
    session.execute(
        update(RoundRow).where(RoundRow.round_id == x.round_id).values(cards=_dumps(x.cards))
    )


def _card_set_aside(session: Session, e: StoredEvent, x: ev.CardSetAside) -> None:
    if x.from_round:
        session.execute(
            update(RoundRow)
            .where(RoundRow.round_id == x.from_round)
            .values(cards=_dumps(required(x.round_cards)))
        )


def _round_result(session: Session, e: StoredEvent, x: ev.RoundResult) -> None:
    _phase(session, x.round_id, "result", outcome=_dumps(x.outcome))


# Handlers that may run while writes wait for the commit (EventStore.defer): they read
# nothing, and write only through EventStore.defer themselves (after what waits, in the
# events' order: a round's cards, then its phase). Any other handler has the waiting
# writes sent first, so the order is the events'.
_AFTER_DEFERRED: frozenset[type] = frozenset(
    {
        ev.BettingOpened,
        ev.CardDealt,
        ev.BettingClosed,
        ev.RoundResult,
        ev.RoundSettled,
        ev.RoundVoided,
    }
)


def writes_only_deferred(types: Iterable[str]) -> bool:
    """Whether projecting events of these types only defers its writes (nothing is read or
    written before the commit): such a command can commit in one round trip
    (``EventStore.lock(one_trip=True)``). Stakes taken and the ledger's own movements
    write at once (a balance going down is checked), and so do the handlers not in
    ``_AFTER_DEFERRED``; settled or refunded bets in one event (up to a chunk) only pay,
    and wait (``_BetRows.write``: a return below zero, which no rule makes, would write
    at once, and the one-trip commit then refuses the trip: the card runs again the
    usual way)."""
    paying = 0
    for name in types:
        cls = REGISTRY.get(name)
        if cls is None:
            if name in _LEDGER:
                return False
        elif cls is ev.BetsPlaced or (cls in _HANDLERS and cls not in _AFTER_DEFERRED):
            return False
        elif cls in _BET_MONEY:
            paying += 1
    return paying <= _DEFERRED_PAYING


def _executemany(session: Session, sql: str, rows: list[tuple[Any, ...]]) -> int:
    """A hot executemany straight through the driver (``?`` becomes the driver's marker).

    For the tens of thousands of bet and ledger rows of one command, building a parameter
    dict per row through the SQL expression layer costs as much as the database's own
    work; the statements are fixed text with positional parameters, so nothing is lost.
    On PostgreSQL a statement per row costs a server round of parsing and executing each,
    so inserts go through ``COPY`` (every value is a parameter, none is written in the SQL).
    """
    connection = session.connection()
    try:
        if connection.dialect.paramstyle == "qmark":
            return connection.exec_driver_sql(sql, rows).rowcount
        if not sql.startswith("INSERT") or len(rows) == 1:
            return connection.exec_driver_sql(sql.replace("?", "%s"), rows).rowcount
        # PostgreSQL: COPY, one stream for all rows instead of a statement per row.
        table_and_columns = sql.split(" VALUES ", 1)[0].removeprefix("INSERT INTO ")
        # The driver's own connection (psycopg's, whose cursor has COPY). Not
        # ``driver_connection``: a table's kept connection is detached from the pool,
        # and a detached connection has no pool record to answer that from.
        driver = connection.connection.dbapi_connection
        if driver is None:  # only a connection already closed or invalidated has none
            raise RuntimeError("the database connection was closed under the projector")
        cursor = driver.cursor()
        with cursor.copy(f"COPY {table_and_columns} FROM STDIN") as copy:
            for row in rows:
                copy.write_row(row)
    except Exception as exc:
        if key_violated(exc):
            raise KnownKey(str(exc)) from exc
        raise
    return len(rows)


def key_violated(exc: BaseException) -> bool:
    """Whether ``exc`` (the driver's, or SQLAlchemy's around it) is a violation of the
    unique idempotency key of ``placed_bets``: PostgreSQL names the constraint, SQLite
    names the column in its message."""
    for error in (exc, getattr(exc, "orig", None)):
        if getattr(getattr(error, "diag", None), "constraint_name", None) == KEY_CONSTRAINT:
            return True
        if type(error).__name__ == "IntegrityError" and str(error) == KEY_VIOLATED:
            return True
    return False


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


_BET_ID = itemgetter("bet_id")


def _bets_placed(rows: _BetRows, e: StoredEvent, x: ev.BetsPlaced) -> None:
    bets = sorted(x.bets, key=_BET_ID)  # the order _BetRows.write stores them in
    round_id, seq, table_id = x.round_id, e.seq, e.table_id
    rows.placed_seq = seq if 0 <= rows.placed_seq < seq else -1
    deltas = rows.deltas
    for b in x.bets:
        deltas[b["account"]] -= b["stake"]
    rows.placed.extend(
        (b["bet_id"], b["key"], table_id, round_id, b["account"], b["type"], b["stake"], seq)
        for b in bets
    )
    rows.stakes.extend((b["account"], -b["stake"], "stake", b["bet_id"], seq) for b in bets)


def _returns(rows: _BetRows, seq: int, items: Iterable[Mapping[str, Any]]) -> None:
    """Settling or refunding bets is one row each: the bet's return entry in the ledger
    (the ``bets`` view derives status, result and return from it). ``(bet_id, kind)`` is
    unique, so a second settlement or refund of a bet aborts the transaction."""
    deltas = rows.deltas
    rows.paying += 1
    closed = list(items)
    for i in closed:
        deltas[i["account"]] += i["returned"]
    rows.returns.extend(
        (i["account"], i["returned"], "return", i["bet_id"], seq, i.get("result", "refunded"))
        for i in closed
    )


def _bets_settled(rows: _BetRows, e: StoredEvent, x: ev.BetsSettled) -> None:
    _returns(rows, e.seq, x.results)


def _bets_refunded(rows: _BetRows, e: StoredEvent, x: ev.BetsRefunded) -> None:
    _returns(rows, e.seq, x.refunds)


def _incident_raised(session: Session, e: StoredEvent, x: ev.IncidentRaised) -> None:
    session.execute(
        insert(IncidentRow).values(
            incident_id=x.incident_id,
            table_id=e.table_id,
            round_id=given(x.round_id, None),
            kind=x.kind,
            blocking=bool(x.blocking),
            status="open",
            details=_dumps(given(x.details, {})),
            raised_by=given(x.raised_by, None) or e.actor,
            raised_seq=e.seq,
        )
    )


def _incident_resolved(session: Session, e: StoredEvent, x: ev.IncidentResolved) -> None:
    session.execute(
        update(IncidentRow)
        .where(IncidentRow.incident_id == x.incident_id)
        .values(
            status="resolved",
            resolution=required(x.resolution),
            resolved_by=given(x.resolved_by, None) or e.actor,
            resolved_seq=e.seq,
        )
    )


ACCOUNT_CREDITED = "account_credited"
ACCOUNT_DEBITED = "account_debited"
"""The ledger's own events (the wallet's credits and debits, on the wallet's log): not a
table's, so not in the table events' registry."""


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


def _commission_credited(session: Session, e: StoredEvent, x: ev.CommissionCredited) -> None:
    """The house's share of a settlement's wins: one ``commission`` line per bet, to the
    table's house account (created with its first line)."""
    account, amount = required(x.account), required(x.amount)
    _move_money(session, {account: amount}, e.seq)
    session.execute(
        insert(LedgerEntry),
        [
            {
                "account_id": account,
                "amount": line["commission"],
                "kind": "commission",
                "bet_id": line["bet_id"],
                "seq": e.seq,
            }
            for line in required(x.lines)
        ],
    )


# The read models each table event changes, by its class (gathered bet and ledger rows for
# the bet events; a statement of its own for the others). Other classes change none.
_BET_MONEY: dict[type[ev.TableEvent], Callable[[_BetRows, StoredEvent, Any], None]] = {
    ev.BetsPlaced: _bets_placed,
    ev.BetsSettled: _bets_settled,
    ev.BetsRefunded: _bets_refunded,
}
_HANDLERS: dict[type[ev.TableEvent], Callable[[Session, StoredEvent, Any], None]] = {
    ev.BettingOpened: _betting_opened,
    ev.BettingClosed: _betting_closed,
    ev.CardDealt: _card_dealt,
    ev.CardsRearranged: _cards_rearranged,
    ev.CardSetAside: _card_set_aside,
    ev.RoundResult: _round_result,
    ev.RoundSettled: _round_settled,
    ev.RoundVoided: _round_voided,
    ev.IncidentRaised: _incident_raised,
    ev.IncidentResolved: _incident_resolved,
    ev.CommissionCredited: _commission_credited,
}
_LEDGER: dict[str, Callable[[Session, StoredEvent], None]] = {
    ACCOUNT_CREDITED: _account_credited,
    ACCOUNT_DEBITED: _account_debited,
}
