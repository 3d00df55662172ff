"""The `framed` dialect's wire format: CRC, frame encoding and an incremental parser.

Shared by the host-side reader and the virtual shoe, so both ends agree on the bytes
by construction. The parser is sans-I/O: it is fed whatever a serial read returned
(half a frame, three frames, line noise) and hands back complete frames and rejected
ones, which keeps it fuzzable without a port.
"""

from __future__ import annotations

import binascii
import re
from dataclasses import dataclass

STX = 0x02
ETX = 0x03
MAX_FRAME_LEN = 64
SEQ_MODULO = 1000

SHOE_TYPES = frozenset({"HLO", "HBT", "CRD", "CUT", "UNR", "EMP", "LID", "ERR"})
HOST_TYPES = frozenset({"ACK", "NAK", "LCK", "ULK", "STA"})
ACKABLE_TYPES = frozenset({"CRD", "CUT", "UNR", "EMP"})

# SEQ '|' TYPE '|' PAYLOAD: payload is printable ASCII without the separators' meaning.
_BODY = re.compile(rb"(\d{3})\|([A-Z]{3})\|([\x20-\x7e]*)")
_SEQ_PREFIX = re.compile(rb"(\d{3})\|")
_CRC_HEX = re.compile(rb"[0-9A-F]{4}")


def crc16(data: bytes) -> int:
    """CRC-16/CCITT-FALSE (poly 0x1021, init 0xFFFF): the stdlib's ``crc_hqx`` is exactly it."""
    return binascii.crc_hqx(data, 0xFFFF)


class FrameEncodeError(ValueError):
    """A frame that the protocol cannot carry (bad SEQ, TYPE or PAYLOAD, or too long)."""


def encode_frame(seq: int, frame_type: str, payload: str = "") -> bytes:
    """Build one complete frame, CRC and CR LF included."""
    if not 0 <= seq < SEQ_MODULO:
        raise FrameEncodeError(f"SEQ out of range: {seq}")
    if not re.fullmatch(r"[A-Z]{3}", frame_type):
        raise FrameEncodeError(f"TYPE must be three capital letters: {frame_type!r}")
    body = f"{seq:03d}|{frame_type}|{payload}".encode("ascii", errors="strict")
    if not _BODY.fullmatch(body):
        raise FrameEncodeError(f"PAYLOAD must be printable ASCII: {payload!r}")
    frame = bytes([STX]) + body + bytes([ETX]) + f"{crc16(body):04X}".encode("ascii") + b"\r\n"
    if len(frame) > MAX_FRAME_LEN:
        raise FrameEncodeError(f"frame is {len(frame)} bytes, the maximum is {MAX_FRAME_LEN}")
    return frame


@dataclass(frozen=True, slots=True)
class Frame:
    """A frame whose layout and CRC checked out. ``raw`` is the exact bytes received."""

    seq: int
    type: str
    payload: str
    raw: bytes


@dataclass(frozen=True, slots=True)
class BadFrame:
    """Bytes that started like a frame but are not one; ``seq`` if it could be read."""

    reason: str
    raw: bytes
    seq: int | None = None


def next_seq(seq: int) -> int:
    return (seq + 1) % SEQ_MODULO


def seq_distance(from_seq: int, to_seq: int) -> int:
    """How many steps forward from ``from_seq`` to ``to_seq``, across the 999 → 000 wrap."""
    return (to_seq - from_seq) % SEQ_MODULO


class FrameParser:
    """Incremental frame parser.

    Bytes before an STX are noise and are only counted. A frame is cut short by a new
    STX (cable pulled mid-frame, or noise that began with STX) or by growing past 64
    bytes; either way it is rejected and parsing resumes at the next STX.
    """

    def __init__(self, known_types: frozenset[str] = SHOE_TYPES | HOST_TYPES) -> None:
        self._buf = bytearray()
        self._known = known_types
        self.noise_bytes = 0

    def feed(self, data: bytes) -> list[Frame | BadFrame]:
        self._buf += data
        out: list[Frame | BadFrame] = []
        buf = self._buf
        while buf:
            start = buf.find(STX)
            if start < 0:
                self.noise_bytes += len(buf)
                buf.clear()
                break
            if start:
                self.noise_bytes += start
                del buf[:start]
            etx = buf.find(ETX, 1)
            restart = buf.find(STX, 1)
            if restart >= 0 and (etx < 0 or restart < etx or restart < etx + 7):
                # A new STX before this frame could end: this one was cut short.
                out.append(_bad("truncated frame", bytes(buf[:restart])))
                del buf[:restart]
                continue
            if etx < 0:
                if len(buf) > MAX_FRAME_LEN:
                    out.append(BadFrame("oversized frame", bytes(buf)))
                    buf.clear()
                break
            end = etx + 7  # ETX, 4 CRC digits, CR, LF
            if end > MAX_FRAME_LEN:
                out.append(_bad("oversized frame", bytes(buf[: etx + 1])))
                del buf[: etx + 1]
                continue
            if len(buf) < end:
                break
            raw = bytes(buf[:end])
            del buf[:end]
            out.append(self._check(raw, etx))
        return out

    def _check(self, raw: bytes, etx: int) -> Frame | BadFrame:
        body = raw[1:etx]
        crc_text = raw[etx + 1 : etx + 5]
        if raw[etx + 5 : etx + 7] != b"\r\n":
            return _bad("missing CR LF", raw)
        match = _BODY.fullmatch(body)
        if match is None:
            return _bad("bad layout", raw)
        if not _CRC_HEX.fullmatch(crc_text):
            return _bad("bad CRC digits", raw)
        if int(crc_text, 16) != crc16(body):
            return _bad("CRC mismatch", raw)
        seq_text, type_bytes, payload = match.groups()
        frame_type = type_bytes.decode("ascii")
        if frame_type not in self._known:
            return BadFrame(f"unknown TYPE {frame_type}", raw, int(seq_text))
        return Frame(int(seq_text), frame_type, payload.decode("ascii"), raw)

    def reset(self) -> None:
        """Forget a partial frame (the line went down; its tail will never come)."""
        self._buf.clear()


def _bad(reason: str, raw: bytes) -> BadFrame:
    match = _SEQ_PREFIX.match(raw, 1)
    return BadFrame(reason, raw, int(match.group(1)) if match else None)
