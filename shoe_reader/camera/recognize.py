"""Reading one frame: rank and suit against the calibrated deck, with a confidence.

Rank and suit are classified separately, each on the part of the corner the
calibration learned tells them apart, by weighted correlation with every
calibration sample (a pixel or two of play either way). A read is only as
confident as its weakest part, and a part is confident only when it matches
its best class well *and* clearly better than any other class. A card from
another deck, a blank, a joker or a covered corner matches nothing well and is
rejected rather than forced onto the nearest template.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
from threadpoolctl import threadpool_limits

from shoe_reader.camera.calibration import Calibration
from shoe_reader.camera.index import (
    NoIndex,
    Part,
    corners_of,
    features,
    pair_similarities,
    similarities,
)
from shoe_reader.camera.locate import Locator, straighten_corner

# A part's confidence is the product of two measures, each from 0 to 1.
# Fit: the (weighted) cosine with the best sample; the right face seen
# through blur and noise is above FIT_OK, another deck or a blank is below
# FIT_MIN. Separation: of the gap between the best sample and a sample of
# any other class, the share by which the frame lies on the best one's side
# (1: exactly the best sample; 0: half-way; negative: nearer the other);
# below SEP_MIN no confidence, from SEP_FULL full confidence.
FIT_MIN = 0.75
FIT_OK = 0.9
SEP_MIN = 0.5
SEP_FULL = 0.9
WEAK = 0.5
"""Below this a read carries the reason it is weak (the voting does not count it)."""
LONE_CORNER = 0.45
"""Confidence kept by a read from one corner when the other could not be read."""
SEPARATE = 0.998
"""Faces of different ranks (or suits) alike beyond this cosine are not told apart."""
MISNAMED = 0.5
"""A face the rest of the deck reads as another rank or suit this confidently is misnamed."""


@dataclass(frozen=True)
class PartRead:
    label: str
    score: float
    margin: float
    confidence: float


@dataclass(frozen=True)
class CardRead:
    """The read of one card in one frame: a code, or none with the reason."""

    code: str | None
    confidence: float
    reason: str = ""


@dataclass(frozen=True)
class FrameRead:
    """What one frame showed: whether a card was in view, and the read if it was whole."""

    present: bool
    read: CardRead | None
    why: str = ""


def _confidence(fit: float, separation: float) -> float:
    f = np.clip((fit - FIT_MIN) / (FIT_OK - FIT_MIN), 0.0, 1.0)
    s = np.clip((separation - SEP_MIN) / (SEP_FULL - SEP_MIN), 0.0, 1.0)
    return float(f * s)


def _classify(part: Part, fmap: np.ndarray, exclude: np.ndarray | None = None) -> PartRead:
    found = similarities(part, fmap)
    if exclude is not None:
        found = np.where(exclude, -np.inf, found)
    best = int(np.argmax(found))
    label = part.labels[best]
    other = (part.labels != label) & np.isfinite(found)
    if not other.any():
        return PartRead(str(label), float(found[best]), 0.0, 0.0)
    gap = 1.0 - pair_similarities(part)[best, other]
    separation = float(np.min((found[best] - found[other]) / np.maximum(gap, 1e-6)))
    fit = float(found[best])
    return PartRead(str(label), fit, separation, _confidence(fit, separation))


def read_index(cal: Calibration, fmap: np.ndarray) -> CardRead:
    """Classify one corner window's features against the calibration."""
    rank = _classify(cal.rank_part, fmap)
    suit = _classify(cal.suit_part, fmap)
    code = rank.label + suit.label
    confidence = min(rank.confidence, suit.confidence)
    weak = rank if rank.confidence <= suit.confidence else suit
    what = "rank" if weak is rank else "suit"
    why = f"{what} not clear ({code}? fit {weak.score:.2f}, separation {weak.margin:.2f})"
    if confidence <= 0:
        return CardRead(None, 0.0, why)
    return CardRead(code, confidence, why if confidence < WEAK else "")


def combine(reads: list[CardRead]) -> CardRead:
    """Both corners of one card: agreeing corners confirm, disagreeing ones cancel out."""
    good = [r for r in reads if r.code is not None]
    if not good:
        return CardRead(None, 0.0, "; ".join(r.reason for r in reads) or "no index")
    good.sort(key=lambda r: r.confidence, reverse=True)
    best = good[0]
    for other in good[1:]:
        if other.code != best.code:
            return CardRead(None, 0.0, f"corners disagree: {best.code} and {other.code}")
        # Two corners agreeing are read independently: both wrong is far less likely.
        both = 1 - (1 - best.confidence) * (1 - other.confidence)
        return CardRead(best.code, both, best.reason if both < WEAK else "")
    if len(reads) > 1:
        # One corner alone (the other covered or unclear) has no second opinion.
        others = "; ".join(r.reason for r in reads if r is not best and r.reason)
        return CardRead(best.code, best.confidence * LONE_CORNER, others or "one corner only")
    return best


def read_card(cal: Calibration, card: np.ndarray) -> CardRead:
    """Read a straightened card from both its corner windows."""
    return _read_corners(cal, iter(corners_of(card)))


def read_outline(cal: Calibration, image: np.ndarray, quad: np.ndarray) -> CardRead:
    """Read the card at ``quad`` in ``image``, warping only the corners it reads."""
    return _read_corners(cal, (straighten_corner(image, quad, turned) for turned in (False, True)))


def _read_corners(cal: Calibration, corner_images: Iterator[np.ndarray]) -> CardRead:
    reads: list[CardRead] = []
    for corner in corner_images:
        try:
            reads.append(read_index(cal, features(corner)))
        except NoIndex as exc:
            reads.append(CardRead(None, 0.0, exc.reason))
    return combine(reads)


def check_deck(cal: Calibration) -> dict[str, str]:
    """Faces that would teach a misread, by card, with why.

    A photograph under the wrong name (``KD.png`` showing the king of spades)
    is read by the rest of the deck as what it shows. And within the part that
    tells ranks (or suits) apart, two faces of different classes must differ:
    if they are all but identical the deck (or the same face photographed
    twice) would be read by a coin toss, and the calibration names both faces.
    """
    problems: dict[str, str] = {}
    cards = np.array(cal.cards)
    for i, code in enumerate(cal.cards):
        if code in problems or cal.soft[i]:
            continue
        # Only the suit is asked: the other faces of a suit share its symbol,
        # while a rank's other faces differ from it in every suit-coloured pip,
        # so a lone rank is often nearer a neighbour of its own suit.
        suit = _classify(cal.suit_part, cal.maps[i], exclude=cards == code)
        if suit.label != code[1] and suit.confidence >= MISNAMED:
            problems[code] = (
                f"the index looks like suit {suit.label}, not {code[1]}: photograph misnamed?"
            )
    for part, what in ((cal.rank_part, "rank"), (cal.suit_part, "suit")):
        alike = pair_similarities(part)
        sharp = ~cal.soft
        differ = (part.labels[:, None] != part.labels[None, :]) & sharp[:, None] & sharp[None, :]
        for i, j in zip(*np.nonzero((alike > SEPARATE) & differ), strict=True):
            if i < j:
                a, b = str(cards[i]), str(cards[j])
                twice = "same face photographed twice?"
                problems.setdefault(a, f"{what} cannot be told from {b}'s: {twice}")
                problems.setdefault(b, f"{what} cannot be told from {a}'s: {twice}")
    return problems


class RoiError(ValueError):
    """The region of interest does not fit in the camera's frames."""


def parse_roi(text: str) -> tuple[int, int, int, int]:
    """``x,y,w,h`` in frame pixels. Raises :class:`RoiError`."""
    parts = text.replace(" ", "").split(",")
    try:
        x, y, w, h = (int(p) for p in parts)
    except ValueError:
        raise RoiError(f"region must be x,y,w,h in pixels, got {text!r}") from None
    if x < 0 or y < 0 or w < 16 or h < 16:
        raise RoiError(f"region {text!r} must start inside the frame and be at least 16x16")
    return x, y, w, h


class Recognizer:
    """Locate, straighten and read the card in a region of interest of each frame."""

    def __init__(
        self,
        calibration: Calibration,
        roi: tuple[int, int, int, int] | None = None,
        locator: Locator | None = None,
    ) -> None:
        # The per-frame products are small: BLAS threads only add overhead (and
        # contend with the rest of the process), so matrix maths runs on one core.
        threadpool_limits(limits=1, user_api="blas")
        self.calibration = calibration
        self.roi = roi
        self.locator = locator or Locator(aspect=calibration.aspect)

    def read_frame(self, frame: np.ndarray) -> FrameRead:
        image = frame
        if self.roi is not None:
            x, y, w, h = self.roi
            if x + w > frame.shape[1] or y + h > frame.shape[0]:
                raise RoiError(
                    f"region {x},{y},{w},{h} does not fit a {frame.shape[1]}x{frame.shape[0]} frame"
                )
            image = frame[y : y + h, x : x + w]
        outline = self.locator.find(image)
        if outline.quad is None:
            return FrameRead(outline.present, None, outline.why)
        return FrameRead(True, read_outline(self.calibration, image, outline.quad))
