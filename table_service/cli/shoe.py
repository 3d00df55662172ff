"""`livetable shoe ...`: the virtual shoe and the technician's reader.

``livetable shoe sim`` puts a virtual shoe on a pseudo-terminal and prints its device
path on the first line of stdout, then runs until stopped (Ctrl-C / SIGTERM). Lines on
stdin drive it by hand (see the command's help).

``livetable shoe read`` opens a port (a device path or any pyserial URL) and prints one
JSON line per reader event; logs go to stderr, so stdout stays machine-readable.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import signal
import sys
import threading
import time
from enum import StrEnum
from typing import TYPE_CHECKING, Any

import typer

from table_service.logs import configure_for_command

# The virtual shoe and the serial reader (pyserial) are imported by the command that uses
# each: every other `livetable` command starts without them.

if TYPE_CHECKING:
    from hardware_sim.virtual_shoe import VirtualShoe

app = typer.Typer(help="Card shoe: virtual shoe and the technician's reader.", no_args_is_help=True)


class DialectChoice(StrEnum):
    framed = "framed"
    ascii = "ascii"


@app.command()
def sim(
    dialect: DialectChoice = typer.Option(DialectChoice.framed, help="Wire dialect."),
    decks: int = typer.Option(8, min=1, help="Decks in the shoe."),
    seed: int | None = typer.Option(None, help="Seed for the shuffle and the random faults."),
    faults: str | None = typer.Option(
        None, help="Random faults, e.g. 'corrupt=0.05,drop=0.02,dup=0.05,unplug=0.01'."
    ),
    rate: float | None = typer.Option(
        None, min=0.0, help="Deal by itself at this many cards per second."
    ),
    cut_depth: int = typer.Option(52, help="Cards behind the cut card."),
    heartbeat: float = typer.Option(1.0, min=0.01, help="Seconds between heartbeats."),
    link: str | None = typer.Option(None, help="Path of the device symlink to create."),
    log_level: str | None = typer.Option(
        None, help="Log level, logs on stderr (default: LIVETABLE_LOG_LEVEL, else INFO)."
    ),
) -> None:
    """Run a virtual shoe on a pseudo-terminal; prints its device path, then runs.

    Stop it with Ctrl-C or SIGTERM. Commands on stdin, one a line: deal [N], noscan,
    unread, jam, clear, unplug, replug, reboot, freeze, burn on|off, game, warn N,
    lid open|closed, quit.
    """
    from hardware_sim.faults import FaultSpecError, parse_fault_spec
    from hardware_sim.virtual_shoe import VirtualShoe

    configure_for_command(log_level, default="INFO")
    try:
        spec = parse_fault_spec(faults)
    except FaultSpecError as exc:
        raise typer.BadParameter(str(exc), param_hint="--faults") from exc
    shoe = VirtualShoe(
        dialect.value,
        decks=decks,
        seed=seed,
        cut_depth=cut_depth,
        faults=spec,
        rate=rate or None,
        heartbeat=heartbeat,
        link_path=link,
    )
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    with shoe:
        print(shoe.device_path, flush=True)
        print(f"pty {shoe.pty_path}", file=sys.stderr, flush=True)
        threading.Thread(target=_stdin_commands, args=(shoe, stop), daemon=True).start()
        try:
            while not stop.wait(0.2):
                pass
        except KeyboardInterrupt:
            pass
    print(f"dealt {len(shoe.dealt)} cards", file=sys.stderr)


def _stdin_commands(shoe: VirtualShoe, stop: threading.Event) -> None:
    from hardware_sim.virtual_shoe import ShoeError

    for line in sys.stdin:
        words = line.split()
        if not words:
            continue
        try:
            if _command(shoe, words):
                break
        except (ShoeError, ValueError) as exc:
            print(f"refused: {exc}", file=sys.stderr, flush=True)
    else:
        return  # stdin closed: keep running until a signal
    stop.set()


def _command(shoe: VirtualShoe, words: list[str]) -> bool:
    """One stdin command; returns True to quit."""
    cmd, args = words[0].lower(), words[1:]
    actions: dict[str, Any] = {
        "unread": shoe.unread_next,
        "jam": shoe.jam,
        "clear": shoe.clear_jam,
        "unplug": shoe.unplug,
        "replug": shoe.replug,
        "reboot": shoe.reboot,
        "freeze": shoe.freeze,
        "game": shoe.new_game,
    }
    if cmd == "quit":
        return True
    if cmd == "deal":
        for _ in range(int(args[0]) if args else 1):
            print(f"dealt {shoe.deal()}", file=sys.stderr, flush=True)
    elif cmd == "noscan":
        print(f"dealt unscanned {shoe.deal(scan=False)}", file=sys.stderr, flush=True)
    elif cmd == "burn":
        shoe.set_burn_mode(bool(args) and args[0].lower() == "on")
    elif cmd == "warn":
        shoe.warn(int(args[0], 0) if args else 1)
    elif cmd == "lid":
        (shoe.open_lid if args and args[0].lower() == "open" else shoe.close_lid)()
    elif cmd in actions:
        actions[cmd]()
    else:
        print(f"unknown command {cmd!r}", file=sys.stderr, flush=True)
    return False


@app.command()
def read(
    port: str = typer.Option(..., help="Device path or pyserial URL (socket://host:port, ...)."),
    dialect: DialectChoice = typer.Option(DialectChoice.framed, help="Wire dialect."),
    baud: int = typer.Option(9600, help="Baud rate."),
    reader_id: str = typer.Option("shoe", help="Reader id carried by every event."),
    offline_timeout: float = typer.Option(3.0, help="Seconds without a heartbeat → offline."),
    count: int | None = typer.Option(None, min=1, help="Stop after this many events."),
    duration: float | None = typer.Option(None, min=0.0, help="Stop after this many seconds."),
    log_level: str | None = typer.Option(
        None, help="Log level, logs on stderr (default: LIVETABLE_LOG_LEVEL, else WARNING)."
    ),
) -> None:
    """Print one JSON line per reader event (the technician's diagnostic tool)."""
    if not port.strip():
        raise typer.BadParameter("give a device path or a pyserial URL", param_hint="--port")
    configure_for_command(log_level, default="WARNING")
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(_read(port, dialect.value, baud, reader_id, offline_timeout, count, duration))


async def _read(
    port: str,
    dialect: str,
    baud: int,
    reader_id: str,
    offline_timeout: float,
    count: int | None,
    duration: float | None,
) -> None:
    from shoe_reader.serial_reader import open_reader

    deadline = None if duration is None else time.monotonic() + duration
    seen = 0
    async with open_reader(
        port,
        dialect,  # type: ignore[arg-type]  # a DialectChoice value: one of Dialect's
        reader_id,
        baud,
        offline_timeout=offline_timeout,
    ) as reader:
        events = reader.events()
        while count is None or seen < count:
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                break
            try:
                event = await asyncio.wait_for(anext(events), left)
            except (TimeoutError, StopAsyncIteration):
                break
            print(json.dumps(event.to_json()), flush=True)
            seen += 1
