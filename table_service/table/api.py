"""HTTP and WebSocket API of the tables: dealer, supervisor, operator, regulator routes."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any, Literal

import structlog
from fastapi import APIRouter, Depends, FastAPI, Query, Request, WebSocket, WebSocketDisconnect
from pydantic import BaseModel, Field
from sqlalchemy import select

from audit.store import EventStore, StoredEvent
from table_service.api.app import create_app
from table_service.api.auth import check_table, get_runtime, require
from table_service.consoles.approvals import check_void_approval
from table_service.errors import InvalidRequest, NotFound, Refused
from table_service.models import BetRow, IncidentRow, RoundRow
from table_service.principals import Identity, Role, authenticate
from table_service.runtime import Runtime
from table_service.studio.api import studio_router, table_elsewhere
from table_service.studio.coordinator import Studio
from table_service.studio.errors import TableElsewhere, TableUnavailable
from table_service.table import commands as c
from table_service.table.config import TableConfig
from table_service.table.recall import round_record
from table_service.table.service import TableManager, TableService, new_bet_id
from table_service.table.stream import StreamHub, internal_view, public_view
from table_service.table.wallet import Transfer, account_view, transfer

log = structlog.get_logger(__name__)

ANY_STAFF = (Role.DEALER, Role.SUPERVISOR, Role.REGULATOR, Role.OPERATOR, Role.ADMIN)


def _manager(request: Request) -> TableManager:
    return request.app.state.tables


def _table(table_id: str, request: Request) -> TableService:
    return _manager(request).get(table_id)


class ReasonIn(BaseModel):
    reason: str = Field("shoe change", min_length=1, max_length=500)


class IncidentIn(BaseModel):
    kind: str = Field(min_length=1, max_length=32)
    details: dict[str, Any] = Field(default_factory=dict)


ROUND_CARDS_MAX = 64  # the most cards any game's round takes (blackjack: 7 seats, splits)


class EnteredCardIn(BaseModel):
    card: str = Field(min_length=2, max_length=3)
    index: int = Field(ge=0, le=ROUND_CARDS_MAX)


class ResolveIn(BaseModel):
    note: str = Field(min_length=1, max_length=1000)
    entered: list[EnteredCardIn] = Field(default_factory=list, max_length=ROUND_CARDS_MAX)
    order: list[str] | None = Field(None, max_length=ROUND_CARDS_MAX)


class VoidIn(BaseModel):
    reason: str = Field(min_length=1, max_length=500)
    change_shoe: bool = True


class CardIn(BaseModel):
    card: str | None = Field(None, min_length=2, max_length=3)
    cut_card: bool = False


class BetIn(BaseModel):
    key: str = Field(min_length=1, max_length=100, description="idempotency key")
    account: str = Field(min_length=1, max_length=64)
    type: str = Field(min_length=1, max_length=32)
    stake: int
    seat: int | None = Field(None, ge=1, le=64, description="seat games: the seat bet on")


class SeatIn(BaseModel):
    seat: int = Field(ge=1, le=64)
    account: str = Field(min_length=1, max_length=64)


class LeaveIn(BaseModel):
    reason: str = Field("player left", min_length=1, max_length=500)


class ActionIn(BaseModel):
    actor: str = Field(
        min_length=1, max_length=80, description="seat:N, behind:<bet id>, banker (by game)"
    )
    action: str = Field(min_length=1, max_length=32, description="hit, stand, double, accept…")
    account: str = Field(min_length=1, max_length=64, description="the player answering")
    hand: int | None = Field(None, ge=1, le=8)
    target: str | None = Field(None, min_length=1, max_length=80)


class BetsIn(BaseModel):
    bets: list[BetIn] = Field(min_length=1)


class TransferIn(BaseModel):
    amount: int
    reference: str = Field(min_length=1, max_length=100)


def table_router() -> APIRouter:
    router = APIRouter(prefix="/api/v1")

    @router.get("/tables")
    def tables(request: Request, _: Identity = Depends(require(*ANY_STAFF))) -> list[dict]:
        return [t.state.public_summary() for t in _manager(request).tables.values()]

    @router.get("/tables/{table_id}")
    def table(
        table_id: str, request: Request, who: Identity = Depends(require(*ANY_STAFF))
    ) -> dict[str, Any]:
        check_table(who, table_id)
        return _table(table_id, request).state.public_summary()

    async def run(table_id: str, request: Request, who: Identity, command: c.Command) -> dict:
        check_table(who, table_id)
        service = _table(table_id, request)
        outcome = await service.execute(command, actor=who.actor)
        return {
            **outcome.answer,
            "seq": service.state.last_seq,
            "table": service.state.public_summary(),
        }

    dealer = require(Role.DEALER, Role.SUPERVISOR)
    supervisor = require(Role.SUPERVISOR)

    @router.post("/tables/{table_id}/betting/open")
    async def open_betting(
        table_id: str, request: Request, who: Identity = Depends(dealer)
    ) -> dict:
        return await run(table_id, request, who, c.OpenBetting())

    @router.post("/tables/{table_id}/betting/close")
    async def close_betting(
        table_id: str, request: Request, who: Identity = Depends(dealer)
    ) -> dict:
        return await run(table_id, request, who, c.CloseBetting("dealer"))

    @router.post("/tables/{table_id}/incidents")
    async def raise_incident(
        table_id: str, body: IncidentIn, request: Request, who: Identity = Depends(dealer)
    ) -> dict:
        return await run(table_id, request, who, c.RaiseIncident(body.kind, body.details))

    @router.post("/tables/{table_id}/incidents/{incident_id}/resolve")
    async def resolve_incident(
        table_id: str,
        incident_id: str,
        body: ResolveIn,
        request: Request,
        who: Identity = Depends(supervisor),
    ) -> dict:
        command = c.ResolveIncident(
            incident_id,
            body.note,
            tuple(c.EnteredCard(e.card, e.index) for e in body.entered),
            tuple(body.order) if body.order is not None else None,
        )
        return await run(table_id, request, who, command)

    @router.post("/tables/{table_id}/round/void")
    async def void_round(
        table_id: str, body: VoidIn, request: Request, who: Identity = Depends(supervisor)
    ) -> dict:
        check_table(who, table_id)
        check_void_approval(_table(table_id, request))
        return await run(table_id, request, who, c.VoidRound(body.reason, body.change_shoe))

    @router.post("/tables/{table_id}/shoe")
    async def insert_shoe(
        table_id: str, request: Request, who: Identity = Depends(supervisor)
    ) -> dict:
        return await run(table_id, request, who, c.InsertShoe())

    @router.post("/tables/{table_id}/shoe/change")
    async def change_shoe(
        table_id: str, body: ReasonIn, request: Request, who: Identity = Depends(supervisor)
    ) -> dict:
        return await run(table_id, request, who, c.ChangeShoe(body.reason))

    @router.post("/tables/{table_id}/cards")
    async def manual_card(
        table_id: str, body: CardIn, request: Request, who: Identity = Depends(supervisor)
    ) -> dict:
        """Keyboard entry of a card as if scanned (a table whose reader is down)."""
        if body.cut_card:
            return await run(table_id, request, who, c.CutCard())
        if body.card is None:
            raise InvalidRequest("give a card or cut_card=true")
        return await run(table_id, request, who, c.CardScanned(body.card))

    @router.post("/tables/{table_id}/bets")
    async def place_bets(
        table_id: str,
        body: BetsIn,
        request: Request,
        who: Identity = Depends(require(Role.OPERATOR)),
    ) -> dict:
        service = _table(table_id, request)
        check_table(who, table_id)
        if len(body.bets) > service.config.max_bets_per_request:
            raise InvalidRequest(f"at most {service.config.max_bets_per_request} bets a request")
        bets = tuple(
            c.BetRequest(new_bet_id(), b.key, b.account, b.type, b.stake, b.seat) for b in body.bets
        )
        outcome = await service.execute(c.PlaceBets(bets), actor=who.actor)
        return {**outcome.answer, "seq": service.state.last_seq}

    operator = require(Role.OPERATOR)

    @router.post("/tables/{table_id}/seats")
    async def take_seat(
        table_id: str, body: SeatIn, request: Request, who: Identity = Depends(operator)
    ) -> dict:
        return await run(table_id, request, who, c.TakeSeat(body.seat, body.account))

    @router.post("/tables/{table_id}/seats/{seat}/leave")
    async def leave_seat(
        table_id: str,
        seat: int,
        body: LeaveIn,
        request: Request,
        who: Identity = Depends(operator),
    ) -> dict:
        return await run(table_id, request, who, c.LeaveSeat(seat, body.reason))

    @router.post("/tables/{table_id}/seats/{seat}/disconnected")
    async def player_disconnected(
        table_id: str, seat: int, request: Request, who: Identity = Depends(operator)
    ) -> dict:
        return await run(table_id, request, who, c.PlayerDisconnected(seat))

    @router.post("/tables/{table_id}/actions")
    async def action(
        table_id: str, body: ActionIn, request: Request, who: Identity = Depends(operator)
    ) -> dict:
        """A player's decision, checked against the legal actions of that actor now."""
        command = c.Act(body.actor, body.action, body.account, body.hand, body.target)
        return await run(table_id, request, who, command)

    @router.get("/tables/{table_id}/rounds")
    def round_history(
        table_id: str,
        request: Request,
        before_seq: int | None = None,
        limit: int = Query(50, ge=1, le=500),
        _: Identity = Depends(require(Role.REGULATOR, Role.SUPERVISOR, Role.OPERATOR, Role.ADMIN)),
    ) -> list[dict]:
        _table(table_id, request)
        runtime = get_runtime(request)
        with runtime.sessions() as session:
            query = select(RoundRow).where(RoundRow.table_id == table_id)
            if before_seq is not None:
                query = query.where(RoundRow.opened_seq < before_seq)
            rows = session.scalars(query.order_by(RoundRow.opened_seq.desc()).limit(limit))
            return [_round_json(r) for r in rows]

    @router.get("/rounds/{round_id}")
    def round_detail(
        round_id: str,
        request: Request,
        _: Identity = Depends(require(Role.REGULATOR, Role.SUPERVISOR, Role.OPERATOR, Role.ADMIN)),
    ) -> dict:
        runtime = get_runtime(request)
        with runtime.sessions() as session:
            row = session.get(RoundRow, round_id)
            if row is None:
                raise NotFound(f"no round {round_id!r}")
            bets = session.scalars(
                select(BetRow).where(BetRow.round_id == round_id).order_by(BetRow.placed_seq)
            )
            return {
                **_round_json(row),
                **round_record(session, row.table_id, round_id),
                "bets": [
                    {
                        "bet_id": b.bet_id,
                        "key": b.idempotency_key.split("|", 1)[1],
                        "account": b.account_id,
                        "type": b.bet_type,
                        "stake": b.stake,
                        "status": b.status,
                        "result": b.result,
                        "returned": b.returned,
                    }
                    for b in bets
                ],
            }

    @router.get("/incidents")
    def incidents(
        request: Request,
        table_id: str | None = None,
        status: Literal["open", "resolved"] | None = None,
        limit: int = Query(100, ge=1, le=1000),
        _: Identity = Depends(require(Role.SUPERVISOR, Role.REGULATOR, Role.DEALER, Role.ADMIN)),
    ) -> list[dict]:
        runtime = get_runtime(request)
        with runtime.sessions() as session:
            query = select(IncidentRow)
            if table_id:
                query = query.where(IncidentRow.table_id == table_id)
            if status:
                query = query.where(IncidentRow.status == status)
            rows = session.scalars(query.order_by(IncidentRow.raised_seq.desc()).limit(limit))
            return [
                {
                    "incident_id": r.incident_id,
                    "table_id": r.table_id,
                    "round_id": r.round_id,
                    "kind": r.kind,
                    "blocking": r.blocking,
                    "status": r.status,
                    "details": json.loads(r.details),
                    "raised_by": r.raised_by,
                    "resolution": r.resolution,
                    "resolved_by": r.resolved_by,
                }
                for r in rows
            ]

    @router.post("/accounts/{account}/credit")
    async def credit(
        account: str,
        body: TransferIn,
        request: Request,
        who: Identity = Depends(require(Role.OPERATOR)),
    ) -> dict:
        item = Transfer(account, body.amount, body.reference, "credit")
        return await asyncio.to_thread(transfer, get_runtime(request), item, actor=who.actor)

    @router.post("/accounts/{account}/debit")
    async def debit(
        account: str,
        body: TransferIn,
        request: Request,
        who: Identity = Depends(require(Role.OPERATOR)),
    ) -> dict:
        item = Transfer(account, body.amount, body.reference, "debit")
        return await asyncio.to_thread(transfer, get_runtime(request), item, actor=who.actor)

    @router.get("/accounts/{account}")
    def account(
        account: str,
        request: Request,
        _: Identity = Depends(require(Role.OPERATOR, Role.REGULATOR, Role.SUPERVISOR, Role.ADMIN)),
    ) -> dict:
        return account_view(get_runtime(request), account)

    @router.websocket("/tables/{table_id}/stream")
    async def stream(
        websocket: WebSocket, table_id: str, after_seq: int = 0, token: str | None = None
    ) -> None:
        runtime: Runtime = websocket.app.state.runtime
        # A browser cannot set headers on a WebSocket: the consoles offer their token as a
        # sub-protocol ("bearer.<token>") beside "livetable.v1", so it is never in a URL.
        offered = [
            p.strip() for p in websocket.headers.get("sec-websocket-protocol", "").split(",")
        ]
        protocol_token = next((p[7:] for p in offered if p.startswith("bearer.")), "")
        bearer = (
            token
            or protocol_token
            or websocket.headers.get("authorization", "").removeprefix("Bearer ")
        )
        with runtime.sessions() as session:
            identity = authenticate(session, bearer) if bearer else None
        if identity is None:
            await websocket.close(code=4401, reason="invalid or revoked token")
            return
        if identity.table_id is not None and identity.table_id != table_id:
            await websocket.close(code=4403, reason="bound to another table")
            return
        subprotocol = "livetable.v1" if "livetable.v1" in offered else None
        await _serve_stream(websocket, table_id, after_seq, internal_view, subprotocol)

    @router.websocket("/public/tables/{table_id}/stream")
    async def public_stream(websocket: WebSocket, table_id: str, after_seq: int = 0) -> None:
        await _serve_stream(websocket, table_id, after_seq, public_view)

    return router


def _round_json(row: Any) -> dict[str, Any]:
    return {
        "round_id": row.round_id,
        "table_id": row.table_id,
        "shoe_no": row.shoe_no,
        "game_number": row.game_number,
        "phase": row.phase,
        "cards": json.loads(row.cards),
        "outcome": json.loads(row.outcome) if row.outcome else None,
        "void_reason": row.void_reason,
        "opened_seq": row.opened_seq,
        "closed_seq": row.closed_seq,
    }


async def _serve_stream(
    websocket: WebSocket,
    table_id: str,
    after_seq: int,
    view: Any,
    subprotocol: str | None = None,
) -> None:
    manager: TableManager = websocket.app.state.tables
    hub: StreamHub = websocket.app.state.hub
    # accepted first, so the client reads the close code and reason
    await websocket.accept(subprotocol=subprotocol)
    if table_id not in manager.tables:
        await websocket.close(*_not_here(manager, table_id))
        return
    runtime: Runtime = websocket.app.state.runtime
    queue = hub.subscribe(table_id)
    last = max(0, after_seq)

    def read_after(seq: int) -> list[StoredEvent]:
        with runtime.sessions() as session:
            return EventStore.read(session, after_seq=seq, table_id=table_id, limit=1000)

    async def send(event: StoredEvent) -> None:
        item = view(event)
        if item is not None:
            await websocket.send_json(item)

    async def until_disconnect() -> None:
        # A client that goes away while the table is quiet must end this handler too,
        # or it waits on the queue forever (and holds up the server's shutdown).
        while (await websocket.receive())["type"] != "websocket.disconnect":
            pass

    gone = asyncio.create_task(until_disconnect())
    try:
        while True:
            batch = await asyncio.to_thread(read_after, last)
            for event in batch:
                await send(event)
                last = event.seq
            if len(batch) < 1000:
                break
        while True:
            getter = asyncio.ensure_future(queue.get())
            await asyncio.wait({getter, gone}, return_when=asyncio.FIRST_COMPLETED)
            if not getter.done():
                getter.cancel()
                return
            event = getter.result()
            if event is None:
                if table_id not in manager.tables:  # handed over: resume where it runs now
                    await websocket.close(*_not_here(manager, table_id))
                else:
                    await websocket.close(code=4408, reason="too far behind; resume from your seq")
                return
            if event.seq <= last:
                continue
            await send(event)
            last = event.seq
    except WebSocketDisconnect:
        pass
    finally:
        gone.cancel()
        hub.unsubscribe(table_id, queue)


def _not_here(manager: TableManager, table_id: str) -> tuple[int, str]:
    """The WebSocket close for a table this process does not run: 4421 and the owner's
    address (a studio's table on another process), 4503 (being taken over), or 4404."""
    try:
        manager.get(table_id)
    except TableElsewhere as exc:
        return 4421, str(exc.details.get("owner_url") or exc.details.get("owner"))
    except TableUnavailable as exc:
        return 4503, exc.reason
    except Refused as exc:
        return 4404, exc.reason
    return 4503, f"table {table_id} is starting"


def build_app(
    runtime: Runtime,
    configs: list[TableConfig],
    *,
    with_readers: bool = True,
    reader_options: dict[str, Any] | None = None,
    manager: TableManager | None = None,
) -> FastAPI:
    """The whole service: foundation routes, table routes, stream; tables start with it."""
    manager = manager or TableManager(runtime, configs, reader_options=reader_options)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        hub = StreamHub(asyncio.get_running_loop())
        runtime.store.subscribe(hub.publish)
        app.state.hub = hub
        for_dropped = getattr(manager, "on_dropped", None)
        if for_dropped is not None:
            for_dropped.append(hub.end)
        publisher = None
        if runtime.settings.nats_url:
            from table_service.table.nats_stream import JetStreamPublisher

            # In a studio only a table's lease holder publishes it (from the log).
            studio = manager if isinstance(manager, Studio) else None
            publisher = JetStreamPublisher(
                runtime,
                runtime.settings.nats_url,
                stream=runtime.settings.nats_stream,
                tables=() if studio is not None else None,
            )
            await publisher.start()
            if studio is not None:
                studio.on_acquired.append(publisher.add_table)
                studio.on_dropped.append(publisher.drop_table)
        await manager.start(with_readers=with_readers)
        try:
            yield
        finally:
            await manager.stop()
            if publisher is not None:
                await publisher.stop()

    routers = [table_router()]
    if isinstance(manager, Studio):
        routers.append(studio_router())
    app = create_app(runtime, routers=routers, lifespan=lifespan)
    app.state.tables = manager
    app.add_exception_handler(TableElsewhere, table_elsewhere)  # type: ignore[arg-type]

    return app
