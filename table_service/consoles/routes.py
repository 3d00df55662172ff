"""The consoles' pages and the read routes they use, on the service's own app.

Pages are static files (HTML, JavaScript, CSS) shipped in the package: no build step, no
CDN, so a studio's machines work offline. Everything a page shows comes from the API
below and the tables' WebSocket streams, through the same authentication as any client.
"""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime
from functools import cache
from pathlib import Path
from string import Template
from typing import Annotated, Any

import structlog
from fastapi import APIRouter, Depends, FastAPI, Query, Request
from fastapi import Path as FPath
from fastapi.responses import HTMLResponse
from fastapi.staticfiles import StaticFiles
from pydantic import BaseModel, ConfigDict, Field
from sqlalchemy import select

from audit.store import NewEvent
from table_service.api.auth import allowed, get_runtime, visible_table
from table_service.api.problems import AUTH, errors
from table_service.api.types import IDENT_PATTERN, OpenModel, Reason, TablePath
from table_service.consoles import approvals, money
from table_service.consoles.lookup import (
    DUTY_EVENT,
    dealer_on_duty,
    event_times,
    last_card,
    round_number,
    service_of,
)
from table_service.consoles.recall import recall_router
from table_service.consoles.views import console_view, procedure_of
from table_service.errors import InvalidRequest
from table_service.models import IncidentRow, RoundRow
from table_service.principals import Identity
from table_service.rules.games import DEFAULT_GAME
from table_service.table.audience import Audience
from table_service.table.view import (
    DEALER_VIEWER,
    PUBLIC_VIEWER,
    STAFF_VIEWER,
    ReadModel,
    Viewer,
    bank_hole_hidden,
    model_view,
    seated_bank_hidden,
    table_view,
    viewer_of,
)

log = structlog.get_logger(__name__)

STATIC = Path(__file__).parent / "static"
PAGE_FILES = Path(__file__).parent / "pages"
LARGE_BET = 2_000
"""Open bets above this stake are highlighted for the pit supervisor (the page lets the
supervisor set another figure, kept in that browser)."""
PAGE_HEADERS = {
    "Cache-Control": "no-store",
    "Content-Security-Policy": (
        "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
        "img-src 'self' data:; connect-src 'self' ws: wss:; frame-ancestors *"
    ),
    "Referrer-Policy": "no-referrer",
}


# Each page: its viewport width, its title and its scripts after i18n.js (the body is
# pages/<name>.html; the head, the scripts and the shared header are written once).
PAGES = {
    "dealer": ("1280", "Dealer console", ("common", "shell", "render", "dealer")),
    "supervisor": ("device-width", "Pit supervisor", ("common", "shell", "render", "supervisor")),
    "recall": ("device-width", "Regulator recall", ("common", "shell", "render", "recall")),
    "overlay": ("1920", "Studio overlay", ("common", "render", "overlay")),
}


@cache
def page_html(name: str) -> str:
    width, title, scripts = PAGES[name]
    template = Template((PAGE_FILES / "page.html").read_text(encoding="utf-8"))
    return template.substitute(
        name=name,
        width=width,
        title=title,
        body=(PAGE_FILES / f"{name}.html").read_text(encoding="utf-8").rstrip("\n"),
        scripts="\n".join(f'  <script src="/console/static/{s}.js"></script>' for s in scripts),
    )


def _page(name: str) -> HTMLResponse:
    return HTMLResponse(page_html(name), headers=PAGE_HEADERS)


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _view(
    request: Request, table_id: str, audience: str, viewer: Viewer | None = None
) -> dict[str, Any]:
    """The console's data of a table; ``viewer``: who reads the dealer console (a dealer
    at a seated bank does not see the banker's face-down card; the pit does)."""
    service = service_of(request, table_id)
    state = service.state
    if viewer is None or audience != "dealer":
        viewer = DEALER_VIEWER if audience == "dealer" else PUBLIC_VIEWER
    if audience == "dealer" and viewer.sees_face_down:
        viewer = STAFF_VIEWER
    game_view = _game_view(state, audience)
    if viewer.role is Audience.DEALER and seated_bank_hidden(state.round) and game_view:
        game_view = bank_hole_hidden(game_view, _game_view(state, "public"))
    view = console_view(
        table_view(state, viewer),
        state.config,
        audience=audience,
        game_view=game_view,
    )
    view["server_time"] = _now()
    shoe = getattr(service.config, "shoe", None)
    dialect = str(getattr(shoe, "dialect", "") or getattr(shoe, "kind", "") or "")
    view["reader"] = {"kind": "camera" if "camera" in dialect else "shoe"}
    view["seats"] = [{"seat": n, "pending": h.pending} for n, h in sorted(state.seats.items())]
    rnd = state.round
    if rnd is not None and view["round"] is not None:
        bets = list(rnd.bets.values())
        view["round"]["stakes"] = money.stake_totals(bets)  # public: counts and a sum
        if audience == "dealer":
            view["round"]["seat_stakes"] = money.seat_stakes(bets)
        with get_runtime(request).reads() as session:
            view["round"]["table_round"] = round_number(request, session, table_id, rnd.round_id)
    if audience == "dealer":
        for item in view.get("incidents", []):
            found = state.incidents.get(item.get("incident_id"))
            item["raised_by"] = getattr(found, "raised_by", None)
        view["house_banker"] = house_banked(service)
        view["bank_seat"] = state.bank_seat  # a seated Xì Dách bank: its seat holds no stake
    return view


def _today_from(request: Request, session: Any) -> int | None:
    """The first event of today (UTC), found once a day and kept: the day's totals start
    there. Not kept while nothing has been logged today."""
    start = money.day_start()
    kept = getattr(request.app.state, "day_start_seq", None)
    if kept is not None and kept[0] == start:
        return int(kept[1])
    seq = money.first_seq_since(session, start)
    if seq is not None:
        request.app.state.day_start_seq = (start, seq)
    return seq


def house_banked(service: Any) -> bool:
    """A Xì Dách table where the house banks: the dealer makes the banker's moves, as the
    published policy requires, from the dealer console."""
    config = getattr(service, "config", None)
    if config is None:
        return False
    try:
        return bool(config.game_impl.house_banker(config.rules))
    except Exception:  # a table whose rules cannot load has no house banker to play
        return False


def _pit_view(request: Request, session: Any, table_id: str, large_above: int) -> dict[str, Any]:
    """Everything the pit supervisor sees of a table: the dealer's view of the round (every
    card), seats and who holds them, the bank, the money in play, the table's result for the
    shoe and the day, and bets above ``large_above``."""
    service = service_of(request, table_id)
    state = service.state
    view = _view(request, table_id, "dealer", STAFF_VIEWER)  # the pit's: every card
    view["dealer_on_duty"] = dealer_on_duty(session, table_id)
    view["seats"] = [
        {"seat": n, "account": h.account, "pending": h.pending, "disconnected": h.disconnected}
        for n, h in sorted(state.seats.items())
    ]
    rnd = state.round
    bets = list(rnd.bets.values()) if rnd is not None and rnd.active else []
    shoe_no = state.shoe.shoe_no if state.shoe is not None else None
    if shoe_no is None and rnd is not None:
        shoe_no = rnd.shoe_no
    view["money"] = {
        "in_play": sum(money.stakes_by_type(bets).values()),
        "by_type": money.stakes_by_type(bets),
        "large_above": large_above,
        "large_bets": money.large_bets(bets, large_above),
        "bank": money.bank_of(bets),
        **money.table_results(session, table_id, shoe_no, _today_from(request, session)),
    }
    view["void_approval"] = {
        "threshold": approvals.threshold(service),
        "open_stakes": approvals.open_stakes(service),
        "needed": approvals.needs_approval(service),
        "pending": approvals.pending(session, table_id, rnd.round_id) if rnd else [],
    }
    return view


def _game_view(state: Any, audience: str) -> dict[str, Any] | None:
    """The game's own view of the round in play for ``audience`` (what a spectator or the
    dealer may see: a face-down card stays face down for the public)."""
    rnd = getattr(state, "round", None)
    play = getattr(rnd, "play", None)
    game = getattr(rnd, "game", None)
    if play is None or game is None:
        return None
    try:
        return dict(game.view(play.state, audience))
    except Exception:  # a game without that audience: the public view is always there
        log.warning("console.view_failed", audience=audience, exc_info=True)
        return None


class HouseMoveIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    action: str = Field(min_length=1, max_length=32, pattern=r"^[a-z_]+$")
    target: str | None = Field(None, min_length=1, max_length=16, pattern=r"^[a-z0-9_]+$")


class VoidRequestIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    reason: Reason
    change_shoe: bool = Field(True, strict=True)


def pages_router() -> APIRouter:
    router = APIRouter(include_in_schema=False)

    @router.get("/console/dealer")
    def dealer_page() -> HTMLResponse:
        return _page("dealer")

    @router.get("/console/supervisor")
    def supervisor_page() -> HTMLResponse:
        return _page("supervisor")

    @router.get("/overlay/{table_id}")
    def overlay_page(table_id: str) -> HTMLResponse:
        return _page("overlay")

    @router.get("/recall/{table_id}")
    def recall_page(table_id: str) -> HTMLResponse:
        return _page("recall")

    return router


class ServerTime(BaseModel):
    now: str


class ConsoleView(OpenModel):
    table_id: str
    game: str | None = None
    paused: bool
    last_seq: int
    server_time: str


class DutyOut(BaseModel):
    table_id: str
    dealer: str
    seq: int


class RoadsOut(OpenModel):
    table_id: str
    shoe_no: int
    last_seq: int


def console_api_router() -> APIRouter:
    router = APIRouter(prefix="/api/v1")

    @router.get("/console/time", response_model=ServerTime)
    def server_time() -> dict[str, str]:
        """The server's clock, so a page's countdown runs on the table's time."""
        return model_view(ReadModel("server_time", {"now": _now()}), PUBLIC_VIEWER)

    @router.get(
        "/public/tables/{table_id}/view", response_model=ConsoleView, responses=errors(404, 422)
    )
    def public_view(table_id: TablePath, request: Request) -> dict[str, Any]:
        """What the studio graphics show: no accounts, stakes, actors or incident details."""
        return model_view(ReadModel("console", _view(request, table_id, "public")), PUBLIC_VIEWER)

    @router.get(
        "/console/tables/{table_id}/view",
        response_model=ConsoleView,
        responses=errors(*AUTH, 404, 422),
    )
    def dealer_view(
        table_id: TablePath, request: Request, who: Identity = Depends(allowed("console.view"))
    ) -> dict[str, Any]:
        viewer = viewer_of(who)
        view = _view(request, table_id, "dealer", viewer)
        with get_runtime(request).reads() as session:
            view["dealer_on_duty"] = dealer_on_duty(session, table_id)
            view["last_card"] = last_card(session, table_id)
        if viewer.role is Audience.DEALER and view["last_card"] is not None:
            rnd = service_of(request, table_id).state.round
            down = {rnd.cards[i] for i in seated_bank_hidden(rnd)} if rnd is not None else set()
            if view["last_card"].get("card") in down:
                view["last_card"] = {**view["last_card"], "card": None}  # the banker's hole
        return model_view(ReadModel("console_staff", view), viewer_of(who))

    @router.get("/console/overview", response_model=list[ConsoleView], responses=errors(*AUTH))
    def overview(
        request: Request,
        large_above: int = Query(
            LARGE_BET, ge=0, le=10**15, description="open bets above this stake are listed"
        ),
        who: Identity = Depends(allowed("console.overview")),
    ) -> list[dict[str, Any]]:
        """Every table at a glance for the pit: game, phase and timer, every card and hand,
        seats and who holds them, the Xì Dách bank, dealer on duty and since when, reader,
        incidents; money: stakes in play by bet type, the table's result for the shoe and
        for the day (UTC), open bets above ``large_above``. Staff only: it names accounts."""
        manager = getattr(request.app.state, "tables", None)
        if manager is None:
            return []
        viewer = viewer_of(who)
        with get_runtime(request).reads() as session:
            return [
                model_view(
                    ReadModel("console_staff", _pit_view(request, session, table_id, large_above)),
                    viewer,
                )
                for table_id in sorted(manager.tables)
                if visible_table(who, table_id)  # a bound principal: its own table only
            ]

    @router.get("/console/timeline", response_model=list[OpenModel], responses=errors(*AUTH, 422))
    def timeline(
        request: Request,
        limit: int = Query(30, ge=1, le=500),
        who: Identity = Depends(allowed("console.timeline")),
    ) -> list[dict[str, Any]]:
        """The pit's incident timeline, newest first: each incident with its table and
        round, when and by whom it was raised and resolved, the rule applied and what was
        done. Staff only (it names the people who acted)."""
        manager = getattr(request.app.state, "tables", None)
        games = {
            t: str((getattr(s.state, "config", None) or {}).get("game") or DEFAULT_GAME)
            for t, s in (manager.tables.items() if manager is not None else [])
        }
        viewer = viewer_of(who)
        with get_runtime(request).reads() as session:
            items = incident_timeline(session, games, limit, table_id=who.table_id)
        return [model_view(ReadModel("timeline", item), viewer) for item in items]

    @router.post(
        "/tables/{table_id}/round/void-requests",
        response_model=OpenModel,
        responses=errors(*AUTH, 404, 409, 413, 422),
    )
    async def request_void(
        table_id: TablePath,
        body: VoidRequestIn,
        request: Request,
        who: Identity = Depends(allowed("void.request")),
    ) -> dict[str, Any]:
        """A void above the table's threshold: the first supervisor asks for it."""
        service = service_of(request, table_id)
        answer = await approvals.request_void(
            get_runtime(request),
            service,
            reason=body.reason,
            change_shoe=body.change_shoe,
            actor=who.actor,
            name=who.name,
        )
        return model_view(ReadModel("void_request", answer), viewer_of(who))

    @router.post(
        "/tables/{table_id}/round/void-requests/{request_id}/approve",
        response_model=OpenModel,
        responses=errors(*AUTH, 404, 409, 422),
    )
    async def approve_void(
        table_id: TablePath,
        request_id: Annotated[str, FPath(min_length=1, max_length=64, pattern=IDENT_PATTERN)],
        request: Request,
        who: Identity = Depends(allowed("void.approve")),
    ) -> dict[str, Any]:
        """A different supervisor approves; the round is voided and refunded in their name."""
        service = service_of(request, table_id)
        answer = await approvals.approve_void(get_runtime(request), service, request_id, who=who)
        return model_view(ReadModel("void_approval", answer), viewer_of(who))

    @router.post(
        "/tables/{table_id}/house-move",
        response_model=OpenModel,
        responses=errors(*AUTH, 404, 409, 422),
    )
    async def house_move(
        table_id: TablePath,
        body: HouseMoveIn,
        request: Request,
        who: Identity = Depends(allowed("house.move")),
    ) -> dict[str, Any]:
        """The house banker's move at a house-banked Xì Dách table, made by the table's
        dealer (or a supervisor) from the console, as the published policy requires. The
        table checks it against the moves the rules allow the banker now; at any other
        table it is refused."""
        from table_service.table import commands as c

        service = service_of(request, table_id)
        if not house_banked(service):
            raise InvalidRequest(f"the house does not bank at table {table_id}")
        command = c.Act("banker", body.action, "banker", None, body.target)
        outcome = await service.execute(command, actor=who)  # the policy decides, there
        return model_view(ReadModel("answer", outcome.answer), viewer_of(who))

    @router.post(
        "/tables/{table_id}/duty", response_model=DutyOut, responses=errors(*AUTH, 404, 422)
    )
    async def sign_in_dealer(
        table_id: TablePath, request: Request, who: Identity = Depends(allowed("duty.sign_in"))
    ) -> dict[str, Any]:
        """The dealer on duty at the table, recorded in the audit log, so every round's
        record names its dealer."""
        service_of(request, table_id)
        runtime = get_runtime(request)

        def record() -> int:
            with runtime.sessions.begin() as session:
                runtime.store.lock(session)
                stored = runtime.store.append(
                    session,
                    [NewEvent(table_id, DUTY_EVENT, who.actor, {"dealer": who.name})],
                )
                return stored[-1].seq

        seq = await asyncio.to_thread(record)
        log.info("console.dealer_signed_in", table_id=table_id, dealer=who.name, seq=seq)
        answer = {"table_id": table_id, "dealer": who.name, "seq": seq}
        return model_view(ReadModel("duty", answer), viewer_of(who))

    @router.get("/tables/{table_id}/roads", response_model=RoadsOut, responses=errors(404, 422))
    def table_roads(table_id: TablePath, request: Request) -> dict[str, Any]:
        """The current shoe's baccarat roads (public: every studio shows them)."""
        service = service_of(request, table_id)
        state = service.state
        game = service.config.game_impl
        if game.shoe_roads(()) is None:
            raise InvalidRequest(f"table {table_id} plays {game.name}: it keeps no roads")
        shoe_no = state.shoe.shoe_no if state.shoe is not None else state.shoes_inserted
        with get_runtime(request).reads() as session:
            rows = session.scalars(
                select(RoundRow)
                .where(
                    RoundRow.table_id == table_id,
                    RoundRow.shoe_no == shoe_no,
                    RoundRow.outcome.is_not(None),
                    RoundRow.phase != "voided",
                )
                .order_by(RoundRow.opened_seq)
            )
            outcomes = [json.loads(r.outcome) for r in rows if r.outcome]
        roads = {
            "table_id": table_id,
            "shoe_no": shoe_no,
            "last_seq": state.last_seq,
            **(game.shoe_roads(outcomes) or {}),
        }
        return model_view(ReadModel("roads", roads), PUBLIC_VIEWER)

    return router


def incident_timeline(
    session: Any, games: dict[str, str], limit: int, *, table_id: str | None = None
) -> list[dict[str, Any]]:
    """Incidents newest first, with the time each was raised and resolved (from the log);
    ``table_id``: that table's only (a principal bound to it)."""
    query = select(IncidentRow)
    if table_id is not None:
        query = query.where(IncidentRow.table_id == table_id)
    rows = list(session.scalars(query.order_by(IncidentRow.raised_seq.desc()).limit(limit)))
    seqs = {r.raised_seq for r in rows} | {r.resolved_seq for r in rows if r.resolved_seq}
    times = event_times(session, seqs)
    out = []
    for r in rows:
        details = json.loads(r.details or "{}")
        game = games.get(r.table_id)
        out.append(
            {
                "incident_id": r.incident_id,
                "table_id": r.table_id,
                "round_id": r.round_id,
                "kind": r.kind,
                "blocking": r.blocking,
                "status": r.status,
                **procedure_of(game, r.kind, details),
                "raised_by": r.raised_by,
                "raised_at": times.get(r.raised_seq),
                "resolved_by": r.resolved_by,
                "resolved_at": times.get(r.resolved_seq) if r.resolved_seq else None,
                "resolution": r.resolution,
            }
        )
    return out


def mount_consoles(app: FastAPI) -> None:
    """Pages, their static files and their read routes on ``app``."""
    app.include_router(pages_router())
    app.include_router(console_api_router())
    app.include_router(recall_router())
    app.mount("/console/static", StaticFiles(directory=STATIC), name="console-static")
