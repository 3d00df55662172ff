"""Finding the card: light and dark tables, gradients, cut-off cards, a chip over a side."""

from __future__ import annotations

import cv2
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hardware_sim.camera.faces import DESIGNS, render_face
from hardware_sim.camera.scene import (
    BACKGROUNDS,
    LEVELS,
    background,
    card_quad,
    photograph,
    place_card,
)
from shoe_reader.camera.locate import (
    CARD_H,
    CARD_W,
    Locator,
    _area_reduce,
    _largest_quad,
    straighten,
)


def corner_error(found: np.ndarray, truth: np.ndarray) -> float:
    """Largest corner distance, for the best starting corner (a card has two upright readings)."""
    return min(
        float(np.linalg.norm(np.roll(found, k, axis=0) - truth, axis=1).max()) for k in range(4)
    )


@pytest.mark.parametrize("table", BACKGROUNDS)
def test_the_card_outline_is_found_on_every_table(table: str) -> None:
    rng = np.random.default_rng(len(table))
    locator = Locator()
    for _ in range(3):
        frame, quad = photograph(render_face("KD", DESIGNS["classic"]), LEVELS["mild"], rng, table)
        outline = locator.find(frame)
        assert outline.present
        assert outline.quad is not None, outline.why
        assert corner_error(outline.quad, quad) < 4.0


def test_an_empty_table_shows_no_card() -> None:
    rng = np.random.default_rng(0)
    for table in BACKGROUNDS:
        assert Locator().find(background(table, rng)).present is False


def test_a_card_cut_by_the_region_edge_is_present_but_not_whole() -> None:
    rng = np.random.default_rng(1)
    frame = background("felt", rng)
    quad = np.array([(-100, 200), (150, 200), (150, 550), (-100, 550)], np.float32)
    place_card(frame, render_face("4S", DESIGNS["classic"]), quad)
    outline = Locator().find(frame)
    assert outline.present
    assert outline.quad is None
    assert "edge" in outline.why


def test_a_square_object_is_not_a_card() -> None:
    rng = np.random.default_rng(2)
    frame = background("dark", rng)
    frame[200:450, 400:650] = 240  # a white square tile
    outline = Locator().find(frame)
    assert outline.present and outline.quad is None
    assert "aspect" in outline.why


@pytest.mark.parametrize("table", BACKGROUNDS)
def test_a_side_hidden_under_a_finger_is_put_on_what_shows_of_its_edge(table: str) -> None:
    """A dealer's finger over the card's top side, from outside the card to its middle,
    hides most of that side: the other three sides bear the card out, and the hidden one
    is laid on the stretch of its edge beside the finger (without it no outline was found:
    "outline not borne out by the card's edges")."""
    rng = np.random.default_rng(3)
    frame = background(table, rng)
    face = render_face("7H", DESIGNS["classic"])
    angle = -20 if len(table) % 2 else 10
    quad = card_quad(rng, LEVELS["moderate"], (640, 360), angle, 170, face.shape[1] / face.shape[0])
    place_card(frame, face, quad)
    tl, tr = quad[0], quad[1]
    inward = quad.mean(axis=0) - (tl + tr) / 2
    inward /= np.linalg.norm(inward)
    width = float(np.linalg.norm(tr - tl))
    start = tl + 0.75 * (tr - tl) - inward * 0.6 * width
    tip = tl + 0.62 * (tr - tl) + inward * 0.45 * width
    skin = (120, 150, 205)
    cv2.line(frame, start.astype(int).tolist(), tip.astype(int).tolist(), skin, int(0.4 * width))
    frame = cv2.GaussianBlur(frame, (0, 0), 0.8)
    outline = Locator().find(frame)
    assert outline.quad is not None, outline.why
    assert corner_error(outline.quad, quad) < 2.5


def test_straightening_gives_an_upright_portrait_card() -> None:
    rng = np.random.default_rng(3)
    frame, _ = photograph(render_face("AS", DESIGNS["classic"]), LEVELS["clean"], rng, "felt")
    outline = Locator().find(frame)
    assert outline.quad is not None
    card = straighten(frame, outline.quad)
    assert card.shape == (CARD_H, CARD_W, 3)
    # The ace's big pip is dark at the centre; the margins are paper.
    assert card[CARD_H // 2, CARD_W // 2].mean() < 100
    assert card[CARD_H // 2, 8].mean() > 150


@settings(max_examples=200)
@given(
    w=st.floats(40, 120),
    ratio=st.floats(1.3, 1.6),
    angle=st.floats(-np.pi, np.pi),
    side=st.integers(0, 3),
    along=st.floats(0.35, 0.65),
    reach=st.floats(0.05, 0.25),
    span=st.floats(0.15, 0.3),
)
def test_a_bulge_over_a_side_is_cut_off_the_outline(
    w: float, ratio: float, angle: float, side: int, along: float, reach: float, span: float
) -> None:
    """A chip over the middle of a card's side bulges out of its silhouette's hull; the
    largest quad on the hull's corners is the card while the chip reaches out up to a
    quarter of the card's width. (The scene's chips reach up to 0.35: beyond a quarter the
    largest quad can take a point of the chip for a corner, on a long side.)"""
    h = w * ratio
    rect = np.array([(0, 0), (w, 0), (w, h), (0, h)])
    a, b = rect[side], rect[(side + 1) % 4]
    length = float(np.linalg.norm(b - a))
    u = (b - a) / length
    out = np.array([u[1], -u[0]])  # clockwise corners: the outward normal
    t = np.linspace(0, 2 * np.pi, 48, endpoint=False)
    # The chip stays a tenth of the side clear of the card's corners: at a twentieth (the
    # generator's bound before), a chip 2 px from a short side's corner and reaching out a
    # quarter of the width is where the corner is (w=44, along 0.35: the quad took a point
    # of the chip, 6.8 px off), and 241 of 20,000 draws weighted to the bounds failed so.
    half = min(span * w, (min(along, 1 - along) - 0.1) * length)
    chip = a + along * (b - a) + np.outer(np.cos(t), u) * half
    chip += np.outer(np.clip(np.sin(t), 0, None), out) * reach * w
    rot = np.array([[np.cos(angle), -np.sin(angle)], [np.sin(angle), np.cos(angle)]])
    points = (np.concatenate([rect, chip]) @ rot.T + 200).astype(np.float32)
    quad = _largest_quad(cv2.convexHull(points))
    assert quad is not None
    assert corner_error(quad, (rect @ rot.T + 200).astype(np.float32)) < 1e-3


def test_the_quarter_reduction_is_within_a_level_of_the_exact_area_mean() -> None:
    # The locator reduces the frame by two 2x2 halvings (vectorised in OpenCV)
    # instead of one 4x4 average: each halving rounds, so a block's mean may
    # come out up to one level off the exact one.
    rng = np.random.default_rng(11)
    frame, _ = photograph(render_face("QH", DESIGNS["classic"]), LEVELS["moderate"], rng, "felt")
    exact = frame.reshape(180, 4, 320, 4, 3).astype(np.float64).mean(axis=(1, 3))
    reduced = _area_reduce(frame, 0.25)
    assert reduced.shape == (180, 320, 3)
    error = np.abs(reduced - exact)
    assert float(error.max()) <= 1.0
    assert float(error.mean()) < 0.5
