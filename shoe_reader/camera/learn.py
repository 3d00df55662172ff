"""Learning a deck: a calibration from photographs of each face of the studio's deck.

Apart from the calibration itself (``calibration.py``, what a reader loads) because it
checks each face with the recognizer, which reads with a calibration.
"""

from __future__ import annotations

from pathlib import Path

import cv2
import numpy as np
import structlog

from shoe_reader.camera.calibration import (
    BLANK_CORNER,
    Calibration,
    CalibrationError,
    FaceProblem,
    FaceSample,
    _face_files,
    build,
    index_corners,
    index_positions,
    measure_face,
)
from shoe_reader.camera.index import NoIndex
from shoe_reader.camera.locate import CARD_W, Locator
from shoe_reader.camera.recognize import check_deck
from table_service.rules.cards import RANKS, SUITS

log = structlog.get_logger(__name__)


def calibrate(folder: Path, allow_missing: bool = False) -> tuple[Calibration, list[FaceProblem]]:
    """Learn a deck from ``folder`` (one photograph per face, named ``AS.png`` …).

    Returns the calibration and every face that could not be used, with why.
    Refuses (:class:`CalibrationError`) when a face is unusable, unless
    ``allow_missing`` and every rank and every suit still has a sample.
    """
    if not folder.is_dir():
        raise CalibrationError(f"{folder} is not a folder")
    files, problems = _face_files(folder)
    locator = Locator(aspect_tolerance=0.2, thorough=True, own_steps=False, hands=False)
    samples: dict[str, FaceSample] = {}
    for code in (r + s for s in SUITS for r in RANKS):
        path = files.get(code)
        if path is None:
            problems.append(FaceProblem(code, f"{code}.png", "no photograph of this face"))
            continue
        image = cv2.imread(str(path), cv2.IMREAD_COLOR)
        if image is None:
            problems.append(FaceProblem(code, path.name, "not a readable image"))
            continue
        try:
            samples[code] = measure_face(image, locator)
        except NoIndex as exc:
            problems.append(FaceProblem(code, path.name, exc.reason))
            continue
    if not samples:
        raise CalibrationError("no usable photograph", problems)
    mirrored = index_corners(samples)
    for code in [c for c, s in samples.items() if s.blank[mirrored]]:
        problems.append(FaceProblem(code, files[code].name, BLANK_CORNER))
        del samples[code]
    if not samples:
        raise CalibrationError("no usable photograph", problems)
    aspect = float(np.median([s.aspect for s in samples.values()]))
    outline = float(np.median([s.outline for s in samples.values()]))
    positions = index_positions(samples, mirrored)
    cal = build(samples, aspect, outline, mirrored, positions)
    # Each face must be recognised by the rest of the deck: a photograph under
    # the wrong name (AH.png showing the ace of spades) would teach a misread;
    # and faces whose index cannot be told apart would be read by a coin toss.
    for code, reason in check_deck(cal).items():
        problems.append(FaceProblem(code, files[code].name, reason))
        samples.pop(code, None)
    if not samples:
        raise CalibrationError("no usable photograph", problems)
    cal = build(samples, aspect, outline, mirrored, positions)
    missing = [r for r in RANKS if r not in set(cal.ranks)] + [
        s for s in SUITS if s not in set(cal.suits)
    ]
    if missing:
        raise CalibrationError(f"no usable photograph for {', '.join(missing)}", problems)
    if problems and not allow_missing:
        raise CalibrationError(f"{len(problems)} face(s) could not be used", problems)
    log.info(
        "calibrated",
        faces=len(samples),
        aspect=round(aspect, 3),
        outline=outline,
        px=CARD_W,
        index="top right" if mirrored else "top left",
    )
    return cal, problems
