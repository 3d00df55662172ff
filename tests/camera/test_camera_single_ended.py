"""A deck that prints its index at one end only (issue 37, ``calibration.SINGLE_ENDED``).

Most decks print the index twice, the second a copy turned half round; some print it
once, at the top, and something else at the other end that is alike for every rank of
a suit (tango_nuevo: the big pip's tail).
The test-only design is drawn here that way: its bottom index painted over with a large
suit-coloured mark, the same on every card of the suit, and (as tango_nuevo's) every
number card of a suit showing one picture, its pips under one large mark, so that the
index alone tells the rank. Calibrated from one flat photograph per face, it is read on
frames of the cards upright and turned half round.
"""

from __future__ import annotations

from pathlib import Path

import cv2
import numpy as np
import pytest

from hardware_sim.camera.faces import TEST_ONLY_DESIGNS, all_codes, render_face
from hardware_sim.camera.scene import LEVELS, photograph
from shoe_reader.camera import calibration
from shoe_reader.camera.calibration import Calibration, CalibrationError
from shoe_reader.camera.learn import calibrate
from shoe_reader.camera.recognize import Recognizer

DESIGN = TEST_ONLY_DESIGNS["heldout"]
MARKS = {"S": 0, "C": 1, "H": 2, "D": 3}


def _one_ended(code: str) -> np.ndarray:
    """The test-only design's face of ``code`` with its bottom index painted over by a large
    mark of the suit's ink, drawn alike on every rank of the suit."""
    face = render_face(code, DESIGN)
    h, w = face.shape[:2]
    ink = DESIGN.red if code[1] in "HD" else DESIGN.black
    if code[0] not in "JQK":
        # One picture for every number card of the suit: the pips under one large mark.
        middle = (int(0.18 * w), int(0.1 * h), int(0.92 * w), int(0.9 * h))
        face[middle[1] : middle[3], middle[0] : middle[2]] = DESIGN.paper
        size = (int(0.25 * w), int(0.2 * h))
        angle = 20 * MARKS[code[1]]
        cv2.ellipse(face, (w // 2, h // 2), size, angle, 0, 360, ink, -1, cv2.LINE_AA)
    turned = np.ascontiguousarray(face[::-1, ::-1])
    turned[int(0.02 * h) : int(0.30 * h), int(0.02 * w) : int(0.30 * w)] = DESIGN.paper
    centre = (int(0.05 * w), int(0.06 * h))
    r = int(0.22 * w)
    mark = MARKS[code[1]]
    if mark == 0:
        cv2.circle(turned, centre, r, ink, -1, cv2.LINE_AA)
    elif mark == 1:
        cv2.rectangle(turned, (0, 0), (centre[0] + r, centre[1] + r // 2), ink, -1)
    elif mark == 2:
        pts = np.array([(0, 0), (centre[0] + r, 0), (0, centre[1] + r)], np.int32)
        cv2.fillPoly(turned, [pts], ink, cv2.LINE_AA)
    else:
        cv2.ellipse(turned, centre, (r, r // 2), 30, 0, 360, ink, -1, cv2.LINE_AA)
    return np.ascontiguousarray(turned[::-1, ::-1])


@pytest.fixture(scope="module")
def photos(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("one_ended_photos")
    rng = np.random.default_rng(3)
    for code in all_codes():
        frame, _quad = photograph(_one_ended(code), LEVELS["flat"], rng, "grey")
        cv2.imwrite(str(folder / f"{code}.bmp"), frame)  # (PNG's pixels, uncompressed)
    return folder


def _reads(cal: Calibration) -> tuple[int, int]:
    """Confident reads right and wrong of 40 frames at the "moderate" level, half of them
    with the card turned half round (a card comes out of the shoe either way up)."""
    rec = Recognizer(cal)
    rng = np.random.default_rng(8)
    codes = all_codes()
    right = wrong = 0
    for k in range(40):
        code = codes[int(rng.integers(len(codes)))]
        face = _one_ended(code)
        if k % 2:
            face = np.ascontiguousarray(face[::-1, ::-1])
        frame, _quad = photograph(face, LEVELS["moderate"], rng)
        read = rec.read_frame(frame).read
        if read is not None and read.code is not None and read.confidence >= 0.5:
            right += read.code == code
            wrong += read.code != code
    return right, wrong


def test_a_deck_printing_its_index_at_one_end_is_calibrated_on_that_end_and_read(
    photos: Path,
) -> None:
    assert calibration.SINGLE_ENDED
    cal, problems = calibrate(photos)
    assert problems == []
    assert cal.other_end is not None  # the bottom corners, kept to tell that end in a frame
    assert len(cal.cards) == 2 * 52  # one corner a face, sharp and softer
    assert sorted(set(cal.cards)) == sorted(all_codes())
    right, wrong = _reads(cal)
    assert wrong == 0
    assert right >= 30


def test_learned_as_the_index_the_other_end_makes_the_faces_untold(
    photos: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With the switch off, the end without the index is learned as the card's index too:
    alike for every rank of a suit, it makes the number cards' corners alike, and a deck
    whose number cards share one picture is refused, those faces named."""
    monkeypatch.setattr(calibration, "SINGLE_ENDED", False)
    with pytest.raises(CalibrationError) as refused:
        calibrate(photos)
    untold = [p for p in refused.value.problems if "cannot be told from" in p.reason]
    assert len(untold) >= 20
    assert all(p.card[0] not in "JQK" for p in untold)
