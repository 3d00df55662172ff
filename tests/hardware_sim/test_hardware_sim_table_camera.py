"""The camera over a real table (the "studio" level): what the scene generator draws."""

from __future__ import annotations

import numpy as np
import pytest

from hardware_sim.camera import hands
from hardware_sim.camera.decks import face
from hardware_sim.camera.scene import FRAME_H, FRAME_W, LEVELS, _outside, card_pass


@pytest.mark.parametrize("seed", range(40))
def test_a_hand_never_covers_both_indices_of_a_diagonal(seed: int) -> None:
    rng = np.random.default_rng(seed)
    aspect = rng.uniform(0.64, 0.75)
    hand = hands.occluder(rng, aspect)
    tl, tr, br, bl = hands._index_cover(hand.alpha, aspect)
    assert min(tl, br) <= hands.CLEAR and min(tr, bl) <= hands.CLEAR
    assert hand.kind in ("finger", "fingers", "thumb", "hand")
    assert hand.alpha.max() > 0.9  # something is drawn
    skin = hand.colour[hand.alpha > 0.9].mean(axis=0)
    assert skin[2] > skin[1] > skin[0]  # red above green above blue: a skin tone


def test_a_pass_slides_into_view_smeared_along_its_travel_at_table_size() -> None:
    rng = np.random.default_rng(3)
    level = LEVELS["studio"]
    widths, cut = [], 0
    for _ in range(12):
        shots = card_pass(face("anglo", "7H"), level, rng, "felt", frames=8)
        assert len(shots) == 8
        for frame, quad in shots:
            assert frame.shape == (FRAME_H, FRAME_W, 3)
            widths.append(float(np.linalg.norm(quad[1] - quad[0])))
        outside = [_outside(q) for _f, q in shots]
        cut += outside[0] > 0.05
        assert all(o < 0.01 for o in outside[3:])  # in view once slid in
        centres = np.array([q.mean(axis=0) for _f, q in shots[3:]])
        steps = np.diff(centres, axis=0)
        assert (steps @ steps[0] > 0).all()  # one way, as a card is dealt
    assert min(widths) > 120 and max(widths) < 220  # 140-200 px wide, under perspective
    assert cut >= 2
    assert motion_spread(hands.motion_kernel(8.0, 0.0)) > motion_spread(np.ones((1, 1)))


def motion_spread(kernel: np.ndarray) -> float:
    _ys, xs = np.nonzero(kernel)
    return float(xs.max() - xs.min()) if len(xs) else 0.0
