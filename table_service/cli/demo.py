"""``livetable demo``: the whole product on this machine, with bots and a live round log."""

from __future__ import annotations

import asyncio
import signal
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer
from rich.rule import Rule
from rich.text import Text

from table_service.config import Settings
from table_service.logs import configure_for_command
from table_service.terminal import make_console, rule_width

# The demo itself (the table service, its API, the bots, the virtual shoe) is imported when
# the command runs: every other `livetable` command starts without it.

if TYPE_CHECKING:
    from rich.console import Console

    from table_service.demo.run import DemoReport
    from table_service.demo.xidach import XiDachDemoOptions, XiDachReport

DEMO_METRICS = "127.0.0.1:9464"
"""The demo's metrics listener unless told otherwise (Prometheus exporters' usual port)."""

LOG_FILE = "livetable.log"
"""The service's own log, in the data folder: the terminal is for the round log."""


MISTAKES_LISTED = 5


def mistakes_line(mistakes: list[tuple[str, str]]) -> str:
    """The dealer's mistakes, ``(round_id, kind)`` in order: each one while they are few;
    beyond, their count by kind and the first few (a demo left running for hours made
    one line of thousands of characters)."""
    listed = ", ".join(f"{kind} in {rid}" for rid, kind in mistakes[:MISTAKES_LISTED])
    if len(mistakes) <= MISTAKES_LISTED:
        return f"dealer mistakes: {listed}"
    kinds: dict[str, int] = {}
    for _, kind in mistakes:
        kinds[kind] = kinds.get(kind, 0) + 1
    counts = ", ".join(f"{k} {v}" for k, v in sorted(kinds.items()))
    return f"dealer mistakes: {len(mistakes)} ({counts}); the first: {listed}"


def demo(
    port: int | None = typer.Option(
        None, help="API port (default LIVETABLE_PORT or 8000; 0: any free port)"
    ),
    host: str | None = typer.Option(
        None, help="API bind address (default LIVETABLE_HOST or 127.0.0.1)"
    ),
    data_dir: Path | None = typer.Option(
        None, help="Data folder (SQLite, signing key, bot tokens); default ./livetable-data"
    ),
    rounds: int = typer.Option(0, min=0, help="Rounds to play; 0 = until Ctrl-C"),
    seed: int | None = typer.Option(None, help="Seed for shoes, bets and mistakes"),
    betting_seconds: float = typer.Option(5.0, min=0.5, max=600, help="Betting countdown"),
    mistakes: float = typer.Option(
        0.25, min=0.0, max=1.0, help="Share of rounds in which the dealer makes a mistake"
    ),
    players: int = typer.Option(
        3,
        min=1,
        max=50,
        help="Player bots (blackjack: seats, up to 7; xidach: punters, up to the profile's "
        "seats: room 8, forced-draw 6, classic 5)",
    ),
    decision_seconds: int = typer.Option(
        10, min=1, max=120, help="Blackjack: a seated player's decision timer"
    ),
    cut_after: int = typer.Option(
        60, min=20, help="The cut card comes out after this many cards of each shoe"
    ),
    decks: int = typer.Option(8, min=6, max=8, help="Decks per shoe"),
    log_level: str | None = typer.Option(
        None,
        help="Level of the service's own log, written to livetable.log in the data folder; "
        "warnings and errors at or above it also go to stderr "
        "(default: LIVETABLE_LOG_LEVEL, else INFO)",
    ),
    game: str = typer.Option(
        "baccarat", help="Game at the demo table: baccarat, blackjack (seed 000) or xidach"
    ),
    reader: str = typer.Option(
        "serial",
        help="serial: the shoe's scanner; camera: a synthetic camera over the shoe (real "
        "recognition of a published deck); both: the shoe, every card cross-checked by the "
        "camera",
    ),
    camera_deck: str = typer.Option(
        "plastic", help="--reader camera|both: the published deck the camera sees"
    ),
    profile: str = typer.Option("room", help="xidach: room, classic or forced-draw"),
    timer_seconds: int = typer.Option(
        2, min=0, max=600, help="xidach: every decision timer in seconds (0: the profile's own)"
    ),
    metrics: str | None = typer.Option(
        None,
        "--metrics",
        help="Prometheus metrics on this HOST:PORT (default: LIVETABLE_METRICS_ADDRESS, else "
        f"{DEMO_METRICS}, or any free port if that one is taken); 'off': none",
    ),
    supervisor: str = typer.Option(
        "bot",
        help="bot: the supervisor bot resolves every incident by its procedure; human: "
        "incidents are left to you at the pit supervisor console (the bots wait)",
    ),
) -> None:
    """Run a live table (baccarat; --game blackjack or xidach) on a simulated shoe, with
    dealer, supervisor and player bots.

    Everything runs here: SQLite in the data folder; a virtual framed shoe on a pseudo-terminal,
    read by the real serial reader; the table service and its API on http://HOST:PORT.

    The round log (standard output) shows every round's bets, cards, outcome and payouts,
    and every incident with the procedure applied; the service's own log goes to a file in
    the data folder. Ctrl-C voids a round in play (stakes refunded) and stops.
    """
    from table_service.demo.bots import SUPERVISORS
    from table_service.demo.run import READERS

    if game not in ("baccarat", "blackjack", "xidach"):
        raise typer.BadParameter("baccarat, blackjack or xidach", param_hint="--game")
    if reader not in READERS:
        raise typer.BadParameter(f"one of {', '.join(READERS)}", param_hint="--reader")
    if reader != "serial":
        from shoe_reader.camera.extra import CameraExtraMissing, require_camera

        try:  # before anything starts: a base install says which extra, in one line
            require_camera(f"livetable demo --reader {reader}")
        except CameraExtraMissing as exc:
            typer.echo(str(exc), err=True)
            raise typer.Exit(2) from None
    if supervisor not in SUPERVISORS:
        raise typer.BadParameter(f"one of {', '.join(SUPERVISORS)}", param_hint="--supervisor")
    settings = Settings(data_dir=data_dir) if data_dir else Settings()
    exposer = _metrics(metrics or settings.metrics_address, settings.metrics_path)
    try:
        _demo(
            settings, game, reader, port, host, data_dir, rounds, seed, betting_seconds,
            mistakes, players, decision_seconds, cut_after, decks, log_level, camera_deck,
            profile, timer_seconds, exposer.url if exposer is not None else None, supervisor,
        )  # fmt: skip
    finally:
        if exposer is not None:
            exposer.close()


def _metrics(address: str | None, path: str) -> Any:
    """The demo's metrics listener, printed; the default port falls back to a free one."""
    if address == "off":
        return None
    from table_service.metrics import MetricsAddressError, serve_metrics

    try:
        exposer = serve_metrics(address or DEMO_METRICS, path)
    except MetricsAddressError as exc:
        if address is not None:
            raise typer.BadParameter(str(exc), param_hint="--metrics") from exc
        exposer = serve_metrics(DEMO_METRICS.rsplit(":", 1)[0] + ":0", path)
    return exposer


def _demo(
    settings: Settings,
    game: str,
    reader: str,
    port: int | None,
    host: str | None,
    data_dir: Path | None,
    rounds: int,
    seed: int | None,
    betting_seconds: float,
    mistakes: float,
    players: int,
    decision_seconds: int,
    cut_after: int,
    decks: int,
    log_level: str | None,
    camera_deck: str,
    profile: str,
    timer_seconds: int,
    metrics_url: str | None,
    supervisor: str,
) -> None:
    from table_service.demo.run import DemoError, DemoOptions, run_demo
    from table_service.demo.shoestack import ShoeStack

    if game == "xidach":
        from table_service.demo.xidach import XiDachDemoOptions

        log_file = settings.data_dir / LOG_FILE
        configure_for_command(log_level, default="INFO", log_file=log_file)
        _xidach(
            XiDachDemoOptions(
                profile=profile,
                host=host or settings.host,
                port=settings.port if port is None else port,
                data_dir=data_dir,
                rounds=rounds,
                seed=seed,
                punters=players,
                timer_seconds=timer_seconds or None,
                betting_seconds=betting_seconds,
                mistakes=mistakes,
                supervisor=supervisor,
                log_file=log_file,
                reader=reader,
                camera_deck=camera_deck,
                metrics_url=metrics_url,
            )
        )
        return
    try:
        ShoeStack.check_cut_after(decks, cut_after)
    except ValueError as exc:
        raise typer.BadParameter(str(exc), param_hint="--cut-after") from exc
    log_file = settings.data_dir / LOG_FILE
    configure_for_command(log_level, default="INFO", log_file=log_file)
    console = make_console(highlight=False)
    err = make_console(stderr=True, highlight=False)
    options = DemoOptions(
        host=host or settings.host,
        port=settings.port if port is None else port,
        data_dir=data_dir,
        rounds=rounds,
        seed=seed,
        betting_seconds=betting_seconds,
        mistakes=mistakes,
        players=players,
        game=game,
        decision_seconds=decision_seconds,
        cut_after=cut_after,
        decks=decks,
        log_file=log_file,
        reader=reader,
        camera_deck=camera_deck,
        metrics_url=metrics_url,
        supervisor=supervisor,
    )

    async def main() -> DemoReport:
        stop = asyncio.Event()
        _on_ctrl_c(console, stop)
        return await run_demo(options, console, stop=stop)

    try:
        report = asyncio.run(main())
    except DemoError as exc:
        err.print(f"[red]demo:[/red] {exc}")
        raise typer.Exit(2) from exc
    _summary(console, report)


def _plural(count: int, word: str) -> str:
    return f"{count} {word}" if count == 1 else f"{count} {word}s"


def _on_ctrl_c(console: Console, stop: asyncio.Event) -> None:
    """Ctrl-C (or SIGTERM) stops the demo cleanly: the round in play is voided and
    refunded and a checkpoint signed; a second Ctrl-C forces."""
    loop = asyncio.get_running_loop()

    def on_signal() -> None:
        console.print("\n[bold]stopping…[/bold] (Ctrl-C again to force)")
        stop.set()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(sig)

    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, on_signal)


def _summary(console: Console, report: DemoReport) -> None:
    totals = report.totals
    console.print(Rule(Text("demo finished", style="bold")), width=rule_width(console))
    rounds = totals.rounds_settled + totals.rounds_voided
    outcomes = ", ".join(f"{k} {v}" for k, v in sorted(totals.outcomes.items()))
    console.print(
        f"{_plural(rounds, 'round')}: {totals.rounds_settled} settled, "
        f"{totals.rounds_voided} voided" + (f" · outcomes {outcomes}" if outcomes else "")
    )
    console.print(
        f"bets: {report.bets_placed} placed, {report.bets_refused} refused · staked "
        f"{totals.staked:,}, returned {totals.returned:,} on settled rounds"
    )
    _incidents_and_mistakes(console, report)
    verify = "livetable audit verify"
    if report.data_dir.resolve() != Settings.model_fields["data_dir"].default.resolve():
        verify += f" --data-dir {report.data_dir}"
    console.print(f"seed {report.seed} · data in {report.data_dir} · check the log with", end=" ")
    console.print(verify, style="bold", soft_wrap=True)


def _incidents_and_mistakes(console: Console, report: DemoReport | XiDachReport) -> None:
    """The lines every game's summary ends with: incidents by kind, the dealer's mistakes,
    the round Ctrl-C voided."""
    totals = report.totals
    kinds: dict[str, int] = {}
    for kind in totals.incidents.values():
        kinds[kind] = kinds.get(kind, 0) + 1
    open_ids = sorted(set(totals.incidents) - set(totals.resolved))
    detail = ", ".join(f"{k} {v}" for k, v in sorted(kinds.items()))
    console.print(
        f"incidents: {len(totals.incidents)} raised"
        + (f" ({detail})" if detail else "")
        + f", {len(open_ids)} left open"
    )
    if report.mistakes:
        console.print(mistakes_line(report.mistakes))
    if report.interrupted_round_voided:
        console.print("the round in progress at Ctrl-C was voided and its stakes refunded")


def _xidach(options: XiDachDemoOptions) -> None:
    """A live Xì Dách table with punter bots (and a seated banker in ``room``)."""
    from table_service.demo.run import DemoError
    from table_service.demo.xidach import run_xidach_demo

    console = make_console(highlight=False)
    err = make_console(stderr=True, highlight=False)

    async def main() -> XiDachReport:
        stop = asyncio.Event()
        _on_ctrl_c(console, stop)
        return await run_xidach_demo(options, console, stop=stop)

    try:
        report = asyncio.run(main())
    except DemoError as exc:
        err.print(f"[red]demo:[/red] {exc}")
        raise typer.Exit(2) from exc
    _xidach_summary(console, report, options)
    if report.settle_checks_failed:
        raise typer.Exit(1)


def _xidach_summary(console: Console, report: XiDachReport, options: XiDachDemoOptions) -> None:
    """The same summary as the other games', with what only Xì Dách has: the bank."""
    console.print(Rule(Text("demo finished", style="bold")), width=rule_width(console))
    rounds = report.rounds_settled + report.rounds_voided
    console.print(
        f"{_plural(rounds, 'round')}: {report.rounds_settled} settled, "
        f"{report.rounds_voided} voided in {report.seconds:.0f} s · "
        f"{report.cards_pulled} cards from {_plural(report.decks, 'fresh deck')}"
    )
    house = report.staked - report.returned - report.bank_net
    console.print(
        f"punters' bets: staked {report.staked:,}, returned {report.returned:,} on settled "
        f"rounds · {_plural(report.timeouts, 'timer')} left to run out, "
        f"{_plural(report.leaves, 'punter')} left mid-round"
    )
    if options.profile == "room":
        console.print(
            f"the bank: {'+' if report.bank_net >= 0 else '−'}{abs(report.bank_net):,} for its "
            f"holders · passed {_plural(report.bank_passes, 'time')} "
            f"({_plural(report.banker_leaves, 'banker')} left) · "
            f"{_plural(report.bank_refusals, 'bank bid')} refused · room closed "
            f"{_plural(report.rooms_closed, 'time')} · the house: {house:+,} (commission)"
        )
    else:
        console.print(f"the house: {house:+,}")
    _incidents_and_mistakes(console, report)
    console.print(
        f"settlement checked against `livetable settle xidach`: "
        f"{report.settle_checks_passed} passed, {report.settle_checks_failed} failed"
    )
    for problem in report.problems:
        console.print(f"[red]{problem}[/red]")
    data_dir = options.data_dir or Settings().data_dir
    verify = "livetable audit verify"
    if data_dir.resolve() != Settings.model_fields["data_dir"].default.resolve():
        verify += f" --data-dir {data_dir}"
    console.print(f"seed {report.seed} · data in {data_dir} · check the log with", end=" ")
    console.print(verify, style="bold", soft_wrap=True)
