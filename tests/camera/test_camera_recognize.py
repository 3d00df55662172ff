"""Recognition on generated frames of the test-only deck (calibrated, never tuned on)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path
from typing import Any

import cv2
import numpy as np
import pytest

from hardware_sim.camera.faces import DESIGNS, all_codes, render_blank, render_face, render_joker
from hardware_sim.camera.scene import LEVELS, photograph
from hardware_sim.camera.synth import shots
from shoe_reader.camera import recognize
from shoe_reader.camera.calibration import Calibration
from shoe_reader.camera.face_match import FaceBook
from shoe_reader.camera.index import corners_of
from shoe_reader.camera.learn import calibrate
from shoe_reader.camera.locate import CARD_H, CARD_W, Outline, straighten, straighten_corner
from shoe_reader.camera.recognize import Recognizer
from shoe_reader.camera.roi import RoiError, parse_roi

from .conftest import HELDOUT

MIN_CONFIDENCE = 0.5

# Frames per level are few to keep CI fast; benchmarks/camera.py measures on many more.
# (The clean level is covered face by face in test_every_face_of_the_deck_is_read.)
# These are single frames: a card pass gives a dozen, and the voting needs three
# confident ones (tests/camera/test_camera_video.py reads whole passes).
ACCURACY = {"mild": 0.95, "moderate": 0.7}


def _confident(rec: Recognizer, frame: np.ndarray) -> str | None:
    seen = rec.read_frame(frame)
    if seen.read is None or seen.read.code is None or seen.read.confidence < MIN_CONFIDENCE:
        return None
    return seen.read.code


@pytest.mark.parametrize("level", list(ACCURACY))
def test_heldout_deck_is_read_accurately_with_no_confident_misread(
    heldout_calibration: Calibration, level: str
) -> None:
    rec = Recognizer(heldout_calibration)
    data = list(shots(HELDOUT, LEVELS[level], 20, seed=100 + len(level)))
    reads = [(s.card, _confident(rec, s.frame)) for s in data]
    misreads = [(truth, got) for truth, got in reads if got is not None and got != truth]
    assert misreads == []
    correct = sum(truth == got for truth, got in reads)
    assert correct / len(reads) >= ACCURACY[level]


@pytest.mark.parametrize("mirrored", [False, True])
@pytest.mark.parametrize("turned", [False, True])
def test_a_corner_warped_alone_is_the_straightened_cards_corner(
    turned: bool, mirrored: bool
) -> None:
    # The reader warps only the corner windows; the calibration cuts them out of
    # the straightened card. Both must take the same corner the same way round.
    rng = np.random.default_rng(4)
    image = cv2.GaussianBlur(rng.integers(0, 255, (400, 300, 3), np.uint8), (0, 0), 2)
    x, y = 37, 61
    quad = np.array(
        [(x, y), (x + CARD_W - 1, y), (x + CARD_W - 1, y + CARD_H - 1), (x, y + CARD_H - 1)],
        np.float32,
    )
    alone = straighten_corner(image, quad, turned, mirrored)
    cut = corners_of(straighten(image, quad), mirrored)[int(turned)]
    assert alone.shape == cut.shape
    assert np.abs(alone.astype(int) - cut.astype(int)).max() <= 1


def _left_handed(code: str) -> np.ndarray:
    """The test deck's face with its index in the top-right and bottom-left corners."""
    return np.ascontiguousarray(render_face(code, HELDOUT)[:, ::-1])


def test_a_deck_with_its_index_top_right_is_found_there_and_read(
    heldout_calibration: Calibration, tmp_path: Path
) -> None:
    """Left-handed decks print the index top right and bottom left: the calibration finds it
    there (those corners are never blank, the usual ones are on the low cards), and every face
    is read from it; the usual deck keeps its index top left."""
    assert not heldout_calibration.mirrored
    rng = np.random.default_rng(21)
    for code in all_codes():
        photo, _ = photograph(_left_handed(code), LEVELS["flat"], rng, "grey")
        cv2.imwrite(str(tmp_path / f"{code}.bmp"), photo)  # (PNG's pixels, uncompressed)
    cal, problems = calibrate(tmp_path)
    assert problems == []
    assert cal.mirrored
    cal.save(tmp_path / "deck.npz")
    assert Calibration.load(tmp_path / "deck.npz").mirrored
    _every_face_read(Recognizer(cal), _left_handed, 22)


def test_harsh_frames_may_be_rejected_but_are_never_misread(
    heldout_calibration: Calibration,
) -> None:
    rec = Recognizer(heldout_calibration)
    reads = [(s.card, _confident(rec, s.frame)) for s in shots(HELDOUT, LEVELS["harsh"], 16, 7)]
    assert [(t, g) for t, g in reads if g is not None and g != t] == []


def test_every_face_of_the_deck_is_read(heldout_calibration: Calibration) -> None:
    _every_face_read(Recognizer(heldout_calibration), lambda code: render_face(code, HELDOUT), 3)


def _every_face_read(rec: Recognizer, face: Callable[[str], np.ndarray], seed: int) -> None:
    """Every face on a clean frame: none misread, at most three unread."""
    rng = np.random.default_rng(seed)
    wrong, rejected = {}, []
    for code in all_codes():
        frame, _ = photograph(face(code), LEVELS["clean"], rng)
        got = _confident(rec, frame)
        if got is None:
            rejected.append(code)
        elif got != code:
            wrong[code] = got
    assert wrong == {}
    assert len(rejected) <= 3, rejected


@pytest.mark.parametrize("kind", ["other deck", "joker", "blank"])
def test_a_face_the_calibration_does_not_know_is_rejected(
    heldout_calibration: Calibration, kind: str
) -> None:
    rec = Recognizer(heldout_calibration)
    rng = np.random.default_rng(9)
    for i in range(5):
        if kind == "other deck":
            face = render_face(all_codes()[i * 6], DESIGNS["foreign"])
        elif kind == "joker":
            face = render_joker(HELDOUT)
        else:
            face = render_blank(HELDOUT)
        frame, _ = photograph(face, LEVELS["clean"], rng)
        seen = rec.read_frame(frame)
        assert seen.present
        assert seen.read is not None  # the card was found and straightened…
        assert seen.read.code is None or seen.read.confidence < MIN_CONFIDENCE  # …but not read
        assert seen.read.reason


def test_the_region_of_interest_limits_where_the_card_is_looked_for(
    heldout_calibration: Calibration,
) -> None:
    rng = np.random.default_rng(4)
    frame, quad = photograph(render_face("9C", HELDOUT), LEVELS["clean"], rng)
    x0, y0 = quad.min(axis=0).astype(int) - 20
    x1, y1 = quad.max(axis=0).astype(int) + 20
    x0, y0 = max(x0, 0), max(y0, 0)
    inside = Recognizer(heldout_calibration, roi=(x0, y0, x1 - x0, y1 - y0)).read_frame(frame)
    assert inside.read is not None and inside.read.code in ("9C", None)
    # A region beside the card sees no card at all.
    other_x = 0 if x0 > 640 else 1280 - 300
    away = Recognizer(heldout_calibration, roi=(other_x, 0, 300, 720)).read_frame(frame)
    assert away.read is None


def test_a_region_outside_the_frame_is_refused(heldout_calibration: Calibration) -> None:
    frame = np.zeros((720, 1280, 3), np.uint8)
    with pytest.raises(RoiError):
        Recognizer(heldout_calibration, roi=(1200, 0, 200, 200)).read_frame(frame)


@pytest.mark.parametrize("text", ["1,2,3", "a,b,c,d", "-1,0,100,100", "0,0,4,4", ""])
def test_bad_regions_are_refused(text: str) -> None:
    with pytest.raises(RoiError):
        parse_roi(text)


def test_a_region_parses() -> None:
    assert parse_roi(" 10, 20,300,400") == (10, 20, 300, 400)


def test_a_clear_card_is_read_from_one_corner_and_a_refused_one_from_both(
    heldout_calibration: Calibration, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The second corner is straightened only when the first does not fit the
    # card's index (most frames): a frame of another deck's card gets both looked at.
    import shoe_reader.camera.recognize as recognize

    turned: list[bool] = []
    real = straighten_corner  # recognize's own, patched there below

    def counting(
        image: np.ndarray, quad: np.ndarray, upside: bool, mirrored: bool = False
    ) -> np.ndarray:
        turned.append(upside)
        return real(image, quad, upside, mirrored)

    monkeypatch.setattr(recognize, "straighten_corner", counting)
    rec = Recognizer(heldout_calibration)
    rng = np.random.default_rng(5)
    frame, _ = photograph(render_face("7H", HELDOUT), LEVELS["clean"], rng, "felt")
    assert _confident(rec, frame) == "7H"
    assert turned == [False]
    turned.clear()
    frame, _ = photograph(render_face("7H", DESIGNS["classic"]), LEVELS["clean"], rng, "felt")
    assert _confident(rec, frame) is None
    assert False in turned and True in turned


def test_a_face_and_index_dispute_is_unreadable_and_tries_no_other_outline(
    heldout_calibration: Calibration, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where the face reads one card and the index another, the frame is unreadable, and
    neither a grown outline nor the thorough search is tried: another outline would only roll
    the dice again between the two cards."""
    from shoe_reader.camera import recognize

    # A deck with a printed outline, so that a weak read would try the grown outlines.
    cal = dataclasses.replace(heldout_calibration, outline=2.0)
    rng = np.random.default_rng(5)
    frame, _ = photograph(render_face("7H", HELDOUT), LEVELS["clean"], rng)
    settled: list[int] = []
    real_settle = recognize._settle

    def index_speaks_for_another(
        *args: Any, **kwargs: Any
    ) -> tuple[int, float, np.ndarray, int | None]:
        best, fit, share, _other = real_settle(*args, **kwargs)
        settled.append(best)
        return best, fit, share, (best + 1) % len(cal.book.codes)

    monkeypatch.setattr(recognize, "_settle", index_speaks_for_another)
    rec = Recognizer(cal)
    thorough: list[int] = []
    real_find = rec._thorough.find

    def counted_find(*args: Any, **kwargs: Any) -> Outline:
        thorough.append(1)
        return real_find(*args, **kwargs)

    monkeypatch.setattr(rec._thorough, "find", counted_find)
    seen = rec.read_frame(frame)
    assert seen.present and seen.read is not None
    assert seen.read.disputed and seen.read.code is None and seen.read.confidence == 0.0
    assert seen.read.reason.startswith("face and index disagree: face reads 7H, index reads ")
    assert len(settled) == 1 and thorough == []
    # Without the dispute the same frame is read, confidently.
    monkeypatch.setattr(recognize, "_settle", real_settle)
    clear = rec.read_frame(frame).read
    assert clear is not None and clear.code == "7H" and not clear.disputed
    assert clear.confidence >= MIN_CONFIDENCE


def test_the_face_says_its_suit_only_where_it_tells_every_other_suit_apart() -> None:
    """A face under a finger that cannot tell a seven of hearts from an eight still says
    hearts when it lies clearly nearer them than any card of another suit (see
    ``recognize.FACE_SUIT``); not when a card of another suit is nearly as near (a seven of
    diamonds), nor when it fits no card well."""
    codes = ("7D", "7H", "8H", "8S")
    pairs = np.array(
        [[1.0, 0.8, 0.6, 0.3], [0.8, 1.0, 0.9, 0.3], [0.6, 0.9, 1.0, 0.3], [0.3, 0.3, 0.3, 1.0]],
        np.float32,
    )
    book = FaceBook(codes, np.arange(4), np.eye(4, dtype=np.float32), pairs, np.arange(4))
    hearts = np.array([0.5, 0.93, 0.92, 0.3], np.float32)
    assert recognize._face_suit(book, hearts) == "H"
    assert recognize._face_suit(book, hearts[[0, 2, 1, 3]]) == "H"  # the eight nearest
    near_diamond = np.array([0.88, 0.93, 0.92, 0.3], np.float32)
    assert recognize._face_suit(book, near_diamond) == ""
    assert recognize._face_suit(book, hearts - 0.4) == ""  # fits nothing well


def test_a_corners_suit_gives_way_where_the_print_that_tells_its_twin_says_the_twin(
    heldout_calibration: Calibration,
) -> None:
    """A corner's suit read is checked against its twin's (clubs against spades) on the print
    where this deck's two cards of that rank differ: a spade read on a club's corner says no
    suit; a spade read on a spade's corner, or on a corner half-way between the two, stands
    (see ``recognize._twin_checked``)."""
    cal = heldout_calibration
    cards = np.array(cal.cards)
    club = cal.maps[(cards == "5C") & ~cal.soft][0]
    spade = cal.maps[(cards == "5S") & ~cal.soft][0]
    said_spade = recognize.PartRead("S", 0.9, 0.6, 0.5)
    vetoed = recognize._twin_checked(cal, club, "5", said_spade)
    assert vetoed.label == "S" and vetoed.margin == 0.0 and vetoed.confidence == 0.0
    assert recognize._twin_checked(cal, spade, "5", said_spade) == said_spade
    between = np.ascontiguousarray((club + spade) / 2)
    assert recognize._twin_checked(cal, between, "5", said_spade) == said_spade
    said_club = recognize.PartRead("C", 0.9, 0.6, 0.5)
    assert recognize._twin_checked(cal, club, "5", said_club) == said_club
