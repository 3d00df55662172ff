"""What the serial I/O loop needs from a dialect: a sans-I/O session.

Each dialect turns bytes into reader events (and, for `framed`, bytes to write back);
the I/O loop in :mod:`shoe_reader.serial_reader` is the same for both.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Protocol

from shoe_reader.events import ReaderEvent


@dataclass(frozen=True, slots=True)
class Stamp:
    """When the bytes arrived: monotonic for latency, UTC for the record."""

    monotonic: float
    utc: datetime

    @classmethod
    def now(cls) -> Stamp:
        return cls(time.monotonic(), datetime.now(UTC))


class DialectSession(Protocol):
    reader_id: str
    online: bool
    shoe_locked: bool | None
    host_locked: bool | None

    def host_frame(self, frame_type: str, payload: str = "") -> bytes: ...

    def connection_made(self, stamp: Stamp) -> list[ReaderEvent]: ...

    def connection_lost(self, reason: str, stamp: Stamp) -> list[ReaderEvent]: ...

    def poll(self, stamp: Stamp) -> list[ReaderEvent]: ...

    def silent_for(self, now: float) -> float: ...

    def receive(self, data: bytes, stamp: Stamp) -> tuple[list[ReaderEvent], bytes]: ...
