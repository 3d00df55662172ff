"""Fault injection for the virtual shoe: on demand (tests) or at random with a seed (CLI).

A spec string is comma-separated ``kind=probability`` pairs, e.g.
``corrupt=0.05,drop=0.02,dup=0.05,dribble=0.1,noise=0.05,unread=0.02,jam=0.01,unplug=0.01``.

* wire faults, drawn for every frame / line put on the wire: ``corrupt`` (one byte
  altered), ``drop`` (never sent), ``dup`` (sent twice), ``dribble`` (sent one byte at a
  time), ``noise`` (a burst of random bytes before it);
* card faults, drawn for every card dealt: ``unread`` (the card passes unread), ``jam``
  (the shoe jams instead of releasing the card; clears itself after the outage time);
* line faults, drawn once a second: ``unplug`` (cable pulled, plugged back after the
  outage time), ``reboot`` (shoe restarts: HLO, SEQ back to 000), ``freeze`` (the shoe
  stops talking for the outage time: heartbeats stop).
"""

from __future__ import annotations

import random
import threading
from dataclasses import dataclass, field

WIRE_FAULTS = ("corrupt", "drop", "dup", "dribble", "noise")
CARD_FAULTS = ("unread", "jam")
LINE_FAULTS = ("unplug", "reboot", "freeze")
FAULT_KINDS = WIRE_FAULTS + CARD_FAULTS + LINE_FAULTS
_ALIASES = {"duplicate": "dup", "corrupted": "corrupt", "unreadable": "unread"}


class FaultSpecError(ValueError):
    """A ``--faults`` spec that names an unknown fault or an impossible probability."""


@dataclass(frozen=True)
class FaultSpec:
    probabilities: dict[str, float] = field(default_factory=dict)

    def p(self, kind: str) -> float:
        return self.probabilities.get(kind, 0.0)

    def __bool__(self) -> bool:
        return any(self.probabilities.values())


def parse_fault_spec(text: str | None) -> FaultSpec:
    """``"corrupt=0.05,drop=0.02"`` → :class:`FaultSpec`. Empty or None: no faults."""
    if not text or not text.strip():
        return FaultSpec()
    probabilities: dict[str, float] = {}
    for part in text.split(","):
        if not part.strip():
            continue
        name, eq, value = part.partition("=")
        kind = _ALIASES.get(name.strip().lower(), name.strip().lower())
        if kind not in FAULT_KINDS:
            raise FaultSpecError(f"unknown fault {name.strip()!r}; known: {', '.join(FAULT_KINDS)}")
        if not eq:
            raise FaultSpecError(f"fault {kind!r} needs a probability, e.g. {kind}=0.05")
        try:
            p = float(value)
        except ValueError:
            raise FaultSpecError(f"probability of {kind!r} is not a number: {value!r}") from None
        if not 0.0 <= p <= 1.0:
            raise FaultSpecError(f"probability of {kind!r} must be within 0..1, got {p}")
        probabilities[kind] = p
    return FaultSpec(probabilities)


@dataclass
class _Forced:
    count: int
    frame_type: str | None


class FaultPlan:
    """Decides, per frame / card / second, which faults strike: forced ones first, then
    random ones drawn from the spec with a seeded generator (reproducible runs)."""

    def __init__(self, spec: FaultSpec | None = None, seed: int | None = None) -> None:
        self.spec = spec or FaultSpec()
        self.rng = random.Random(seed)
        self._forced: dict[str, list[_Forced]] = {}
        self._lock = threading.Lock()
        self.struck: dict[str, int] = {}

    def force(self, kind: str, count: int = 1, frame_type: str | None = None) -> None:
        """The next ``count`` frames (of ``frame_type`` if given) suffer ``kind``."""
        if kind not in WIRE_FAULTS + CARD_FAULTS:
            raise FaultSpecError(f"{kind!r} cannot be forced per frame; use the shoe's method")
        if count < 1:
            raise FaultSpecError(f"count must be at least 1, got {count}")
        with self._lock:
            self._forced.setdefault(kind, []).append(_Forced(count, frame_type))

    def clear(self) -> None:
        with self._lock:
            self._forced.clear()

    def strikes(self, kind: str, frame_type: str | None = None) -> bool:
        with self._lock:
            for forced in self._forced.get(kind, []):
                if forced.frame_type is None or forced.frame_type == frame_type:
                    forced.count -= 1
                    if forced.count == 0:
                        self._forced[kind].remove(forced)
                    self._count(kind)
                    return True
        p = self.spec.p(kind)
        if p and self.rng.random() < p:
            self._count(kind)
            return True
        return False

    def _count(self, kind: str) -> None:
        self.struck[kind] = self.struck.get(kind, 0) + 1
