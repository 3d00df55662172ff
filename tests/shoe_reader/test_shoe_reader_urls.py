"""The reader opens any pyserial URL: a TCP serial server (socket://) and loop://."""

from __future__ import annotations

import asyncio
import socket
import threading
import time

import pytest

from shoe_reader.events import CardSeen, ReaderOffline, ReaderOnline
from shoe_reader.framed_session import FramedSession
from shoe_reader.framing import Frame, FrameParser, encode_frame
from shoe_reader.serial_reader import (
    ReaderStateError,
    UnknownDialectError,
    open_reader,
)

pytestmark = pytest.mark.timeout(180)


class SerialServer:
    """A serial-over-TCP device (as a terminal server would expose a shoe): every
    connection gets HLO and the given cards, and what the host answers is recorded."""

    def __init__(self, cards: list[str]) -> None:
        self.cards = cards
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.sock.settimeout(0.1)
        self.port = self.sock.getsockname()[1]
        self.received: list[list[Frame]] = []
        self.connections = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except TimeoutError:
                continue
            self.connections += 1
            frames: list[Frame] = []
            self.received.append(frames)
            with conn:
                conn.settimeout(0.05)
                parser = FrameParser()
                # pyserial drains a socket while it opens it: speak once the host has
                # spoken (its STA, written once the port is open), not after a pause.
                self._read(conn, parser, frames, 1)
                conn.sendall(encode_frame(0, "HLO", "TCP;1;X"))
                for i, card in enumerate(self.cards, start=1):
                    conn.sendall(encode_frame(i, "CRD", card))
                self._read(conn, parser, frames, 1 + len(self.cards))
            # connection closed here, every card ACKed: the reader must notice and reconnect

    def _read(self, conn: socket.socket, parser: FrameParser, frames: list[Frame], n: int) -> None:
        """The host's frames, until there are ``n`` (the host answers at its own pace on a
        loaded machine), the host hangs up or the server stops."""
        deadline = time.monotonic() + 60
        while len(frames) < n and not self._stop.is_set() and time.monotonic() < deadline:
            try:
                data = conn.recv(1024)
            except TimeoutError:
                continue
            if not data:
                return
            frames += [f for f in parser.feed(data) if isinstance(f, Frame)]

    def close(self) -> None:
        self._stop.set()
        self._thread.join(2)
        self.sock.close()


async def test_socket_url_reads_acks_and_reconnects() -> None:
    server = SerialServer(["AS", "TD"])
    events = []
    try:
        async with open_reader(
            f"socket://127.0.0.1:{server.port}",
            "framed",
            "tcp",
            offline_timeout=2.0,
            reconnect_initial=0.05,
        ) as reader:

            async def consume() -> None:
                async for event in reader:
                    events.append(event)

            task = asyncio.create_task(consume())
            deadline = time.monotonic() + 60
            while server.connections < 2 or len([e for e in events if e.event == "card"]) < 4:
                assert time.monotonic() < deadline, [e.event for e in events]
                await asyncio.sleep(0.02)
        await asyncio.wait_for(task, 30)
    finally:
        server.close()
    cards = [e.card for e in events if isinstance(e, CardSeen)]
    assert cards[:4] == ["AS", "TD", "AS", "TD"]
    answers = [(f.type, f.payload) for f in server.received[0]]
    assert answers[:3] == [("STA", ""), ("ACK", "001"), ("ACK", "002")]
    assert any(isinstance(e, ReaderOffline) for e in events)
    assert [e.restarted for e in events if isinstance(e, ReaderOnline)][:2] == [False, True]


async def test_loop_url_ignores_its_own_echo() -> None:
    async with open_reader("loop://", "framed", "loop", offline_timeout=5.0) as reader:
        deadline = time.monotonic() + 60
        while not reader.connected:
            assert time.monotonic() < deadline
            await asyncio.sleep(0.01)
        assert await reader.request_status()
        assert await reader.lock()
        deadline = time.monotonic() + 60
        session = reader.session
        assert isinstance(session, FramedSession)  # the framed dialect's
        while session.stats.echoes < 2:
            assert time.monotonic() < deadline
            await asyncio.sleep(0.01)
        assert session.stats.naks_sent == 0
        assert not reader.online


async def test_reader_refusals_are_typed() -> None:
    with pytest.raises(UnknownDialectError):
        open_reader("loop://", "morse", "x")  # type: ignore[arg-type]  # no such dialect: the test
    reader = open_reader("/nonexistent/shoe", "framed", "x", reconnect_initial=0.01)
    with pytest.raises(ReaderStateError):
        await anext(reader.events())
    async with reader:
        assert await reader.request_status() is False
        assert await reader.lock() is False  # kept, sent when the shoe connects
        assert reader.host_locked is True
    assert [e async for e in reader.events()] == []
