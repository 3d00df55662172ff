"""Shared fixtures for the camera tests: the test-only deck and its calibration.

The ``heldout`` design (hardware_sim TEST_ONLY_DESIGNS) is used only by tests and the
benchmark. The recognizer's thresholds were set
on the simulator's own designs (classic, casino, jumbo); this deck has another
font, other inks, another paper and another index layout, and is only ever
calibrated from its photographs, never tuned on.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from hardware_sim.camera.faces import TEST_ONLY_DESIGNS
from hardware_sim.camera.synth import write_calibration_set
from shoe_reader.camera.calibration import Calibration
from shoe_reader.camera.learn import calibrate
from tests.support.run_shared import shared_path

HELDOUT = TEST_ONLY_DESIGNS["heldout"]


@pytest.fixture(scope="session")
def heldout_photos(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The test-only deck's photographs (seed 11), written once a run (see
    :mod:`tests.support.run_shared`): tests copy them before changing any."""
    return shared_path(
        tmp_path_factory,
        "heldout-photos-s11",
        lambda folder: write_calibration_set(HELDOUT, folder, seed=11),
    )


@pytest.fixture(scope="session")
def heldout_calibration_file(
    heldout_photos: Path, tmp_path_factory: pytest.TempPathFactory
) -> Path:
    """The test-only deck calibrated from its photographs, saved (made once a run)."""

    def make(path: Path) -> None:
        cal, problems = calibrate(heldout_photos)
        assert problems == []
        cal.save(path)

    return shared_path(tmp_path_factory, "heldout-s11.npz", make)


@pytest.fixture(scope="session")
def heldout_calibration(heldout_calibration_file: Path) -> Calibration:
    return Calibration.load(heldout_calibration_file)


@pytest.fixture(scope="session")
def published_calibration_file(
    tmp_path_factory: pytest.TempPathFactory,
) -> Callable[[str], Path]:
    """A published deck's calibration from its studio photographs on a grey mat (seed 5),
    made once a run and shared (see :mod:`tests.support.run_shared`):
    ``published_calibration_file(name)`` is its file. The photographs are written as BMP
    (the same pixels as PNG, without 3 s of CPU compressing and decompressing them) and
    removed once calibrated."""

    def calibration_file(name: str) -> Path:
        def make(path: Path) -> None:
            photos = tmp_path_factory.mktemp(f"{name}-photos")
            write_calibration_set(name, photos, seed=5, backdrop="grey", suffix=".bmp")
            cal, problems = calibrate(photos)
            assert problems == []
            shutil.rmtree(photos)
            cal.save(path)

        return shared_path(tmp_path_factory, f"published-{name}-s5.npz", make)

    return calibration_file
