"""The `ascii` dialect: line-oriented shoes with no checksum and no acknowledgement.

Messages are picked out of the byte stream as ``[Mode]<Body>`` tokens rather than by
splitting on line ends, so a corrupted or missing line end, or noise glued to the front
of a line, costs only the damaged message: parsing resynchronises on the next ``[`` or
``<``. Whatever is left between tokens is reported as an unknown message, never dropped
silently and never a crash.

Mapping (the spec gives no other line forms):

* ``[Game]<Card:4S>`` / ``[GameAlarm]<Card:..>`` → :class:`CardSeen`;
  cards, alarms and ``<Game>`` need a known mode in front, else they are unknown (a lost
  ``[`` must not turn a burn card into a game card);
  ``[Manual Burn Cards]<Card:KD>`` → :class:`BurnCard`. Rank and suit in either order,
  ten as ``T``, ``10`` or ``0``; the event carries the canonical code (``TD``).
* ``<Alarm:E3 ...>`` → :class:`UnreadableCard` (the only way this dialect says a card
  passed unread); ``<Alarm:E5 ...>`` → :class:`ShoeEmpty`; any other alarm →
  :class:`HardwareAlarm` with the code and text.
* ``<W0x01>`` → :class:`HardwareWarning` with code ``W0x01``.
* ``<Game>`` (the dealer pressed the shoe's new-game button) → :class:`HardwareWarning`
  with code ``new_game``: there is no dedicated event type for it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TypeVar

import structlog

from shoe_reader.events import (
    BurnCard,
    CardSeen,
    HardwareAlarm,
    HardwareWarning,
    ReaderEvent,
    ReaderOffline,
    ReaderOnline,
    ShoeEmpty,
    UnknownMessage,
    UnreadableCard,
)
from shoe_reader.session import Stamp

log = structlog.get_logger(__name__)

E = TypeVar("E", bound=ReaderEvent)

TOKEN = re.compile(rb"(?:\[([^\[\]<>\r\n]*)\][ \t]*)?<([^<>\r\n]*)>")
MAX_PENDING = 256
"""A partial message longer than this is noise: real lines are a few dozen bytes."""

GAME_MODES = frozenset({"game", "gamealarm"})
BURN_MODES = frozenset({"manual burn cards"})
NEW_GAME = "new_game"

_RANK = r"(A|[2-9]|10|0|T|J|Q|K)"
_SUIT = r"([SHDC])"
_RANK_SUIT = re.compile(_RANK + _SUIT)
_SUIT_RANK = re.compile(_SUIT + _RANK)
_WARNING = re.compile(r"W0x[0-9A-Fa-f]{1,4}")


def normalise_card(text: str) -> str | None:
    """``4S``, ``H3``, ``10D``, ``0D``, ``DT`` → canonical two-character code, else None."""
    code = text.strip().upper()
    if m := _RANK_SUIT.fullmatch(code):
        rank, suit = m.groups()
    elif m := _SUIT_RANK.fullmatch(code):
        suit, rank = m.groups()
    else:
        return None
    if rank in ("10", "0"):
        rank = "T"
    return rank + suit


@dataclass(frozen=True, slots=True)
class AsciiMessage:
    """One token or one run of junk, as bytes, in stream order."""

    raw: bytes
    mode: str | None
    body: str | None
    """None for junk (bytes that are no message)."""


class AsciiTokenizer:
    """Incremental: feed bytes, get complete messages and junk, in order."""

    def __init__(self) -> None:
        self._buf = b""

    def feed(self, data: bytes) -> list[AsciiMessage]:
        buf = self._buf + data
        out: list[AsciiMessage] = []
        pos = 0
        for m in TOKEN.finditer(buf):
            self._junk(buf[pos : m.start()], out)
            mode_raw, body_raw = m.group(1), m.group(2)
            mode = None if mode_raw is None else mode_raw.decode("ascii", errors="replace")
            try:
                body = body_raw.decode("ascii")
            except UnicodeDecodeError:
                out.append(AsciiMessage(m.group(0), None, None))
            else:
                out.append(AsciiMessage(m.group(0), mode, body))
            pos = m.end()
        rest = buf[pos:]
        cut = max(rest.rfind(b"\n"), rest.rfind(b"\r"))
        if cut >= 0:
            self._junk(rest[: cut + 1], out)
            rest = rest[cut + 1 :]
        if len(rest) > MAX_PENDING:
            self._junk(rest, out)
            rest = b""
        self._buf = rest
        return out

    def reset(self) -> None:
        self._buf = b""

    @staticmethod
    def _junk(chunk: bytes, out: list[AsciiMessage]) -> None:
        for piece in re.split(rb"[\r\n]+", chunk):
            if piece.strip():
                out.append(AsciiMessage(piece, None, None))


class AsciiSession:
    """Host side of the ascii dialect: bytes in, reader events out, nothing to answer."""

    def __init__(self, reader_id: str) -> None:
        self.reader_id = reader_id
        self.tokenizer = AsciiTokenizer()
        self.online = False
        self.shoe_locked: bool | None = None
        self.host_locked: bool | None = None
        self.unknown = 0

    def host_frame(self, frame_type: str, payload: str = "") -> bytes:
        """The ascii shoe takes no commands; nothing is sent."""
        return b""

    def connection_made(self, stamp: Stamp) -> list[ReaderEvent]:
        """No heartbeat in this dialect: an open port is all we can know."""
        self.tokenizer.reset()
        self.online = True
        return [self._event(ReaderOnline, stamp, b"", info="ascii")]

    def connection_lost(self, reason: str, stamp: Stamp) -> list[ReaderEvent]:
        self.tokenizer.reset()
        if not self.online:
            return []
        self.online = False
        return [self._event(ReaderOffline, stamp, b"", reason=reason)]

    def poll(self, stamp: Stamp) -> list[ReaderEvent]:
        return []

    def silent_for(self, now: float) -> float:
        return 0.0

    def receive(self, data: bytes, stamp: Stamp) -> tuple[list[ReaderEvent], bytes]:
        events = [self.interpret(msg, stamp) for msg in self.tokenizer.feed(data)]
        return events, b""

    def interpret(self, msg: AsciiMessage, stamp: Stamp) -> ReaderEvent:
        body = msg.body
        if body is None:
            return self._unknown(msg, stamp)
        head, colon, rest = body.partition(":")
        head = head.strip()
        if not colon and _WARNING.fullmatch(body.strip()):
            return self._event(HardwareWarning, stamp, msg.raw, code=body.strip())
        mode = (msg.mode or "").strip().casefold()
        if mode not in GAME_MODES | BURN_MODES:
            # Cards, alarms and the game marker always come with a mode; without one
            # (or with one we do not know) we cannot tell a burn card from a game card.
            return self._unknown(msg, stamp)
        if body.strip() == "Game" and not colon:
            return self._event(HardwareWarning, stamp, msg.raw, code=NEW_GAME)
        if head == "Card" and colon:
            card = normalise_card(rest)
            if card is not None and mode in GAME_MODES:
                return self._event(CardSeen, stamp, msg.raw, card=card)
            if card is not None and mode in BURN_MODES:
                return self._event(BurnCard, stamp, msg.raw, card=card)
            return self._unknown(msg, stamp)
        if head == "Alarm" and colon:
            code, _, text = rest.strip().partition(" ")
            if not re.fullmatch(r"[A-Za-z]+\d+", code):
                return self._unknown(msg, stamp)
            if code.upper() == "E3":
                return self._event(UnreadableCard, stamp, msg.raw, reason=rest.strip())
            if code.upper() == "E5":
                return self._event(ShoeEmpty, stamp, msg.raw)
            return self._event(HardwareAlarm, stamp, msg.raw, code=code, text=text.strip())
        return self._unknown(msg, stamp)

    def _unknown(self, msg: AsciiMessage, stamp: Stamp) -> UnknownMessage:
        self.unknown += 1
        text = "".join(chr(b) if 0x20 <= b < 0x7F and b != 0x5C else f"\\x{b:02x}" for b in msg.raw)
        log.info("unknown ascii message", reader_id=self.reader_id, text=text)
        return self._event(UnknownMessage, stamp, msg.raw, text=text)

    def _event(self, cls: type[E], stamp: Stamp, raw: bytes, **fields: object) -> E:
        return cls(
            reader_id=self.reader_id,
            monotonic=stamp.monotonic,
            utc=stamp.utc,
            raw=raw,
            **fields,  # type: ignore[arg-type]  # each caller passes its event class's fields
        )
