"""A low club told from its spade by the suit symbol at the smear measured on the rank above
it (shoe_reader.camera.twin_print), on a published deck's calibration."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from pathlib import Path

import cv2
import numpy as np
import pytest

from shoe_reader.camera import recognize, twin_print
from shoe_reader.camera.calibration import Calibration

DECK = "anglo_modern"
"""Its black aces, twos and threes print one rank glyph over a small suit symbol that is 98 %
alike in the two suits (see docs/operations/camera.md)."""


@pytest.fixture(scope="module")
def cal(published_calibration_file: Callable[[str], Path]) -> Calibration:
    return Calibration.load(published_calibration_file(DECK))


def _turned_corner(cal: Calibration, code: str) -> np.ndarray:
    """The ink of the photograph's other corner (the twin print is learned on the first)."""
    assert cal.inks is not None
    ink: np.ndarray = cal.inks[[i for i, c in enumerate(cal.ink_cards) if c == code][1]]
    return ink


def _moving(ink: np.ndarray, length: float, angle: float) -> np.ndarray:
    """``ink`` as a card moving along its long side (``angle`` degrees off it) shows it:
    smeared, a softer lens, a pixel off its place."""
    kernel = twin_print._smear(length, np.deg2rad(90 + angle))
    smeared = cv2.filter2D(ink, -1, kernel, borderType=cv2.BORDER_REPLICATE)
    return np.roll(cv2.GaussianBlur(smeared, (0, 0), 0.8), (1, -1), (0, 1))


def _bgr(ink: np.ndarray) -> np.ndarray:
    """A grey corner window whose ink (relative to its paper) is ``ink``."""
    grey = np.clip(230.0 * (1.0 - ink), 0, 255).astype(np.uint8)
    return np.ascontiguousarray(np.repeat(grey[..., None], 3, axis=2))


@pytest.mark.parametrize("rank", ["A", "2", "3"])
def test_a_smeared_low_club_is_told_from_its_spade_either_way(cal: Calibration, rank: str) -> None:
    twin = cal.twin_print(rank + "C", rank + "S")
    assert twin is not None
    assert cal.twin_print(rank + "S", rank + "C") is twin  # one print for the pair
    for code, sign in ((rank + "C", 1.0), (rank + "S", -1.0)):
        for length in (0.0, 5.0, 9.0):
            for angle in (-10.0, 0.0, 10.0):
                told = twin_print.separation(
                    twin, _moving(_turned_corner(cal, code), length, angle)
                )
                assert told is not None, (code, length, angle)
                separation, fit = told
                assert sign * separation >= recognize.PAIR_OK, (code, length, angle, separation)
                assert fit >= twin_print.SUIT_FIT


def test_a_corner_whose_rank_or_suit_is_covered_has_no_say(cal: Calibration) -> None:
    """A finger's shadow over the rank leaves the smear unmeasured, one over the suit symbol
    leaves it fitting neither card: the corner says nothing either way."""
    twin = cal.twin_print("2C", "2S")
    assert twin is not None
    club = _moving(_turned_corner(cal, "2C"), 5.0, 0.0)
    y0, y1, x0, x1 = twin.rank_box
    over_rank = club.copy()
    over_rank[y0 : (y0 + y1) // 2 + 2, x0:x1] = 0.6
    assert twin_print.separation(twin, over_rank) is None
    s0, s1, t0, t1 = twin.suit_box
    over_suit = club.copy()
    over_suit[(s0 + s1) // 2 :, t0:t1] = 0.7
    assert twin_print.separation(twin, over_suit) is None


def test_the_reader_tells_a_low_club_from_its_spade_by_the_twin_print(cal: Calibration) -> None:
    """The pair separation the reader settles the face's contenders with (and vetoes a
    corner's suit read with) speaks for the club on a smeared club's corner, for the spade
    on a smeared spade's, from the card's corner windows."""
    for code, sign in (("2C", 1.0), ("2S", -1.0)):
        corner = _bgr(_moving(_turned_corner(cal, code), 9.0, 10.0))
        windows = recognize._Windows([partial(np.copy, corner)], cal)
        assert sign * recognize._pair_separation(cal, windows, "2C", "2S") >= recognize.PAIR_OK
        assert sign * recognize._pair_separation(cal, windows, "2S", "2C") <= -recognize.PAIR_OK


def test_a_low_cards_corner_says_the_suit_its_twin_print_says(cal: Calibration) -> None:
    """A smeared two of clubs' corner that the suit part reads as a spade, by little: the
    twin print says the club clearly, and the corner says the club by the sum of the two
    (enough to read the corner alone). With its rank covered the twin print cannot measure
    the smear, and the corner says what the suit part says, as before."""
    club = _moving(_turned_corner(cal, "2C"), 9.0, 10.0)
    spade_read = recognize.PartRead("S", 0.95, 0.2, 0.0)
    windows = recognize._Windows([partial(np.copy, _bgr(club))], cal)
    list(windows)
    said = recognize._twin_checked(cal, windows.one(0), "2", spade_read)
    assert said.label == "C"
    assert said.margin >= recognize.SUIT_ALONE[3] and said.score >= recognize.SUIT_ALONE[1]
    twin = cal.twin_print("2C", "2S")
    assert twin is not None
    y0, y1, x0, x1 = twin.rank_box
    covered = club.copy()
    covered[y0 : (y0 + y1) // 2 + 2, x0:x1] = 0.6
    windows = recognize._Windows([partial(np.copy, _bgr(covered))], cal)
    list(windows)
    assert recognize._twin_checked(cal, windows.one(0), "2", spade_read) == spade_read


def test_the_twin_prints_survive_a_round_trip_and_an_older_file_has_none(
    cal: Calibration, tmp_path: Path
) -> None:
    path = tmp_path / "cal.npz"
    cal.save(path)
    again = Calibration.load(path)
    assert again.ink_cards == cal.ink_cards
    assert again.twin_print("AC", "AS") is not None
    # A calibration saved before the corners' ink was kept: no twin print, the pair part
    # alone tells the two cards (as before).
    with np.load(path) as data:
        kept = {k: data[k] for k in data.files if k not in ("inks", "ink_cards")}
    older = tmp_path / "older.npz"
    np.savez_compressed(older, **kept)
    before = Calibration.load(older)
    assert before.inks is None
    assert before.twin_print("AC", "AS") is None


def test_a_pairs_likeness_is_its_samples_most_alike_and_kept(cal: Calibration) -> None:
    """What the pair separation divides by (``Calibration.pair_likeness``), kept once per
    pair: the most alike samples of the two cards where their pair part looks, the same
    float asked again and either way round."""
    for a, b in (("5S", "5C"), ("8H", "9H"), ("KS", "KC"), ("2D", "3D")):
        part = cal.pair_part(a, b)
        assert part is not None and part.pairs is not None
        want = float(part.pairs[np.ix_(part.labels == a, part.labels == b)].max())
        assert cal.pair_likeness(a, b) == want
        assert cal.pair_likeness(a, b) == want  # (kept)
        assert cal.pair_likeness(b, a) == want  # (the samples' pairs are symmetric)
