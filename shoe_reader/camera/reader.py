"""The camera reader: frames in, the same reader events as the serial shoes out."""

from __future__ import annotations

from collections.abc import Iterator

import structlog

from shoe_reader.camera.recognize import Recognizer
from shoe_reader.camera.source import FrameSource
from shoe_reader.camera.voting import Voter, VotingRules
from shoe_reader.events import ReaderEvent, ReaderOffline, ReaderOnline

log = structlog.get_logger(__name__)


class CameraReader:
    """Runs every frame of a source through the recognizer and the voting.

    Reports ``online`` when the source opens and ``offline`` when it stops
    delivering frames (end of file, camera unplugged), so the table service
    sees a camera exactly as it sees a serial shoe.
    """

    def __init__(
        self,
        source: FrameSource,
        recognizer: Recognizer,
        reader_id: str = "camera",
        rules: VotingRules | None = None,
    ) -> None:
        self.source = source
        self.recognizer = recognizer
        self.reader_id = reader_id
        self.voter = Voter(reader_id, rules)
        self.frames_read = 0

    def events(self) -> Iterator[ReaderEvent]:
        yield ReaderOnline(reader_id=self.reader_id, info=self.source.description)
        try:
            for index, frame in self.source.frames():
                self.frames_read += 1
                yield from self.voter.feed(index, self.recognizer.read_frame(frame))
            yield from self.voter.finish()
        finally:
            self.source.close()
        log.info("camera source ended", frames=self.frames_read, source=self.source.description)
        reason = "camera stopped delivering frames" if self.source.live else "end of recording"
        yield ReaderOffline(reader_id=self.reader_id, reason=reason)
