"""The read models the API serves, checked against a fold of the log.

Balances, ledger entries, bets and principals are written in the same transaction as
the events that justify them, so they must equal what the events say. A direct edit of
one of those tables (a balance topped up, a bet's return changed, a principal slipped
in) leaves the chain intact and is found only here; the first difference is named.
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from audit.models import AuditEvent
from table_service.table import events as ev
from table_service.table.events import parse_known, required
from table_service.table.projector import ACCOUNT_CREDITED, ACCOUNT_DEBITED


@dataclass
class Expected:
    balances: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    ledger: Counter[tuple[Any, ...]] = field(default_factory=Counter)
    bets: dict[str, tuple[Any, ...]] = field(default_factory=dict)
    principals: dict[str, tuple[Any, ...]] = field(default_factory=dict)


def _payload(raw: Any) -> dict[str, Any]:
    payload: dict[str, Any] = json.loads(raw) if isinstance(raw, str) else raw
    return payload


def fold(events: Iterable[Any]) -> Expected:
    """What the read models must hold, from the whole log: a table event read as its class
    (the registry's), the wallet's and the principals' events by their own names."""
    out = Expected()
    for e in events:
        p = _payload(e.payload)
        kind = e.type
        match parse_known(kind, p):
            case ev.BetsPlaced(round_id=round_id, bets=bets):
                for b in bets:
                    out.balances[b["account"]] -= b["stake"]
                    out.ledger[(b["account"], -b["stake"], "stake", b["bet_id"], None)] += 1
                    out.bets[b["bet_id"]] = (
                        round_id,
                        b["account"],
                        b["type"],
                        b["stake"],
                        "open",
                        None,
                        None,
                    )
            case ev.BetsSettled(results=items):
                _returns(out, items, "settled")
            case ev.BetsRefunded(refunds=items):
                _returns(out, items, "refunded")
            case ev.CommissionCredited() as x:  # the house's share of wins, per bet
                account = required(x.account)
                out.balances[account] += required(x.amount)
                for line in required(x.lines):
                    entry = (account, line["commission"], "commission", line["bet_id"], None)
                    out.ledger[entry] += 1
            case None if kind == ACCOUNT_CREDITED:
                out.balances[p["account"]] += p["amount"]
                out.ledger[(p["account"], p["amount"], "credit", None, p["reference"])] += 1
            case None if kind == ACCOUNT_DEBITED:
                out.balances[p["account"]] -= p["amount"]
                out.ledger[(p["account"], -p["amount"], "debit", None, p["reference"])] += 1
            case None if kind == "principal_added":
                out.principals[p["name"]] = (p["role"], p.get("table_id"), False)
            case None if kind == "principal_revoked" and p["name"] in out.principals:
                role, table_id, _ = out.principals[p["name"]]
                out.principals[p["name"]] = (role, table_id, True)
    return out


def _returns(out: Expected, items: Iterable[Mapping[str, Any]], status: str) -> None:
    for i in items:
        out.balances[i["account"]] += i["returned"]
        out.ledger[(i["account"], i["returned"], "return", i["bet_id"], None)] += 1
        placed = out.bets.get(i["bet_id"])
        if placed is not None:
            out.bets[i["bet_id"]] = (
                *placed[:4],
                status,
                i.get("result", "refunded"),
                i["returned"],
            )


def check_read_models(session: Session) -> list[str]:
    """Every difference between the read models and the log, most important first
    (an empty list when they agree).

    The log is read once as a stream, in memory bounded by the accounts, the principals
    and the bets of rounds still open at that point of the log (:func:`_agree`); only
    when that finds a difference is the whole log folded in memory to name every one.
    (Folding it all each time held every bet of the studio's history in memory at once:
    a serve process's resident memory rose by hundreds of MiB at each check and, the
    allocator keeping the pages, climbed with the log's length.)"""
    if session.get_bind().dialect.name == "postgresql" and not session.in_transaction():
        # One snapshot for the log and every read model: under READ COMMITTED each SELECT
        # sees its own moment, so bets committed between reading the log and reading the
        # balances showed as a mismatch in every busy account (a false ledger_mismatch
        # alarm written into the log; SQLite's BEGIN already gives one WAL snapshot).
        session.connection(execution_options={"isolation_level": "REPEATABLE READ"})
    if _agree(session):
        return []
    return _differences(session)


_EVENT_COLUMNS = (AuditEvent.type, AuditEvent.round_id, AuditEvent.payload)
FLUSH = 2000  # bets (or transfers) compared with their rows in one query
PAGE = 200  # events read from the log at a time (a bets_placed event can be 20 kB)


def _stream(session: Session) -> Iterator[Any]:
    """The log in order, a page at a time (a server-side cursor on PostgreSQL)."""
    return iter(
        session.execute(
            select(*_EVENT_COLUMNS).order_by(AuditEvent.seq).execution_options(yield_per=PAGE)
        )
    )


def _agree(session: Session) -> bool:
    """Whether the read models equal the log's fold, in bounded memory.

    Balances and principals are folded whole (one entry per account or principal). A
    bet is held from its placement to the end of its round (its stake, return and
    commission are all in the log by then) and is then compared, with its ledger lines,
    against its rows, a batch of :data:`FLUSH` bets per query; transfers (credits and
    debits) likewise by their unique reference. Rows that no event accounts for show as
    a count of bets or ledger lines above the log's."""
    from table_service.models import Account, BetRow, LedgerEntry, Principal

    # a ledger line as the check compares it: who, how much, why, for which bet or reference
    ledger_line = (
        LedgerEntry.account_id,
        LedgerEntry.amount,
        LedgerEntry.kind,
        LedgerEntry.bet_id,
        LedgerEntry.reference,
    )

    balances: dict[str, int] = defaultdict(int)
    principals: dict[str, tuple[Any, ...]] = {}
    open_rounds: dict[str | None, dict[str, list[Any]]] = {}  # round -> bet -> [row, lines]
    done: dict[str, list[Any]] = {}
    transfers: Counter[tuple[Any, ...]] = Counter()
    bets_total = lines_total = 0
    agree = True

    def flush_bets() -> bool:
        ids = list(done)
        columns = (
            BetRow.round_id, BetRow.account_id, BetRow.bet_type, BetRow.stake, BetRow.status,
            BetRow.result, BetRow.returned,
        )  # fmt: skip
        rows = {
            bet_id: tuple(rest)
            for bet_id, *rest in session.execute(
                select(BetRow.bet_id, *columns).where(BetRow.bet_id.in_(ids))
            )
        }
        lines: Counter[tuple[Any, ...]] = Counter(
            tuple(r)
            for r in session.execute(select(*ledger_line).where(LedgerEntry.bet_id.in_(ids)))
        )
        want: Counter[tuple[Any, ...]] = Counter()
        ok = True
        for bet_id, (row, bet_lines) in done.items():
            ok = ok and rows.get(bet_id) == row
            want.update(bet_lines)
        done.clear()
        return ok and lines == want

    def flush_transfers() -> bool:
        refs = [entry[4] for entry in transfers]
        have: Counter[tuple[Any, ...]] = Counter(
            tuple(r)
            for r in session.execute(select(*ledger_line).where(LedgerEntry.reference.in_(refs)))
        )
        ok = have == transfers
        transfers.clear()
        return ok

    def bet_of(round_id: str | None, bet_id: str) -> list[Any] | None:
        held = open_rounds.get(round_id, {}).get(bet_id)
        return held if held is not None else done.get(bet_id)

    for kind, round_id, raw in _stream(session):
        if kind not in _MONEY_AND_PRINCIPALS:
            continue
        p = _payload(raw)
        if kind in ("account_credited", "account_debited"):
            sign, name = (1, "credit") if kind == "account_credited" else (-1, "debit")
            balances[p["account"]] += sign * p["amount"]
            transfers[(p["account"], sign * p["amount"], name, None, p["reference"])] += 1
            lines_total += 1
            if len(transfers) >= FLUSH:
                agree = flush_transfers() and agree
        elif kind == "bets_placed":
            bets = open_rounds.setdefault(p["round_id"], {})
            for b in p["bets"]:
                balances[b["account"]] -= b["stake"]
                row = (p["round_id"], b["account"], b["type"], b["stake"], "open", None, None)
                bets[b["bet_id"]] = [row, [(b["account"], -b["stake"], "stake", b["bet_id"], None)]]
                bets_total += 1
                lines_total += 1
        elif kind in ("bets_settled", "bets_refunded"):
            key, status = (
                ("results", "settled") if kind == "bets_settled" else ("refunds", "refunded")
            )
            for i in p[key]:
                balances[i["account"]] += i["returned"]
                lines_total += 1
                held = bet_of(p.get("round_id", round_id), i["bet_id"])
                line = (i["account"], i["returned"], "return", i["bet_id"], None)
                if held is None:  # a return for a bet the log never placed
                    agree = False
                    continue
                held[1].append(line)
                held[0] = (*held[0][:4], status, i.get("result", "refunded"), i["returned"])
        elif kind == "commission_credited":
            balances[p["account"]] += p["amount"]
            for entry in p["lines"]:
                lines_total += 1
                held = bet_of(round_id, entry["bet_id"])
                line = (p["account"], entry["commission"], "commission", entry["bet_id"], None)
                if held is None:
                    agree = False
                    continue
                held[1].append(line)
        elif kind in ("round_settled", "round_voided"):
            done.update(open_rounds.pop(p.get("round_id", round_id), {}))
            if len(done) >= FLUSH:
                agree = flush_bets() and agree
        elif kind == "principal_added":
            principals[p["name"]] = (p["role"], p.get("table_id"), False)
        elif kind == "principal_revoked" and p["name"] in principals:
            role, table_id, _ = principals[p["name"]]
            principals[p["name"]] = (role, table_id, True)
        if not agree:
            return False
    for bets in open_rounds.values():  # rounds still running at the log's head
        done.update(bets)
    if done and not flush_bets():
        return False
    if transfers and not flush_transfers():
        return False
    count = session.scalar(select(func.count()).select_from(BetRow))
    if count != bets_total:
        return False
    if session.scalar(select(func.count()).select_from(LedgerEntry)) != lines_total:
        return False
    actual_balances = {
        a: b for a, b in session.execute(select(Account.account_id, Account.balance))
    }
    for account in set(actual_balances) | set(balances):
        want, have = balances.get(account, 0), actual_balances.get(account)
        if (want if have is None else have - want) != 0:
            return False
    actual_principals = {
        name: (role, table_id, revoked is not None)
        for name, role, table_id, revoked in session.execute(
            select(Principal.name, Principal.role, Principal.table_id, Principal.revoked_at)
        )
    }
    return actual_principals == principals


_MONEY_AND_PRINCIPALS = frozenset(
    {
        "account_credited",
        "account_debited",
        "bets_placed",
        "bets_settled",
        "bets_refunded",
        "commission_credited",
        "round_settled",
        "round_voided",
        "principal_added",
        "principal_revoked",
    }
)


def _differences(session: Session) -> list[str]:
    """Every difference, named: the whole log folded in memory (a mismatch's path)."""
    from table_service.models import Account, BetRow, LedgerEntry, Principal

    events = session.scalars(
        select(AuditEvent).order_by(AuditEvent.seq).execution_options(yield_per=2000)
    )
    expected = fold(events)
    problems: list[str] = []

    actual_balances = {a.account_id: a.balance for a in session.scalars(select(Account))}
    for account in sorted(set(actual_balances) | set(expected.balances)):
        want, have = expected.balances.get(account, 0), actual_balances.get(account)
        if have is None:
            if want != 0:
                problems.append(f"account {account}: missing; the log gives balance {want}")
        elif have != want:
            problems.append(f"account {account}: balance {have} in the table, {want} from the log")

    actual_bets = {
        b.bet_id: (b.round_id, b.account_id, b.bet_type, b.stake, b.status, b.result, b.returned)
        for b in session.scalars(select(BetRow))
    }
    names = ("round", "account", "type", "stake", "status", "result", "returned")
    for bet_id in sorted(set(actual_bets) | set(expected.bets)):
        want_bet, have_bet = expected.bets.get(bet_id), actual_bets.get(bet_id)
        if want_bet is None:
            problems.append(f"bet {bet_id}: in the bets table but never placed in the log")
        elif have_bet is None:
            problems.append(f"bet {bet_id}: placed in the log but missing from the bets table")
        elif have_bet != want_bet:
            diffs = [
                f"{n} {h!r} (log: {w!r})"
                for n, h, w in zip(names, have_bet, want_bet, strict=True)
                if h != w
            ]
            problems.append(f"bet {bet_id}: " + ", ".join(diffs))

    actual_ledger: Counter[tuple[Any, ...]] = Counter(
        (e.account_id, e.amount, e.kind, e.bet_id, e.reference)
        for e in session.scalars(select(LedgerEntry))
    )
    for entry in sorted((actual_ledger - expected.ledger).elements(), key=repr):
        problems.append(f"ledger entry {entry}: not justified by any event")
    for entry in sorted((expected.ledger - actual_ledger).elements(), key=repr):
        problems.append(f"ledger entry {entry}: in the log but missing from the ledger")

    actual_principals = {
        p.name: (p.role, p.table_id, p.revoked_at is not None)
        for p in session.scalars(select(Principal))
    }
    for name in sorted(set(actual_principals) | set(expected.principals)):
        want_p, have_p = expected.principals.get(name), actual_principals.get(name)
        if want_p is None:
            problems.append(f"principal {name}: in the table but never added in the log")
        elif have_p is None:
            problems.append(f"principal {name}: added in the log but missing from the table")
        elif have_p != want_p:
            problems.append(
                f"principal {name}: role/table/revoked {have_p} in the table, {want_p} in the log"
            )
    return problems
