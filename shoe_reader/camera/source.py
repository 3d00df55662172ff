"""Where frames come from: a camera, a video file or stream, or a folder of images."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import cv2
import numpy as np
import structlog

log = structlog.get_logger(__name__)

IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".bmp", ".tif", ".tiff")
_STREAM_SCHEMES = ("rtsp://", "rtsps://", "http://", "https://", "udp://", "tcp://")


class FrameSourceError(Exception):
    """A source that cannot be opened; ``reason`` says why."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class FrameSource:
    """Numbered frames, in order; ``description`` names the source for the log and events."""

    description: str = ""
    live: bool = False  # a camera or stream (its end is a fault), not a recording

    def frames(self) -> Iterator[tuple[int, np.ndarray]]:
        raise NotImplementedError

    def grabbed_at(self, index: int) -> float | None:
        """When frame ``index``, just handed over, was grabbed (monotonic), where the source
        knows it better than the moment it hands the frame over: a simulated camera that
        draws its frames behind real time on a loaded machine shows a card when it was dealt,
        as a real camera would have. None: the reader stamps the frame as it arrives."""
        return None

    def close(self) -> None:
        """Release the device or file."""

    def reopen(self) -> bool:
        """Try to get frames flowing again after a live source stopped; False if not."""
        return False


class FolderSource(FrameSource):
    """Every image in a folder, in file-name order (a recorded session, or test frames)."""

    def __init__(self, folder: Path) -> None:
        self.files = sorted(p for p in folder.iterdir() if p.suffix.lower() in IMAGE_SUFFIXES)
        if not self.files:
            raise FrameSourceError(f"no images in {folder}")
        self.description = f"folder:{folder}"

    def frames(self) -> Iterator[tuple[int, np.ndarray]]:
        for i, path in enumerate(self.files):
            image = cv2.imread(str(path), cv2.IMREAD_COLOR)
            if image is None:
                log.warning("unreadable image skipped", file=str(path))
                continue
            yield i, image


class CaptureSource(FrameSource):
    """``cv2.VideoCapture``: a device index, a video file, or an RTSP/HTTP URL."""

    def __init__(self, target: int | str, live: bool = False) -> None:
        self.live = live
        self.target = target
        self.capture = cv2.VideoCapture(target)
        if not self.capture.isOpened():
            self.capture.release()
            raise FrameSourceError(f"cannot open video source {target!r}")
        self.description = f"capture:{target}"
        self._next = 0  # frame numbers run on across reconnections

    def frames(self) -> Iterator[tuple[int, np.ndarray]]:
        while True:
            ok, frame = self.capture.read()
            if not ok or frame is None:
                return
            yield self._next, frame
            self._next += 1

    def close(self) -> None:
        self.capture.release()

    def reopen(self) -> bool:
        self.capture.release()
        self.capture = cv2.VideoCapture(self.target)
        return bool(self.capture.isOpened())


def open_source(spec: str) -> FrameSource:
    """A source from its command-line form: ``0`` (device), a file, a folder or a URL."""
    text = spec.strip()
    if text.isdigit():
        return CaptureSource(int(text), live=True)
    if text.lower().startswith(_STREAM_SCHEMES):
        return CaptureSource(text, live=True)
    path = Path(text)
    if path.is_dir():
        return FolderSource(path)
    if not path.exists():
        raise FrameSourceError(f"no such file, folder or device: {spec}")
    return CaptureSource(str(path))
