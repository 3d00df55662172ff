"""How the reader's thread reads a port: a POSIX port (a pseudo-terminal here) in one
wait and one read of everything that has arrived, other ports through pyserial."""

from __future__ import annotations

import contextlib
import os
import threading
import tty
from collections.abc import Iterator

import pytest
import serial

from shoe_reader.framing import encode_frame
from shoe_reader.serial_reader import _reads_of, _write_all


@pytest.fixture
def pty_port() -> Iterator[tuple[int, serial.SerialBase]]:
    """(the device's end, the host's port opened as the reader opens it)."""
    master, slave = os.openpty()
    tty.setraw(slave)
    path = os.ttyname(slave)
    os.close(slave)
    port = serial.serial_for_url(path, 9600, timeout=10.0, write_timeout=1.0)
    try:
        yield master, port
    finally:
        port.close()
        with contextlib.suppress(OSError):  # (a test may have pulled the cable)
            os.close(master)


def test_a_frame_arriving_while_waiting_is_read_whole(
    pty_port: tuple[int, serial.SerialBase],
) -> None:
    """The read waits for the frame and returns all of it, without pyserial's read (asked
    for what was waiting, nothing, it returned the first byte and needed a second wait)."""
    master, port = pty_port

    def no_pyserial_read(size: int = 1) -> bytes:
        raise AssertionError("a POSIX port is read directly")

    port.read = no_pyserial_read  # type: ignore[method-assign]  # the stand-in, on purpose
    read = _reads_of(port, 10.0)
    frame = encode_frame(7, "CRD", "AS")
    waiting = threading.Event()

    def device() -> None:
        waiting.wait()
        os.write(master, frame)

    writer = threading.Thread(target=device)
    writer.start()
    waiting.set()
    got = read()
    writer.join()
    assert got == frame


def test_several_frames_waiting_come_in_one_read(pty_port: tuple[int, serial.SerialBase]) -> None:
    master, port = pty_port
    frames = b"".join(encode_frame(n, "CRD", "2H") for n in range(5))
    os.write(master, frames)
    read = _reads_of(port, 10.0)
    got = read()
    while len(got) < len(frames):
        got += read()
    assert got == frames


def test_silence_and_a_cancelled_read_return_nothing(
    pty_port: tuple[int, serial.SerialBase],
) -> None:
    _, port = pty_port
    assert _reads_of(port, 0.01)() == b""  # nothing within the timeout
    read = _reads_of(port, 30.0)
    port.cancel_read()  # type: ignore[attr-defined]  # what ShoeReader.close does
    assert read() == b""  # at once, not after 30 s


def test_a_device_gone_is_an_error(pty_port: tuple[int, serial.SerialBase]) -> None:
    master, port = pty_port
    os.close(master)  # the cable pulled: the host's end reads as ready, and fails
    with pytest.raises((serial.SerialException, OSError)):
        _reads_of(port, 10.0)()


def test_acks_are_written_to_the_device(pty_port: tuple[int, serial.SerialBase]) -> None:
    master, port = pty_port
    ack = encode_frame(3, "ACK", "007")
    _write_all(port, ack)
    got = b""
    while len(got) < len(ack):
        got += os.read(master, 64)
    assert got == ack


def test_other_ports_are_read_through_pyserial() -> None:
    port = serial.serial_for_url("loop://", timeout=0.5)
    try:
        port.write(b"abc")
        read = _reads_of(port, 0.5)
        got = read()
        while len(got) < 3:
            got += read()
        assert got == b"abc"
    finally:
        port.close()
