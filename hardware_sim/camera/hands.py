"""What lies over a card at a real table: the dealer's fingers and hand, and a glare spot.

A dealer slides a card out of the shoe with a finger or two on it, or holds
it by one side with the thumb across its face. The occluder is drawn in the
card's own coordinates (so it moves with the card through a pass) on a canvas
reaching beyond the card (a hand comes from outside it), in a skin tone,
shaded as a rounded finger is, with a nail and a soft shadow on the card.
It may cover one corner index, never both: a dealer trained to show a card
shows one corner of it (both diagonals are kept clear, for decks that print
the index top right too).
"""

from __future__ import annotations

from dataclasses import dataclass

import cv2
import numpy as np

SKIN = (
    (182, 200, 236),
    (160, 182, 228),
    (132, 160, 210),
    (108, 138, 190),
    (82, 108, 160),
    (60, 80, 122),
    (44, 56, 88),
)
"""Skin tones, BGR, pale to dark."""

PX = 120
"""Canvas pixels per card width."""
REACH = 0.7
"""How far beyond the card (card widths) the canvas reaches on every side."""
INDEX_ZONE = (0.24, 0.2)
"""A corner index's extent: share of the card's width, and of its height."""
CLEAR = 0.004
"""Share of an index zone a finger may touch and still leave that index readable."""


@dataclass(frozen=True)
class Occluder:
    """A hand drawn on a canvas in card coordinates: colour (BGR float32), coverage and the
    shadow it casts (0..1 float32), and the canvas's card-to-canvas offset and scale."""

    colour: np.ndarray
    alpha: np.ndarray
    shadow: np.ndarray
    kind: str


CANVAS_TO_CARD = np.array([[1 / PX, 0, -REACH], [0, 1 / PX, -REACH], [0, 0, 1]], np.float64)
"""The map from canvas pixels to card coordinates (card width 1, height 1 / aspect)."""


def _canvas(aspect: float) -> tuple[int, int]:
    height = 1 / aspect
    return round((1 + 2 * REACH) * PX), round((height + 2 * REACH) * PX)


def _to_px(u: float, v: float) -> tuple[int, int]:
    return round((u + REACH) * PX), round((v + REACH) * PX)


def _fingers(
    rng: np.random.Generator, aspect: float, kind: str
) -> list[tuple[tuple[float, float], tuple[float, float], float]]:
    """Each finger as (base, tip, width) in card coordinates."""
    height = 1 / aspect
    side = int(rng.integers(4))  # 0 left, 1 right, 2 top, 3 bottom
    along = rng.uniform(0.3, 0.7)
    if side < 2:
        edge = (0.0 if side == 0 else 1.0, along * height)
        inward = np.array([1.0 if side == 0 else -1.0, 0.0])
        span = 1.0
    else:
        edge = (along, 0.0 if side == 2 else height)
        inward = np.array([0.0, 1.0 if side == 2 else -1.0])
        span = height
    turn = np.deg2rad(rng.uniform(-30, 30))
    rot = np.array([[np.cos(turn), -np.sin(turn)], [np.sin(turn), np.cos(turn)]])
    d = rot @ inward
    across = np.array([-d[1], d[0]])
    if kind == "thumb":
        count, width, depth = 1, rng.uniform(0.2, 0.28), rng.uniform(0.25, 0.5) * span
    elif kind == "finger":
        count, width, depth = 1, rng.uniform(0.12, 0.18), rng.uniform(0.3, 0.75) * span
    else:  # two fingers, or a hand's fingers
        count = 2 if kind == "fingers" else int(rng.integers(3, 5))
        width, depth = rng.uniform(0.11, 0.16), rng.uniform(0.25, 0.6) * span
    out = []
    for k in range(count):
        offset = (k - (count - 1) / 2) * width * 1.05
        base = np.asarray(edge) + across * offset - d * 0.6
        reach = depth * rng.uniform(0.8, 1.1) if count > 1 else depth
        tip = np.asarray(edge) + across * offset + d * reach
        out.append(((float(base[0]), float(base[1])), (float(tip[0]), float(tip[1])), width))
    return out


def _index_cover(alpha: np.ndarray, aspect: float) -> list[float]:
    """Share of each corner's index zone (TL, TR, BR, BL) the occluder covers."""
    height = 1 / aspect
    zw, zh = INDEX_ZONE[0], INDEX_ZONE[1] * height
    boxes = [(0, 0), (1 - zw, 0), (1 - zw, height - zh), (0, height - zh)]
    cover = []
    for u, v in boxes:
        x0, y0 = _to_px(u, v)
        x1, y1 = _to_px(u + zw, v + zh)
        cover.append(float(alpha[y0:y1, x0:x1].mean()))
    return cover


def occluder(rng: np.random.Generator, aspect: float) -> Occluder:
    """A finger, two fingers, a thumb or a hand over the card, never over both indices of a
    diagonal (tried again until it is not)."""
    w, h = _canvas(aspect)
    for _attempt in range(50):
        kind = ("finger", "fingers", "thumb", "hand")[int(rng.integers(4))]
        fingers = _fingers(rng, aspect, kind)
        mask = np.zeros((h, w), np.uint8)
        for base, tip, width in fingers:
            cv2.line(mask, _to_px(*base), _to_px(*tip), 255, max(2, round(width * PX)), cv2.LINE_AA)
        if kind == "hand":  # the palm, outside the card behind the fingers
            (bx, by), (tx, ty), width = fingers[len(fingers) // 2]
            d = np.array([tx - bx, ty - by])
            d /= max(float(np.linalg.norm(d)), 1e-6)
            centre = np.array([bx, by]) - d * 0.1
            axes = (round(0.42 * PX), round(0.3 * PX))
            angle = float(np.degrees(np.arctan2(d[1], d[0])))
            cv2.ellipse(mask, _to_px(*centre), axes, angle, 0, 360, 255, -1, cv2.LINE_AA)
        alpha = mask.astype(np.float32) / 255
        cover = _index_cover(alpha, aspect)
        if min(cover[0], cover[2]) <= CLEAR and min(cover[1], cover[3]) <= CLEAR:
            break
    else:  # pragma: no cover - fifty draws all over both indices
        alpha = np.zeros((h, w), np.float32)
        kind = "none"
        fingers = []
    # A rounded finger is lit along its middle and darker towards its sides.
    inside = cv2.distanceTransform((alpha > 0.5).astype(np.uint8), cv2.DIST_L2, 3)
    half = max(min(f[2] for f in fingers) * PX / 2, 1.0) if fingers else 1.0
    light = 0.7 + 0.3 * np.clip(inside / half, 0, 1)
    tone = np.array(SKIN[int(rng.integers(len(SKIN)))], np.float32) * rng.uniform(0.9, 1.05)
    colour = light[..., None] * tone[None, None, :]
    colour += rng.normal(0, 4, (h, w, 1)).astype(np.float32)
    nails = np.zeros((h, w), np.uint8)
    if kind != "hand" or rng.random() < 0.5:
        for base, tip, width in fingers:
            d = np.array(tip) - np.array(base)
            d /= max(float(np.linalg.norm(d)), 1e-6)
            centre = np.array(tip) - d * width * 0.35
            axes = (round(width * PX * 0.3), round(width * PX * 0.22))
            angle = float(np.degrees(np.arctan2(d[1], d[0])))
            cv2.ellipse(nails, _to_px(*centre), axes, angle, 0, 360, 255, -1, cv2.LINE_AA)
    nail = (nails.astype(np.float32) / 255 * alpha)[..., None]
    colour = colour * (1 - 0.45 * nail) + np.array([205, 200, 235], np.float32) * 0.45 * nail
    shadow = cv2.GaussianBlur(alpha, (0, 0), 0.04 * PX)
    shadow = np.roll(shadow, (round(0.03 * PX), round(0.04 * PX)), axis=(0, 1))
    return Occluder(np.clip(colour, 0, 255).astype(np.float32), alpha, shadow, kind)


@dataclass(frozen=True)
class Glare:
    """A glare spot: brightness added (0..255, float32) over the frame's box at ``x0, y0``;
    nothing is added outside it (less than one grey level, which the frame's integer
    pixels drop)."""

    added: np.ndarray
    x0: int
    y0: int


def glare(
    shape: tuple[int, int], centre: tuple[float, float], size: float, rng: np.random.Generator
) -> Glare:
    """A glare spot from the table lights: an elliptic Gaussian of about ``size`` pixels
    round ``centre``, computed only where it adds a grey level or more."""
    h, w = shape
    sx, sy = size * rng.uniform(0.6, 1.0), size * rng.uniform(0.4, 0.8)
    angle = rng.uniform(0, np.pi)
    peak = rng.uniform(140, 260)
    c, s = np.cos(angle), np.sin(angle)
    reach = np.sqrt(2 * np.log(peak)) + 0.1  # beyond it, less than one grey level
    half_w = reach * np.hypot(sx * c, sy * s) + 2
    half_h = reach * np.hypot(sx * s, sy * c) + 2
    x0, x1 = max(int(centre[0] - half_w), 0), min(int(np.ceil(centre[0] + half_w)) + 1, w)
    y0, y1 = max(int(centre[1] - half_h), 0), min(int(np.ceil(centre[1] + half_h)) + 1, h)
    x1, y1 = max(x1, x0), max(y1, y0)
    ys, xs = np.mgrid[y0:y1, x0:x1].astype(np.float32)
    dx, dy = xs - centre[0], ys - centre[1]
    u, v = c * dx + s * dy, -s * dx + c * dy
    added = (peak * np.exp(-0.5 * ((u / sx) ** 2 + (v / sy) ** 2))).astype(np.float32)
    return Glare(added, x0, y0)


def motion_kernel(length: float, angle: float) -> np.ndarray:
    """A smear of ``length`` pixels along ``angle`` (radians), summing to 1."""
    if length < 1.0:
        return np.ones((1, 1), np.float32)
    half = int(np.ceil(length / 2))
    size = 2 * half + 1
    kernel = np.zeros((size, size), np.float32)
    for t in np.linspace(-length / 2, length / 2, max(2, int(np.ceil(length * 3)))):
        x, y = half + t * np.cos(angle), half + t * np.sin(angle)
        x0, y0 = int(np.floor(x)), int(np.floor(y))
        fx, fy = x - x0, y - y0
        for yy, xx, wgt in (
            (y0, x0, (1 - fx) * (1 - fy)),
            (y0, x0 + 1, fx * (1 - fy)),
            (y0 + 1, x0, (1 - fx) * fy),
            (y0 + 1, x0 + 1, fx * fy),
        ):
            if 0 <= yy < size and 0 <= xx < size:
                kernel[yy, xx] += wgt
    normalised: np.ndarray = kernel / kernel.sum()
    return normalised
