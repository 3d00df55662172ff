"""Shared fixtures for the camera tests: the test-only deck and its calibration.

The ``heldout`` design exists only here. The recognizer's thresholds were set
on the simulator's own designs (classic, casino, jumbo); this deck has another
font, other inks, another paper and another index layout, and is only ever
calibrated from its photographs, never tuned on.
"""

from __future__ import annotations

from pathlib import Path

import cv2
import pytest

from hardware_sim.camera.faces import CardDesign
from hardware_sim.camera.synth import write_calibration_set
from shoe_reader.camera.calibration import Calibration, calibrate

HELDOUT = CardDesign(
    name="heldout",
    font=cv2.FONT_HERSHEY_COMPLEX,
    thickness=4,
    paper=(232, 240, 240),
    red=(70, 10, 185),
    black=(85, 45, 15),
    index_x=0.085,
    index_y=0.07,
    rank_height=0.078,
    suit_size=0.062,
    suit_gap=0.025,
    suit_style="slim",
    court_fill=(210, 190, 160),
    court_line=(20, 70, 20),
)


@pytest.fixture(scope="session")
def heldout_photos(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("heldout_photos")
    write_calibration_set(HELDOUT, folder, seed=11)
    return folder


@pytest.fixture(scope="session")
def heldout_calibration_file(
    heldout_photos: Path, tmp_path_factory: pytest.TempPathFactory
) -> Path:
    cal, problems = calibrate(heldout_photos)
    assert problems == []
    path = tmp_path_factory.mktemp("heldout_cal") / "deck.npz"
    cal.save(path)
    return path


@pytest.fixture(scope="session")
def heldout_calibration(heldout_calibration_file: Path) -> Calibration:
    return Calibration.load(heldout_calibration_file)
