"""Cutting the corner index (rank above suit) out of a straightened card.

The index is found, not assumed: in the top-left corner of the face, ink
blobs that lie wholly inside the corner window are kept (pips and court
frames reach past the window and are dropped), then the lowest row of blobs is
the suit and everything above it is the rank. A "10" is two blobs in one row.
Each glyph becomes a small, size-normalised shape vector; the ink colour of
the suit is measured against the paper around it so white balance cancels.
"""

from __future__ import annotations

from dataclasses import dataclass

import cv2
import numpy as np

from shoe_reader.camera.locate import CORNER_H, CORNER_W

GLYPH = 32
"""Side of the square a glyph is normalised to before comparison."""

# The corner window, in card pixels: wide enough for any usual index, narrow
# enough that the pip columns and court frames cross its edge.
_X0, _X1 = 3, CORNER_W
_Y0, _Y1 = 3, CORNER_H
_MIN_BLOB = 10
_MIN_INK_CONTRAST = 45.0


@dataclass(frozen=True)
class Glyph:
    """One glyph: its shape vector (zero mean, unit length) and where it sits on the card."""

    vector: np.ndarray
    box: tuple[int, int, int, int]  # x, y, w, h in card pixels


@dataclass(frozen=True)
class CornerIndex:
    rank: Glyph
    suit: Glyph
    colour: np.ndarray  # ink relative to paper: (R-G, B-G) of the ratio ink/paper


class NoIndex(Exception):
    """No readable index in this corner; ``reason`` says what was missing."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def _shape_vector(mask: np.ndarray) -> np.ndarray:
    """Pad the glyph to a square keeping its proportions, shrink, and normalise."""
    h, w = mask.shape
    side = max(h, w)
    square = np.zeros((side, side), np.float32)
    y0, x0 = (side - h) // 2, (side - w) // 2
    square[y0 : y0 + h, x0 : x0 + w] = mask
    small = cv2.resize(square, (GLYPH, GLYPH), interpolation=cv2.INTER_AREA).ravel()
    small -= small.mean()
    norm = float(np.linalg.norm(small))
    if norm < 1e-6:
        raise NoIndex("empty glyph")
    return small / norm


def read_corner(card: np.ndarray) -> CornerIndex:
    """The index in the top-left corner of a straightened face (or of its corner alone)."""
    window = card[_Y0:_Y1, _X0:_X1]
    ink = 255 - window.min(axis=2) if window.ndim == 3 else 255 - window
    ink = np.ascontiguousarray(ink)
    _level, binary = cv2.threshold(ink, 0, 255, cv2.THRESH_BINARY + cv2.THRESH_OTSU)
    on = binary > 0
    if on.all() or not on.any():
        raise NoIndex("corner is blank")
    contrast = float(ink[on].mean()) - float(ink[~on].mean())
    if contrast < _MIN_INK_CONTRAST:
        raise NoIndex(f"no ink in the corner (contrast {contrast:.0f})")
    n, labels, stats, _centres = cv2.connectedComponentsWithStats(binary, connectivity=8)
    wh, ww = binary.shape
    keep: list[int] = []
    for i in range(1, n):
        x, y, w, h, area = (int(v) for v in stats[i])
        if area < _MIN_BLOB:
            continue
        if x == 0 or y == 0 or x + w >= ww or y + h >= wh:
            continue  # crosses the window: a pip, a frame or the card's edge
        keep.append(i)
    if len(keep) < 2:
        raise NoIndex("corner index not found")
    # The index is the left-most column of blobs: drop blobs that start to the
    # right of the column's widest extent (stray pips fully inside the window).
    left = min(int(stats[i, cv2.CC_STAT_LEFT]) for i in keep)
    keep.sort(key=lambda i: stats[i, cv2.CC_STAT_TOP])
    rows: list[list[int]] = []
    for i in keep:
        top, height = int(stats[i, cv2.CC_STAT_TOP]), int(stats[i, cv2.CC_STAT_HEIGHT])
        if rows:
            last = rows[-1]
            r_top = min(int(stats[j, cv2.CC_STAT_TOP]) for j in last)
            r_bot = max(int(stats[j, cv2.CC_STAT_TOP] + stats[j, cv2.CC_STAT_HEIGHT]) for j in last)
            overlap = min(r_bot, top + height) - max(r_top, top)
            if overlap > 0.5 * min(height, r_bot - r_top):
                last.append(i)
                continue
        rows.append([i])
    rows = [r for r in rows if min(int(stats[j, cv2.CC_STAT_LEFT]) for j in r) < left + 0.6 * ww]
    if len(rows) < 2:
        raise NoIndex("corner shows no rank above a suit")
    rank_ids = [j for r in rows[:-1] for j in r]
    suit_ids = rows[-1]
    if len(rank_ids) > 4 or len(suit_ids) > 2:
        raise NoIndex("corner is cluttered")
    rank = _glyph(labels, n, stats, rank_ids)
    suit = _glyph(labels, n, stats, suit_ids)
    suit_mask = _members(labels, n, suit_ids)
    paper = window[~on]
    ink_px = window[suit_mask & (ink >= np.percentile(ink[suit_mask], 50))]
    colour = _ink_colour(ink_px, paper)
    return CornerIndex(rank=rank, suit=suit, colour=colour)


def _members(labels: np.ndarray, n: int, ids: list[int]) -> np.ndarray:
    """Mask of the pixels whose label is in ``ids`` (a lookup table: faster than ``isin``)."""
    table = np.zeros(n, bool)
    table[ids] = True
    return table[labels]


def _glyph(labels: np.ndarray, n: int, stats: np.ndarray, ids: list[int]) -> Glyph:
    x0 = min(int(stats[i, cv2.CC_STAT_LEFT]) for i in ids)
    y0 = min(int(stats[i, cv2.CC_STAT_TOP]) for i in ids)
    x1 = max(int(stats[i, cv2.CC_STAT_LEFT] + stats[i, cv2.CC_STAT_WIDTH]) for i in ids)
    y1 = max(int(stats[i, cv2.CC_STAT_TOP] + stats[i, cv2.CC_STAT_HEIGHT]) for i in ids)
    mask = _members(labels[y0:y1, x0:x1], n, ids).astype(np.float32)
    return Glyph(vector=_shape_vector(mask), box=(x0 + _X0, y0 + _Y0, x1 - x0, y1 - y0))


def _ink_colour(ink_px: np.ndarray, paper: np.ndarray) -> np.ndarray:
    if ink_px.ndim < 2 or len(ink_px) == 0 or len(paper) == 0:
        return np.zeros(2, np.float32)
    ratio = ink_px.reshape(-1, 3).mean(axis=0) / np.maximum(paper.reshape(-1, 3).mean(axis=0), 1)
    b, g, r = ratio
    return np.array([r - g, b - g], np.float32)


def corners(card: np.ndarray) -> list[np.ndarray]:
    """Both index corners of a straightened card, each turned upright (top-left, bottom-right)."""
    return [card, np.ascontiguousarray(card[::-1, ::-1])]
