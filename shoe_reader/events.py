"""Reader events: what any card reader (serial shoe or camera) reports.

Readers know nothing of games; they only say what passed the reader and how the
hardware is. The table service turns these into table commands. Every event can
be rendered as the one JSON line the diagnostic commands print.
"""

from __future__ import annotations

import base64
import time
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from typing import Any, ClassVar


def _utc_now() -> datetime:
    return datetime.now(UTC)


@dataclass(frozen=True, kw_only=True)
class ReaderEvent:
    """Common fields: which reader, its own sequence number if the dialect has one,
    when it was seen (monotonic for latency, UTC for the record) and the raw bytes."""

    event: ClassVar[str] = "event"

    reader_id: str
    seq: int | None = None
    monotonic: float = field(default_factory=time.monotonic)
    utc: datetime = field(default_factory=_utc_now)
    raw: bytes = b""

    def to_json(self) -> dict[str, Any]:
        """The diagnostic JSON form: ``{"event": ..., ...}`` with bytes as base64."""
        data = asdict(self)
        if data.get("captured", 0.0) is None:
            del data["captured"]  # a serial shoe's card: its JSON line stays as it always was
        if data.get("cause") == "":
            del data["cause"]  # a serial shoe's unreadable card: likewise
        data["utc"] = self.utc.isoformat()
        data["raw"] = base64.b64encode(self.raw).decode("ascii") if self.raw else ""
        return {"event": self.event, **data}


@dataclass(frozen=True, kw_only=True)
class CardSeen(ReaderEvent):
    """A card passed the reader. ``card`` is the two-character code (``TD``).

    ``captured``: a camera's card, the monotonic time the first frame of its pass was
    grabbed. The camera reports a card only after the pass has left the view and the
    votes are in, which under load can be long after it was dealt; the cross-check
    with the shoe goes by when the card was in view, not by when the report came.
    """

    event: ClassVar[str] = "card"
    card: str
    confidence: float | None = None
    frame: int | None = None
    captured: float | None = None


@dataclass(frozen=True, kw_only=True)
class BurnCard(ReaderEvent):
    """A card read while the shoe itself was in burn mode."""

    event: ClassVar[str] = "burn_card"
    card: str


@dataclass(frozen=True, kw_only=True)
class CutCardSeen(ReaderEvent):
    event: ClassVar[str] = "cut_card"


BLURRED = "blurred"
COVERED = "covered"
OUTSIDE = "outside"
UNKNOWN = "unknown"
SHOW_AGAIN = frozenset({BLURRED, COVERED, OUTSIDE})
"""Causes of an unreadable card that showing the card to the reader again can cure: the
dealer is asked to, rather than a supervisor called (:class:`UnreadableCard`)."""


@dataclass(frozen=True, kw_only=True)
class UnreadableCard(ReaderEvent):
    """A card passed but could not be read (or was read with too little confidence).
    ``captured`` as for :class:`CardSeen`.

    ``cause``: why, where the reader can tell (a camera): :data:`BLURRED` (moving too
    fast, out of focus), :data:`COVERED` (a hand or a glare over it), :data:`OUTSIDE`
    (never whole in the region it reads), :data:`UNKNOWN` (a face the calibrated deck does
    not have, or reads that disagree); empty from a reader that cannot tell.
    """

    event: ClassVar[str] = "unreadable"
    reason: str = ""
    confidence: float | None = None
    frame: int | None = None
    captured: float | None = None
    cause: str = ""

    @property
    def show_again(self) -> bool:
        """Whether showing the card to the reader again may read it (see :data:`SHOW_AGAIN`)."""
        return self.cause in SHOW_AGAIN


@dataclass(frozen=True, kw_only=True)
class ShoeEmpty(ReaderEvent):
    event: ClassVar[str] = "shoe_empty"


@dataclass(frozen=True, kw_only=True)
class LidChanged(ReaderEvent):
    event: ClassVar[str] = "lid"
    open: bool


@dataclass(frozen=True, kw_only=True)
class HardwareAlarm(ReaderEvent):
    event: ClassVar[str] = "alarm"
    code: str
    text: str = ""


@dataclass(frozen=True, kw_only=True)
class HardwareWarning(ReaderEvent):
    """A warning from the reader. ``card``: the card it is about, when it is about one
    (``possible_duplicate_after_reconnect``), so no consumer decodes a dialect's bytes."""

    event: ClassVar[str] = "warning"
    code: str
    card: str | None = None


@dataclass(frozen=True, kw_only=True)
class ReaderOnline(ReaderEvent):
    """The reader is talking; ``info`` is e.g. the HLO payload (model;firmware;serial)."""

    event: ClassVar[str] = "online"
    info: str = ""
    restarted: bool = False


@dataclass(frozen=True, kw_only=True)
class ReaderOffline(ReaderEvent):
    event: ClassVar[str] = "offline"
    reason: str


@dataclass(frozen=True, kw_only=True)
class MissedCardSuspected(ReaderEvent):
    """A sequence gap: frames between ``expected_seq`` and ``seq`` never arrived."""

    event: ClassVar[str] = "missed_card_suspected"
    expected_seq: int
    missing: int


@dataclass(frozen=True, kw_only=True)
class UnknownMessage(ReaderEvent):
    """A message the driver could not interpret; reported, never a crash."""

    event: ClassVar[str] = "unknown"
    text: str


@dataclass(frozen=True, kw_only=True)
class CameraProgress(ReaderEvent):
    """How far the camera has got: every card it will report from frames grabbed before
    ``captured`` (monotonic) has been reported.

    A camera that lags behind real time has not yet looked at the frames of a card
    the shoe has already reported; only this tells the cross-check that the camera
    really saw no card, rather than has not got there yet. Only a camera asked for it
    reports it, and only to the cross-check: it is no report of the hardware, never
    reaches a table, and is not one of the :data:`EVENT_TYPES`.
    """

    event: ClassVar[str] = "camera_progress"
    captured: float


EVENT_TYPES: dict[str, type[ReaderEvent]] = {
    cls.event: cls
    for cls in (
        CardSeen,
        BurnCard,
        CutCardSeen,
        UnreadableCard,
        ShoeEmpty,
        LidChanged,
        HardwareAlarm,
        HardwareWarning,
        ReaderOnline,
        ReaderOffline,
        MissedCardSuspected,
        UnknownMessage,
    )
}
