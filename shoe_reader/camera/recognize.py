"""Reading one frame: rank and suit against the calibrated deck, with a confidence.

Rank and suit are classified separately against every calibration sample by
normalised correlation of their shapes. A read is only as confident as its
weakest part, and a part is confident only when it matches its best class well
*and* clearly better than any other class. The suit's ink colour must agree
with the colour that suit was printed in, and the index must have the size the
deck prints it at; a card from another deck fails one of these and is rejected
rather than forced onto the nearest template.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from shoe_reader.camera.calibration import Calibration
from shoe_reader.camera.index import CornerIndex, NoIndex, corners, read_corner
from shoe_reader.camera.locate import Locator, straighten_corner
from table_service.rules.cards import RANKS, SUITS

# A part's confidence: how far its best correlation is above SCORE_FLOOR,
# times how far it is ahead of the runner-up class, each capped at 1.
SCORE_FLOOR = 0.65
SCORE_FULL = 0.9
MARGIN_FULL = 0.12
SURE = 0.9  # one corner read this well needs no second opinion
HEIGHT_TOLERANCE = 0.2
POSITION_TOLERANCE = 4.0  # card pixels (of CARD_W x CARD_H)
COLOUR_TOLERANCE = 0.12


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


def _confidence(score: float, margin: float) -> float:
    s = np.clip((score - SCORE_FLOOR) / (SCORE_FULL - SCORE_FLOOR), 0.0, 1.0)
    m = np.clip(margin / MARGIN_FULL, 0.0, 1.0)
    return float(s * m)


def _classify(vectors: np.ndarray, labels: np.ndarray, v: np.ndarray, classes: str) -> PartRead:
    scores = vectors @ v
    best_by_class = {c: float(scores[labels == c].max()) for c in classes if (labels == c).any()}
    ranked = sorted(best_by_class.items(), key=lambda kv: kv[1], reverse=True)
    label, best = ranked[0]
    second = ranked[1][1] if len(ranked) > 1 else -1.0
    return PartRead(label, best, best - second, _confidence(best, best - second))


def _colour_distance(seen: np.ndarray, printed: np.ndarray) -> float:
    """Distance of a glyph's ink colour from the deck's, forgiving faded colour.

    Blur and the chroma subsampling of JPEG and video codecs mix a thin red
    stroke with the white paper around it: the colour keeps its direction but
    loses strength. So the printed colour is first scaled (within limits) to
    the strength seen, and only what is left over counts.
    """
    power = float(printed @ printed)
    scale = float(np.clip(seen @ printed / power, 0.4, 1.1)) if power > 1e-4 else 1.0
    return float(np.linalg.norm(seen - printed * scale))


def _deck_mismatch(cal: Calibration, rank: str, suit: str, idx: CornerIndex) -> tuple[float, str]:
    """How far the index is from how this deck prints it: 0 is exact, above 1 is another deck.

    Measured against the calibrated deck: the heights of the rank and suit
    glyphs, where the index sits on the card, and the suit's ink colour, each
    in units of its tolerance and combined as a distance. One measure off a
    little (motion blur stretches a glyph) passes; a stray card from another
    deck is usually off in several at once. Also returns the worst measure.
    """
    ref_rank = cal.rank_boxes[cal.ranks == rank].mean(axis=0)
    ref_suit = cal.suit_boxes[cal.suits == suit].mean(axis=0)
    rb, sb = idx.rank.box, idx.suit.box
    checks = {
        "rank index size": abs(rb[3] / ref_rank[3] - 1) / HEIGHT_TOLERANCE,
        "suit index size": abs(sb[3] / ref_suit[3] - 1) / HEIGHT_TOLERANCE,
        "index position": max(abs(rb[0] - ref_rank[0]), abs(rb[1] - ref_rank[1]))
        / POSITION_TOLERANCE,
        "ink colour": _colour_distance(idx.colour, cal.suit_colour(suit)) / COLOUR_TOLERANCE,
    }
    worst = max(checks, key=lambda k: checks[k])
    return float(np.sqrt(sum(v * v for v in checks.values()))), worst


def read_index(cal: Calibration, idx: CornerIndex) -> CardRead:
    """Classify one corner index against the calibration."""
    ranks, suits = cal.ranks, cal.suits
    rank = _classify(cal.rank_vectors, ranks, idx.rank.vector, RANKS)
    suit = _classify(cal.suit_vectors, suits, idx.suit.vector, SUITS)
    code = rank.label + suit.label
    confidence = min(rank.confidence, suit.confidence)
    mismatch, what = _deck_mismatch(cal, rank.label, suit.label, idx)
    if mismatch > 1:
        return CardRead(None, 0.0, f"not the calibrated deck: {what} differs ({code}?)")
    # Within tolerance, a read close to its limit is trusted less.
    confidence *= min(1.0, 2.0 * (1.0 - mismatch))
    return CardRead(code, confidence)


def combine(reads: list[CardRead]) -> CardRead:
    """Both corners of one card: agreeing corners confirm, disagreeing ones cancel out."""
    good = [r for r in reads if r.code is not None]
    if not good:
        return CardRead(None, 0.0, "; ".join(r.reason for r in reads) or "no index")
    good.sort(key=lambda r: r.confidence, reverse=True)
    best = good[0]
    for other in good[1:]:
        if other.code != best.code:
            return CardRead(
                best.code if best.confidence - other.confidence > 0 else None,
                max(best.confidence - other.confidence, 0.0),
                f"corners disagree: {best.code} and {other.code}",
            )
        # Two corners agreeing are read independently: both wrong is far less likely.
        return CardRead(best.code, 1 - (1 - best.confidence) * (1 - other.confidence))
    return best


def read_card(cal: Calibration, card: np.ndarray) -> CardRead:
    """Read a straightened card from both its corner indices."""
    return _read_corners(cal, iter(corners(card)))


def read_outline(cal: Calibration, image: np.ndarray, quad: np.ndarray) -> CardRead:
    """Read the card at ``quad`` in ``image``, warping only the corners it reads."""
    return _read_corners(cal, (straighten_corner(image, quad, turned) for turned in (False, True)))


def _read_corners(cal: Calibration, corner_images: Iterator[np.ndarray]) -> CardRead:
    reads: list[CardRead] = []
    for corner in corner_images:
        try:
            reads.append(read_index(cal, read_corner(corner)))
        except NoIndex as exc:
            reads.append(CardRead(None, 0.0, exc.reason))
        if reads[0].confidence >= SURE:
            break  # the second corner could only confirm: save its time
    return combine(reads)


def check_face(cal: Calibration, code: str, found: list[CornerIndex]) -> str:
    """Why a calibration photograph contradicts its name, or "" if it does not."""
    for idx in found:
        rank = _classify(cal.rank_vectors, cal.ranks, idx.rank.vector, RANKS)
        suit = _classify(cal.suit_vectors, cal.suits, idx.suit.vector, SUITS)
        if rank.label != code[0] and rank.confidence >= 0.5:
            return f"the index looks like rank {rank.label}, not {code[0]}: photograph misnamed?"
        if suit.label != code[1] and suit.confidence >= 0.5:
            return f"the index looks like suit {suit.label}, not {code[1]}: photograph misnamed?"
    return ""


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
