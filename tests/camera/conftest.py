"""Shared fixtures for the camera tests: the test-only deck and its calibration.

The ``heldout`` design (hardware_sim TEST_ONLY_DESIGNS) is used only by tests and the
benchmark. The recognizer's thresholds were set
on the simulator's own designs (classic, casino, jumbo); this deck has another
font, other inks, another paper and another index layout, and is only ever
calibrated from its photographs, never tuned on.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from hardware_sim.camera.faces import TEST_ONLY_DESIGNS
from hardware_sim.camera.synth import write_calibration_set
from shoe_reader.camera.calibration import Calibration
from shoe_reader.camera.learn import calibrate

HELDOUT = TEST_ONLY_DESIGNS["heldout"]


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


@pytest.fixture(scope="session")
def published_calibration_file(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    """A published deck's calibration from its studio photographs on a grey mat (seed 5),
    made once a session and shared: ``published_calibration_file(name)`` is its file."""
    made: dict[str, Path] = {}

    def calibration_file(name: str) -> Path:
        if name not in made:
            photos = tmp_path_factory.mktemp(f"{name}-photos")
            write_calibration_set(name, photos, seed=5, backdrop="grey")
            cal, problems = calibrate(photos)
            assert problems == []
            made[name] = photos.parent / f"{name}.npz"
            cal.save(made[name])
        return made[name]

    return calibration_file
