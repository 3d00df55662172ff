"""Regulator recall: a table's last rounds, every step in log order, read from the audit log.

Every bet and every settlement line is there for a regulator, however many a round took:
a round's record carries the first page of each, with a cursor, and the rest is read page
by page (``GET …/recall/{round}/bets?after=<cursor>``). A cursor names a place in the
append-only log (``<seq>.<n>``: after the first ``n`` items of event ``seq``), so pages
neither skip nor repeat an item while the round goes on.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, Query, Request
from fastapi import Path as FPath
from pydantic import BaseModel
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from audit.models import AuditEvent
from audit.store import EventStore, StoredEvent
from table_service.api.auth import allowed, get_runtime
from table_service.api.problems import AUTH, errors
from table_service.api.types import IDENT_PATTERN, OpenModel, TablePath
from table_service.api.viewers import viewer_for
from table_service.consoles.lookup import (
    dealer_on_duty,
    event_times,
    round_number,
    service_of,
)
from table_service.consoles.money import first_seq_since
from table_service.consoles.views import procedure_of
from table_service.errors import InvalidRequest, NotFound
from table_service.models import BetRow, PlacedBet, RoundRow
from table_service.principals import Identity
from table_service.rules.games import DEFAULT_GAME
from table_service.table import events as ev
from table_service.table import policy
from table_service.table.events import REGISTRY
from table_service.table.recall import round_record
from table_service.table.view import ReadModel, model_view, viewer_of
from table_service.table.wallet import account_owner

PAGE = 500
Section = Literal["bets", "settlement"]
BY_RULES: frozenset[type[ev.TableEvent]] = frozenset(
    {
        ev.RoundResult,
        ev.BetsSettled,
        ev.RoundSettled,
        ev.DecisionAwaited,
        ev.CardsRevealed,
        ev.CommissionCredited,
        ev.SeatReleased,  # in a round's record: released by its settlement
    }
)
"""Steps the table's rules take themselves, whatever command or card set them off: the
recall names the rules as their actor (and the trigger apart), never the reader."""
BY_RULES_AFTER_A_CARD: frozenset[type[ev.TableEvent]] = frozenset(
    {ev.CardSetAside, ev.BetsRefunded, ev.RoundVoided}
)
"""Steps the rules take on a card the reader reported (an exposed card set aside, a round
voided for two): the rules', not the reader's; a person's void stays that person's."""


def by_rules(e: StoredEvent) -> bool:
    """Whether the table's rules, not the event's actor, did what ``e`` records."""
    cls = REGISTRY.get(e.type)
    if cls in BY_RULES:
        return True
    if cls is ev.BettingClosed:
        return e.payload.get("reason") != "dealer"
    return cls in BY_RULES_AFTER_A_CARD and e.actor.startswith(("reader:", "system"))


CURSOR_PATTERN = r"^[0-9]{1,18}\.[0-9]{1,9}$"


@dataclass(frozen=True, slots=True)
class Cursor:
    """After the first ``taken`` items of the event ``seq``."""

    seq: int
    taken: int

    @classmethod
    def parse(cls, text: str | None) -> Cursor | None:
        if not text:
            return None
        seq, taken = text.split(".", 1)
        return cls(int(seq), int(taken))

    def __str__(self) -> str:
        return f"{self.seq}.{self.taken}"


def bet_items(e: StoredEvent) -> list[dict[str, Any]]:
    if REGISTRY.get(e.type) is not ev.BetsPlaced:
        return []
    return [
        {
            "bet_id": b.get("bet_id"),
            "account": b.get("account"),
            "type": b.get("type"),
            "stake": b.get("stake"),
            "seat": b.get("seat"),
            "ts": e.ts,
            "seq": e.seq,
            "accepted": True,  # a bet in the log was accepted; refusals are never written
            "by": e.actor,
        }
        for b in e.payload.get("bets", [])
    ]


def line_items(e: StoredEvent) -> list[dict[str, Any]]:
    cls = REGISTRY.get(e.type)
    if cls is not ev.BetsSettled and cls is not ev.BetsRefunded:
        return []
    key = cls.OWNED  # the list of lines, each naming its account
    assert key is not None
    reason = e.payload.get("reason")
    return [
        {
            "bet_id": line.get("bet_id"),
            "type": line.get("type"),
            "stake": line.get("stake"),
            "result": line.get("result") or "refunded",
            "returned": line.get("returned", line.get("amount")),
            "reason": reason or line.get("reason"),
            "seq": e.seq,
            "ts": e.ts,
        }
        for line in e.payload.get(key, [])
    ]


ITEMS: dict[str, tuple[tuple[str, ...], Callable[[StoredEvent], list[dict[str, Any]]]]] = {
    "bets": ((ev.BetsPlaced.TYPE,), bet_items),
    "settlement": ((ev.BetsSettled.TYPE, ev.BetsRefunded.TYPE), line_items),
}


def page(
    events: Iterable[StoredEvent],
    items: Callable[[StoredEvent], list[dict[str, Any]]],
    after: Cursor | None = None,
    limit: int = PAGE,
) -> tuple[list[dict[str, Any]], str | None]:
    """Up to ``limit`` items after ``after``, in log order, and the cursor of the next page
    (None when there is no further item)."""
    out: list[dict[str, Any]] = []
    for e in events:
        if after is not None and e.seq < after.seq:
            continue
        found = items(e)
        start = after.taken if after is not None and e.seq == after.seq else 0
        for i in range(start, len(found)):
            if len(out) == limit:
                return out, str(Cursor(e.seq, i))
            out.append(found[i])
    return out, None


def recall_round(
    row: dict[str, Any],
    events: Sequence[StoredEvent],
    dealer: str | None,
    *,
    game: str | None,
    settle_input: Any,
    limit: int = PAGE,
) -> dict[str, Any]:
    """One round's record, every step in log order, for a regulator."""
    steps: list[dict[str, Any]] = []
    incidents: dict[str, dict[str, Any]] = {}
    counts = {"bets": 0, "settlement": 0}
    bank = {"lines": 0, "stake": 0, "returned": 0}  # a seated Xì Dách bank: not a punter's
    for e in events:
        base = {
            "seq": e.seq,
            "ts": e.ts,
            "type": e.type,
            "actor": e.actor,
            "by_rules": by_rules(e),
            "hash": e.hash,
        }
        p = e.payload
        cls = REGISTRY.get(e.type)  # the step's kind, by the event's class
        if cls is ev.CardDealt:
            steps.append(
                {
                    **base,
                    "card": p.get("card"),
                    "position": p.get("position"),
                    "index": p.get("index"),
                    "source": p.get("source"),
                    "reader": e.actor.split(":", 1)[1] if e.actor.startswith("reader:") else None,
                    "reader_seq": p.get("reader_seq"),
                }
            )
        elif cls is ev.BetsPlaced:
            placed = bet_items(e)
            counts["bets"] += len(placed)
            steps.append({**base, **_summed(placed, "stake"), "bets": len(placed)})
        elif cls is ev.BetsSettled or cls is ev.BetsRefunded:
            lines = line_items(e)
            counts["settlement"] += len(lines)
            banks = [line for line in lines if line.get("type") == "bank"]
            punters = [line for line in lines if line.get("type") != "bank"]
            step = {**base, **_summed(punters, "returned"), "lines": len(punters)}
            if banks:
                step["bank"] = {k: sum(int(b.get(k) or 0) for b in banks) for k in BANK_SUMS}
                for k in BANK_SUMS:
                    bank[k] += step["bank"][k]
                bank["lines"] += len(banks)
            steps.append({**step, "reason": p.get("reason")})
        elif cls is ev.IncidentRaised:
            incidents[str(p.get("incident_id"))] = _incident(e, game)
            steps.append(
                {
                    **base,
                    "incident_id": p.get("incident_id"),
                    "kind": p.get("kind"),
                    "by": p.get("raised_by") or e.actor,  # who raised it, not the command's actor
                }
            )
        elif cls is ev.IncidentResolved:
            found = incidents.get(str(p.get("incident_id")))
            if found is not None:
                found["resolution"] = p.get("resolution")
                found["resolved_by"] = p.get("resolved_by") or e.actor
                found["resolved_at"] = e.ts
            steps.append(
                {
                    **base,
                    "incident_id": p.get("incident_id"),
                    "kind": found["kind"] if found is not None else None,
                    "resolution": p.get("resolution"),
                    "by": p.get("resolved_by") or e.actor,  # the rules resolve some themselves
                }
            )
        elif cls is ev.RoundSettled and bank["lines"]:
            # the totals as logged hold the bank; the recall says the punters' apart
            detail = {k: v for k, v in p.items() if k != "round_id" and _small(v)}
            steps.append({**base, "details": detail, "bank": dict(bank)})
        elif cls in (ev.RoundResult, ev.CardsRearranged, ev.CardsRevealed):
            # the result and the cards whatever their size (a blackjack round's outcome
            # runs to kilobytes): the step the regulator opens the record for
            detail = {k: v for k, v in p.items() if k != "round_id"}
            steps.append({**base, "details": detail})
        else:
            detail = {k: v for k, v in p.items() if k not in ("round_id", "config") and _small(v)}
            steps.append({**base, "details": detail})
    bets, bets_next = page(events, bet_items, limit=limit)
    lines, lines_next = page(events, line_items, limit=limit)
    return {
        "round_id": row.get("round_id"),
        "game": game,
        "game_number": row.get("game_number"),
        "shoe_no": row.get("shoe_no"),
        "phase": row.get("phase"),
        "dealer": dealer,
        "cards": row.get("cards"),
        "outcome": row.get("outcome"),
        "void_reason": row.get("void_reason"),
        "steps": steps,
        "bets": bets,
        "bets_total": counts["bets"],
        "bets_next": bets_next,
        "settlement": lines,
        "settlement_total": counts["settlement"],
        "settlement_next": lines_next,
        "incidents": list(incidents.values()),
        "settle_input": settle_input,
    }


BANK_SUMS = ("stake", "returned")
SHOWN = 3
"""Bets or lines a step names one by one; beyond, the step gives their count and sum."""


def _summed(items: list[dict[str, Any]], amount: str) -> dict[str, Any]:
    """What a step of bets or settlement lines says in words: the sum of ``amount`` and,
    for a few bets, each one (seat, bet type, stake, account)."""
    out: dict[str, Any] = {amount: sum(int(i.get(amount) or 0) for i in items)}
    if amount == "stake" and len(items) <= SHOWN:
        keys = ("seat", "type", "stake", "account")
        out["items"] = [{k: i[k] for k in keys if i.get(k) is not None} for i in items]
    return out


def _incident(e: StoredEvent, game: str | None) -> dict[str, Any]:
    """An incident as raised, with the procedure applied: the text recorded with it (what
    the rule said then), else the catalogue's."""
    p = e.payload
    details = p.get("details") or {}
    catalogue = procedure_of(game, p.get("kind"), details)
    applied = details.get("procedure")
    procedure = (
        catalogue
        if not applied or applied == catalogue["procedure"]
        else {"procedure": applied, "procedure_key": None}
    )
    incident = {
        "incident_id": p.get("incident_id"),
        "kind": p.get("kind"),
        "blocking": p.get("blocking"),
        "raised_by": p.get("raised_by") or e.actor,
        "raised_at": e.ts,
        **procedure,
        "details": {k: v for k, v in details.items() if k != "procedure"},
        "resolved_by": None,
        "resolution": None,
    }
    if p.get("auto_resolution"):
        incident["resolution"] = p.get("auto_resolution")
        incident["resolved_by"] = "system"
    return incident


def _small(value: Any) -> bool:
    return not isinstance(value, list | dict) or len(str(value)) < 400


def _round_events(
    session: Session, round_id: str, types: Sequence[str], after: Cursor | None
) -> Iterator[StoredEvent]:
    query = (
        select(AuditEvent)
        .where(AuditEvent.round_id == round_id, AuditEvent.type.in_(types))
        .order_by(AuditEvent.seq)
        .execution_options(yield_per=64)
    )
    if after is not None:
        query = query.where(AuditEvent.seq >= after.seq)
    for row in session.scalars(query):
        yield StoredEvent.from_row(row)


# -- routes --------------------------------------------------------------------------------
class RecallRound(OpenModel):
    round_id: str
    opened_seq: int
    closed_seq: int | None
    bets_total: int
    bets_next: str | None
    settlement_total: int
    settlement_next: str | None


class RecallOut(BaseModel):
    table_id: str
    rounds: list[RecallRound]


class RecallPage(BaseModel):
    table_id: str
    round_id: str
    section: Section
    items: list[dict[str, Any]]
    next: str | None


RoundPath = Annotated[str, FPath(min_length=1, max_length=64, pattern=IDENT_PATTERN)]
readers = allowed("recall.read")


class FoundRound(OpenModel):
    round_id: str
    table_id: str


class SearchOut(BaseModel):
    rounds: list[FoundRound]
    more: bool


searchers = allowed("recall.search")
WHEN_PATTERN = r"^\d{4}-\d{2}-\d{2}([T ]\d{2}:\d{2}(:\d{2}(\.\d{1,6})?)?)?(Z|[+-]\d{2}:?\d{2})?$"


def parse_when(text: str | None, *, end: bool = False) -> datetime | None:
    """A date (its whole day) or a moment, UTC unless it names its offset."""
    if not text:
        return None
    try:
        moment = datetime.fromisoformat(text.replace(" ", "T").replace("Z", "+00:00"))
    except ValueError as exc:
        raise InvalidRequest(f"not a date or time: {text!r}") from exc
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    if end and len(text) == 10:  # a date: to the end of that day
        moment += timedelta(days=1)
    return moment.astimezone(UTC)


def may_search_account(who: Identity, runtime: Any, account: str | None) -> None:
    """Rounds by account: a regulator, or the operator that owns the account (the policy
    decides, from the account's owner)."""
    owner = account_owner(runtime, account) if account else None
    policy.check(policy.may_search_rounds(who, account, owner))


def search_rounds(
    session: Session,
    *,
    round_id: str | None,
    table_id: str | None,
    after_seq: int | None,
    before_seq: int | None,
    account: str | None,
    limit: int,
) -> tuple[list[dict[str, Any]], bool]:
    """Rounds matching every filter given, newest first, with their times and money; with
    ``account``, that account's own bets in each (and no other account's)."""
    query = select(RoundRow)
    if round_id:
        query = query.where(RoundRow.round_id.startswith(round_id, autoescape=True))
    if table_id:
        query = query.where(RoundRow.table_id == table_id)
    if after_seq is not None:
        query = query.where(RoundRow.opened_seq >= after_seq)
    if before_seq is not None:
        query = query.where(RoundRow.opened_seq < before_seq)
    if account:
        mine = select(PlacedBet.round_id).where(PlacedBet.account_id == account)
        query = query.where(RoundRow.round_id.in_(mine))
    rows = list(session.scalars(query.order_by(RoundRow.opened_seq.desc()).limit(limit + 1)))
    more = len(rows) > limit
    rows = rows[:limit]
    seqs = {r.opened_seq for r in rows} | {r.closed_seq for r in rows if r.closed_seq}
    times = event_times(session, seqs)
    ids = [r.round_id for r in rows]
    totals: dict[str, tuple[int, int]] = {}
    if ids:
        for rid, count, staked in session.execute(
            select(BetRow.round_id, func.count(BetRow.bet_id), func.sum(BetRow.stake))
            .where(BetRow.round_id.in_(ids), BetRow.bet_type != "bank")
            .group_by(BetRow.round_id)
        ):
            totals[rid] = (int(count or 0), int(staked or 0))
    own: dict[str, list[dict[str, Any]]] = {}
    if account and ids:
        for b in session.scalars(
            select(BetRow).where(BetRow.round_id.in_(ids), BetRow.account_id == account)
        ):
            own.setdefault(b.round_id, []).append(
                {
                    "bet_id": b.bet_id,
                    "type": b.bet_type,
                    "stake": b.stake,
                    "status": b.status,
                    "result": b.result,
                    "returned": b.returned,
                }
            )
    found = []
    for r in rows:
        count, staked = totals.get(r.round_id, (0, 0))
        entry: dict[str, Any] = {
            "round_id": r.round_id,
            "table_id": r.table_id,
            "shoe_no": r.shoe_no,
            "game_number": r.game_number,
            "phase": r.phase,
            "opened_at": times.get(r.opened_seq),
            "closed_at": times.get(r.closed_seq) if r.closed_seq else None,
            "outcome": json.loads(r.outcome) if r.outcome else None,
            "void_reason": r.void_reason,
            "bets": count,
            "staked": staked,
        }
        if account:
            entry["account"] = account
            entry["account_bets"] = own.get(r.round_id, [])
        found.append(entry)
    return found, more


def recall_router() -> APIRouter:
    router = APIRouter(prefix="/api/v1")

    @router.get("/recall/search", response_model=SearchOut, responses=errors(*AUTH, 404, 422))
    def recall_search(
        request: Request,
        round_id: Annotated[str | None, Query(max_length=64, pattern=IDENT_PATTERN)] = None,
        table_id: Annotated[str | None, Query(max_length=64, pattern=IDENT_PATTERN)] = None,
        start: Annotated[str | None, Query(alias="from", pattern=WHEN_PATTERN)] = None,
        end: Annotated[str | None, Query(alias="to", pattern=WHEN_PATTERN)] = None,
        account: Annotated[str | None, Query(max_length=64, pattern=IDENT_PATTERN)] = None,
        limit: int = Query(50, ge=1, le=500),
        who: Identity = Depends(searchers),
    ) -> dict[str, Any]:
        """Find rounds by round id (or its beginning), table, time range (``from``/``to``:
        a date or a moment, UTC unless an offset is given) and, for a regulator or the
        operator owning it, account (that account's bets listed with each round, no one
        else's). Newest first; ``more`` says the limit cut the list. An operator searches
        only by an account of its own; a principal bound to a table, that table only."""
        runtime = get_runtime(request)
        may_search_account(who, runtime, account)
        if who.table_id is not None:
            if table_id is not None:
                policy.check(policy.permit(who, "recall.search", table_id))
            table_id = who.table_id
        since, until = parse_when(start), parse_when(end, end=True)
        if since is not None and until is not None and until <= since:
            raise InvalidRequest("the end of the time range is not after its start")
        with runtime.reads() as session:
            after_seq = first_seq_since(session, since) if since is not None else None
            before_seq = first_seq_since(session, until) if until is not None else None
            found: list[dict[str, Any]] = []
            more = False
            if since is None or after_seq is not None:  # else nothing logged since then
                found, more = search_rounds(
                    session,
                    round_id=round_id,
                    table_id=table_id,
                    after_seq=after_seq,
                    before_seq=before_seq,
                    account=account,
                    limit=limit,
                )
        found_rounds = ReadModel("search", {"rounds": found, "more": more})
        return model_view(found_rounds, viewer_for(request, who))

    @router.get(
        "/tables/{table_id}/recall", response_model=RecallOut, responses=errors(*AUTH, 404, 422)
    )
    def recall(
        table_id: TablePath,
        request: Request,
        last: int = Query(10, ge=1, le=50),
        who: Identity = Depends(readers),
    ) -> dict[str, Any]:
        """The current round and the ones before it, every step in log order, each with
        its settle input for offline recomputation. Each round lists its first 500 bets
        and settlement lines; ``bets_next`` / ``settlement_next`` are the cursors of the
        rest (``GET …/recall/{round_id}/bets?after=…``), None when all are listed."""
        service_of(request, table_id)
        with get_runtime(request).reads() as session:
            rows = list(
                session.scalars(
                    select(RoundRow)
                    .where(RoundRow.table_id == table_id)
                    .order_by(RoundRow.opened_seq.desc())
                    .limit(last)
                )
            )
            rounds = [round_entry(request, session, table_id, row) for row in rows]
        recalled = ReadModel("recall", {"table_id": table_id, "rounds": rounds})
        return model_view(recalled, viewer_of(who))

    @router.get(
        "/tables/{table_id}/recall/{round_id}",
        response_model=RecallRound,
        responses=errors(*AUTH, 404, 422),
    )
    def recall_one(
        table_id: TablePath,
        round_id: RoundPath,
        request: Request,
        who: Identity = Depends(readers),
    ) -> dict[str, Any]:
        """One round's record (as in the table's recall), found by its id."""
        service_of(request, table_id)
        with get_runtime(request).reads() as session:
            entry = round_entry(request, session, table_id, _round_row(session, table_id, round_id))
        return model_view(ReadModel("recall_round", entry), viewer_of(who))

    @router.get(
        "/tables/{table_id}/recall/{round_id}/{section}",
        response_model=RecallPage,
        responses=errors(*AUTH, 404, 422),
    )
    def recall_page(
        table_id: TablePath,
        round_id: RoundPath,
        section: Section,
        request: Request,
        after: Annotated[str | None, Query(pattern=CURSOR_PATTERN)] = None,
        limit: int = Query(PAGE, ge=1, le=1000),
        who: Identity = Depends(readers),
    ) -> dict[str, Any]:
        """A round's bets or settlement lines after the cursor ``after`` (from the round's
        record or the previous page), in log order; ``next`` is None on the last page."""
        service_of(request, table_id)
        cursor = Cursor.parse(after)
        types, items = ITEMS[section]
        with get_runtime(request).reads() as session:
            row = session.get(RoundRow, round_id)
            if row is None or row.table_id != table_id:
                raise NotFound(f"no round {round_id!r} at table {table_id!r}")
            found, following = page(
                _round_events(session, round_id, types, cursor), items, cursor, limit
            )
        listed = {
            "table_id": table_id,
            "round_id": round_id,
            "section": section,
            "items": found,
            "next": following,
        }
        return model_view(ReadModel("recall_page", listed), viewer_of(who))

    return router


def _round_row(session: Session, table_id: str, round_id: str) -> RoundRow:
    row = session.get(RoundRow, round_id)
    if row is None or row.table_id != table_id:
        raise NotFound(f"no round {round_id!r} at table {table_id!r}")
    return row


def round_entry(
    request: Request, session: Session, table_id: str, row: RoundRow, *, limit: int | None = PAGE
) -> dict[str, Any]:
    """A round's record for a regulator: every step, the first page of its bets and
    settlement lines (every one with ``limit=None``), its incidents and settle input."""
    events = EventStore.read(session, table_id=table_id, round_id=row.round_id)
    duty = dealer_on_duty(session, table_id, before_seq=row.opened_seq)
    record = round_record(session, table_id, row.round_id)
    fields = {
        "round_id": row.round_id,
        "game_number": row.game_number,
        "shoe_no": row.shoe_no,
        "phase": row.phase,
        "cards": json.loads(row.cards),
        "outcome": json.loads(row.outcome) if row.outcome else None,
        "void_reason": row.void_reason,
    }
    return {
        **recall_round(
            fields,
            events,
            duty["dealer"] if duty else None,
            game=record["game"] or _table_game(service_of(request, table_id)),
            settle_input=record["settle_input"],
            limit=limit if limit is not None else 10**9,
        ),
        "table_id": table_id,
        "table_round": round_number(request, session, table_id, row.round_id),
        "opened_seq": row.opened_seq,
        "closed_seq": row.closed_seq,
        "opened_at": events[0].ts if events else None,
        "closed_at": events[-1].ts if events and row.closed_seq else None,
    }


def _table_game(service: Any) -> str | None:
    config = getattr(getattr(service, "state", None), "config", None) or {}
    return str(config.get("game") or DEFAULT_GAME) if isinstance(config, Mapping) else None
