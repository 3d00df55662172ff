"""The camera's region of interest, as a table file or ``--roi`` gives it: ``x,y,w,h``.

Plain text parsing, apart from the recognizer, so that a table file is checked on a
base install without importing OpenCV.
"""

from __future__ import annotations


class RoiError(ValueError):
    """The region of interest does not fit in the camera's frames."""


def parse_roi(text: str) -> tuple[int, int, int, int]:
    """``x,y,w,h`` in frame pixels. Raises :class:`RoiError`."""
    parts = text.replace(" ", "").split(",")
    try:
        x, y, w, h = (int(p) for p in parts)
    except ValueError:
        raise RoiError(f"region must be x,y,w,h in pixels, got {text!r}") from None
    if x < 0 or y < 0 or w < 16 or h < 16:
        raise RoiError(f"region {text!r} must start inside the frame and be at least 16x16")
    return x, y, w, h
