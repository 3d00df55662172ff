"""Two cards of one rank in twin suits (a club and a spade, a heart and a diamond) told apart
by their corner's suit symbol at the frame's own smear, measured on the rank printed above it.

A card dealt out of the shoe is smeared along its travel by the exposure, by a length that
changes from frame to frame. A smeared club's small suit symbol has looked more like a sharp
or a differently smeared spade than like its own (the corner's feature maps, compared with
each card's prints smeared by a few fixed lengths, said the spade of anglo_modern's two of
clubs in most frames): each card was allowed the smear that suited it best. Here the smear
is measured first, on the print the two cards share (the rank above the suit symbol, the
same glyph on both), and both suit symbols are then compared at that one smear, at the
straightened card's full resolution (at the feature maps' half resolution it said a wrong
suit where it does not).

Measured on the development decks' cached studio frames (seed 2024, every corner of every
frame of the aces, twos and threes, at the reader's outlines): where
both fits hold (:data:`RANK_FIT`, :data:`SUIT_FIT`), 2,407 corners of ten deck-and-colour
sets said the right suit by 0.35 or more in 2,362 and the wrong one in none; the pair part
the reader used before (see ``recognize._pair_separation``) said the wrong one by 0.35 in
12 of 999 of them, the right one in 594. A corner under a finger or a shadow fits neither
and says nothing.
"""

from __future__ import annotations

from dataclasses import dataclass

import cv2
import numpy as np

from shoe_reader.camera import kernels

SMEARS = (0, 2, 4, 6, 8, 10, 12, 14)
"""Smear lengths (straightened pixels) tried; a studio card 140 px wide smeared 9 frame pixels
is smeared 13 straightened pixels."""
ANGLES = (-20, -10, 0, 10, 20)
"""Directions of a smear (degrees from the card's long side): a card travels along its long
side, give or take a little."""
LENS = (0.6, 1.2)
"""Lens blurs (straightened pixels) tried with each smear."""
SEARCH = 4
"""Straightened pixels the index may lie off its calibrated place (an outline found off)."""
RANK_FIT = 0.95
"""Correlation of the shared print (the rank) with the two cards' smeared prints below which a
corner has no say: the smear is not measured (a finger, a shadow or glare over the rank)."""
SUIT_FIT = 0.93
"""Correlation of the suit symbol with the better of the two cards' at the measured smear
below which a corner has no say (a finger or a shadow across the symbol)."""
MIN_INK = 0.4
"""Ink (relative to the paper) of the print that locates the suit symbol and the rank."""
_EDGE = 4
"""Pixels of the window along the card's edges left out (a printed outline, the table)."""
RANK_ROWS = 24
"""Rows of the rank's print, up from its foot, the smear is measured on (a big rank needs no
more, and costs more to compare)."""
SELF_TOLD = 0.25
"""Separation (see :func:`separation`) by which a twin print must tell each of the two
calibration corners it was learned from as its own card, or it is not kept (``None``: the
pair is told as it is without a twin print). Those corners are the easiest it will ever be
shown, sharp and where it was learned: a print that does not say them measures something
other than the two suit symbols. Seed 13's photographs taught tango's AC/AS a print that
said nothing of the ace of clubs' own corner (its suit symbol fitting neither card to
``SUIT_FIT``: tango's suit symbol runs past the corner window's edge); in the frames it said
AC on the ace of spades' corners, four frames of two passes read confidently as AC. Every
print kept told its own corners by 0.35 or more (svg-standard's AC/AS at seed 2024 0.35 and
0.37, most 0.5-1.2; the six hard decks at seeds 5, 7, 11, 13 and 17, the fourteen
development decks and the check decks at seed 2024), and below this the check decks'
tango_nuevo 2D/2H at 0.14 (its index at one end only); the others not kept said nothing of
one of their corners (tango at seed 13, svg-ancient-egyptians' 2C/2S and 3C/3S, svg-oxygen's
AC/AS and 3D/3H)."""
SELF_CHECK = True
"""Twin prints are checked on their own calibration corners (see ``SELF_TOLD``); off, every
print learned is kept, as before."""


@dataclass(frozen=True)
class TwinPrint:
    """Two cards' corner prints, smeared every way :data:`SMEARS` x :data:`ANGLES` x
    :data:`LENS` say: the shared rank where it is measured, and each card's suit symbol."""

    rank_box: tuple[int, int, int, int]  # y0, y1, x0, x1 (straightened corner pixels)
    suit_box: tuple[int, int, int, int]
    rank: np.ndarray  # (k, R) the two cards' mean rank print, each smear's, zero mean unit length
    suit_a: np.ndarray  # (k, S) the first card's suit symbol, zero mean unit length
    suit_b: np.ndarray  # (k, S) the second card's
    gap: np.ndarray  # (k,) 1 - correlation of the two suit symbols at each smear


def ink(corner: np.ndarray) -> np.ndarray:
    """A corner window's ink relative to its paper, at full resolution, float32 (h, w)."""
    maps, _paper = kernels.ink_maps(np.ascontiguousarray(corner), 90.0)
    return np.ascontiguousarray(maps[..., 0])


def _kernels() -> list[np.ndarray]:
    out = []
    for length in SMEARS:
        for angle in ANGLES if length else (0,):
            out.append(_smear(length, np.deg2rad(90 + angle)))
    return out


def _smear(length: float, angle: float) -> np.ndarray:
    """A line of ``length`` pixels along ``angle``, summing to 1 (1x1 for none)."""
    if length < 1:
        return np.ones((1, 1), np.float32)
    half = int(np.ceil(length / 2))
    kernel = np.zeros((2 * half + 1, 2 * half + 1), np.float32)
    for t in np.linspace(-length / 2, length / 2, int(np.ceil(length * 3))):
        x, y = half + t * np.cos(angle), half + t * np.sin(angle)
        x0, y0 = int(np.floor(x)), int(np.floor(y))
        fx, fy = x - x0, y - y0
        for yy, xx, w in ((y0, x0, (1 - fx) * (1 - fy)), (y0, x0 + 1, fx * (1 - fy)),
                          (y0 + 1, x0, (1 - fx) * fy), (y0 + 1, x0 + 1, fx * fy)):  # fmt: skip
            if 0 <= yy < kernel.shape[0] and 0 <= xx < kernel.shape[1]:
                kernel[yy, xx] += w
    normalised: np.ndarray = kernel / kernel.sum()
    return normalised


KERNELS = _kernels()
_MIDDLE = len(LENS) * (1 + len(ANGLES) + len(ANGLES) // 2)
"""The smear the rank is first placed with: 4 pixels along the card, the sharper lens."""


def _unit(x: np.ndarray) -> np.ndarray:
    """Rows made zero mean and unit length (a correlation is then their product)."""
    x = x - x.mean(axis=-1, keepdims=True)
    unit: np.ndarray = x / np.maximum(np.linalg.norm(x, axis=-1, keepdims=True), 1e-9)
    return unit


def _aligned(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``b`` moved by the whole pixels (up to 3) that make it most like ``a``."""
    best, out = np.inf, b
    h, w = a.shape
    for dy in range(-3, 4):
        for dx in range(-3, 4):
            shift = np.array([[1, 0, dx], [0, 1, dy]], np.float32)
            moved = cv2.warpAffine(b, shift, (w, h), borderMode=cv2.BORDER_REPLICATE)
            err = float(((a - moved)[_EDGE:-_EDGE, _EDGE:-_EDGE] ** 2).sum())
            if err < best:
                best, out = err, moved
    return out


def _boxes(
    a: np.ndarray, b: np.ndarray
) -> tuple[tuple[int, int, int, int], tuple[int, int, int, int]] | None:
    """Where the two prints' suit symbols differ, and the rank printed above them (``None``:
    no such layout, e.g. the two corners differ everywhere, as court figures do)."""
    h, w = a.shape
    moved = _aligned(a, b)
    diff = np.abs(a - moved)
    diff[:, :_EDGE] = 0
    diff[: _EDGE + 2] = 0
    diff[:, w * 9 // 16 :] = 0  # the index lies in the window's left half
    rows = diff.sum(axis=1)
    if float(rows.max()) <= 0:
        return None
    on = np.append(rows > 0.3 * rows.max(), False)
    runs, start = [], -1
    for y, v in enumerate(on):
        if v and start < 0:
            start = y
        elif not v and start >= 0:
            runs.append((float(rows[start:y].sum()), start, y))
            start = -1
    _mass, ya, yb = max(runs)
    ys, xs = np.nonzero(diff[ya:yb] > MIN_INK)
    if not len(xs):
        return None
    suit = (max(ya - 2, 0), min(yb + 2, h), max(int(xs.min()) - 1, 0), min(int(xs.max()) + 2, w))
    both = np.maximum(a, moved)
    x0 = max(suit[2] - 3, _EDGE)
    above = both[: suit[0] - 2, x0 : suit[3] + 3].copy()
    above[: _EDGE + 1] = 0
    ys, xs = np.nonzero(above > MIN_INK)
    if len(ys) < 20 or suit[1] - suit[0] > h // 2:
        return None
    bottom = int(ys.max()) + 1
    top = max(int(ys.min()) - 2, 0, bottom - RANK_ROWS)
    rank = (top, bottom, int(xs.min()) + x0 - 2, int(xs.max()) + x0 + 3)
    return rank, suit


def learn(a: np.ndarray, b: np.ndarray) -> TwinPrint | None:
    """The twin print of two cards' calibration corners' ink (see :func:`ink`), ``None``
    where they share no rank print above a suit symbol, or where the print does not tell
    those two corners apart itself (see ``SELF_TOLD``)."""
    found = _boxes(a, b)
    if found is None:
        return None
    rank_box, suit_box = found
    y0, y1, x0, x1 = rank_box
    s0, s1, t0, t1 = suit_box
    original_b = b
    b = _aligned(a, b)
    ranks, suits_a, suits_b = [], [], []
    for kernel in KERNELS:
        for sigma in LENS:
            sa, sb = (
                cv2.GaussianBlur(
                    cv2.filter2D(x, -1, kernel, borderType=cv2.BORDER_REPLICATE), (0, 0), sigma
                )
                for x in (a, b)
            )
            ranks.append((0.5 * (sa + sb))[y0:y1, x0:x1].ravel())
            suits_a.append(sa[s0:s1, t0:t1].ravel())
            suits_b.append(sb[s0:s1, t0:t1].ravel())
    ua, ub = _unit(np.array(suits_a)), _unit(np.array(suits_b))
    gap = np.maximum(1.0 - np.einsum("ij,ij->i", ua, ub), 1e-3)
    twin = TwinPrint(rank_box, suit_box, _unit(np.array(ranks)), ua, ub, gap)
    if SELF_CHECK and not _tells_own(twin, a, original_b):
        return None
    return twin


def _tells_own(twin: TwinPrint, a: np.ndarray, b: np.ndarray) -> bool:
    """Whether ``twin`` says ``a`` of the first card's corner and ``b`` of the second's, each
    by ``SELF_TOLD`` (see there)."""
    for corner, sign in ((a, 1.0), (b, -1.0)):
        told = separation(twin, corner)
        if told is None or sign * told[0] < SELF_TOLD:
            return False
    return True


def separation(twin: TwinPrint, corner_ink: np.ndarray) -> tuple[float, float] | None:
    """How clearly a corner's ink says the first card rather than the second (negative: the
    second), in units of how far apart the two suit symbols are at the corner's smear, and
    how well the symbol fits the better of the two; ``None`` where the corner cannot say
    (the rank or the symbol does not fit either card well: a finger, a shadow, glare)."""
    y0, y1, x0, x1 = twin.rank_box
    h, w = corner_ink.shape
    m = SEARCH
    big = np.pad(corner_ink, m, mode="edge")
    rh, rw = y1 - y0, x1 - x0
    # Every placement of the rank's box within SEARCH pixels, as rows.
    region = big[y0 : y1 + 2 * m, x0 : x1 + 2 * m]
    windows = np.lib.stride_tricks.sliding_window_view(region, (rh, rw))
    places = _unit(windows.reshape(-1, rh * rw))
    # The place first (one middling smear), then every smear at that place and around it.
    side = 2 * m + 1
    at = int(np.argmax(places @ twin.rank[_MIDDLE]))
    py, px = divmod(at, side)
    near = [
        (yy, xx)
        for yy in range(max(py - 1, 0), min(py + 2, side))
        for xx in range(max(px - 1, 0), min(px + 2, side))
    ]
    scores = places[[yy * side + xx for yy, xx in near]] @ twin.rank.T  # (places, smears)
    best = np.unravel_index(int(np.argmax(scores)), scores.shape)
    if float(scores[best]) < RANK_FIT:
        return None
    k = int(best[1])
    dy, dx = near[int(best[0])][0] - m, near[int(best[0])][1] - m
    s0, s1, t0, t1 = twin.suit_box
    sa = sb = -1.0
    for ey in (-1, 0, 1):
        for ex in (-1, 0, 1):
            ya, xa = s0 + dy + ey + m, t0 + dx + ex + m
            if ya < 0 or xa < 0 or ya + s1 - s0 > h + 2 * m or xa + t1 - t0 > w + 2 * m:
                continue
            patch = _unit(big[ya : ya + s1 - s0, xa : xa + t1 - t0].ravel())
            sa = max(sa, float(patch @ twin.suit_a[k]))
            sb = max(sb, float(patch @ twin.suit_b[k]))
    if max(sa, sb) < SUIT_FIT:
        return None
    return (sa - sb) / float(twin.gap[k]), max(sa, sb)
