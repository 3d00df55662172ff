"""A live synthetic camera over the shoe: every card dealt slides past it, rendered as frames.

The virtual shoe tells the camera each card that leaves it (``VirtualShoe.observers``),
whether or not the shoe's own scanner read it, as a real camera sees whatever
slides out. Frames come paced like a camera's, empty table in between cards, so
the real recognizer and voting run in the loop of a live table. A test can make
the camera see another card than the one dealt (``show_next_as``), or nothing at all
(``miss_next``), to inject a disagreement between the two readers.
"""

from __future__ import annotations

import collections
import itertools
import threading
import time
from collections.abc import Iterator

import numpy as np

from hardware_sim.camera.decks import Deck
from hardware_sim.camera.video import ROI, ShoeCamera
from shoe_reader.camera.named import SOURCES

IDLE_FRAMES = 12
"""Frames of the empty table rendered, then shown again in turn: rendering a 1280x720
frame costs the simulator about six times what reading it costs the reader, and between
cards a live table is mostly idle (a camera at 50 fps kept half a core busy drawing the
same felt). Cards are always rendered as they pass."""

REGISTRY = SOURCES
"""Cameras by name, so a table configured with ``source = "sim:NAME"`` finds the simulator's
(the reader's own table of named sources: the reader knows nothing of the simulator)."""


class SyntheticCamera:
    """A camera source (``shoe_reader.camera.source.FrameSource`` shape) fed by a virtual shoe."""

    live = True

    def __init__(
        self,
        deck: Deck,
        name: str = "sim",
        seed: int = 0,
        table: str = "felt",
        fps: float = 50.0,
    ) -> None:
        self.name = name
        self.description = f"synthetic:{name}"
        self.roi = ROI
        self.fps = fps
        self._camera = ShoeCamera(deck, seed=seed, table=table)
        self._cards: collections.deque[tuple[str, float]] = collections.deque()  # and when dealt
        self._overrides: collections.deque[str | None] = collections.deque()
        self._lock = threading.Lock()
        self._closed = threading.Event()
        self.shown: list[str | None] = []
        self._idle: list[np.ndarray] = []
        self._idle_next = 0
        self._grabbed: tuple[int, float] = (-1, 0.0)  # the last frame handed over, and when
        REGISTRY[name] = self

    # -- what the shoe and a test tell it ----------------------------------------------------
    def card_dealt(self, card: str) -> None:
        """A card left the shoe (a ``VirtualShoe`` observer); the cut card has no face."""
        with self._lock:
            self._cards.append((card, time.monotonic()))

    def show_next_as(self, card: str) -> None:
        """The next card dealt is seen as ``card`` (a disagreement with the shoe)."""
        with self._lock:
            self._overrides.append(card)

    def miss_next(self) -> None:
        """The next card dealt passes out of view (the camera sees nothing)."""
        with self._lock:
            self._overrides.append(None)

    def _empty_frame(self) -> np.ndarray:
        """The empty table: rendered the first ``IDLE_FRAMES`` times, then those again."""
        if len(self._idle) < IDLE_FRAMES:
            self._idle.append(self._camera.empty_frame())
            return self._idle[-1].copy()
        self._idle_next = (self._idle_next + 1) % IDLE_FRAMES
        return self._idle[self._idle_next].copy()

    # -- FrameSource ------------------------------------------------------------------------
    def frames(self) -> Iterator[tuple[int, np.ndarray]]:
        index = 0
        period = 1.0 / self.fps if self.fps > 0 else 0.0
        next_at = time.monotonic()
        shown_at = -float("inf")  # when the last frame handed over showed the table
        while not self._closed.is_set():
            with self._lock:
                looked = time.monotonic()  # no card dealt before this is still to show
                card, dealt = self._cards.popleft() if self._cards else (None, 0.0)
                if card is not None and self._overrides:
                    seen = self._overrides.popleft()
                else:
                    seen = card
            # Rendered one frame at a time, as each is grabbed (see ShoeCamera.card_frames).
            batch: Iterator[np.ndarray]
            if card is None:
                batch = iter((self._empty_frame(),))
            else:
                self.shown.append(seen)
                passing = self._camera.card_frames(seen) if seen and seen != "CUT" else iter(())
                empty = (self._empty_frame() for _ in range(4))
                batch = itertools.chain(passing, empty)
            for n, frame in enumerate(batch):
                if period:
                    delay = next_at - time.monotonic()
                    if delay > 0:
                        time.sleep(delay)
                    next_at = max(next_at + period, time.monotonic() - period)
                # What a camera grabbing at ``fps`` would have shown then: a card's frames
                # (and the empty table after it) follow its deal a period apart, however far
                # behind the drawing runs; the empty table, when the queue was found empty.
                now = time.monotonic()
                if card is None:
                    shown_at = max(shown_at, looked)
                elif n == 0:
                    shown_at = min(now, max(dealt, shown_at + period))
                else:
                    shown_at = min(now, shown_at + period)
                self._grabbed = (index, shown_at)
                yield index, frame
                index += 1
                if self._closed.is_set():
                    return

    def grabbed_at(self, index: int) -> float | None:
        """A frame drawn behind real time (a loaded machine draws a card's frames slower
        than a camera grabs them) is stamped when a camera would have grabbed it, so a
        cross-check with the shoe pairs the card with its deal, not with the drawing."""
        last, at = self._grabbed
        return at if last == index else None

    def close(self) -> None:
        self._closed.set()

    def reopen(self) -> bool:
        self._closed.clear()
        return True

    def stop(self) -> None:
        self.close()
        if REGISTRY.get(self.name) is self:
            del REGISTRY[self.name]
