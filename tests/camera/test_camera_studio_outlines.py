"""Studio passes of the benchmark whose card the locator never outlined (issue 37).

Each pass is drawn again from the random state the benchmark had once it drew the card
(``python benchmarks/camera.py --levels studio --passes 200 --decks X``, seed 2024; see
``tests/support/benchmark_passes.py``), the deck calibrated from its own photographs as the
benchmark does it. Each test also takes its change away and sees the pass unreadable again.
"""

from __future__ import annotations

import numpy as np
import pytest

from shoe_reader.camera import locate, recognize
from shoe_reader.camera.calibration import Calibration
from shoe_reader.camera.recognize import Recognizer
from shoe_reader.events import CardSeen, UnreadableCard
from tests.support.benchmark_passes import (
    calibrated,
    confident_codes,
    corner_error,
    pass_frames,
    vote,
)

INC = {
    "svg-konqi-modern": 4170965572393300856967156647167621679,
    "svg-jolly-royal": 332818970255186668360624358539545537713,
    "ancient_french": 174006009437221334770071218986402995903,
}
PASSES: dict[tuple[str, int], tuple[str, int, int | None]] = {
    # (deck, pass): (card, the PCG64 state once the card is drawn, its uint32 carry if any)
    ("svg-konqi-modern", 128): ("9C", 163604245261513339818877968232573427664, None),
    ("svg-konqi-modern", 103): ("5S", 321325734335448241691214808029297087888, 2161726263),
    ("svg-konqi-modern", 177): ("9D", 146612031042877738474573047426948153928, None),
    ("svg-konqi-modern", 198): ("8C", 315440107838315158864318981786504850771, 2026367503),
    ("svg-jolly-royal", 53): ("QH", 211188233025444922013135118848948246445, None),
    ("svg-jolly-royal", 72): ("6S", 198303299241731582987048902509335497283, None),
    ("ancient_french", 122): ("QH", 90128681305376282077335486666615039442, 3783640336),
}


@pytest.fixture(scope="module")
def konqi(tmp_path_factory: pytest.TempPathFactory) -> Calibration:
    return calibrated("svg-konqi-modern", tmp_path_factory)


def _drawn(deck: str, k: int) -> tuple[str, list[tuple[np.ndarray, np.ndarray]]]:
    code, state, carry = PASSES[deck, k]
    return code, pass_frames(deck, k, code, state, INC[deck], carry)


def test_a_faint_card_a_finger_notches_is_outlined_round_its_faint_paper(
    konqi: Calibration, monkeypatch: pytest.MonkeyPatch
) -> None:
    """svg-konqi-modern's nine of clubs on the light table, a finger over its top end (pass
    128): its paper is darker than the table and differs from it by less than the limit, so
    only the faint silhouette finds it, and the finger notches that silhouette below a card's
    fill (0.73 of its rectangle): "no card in view" in five frames. The outlines a hand cuts a
    corner out of are now also looked for round the faint paper: five frames read 9C; without,
    none does and the pass is unreadable again."""
    cal = konqi
    code, shots = _drawn("svg-konqi-modern", 128)
    frames = [f for f, _q in shots]
    (event,) = vote(Recognizer(cal), frames)
    assert isinstance(event, CardSeen) and event.card == code
    monkeypatch.setattr(locate, "FAINT_CUT", False)
    (event,) = vote(Recognizer(cal), frames)
    assert isinstance(event, UnreadableCard), event


@pytest.mark.parametrize(
    ("deck", "k", "i"), [("svg-jolly-royal", 53, 1), ("ancient_french", 122, 2)]
)
def test_the_paper_beside_a_hand_over_one_end_is_completed_to_the_card(
    deck: str,
    k: int,
    i: int,
    tmp_path_factory: pytest.TempPathFactory,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A queen of hearts with a hand over one end (svg-jolly-royal, pass 53; ancient_french,
    pass 122): the paper beside the hand, the hand's edge for one of its sides, is too short
    for a card's rectangle, and each locator took a piece of the face 80-130 px off the card
    (one frame read in each pass). That paper is now put on the card's edges and completed
    to the card's shape, as a whole outline of the wrong shape is: in frame ``i`` its outline
    lies within 3.5 px of the drawn card, and the pass reads QH; without, it is unreadable
    again."""
    cal = calibrated(deck, tmp_path_factory)
    code, shots = _drawn(deck, k)
    frames = [f for f, _q in shots]
    rec = Recognizer(cal)
    frame, drawn = shots[i]
    first = rec.locator.find(frame)
    again = rec._thorough.find(frame, prior=first)
    assert corner_error(again.quad, drawn) > 50
    assert min(corner_error(q, drawn) for q in rec._thorough.outlines(again)) < 3.5
    (event,) = vote(rec, frames)
    assert isinstance(event, CardSeen) and event.card == code
    monkeypatch.setattr(locate, "RESHAPE_CUT", False)
    # (each frame searched whole: the outline followed from a frame read reads QH on)
    monkeypatch.setattr(recognize, "TRACK", False)
    (event,) = vote(Recognizer(cal), frames)
    assert isinstance(event, UnreadableCard), event


def test_a_side_under_a_hand_from_end_to_end_is_laid_by_the_cards_shape(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """svg-jolly-royal's six of spades on the wood table, a hand over its top end (pass 72):
    three sides lie on their edges within 4 px, the fourth is under the hand from end to end
    (22 of its 24 samples on skin), no step of it shows beside the hand, and the outline was
    refused (support 0): one frame read. That side is now laid where the card's shape puts
    it, across from the side that shows: seven frames read 6S, none another card; without,
    the pass is unreadable again."""
    cal = calibrated("svg-jolly-royal", tmp_path_factory)
    code, shots = _drawn("svg-jolly-royal", 72)
    frames = [f for f, _q in shots]
    rec = Recognizer(cal)
    confident = confident_codes(rec, frames)
    assert len(confident) >= 5 and set(confident) == {code}
    (event,) = vote(rec, frames)
    assert isinstance(event, CardSeen) and event.card == code
    monkeypatch.setattr(locate, "HIDDEN_END", False)
    (event,) = vote(Recognizer(cal), frames)
    assert isinstance(event, UnreadableCard), event


@pytest.mark.parametrize("k", [103, 177, 198])
def test_an_outline_a_hand_pulls_off_the_card_is_found_again_beside_the_hand(
    k: int, konqi: Calibration, monkeypatch: pytest.MonkeyPatch
) -> None:
    """svg-konqi-modern's five of spades, nine of diamonds and eight of clubs under a hand or
    a finger on the light and wood tables (passes 103, 177 and 198): the snap bore out
    outlines whose side beside the hand lay 8-25 px off the card (the hand's edge, a glare
    spot beside it), and their indices read another rank (2S, 6S, 8D) or nothing; two
    frames, or one, were read in each pass. A frame still not read has its outlines' sides
    found again beside the hand (within 1-3 px of the drawn card): a third confident frame,
    or a second, and the pass is read; without, it is unreadable again."""
    cal = konqi
    code, shots = _drawn("svg-konqi-modern", k)
    frames = [f for f, _q in shots]
    rec = Recognizer(cal)
    confident = confident_codes(rec, frames)
    assert set(confident) == {code}
    (event,) = vote(rec, frames)
    assert isinstance(event, CardSeen) and event.card == code
    monkeypatch.setattr(recognize, "BESIDE_AGAIN", False)
    # Each frame searched whole, as when this was measured (pass 177 is read without, its
    # card followed from the outline another frame was read on: recognize.TRACK_READ_ON).
    monkeypatch.setattr(recognize, "TRACK", False)
    (event,) = vote(Recognizer(cal), frames)
    assert isinstance(event, UnreadableCard), event
