"""Shoe reader benchmark: parser throughput and byte-to-event latency through a pty.

    python benchmarks/shoe_reading.py [--frames 200000] [--cards 400]

1. Throughput, in memory: the framed parser alone, the full framed host session (parse,
   CRC, SEQ tracking, ACK encoding, event objects) and the ascii session, fed 4 KiB reads.
2. Latency, through a real pseudo-terminal: the virtual shoe deals cards one at a time;
   for each card, from the moment its last byte was written by the shoe to (a) the moment
   the reader thread stamped the bytes and (b) the moment the event came out of
   ``reader.events()`` in the asyncio consumer. p50 / p99 / max in milliseconds.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time

from hardware_sim.virtual_shoe import VirtualShoe
from shoe_reader.ascii_protocol import AsciiSession
from shoe_reader.events import CardSeen
from shoe_reader.framed_session import FramedSession
from shoe_reader.framing import FrameParser, encode_frame
from shoe_reader.serial_reader import Dialect, open_reader
from shoe_reader.session import Stamp
from table_service.rules.cards import standard_deck

CHUNK = 4096


def _chunks(data: bytes) -> list[bytes]:
    return [data[i : i + CHUNK] for i in range(0, len(data), CHUNK)]


def throughput(frames: int) -> None:
    deck = [c.code for c in standard_deck()]
    stream = b"".join(encode_frame(i % 1000, "CRD", deck[i % 52]) for i in range(frames))
    chunks = _chunks(stream)

    parser = FrameParser()
    t0 = time.perf_counter()
    n = sum(len(parser.feed(c)) for c in chunks)
    dt = time.perf_counter() - t0
    print(f"framed parser:   {n / dt:>12,.0f} frames/s  ({len(stream) / dt / 1e6:.1f} MB/s)")

    session = FramedSession("bench")
    stamp = Stamp.now()
    t0 = time.perf_counter()
    events = 0
    for c in chunks:
        got, _reply = session.receive(c, stamp)
        events += len(got)
    dt = time.perf_counter() - t0
    print(f"framed session:  {frames / dt:>12,.0f} frames/s  ({events:,} events, ACKs encoded)")

    lines = b"".join(
        f"[Game]<Card:{deck[i % 52]}>\r\n".encode() for i in range(frames)
    )  # same count of messages
    ascii_session = AsciiSession("bench")
    t0 = time.perf_counter()
    events = sum(len(ascii_session.receive(c, stamp)[0]) for c in _chunks(lines))
    dt = time.perf_counter() - t0
    print(f"ascii session:   {events / dt:>12,.0f} lines/s")


def _pct(values: list[float]) -> str:
    ms = sorted(v * 1000 for v in values)
    q = statistics.quantiles(ms, n=100, method="inclusive")
    return f"p50 {q[49]:6.3f} ms   p99 {q[98]:6.3f} ms   max {ms[-1]:6.3f} ms"


async def latency(dialect: Dialect, cards: int) -> None:
    shoe = VirtualShoe(dialect, decks=8, seed=1, cut_depth=0)
    shoe.start()
    received: dict[int, tuple[float, float]] = {}  # card index -> (read stamp, delivered)
    try:
        async with open_reader(shoe.device_path, dialect, "bench") as reader:
            done = asyncio.Event()

            async def consume() -> None:
                async for event in reader.events():
                    if isinstance(event, CardSeen):
                        received[len(received)] = (event.monotonic, time.monotonic())
                        if len(received) == cards:
                            done.set()

            task = asyncio.create_task(consume())
            while not reader.online:
                await asyncio.sleep(0.01)
            await asyncio.sleep(0.3)  # past the shoe's settle time after connection
            for i in range(cards):
                shoe.deal()
                deadline = time.monotonic() + 2
                while len(received) <= i and time.monotonic() < deadline:
                    await asyncio.sleep(0.0005)
                await asyncio.sleep(0.002)
            await asyncio.wait_for(done.wait(), 10)
            task.cancel()
    finally:
        shoe.stop()
    sent = [t.sent for t in shoe.transmissions if t.type == "CRD" and t.reached_host]
    to_read = [received[i][0] - sent[i] for i in range(cards)]
    to_event = [received[i][1] - sent[i] for i in range(cards)]
    print(f"{dialect:6} pty  bytes→reader thread  {_pct(to_read)}   (n={cards})")
    print(f"{dialect:6} pty  bytes→async consumer {_pct(to_event)}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--frames", type=int, default=200_000)
    ap.add_argument("--cards", type=int, default=400)
    args = ap.parse_args()
    print("== parser throughput (in memory, 4 KiB reads) ==")
    throughput(args.frames)
    print("== byte-to-event latency through a pseudo-terminal ==")
    asyncio.run(latency("framed", args.cards))
    asyncio.run(latency("ascii", args.cards))


if __name__ == "__main__":
    import logging

    import structlog

    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.ERROR))
    main()
