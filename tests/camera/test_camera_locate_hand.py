"""A dealer's hand across the card cuts its silhouette in pieces (issue 37): the pieces the
hand joins are one card under it.

The frames are the benchmark's own studio passes, regenerated from the random state
``python benchmarks/camera.py --levels studio --passes 200`` had once it drew the pass's
card (``--decks guyenne-classic``, pass 78; ``--decks svg-gm-paris``, pass 139;
``--decks svg-konqi-modern``, pass 163). Each test
also takes the joined pieces away and sees the frame or the pass lost again.
"""

from __future__ import annotations

import numpy as np
import pytest

from shoe_reader.camera import locate, recognize
from shoe_reader.camera.calibration import Calibration
from shoe_reader.camera.locate import Locator
from shoe_reader.camera.recognize import Recognizer
from shoe_reader.events import CardSeen, UnreadableCard
from tests.support.benchmark_passes import calibrated, corner_error, located, pass_frames, vote

PASSES: dict[tuple[str, int], tuple[str, int, int, int]] = {
    # (deck, pass): (card, the PCG64 state and increment once the card is drawn, its carry)
    ("guyenne-classic", 78): (
        "JC",
        331286367029159193386894227231450753177,
        257347700949124703954272556460378877139,
        1877150584,
    ),
    ("svg-gm-paris", 139): (
        "JS",
        64184265021202278444473471839881079879,
        167534963021076796806002528129395310319,
        3144858817,
    ),
    ("svg-konqi-modern", 163): (
        "TS",
        267741000581939823504033211698557304090,
        4170965572393300856967156647167621679,
        2670299925,
    ),
}


def _drawn(deck: str, k: int) -> tuple[str, list[tuple[np.ndarray, np.ndarray]]]:
    """Pass ``k``'s card and its frames, each with the card's quad as it was drawn."""
    code, state, inc, carry = PASSES[deck, k]
    return code, pass_frames(deck, k, code, state, inc, carry)


def test_a_finger_across_the_card_leaves_it_outlined_round_both_pieces(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """guyenne-classic's jack of clubs with a finger right across it (its fourth frame, the
    deck's aspect as its calibration measures it): the finger cuts the card's silhouette in
    two, both locators chose an outline 100 px and more off the card, and none of the
    others the search saw lay within 30 px of it. The outline round the two pieces the
    finger joins, put on the card's edges, is the card's (within 5 px), and the first of
    the others. Without it, none is within 30 px again."""
    _code, shots = _drawn("guyenne-classic", 78)
    frame, drawn = shots[3]
    first, again, thorough = located(frame, 0.642)
    assert corner_error(first.quad, drawn) > 100 and corner_error(again.quad, drawn) > 100
    assert corner_error(thorough.outlines(again)[0], drawn) < 5
    monkeypatch.setattr(locate, "PAIRS", False)  # (the pair fit mends it too)
    monkeypatch.setattr(Locator, "_joined", lambda self, work, faint=1.0: [])
    monkeypatch.setattr(locate, "HIDDEN_END", False)  # (nor a side under the hand laid
    monkeypatch.setattr(locate, "RESHAPE_CUT", False)  # by the card's shape, nor cut paper)
    _first, again, thorough = located(frame, 0.642)
    assert min(corner_error(q, drawn) for q in thorough.outlines(again)) > 30


@pytest.fixture(scope="module")
def gm_paris(tmp_path_factory: pytest.TempPathFactory) -> Calibration:
    return calibrated("svg-gm-paris", tmp_path_factory)


def test_a_hand_over_one_end_of_a_court_card_leaves_it_read(
    gm_paris: Calibration, monkeypatch: pytest.MonkeyPatch
) -> None:
    """svg-gm-paris's jack of spades with a hand over one end in every frame: its silhouette
    came in pieces (the figure's, the far corners beside the hand), no outline the search
    saw was the card's but in one frame, and the pass was unreadable (one frame read).
    The pieces the hand joins outline the card, and the pass reads JS; without them it is
    unreadable again, never another card."""
    code, shots = _drawn("svg-gm-paris", 139)
    frames = [f for f, _q in shots]
    (event,) = vote(Recognizer(gm_paris), frames)
    assert isinstance(event, CardSeen) and event.card == code
    monkeypatch.setattr(locate, "PAIRS", False)  # (the pair fit mends it too,
    monkeypatch.setattr(locate, "BESIDE", False)  # and so do the sides found beside the hand)
    monkeypatch.setattr(Locator, "_joined", lambda self, work, faint=1.0: [])
    monkeypatch.setattr(locate, "HIDDEN_END", False)  # (nor a side under the hand laid
    monkeypatch.setattr(locate, "RESHAPE_CUT", False)  # by the card's shape, nor cut paper)
    # (nor the outline followed from the frame read before: each frame searched whole)
    monkeypatch.setattr(recognize, "TRACK", False)
    (event,) = vote(Recognizer(gm_paris), frames)
    assert isinstance(event, UnreadableCard) and event.cause == "covered", event


def test_a_card_fading_into_the_table_beside_a_hand_is_joined_with_its_faint_parts(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """svg-konqi-modern's ten of spades under a hand on the light table, sliding into view
    (three frames whole): its paper differs from the table too little to be joined to
    its print, and the pass was unreadable (two frames read). Joined with what differs
    from the table by half the limit (as the faint silhouette takes it), the pieces
    beside the hand outline the card and the pass reads TS; without, unreadable again.
    (Its sides laid on the card's own steps read it as well, beside a faint edge, and so
    do a side askew under the hand laid again, the paper without the hand's skin and a
    side fitted through the pair of its steps with the most on their line, and the sides
    found beside the hand: they are taken away too, see test_camera_locate_edges.py and
    test_camera_locate_askew.py.)"""
    cal = calibrated("svg-konqi-modern", tmp_path_factory)
    code, shots = _drawn("svg-konqi-modern", 163)
    frames = [f for f, _q in shots]
    (event,) = vote(Recognizer(cal), frames)
    assert isinstance(event, CardSeen) and event.card == code
    joined = Locator._joined
    monkeypatch.setattr(
        Locator, "_joined", lambda self, work, faint=1.0: joined(self, work) if faint == 1 else []
    )
    monkeypatch.setattr(locate, "BESIDE", False)
    monkeypatch.setattr(locate, "_card_steps", lambda prof: prof)
    monkeypatch.setattr(locate, "SQUARE", False)
    monkeypatch.setattr(locate, "SKIN_CUT", False)
    monkeypatch.setattr(locate, "PAIRS", False)
    monkeypatch.setattr(locate, "FAINT_CUT", False)  # (nor the cut outlines of the faint
    monkeypatch.setattr(locate, "RESHAPE_CUT", False)  # paper, completed, nor a side laid
    monkeypatch.setattr(locate, "HIDDEN_END", False)  # by the card's shape under the hand)
    # (nor the outline followed from a frame read: each frame searched whole)
    monkeypatch.setattr(recognize, "TRACK", False)
    (event,) = vote(Recognizer(cal), frames)
    assert isinstance(event, UnreadableCard) and event.cause == "covered", event


PARIS_12 = (
    "KD",
    16927187898592408211187046233972795506,
    55807410728343984531942684752446525213,
    689112086,
)
"""paris's pass 12 (``--decks paris``): the king of diamonds, a hand over its top corner."""


def test_a_hand_over_a_corner_leaves_the_card_outlined_from_the_sides_beside_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """paris's king of diamonds with a hand over a third of it, its top corner and parts
    of the two sides that meet there hidden (every frame): the paper that shows, cut by
    the hand and the figure, gave a rough outline turned off the card, 18-32 px off in
    every frame, and the side snap (12 px each way) could not reach the card's edges from
    it. Its sides found along their whole length where no skin lies (30 px each way, and
    again where they then lie), the outline is within 6 px of the card in six frames of
    eight; without, none is nearer than 18 px."""
    shots = pass_frames("paris", 12, *PARIS_12)
    errors = [corner_error(Locator(aspect=0.643).find(f).quad, q) for f, q in shots]
    assert sum(e < 6 for e in errors) >= 6, errors
    monkeypatch.setattr(locate, "BESIDE", False)
    errors = [corner_error(Locator(aspect=0.643).find(f).quad, q) for f, q in shots]
    assert min(errors) > 15, errors


def test_a_court_card_under_a_hand_over_its_corner_is_read(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same pass read: KD (it was unreadable, "covered", one frame read at 0.68);
    without the sides found beside the hand, unreadable again, never another card."""
    cal = calibrated("paris", tmp_path_factory)
    code, *_state = PARIS_12
    frames = [f for f, _q in pass_frames("paris", 12, *PARIS_12)]
    (event,) = vote(Recognizer(cal), frames)
    assert isinstance(event, CardSeen) and event.card == code
    monkeypatch.setattr(locate, "BESIDE", False)
    monkeypatch.setattr(locate, "HIDDEN_END", False)  # (nor a side laid by the card's shape,
    monkeypatch.setattr(locate, "RESHAPE_CUT", False)  # nor cut paper completed to it)
    (event,) = vote(Recognizer(cal), frames)
    assert isinstance(event, UnreadableCard) and event.cause == "covered", event


def test_a_quad_snapped_once_a_frame_gives_the_outlines_snapped_each_time(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The searches of frames with a hand over the card (guyenne-classic's jack of clubs, a
    finger right across it; paris's king of diamonds, a hand over its corner), each quad
    snapped once a frame (``SNAP_ONCE``) and snapped each time it is tried: the same outlines
    chosen, the same others in the same order, to the bit; and fewer snaps."""
    snaps = 0
    snapped_full = Locator._snapped_full

    def counted(self: Locator, image: np.ndarray, full: np.ndarray, square: bool = True) -> object:
        nonlocal snaps
        snaps += 1
        return snapped_full(self, image, full, square)

    monkeypatch.setattr(Locator, "_snapped_full", counted)
    frames = [(f, 0.642) for f, _q in _drawn("guyenne-classic", 78)[1]]
    frames += [(f, 0.643) for f, _q in pass_frames("paris", 12, *PARIS_12)]
    counts = []
    for frame, aspect in frames:
        found = []
        for once in (True, False):
            monkeypatch.setattr(locate, "SNAP_ONCE", once)
            snaps = 0
            first, again, thorough = located(frame, aspect)
            outlines = thorough.outlines(again)
            found.append((first.quad, again.quad, outlines, snaps))
        (q1, a1, o1, n1), (q2, a2, o2, n2) = found
        for one, two in ((q1, q2), (a1, a2)):
            if one is None or two is None:
                assert one is None and two is None
            else:
                assert np.array_equal(one, two)
        assert len(o1) == len(o2) and all(np.array_equal(a, b) for a, b in zip(o1, o2, strict=True))
        counts.append((n1, n2))
    assert all(n1 <= n2 for n1, n2 in counts) and any(n1 < n2 for n1, n2 in counts), counts
