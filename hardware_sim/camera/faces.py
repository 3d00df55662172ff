"""Card faces drawn from scratch: corner indices, pips and court-card frames.

The faces are drawn with OpenCV primitives (Hershey fonts, filled polygons and
circles) so the simulator needs no image assets, and several *designs* (font,
ink colours, index layout, suit shapes) stand for the different decks a studio
may buy. The recognizer never sees these drawing routines: it only learns from
photographs of the faces (see :mod:`hardware_sim.camera.scene`), as it would
from a studio's own deck.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import cv2
import numpy as np

from table_service.rules.cards import RANKS, SUITS, parse_card

FACE_W = 500
FACE_H = 700
"""Face raster size: poker size (63.5 x 88.9 mm) at about 200 dpi."""

Colour = tuple[int, int, int]


@dataclass(frozen=True)
class CardDesign:
    """What makes one deck look different from another.

    Positions and sizes are fractions of the face width/height, so a design is
    independent of the raster size.
    """

    name: str
    font: int
    thickness: int
    paper: Colour
    red: Colour
    black: Colour
    index_x: float
    index_y: float
    rank_height: float
    suit_size: float
    suit_gap: float
    suit_style: str = "classic"
    border: Colour | None = None
    court_fill: Colour = (120, 200, 235)
    court_line: Colour = (40, 40, 160)
    ten_as: str = "10"
    corner_radius: float = 0.06


DESIGNS: dict[str, CardDesign] = {
    # Designs used while developing the recognizer. The tests add a design of
    # their own that the recognizer was never tuned on.
    "classic": CardDesign(
        name="classic",
        font=cv2.FONT_HERSHEY_SIMPLEX,
        thickness=6,
        paper=(242, 245, 247),
        red=(30, 30, 200),
        black=(25, 25, 25),
        index_x=0.07,
        index_y=0.05,
        rank_height=0.085,
        suit_size=0.075,
        suit_gap=0.02,
    ),
    "casino": CardDesign(
        name="casino",
        font=cv2.FONT_HERSHEY_TRIPLEX,
        thickness=5,
        paper=(236, 244, 248),
        red=(40, 20, 170),
        black=(50, 30, 20),
        index_x=0.075,
        index_y=0.06,
        rank_height=0.095,
        suit_size=0.07,
        suit_gap=0.015,
        suit_style="slim",
        border=(90, 60, 30),
        court_fill=(200, 220, 150),
        court_line=(90, 60, 30),
    ),
    "jumbo": CardDesign(
        name="jumbo",
        font=cv2.FONT_HERSHEY_DUPLEX,
        thickness=8,
        paper=(245, 245, 245),
        red=(45, 45, 215),
        black=(10, 10, 10),
        index_x=0.055,
        index_y=0.04,
        rank_height=0.12,
        suit_size=0.09,
        suit_gap=0.015,
        court_fill=(160, 215, 240),
    ),
    # A deck the studio has NOT calibrated (a stray card from another deck).
    "foreign": CardDesign(
        name="foreign",
        font=cv2.FONT_HERSHEY_SCRIPT_COMPLEX,
        thickness=5,
        paper=(225, 238, 244),
        red=(60, 40, 150),
        black=(70, 40, 20),
        index_x=0.08,
        index_y=0.06,
        rank_height=0.09,
        suit_size=0.06,
        suit_gap=0.03,
        suit_style="slim",
        border=(60, 90, 160),
    ),
}

TEST_ONLY_DESIGNS: dict[str, CardDesign] = {
    # Used only to measure the recognizer (tests and benchmarks), never to tune
    # it: another font, other inks, another paper and another index layout than
    # any design above. It is calibrated from its photographs like any deck.
    "heldout": CardDesign(
        name="heldout",
        font=cv2.FONT_HERSHEY_COMPLEX,
        thickness=4,
        paper=(232, 240, 240),
        red=(70, 10, 185),
        black=(85, 45, 15),
        index_x=0.085,
        index_y=0.07,
        rank_height=0.078,
        suit_size=0.062,
        suit_gap=0.025,
        suit_style="slim",
        court_fill=(210, 190, 160),
        court_line=(20, 70, 20),
    ),
}


def _suit_polygons(
    suit: str, style: str
) -> tuple[list[np.ndarray], list[tuple[float, float, float]]]:
    """A suit as unit-box polygons and circles (x, y, r), all in [-0.5, 0.5]."""
    slim = style == "slim"
    polys: list[np.ndarray] = []
    circles: list[tuple[float, float, float]] = []
    if suit == "D":
        hw = 0.32 if slim else 0.4
        polys.append(np.array([(0, -0.5), (hw, 0), (0, 0.5), (-hw, 0)], float))
    elif suit in "HS":
        r = 0.24 if slim else 0.27
        cx = 0.23 if slim else 0.24
        top = -0.22
        circles += [(-cx, top, r), (cx, top, r)]
        polys.append(
            np.array([(-cx - r * 0.97, top + r * 0.25), (cx + r * 0.97, top + r * 0.25), (0, 0.42)])
        )
        polys.append(np.array([(-cx, top), (cx, top), (0, top + 0.3)], float))
        if suit == "S":
            # A spade is an upside-down heart on a stem.
            circles = [(x, -y + 0.02, rr) for x, y, rr in circles]
            polys = [np.column_stack([p[:, 0], -p[:, 1] + 0.02]) for p in polys]
            stem_w = 0.12 if slim else 0.16
            polys.append(np.array([(0, 0.05), (stem_w, 0.5), (-stem_w, 0.5)], float))
    elif suit == "C":
        r = 0.19 if slim else 0.21
        circles += [(0, -0.27, r), (-0.25, 0.05, r), (0.25, 0.05, r), (0, -0.02, 0.12)]
        stem_w = 0.12 if slim else 0.16
        polys.append(np.array([(0, -0.05), (stem_w, 0.5), (-stem_w, 0.5)], float))
    else:
        raise ValueError(f"unknown suit {suit!r}")
    return polys, circles


@lru_cache(maxsize=512)
def suit_mask(suit: str, size: int, style: str = "classic") -> np.ndarray:
    """Anti-aliased 0..255 mask of a suit symbol in a ``size`` x ``size`` box."""
    scale = 8
    big = size * scale
    mask = np.zeros((big, big), np.uint8)
    polys, circles = _suit_polygons(suit, style)
    shift = 4
    for poly in polys:
        pts = ((poly + 0.5) * big * (1 << shift)).round().astype(np.int32)
        cv2.fillPoly(mask, [pts], 255, cv2.LINE_8, shift)
    for x, y, r in circles:
        centre = (round((x + 0.5) * big * 16), round((y + 0.5) * big * 16))
        cv2.circle(mask, centre, round(r * big * 16), 255, -1, cv2.LINE_8, 4)
    return cv2.resize(mask, (size, size), interpolation=cv2.INTER_AREA)


@lru_cache(maxsize=512)
def text_mask(text: str, font: int, height: int, thickness: int) -> np.ndarray:
    """Anti-aliased mask of ``text`` whose cap height is ``height`` pixels, tightly cropped."""
    scale = cv2.getFontScaleFromHeight(font, height, thickness)
    (tw, th), base = cv2.getTextSize(text, font, scale, thickness)
    pad = thickness + 4
    canvas = np.zeros((th + base + 2 * pad, tw + 2 * pad), np.uint8)
    cv2.putText(canvas, text, (pad, pad + th), font, scale, 255, thickness, cv2.LINE_AA)
    ys, xs = np.nonzero(canvas > 40)
    return canvas[ys.min() : ys.max() + 1, xs.min() : xs.max() + 1]


def _paste(img: np.ndarray, mask: np.ndarray, x: int, y: int, colour: Colour) -> None:
    """Alpha-blend ``colour`` through ``mask`` with its top-left at (x, y), clipped."""
    h, w = mask.shape
    x0, y0 = max(x, 0), max(y, 0)
    x1, y1 = min(x + w, img.shape[1]), min(y + h, img.shape[0])
    if x1 <= x0 or y1 <= y0:
        return
    m = mask[y0 - y : y1 - y, x0 - x : x1 - x].astype(np.float32)[..., None] / 255.0
    roi = img[y0:y1, x0:x1].astype(np.float32)
    img[y0:y1, x0:x1] = (roi * (1 - m) + np.array(colour, np.float32) * m).astype(np.uint8)


def _paste_centred(img: np.ndarray, mask: np.ndarray, cx: float, cy: float, colour: Colour) -> None:
    h, w = mask.shape
    _paste(img, mask, round(cx - w / 2), round(cy - h / 2), colour)


# Pip positions for number cards: (column, row) with column in {-1, 0, 1} and
# row in [0, 1] from the top of the pip area.
_PIPS: dict[int, list[tuple[int, float]]] = {
    2: [(0, 0), (0, 1)],
    3: [(0, 0), (0, 0.5), (0, 1)],
    4: [(-1, 0), (1, 0), (-1, 1), (1, 1)],
    5: [(-1, 0), (1, 0), (0, 0.5), (-1, 1), (1, 1)],
    6: [(-1, 0), (1, 0), (-1, 0.5), (1, 0.5), (-1, 1), (1, 1)],
    7: [(-1, 0), (1, 0), (0, 0.25), (-1, 0.5), (1, 0.5), (-1, 1), (1, 1)],
    8: [(-1, 0), (1, 0), (0, 0.25), (-1, 0.5), (1, 0.5), (0, 0.75), (-1, 1), (1, 1)],
    9: [(c, r) for c in (-1, 1) for r in (0, 1 / 3, 2 / 3, 1)] + [(0, 0.5)],
    10: [(c, r) for c in (-1, 1) for r in (0, 1 / 3, 2 / 3, 1)] + [(0, 1 / 6), (0, 5 / 6)],
}


def _draw_index(
    img: np.ndarray, rank_text: str, suit: str, design: CardDesign, ink: Colour
) -> None:
    """The corner index (rank above suit) at the top-left; the caller rotates for bottom-right."""
    h, w = img.shape[:2]
    rank = text_mask(rank_text, design.font, round(design.rank_height * h), design.thickness)
    if rank.shape[1] > 0.16 * w:  # squeeze a wide "10" so it stays in the margin column
        rank = cv2.resize(rank, (round(0.16 * w), rank.shape[0]), interpolation=cv2.INTER_AREA)
    x = round(design.index_x * w)
    y = round(design.index_y * h)
    _paste(img, rank, x, y, ink)
    s = round(design.suit_size * h)
    pip = suit_mask(suit, s, design.suit_style)
    cx = x + rank.shape[1] / 2
    _paste_centred(img, pip, cx, y + rank.shape[0] + design.suit_gap * h + s / 2, ink)


def _draw_pips(img: np.ndarray, rank: int, suit: str, design: CardDesign, ink: Colour) -> None:
    h, w = img.shape[:2]
    if rank == 1:
        s = round(0.3 * w)
        _paste_centred(img, suit_mask(suit, s, design.suit_style), w / 2, h / 2, ink)
        return
    s = round(0.13 * w)
    pip = suit_mask(suit, s, design.suit_style)
    flipped = pip[::-1, ::-1]
    top, bottom = 0.2 * h, 0.8 * h
    for col, row in _PIPS[rank]:
        cx = w / 2 + col * 0.2 * w
        cy = top + row * (bottom - top)
        _paste_centred(img, flipped if row > 0.5 else pip, cx, cy, ink)


def _draw_court(img: np.ndarray, rank: int, suit: str, design: CardDesign, ink: Colour) -> None:
    """A court card: a framed panel with a mirrored figure, the letter and a pip."""
    h, w = img.shape[:2]
    x0, y0, x1, y1 = round(0.22 * w), round(0.15 * h), round(0.78 * w), round(0.85 * h)
    cv2.rectangle(img, (x0, y0), (x1, y1), design.court_fill, -1)
    cv2.rectangle(img, (x0, y0), (x1, y1), design.court_line, 4, cv2.LINE_AA)
    half = img[y0 : (y0 + y1) // 2, x0:x1].copy()
    hh, hw = half.shape[:2]
    # Stylised figure: head, shoulders, collar, and a crown / hat / veil by rank.
    cv2.ellipse(half, (hw // 2, int(hh * 0.42)), (hw // 7, hh // 6), 0, 0, 360, (170, 200, 240), -1)
    cv2.ellipse(
        half, (hw // 2, int(hh * 0.42)), (hw // 7, hh // 6), 0, 0, 360, design.court_line, 3
    )
    cv2.ellipse(half, (hw // 2, hh), (hw // 2 - 8, hh // 3), 0, 180, 360, ink, -1)
    for k in range(5):
        xk = int(hw * (0.2 + 0.15 * k))
        cv2.line(half, (xk, int(hh * 0.7)), (hw // 2, hh), design.court_line, 2, cv2.LINE_AA)
    crown_y = int(hh * 0.2)
    if rank == 13:
        pts = [(hw // 3, crown_y), (hw // 2, crown_y - hh // 8), (2 * hw // 3, crown_y)]
        cv2.fillPoly(
            half,
            [np.array([*pts, (2 * hw // 3, crown_y + 12), (hw // 3, crown_y + 12)])],
            (0, 190, 230),
        )
    elif rank == 12:
        cv2.circle(half, (hw // 2, crown_y), hw // 10, (0, 190, 230), -1)
    else:
        cv2.rectangle(
            half, (hw // 3, crown_y - 6), (2 * hw // 3, crown_y + 12), design.court_line, -1
        )
    letter = text_mask(RANKS[rank - 1], design.font, round(0.08 * h), design.thickness)
    _paste(half, letter, 10, 10, ink)
    _paste(
        half,
        suit_mask(suit, round(0.06 * h), design.suit_style),
        hw - round(0.06 * h) - 10,
        10,
        ink,
    )
    img[y0 : y0 + hh, x0:x1] = half
    img[y1 - hh + 1 : y1 + 1, x0:x1] = half[::-1, ::-1]
    cv2.rectangle(img, (x0, y0), (x1, y1), design.court_line, 4, cv2.LINE_AA)


def _blank(design: CardDesign) -> np.ndarray:
    img = np.empty((FACE_H, FACE_W, 3), np.uint8)
    img[:] = design.paper
    if design.border is not None:
        m = round(0.03 * FACE_W)
        cv2.rectangle(img, (m, m), (FACE_W - m, FACE_H - m), design.border, 3, cv2.LINE_AA)
    return img


def render_face(code: str, design: CardDesign) -> np.ndarray:
    """The face of card ``code`` (``TD``) in ``design``, as a ``FACE_H x FACE_W`` BGR image."""
    card = parse_card(code)
    ink = design.red if card.suit in "HD" else design.black
    img = _blank(design)
    rank_text = design.ten_as if card.rank == 10 else card.rank_char
    for _ in range(2):  # top-left index, then the same again after a half turn
        _draw_index(img, rank_text, card.suit, design, ink)
        img = np.ascontiguousarray(img[::-1, ::-1])
    if card.rank <= 10:
        _draw_pips(img, card.rank, card.suit, design, ink)
    else:
        _draw_court(img, card.rank, card.suit, design, ink)
    return img


def render_joker(design: CardDesign) -> np.ndarray:
    """A joker: a deck's extra card, which a baccarat or blackjack shoe must never yield."""
    img = _blank(design)
    for _ in range(2):
        word = text_mask("J", design.font, round(0.06 * FACE_H), design.thickness)
        _paste(
            img, word, round(design.index_x * FACE_W), round(design.index_y * FACE_H), design.black
        )
        star = suit_mask("D", round(0.06 * FACE_H), "slim")
        _paste(img, star, round(design.index_x * FACE_W), round(0.14 * FACE_H), design.red)
        img = np.ascontiguousarray(img[::-1, ::-1])
    cv2.circle(img, (FACE_W // 2, FACE_H // 2), FACE_W // 4, design.red, 8, cv2.LINE_AA)
    return img


def render_blank(design: CardDesign) -> np.ndarray:
    """A face with nothing printed on it (a misprint or a blank spare)."""
    return _blank(design)


def all_codes() -> list[str]:
    return [r + s for s in SUITS for r in RANKS]
