"""Shortcuts the reader takes for speed against the code they stand for: each must give the
very same result (a frame read differently would be a change of the reader, not of its
speed), so each is compared bit for bit, or value for value, with the longer way."""

from __future__ import annotations

from functools import partial
from unittest import mock

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hardware_sim.camera.faces import render_face
from hardware_sim.camera.scene import LEVELS, photograph
from shoe_reader.camera import recognize
from shoe_reader.camera.calibration import Calibration
from shoe_reader.camera.locate import Locator, percentile, straighten_corner
from shoe_reader.camera.recognize import INDEX_OK, _hulls, _own_index, _Windows

from .conftest import HELDOUT


@settings(max_examples=300, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    n=st.integers(1, 4000),
    kind=st.sampled_from(["normal", "sums", "levels", "tiny"]),
)
def test_the_table_limits_percentile_is_numpys_to_the_bit(seed: int, n: int, kind: str) -> None:
    """``_table_difference`` takes the 90th percentile of the border's float32 spread with
    ``locate.percentile``: NumPy's own value and type, whatever the count (each count's
    fraction between two order statistics) and spread of the values."""
    rng = np.random.default_rng(seed)
    if kind == "normal":
        v = rng.normal(0, 50, n)
    elif kind == "sums":
        v = np.abs(rng.normal(0, 80, (n, 3))).sum(axis=1)
    elif kind == "levels":
        v = rng.integers(0, 6, n).astype(np.float64)
    else:
        v = rng.random(n) * 1e-3
    values = v.astype(np.float32)
    want = np.percentile(values, 90)
    got = percentile(values, 90)
    assert got.dtype == want.dtype
    assert np.asarray(got).tobytes() == want.tobytes()


def _hulls_the_long_way(skin: np.ndarray, face: np.ndarray) -> np.ndarray:
    """``recognize._hulls`` as it was: every piece's outline looked at, whether or not any
    skin lies on the face's edge (its border check answered yes whatever the skin)."""
    with mock.patch.object(recognize, "_on_border", lambda _mask: True):
        return _hulls(skin, face)


@settings(max_examples=300, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    pieces=st.integers(0, 4),
    side=st.sampled_from([None, "top", "bottom", "left", "right"]),
)
def test_a_face_with_no_skin_on_its_edge_skips_the_outlines_and_is_the_same(
    seed: int, pieces: int, side: str | None
) -> None:
    """Skin pieces (concave ones: a hull fills them) inside the face, and one reaching a
    single edge (or none): the face's skin and hulls as the full contour loop gives them."""
    rng = np.random.default_rng(seed)
    h, w = 112, 80
    skin = np.zeros((h, w), np.uint8)
    for _ in range(pieces):
        y, x = int(rng.integers(2, h - 20)), int(rng.integers(2, w - 20))
        skin[y : y + 16, x : x + 4] = 1  # an L: its hull takes in the corner between
        skin[y + 12 : y + 16, x : x + 16] = 1
    if side is not None:
        at = int(rng.integers(0, (w if side in ("top", "bottom") else h) - 30))
        piece = np.zeros((30, 30), np.uint8)
        piece[:, :6] = 1
        piece[:6, :] = 1
        if side == "top":
            skin[:30, at : at + 30] |= piece
        elif side == "bottom":
            skin[h - 30 :, at : at + 30] |= piece[::-1]
        elif side == "left":
            skin[at : at + 30, :30] |= piece
        else:
            skin[at : at + 30, w - 30 :] |= piece[:, ::-1]
    face = rng.integers(0, 256, (h, w, 3)).astype(np.uint8)
    face[rng.random((h, w)) < 0.5] = 250  # blank paper here and there
    want = _hulls_the_long_way(skin, face)
    got = _hulls(skin.copy(), face)
    assert np.array_equal(got, want)


@pytest.fixture(scope="module")
def seven_of_hearts(heldout_calibration: Calibration) -> tuple[np.ndarray, np.ndarray]:
    """A moderate frame of the test-only deck's seven of hearts and its card's outline."""
    rng = np.random.default_rng(3)
    frame, _ = photograph(render_face("7H", HELDOUT), LEVELS["moderate"], rng, "felt")
    quad = Locator(aspect=heldout_calibration.aspect).find(frame).quad
    assert quad is not None
    return frame, quad


def _windows(cal: Calibration, frame: np.ndarray, quad: np.ndarray) -> _Windows:
    corners = [partial(straighten_corner, frame, quad, t, cal.mirrored) for t in (False, True)]
    return _Windows(corners, cal)


def test_a_cards_own_index_is_worked_out_once_a_frame_and_is_the_fit_afresh(
    heldout_calibration: Calibration,
    seven_of_hearts: tuple[np.ndarray, np.ndarray],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Asked again on the same corners (the index read after the face's), ``_own_index``
    answers what it answered, without comparing again; each card its own answer, the one a
    fresh frame's corners give (the card shown fitting to ``INDEX_OK``, others not: their
    nudged corners are compared too)."""
    cal = heldout_calibration
    frame, quad = seven_of_hearts
    windows = _windows(cal, frame, quad)
    fits = {code: _own_index(cal, windows, code) for code in ("7H", "8H", "7D", "2S")}
    assert fits["7H"] >= INDEX_OK > max(fits["8H"], fits["2S"])
    for code, fit in fits.items():
        assert fit == _own_index(cal, _windows(cal, frame, quad), code)  # nothing kept yet
    calls: list[str] = []
    real = recognize.index_fit

    def counting(*args: object, **kwargs: object) -> float:
        calls.append("fit")
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(recognize, "index_fit", counting)
    assert {code: _own_index(cal, windows, code) for code in fits} == fits
    assert calls == []
    nudged = windows.nudged()
    assert windows.nudged() is nudged
