"""Player accounts: credits and debits from the operator's platform.

A transfer carries the operator's reference; the ledger's unique reference makes a
retried transfer a no-op that answers what the first one did, never a second movement.

An account belongs to the operator that first funded it: no other operator can read it,
move its money or stake it (to them it does not exist). Amounts are integers from 1 to
the configured maximum; a credit that would take a balance past the configured maximum
balance is refused, and a CHECK constraint in the database holds the same line.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import select, update
from sqlalchemy.orm import Session

from audit.store import NewEvent
from table_service.errors import Conflict, InvalidRequest
from table_service.models import Account, LedgerEntry
from table_service.runtime import Runtime
from table_service.table import policy
from table_service.table.errors import IdempotencyConflict, InsufficientFunds
from table_service.table.projector import (
    ACCOUNT_CREDITED,
    ACCOUNT_DEBITED,
    balances_and_owners,
    project,
)

WALLET_TABLE = "_wallet"


@dataclass(frozen=True)
class Transfer:
    account: str
    amount: int
    reference: str
    direction: str  # credit | debit


class BalanceLimit(Conflict):
    code = "balance_limit"


def _check(transfer: Transfer, max_amount: int) -> None:
    if isinstance(transfer.amount, bool) or not isinstance(transfer.amount, int):
        raise InvalidRequest("amount must be an integer number of minor units")
    if not 1 <= transfer.amount <= max_amount:
        raise InvalidRequest(
            f"amount must be 1..{max_amount} minor units", minimum=1, maximum=max_amount
        )
    if not transfer.account or len(transfer.account) > 64:
        raise InvalidRequest("account id must be 1–64 characters")
    if not transfer.reference or len(transfer.reference) > 100:
        raise InvalidRequest("reference must be 1–100 characters")


def transfer(runtime: Runtime, item: Transfer, *, actor: str) -> dict[str, Any]:
    settings = runtime.settings
    _check(item, settings.max_amount)
    reference = f"{actor}|{item.reference}"
    with runtime.sessions.begin() as session:
        runtime.store.lock(session)
        account = session.get(Account, item.account)
        policy.check(policy.may_fund(actor, item.account, account.owner if account else None))
        done = session.scalars(
            select(LedgerEntry).where(LedgerEntry.reference == reference)
        ).first()
        if done is not None:
            signed = item.amount if item.direction == "credit" else -item.amount
            if (done.account_id, done.amount) != (item.account, signed):
                raise IdempotencyConflict("reference already used for another transfer")
            return {
                "account": item.account,
                "balance": account.balance if account else 0,
                "duplicate": True,
                "seq": done.seq,
            }
        balance = account.balance if account else 0
        if item.direction == "debit" and account is None:
            raise policy.unknown_account(item.account).error()
        if item.direction == "credit" and balance + item.amount > settings.max_balance:
            raise BalanceLimit(
                f"account {item.account} would pass the maximum balance {settings.max_balance}",
                balance=balance,
                maximum=settings.max_balance,
            )
        if item.direction == "debit" and balance < item.amount:
            raise InsufficientFunds(
                f"account {item.account} balance {balance} < {item.amount}",
                balance=balance,
            )
        event_type = ACCOUNT_CREDITED if item.direction == "credit" else ACCOUNT_DEBITED
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
        if account is None or account.owner is None:
            session.execute(
                update(Account)
                .where(Account.account_id == item.account, Account.owner.is_(None))
                .values(owner=actor)
            )
        new_balance = balance + (item.amount if item.direction == "credit" else -item.amount)
        return {
            "account": item.account,
            "balance": new_balance,
            "duplicate": False,
            "seq": stored[0].seq,
        }


def owned_balances(session: Session, accounts: set[str], actor: str) -> dict[str, int]:
    """Balances of those of ``accounts`` that ``actor`` owns (read under the log lock)."""
    found = balances_and_owners(session, accounts)
    return {a: balance for a, (balance, owner) in found.items() if owner in (actor, None)}


def account_owner(runtime: Runtime, account: str) -> str | None:
    """The operator that owns ``account`` (None: no such account, or nobody's)."""
    with runtime.reads() as session:
        owner = session.scalar(select(Account.owner).where(Account.account_id == account))
    return str(owner) if owner is not None else None


def owns(runtime: Runtime, account: str, actor: str) -> bool:
    return account_owner(runtime, account) == actor


def account_view(
    runtime: Runtime, account: str, *, owner: str | None = None, limit: int = 50
) -> dict[str, Any]:
    """An account and its latest entries; for an ``owner``, only an account of its own
    (an account another operator funded is answered as unknown: 404)."""
    with runtime.reads() as session:
        row = session.get(Account, account)
        policy.check(policy.may_read_account(owner, account, row.owner if row else None))
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
