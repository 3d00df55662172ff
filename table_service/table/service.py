"""One table as a running service: one writer, a durable log, read models, timers, reader.

Commands for a table are serialised by an asyncio lock and run in a worker thread of the
table's own (the database API is synchronous), so tables proceed side by side while no
two commands ever race on one round. A serial shoe's card comes to that thread straight
from the reader's thread, without the event loop (:mod:`reader_lane`), or runs on the
reader's thread itself when the table's thread is idle (:mod:`command_thread`); one thing
at a time, in the order given, so the card runs before or after any other command, never
alongside. Each command is one database transaction: the global log lock,
the inputs it needs (balances, idempotency keys), the decision, the events, the read
models, commit. Only after the commit does the in-memory state move and anything get
published.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import gc
import os
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any, Protocol, TypeVar

import structlog
from sqlalchemy.exc import DBAPIError
from sqlalchemy.orm import Session

from audit.db import KeptConnection
from audit.store import EventStore, HeadMoved, NewEvent, OneTripRefused, StoredEvent
from table_service import metrics
from table_service.errors import Refused
from table_service.logs import bind_context
from table_service.principals import Internal, Principal
from table_service.rules.game import Turn
from table_service.runtime import Runtime
from table_service.table import commands as c
from table_service.table import events as ev
from table_service.table import policy, reader_pump
from table_service.table.command_thread import CommandThread
from table_service.table.config import TableConfig
from table_service.table.decide import SYSTEM, Decision, decide
from table_service.table.errors import BettingClosed, IdempotencyConflict, UnknownTable
from table_service.table.outage import DatabaseUnavailable, outage, room_again
from table_service.table.projector import (
    DEFERRED_PLACING,
    ROUND_CARDS,
    KnownKey,
    balances,
    balances_and_owners,
    custom_plans,
    custom_plans_with_lock,
    debit_refused,
    key_violated,
    project,
    writes_only_deferred,
)
from table_service.table.reader_lane import ReaderLane
from table_service.table.state import TableState, fold, game_of, game_of_round
from table_service.table.wallet import owned_balances

log = structlog.get_logger(__name__)

Clock = Callable[[], datetime]
Listener = Callable[["TableService", list[StoredEvent]], None]
T = TypeVar("T")


def utc_now() -> datetime:
    return datetime.now(UTC)


def _parse_ts(text: str) -> datetime:
    return datetime.strptime(text, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=UTC)


@dataclass(frozen=True)
class Outcome:
    """What a command did: the caller's answer and the events it appended."""

    answer: dict[str, Any]
    events: list[StoredEvent]


class TableService:
    def __init__(
        self,
        runtime: Runtime,
        config: TableConfig,
        *,
        clock: Clock = utc_now,
        reader_options: dict[str, Any] | None = None,
    ) -> None:
        self.runtime = runtime
        self.config = config
        self.table_id = config.table_id
        self.clock = clock
        self.state = TableState(self.table_id)
        self.listeners: list[Listener] = []
        self.reader: Any = None
        self.reader_options = reader_options or {}
        self._lock = asyncio.Lock()
        self._close_task: asyncio.Task[None] | None = None
        self._turn_task: asyncio.Task[None] | None = None
        self._turn_clock: tuple[str, str] | None = None
        self._reader_task: asyncio.Task[None] | None = None
        self._background: set[asyncio.Task[None]] = set()
        # The shoe's lock follows the betting phase through one task that sends the commands
        # in order and ends with the last state wanted (see _sync_shoe_lock).
        self._want_locked = False
        self._lock_again = False
        self._lock_task: asyncio.Task[None] | None = None
        self.reader_seen_at: float | None = None  # monotonic: the reader's last report
        self.outage: str | None = None  # why the table waits for its database, if it does
        self._held_reads: list[tuple[Any, str]] = []  # reader events kept meanwhile, in order
        self._recovery: asyncio.Task[None] | None = None
        # bets waiting for the next group transaction: (command, actor, its answer)
        self._bets_waiting: list[tuple[c.PlaceBets, Principal, asyncio.Future[Outcome]]] = []
        self._bet_writer: asyncio.Task[None] | None = None
        self._seen: float | None = None  # the command running came of a report read then
        # The table's commands run on a thread of its own (see _on_worker), or on a
        # reader's thread in its place when it is idle (see run_here).
        self._worker = CommandThread(f"table-{self.table_id}")
        # ... one at a time, their transactions on a connection the table keeps
        # (PostgreSQL): no pool checkout, no pool events, no ping of one idle a second.
        self.connection = KeptConnection(runtime.engine, runtime.sessions)
        self._loop: asyncio.AbstractEventLoop | None = None  # the loop the table runs on
        self._seated_bank_of: tuple[Any, bool] | None = None  # (config snapshot, answer)

    # -- lifecycle ---------------------------------------------------------------------------
    def load(self) -> None:
        """Rebuild the state from the log: the same fold after a crash as in any replay."""
        with self.runtime.sessions() as session:
            events = EventStore.read(session, table_id=self.table_id)
        self.state = fold(TableState(self.table_id), ((e.type, e.payload, e.seq) for e in events))
        log.info(
            "table.loaded",
            table_id=self.table_id,
            events=len(events),
            round=self.state.round.round_id if self.state.round else None,
        )

    async def start(self, *, with_reader: bool = True) -> None:
        self._loop = asyncio.get_running_loop()
        await asyncio.to_thread(self.load)
        if self.state.config != self.config.snapshot():
            rnd = self.state.round
            if rnd is None or not rnd.active:
                await self.execute(c.OpenTable(self.config), actor="system:config")
            else:
                log.warning(
                    "table.config_deferred",
                    table_id=self.table_id,
                    reason="round in progress; the recorded configuration stays",
                )
        await self._void_after_restart()
        terms = self.config.game_impl.opening_terms(self.config.rules)
        if terms:
            log.info("table.terms", table_id=self.table_id, **terms)
        self._after_commit_effects(resync=True)
        metrics.watch_table(self)
        if with_reader and (self.config.shoe is not None or self.config.camera is not None):
            self._reader_task = asyncio.create_task(self._pump_reader())

    async def _void_after_restart(self) -> None:
        """A game whose rules void a round interrupted by a server failure (blackjack,
        Xì Dách: seed 000) gets it voided and refunded here, and its shoe replaced."""
        rnd = self.state.round
        if rnd is None or not rnd.active or self.state.config is None:
            return
        game, _ = game_of(self.state)
        if game.on_restart != "void":
            return
        log.warning("table.round_void_after_restart", table_id=self.table_id, round=rnd.round_id)
        await self.execute(
            c.VoidRound("server failure: the table service restarted mid-round", True),
            actor="system:restart",
        )

    async def stop(self) -> None:
        metrics.unwatch_table(self)
        writer = self._bet_writer
        if writer is not None and not writer.done():  # bets in flight are answered first
            with contextlib.suppress(Exception):
                await asyncio.wait_for(asyncio.shield(writer), 30)
        for task in (
            self._close_task,
            self._turn_task,
            self._reader_task,
            self._recovery,
            self._bet_writer,
        ):
            if task is not None:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await task
        if self.reader is not None:
            await self.reader.close()
        # On the command thread, after what is queued there; a command after this one
        # (a request still holding the table) goes through the pool.
        with contextlib.suppress(Exception):
            await self._on_worker(self.connection.close)

    # -- commands ----------------------------------------------------------------------------
    async def execute(
        self, command: c.Command, *, actor: Principal | str, seen: float | None = None
    ) -> Outcome:
        """Run ``command`` for ``actor``: the principal it carries (an API request's
        :class:`~table_service.principals.Identity`), or for in-process callers (timers,
        the reader, tools) the name the log records, taken as an internal principal.
        The policy decides whether it may, in the command's own transaction. ``seen``:
        when a reader read the report this command comes of (monotonic), kept beside
        the commit time for the streams' timing."""
        principal = Internal.of(actor) if isinstance(actor, str) else actor
        if isinstance(command, c.PlaceBets) and not self._seated_bank():
            return await self._place_bets(command, principal)
        async with self._lock:
            if self.outage is not None:
                await self._resume()  # or DatabaseUnavailable: still away
            started = time.perf_counter()
            try:
                outcome = await self._on_worker(self._execute_sync, command, principal, seen)
            except Exception as exc:
                failed = self.command_failed(command, exc, time.perf_counter() - started)
                if failed is exc:
                    raise
                raise failed from exc
            metrics.command_done(self.table_id, command, outcome, time.perf_counter() - started)
            if outcome.events:
                self._after_commit_effects()
                self._tell_listeners(outcome)
            return outcome

    async def _on_worker(self, run: Callable[..., T], *args: Any) -> T:
        """``run`` on the table's own thread (the caller holds the table's lock, so one
        command at a time). A card must not queue for the loop's shared threads behind
        stream authentications, table views, lease renewals or another table's command.
        Everything that reads the log into the table's state or moves it runs there, so
        that a card its reader hands to that thread directly (:mod:`reader_lane`) runs
        before or after it, never alongside."""
        context = contextvars.copy_context()  # as asyncio.to_thread: structlog's binds
        return await asyncio.wrap_future(self._worker.submit(context.run, run, *args))

    def on_command_thread(self, run: Callable[..., Any], *args: Any) -> None:
        """Queue ``run`` on the table's command thread, from any thread (the reader's)."""
        self._worker.submit(run, *args)

    def run_here(self, run: Callable[..., Any], *args: Any) -> bool:
        """Run ``run`` on the calling thread (a reader's) in the command thread's place, if
        that thread has nothing running or waiting and no big round is open (a settlement
        of thousands of bets would keep the reader's port unread meanwhile); False, with
        nothing run, otherwise (see :mod:`command_thread`)."""
        rnd = self.state.round
        if rnd is not None and len(rnd.bets) >= GC_PAUSE_BETS:
            return False
        return self._worker.run_here(run, *args)

    def _tell_listeners(self, outcome: Outcome) -> None:
        for listener in self.listeners:
            try:
                listener(self, outcome.events)
            except Exception:
                log.exception("table.listener_failed")

    async def _place_bets(self, command: c.PlaceBets, principal: Principal) -> Outcome:
        """Bets wait for the table's writer, which takes every request waiting at once into
        one transaction (group commit).

        In the last seconds of a popular table's window, every operator's platform sends a
        request every 50-100 ms: one transaction each would queue them behind one durable
        commit apiece (and on PostgreSQL ten round trips), so the window would close on
        bets still waiting. Each request is still decided on its own, in arrival order,
        and answered or refused on its own; only the commit is shared."""
        answer: asyncio.Future[Outcome] = asyncio.get_running_loop().create_future()
        # a caller that went away (its request cancelled) leaves an answer nobody reads
        answer.add_done_callback(lambda f: f.cancelled() or f.exception())
        self._bets_waiting.append((command, principal, answer))
        if self._bet_writer is None or self._bet_writer.done():
            self._bet_writer = asyncio.create_task(self._write_bets())
        return await asyncio.shield(answer)

    async def _write_bets(self) -> None:
        """Runs while bets wait: each turn at the table's lock takes all of them."""
        while self._bets_waiting:
            async with self._lock:
                group, self._bets_waiting = self._bets_waiting, []
                items = [(command, principal) for command, principal, _ in group]
                started = time.perf_counter()
                results: list[Outcome | Exception]
                try:
                    if self.outage is not None:
                        await self._resume()  # or DatabaseUnavailable: still away
                    results = await self._on_worker(self._execute_bet_group, items)
                except DatabaseUnavailable as exc:
                    results = [exc] * len(items)
                except BaseException as exc:  # cancelled at shutdown: nobody waits forever
                    for *_, answer in group:
                        if not answer.done():
                            answer.set_exception(RuntimeError(f"table stopped: {exc!r}"))
                    raise
                seconds = time.perf_counter() - started
                for n, ((command, _), result) in enumerate(zip(items, results, strict=True)):
                    if isinstance(result, Outcome):
                        metrics.command_done(self.table_id, command, result, seconds)
                        continue
                    if isinstance(result, DatabaseUnavailable):
                        continue
                    metrics.command_failed(self.table_id, command, result, seconds)
                    cause = outage(result)
                    if cause is not None:  # the database went away: the table pauses
                        self._pause(cause, result)
                        unavailable = self._unavailable()
                        unavailable.__cause__ = result
                        results[n] = unavailable
                outcomes = [r for r in results if isinstance(r, Outcome) and r.events]
                if outcomes:
                    self._after_commit_effects()
                    for outcome in outcomes:
                        self._tell_listeners(outcome)
            for (*_, answer), result in zip(group, results, strict=True):
                if answer.done():
                    continue
                if isinstance(result, Outcome):
                    answer.set_result(result)
                else:
                    answer.set_exception(result)

    # -- the database away: pause, then resume from the log ----------------------------------
    def _pause(self, cause: str, exc: BaseException) -> None:
        if self.outage is None:
            log.error("table.paused", table_id=self.table_id, cause=cause, error=str(exc)[:300])
            metrics.DB_UNAVAILABLE.labels(self.table_id, cause).inc()
        self.outage = cause
        if self._recovery is None or self._recovery.done():
            self._recovery = asyncio.create_task(self._recover())

    def _unavailable(self) -> DatabaseUnavailable:
        what = "is full" if self.outage == "database_full" else "cannot be reached"
        return DatabaseUnavailable(
            f"table {self.table_id} is paused: its database {what}; nothing was written, "
            "retry the same request",
            cause=self.outage or "database_unavailable",
            table_id=self.table_id,
        )

    async def _resume(self) -> None:
        """Under the table's lock: rebuild the state from the log (a commit whose answer
        was lost may have landed), hand any such events to the subscribers, and run again;
        DatabaseUnavailable while the database is still away."""
        url = self.runtime.settings.resolved_database_url
        try:
            if self.outage == "database_full" and not await asyncio.to_thread(room_again, url):
                raise self._unavailable()
            landed = await self._on_worker(self._reload)
        except DatabaseUnavailable:
            raise
        except Exception as exc:
            if outage(exc) is None:
                log.exception("table.resume_failed", table_id=self.table_id)
            raise self._unavailable() from exc
        log.warning("table.resumed", table_id=self.table_id, cause=self.outage, landed=len(landed))
        self.outage = None
        if landed:
            self.runtime.store.announce(landed)
        self._after_commit_effects(resync=True)

    def _reload(self) -> list[StoredEvent]:
        previous = self.state.last_seq
        self.load()
        with self.runtime.sessions() as session:
            return EventStore.read(session, after_seq=previous, table_id=self.table_id)

    async def _recover(self) -> None:
        """Try to resume every half second, then take the reader events kept meanwhile."""
        while True:
            await asyncio.sleep(0.5)
            async with self._lock:
                if self.outage is not None:
                    try:
                        await self._resume()
                    except DatabaseUnavailable:
                        continue
            while self._held_reads and self.outage is None:
                event, actor = self._held_reads[0]
                try:
                    await self._reader_event(event, actor)
                except Refused:  # transient (see _reader_event): try again in a moment
                    break
                self._held_reads.pop(0)
            if self.outage is None and not self._held_reads:
                return

    def _execute_sync(
        self, command: c.Command, principal: Principal | str, seen: float | None = None
    ) -> Outcome:
        self._seen = seen  # (the command thread's own: one command at a time there)
        try:
            return self._execute_here(command, principal)
        finally:
            self._seen = None

    def _execute_here(self, command: c.Command, principal: Principal | str) -> Outcome:
        if isinstance(principal, str):  # an in-process caller naming itself (a tool, a test)
            principal = Internal.of(principal)
        if isinstance(command, c.PlaceBets):
            # One way for bets, alone or grouped: a request on its own (a seated bank's
            # table) is a group of one, decided and written as every group is.
            (result,) = self._execute_bet_group([(command, principal)])
            if isinstance(result, Exception):
                raise result
            return result
        rnd = self.state.round
        if (len(rnd.bets) if rnd is not None else 0) < GC_PAUSE_BETS:
            return self._execute_command(command, principal)
        with gc_paused():  # a command settling or voiding a big round
            return self._execute_command(command, principal)

    def _execute_command(self, command: c.Command, principal: Principal) -> Outcome:
        if isinstance(command, _ONE_TRIP) and not self._seated_bank():
            # A card, or the betting window opened or closed, reads nothing before its
            # commit (but at a seated bank's table, whose review after a settling card
            # reads balances, and whose opening reads the seated players'): one round
            # trip when this process knows the log's head (EventStore.lock(one_trip=True));
            # if the trip cannot be, nothing was written and it runs again the usual way.
            try:
                return self._execute_in_transaction(command, principal, one_trip=True)
            except OneTripRefused as exc:
                log.info("table.one_trip_refused", reason=str(exc)[:200])
        return self._execute_in_transaction(command, principal)

    def _execute_in_transaction(
        self,
        command: c.Command,
        principal: Principal,
        *,
        one_trip: bool = False,
    ) -> Outcome:
        bind_context(table_id=self.table_id)
        store = self.runtime.store
        actor = principal.actor
        with self.connection.begin() as session:
            store.lock(session, tables=(self.table_id,), one_trip=one_trip)
            held: dict[str, tuple[int, str | None]] | None = None
            if not _trusted(principal):
                # who may: asked before anything is decided or written (the owners are
                # read under the lock, so they cannot change before the commit)
                held = balances_and_owners(session, policy.accounts_named(command, self.state))
                owners = {account: owner for account, (_, owner) in held.items()}
                policy.check(policy.may(principal, command, self.state, owners))
            decision: Decision | None = None
            if isinstance(command, c.Act):
                # a decision may add stakes (double, split, insurance, a follow offer)
                rnd = self.state.round
                answering = {command.account} if command.account else set()
                accounts = answering | (
                    {b.account for b in rnd.bets.values()} if rnd is not None else set()
                )
                # the answering player's money only from the operator's own account
                found = balances(session, accounts - answering)
                found.update(owned_balances(session, answering, actor))
                command = replace(command, balances=found)
            elif isinstance(command, c.OpenBetting) and self._seated_bank():
                # who may take a passing bank: the seated players' balances, as they are
                seated = set(self.state.seats_for_round().values())
                command = replace(command, balances=balances(session, seated))
            if decision is None:
                decision = decide(self.state, command, now=self.clock(), actor=actor)
            if one_trip and not writes_only_deferred(d.type for d in decision.drafts):
                # its projection writes at once (money moves): the lock first, as usual
                store.lock(session, tables=(self.table_id,))
            stored = self._append_and_project(session, decision, actor)
            while one_trip:
                try:
                    store.commit(session)
                    break
                except HeadMoved:
                    # The head moved since (this process's commit of another table, still
                    # one trip; or another writer's, the lock and fence held now): the
                    # same events again, linked to the head the transaction knows now.
                    stored = self._append_and_project(session, decision, actor)
            if self._seated_bank() and any(
                e.type in (ev.RoundSettled.TYPE, ev.RoundVoided.TYPE) for e in stored
            ):
                # The round's money has moved: does anyone still qualify for the bank? A
                # room nobody can bank is recorded closed in the same transaction.
                seated = set(decision.state.seats_for_round().values())
                review = c.ReviewRoom(balances(session, seated))
                after = decide(decision.state, review, now=self.clock(), actor=SYSTEM)
                if after.drafts:
                    more = store.append(
                        session,
                        [
                            NewEvent(self.table_id, d.type, SYSTEM, d.payload, d.round_id)
                            for d in after.drafts
                        ],
                    )
                    project(session, more)
                    stored = [*stored, *more]
                    decision.state = after.state
            # The deferred writes and the COMMIT in one round trip: the last of the
            # transaction (the log's lock is held from its statement to here); done
            # already by a one-trip commit.
            store.commit(session)
            if stored and self._seen is not None and not store.pending(session):
                self._streams_first()  # committed, and the streams told (PostgreSQL)
        new_state = decision.state
        if stored:
            new_state = replace(new_state, last_seq=stored[-1].seq)
        self.state = new_state
        return Outcome(decision.answer, stored)

    def _streams_first(self) -> None:
        """A reader's card is committed and its events handed to the streams (their
        dispatch queued on the loop, see ``EventStore.announce``; on PostgreSQL, where the
        commit's round trip comes back before the session's own commit): the thread
        lets the loop run that dispatch before it finishes the transaction's own
        bookkeeping (the session's commit and close, the connection back to its pool, the
        table's state: about 0.15-0.3 ms of the interpreter), which nobody is waiting for.

        Otherwise the loop, woken by the dispatch, waited for the interpreter until this
        thread let go of it: the commit -> dispatch of a card was that bookkeeping. The
        wait ends as soon as the loop has run what was queued before it, or after
        :data:`STREAMS_FIRST_SECONDS` (a loop busy elsewhere); on the loop's own thread
        (a tool, a test running commands synchronously) there is nothing to wait for."""
        loop = self._loop
        if loop is None or loop.is_closed():
            return
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            pass  # not a loop's thread: the loop runs meanwhile
        else:
            return  # on the loop's thread: it cannot run while this waits
        turn = threading.Event()
        try:
            loop.call_soon_threadsafe(turn.set)
        except RuntimeError:  # closed meanwhile
            return
        turn.wait(STREAMS_FIRST_SECONDS)

    def _append_and_project(
        self, session: Session, decision: Decision, actor: str
    ) -> list[StoredEvent]:
        drafts = decision.drafts
        stored = self.runtime.store.append(
            session,
            [NewEvent(self.table_id, d.type, actor, d.payload, d.round_id) for d in drafts],
            defer=True,  # sent with the COMMIT (PostgreSQL): store.commit
        )
        if self._seen is not None:  # before the commit: the streams send at the commit
            metrics.COMMITS.record_read(stored, self._seen)
        rnd = decision.state.round
        session.info[ROUND_CARDS] = (rnd.round_id, rnd.cards) if rnd is not None else None
        project(session, stored)
        return stored

    def _execute_bet_group(
        self, items: list[tuple[c.PlaceBets, Principal]]
    ) -> list[Outcome | Exception]:
        """Every waiting bet request, in order, decided one after the other and committed
        together; each request's answer or refusal is its own. A lone request is a group
        of one: bets have this one way to be decided and written."""
        rnd = self.state.round
        bets = sum(len(command.bets) for command, _ in items)
        big = max(bets, len(rnd.bets) if rnd is not None else 0) >= GC_PAUSE_BETS
        results: list[Outcome | Exception] = []
        with gc_paused() if big else contextlib.nullcontext():
            rest = items
            while rest:
                try:
                    done, rest = self._bets_written(rest)
                except Exception as exc:
                    rest, failed = [], rest
                    if outage(exc) is not None or len(failed) == 1:
                        done = [exc] * len(failed)  # the database away, or a request alone
                    else:
                        # A write failed (a constraint, the lease): nothing of the group was
                        # committed. Each request again on its own, so that each gets its
                        # own answer or error.
                        log.warning("table.bet_group_failed", exc_info=True)
                        done = [_attempt(self._bet_request_alone, item) for item in failed]
                results.extend(done)
        return results

    def _bets_written(
        self, items: list[tuple[c.PlaceBets, Principal]]
    ) -> tuple[list[Outcome | Exception], list[tuple[c.PlaceBets, Principal]]]:
        """A group's transaction with its keys taken as new first (see
        :meth:`_bet_group_in_transaction`); if one of them was recorded after all, the
        unique key refuses the write, nothing of it commits, and it runs again with them
        looked up. A group whose lock waited for its commit's trip (see there) and whose
        trip was refused (the lease, a balance gone short since it was read) runs again
        the same way, the lock taken first."""
        try:
            return self._bet_group_in_transaction(items, look_up=False)
        except KnownKey:
            log.info("table.bet_group_retried_with_known_keys", requests=len(items))
        except OneTripRefused as exc:
            log.info("table.bet_group_trip_refused", reason=str(exc)[:200])
        return self._bet_group_in_transaction(items, look_up=True)

    def _bet_request_alone(self, item: tuple[c.PlaceBets, Principal]) -> Outcome:
        (result,), _ = self._bets_written([item])
        if isinstance(result, Exception):
            raise result
        return result

    def _unlocked_bets(self, items: list[tuple[c.PlaceBets, Principal]]) -> bool:
        """Whether a group may read its balances before the log's lock: its rows wait for
        the COMMIT (PostgreSQL, few enough bets), and nothing but its own accounts'
        balances decides it (no seated bank, whose rules read the seated players')."""
        return (
            self.runtime.engine.dialect.name == "postgresql"
            and sum(len(command.bets) for command, _ in items) <= DEFERRED_PLACING
            and not self._seated_bank()
        )

    def _bet_group_in_transaction(
        self, items: list[tuple[c.PlaceBets, Principal]], *, look_up: bool = True
    ) -> tuple[list[Outcome | Exception], list[tuple[c.PlaceBets, Principal]]]:
        """One transaction for bet requests: one read of the balances, each decided on the
        state the previous one left, one append, one projection, one commit. Returns the
        answers and the requests left for another transaction (after one whose decision
        did more than place bets, such as closing a room).

        Without ``look_up`` the keys are taken as new: looking 5,000 keys up in
        ``placed_bets`` was a tenth of a batch's time, for keys that are almost never
        there. That is the answer a lookup would give only if every bet is then placed (a
        known key's bet is answered ``duplicate``, never refused; a request whose every
        key is known is answered even after the window closed): so unless every bet of
        every request is then placed, the group is decided again here with its keys
        looked up, before anything is written; a bet placed under a recorded key fails
        the write (:class:`KnownKey`), and :meth:`_bets_written` runs the group again
        looking up.

        Without ``look_up``, a group whose rows wait for its COMMIT (PostgreSQL, see
        :meth:`_unlocked_bets`) reads its balances and owners before the log's lock (one
        round trip, with the BEGIN) and takes the lock with its writes and COMMIT, in
        one round trip (``EventStore.lock(reads_first=True)``), or two if another writer
        moved the log's head meanwhile: the lock is no longer held across the group's
        round trips, which every card of the log's other writers waited behind. That
        stands only for a decision the lock could not have changed (``_stands_unlocked``:
        every bet placed from an account its operator owns, nothing else decided), with
        the debits refusing at the commit a balance gone short since (the trip fails
        whole: ``OneTripRefused``). Any other decision is made again in the same
        transaction, the lock taken first, as usual."""
        bind_context(table_id=self.table_id)
        store = self.runtime.store
        accounts = {b.account for command, _ in items for b in command.bets}
        with self.connection.begin() as session:
            unlocked = not look_up and self._unlocked_bets(items)
            if unlocked:
                store.lock(session, tables=(self.table_id,), one_trip=True, reads_first=True)
                unlocked = store.waits_for_commit(session)  # or the lock is taken already
            else:
                settings = custom_plans_with_lock(session)
                store.lock(session, tables=(self.table_id,), settings=settings)
            scopes = [_scope(principal.actor) for _, principal in items]
            seated = set(self.state.seats_for_round().values())
            held = balances_and_owners(session, accounts | seated, lock=not unlocked)
            group = None if look_up else self._decide_group(items, scopes, {}, held, seated)
            if unlocked and (group is None or not _stands_unlocked(group, items, held)):
                # Decided again under the lock, its keys looked up (not every bet placed).
                settings = custom_plans_with_lock(session)
                store.lock(session, tables=(self.table_id,), settings=settings)
                held = balances_and_owners(session, accounts | seated)
                group = None
            if group is None or not group.all_placed:
                keys = [
                    scope + b.key
                    for (command, _), scope in zip(items, scopes, strict=True)
                    for b in command.bets
                ]
                group = self._decide_group(
                    items, scopes, _existing_bets(session, keys), held, seated
                )
            # The events' rows wait for the COMMIT (store.commit below): the read models
            # read nothing of the log, so the lock is held a round trip less.
            state = group.state
            rnd = state.round
            session.info[ROUND_CARDS] = (rnd.round_id, rnd.cards) if rnd is not None else None
            stored = store.append(session, group.events, defer=True)
            project(session, stored)
            try:
                while True:
                    try:
                        store.commit(session)
                        break
                    except HeadMoved:
                        # The head moved since (see _execute_in_transaction): the same
                        # events again, linked to the head the transaction knows now.
                        stored = store.append(session, group.events, defer=True)
                        project(session, stored)
            except (DBAPIError, OneTripRefused) as exc:
                # A key taken as new was recorded (the trip refused on it): look them up.
                failed = exc.__cause__ if isinstance(exc, OneTripRefused) else exc
                if failed is not None and key_violated(failed):
                    raise KnownKey(str(failed)) from exc
                if unlocked and failed is not None and debit_refused(failed):
                    # (the second trip, after a head moved): decided again, the lock first
                    raise OneTripRefused(f"a balance went short: {failed}") from exc
                raise
        if stored:
            state = replace(state, last_seq=stored[-1].seq)
        self.state = state
        results = group.results
        outcomes = iter(group.decided)
        first = 0
        for i, result in enumerate(results):
            if isinstance(result, Exception):
                continue
            count, decision, plan = next(outcomes)
            events = stored[first : first + count]
            first += count
            results[i] = Outcome(_with_plan(decision.answer, plan), events)
        return results, group.rest

    def _decide_group(
        self,
        items: list[tuple[c.PlaceBets, Principal]],
        scopes: list[str],
        existing: dict[str, Any],
        held: dict[str, tuple[int, str | None]],
        seated: set[str],
    ) -> _Group:
        """Each request of a group decided in turn on the state the previous one left (the
        decisions are pure: nothing is written here)."""
        group = _Group(state=self.state)
        running = {account: balance for account, (balance, _) in held.items()}
        placed: dict[str, dict[str, Any]] = {}  # scoped key -> a bet placed in this group
        state = self.state
        for n, ((command, principal), scope) in enumerate(zip(items, scopes, strict=True)):
            actor = principal.actor
            try:
                if not _trusted(principal):  # who may: before anything is decided
                    named = policy.accounts_named(command, state)
                    owners = {a: held[a][1] for a in named if a in held}
                    policy.check(policy.may(principal, command, state, owners))
                fresh, plan = _match_keys(command.bets, scope, existing, placed)
                mine = {b.account for b in fresh}
                found = {a: running[a] for a in seated - mine if a in running}
                found.update(
                    (a, running[a]) for a in mine if a in held and held[a][1] in (actor, None)
                )
                command = c.PlaceBets(tuple(fresh), found, scope)
                decision = _decide_with_plan(state, command, plan, now=self.clock(), actor=actor)
            except Exception as exc:  # refused before anything of it was written
                group.results.append(exc)
                group.all_placed = False
                continue
            # the next request sees this one's stakes taken and its keys used
            answers = decision.answer.get("results", [])
            if any(known is not None for known in plan):  # a retry, within the group
                group.all_placed = False
            for bet, answer in zip(command.bets, answers, strict=True):
                if answer.get("status") != "placed":
                    group.all_placed = False
                    continue
                running[bet.account] -= bet.stake
                placed[scope + bet.key] = {
                    "bet_id": bet.bet_id,
                    "account": bet.account,
                    "type": bet.bet_type,
                    "stake": bet.stake,
                    "round_id": decision.answer.get("round_id"),
                }
            group.events += [
                NewEvent(self.table_id, d.type, actor, d.payload, d.round_id)
                for d in decision.drafts
            ]
            group.decided.append((len(decision.drafts), decision, plan))
            group.results.append(Outcome(decision.answer, []))
            state = decision.state
            if any(not isinstance(d.event, ev.BetsPlaced) for d in decision.drafts):
                group.rest = items[n + 1 :]  # it moved the table on: the others decide after
                break
        group.state = state
        return group

    def _seated_bank(self) -> bool:
        """Does this table's game keep a seated bank that can close the room? Asked twice
        by every command: answered once per recorded configuration (the snapshot object,
        held with the answer, so that identity cannot be a recycled id)."""
        config = self.state.config
        if config is None:
            return False
        known = self._seated_bank_of
        if known is None or known[0] is not config:
            game, _ = game_of(self.state)
            known = self._seated_bank_of = (config, game.seated_bank)
        return known[1]

    # -- effects after a commit ---------------------------------------------------------------
    def _after_commit_effects(self, *, resync: bool = False) -> None:
        rnd = self.state.round
        betting = rnd is not None and rnd.phase == "betting"
        if rnd is not None and betting and (self._close_task is None or self._close_task.done()):
            self._close_task = asyncio.create_task(self._close_at(rnd.round_id, rnd.closes_at))
        task = self._close_task
        stale = not betting and task is not None and not task.done()
        if task is not None and stale and task is not asyncio.current_task():
            task.cancel()
        self._schedule_turn()
        if self.reader is not None:
            self._sync_shoe_lock(betting, resync=resync)

    def _sync_shoe_lock(self, want: bool, *, resync: bool) -> None:
        """Have the shoe locked while betting is open and unlocked otherwise.

        The reader records a command as sent only once its thread has written it, so a
        betting window opened and closed before the LCK went out looked already unlocked
        to the close, and two commands on two threads could reach the shoe in either
        order: the shoe was left locked with the dealer holding the next card. One task
        sends the commands one after another, and once more whenever the wanted state
        changed while it was sending, so the last command sent is the last one wanted."""
        changed = want != self._want_locked
        self._want_locked = want
        if not (resync or changed or self.reader.host_locked != want):
            return
        self._lock_again = True
        if self._lock_task is None or self._lock_task.done():
            self._lock_task = asyncio.create_task(self._send_shoe_lock())
            self._background.add(self._lock_task)
            self._lock_task.add_done_callback(self._background.discard)

    async def _send_shoe_lock(self) -> None:
        while self._lock_again:
            self._lock_again = False
            await self._set_lock(self._want_locked)

    async def _set_lock(self, locked: bool) -> None:
        try:
            if locked:
                await self.reader.lock()
            else:
                await self.reader.unlock()
        except Exception:
            log.warning("table.shoe_lock_failed", locked=locked, exc_info=True)

    async def _close_at(self, round_id: str, closes_at: str) -> None:
        delay = (_parse_ts(closes_at) - self.clock()).total_seconds()
        if delay > 0:
            await asyncio.sleep(delay)
        rnd = self.state.round
        if rnd is None or rnd.round_id != round_id or rnd.phase != "betting":
            return
        try:
            await self.execute(c.CloseBetting("countdown"), actor="system:timer")
        except Exception:
            log.exception("table.auto_close_failed", round_id=round_id)

    def _schedule_turn(self) -> None:
        """One timer for the recorded decision deadline (a restart reschedules it from the
        log); a new clock replaces the old timer."""
        rnd = self.state.round
        turn = rnd.turn if rnd is not None and rnd.phase == "dealing" else None
        if turn is not None and rnd is not None and rnd.play is not None:
            nxt = None if rnd.play.leftover else game_of_round(rnd).next(rnd.play.state)
            if not isinstance(nxt, Turn) or nxt.clock != turn.clock:
                turn = None  # that decision was taken: no timer
        clock = (turn.clock, turn.deadline) if turn is not None else None
        task = self._turn_task
        if task is not None and not task.done() and self._turn_clock == clock:
            return
        if task is not None and not task.done() and task is not asyncio.current_task():
            task.cancel()
        self._turn_task, self._turn_clock = None, clock
        if turn is not None:
            self._turn_task = asyncio.create_task(self._timeout_at(turn.clock, turn.deadline))

    async def _timeout_at(self, clock: str, deadline: str) -> None:
        due = _parse_ts(deadline)
        # In short steps against the table's clock (a clock that jumps is noticed).
        while (remaining := (due - self.clock()).total_seconds()) > 0:
            await asyncio.sleep(min(remaining, 0.25))
        rnd = self.state.round
        if rnd is None or rnd.turn is None or rnd.turn.clock != clock:
            return
        try:
            await self.execute(c.TurnTimeout(clock), actor="system:timer")
        except Refused as exc:
            log.info("table.timeout_not_played", clock=clock, reason=exc.reason)
        except Exception:
            log.exception("table.timeout_failed", clock=clock)
        finally:
            if self._turn_clock == (clock, deadline):
                self._turn_clock = None

    # -- the shoe reader ----------------------------------------------------------------------
    async def _pump_reader(self) -> None:
        await reader_pump.pump(self)

    def attach_reader(self, reader: Any) -> None:
        """The pump opened the table's shoe: lock or unlock it as the round stands."""
        self.reader = reader
        self._after_commit_effects(resync=True)

    def reader_lane(self, actor: str) -> ReaderLane:
        """The way a serial shoe's events come in: its reader's thread hands them to this
        table's command thread, which runs a card there (see :mod:`reader_lane`)."""
        return ReaderLane(self, actor)

    def takes_reader_events(self) -> bool:
        """Whether a reader's card may run now, straight on the command thread: not while
        the table waits for its database or keeps earlier reader events for later."""
        return self.outage is None and not self._held_reads

    def run_reader_command(self, command: c.Command, actor: str, event: Any) -> Outcome:
        """A reader's command, run on the command thread that calls it (the lane's)."""
        return self._execute_sync(command, Internal.of(actor), event.monotonic)

    def reader_command_done(
        self, event: Any, command: c.Command, outcome: Outcome, seconds: float
    ) -> None:
        """The loop's part of a reader's command run on the command thread: what
        :meth:`execute` does after the commit (timers, the shoe's lock, listeners)."""
        metrics.command_done(self.table_id, command, outcome, seconds)
        if outcome.events:
            self._after_commit_effects()
            self._tell_listeners(outcome)
            if isinstance(command, c.CardScanned):
                metrics.card_committed(self.table_id, event)

    def command_failed(self, command: c.Command, exc: Exception, seconds: float) -> Exception:
        """A command failed (on the loop): counted, and if the database went away the
        table pauses and the error to raise says so (nothing was written)."""
        metrics.command_failed(self.table_id, command, exc, seconds)
        cause = outage(exc)
        if cause is None:
            return exc
        self._pause(cause, exc)
        unavailable = self._unavailable()
        unavailable.__cause__ = exc
        return unavailable

    async def on_reader_event(
        self, event: Any, *, actor: str, failed: Exception | None = None
    ) -> Outcome | None:
        """A reader's event, on the loop. ``failed``: its command already ran on the
        command thread and failed so (:meth:`command_failed`), not run again."""
        self.reader_seen_at = time.monotonic()
        if failed is None and (self.outage is not None or self._held_reads):
            self._held_reads.append((event, actor))  # in order, until the database is back
            return None
        try:
            return await self._reader_event(event, actor, failed)
        except Refused as exc:  # only the transient ones come here: see _reader_event
            log.warning("table.reader_event_kept", reader_event=event.event, reason=exc.code)
            self._held_reads.append((event, actor))
            if self._recovery is None or self._recovery.done():
                self._recovery = asyncio.create_task(self._recover())
            return None

    async def _reader_event(
        self, event: Any, actor: str, failed: Exception | None = None
    ) -> Outcome | None:
        command = reader_pump.reader_command(event)
        if command is None:
            log.info("table.reader_event", reader_event=event.event)
            return None
        started = time.perf_counter()
        try:
            if failed is not None:
                raise failed
            outcome = await self.execute(command, actor=actor, seen=event.monotonic)
        except Exception as exc:
            if transient(exc):
                raise  # kept and tried again: the database or the lease is coming back
            log.warning("table.reader_command_refused", reader_event=event.event, error=str(exc))
            if not isinstance(command, c.CardScanned):
                return None
            # A card the table cannot take is never only logged: a person must look at it.
            fault = c.ReaderFault("unreadable", {"card": command.card, "reason": f"refused: {exc}"})
            try:
                return await self.execute(fault, actor=actor)
            except Exception as again:
                if transient(again):
                    raise
                log.exception("table.reader_fault_failed", card=command.card)
                return None
        log.debug("table.reader_command", ms=round((time.perf_counter() - started) * 1000, 2))
        if isinstance(command, c.CardScanned) and outcome.events:
            metrics.card_committed(self.table_id, event)
        return outcome


def _stands_unlocked(
    group: _Group,
    items: list[tuple[c.PlaceBets, Principal]],
    held: dict[str, tuple[int, str | None]],
) -> bool:
    """Whether a group decided on balances and owners read without the log's lock is the
    decision the lock would have given, provided the debits still find enough at the
    commit (they check): every bet of every request placed (a refusal may rest on a
    balance since credited, or a key since used), nothing but bets decided, and each
    staked account owned by the request's operator (an account's owner, once recorded,
    never changes; one without could be funded, and owned, by another meanwhile)."""
    if not group.all_placed or group.rest or len(group.decided) != len(items):
        return False
    drafts = (d for _, decision, _ in group.decided for d in decision.drafts)
    if any(not isinstance(d.event, ev.BetsPlaced) for d in drafts):
        return False
    return all(
        held.get(bet.account, (0, None))[1] == principal.actor
        for command, principal in items
        for bet in command.bets
    )


@dataclass
class _Group:
    """A group of bet requests decided (:meth:`TableService._decide_group`), not written."""

    state: TableState
    results: list[Outcome | Exception] = field(default_factory=list)
    decided: list[tuple[int, Decision, list[dict[str, Any] | None]]] = field(default_factory=list)
    events: list[NewEvent] = field(default_factory=list)
    rest: list[tuple[c.PlaceBets, Principal]] = field(default_factory=list)
    all_placed: bool = True  # every bet of every request placed, none known or refused


def _attempt(run: Callable[..., Outcome], *args: Any) -> Outcome | Exception:
    try:
        return run(*args)
    except Exception as exc:
        return exc


def _scope(actor: str) -> str:
    """The namespace of an operator's idempotency keys: its bets are recorded under
    ``scope + key`` (two operators may use the same key), and answered under the key the
    operator sent. The requests are not copied to carry the scoped key (5-15 ms for 5,000
    bets under load): the decision and the lookups add the scope."""
    return f"{actor}|"


def _existing_bets(session: Session, keys: list[str]) -> dict[str, Any]:
    """The bets already recorded under these (scoped) idempotency keys, by key.

    The keys are looked up in ``placed_bets`` alone (its unique index on the key), and the
    ``bets`` view, whose status joins the ledger's returns, is read only for the keys found:
    almost always none. Asked of the view, every batch paid for that join whether or not
    any key was known (PostgreSQL hashed the ledger's returns: 26 ms of a 5,000-bet batch
    at 100k bets, 8 ms without)."""
    existing: dict[str, Any] = {}
    if not keys:
        return existing
    connection = session.connection()
    columns = "bet_id, idempotency_key, account_id, bet_type, stake, status, round_id"
    if connection.dialect.name == "postgresql":
        # One statement with an array parameter, planned for its actual values.
        custom_plans(session)
        found = [
            row[0]
            for row in connection.exec_driver_sql(
                "SELECT idempotency_key FROM placed_bets WHERE idempotency_key = ANY(%b)",
                (keys,),
            )
        ]
        if found:
            rows = connection.exec_driver_sql(
                f"SELECT {columns} FROM bets WHERE idempotency_key = ANY(%b)", (found,)
            )
            existing.update({r.idempotency_key: r for r in rows})
    else:
        for start in range(0, len(keys), 500):
            chunk = keys[start : start + 500]
            rows = connection.exec_driver_sql(
                f"SELECT {columns} FROM bets WHERE idempotency_key IN "
                f"({', '.join('?' * len(chunk))})",
                tuple(chunk),
            )
            existing.update({r.idempotency_key: r for r in rows})
    return existing


def _match_keys(
    bets: Sequence[c.BetRequest],
    scope: str,
    existing: dict[str, Any],
    placed: dict[str, dict[str, Any]],
) -> tuple[list[c.BetRequest], list[dict[str, Any] | None]]:
    """The bets to decide now and, per requested bet, the answer already known: a retry of
    a recorded bet (``existing``, by scoped key) or of one placed earlier in the same
    transaction (``placed``, likewise) is a duplicate; a key reused for another bet
    refuses the whole request. Every bet fresh (the plan empty): the request's bets as
    they are, told in one pass over its keys."""
    if not existing and not placed and len({b.key for b in bets}) == len(bets):
        return list(bets), []
    fresh: list[c.BetRequest] = []
    answers: list[dict[str, Any] | None] = []
    seen: dict[str, c.BetRequest] = {}
    for bet in bets:
        key = scope + bet.key
        row = existing.get(key)
        earlier = placed.get(key)
        first = seen.get(bet.key)
        if row is not None or earlier is not None:
            if row is not None:
                known = (row.account_id, row.bet_type, row.stake)
                bet_id, status, round_id = row.bet_id, row.status, row.round_id
            else:
                assert earlier is not None
                known = (earlier["account"], earlier["type"], earlier["stake"])
                bet_id, status, round_id = earlier["bet_id"], "open", earlier["round_id"]
            answers.append(
                {
                    "key": bet.key,
                    "status": "duplicate",
                    "bet_id": bet_id,
                    "bet_status": status,
                    "round_id": round_id,
                }
                if known == (bet.account, bet.bet_type, bet.stake)
                else {
                    "key": bet.key,
                    "status": "refused",
                    "error": IdempotencyConflict.code,
                    "reason": "idempotency key reused for a different bet",
                }
            )
        elif first is not None:
            same = (first.account, first.bet_type, first.stake) == (
                bet.account,
                bet.bet_type,
                bet.stake,
            )
            answers.append(
                {"key": bet.key, "status": "duplicate", "bet_id": first.bet_id}
                if same
                else {
                    "key": bet.key,
                    "status": "refused",
                    "error": IdempotencyConflict.code,
                    "reason": "idempotency key used twice in one request",
                }
            )
        else:
            seen[bet.key] = bet
            fresh.append(bet)
            answers.append(None)
    conflicts = [a["key"] for a in answers if a and a.get("error") == IdempotencyConflict.code]
    if conflicts:
        # A reused key with another bet is a client defect: refuse the whole request
        # (409, nothing placed) rather than bury it in a 200.
        raise IdempotencyConflict(
            "idempotency key reused for a different bet", keys=conflicts[:100]
        )
    return fresh, answers


def _decide_with_plan(
    state: TableState,
    fresh: c.PlaceBets,
    plan: list[dict[str, Any] | None],
    *,
    now: datetime,
    actor: str,
) -> Decision:
    """A bet request's fresh bets decided, knowing the answers its retried keys have
    already (``plan``), for each request of a group (a lone request is a group of one).

    A retry after a lost answer (a crash, a timeout) is answered from the record in any
    phase, so the operator learns its bet ids even once the betting window has closed. If
    it also holds bets that were never placed and the window has closed, those are
    refused one by one beside the known ones: refusing the whole request would tell the
    operator that none of its bets stand, when the first attempt's are in and staked."""
    if plan and not fresh.bets:
        return Decision(state, answer={"round_id": _known_round(plan)})
    try:
        return decide(state, fresh, now=now, actor=actor)
    except BettingClosed as exc:
        if not any(p is not None and p.get("status") == "duplicate" for p in plan):
            raise
        refused = [
            {"key": b.key, "status": "refused", "error": exc.code, "reason": str(exc)}
            for b in fresh.bets
        ]
        return Decision(state, answer={"round_id": _known_round(plan), "results": refused})


def _known_round(plan: list[dict[str, Any] | None]) -> str | None:
    return next((p["round_id"] for p in plan if p and "round_id" in p), None)


def _with_plan(answer: dict[str, Any], plan: list[dict[str, Any] | None]) -> dict[str, Any]:
    """A bet request's answer in the order of its bets: the known answers (retries) and
    the fresh decisions (an empty plan: every bet decided now, the answer as it is)."""
    if not plan:
        return answer
    fresh = iter(answer.get("results", []))
    return {**answer, "results": [item or next(fresh) for item in plan]}


def transient(exc: BaseException) -> bool:
    """A refusal that says "not now" rather than "no": the database is away (503
    ``database_*``) or this process's lease is being renewed after it (503
    ``lease_lost``). A reader's card refused so is kept and tried again; if the table was
    taken over meanwhile, this process stops it (and the card with it)."""
    return isinstance(exc, Refused) and exc.status == 503


def _trusted(principal: Principal) -> bool:
    """The service's own code (timers, restart, configuration, tools): no policy to ask."""
    return isinstance(principal, Internal) and principal.kind == "system"


# The commands that may commit in one round trip (see TableService._execute_command): the
# ones a dealer's round is made of, besides the bets (a bet group reads its balances first).
_ONE_TRIP = (c.CardScanned, c.OpenBetting, c.CloseBetting)

STREAMS_FIRST_SECONDS = 0.0005
"""The most a reader's card waits, once committed, for the loop to start its streams'
dispatch before its thread finishes the transaction (see ``TableService._streams_first``).
A loop that is free runs it within about 0.1 ms; one busy elsewhere (a saturated studio)
would not start it sooner for a longer wait, which would only hold up the table's next
command (2 ms played 6-11 % fewer rounds in two ``--pace max`` pairs)."""

GC_PAUSE_BETS = 1000  # commands touching fewer bets run with the collector as usual
_gc_lock = threading.Lock()
_gc_pausers = 0
_gc_resume = False


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """No cyclic garbage collection while a command runs (in any table's thread).

    A settlement allocates a few hundred thousand long-lived objects (result lines, event
    payloads), and every 700 allocations the collector would walk the young ones again:
    a third of the rules' time for a 100k-bet round. Nothing a command allocates depends
    on the collector (its objects are freed by reference counting); collection resumes
    when the last running command ends. Only big commands pause it, so that tables busy
    with ordinary commands never keep it off between them."""
    global _gc_pausers, _gc_resume
    with _gc_lock:
        _gc_pausers += 1
        if _gc_pausers == 1:
            _gc_resume = gc.isenabled()  # a process that runs without it stays so
            gc.disable()
    try:
        yield
    finally:
        with _gc_lock:
            _gc_pausers -= 1
            if _gc_pausers == 0 and _gc_resume:
                gc.enable()


def new_bet_id() -> str:
    """A time-ordered id (the UUIDv7 layout of RFC 9562: 48 bits of Unix milliseconds,
    74 random bits), 32 hex digits.

    Ids that grow with time land at the right edge of every index keyed by bet id (the
    bets' primary key, the ledger's one-return-per-bet key) instead of on a random page:
    placing and settling 100k bets then dirties a few pages per index, not most of them.
    """
    (bet_id,) = new_bet_ids(1)
    return bet_id


def new_bet_ids(count: int) -> list[str]:
    """``count`` ids as :func:`new_bet_id` makes them, their random bits drawn from the
    system in one read.

    A request's bets are given their ids on the event loop, and ``os.urandom`` lets go of
    the interpreter around its system call: one call per bet handed the interpreter to
    the command threads up to fifty times in one request, the loop waiting each time to
    have it back (up to the switch interval) while cards' frames waited for the loop."""
    millis = time.time_ns() // 1_000_000 & 0xFFFF_FFFF_FFFF
    drawn = os.urandom(10 * count)
    ids: list[str] = []
    for at in range(0, 10 * count, 10):
        rand = int.from_bytes(drawn[at : at + 10], "big")
        value = millis << 80 | 0x7 << 76 | (rand >> 62 & 0xFFF) << 64
        value |= 0b10 << 62 | rand & 0x3FFF_FFFF_FFFF_FFFF
        ids.append(uuid.UUID(int=value).hex)
    return ids


class TableManager:
    """All tables of this process, by id."""

    def __init__(
        self,
        runtime: Runtime,
        configs: list[TableConfig],
        *,
        clock: Clock = utc_now,
        reader_options: dict[str, Any] | None = None,
    ) -> None:
        self.runtime = runtime
        self.tables = {
            cfg.table_id: TableService(runtime, cfg, clock=clock, reader_options=reader_options)
            for cfg in configs
        }

    def get(self, table_id: str) -> TableService:
        try:
            return self.tables[table_id]
        except KeyError:
            raise UnknownTable(f"no table {table_id!r}", known=sorted(self.tables)) from None

    async def start(self, *, with_readers: bool = True) -> None:
        for table in self.tables.values():
            await table.start(with_reader=with_readers)

    async def stop(self) -> None:
        for table in self.tables.values():
            await table.stop()


class Tables(Protocol):
    """What the API asks of its process's tables: a :class:`TableManager`, or a studio
    member (``studio.coordinator.Studio``), which runs only the tables it holds now."""

    tables: dict[str, TableService]

    def get(self, table_id: str) -> TableService: ...

    async def start(self, *, with_readers: bool = True) -> None: ...

    async def stop(self) -> None: ...
