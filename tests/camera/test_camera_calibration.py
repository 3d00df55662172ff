"""Calibration from the studio's photographs: every unusable face is reported, with why."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import cv2
import numpy as np
import pytest

from hardware_sim.camera.faces import render_blank
from hardware_sim.camera.scene import LEVELS, photograph
from shoe_reader.camera.calibration import Calibration, CalibrationError
from shoe_reader.camera.index import FEAT_H, FEAT_W
from shoe_reader.camera.learn import calibrate
from table_service.rules.cards import RANKS, SUITS
from tests.support.crash_harness import run_cli

from .conftest import HELDOUT


@pytest.fixture
def photos(heldout_photos: Path, tmp_path: Path) -> Path:
    folder = tmp_path / "photos"
    shutil.copytree(heldout_photos, folder)
    return folder


def test_a_full_deck_calibrates_every_face_from_both_corners(
    heldout_calibration: Calibration,
) -> None:
    cal = heldout_calibration
    assert set(cal.cards) == {r + s for r in RANKS for s in SUITS}
    assert len(cal.cards) >= 100  # both corner indices of (nearly) every face
    assert cal.maps.shape == (len(cal.cards), FEAT_H, FEAT_W, 3)
    assert 0.68 < cal.aspect < 0.75

    # Red suits were photographed in red ink (the red-green chroma map), black suits not.
    def redness(suit: str) -> float:
        return float(cal.maps[cal.suits == suit][..., 1].max(axis=(1, 2)).mean())

    assert redness("H") > redness("S") + 0.3
    assert redness("D") > redness("C") + 0.3
    # The rank is told apart in the corner where the index is printed, not across the card.
    y0, _y1, x0, _x1 = cal.rank_part.box
    assert y0 < FEAT_H / 3 and x0 < FEAT_W / 3


def test_calibration_survives_a_round_trip(
    heldout_calibration: Calibration, tmp_path: Path
) -> None:
    path = tmp_path / "cal.npz"
    heldout_calibration.save(path)
    again = Calibration.load(path)
    assert again.cards == heldout_calibration.cards
    assert np.allclose(again.maps, heldout_calibration.maps, atol=2e-3)
    assert again.aspect == heldout_calibration.aspect
    assert not (tmp_path / "cal.npz.tmp").exists()


@pytest.mark.parametrize("content", [b"", b"not a calibration", b"PK\x03\x04broken zip"])
def test_a_file_that_is_not_a_calibration_is_refused(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "bad.npz"
    path.write_bytes(content)
    with pytest.raises(CalibrationError):
        Calibration.load(path)


def test_every_unusable_face_is_reported_and_the_calibration_refused(photos: Path) -> None:
    (photos / "7H.png").unlink()  # missing
    (photos / "QC.png").write_bytes(b"\x89PNG garbage")  # unreadable
    rng = np.random.default_rng(0)
    blank, _ = photograph(render_blank(HELDOUT), LEVELS["flat"], rng)
    cv2.imwrite(str(photos / "2D.png"), blank)  # a face with no index
    cv2.imwrite(str(photos / "5S.png"), np.full((720, 1280, 3), 90, np.uint8))  # no card
    shutil.copy(photos / "AS.png", photos / "joker.png")  # not a card name
    # Two photographs swapped: each shows the other card.
    (photos / "4D.png").rename(photos / "tmp.png")
    (photos / "4S.png").rename(photos / "4D.png")
    (photos / "tmp.png").rename(photos / "4S.png")

    with pytest.raises(CalibrationError) as info:
        calibrate(photos)
    reasons = {p.file: p.reason for p in info.value.problems}
    assert "no photograph" in reasons["7H.png"]
    assert "not a readable image" in reasons["QC.png"]
    assert "corner" in reasons["2D.png"]
    assert "no whole card" in reasons["5S.png"]
    assert "not a card code" in reasons["joker.png"]
    assert "misnamed" in reasons["4D.png"] and "misnamed" in reasons["4S.png"]
    assert "suit S, not D" in reasons["4D.png"]
    assert len(reasons) == 7


def test_the_same_face_under_two_names_is_refused_naming_both(photos: Path) -> None:
    shutil.copy(photos / "5H.png", photos / "6H.png")  # the five of hearts twice
    with pytest.raises(CalibrationError) as info:
        calibrate(photos)
    reasons = {p.file: p.reason for p in info.value.problems}
    assert "photographed twice" in reasons["6H.png"] and "5H" in reasons["6H.png"]
    assert "photographed twice" in reasons["5H.png"]


def test_allow_missing_keeps_the_usable_faces(photos: Path) -> None:
    (photos / "7H.png").unlink()
    cal, problems = calibrate(photos, allow_missing=True)
    assert [p.card for p in problems] == ["7H"]
    assert "7H" not in cal.cards and "7S" in cal.cards


def test_a_rank_with_no_usable_face_cannot_be_allowed(photos: Path) -> None:
    for suit in SUITS:
        (photos / f"9{suit}.png").unlink()
    with pytest.raises(CalibrationError, match="no usable photograph for 9"):
        calibrate(photos, allow_missing=True)


def livetable(*args: str) -> subprocess.CompletedProcess[str]:
    """The real command, in its own process (logs to stderr, results to stdout)."""
    return run_cli(["camera", *args], timeout=120)


def test_cli_calibrate_writes_the_file_and_reports_problems(photos: Path, tmp_path: Path) -> None:
    out = tmp_path / "deck.npz"
    (photos / "JH.png").unlink()
    refused = livetable("calibrate", "--images", str(photos), "--out", str(out))
    assert refused.returncode == 1
    assert "JH.png: no photograph of this face" in refused.stderr
    assert not out.exists()
    allowed = livetable("calibrate", "--images", str(photos), "--out", str(out), "--allow-missing")
    assert allowed.returncode == 0, allowed.stderr
    assert "calibrated 51 faces" in allowed.stdout
    assert "JH.png: no photograph of this face" in allowed.stderr
    assert "JH" not in Calibration.load(out).cards


def test_cli_calibrate_refuses_a_missing_folder(tmp_path: Path) -> None:
    result = livetable(
        "calibrate", "--images", str(tmp_path / "nope"), "--out", str(tmp_path / "x.npz")
    )
    assert result.returncode == 1
    assert "not a folder" in result.stderr
