"""The synthetic camera: faces that differ by card and by design, frames as a camera takes them."""

from __future__ import annotations

import json
from pathlib import Path

import cv2
import numpy as np
import pytest

from hardware_sim.camera.faces import (
    DESIGNS,
    FACE_H,
    FACE_W,
    TEST_ONLY_DESIGNS,
    all_codes,
    render_face,
    suit_mask,
)
from hardware_sim.camera.scene import FRAME_H, FRAME_W, LEVELS, degrade, photograph
from table_service.rules.cards import CardError
from tests.support.crash_harness import run_cli


def test_every_face_is_distinct_within_a_design() -> None:
    faces = {code: render_face(code, DESIGNS["classic"]) for code in all_codes()}
    assert len(faces) == 52
    assert all(f.shape == (FACE_H, FACE_W, 3) for f in faces.values())
    digests = {f.tobytes() for f in faces.values()}
    assert len(digests) == 52


def test_designs_print_the_same_card_differently() -> None:
    designs = {**DESIGNS, **TEST_ONLY_DESIGNS}
    faces = [render_face("QH", d) for d in designs.values()]
    for i in range(len(faces)):
        for j in range(i + 1, len(faces)):
            assert np.abs(faces[i].astype(int) - faces[j].astype(int)).mean() > 3


def test_red_suits_are_printed_in_red_ink() -> None:
    design = DESIGNS["classic"]
    heart = render_face("5H", design)
    spade = render_face("5S", design)
    red = np.all(heart == design.red, axis=2).sum()
    assert red > 1000
    assert np.all(spade == design.red, axis=2).sum() == 0


def test_the_two_corner_indices_are_a_half_turn_apart() -> None:
    face = render_face("7D", DESIGNS["jumbo"])
    corner = face[:150, :110]
    opposite = face[::-1, ::-1][:150, :110]
    assert np.abs(corner.astype(int) - opposite.astype(int)).mean() < 2


@pytest.mark.parametrize("suit", "SHDC")
def test_suit_symbols_are_solid_shapes(suit: str) -> None:
    mask = suit_mask(suit, 60)
    filled = (mask > 128).mean()
    assert 0.3 < filled < 0.8
    n, _ = cv2.connectedComponents((mask > 128).astype(np.uint8))
    assert n == 2  # one symbol, one background


def test_a_bad_card_code_is_refused() -> None:
    with pytest.raises(CardError):
        render_face("1X", DESIGNS["classic"])


def test_harsher_levels_degrade_the_frame_more() -> None:
    face = render_face("9S", DESIGNS["classic"])
    frame, quad = photograph(face, LEVELS["flat"], np.random.default_rng(1), "grey")
    assert frame.shape == (FRAME_H, FRAME_W, 3)
    assert quad.shape == (4, 2)
    damage = {}
    for level in ("clean", "mild", "moderate", "harsh"):
        rng = np.random.default_rng(2)
        out = np.mean(
            [np.abs(degrade(frame, LEVELS[level], rng).astype(int) - frame) for _ in range(3)]
        )
        damage[level] = float(out)
    assert damage["clean"] < damage["mild"] < damage["moderate"] < damage["harsh"]


def test_cli_synth_writes_a_calibration_set_and_a_video(tmp_path: Path) -> None:
    base = ["camera", "synth"]
    cal = run_cli(
        [*base, "calibration", "--out", str(tmp_path / "deck"), "--design", "jumbo"], timeout=120
    )
    assert cal.returncode == 0, cal.stderr
    assert sorted(p.stem for p in (tmp_path / "deck").glob("*.png")) == sorted(all_codes())
    vid = run_cli(
        [*base, "video", "--out", str(tmp_path / "v.avi"), "--cards", "AS,10D"], timeout=120
    )
    assert vid.returncode == 0, vid.stderr
    info = json.loads(vid.stdout)
    assert info["cards"] == ["AS", "TD"]
    capture = cv2.VideoCapture(str(tmp_path / "v.avi"))
    count = 0
    while capture.read()[0]:
        count += 1
    assert count == info["frames"] > 20
    bad = run_cli(
        [*base, "video", "--out", str(tmp_path / "x.avi"), "--cards", "AS,ZZ"], timeout=120
    )
    assert bad.returncode == 2
    assert "--cards" in bad.stderr
