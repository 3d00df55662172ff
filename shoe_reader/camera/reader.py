"""The camera reader: frames in, the same reader events as the serial shoes out."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator

import structlog

from shoe_reader.camera.recognize import Recognizer
from shoe_reader.camera.source import FrameSource
from shoe_reader.camera.voting import Voter, VotingRules
from shoe_reader.events import CameraProgress, ReaderEvent, ReaderOffline, ReaderOnline

log = structlog.get_logger(__name__)


STOPPED = "camera stopped delivering frames"


class CameraReader:
    """Runs every frame of a source through the recognizer and the voting.

    Reports ``online`` when the source opens and ``offline`` when it stops
    delivering frames (end of file, camera unplugged), so the table service
    sees a camera exactly as it sees a serial shoe. A live camera or stream
    that drops is reopened (``reconnect`` attempts, waits doubling from
    ``reconnect_delay`` seconds up to a minute) and reported ``online`` again
    with ``restarted`` set; a card in view when it dropped ends its pass there.

    Each frame is stamped (``clock``, monotonic) as the source hands it over, before
    recognition: that is when it was grabbed, give or take the frames a driver
    buffers, however far recognition has fallen behind (or when the source says it
    was grabbed, :meth:`FrameSource.grabbed_at`). Card events carry the stamp
    of their pass's first frame; with ``progress`` the reader also reports, as
    :class:`CameraProgress`, how far it has got, so a cross-check can tell a camera
    that saw no card from one that has not yet looked.
    """

    def __init__(
        self,
        source: FrameSource,
        recognizer: Recognizer,
        reader_id: str = "camera",
        rules: VotingRules | None = None,
        reconnect: int = 0,
        reconnect_delay: float = 1.0,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._clock = clock
        self.reconnect = reconnect
        self.reconnect_delay = reconnect_delay
        self._sleep = sleep
        self.source = source
        self.recognizer = recognizer
        self.reader_id = reader_id
        self.voter = Voter(reader_id, rules)
        self.frames_read = 0
        self.should_stop: Callable[[], bool] = lambda: False

    def events(self, progress: bool = False) -> Iterator[ReaderEvent]:
        """``progress``: also report how far the reader has got, after every frame that
        moves it on (for the cross-check with a shoe; a table alone has no use for it)."""
        yield ReaderOnline(
            reader_id=self.reader_id, info=self.source.description, monotonic=self._clock()
        )
        reported = float("-inf")
        try:
            while True:
                for index, frame in self.source.frames():
                    grabbed = self.source.grabbed_at(index)
                    captured = self._clock() if grabbed is None else grabbed
                    if self.should_stop():
                        return
                    self.frames_read += 1
                    read = self.recognizer.read_frame(frame)
                    yield from self.voter.feed(index, read, captured)
                    if progress:
                        pending = self.voter.pending_since()
                        done = captured if pending is None else pending
                        if done > reported:
                            reported = done
                            yield CameraProgress(reader_id=self.reader_id, captured=done)
                yield from self.voter.finish()
                if not self.source.live:
                    break
                log.warning(
                    "camera stopped", frames=self.frames_read, source=self.source.description
                )
                yield ReaderOffline(
                    reader_id=self.reader_id,
                    reason="camera stopped delivering frames",
                    monotonic=self._clock(),
                )
                if not self._reopen():
                    return
                self.recognizer.forget()  # the view may show anything anywhere now
                yield ReaderOnline(
                    reader_id=self.reader_id,
                    info=self.source.description,
                    restarted=True,
                    monotonic=self._clock(),
                )
        finally:
            self.source.close()
        log.info("recording ended", frames=self.frames_read, source=self.source.description)
        yield ReaderOffline(
            reader_id=self.reader_id, reason="end of recording", monotonic=self._clock()
        )

    def _reopen(self) -> bool:
        delay = self.reconnect_delay
        for attempt in range(1, self.reconnect + 1):
            self._sleep(delay)
            if self.source.reopen():
                log.info("camera back", attempt=attempt, source=self.source.description)
                return True
            delay = min(delay * 2, 60.0)
        return False
