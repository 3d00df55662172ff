"""The read models the API serves, checked against a fold of the log.

Balances, ledger entries, bets and principals are written in the same transaction as
the events that justify them, so they must equal what the events say. A direct edit of
one of those tables (a balance topped up, a bet's return changed, a principal slipped
in) leaves the chain intact and is found only here; the first difference is named.
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from audit.models import AuditEvent


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
    out = Expected()
    for e in events:
        p = _payload(e.payload)
        kind = e.type
        if kind == "account_credited":
            out.balances[p["account"]] += p["amount"]
            out.ledger[(p["account"], p["amount"], "credit", None, p["reference"])] += 1
        elif kind == "account_debited":
            out.balances[p["account"]] -= p["amount"]
            out.ledger[(p["account"], -p["amount"], "debit", None, p["reference"])] += 1
        elif kind == "bets_placed":
            for b in p["bets"]:
                out.balances[b["account"]] -= b["stake"]
                out.ledger[(b["account"], -b["stake"], "stake", b["bet_id"], None)] += 1
                out.bets[b["bet_id"]] = (
                    p["round_id"],
                    b["account"],
                    b["type"],
                    b["stake"],
                    "open",
                    None,
                    None,
                )
        elif kind in ("bets_settled", "bets_refunded"):
            key, status = (
                ("results", "settled") if kind == "bets_settled" else ("refunds", "refunded")
            )
            for i in p[key]:
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
        elif kind == "commission_credited":  # the house's share of wins, per bet
            out.balances[p["account"]] += p["amount"]
            for line in p["lines"]:
                entry = (p["account"], line["commission"], "commission", line["bet_id"], None)
                out.ledger[entry] += 1
        elif kind == "principal_added":
            out.principals[p["name"]] = (p["role"], p.get("table_id"), False)
        elif kind == "principal_revoked" and p["name"] in out.principals:
            role, table_id, _ = out.principals[p["name"]]
            out.principals[p["name"]] = (role, table_id, True)
    return out


def check_read_models(session: Session) -> list[str]:
    """Every difference between the read models and the log, most important first
    (an empty list when they agree)."""
    from table_service.models import Account, BetRow, LedgerEntry, Principal

    if session.get_bind().dialect.name == "postgresql" and not session.in_transaction():
        # One snapshot for the log and every read model: under READ COMMITTED each SELECT
        # sees its own moment, so bets committed between reading the log and reading the
        # balances showed as a mismatch in every busy account (a false ledger_mismatch
        # alarm written into the log; SQLite's BEGIN already gives one WAL snapshot).
        session.connection(execution_options={"isolation_level": "REPEATABLE READ"})
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
