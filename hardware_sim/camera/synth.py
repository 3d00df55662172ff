"""Data sets from the synthetic camera: calibration photographs and test frames.

A calibration set is what a studio would produce with its own camera: one
photograph per face, card flat under good light (the ``studio`` level), saved
as ``AS.png`` … ``KC.png``. Test frames come from the same renderer at the
named degradation levels, with the truth kept alongside.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import cv2
import numpy as np

from hardware_sim.camera.decks import Deck, face
from hardware_sim.camera.faces import all_codes
from hardware_sim.camera.scene import LEVELS, Degradation, photograph


def write_calibration_set(
    design: Deck,
    folder: Path,
    seed: int = 0,
    backdrop: str | None = None,
    suffix: str = ".png",
) -> list[Path]:
    """Photograph every face of ``design`` once, as a studio would, into ``folder``.

    ``suffix``: the photographs' lossless file type. ``.png`` as a studio would keep them;
    ``.bmp`` holds the very same pixels uncompressed, for a set only written to be
    calibrated at once (the tests): a PNG of a 1280x720 photograph costs about 40 ms of
    CPU to write and 20 ms to read, a BMP about 2."""
    if suffix not in (".png", ".bmp"):
        raise ValueError(f"not a lossless image type: {suffix!r}")
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    paths = []
    for code in all_codes():
        frame, _ = photograph(face(design, code), LEVELS["flat"], rng, backdrop)
        path = folder / f"{code}{suffix}"
        cv2.imwrite(str(path), frame)
        paths.append(path)
    return paths


@dataclass(frozen=True)
class Shot:
    """One test frame and the card it shows."""

    card: str
    frame: np.ndarray
    quad: np.ndarray


def shots(design: Deck, level: Degradation, count: int, seed: int = 0) -> Iterator[Shot]:
    """``count`` frames of random faces of ``design`` taken at ``level``."""
    rng = np.random.default_rng(seed)
    codes = all_codes()
    for _ in range(count):
        code = codes[rng.integers(len(codes))]
        frame, quad = photograph(face(design, code), level, rng)
        yield Shot(code, frame, quad)
