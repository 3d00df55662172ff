"""Player accounts: credits and debits from the operator's platform.

A transfer carries the operator's reference; the ledger's unique reference makes a
retried transfer a no-op that answers what the first one did, never a second movement.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import select

from audit.store import NewEvent
from table_service.errors import InvalidRequest
from table_service.models import Account, LedgerEntry
from table_service.runtime import Runtime
from table_service.table.errors import IdempotencyConflict, InsufficientFunds
from table_service.table.projector import project

WALLET_TABLE = "_wallet"


@dataclass(frozen=True)
class Transfer:
    account: str
    amount: int
    reference: str
    direction: str  # credit | debit


def _check(transfer: Transfer) -> None:
    if isinstance(transfer.amount, bool) or not isinstance(transfer.amount, int):
        raise InvalidRequest("amount must be an integer number of minor units")
    if transfer.amount <= 0:
        raise InvalidRequest("amount must be positive")
    if not transfer.account or len(transfer.account) > 64:
        raise InvalidRequest("account id must be 1–64 characters")
    if not transfer.reference or len(transfer.reference) > 100:
        raise InvalidRequest("reference must be 1–100 characters")


def transfer(runtime: Runtime, item: Transfer, *, actor: str) -> dict[str, Any]:
    _check(item)
    reference = f"{actor}|{item.reference}"
    with runtime.sessions.begin() as session:
        runtime.store.lock(session)
        done = session.scalars(
            select(LedgerEntry).where(LedgerEntry.reference == reference)
        ).first()
        if done is not None:
            signed = item.amount if item.direction == "credit" else -item.amount
            if (done.account_id, done.amount) != (item.account, signed):
                raise IdempotencyConflict("reference already used for another transfer")
            balance = session.get(Account, item.account)
            return {
                "account": item.account,
                "balance": balance.balance if balance else 0,
                "duplicate": True,
                "seq": done.seq,
            }
        account = session.get(Account, item.account)
        balance = account.balance if account else 0
        if item.direction == "debit" and balance < item.amount:
            raise InsufficientFunds(
                f"account {item.account} balance {balance} < {item.amount}",
                balance=balance,
            )
        event_type = "account_credited" if item.direction == "credit" else "account_debited"
        stored = runtime.store.append(
            session,
            [
                NewEvent(
                    WALLET_TABLE,
                    event_type,
                    actor,
                    {"account": item.account, "amount": item.amount, "reference": reference},
                )
            ],
        )
        project(session, stored)
        new_balance = balance + (item.amount if item.direction == "credit" else -item.amount)
        return {
            "account": item.account,
            "balance": new_balance,
            "duplicate": False,
            "seq": stored[0].seq,
        }


def account_view(runtime: Runtime, account: str, *, limit: int = 50) -> dict[str, Any]:
    with runtime.sessions() as session:
        row = session.get(Account, account)
        entries = session.scalars(
            select(LedgerEntry)
            .where(LedgerEntry.account_id == account)
            .order_by(LedgerEntry.id.desc())
            .limit(limit)
        )
        return {
            "account": account,
            "balance": row.balance if row else 0,
            "entries": [
                {
                    "amount": e.amount,
                    "kind": e.kind,
                    "bet_id": e.bet_id,
                    "reference": e.reference.split("|", 1)[1] if e.reference else None,
                    "seq": e.seq,
                }
                for e in entries
            ],
        }
