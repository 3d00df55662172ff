"""The demo, wired together: shoe, reader, table service, API server, bots, round log.

Start-up order follows the data: the virtual shoe on its pseudo-terminal first, then the
API server (whose table service opens the real serial reader on the shoe's device path),
then the stream follower and the bots. Shut-down runs the other way: bots, a void of any
round left half-played (so no stake stays open), the server (which closes the reader),
and the shoe last, so the reader never sees its shoe vanish.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import socket
import time
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import structlog
import uvicorn
from rich.console import Console
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from audit.store import EventStore
from hardware_sim.virtual_shoe import VirtualShoe
from table_service.app import build_app
from table_service.config import Settings
from table_service.demo.bots import (
    MISTAKES_BY_GAME,
    DealerBot,
    MistakeBag,
    PlayerBots,
    SupervisorBot,
    Table,
)
from table_service.demo.client import ApiClient
from table_service.demo.credentials import TOKENS_FILE, BotPrincipal, ensure_principals
from table_service.demo.feed import TableFeed
from table_service.demo.roundlog import LogTotals, RoundLog
from table_service.demo.seatbots import SeatPlayers
from table_service.demo.shoestack import ShoeStack, SupplyExhausted
from table_service.models import RoundRow
from table_service.runtime import Runtime
from table_service.table.config import CameraConfig, ShoeConfig, TableConfig

log = structlog.get_logger(__name__)

SHOES_UNBOUNDED = 100
"""Shoes prepared when the demo runs until stopped (about a thousand rounds)."""


class DemoError(RuntimeError):
    """The demo could not start (port taken, reader not coming online, ...)."""


@dataclass(frozen=True)
class DemoOptions:
    host: str = "127.0.0.1"
    port: int = 8000
    data_dir: Path | None = None
    rounds: int = 0
    seed: int | None = None
    betting_seconds: float = 5.0
    mistakes: float = 0.25
    players: int = 3
    cut_after: int = 60
    decks: int = 8
    table_id: str | None = None
    """Default by game: ``bac-1``, ``bj-1``."""
    game: str = "baccarat"
    decision_seconds: int = 10
    """A seated player's decision timer (seat 000: 10 s); blackjack only."""
    follow_seconds: int = 5
    pause: float = 1.0
    heartbeat: float = 0.5
    log_file: Path | None = None
    """Where the service's own log goes (said once in the banner); None: standard error."""
    reader: str = "serial"
    """serial (the shoe's scanner), camera (a synthetic camera over the shoe, real
    recognition), or both (the shoe, cross-checked card by card by the camera)."""
    camera_deck: str = "plastic"
    """The published deck the synthetic camera renders (hardware_sim.camera.published)."""
    camera_window_seconds: float | None = None
    """--reader both: how long the two readers may take to see a card (a table file's
    ``window_seconds``; None: its default). The synthetic camera renders its frames on
    this machine's CPU: a saturated machine makes it slower than a real camera."""
    supervisor: str = "bot"
    """bot: the supervisor bot resolves incidents; human: a person does, at the console."""
    metrics_url: str | None = None
    """Where this process's Prometheus metrics are (said in the banner)."""


@dataclass
class DemoReport:
    seed: int
    base_url: str
    data_dir: Path
    database_url: str
    rounds_played: int = 0
    stopped_by: str = "rounds"
    mistakes: list[tuple[str, str]] = field(default_factory=list)
    totals: LogTotals = field(default_factory=LogTotals)
    bets_placed: int = 0
    bets_refused: int = 0
    interrupted_round_voided: bool = False
    checkpoint_size: int | None = None


class _Server(uvicorn.Server):
    """uvicorn without its own signal handlers: the demo decides what Ctrl-C does."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


def _bind(host: str, port: int) -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise DemoError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from exc
    sock.listen(128)
    sock.set_inheritable(True)
    return sock


async def _wait_started(server: _Server, task: asyncio.Task[None], timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while not server.started:
        if task.done():
            raise DemoError(f"the API server stopped during start-up: {task.exception()!r}")
        if time.monotonic() > deadline:
            raise DemoError("the API server did not start")
        await asyncio.sleep(0.02)


TABLE_IDS = {"baccarat": "bac-1", "blackjack": "bj-1"}


async def run_demo(
    options: DemoOptions, console: Console, *, stop: asyncio.Event | None = None
) -> DemoReport:
    """Run until ``options.rounds`` rounds are played (0: until ``stop`` is set)."""
    stop = stop or asyncio.Event()
    if options.game not in TABLE_IDS:
        raise DemoError(f"no demo for game {options.game!r}; try {', '.join(TABLE_IDS)}")
    if options.table_id is None:
        options = replace(options, table_id=TABLE_IDS[options.game])
    ShoeStack.check_cut_after(options.decks, options.cut_after)
    seed = options.seed if options.seed is not None else random.SystemRandom().randrange(10**6)
    sock = _bind(options.host, options.port)  # first: a taken port fails before anything starts
    try:
        return await _run(options, console, stop, seed, sock)
    finally:
        sock.close()


async def _run(
    options: DemoOptions, console: Console, stop: asyncio.Event, seed: int, sock: socket.socket
) -> DemoReport:
    settings = Settings(data_dir=options.data_dir) if options.data_dir else Settings()
    runtime = await asyncio.to_thread(Runtime.from_settings, settings, upgrade=True)
    report: DemoReport | None = None
    try:
        report = await _run_with(runtime, settings, options, console, stop, seed, sock)
        return report
    finally:
        try:
            checkpoint = await asyncio.to_thread(_seal, runtime)
            if report is not None:
                report.checkpoint_size = checkpoint
            if checkpoint is not None:
                console.print(f"audit log sealed: signed checkpoint at event {checkpoint}")
        finally:
            runtime.close()


async def _run_with(
    runtime: Runtime,
    settings: Settings,
    options: DemoOptions,
    console: Console,
    stop: asyncio.Event,
    seed: int,
    sock: socket.socket,
) -> DemoReport:
    table_id = options.table_id
    if table_id is None:  # run_demo names the game's own table when none is given
        raise DemoError("no table to run the demo on")
    port = sock.getsockname()[1]
    base_url = f"http://{options.host}:{port}"
    report = DemoReport(seed, base_url, settings.data_dir, settings.resolved_database_url)
    principals = await asyncio.to_thread(ensure_principals, runtime, settings.data_dir, table_id)
    with runtime.sessions() as session:
        session_start_seq = EventStore.head(session)[0]
        played_before = rounds_played(session, table_id)
    shoes = options.rounds + 2 if options.rounds else SHOES_UNBOUNDED
    device = VirtualShoe("framed", decks=options.decks, seed=seed, heartbeat=options.heartbeat)
    stack = ShoeStack(
        device, decks=options.decks, seed=seed, cut_after=options.cut_after, shoes=shoes
    )
    device.start()
    camera: Any = None
    camera_config = None
    if options.reader in ("camera", "both"):
        camera, camera_config = await asyncio.to_thread(
            demo_camera,
            options.camera_deck,
            table_id,
            settings,
            seed,
            options.camera_window_seconds,
        )
        device.observers.append(camera.card_dealt)
    game_rules = (
        {"decision_seconds": options.decision_seconds, "follow_seconds": options.follow_seconds}
        if options.game == "blackjack"
        else {}
    )
    config = TableConfig(
        table_id=table_id,
        game=options.game,
        game_rules=game_rules,
        decks=options.decks,
        cut_card_depth=options.decks * 52 - options.cut_after,
        betting_seconds=options.betting_seconds,
        shoe=None
        if options.reader == "camera"
        else ShoeConfig(port=device.device_path, dialect="framed"),
        camera=camera_config,
    )
    app = build_app(runtime, [config])
    server = _Server(
        uvicorn.Config(
            app,
            log_level="warning",
            access_log=False,
            log_config=None,
            lifespan="on",
            timeout_keep_alive=30,
            timeout_graceful_shutdown=5,
        )
    )
    server_task = asyncio.create_task(server.serve(sockets=[sock]), name="api-server")
    roundlog = RoundLog(console, rounds_before=played_before)
    report.totals = roundlog.totals
    clients: list[ApiClient] = []
    tasks: list[asyncio.Task[object]] = []
    feed: TableFeed | None = None
    supervisor: SupervisorBot | None = None
    try:
        await _wait_started(server, server_task)
        dealer_api, supervisor_api, operator_api = (
            ApiClient(base_url, principals[role].token)
            for role in ("dealer", "supervisor", "operator")
        )
        clients += [dealer_api, supervisor_api, operator_api]
        _banner(roundlog, options, report, device, settings, seed)
        _console_banner(roundlog, report.base_url, table_id, principals)
        feed = TableFeed(
            base_url.replace("http://", "ws://"),
            table_id,
            principals["supervisor"].token,
            after_seq=session_start_seq,
        )
        feed.listeners.append(roundlog.on_event)
        table = Table(table_id, feed, roundlog)
        supervisor = SupervisorBot(supervisor_api, table, human=options.supervisor == "human")
        feed.listeners.append(supervisor.on_event)
        feed.start()
        await asyncio.wait_for(feed.connected.wait(), 15)
        await sign_in_dealer(dealer_api, table_id)
        await _reader_online(table, supervisor_api)
        await supervisor.recover()
        tasks.append(asyncio.create_task(supervisor.run(), name="supervisor"))
        rng = random.Random(seed)
        players: PlayerBots | SeatPlayers
        if options.game == "blackjack":
            seated = SeatPlayers(
                operator_api, table, min(options.players, 7), random.Random(rng.random())
            )
            feed.listeners.append(seated.on_event)
            tasks.append(asyncio.create_task(seated.run(), name="seat-players"))
            players = seated
        else:
            players = PlayerBots(operator_api, table, options.players, random.Random(rng.random()))
        await players.fund()
        dealer = DealerBot(
            dealer_api,
            table,
            stack,
            supervisor,
            players,
            random.Random(rng.random()),
            options.betting_seconds,
        )
        bag = MistakeBag(
            options.mistakes, random.Random(rng.random()), MISTAKES_BY_GAME[options.game]
        )

        async def rounds() -> None:
            while options.rounds == 0 or report.rounds_played < options.rounds:
                mistake, made = bag.draw(), len(dealer.mistakes)
                await dealer.play_round(mistake)
                bag.made(mistake, (k for _r, k in dealer.mistakes[made:]))
                report.rounds_played += 1
                await asyncio.sleep(options.pause)

        play = asyncio.create_task(rounds(), name="rounds")
        stopping = asyncio.create_task(stop.wait(), name="stop")
        done, _ = await asyncio.wait(
            {play, stopping, server_task}, return_when=asyncio.FIRST_COMPLETED
        )
        stopping.cancel()
        error: BaseException | None = None
        if play in done:
            error = play.exception()
            if isinstance(error, SupplyExhausted):
                report.stopped_by = "supply"
                roundlog.banner(f"stopping: {error}")
                error = None
        else:
            report.stopped_by = "interrupt" if stop.is_set() else "server"
            play.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await play
        report.mistakes = list(dealer.mistakes)
        report.bets_placed = players.stats.placed
        report.bets_refused = players.stats.refused
        if not server_task.done():
            # Whatever stopped the bots, no stake stays open: the round in play is voided.
            report.interrupted_round_voided = await supervisor.void_active(
                "demo stopped mid-round: every stake refunded"
                if error is None
                else f"demo failed mid-round ({type(error).__name__}): every stake refunded"
            )
            await asyncio.sleep(0.2)  # let the log print the void's events
        if error is not None:
            raise error
        return report
    finally:
        for task in tasks:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        if feed is not None:
            await feed.close()
        for client in clients:
            await client.close()
        server.should_exit = True
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await asyncio.wait_for(server_task, 15)
        device.stop()
        if camera is not None:
            camera.stop()


def demo_camera(
    deck: str, table_id: str, settings: Settings, seed: int, window_seconds: float | None = None
) -> tuple[Any, CameraConfig]:
    """A synthetic camera over the shoe, and the deck's calibration from studio photographs.

    The calibration is made once per data folder and deck, as a studio would
    (one photograph of every face on a grey mat), and kept for later runs.
    """
    from hardware_sim.camera.live import SyntheticCamera
    from hardware_sim.camera.synth import write_calibration_set
    from hardware_sim.camera.video import ROI
    from shoe_reader.camera.calibration import Calibration, CalibrationError
    from shoe_reader.camera.learn import calibrate

    folder = settings.data_dir / "camera" / deck
    path = folder.parent / f"{deck}.npz"
    try:
        Calibration.load(path)
    except CalibrationError:
        write_calibration_set(deck, folder, seed=seed, backdrop="grey")
        try:
            cal, _problems = calibrate(folder)
        except CalibrationError as exc:
            raise DemoError(f"camera calibration of {deck}: {exc.reason}") from exc
        cal.save(path)
    name = f"demo-{table_id}-{seed}"
    camera = SyntheticCamera(deck, name=name, seed=seed)
    roi = ",".join(str(v) for v in ROI)
    window = {} if window_seconds is None else {"window_seconds": window_seconds}
    return camera, CameraConfig(source=f"sim:{name}", calibration=str(path), roi=roi, **window)


READERS = ("serial", "camera", "both")
"""How a demo's shoe is read (``--reader``)."""


def read_by_text(reader: str, deck: str) -> str:
    """How the shoe's cards reach the table, for a demo's banner."""
    return {
        "serial": "read by the serial reader",
        "camera": f"read by a camera over the shoe ({deck} deck, real recognition)",
        "both": f"read by the serial reader, each card cross-checked by a camera ({deck} deck)",
    }[reader]


def _console_banner(
    roundlog: RoundLog, base_url: str, table_id: str, principals: dict[str, BotPrincipal]
) -> None:
    """The four pages and the tokens a person signs in with (the bots' own principals)."""
    roundlog.banner(f"dealer console      {base_url}/console/dealer")
    roundlog.banner(f"pit supervisor      {base_url}/console/supervisor")
    roundlog.banner(f"studio overlay      {base_url}/overlay/{table_id}   (?lang=vi)")
    roundlog.banner(f"regulator recall    {base_url}/recall/{table_id}")
    roundlog.banner(f"dealer token        {principals['dealer'].token}")
    roundlog.banner(f"supervisor token    {principals['supervisor'].token}")
    if "regulator" in principals:
        roundlog.banner(f"regulator token     {principals['regulator'].token}")


async def sign_in_dealer(api: ApiClient, table_id: str) -> None:
    """The dealer bot signs in at its table as a dealer does at the console: the dealer
    on duty is recorded, so the pit and every round's recall name it."""
    await api.post(f"/tables/{table_id}/duty")


def rounds_played(session: Session, table_id: str) -> int:
    """Rounds the table has opened so far (the log's round numbers go on from there)."""
    found = session.scalar(
        select(func.count()).select_from(RoundRow).where(RoundRow.table_id == table_id)
    )
    return int(found or 0)


def _seal(runtime: Runtime) -> int | None:
    """Sign a checkpoint at the head, so everything this session logged is under a signature."""
    with runtime.sessions.begin() as session:
        checkpoint = runtime.store.checkpoint(session)
        return checkpoint.size if checkpoint is not None else None


async def _reader_online(table: Table, api: ApiClient, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        view = await table.view(api)
        if view.data.get("reader_online"):
            return
        await asyncio.sleep(0.1)
    raise DemoError(f"the shoe reader did not come online within {timeout:g} s")


def _banner(
    roundlog: RoundLog,
    options: DemoOptions,
    report: DemoReport,
    device: VirtualShoe,
    settings: Settings,
    seed: int,
) -> None:
    ws = report.base_url.replace("http://", "ws://")
    roundlog.banner(f"livetable demo · table {options.table_id} · seed {seed} · clock in UTC")
    roundlog.banner(f"API     {report.base_url}  (OpenAPI docs at {report.base_url}/docs)")
    roundlog.banner(f"stream  {ws}/api/v1/public/tables/{options.table_id}/stream")
    if options.metrics_url is not None:
        roundlog.banner(f"metrics {options.metrics_url}  (Prometheus)")
    read_by = read_by_text(options.reader, options.camera_deck)
    roundlog.banner(
        f"shoe    virtual framed shoe on {device.pty_path} ({device.device_path}), {read_by}"
    )
    roundlog.banner(
        f"data    {report.database_url}; bot tokens in {settings.data_dir / TOKENS_FILE}"
    )
    if options.log_file is not None:
        roundlog.banner(f"log     {options.log_file} (warnings and errors also on stderr)")
    roundlog.banner(
        f"rounds  {options.rounds or 'until Ctrl-C'} · betting {options.betting_seconds:g} s · "
        f"{options.players} players · mistakes {options.mistakes:.0%} of rounds · "
        f"cut card after {options.cut_after} cards · "
        + (
            "incidents left to you at the supervisor console"
            if options.supervisor == "human"
            else "the supervisor bot resolves incidents"
        )
    )
