"""What ``serve`` does for the log in the background: seal and watch.

Every new event is put under a signed checkpoint within ``checkpoint_max_age`` seconds
(so ``audit verify --strict`` holds on a live log and a witness always has something
fresh to cosign), and the read models are folded against the log every
``read_model_seconds``: the first time a difference appears a ``ledger_mismatch`` alarm
is written to the log itself and logged as an error, naming what differs. Every shoe that
ends gets a ``shoe_reconciled`` event: its cards by rank and suit against its composition.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

import structlog

from audit.published import latest_checkpoint
from audit.store import SYSTEM_TABLE, EventStore, NewEvent
from table_service.regulator.readmodels import check_read_models

log = structlog.get_logger(__name__)

MAX_PROBLEMS_IN_ALARM = 20


class AuditWatchdog:
    def __init__(self, runtime: Any, *, seal_seconds: float, read_model_seconds: float) -> None:
        self.runtime = runtime
        self.seal_seconds = seal_seconds
        self.read_model_seconds = read_model_seconds
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._last_problems: list[str] = []
        self._last_check = 0.0
        self._shoes_seen = 0
        self._reconciled: set[tuple[str, int]] = set()

    def seal(self) -> int | None:
        """Sign a checkpoint if events are waiting; the new size, or None."""
        with self.runtime.sessions.begin() as session:
            head = EventStore.head(session)[0]
            latest = latest_checkpoint(session)
            if head == 0 or (latest is not None and latest.size >= head):
                return None
            cp = self.runtime.store.checkpoint(session)
            return None if cp is None else cp.size

    def check_read_models(self) -> list[str]:
        """Compare; write a ``ledger_mismatch`` alarm when the differences change."""
        # A read session: on SQLite a WAL snapshot that takes no write lock (the write
        # session's BEGIN IMMEDIATE held every table's commits for the whole fold).
        with self.runtime.reads() as session:
            problems = check_read_models(session)
        if problems and problems != self._last_problems:
            log.error("audit.ledger_mismatch", count=len(problems), first=problems[0])
            with self.runtime.sessions.begin() as session:
                self.runtime.store.append(
                    session,
                    [
                        NewEvent(
                            SYSTEM_TABLE,
                            "alarm_raised",
                            "system:audit",
                            {
                                "kind": "ledger_mismatch",
                                "count": len(problems),
                                "problems": problems[:MAX_PROBLEMS_IN_ALARM],
                            },
                        )
                    ],
                )
        self._last_problems = problems
        return problems

    def reconcile_shoes(self) -> int:
        """Write a ``shoe_reconciled`` event for every shoe that ended since the last look
        (cards by rank and suit against the shoe's composition); how many were written."""
        from sqlalchemy import text

        from table_service.regulator.records import fold_records

        with self.runtime.sessions() as session:
            ended = session.execute(
                text(
                    "SELECT seq, table_id, payload FROM audit_events"
                    " WHERE seq > :after AND type IN ('shoe_ended', 'shoe_reconciled')"
                    " ORDER BY seq"
                ),
                {"after": self._shoes_seen},
            ).all()
        if not ended:
            return 0
        self._shoes_seen = ended[-1][0]
        done = set(self._reconciled)
        wanted: list[tuple[str, int]] = []
        for _, table_id, raw in ended:
            payload = json.loads(raw)
            if table_id == SYSTEM_TABLE:
                done.add((payload["table_id"], payload["shoe_no"]))
            else:
                wanted.append((table_id, int(payload["shoe_no"])))
        self._reconciled = done
        written = 0
        for table_id, shoe_no in wanted:
            if (table_id, shoe_no) in done:
                continue
            with self.runtime.sessions() as session:
                shoes = fold_records(_shoe_history(session, table_id)).shoes
            shoe = next((x for x in shoes if x["shoe_no"] == shoe_no and x["ended"]), None)
            if shoe is None:
                continue
            with self.runtime.sessions.begin() as session:
                self.runtime.store.append(
                    session, [NewEvent(SYSTEM_TABLE, "shoe_reconciled", "system:audit", shoe)]
                )
            done.add((table_id, shoe_no))
            written += 1
        return written

    def tick(self) -> None:
        try:
            self.seal()
            self.reconcile_shoes()
            if self.read_model_seconds > 0:
                now = time.monotonic()
                if now - self._last_check >= self.read_model_seconds:
                    self._last_check = now
                    self.check_read_models()
        except Exception:  # the watchdog must never take the service down
            log.exception("audit.watchdog_failed")

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="audit-watchdog", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        interval = max(0.5, min(self.seal_seconds / 2, 60.0))
        while not self._stop.wait(interval):
            self.tick()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)


_MONEY = ("bets_placed", "bets_settled", "bets_refunded", "commission_credited")


def _shoe_history(session: Any, table_id: str) -> Iterator[SimpleNamespace]:
    """A table's events for :func:`fold_records`, a page at a time, the bets' payloads
    left in the database (the shoes' fold needs their round and actor, not their bets).

    Before, each shoe's end read the table's whole history, payloads and all, into one
    list: a transient that grows with the table's log (a day's bets is hundreds of MiB)
    and leaves the process's resident memory at that high-water mark."""
    from sqlalchemy import case, literal, select

    from audit.models import AuditEvent

    payload = case((AuditEvent.type.in_(_MONEY), literal("{}")), else_=AuditEvent.payload)
    rows = session.execute(
        select(
            AuditEvent.seq,
            AuditEvent.table_id,
            AuditEvent.round_id,
            AuditEvent.type,
            AuditEvent.actor,
            payload,
        )
        .where(AuditEvent.table_id == table_id)
        .order_by(AuditEvent.seq)
        .execution_options(yield_per=500)
    )
    for seq, table, round_id, kind, actor, raw in rows:
        yield SimpleNamespace(
            seq=seq, table_id=table, round_id=round_id, type=kind, actor=actor, payload=raw
        )
