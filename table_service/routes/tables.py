"""HTTP and WebSocket API of the tables: dealer, supervisor, operator, regulator routes."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Annotated, Any, Literal

import structlog
from fastapi import (
    APIRouter,
    Depends,
    Path,
    Query,
    Request,
    WebSocket,
    WebSocketDisconnect,
)
from pydantic import BaseModel, ConfigDict, Field
from sqlalchemy import select

from audit.store import EventStore, StoredEvent
from table_service import metrics
from table_service.api.auth import acting, allowed, get_runtime, visible_table
from table_service.api.problems import AUTH, BODY, errors
from table_service.api.types import (
    IDENT_PATTERN,
    SEQ_MAX,
    AccountId,
    BoundedJson,
    Ident,
    Key,
    Money,
    Note,
    Reason,
)
from table_service.api.viewers import holding, ownership, viewer_for
from table_service.consoles.approvals import check_void_approval
from table_service.errors import InvalidRequest, NotFound, Refused
from table_service.models import Account, BetRow, IncidentRow, LedgerEntry, RoundRow, house_account
from table_service.principals import Identity, authenticate
from table_service.runtime import Runtime
from table_service.studio.api import studio_responses
from table_service.studio.errors import TableElsewhere, TableUnavailable
from table_service.table import commands as c
from table_service.table import policy
from table_service.table.audience import Audience
from table_service.table.recall import rebuild_round, record_of
from table_service.table.service import Tables, TableService, new_bet_id
from table_service.table.stream import (
    BURST_SEND_TIMEOUT,
    CLOSE_BAD_REQUEST,
    CLOSE_FORBIDDEN,
    CLOSE_NOT_FOUND,
    CLOSE_TOO_FAR_BEHIND,
    CLOSE_TOO_MANY,
    CLOSE_UNAUTHORIZED,
    MISSING,
    REPLAY_PAGE,
    SEND_BURST,
    StreamHub,
    internal_view,
    operator_view,
    public_view,
    render,
    with_timing,
)
from table_service.table.view import (
    Context,
    ReadModel,
    Viewer,
    face_down,
    model_view,
    table_view,
)
from table_service.table.wallet import Transfer, account_view, transfer

log = structlog.get_logger(__name__)


def _manager(request: Request) -> Tables:
    tables: Tables = request.app.state.tables
    return tables


def _table(table_id: str, request: Request) -> TableService:
    return _manager(request).get(table_id)


TableId = Annotated[
    str, Path(min_length=1, max_length=64, pattern=IDENT_PATTERN, examples=["bac-1"])
]
PathId = Annotated[
    str, Path(min_length=1, max_length=64, pattern=IDENT_PATTERN, examples=["alice"])
]
Seq = Annotated[int, Query(ge=0, le=SEQ_MAX)]
SeatNo = Annotated[int, Path(ge=1, le=64)]


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ReasonIn(Strict):
    reason: Reason = "shoe change"


class IncidentIn(Strict):
    kind: Ident
    details: BoundedJson = Field(default_factory=dict)


ROUND_CARDS_MAX = 64  # the most cards any game's round takes (blackjack: 7 seats, splits)
CardText = Annotated[str, Field(min_length=2, max_length=3, pattern=r"^[0-9A-Za-z]+$")]


class EnteredCardIn(Strict):
    card: CardText
    index: int = Field(ge=0, le=ROUND_CARDS_MAX, strict=True)


class ResolveIn(Strict):
    note: Note
    entered: list[EnteredCardIn] = Field(default_factory=list, max_length=ROUND_CARDS_MAX)
    order: list[CardText] | None = Field(None, max_length=ROUND_CARDS_MAX)
    read_twice: bool = Field(
        False,
        strict=True,
        description="possible_duplicate only: the repeated card was one card read twice; "
        "it is taken out of the round",
    )


class VoidIn(Strict):
    reason: Reason
    change_shoe: bool = Field(True, strict=True)


class CardIn(Strict):
    card: str | None = Field(None, min_length=2, max_length=3, pattern=r"^[0-9A-Za-z]+$")
    cut_card: bool = Field(False, strict=True)


class BetIn(Strict):
    key: Key
    account: AccountId
    type: Ident
    stake: Money
    seat: int | None = Field(
        None, ge=1, le=64, strict=True, description="seat games: the seat bet on"
    )


class LeaveIn(Strict):
    reason: Reason = "player left"


class SeatIn(Strict):
    seat: int = Field(ge=1, le=64, strict=True)
    account: AccountId


class ActionIn(Strict):
    actor: str = Field(
        min_length=1,
        max_length=80,
        pattern=r"^[A-Za-z0-9][A-Za-z0-9:._-]*$",
        description="seat:N, behind:<bet id>, banker (by game)",
    )
    action: Ident = Field(description="hit, stand, double, accept…")
    account: AccountId | None = Field(
        None,
        description="the player answering (a seat's or bet's account, the seated banker's); "
        "none for the house banker's move, which the table's dealer confirms",
    )
    hand: int | None = Field(None, ge=1, le=8, strict=True)
    target: str | None = Field(
        None, min_length=1, max_length=80, pattern=r"^[A-Za-z0-9][A-Za-z0-9:._-]*$"
    )


class BetsIn(Strict):
    bets: list[BetIn] = Field(min_length=1, max_length=5000)


class TransferIn(Strict):
    amount: Money
    reference: Key


# -- answers -----------------------------------------------------------------------------------
class Open(BaseModel):
    """Answers whose exact members depend on the game and command; the named ones are
    always there."""

    model_config = ConfigDict(extra="allow")


class TableSummary(Open):
    table_id: str
    opened: bool | None = None
    paused: bool | None = None
    last_seq: int | None = None


class CommandAnswer(Open):
    seq: int
    table: TableSummary


class BetResult(Open):
    key: str
    status: str
    bet_id: str | None = None
    error: str | None = None
    reason: str | None = None


class BetsAnswer(Open):
    round_id: str | None = None
    results: list[BetResult] = Field(default_factory=list)
    seq: int


class RoundOut(BaseModel):
    round_id: str
    table_id: str
    shoe_no: int
    game_number: int
    phase: str
    cards: list[Any]
    outcome: dict[str, Any] | None
    void_reason: str | None
    opened_seq: int
    closed_seq: int | None


class BetOut(BaseModel):
    bet_id: str
    key: str
    account: str
    type: str
    stake: int
    status: str
    result: str | None
    returned: int | None
    commission: int = Field(
        0,
        description="the house's share of this bet's win, already out of returned; "
        "its own ledger line to the table's house account",
    )


class RoundDetail(RoundOut):
    game: str | None = None
    settle_input: Any = Field(None, description="the round as the game's settle command reads it")
    bets: list[BetOut]


class IncidentOut(BaseModel):
    incident_id: str
    table_id: str
    round_id: str | None
    kind: str
    blocking: bool
    status: str
    details: dict[str, Any]
    raised_by: str
    resolution: str | None
    resolved_by: str | None


class TransferOut(BaseModel):
    account: str
    balance: int
    duplicate: bool
    seq: int


class LedgerOut(BaseModel):
    amount: int
    kind: str
    bet_id: str | None
    reference: str | None
    seq: int


class AccountOut(BaseModel):
    account: str
    balance: int
    entries: list[LedgerOut]


def table_router() -> APIRouter:
    router = APIRouter(prefix="/api/v1")
    command_errors = {**errors(*AUTH, 404, 409, *BODY), **studio_responses()}
    one_table_read = {**errors(*AUTH, 404, 422), **studio_responses()}

    @router.get(
        "/tables",
        response_model=list[TableSummary],
        response_model_exclude_unset=True,
        responses=errors(*AUTH),
    )
    def tables(
        request: Request, who: Identity = Depends(allowed("tables.list"))
    ) -> list[dict[str, Any]]:
        viewer = viewer_for(request, who)
        return [
            table_view(t.state, viewer)
            for t in _manager(request).tables.values()
            if visible_table(who, t.table_id)
        ]

    @router.get(
        "/tables/{table_id}",
        response_model=TableSummary,
        response_model_exclude_unset=True,
        responses=one_table_read,
    )
    def table(
        table_id: TableId, request: Request, who: Identity = Depends(allowed("table.read"))
    ) -> dict[str, Any]:
        return table_view(_table(table_id, request).state, viewer_for(request, who))

    async def run(
        table_id: str, request: Request, who: Identity, command: c.Command
    ) -> dict[str, Any]:
        service = _table(table_id, request)
        outcome = await service.execute(command, actor=who)  # the policy decides, there
        state = service.state
        viewer = viewer_for(request, who)
        if viewer.role is Audience.OWNER:  # its owner lookups read the database: not here
            summary = await asyncio.to_thread(table_view, state, viewer)
        else:
            summary = table_view(state, viewer)
        return {**outcome.answer, "seq": state.last_seq, "table": summary}

    answer: dict[str, Any] = {
        "response_model": CommandAnswer,
        "response_model_exclude_unset": True,
        "responses": command_errors,
    }

    @router.post("/tables/{table_id}/betting/open", **answer)
    async def open_betting(
        table_id: TableId, request: Request, who: Identity = Depends(acting(c.OpenBetting))
    ) -> dict[str, Any]:
        return await run(table_id, request, who, c.OpenBetting())

    @router.post("/tables/{table_id}/betting/close", **answer)
    async def close_betting(
        table_id: TableId, request: Request, who: Identity = Depends(acting(c.CloseBetting))
    ) -> dict[str, Any]:
        return await run(table_id, request, who, c.CloseBetting("dealer"))

    @router.post("/tables/{table_id}/incidents", **answer)
    async def raise_incident(
        table_id: TableId,
        body: IncidentIn,
        request: Request,
        who: Identity = Depends(acting(c.RaiseIncident)),
    ) -> dict[str, Any]:
        return await run(table_id, request, who, c.RaiseIncident(body.kind, body.details))

    @router.post("/tables/{table_id}/incidents/{incident_id}/resolve", **answer)
    async def resolve_incident(
        table_id: TableId,
        incident_id: PathId,
        body: ResolveIn,
        request: Request,
        who: Identity = Depends(acting(c.ResolveIncident)),
    ) -> dict[str, Any]:
        command = c.ResolveIncident(
            incident_id,
            body.note,
            tuple(c.EnteredCard(e.card, e.index) for e in body.entered),
            tuple(body.order) if body.order is not None else None,
            body.read_twice,
        )
        return await run(table_id, request, who, command)

    @router.post("/tables/{table_id}/round/void", **answer)
    async def void_round(
        table_id: TableId,
        body: VoidIn,
        request: Request,
        who: Identity = Depends(acting(c.VoidRound)),
    ) -> dict[str, Any]:
        check_void_approval(_table(table_id, request))
        return await run(table_id, request, who, c.VoidRound(body.reason, body.change_shoe))

    @router.post("/tables/{table_id}/shoe", **answer)
    async def insert_shoe(
        table_id: TableId, request: Request, who: Identity = Depends(acting(c.InsertShoe))
    ) -> dict[str, Any]:
        return await run(table_id, request, who, c.InsertShoe())

    @router.post("/tables/{table_id}/shoe/change", **answer)
    async def change_shoe(
        table_id: TableId,
        body: ReasonIn,
        request: Request,
        who: Identity = Depends(acting(c.ChangeShoe)),
    ) -> dict[str, Any]:
        return await run(table_id, request, who, c.ChangeShoe(body.reason))

    @router.post("/tables/{table_id}/cards", **answer)
    async def manual_card(
        table_id: TableId,
        body: CardIn,
        request: Request,
        who: Identity = Depends(acting(c.CardScanned)),
    ) -> dict[str, Any]:
        """Keyboard entry of a card as if scanned (a table whose reader is down)."""
        if body.cut_card:
            return await run(table_id, request, who, c.CutCard())
        if body.card is None:
            raise InvalidRequest("give a card or cut_card=true")
        return await run(table_id, request, who, c.CardScanned(body.card))

    @router.post(
        "/tables/{table_id}/bets",
        response_model=BetsAnswer,
        response_model_exclude_unset=True,
        responses=command_errors,
    )
    async def place_bets(
        table_id: TableId,
        body: BetsIn,
        request: Request,
        who: Identity = Depends(acting(c.PlaceBets)),
    ) -> dict[str, Any]:
        service = _table(table_id, request)
        if len(body.bets) > service.config.max_bets_per_request:
            raise InvalidRequest(f"at most {service.config.max_bets_per_request} bets a request")
        limit = get_runtime(request).settings.max_amount
        if any(b.stake > limit for b in body.bets):
            raise InvalidRequest(f"a stake is at most {limit} minor units", maximum=limit)
        bets = tuple(
            c.BetRequest(new_bet_id(), b.key, b.account, b.type, b.stake, b.seat) for b in body.bets
        )
        outcome = await service.execute(c.PlaceBets(bets), actor=who)
        return {**outcome.answer, "seq": service.state.last_seq}

    @router.post("/tables/{table_id}/seats", **answer)
    async def take_seat(
        table_id: TableId,
        body: SeatIn,
        request: Request,
        who: Identity = Depends(acting(c.TakeSeat)),
    ) -> dict[str, Any]:
        return await run(table_id, request, who, c.TakeSeat(body.seat, body.account))

    @router.post("/tables/{table_id}/seats/{seat}/leave", **answer)
    async def leave_seat(
        table_id: TableId,
        seat: SeatNo,
        body: LeaveIn,
        request: Request,
        who: Identity = Depends(acting(c.LeaveSeat)),
    ) -> dict[str, Any]:
        return await run(table_id, request, who, c.LeaveSeat(seat, body.reason))

    @router.post("/tables/{table_id}/seats/{seat}/disconnected", **answer)
    async def player_disconnected(
        table_id: TableId,
        seat: SeatNo,
        request: Request,
        who: Identity = Depends(acting(c.PlayerDisconnected)),
    ) -> dict[str, Any]:
        return await run(table_id, request, who, c.PlayerDisconnected(seat))

    @router.post("/tables/{table_id}/actions", **answer)
    async def action(
        table_id: TableId, body: ActionIn, request: Request, who: Identity = Depends(acting(c.Act))
    ) -> dict[str, Any]:
        """A player's decision, checked against the legal actions of that actor now: by its
        operator; the house banker's published move (Xì Dách), by the table's staff."""
        command = c.Act(body.actor, body.action, body.account, body.hand, body.target)
        return await run(table_id, request, who, command)

    readers = allowed("rounds.read")

    @router.get(
        "/tables/{table_id}/rounds",
        response_model=list[RoundOut],
        responses=one_table_read,
    )
    def round_history(
        table_id: TableId,
        request: Request,
        before_seq: Seq | None = None,
        limit: int = Query(50, ge=1, le=500),
        who: Identity = Depends(readers),
    ) -> list[dict[str, Any]]:
        _table(table_id, request)
        runtime = get_runtime(request)
        with runtime.reads() as session:
            query = select(RoundRow).where(RoundRow.table_id == table_id)
            if before_seq is not None:
                query = query.where(RoundRow.opened_seq < before_seq)
            rows = session.scalars(query.order_by(RoundRow.opened_seq.desc()).limit(limit))
            viewer = viewer_for(request, who)
            out: list[dict[str, Any]] = []
            for r in rows:
                hidden, shown = _face_down(request, session, r, viewer)
                row = ReadModel("round", _round_json(r), Context(hidden, shown=shown))
                out.append(model_view(row, viewer))
            return out

    @router.get("/rounds/{round_id}", response_model=RoundDetail, responses=errors(*AUTH, 404, 422))
    def round_detail(
        round_id: PathId,
        request: Request,
        who: Identity = Depends(readers),
    ) -> dict[str, Any]:
        runtime = get_runtime(request)
        with runtime.reads() as session:
            row = session.get(RoundRow, round_id)
            if row is None or not visible_table(who, row.table_id):
                raise NotFound(f"no round {round_id!r}")
            query = select(BetRow).where(BetRow.round_id == round_id)
            if who.operator_id is not None:  # an operator sees its own accounts' bets only
                query = query.join(Account, Account.account_id == BetRow.account_id).where(
                    Account.owner == who.operator_id
                )
            bets = list(session.scalars(query.order_by(BetRow.placed_seq)))
            kept = (
                dict(
                    session.execute(
                        select(LedgerEntry.bet_id, LedgerEntry.amount).where(
                            LedgerEntry.kind == "commission",
                            LedgerEntry.account_id == house_account(row.table_id),
                            LedgerEntry.bet_id.in_([b.bet_id for b in bets]),
                        )
                    ).all()
                )
                if bets
                else {}
            )
            rnd = rebuild_round(session, row.table_id, round_id)
            viewer = viewer_for(request, who)
            hidden, shown = _face_down(request, session, row, viewer, rnd)
            detail = {
                **_round_json(row),
                **record_of(rnd),
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
                        "commission": kept.get(b.bet_id, 0),
                    }
                    for b in bets
                ],
            }
            owned = {b.bet_id for b in bets} if viewer.role is Audience.OWNER else ()
            context = Context(hidden, owned, shown)
            return model_view(ReadModel("round_detail", detail, context), viewer)

    @router.get("/incidents", response_model=list[IncidentOut], responses=errors(*AUTH, 422))
    def incidents(
        request: Request,
        table_id: Annotated[str | None, Query(max_length=64, pattern=IDENT_PATTERN)] = None,
        status: Literal["open", "resolved"] | None = None,
        limit: int = Query(100, ge=1, le=1000),
        who: Identity = Depends(allowed("incidents.read")),
    ) -> list[dict[str, Any]]:
        if who.table_id is not None:  # a bound principal sees its own table only
            if table_id is not None:
                policy.check(policy.permit(who, "incidents.read", table_id))
            table_id = who.table_id
        runtime = get_runtime(request)
        viewer = viewer_for(request, who)
        with runtime.reads() as session:
            query = select(IncidentRow)
            if table_id:
                query = query.where(IncidentRow.table_id == table_id)
            if status:
                query = query.where(IncidentRow.status == status)
            rows = session.scalars(query.order_by(IncidentRow.raised_seq.desc()).limit(limit))
            return [model_view(ReadModel("incident", _incident_json(r)), viewer) for r in rows]

    money_errors = errors(*AUTH, 402, 404, 409, *BODY)

    @router.post("/accounts/{account}/credit", response_model=TransferOut, responses=money_errors)
    async def credit(
        account: PathId,
        body: TransferIn,
        request: Request,
        who: Identity = Depends(allowed("account.credit")),
    ) -> dict[str, Any]:
        item = Transfer(account, body.amount, body.reference, "credit")
        return await asyncio.to_thread(transfer, get_runtime(request), item, actor=who.actor)

    @router.post("/accounts/{account}/debit", response_model=TransferOut, responses=money_errors)
    async def debit(
        account: PathId,
        body: TransferIn,
        request: Request,
        who: Identity = Depends(allowed("account.debit")),
    ) -> dict[str, Any]:
        item = Transfer(account, body.amount, body.reference, "debit")
        return await asyncio.to_thread(transfer, get_runtime(request), item, actor=who.actor)

    @router.get("/accounts/{account}", response_model=AccountOut, responses=errors(*AUTH, 404, 422))
    def account(
        account: PathId,
        request: Request,
        who: Identity = Depends(allowed("account.read")),
    ) -> dict[str, Any]:
        found = account_view(get_runtime(request), account, owner=who.operator_id)
        return model_view(ReadModel("account", found), viewer_for(request, who))

    @router.websocket("/tables/{table_id}/stream")
    async def stream(websocket: WebSocket, table_id: str) -> None:
        """The staff stream. Refusals are an accepted socket closed with 4400 (bad
        parameter), 4401 (no valid token), 4403 (another table) or 4404 (no such table)."""
        runtime: Runtime = websocket.app.state.runtime
        params = websocket.query_params
        # A browser cannot set headers on a WebSocket: the consoles offer their token as a
        # sub-protocol ("bearer.<token>") beside "livetable.v1", so it is never in a URL.
        offered = [
            p.strip() for p in websocket.headers.get("sec-websocket-protocol", "").split(",")
        ]
        protocol_token = next((p[7:] for p in offered if p.startswith("bearer.")), "")
        bearer = (
            params.get("token")
            or protocol_token
            or websocket.headers.get("authorization", "").removeprefix("Bearer ")
        )
        # Accepted first, so every refusal reaches the client as a close code and reason.
        await websocket.accept(subprotocol="livetable.v1" if "livetable.v1" in offered else None)
        after_seq = _after_seq(params.get("after_seq"))
        if after_seq is None:
            await websocket.close(CLOSE_BAD_REQUEST, "after_seq is an integer 0..2^63-1")
            return
        identity = None
        if bearer and len(bearer) <= 256:
            identity = await asyncio.to_thread(_authenticate, runtime, bearer)
        if identity is None:
            await websocket.close(CLOSE_UNAUTHORIZED, "invalid or revoked token")
            return
        verdict = policy.permit(identity, "table.stream", table_id)
        if isinstance(verdict, policy.Refusal):
            await websocket.close(CLOSE_FORBIDDEN, verdict.reason[:120])
            return
        project: Callable[[StoredEvent], dict[str, Any] | None] = internal_view
        view_key = "internal"
        if identity.operator_id is not None:
            owned = ownership(runtime, identity.operator_id)
            project = operator_view(owned, identity.operator_id, holding(runtime, owned))
            view_key = identity.operator_id
        await _serve_stream(
            websocket, table_id, after_seq, project, view_key, address=None, timing=_timing(params)
        )

    @router.websocket("/public/tables/{table_id}/stream")
    async def public_stream(websocket: WebSocket, table_id: str) -> None:
        """Anonymous: public fields only, limited per table and per client address (4429)."""
        await websocket.accept()
        after_seq = _after_seq(websocket.query_params.get("after_seq"))
        if after_seq is None:
            await websocket.close(CLOSE_BAD_REQUEST, "after_seq is an integer 0..2^63-1")
            return
        address = websocket.client.host if websocket.client else "unknown"
        await _serve_stream(
            websocket,
            table_id,
            after_seq,
            public_view,
            "public",
            address=address,
            timing=_timing(websocket.query_params),
        )

    return router


def _timing(params: Any) -> bool:
    """``timing=1``: each frame also carries the service's send and commit times."""
    return params.get("timing") in ("1", "true")


def _after_seq(text: str | None) -> int | None:
    if text is None:
        return 0
    if not text.isascii() or not text.isdigit() or len(text) > 19:
        return None
    value = int(text)
    return value if value <= SEQ_MAX else None


def _authenticate(runtime: Runtime, token: str) -> Identity | None:
    with runtime.reads() as session:
        return authenticate(session, token)


def _face_down(
    request: Request, session: Any, row: Any, viewer: Viewer, rnd: Any = None
) -> tuple[frozenset[int], frozenset[int]]:
    """The cards of a round still face down, and those of them the viewer may see (its
    own player's hand): none once it is settled (the game turns them all); the live
    table's state for its round in play; else the round rebuilt from its events (a voided
    round's face-down cards stay face down)."""
    if viewer.staff or row.phase == "settled":
        return frozenset(), frozenset()
    service = _manager(request).tables.get(row.table_id)
    state = getattr(service, "state", None)
    live = getattr(state, "round", None)
    if live is not None and live.round_id == row.round_id:
        return face_down(live, viewer)
    if rnd is None:
        rnd = rebuild_round(session, row.table_id, row.round_id)
    return face_down(rnd, viewer)


def _incident_json(r: IncidentRow) -> dict[str, Any]:
    return {
        "incident_id": r.incident_id,
        "table_id": r.table_id,
        "round_id": r.round_id,
        "kind": r.kind,
        "blocking": r.blocking,
        "status": r.status,
        "details": _details(r.details),
        "raised_by": r.raised_by,
        "resolution": r.resolution,
        "resolved_by": r.resolved_by,
    }


def _details(text: str) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        return {"unreadable": True}
    return value if isinstance(value, dict) else {"value": value}


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
    view: Callable[[StoredEvent], dict[str, Any] | None],
    view_key: str,
    *,
    address: str | None,
    timing: bool = False,
) -> None:
    manager: Tables = websocket.app.state.tables
    hub: StreamHub = websocket.app.state.hub
    if table_id not in manager.tables:
        await websocket.close(*_not_here(manager, table_id))
        return
    ticket = hub.admit(table_id, address)
    if isinstance(ticket, str):
        await websocket.close(CLOSE_TOO_MANY, ticket)
        return
    runtime: Runtime = websocket.app.state.runtime
    queue = hub.subscribe(table_id)
    last = after_seq
    audience = {"public": "public", "internal": "staff"}.get(view_key, "operator")
    metrics.STREAM_SUBSCRIBERS.labels(audience).inc()

    def read_after(seq: int) -> list[StoredEvent]:
        with runtime.reads() as session:
            return EventStore.read(session, after_seq=seq, table_id=table_id, limit=REPLAY_PAGE)

    async def until_disconnect() -> None:
        # A client that goes away while the table is quiet must end this handler too,
        # or it waits on the queue forever (and holds up the server's shutdown).
        while (await websocket.receive())["type"] != "websocket.disconnect":
            pass

    gone = asyncio.create_task(until_disconnect())
    gone.add_done_callback(lambda _: queue.put_nowait(None))
    try:
        while not gone.done():
            # replays take turns on the shared event loop
            async with metrics.replay_turn(hub.replay_slots):
                page = await hub.page(table_id, view_key, last, read_after, view)
                for start in range(0, len(page), SEND_BURST):
                    burst = page[start : start + SEND_BURST]
                    texts = [text for _, text in burst if text is not None]
                    if not texts:
                        last = burst[-1][0]
                        continue
                    async with hub.turn(len(texts)):  # one burst at a time, writes first
                        try:
                            async with asyncio.timeout(BURST_SEND_TIMEOUT):
                                for text in texts:
                                    if timing:
                                        text = with_timing(text, None)
                                    await websocket.send_text(text)
                        except TimeoutError:
                            timed_out = True
                        else:
                            timed_out = False
                    if timed_out:
                        await websocket.close(CLOSE_TOO_FAR_BEHIND, "too slow; resume from seq")
                        return
                    last = burst[-1][0]
            if len(page) < REPLAY_PAGE:
                break
        while True:
            event = await queue.get()  # a client gone puts None here too (no wait per event)
            if event is None:
                if gone.done():
                    return
                if table_id not in manager.tables:  # handed over: resume where it runs now
                    await websocket.close(*_not_here(manager, table_id))
                else:
                    await websocket.close(CLOSE_TOO_FAR_BEHIND, "too far behind; resume from seq")
                return
            if event.seq <= last:
                continue
            # rendered once per event per class of viewer (public, staff, each operator)
            frame: str | None
            if view_key == "public" or view_key == "internal":
                frame = hub.rendered(view_key, view, event)
            else:  # an operator's view may look up an account's owner: off the loop
                frame = hub.kept(view_key, event.seq)
                if frame is MISSING:
                    frame = await asyncio.get_running_loop().run_in_executor(
                        hub.replay_pool, render, view, event
                    )
                    hub.keep(view_key, event.seq, frame)
            if frame is not None:
                if timing:
                    frame = with_timing(frame, metrics.COMMITS.get(table_id, event.seq))
                await websocket.send_text(frame)
                metrics.delivered(table_id, event.seq)
            last = event.seq
    except (WebSocketDisconnect, RuntimeError):
        pass  # the client went away mid-send
    finally:
        metrics.STREAM_SUBSCRIBERS.labels(audience).dec()
        gone.cancel()
        hub.unsubscribe(table_id, queue)
        hub.leave(ticket)


def _not_here(manager: Tables, table_id: str) -> tuple[int, str]:
    """The WebSocket close for a table this process does not run: 4421 and the owner's
    address (a studio's table on another process), 4503 (being taken over), or 4404."""
    try:
        manager.get(table_id)
    except TableElsewhere as exc:
        return 4421, str(exc.details.get("owner_url") or exc.details.get("owner"))
    except TableUnavailable as exc:
        return 4503, exc.reason
    except Refused as exc:
        return CLOSE_NOT_FOUND, exc.reason
    return 4503, f"table {table_id} is starting"
