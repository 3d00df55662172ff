"""Studio passes of the benchmark whose card the locator never outlined (issue 37).

Each pass is drawn again from the random state the benchmark had once it drew the card
(``python benchmarks/camera.py --levels studio --passes 200 --decks X``, seed 2024; see
``tests/support/benchmark_passes.py``), the deck calibrated from its own photographs as the
benchmark does it. Each test also takes its change away and sees the pass unreadable again.
"""

from __future__ import annotations

import numpy as np
import pytest

from shoe_reader.camera import locate
from shoe_reader.camera.recognize import Recognizer
from shoe_reader.events import CardSeen, UnreadableCard
from tests.support.benchmark_passes import calibrated, pass_frames, vote

INC = {
    "svg-konqi-modern": 4170965572393300856967156647167621679,
}
PASSES: dict[tuple[str, int], tuple[str, int, int | None]] = {
    # (deck, pass): (card, the PCG64 state once the card is drawn, its uint32 carry if any)
    ("svg-konqi-modern", 128): ("9C", 163604245261513339818877968232573427664, None),
}


def _drawn(deck: str, k: int) -> tuple[str, list[tuple[np.ndarray, np.ndarray]]]:
    code, state, carry = PASSES[deck, k]
    return code, pass_frames(deck, k, code, state, INC[deck], carry)


def test_a_faint_card_a_finger_notches_is_outlined_round_its_faint_paper(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """svg-konqi-modern's nine of clubs on the light table, a finger over its top end (pass
    128): its paper is darker than the table and differs from it by less than the limit, so
    only the faint silhouette finds it, and the finger notches that silhouette below a card's
    fill (0.73 of its rectangle): "no card in view" in five frames. The outlines a hand cuts a
    corner out of are now also looked for round the faint paper: five frames read 9C; without,
    none does and the pass is unreadable again."""
    cal = calibrated("svg-konqi-modern", tmp_path_factory)
    code, shots = _drawn("svg-konqi-modern", 128)
    frames = [f for f, _q in shots]
    (event,) = vote(Recognizer(cal), frames)
    assert isinstance(event, CardSeen) and event.card == code
    monkeypatch.setattr(locate, "FAINT_CUT", False)
    (event,) = vote(Recognizer(cal), frames)
    assert isinstance(event, UnreadableCard), event
