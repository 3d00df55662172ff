"""Finding the card in a frame and straightening it.

The card is found from its outline, not from its colour, so a white card on a
light table top or under a lighting gradient is found as well as one on dark
felt: edges are local, brightness is not. The search runs on a half-size copy
(the outline of a card is tens of pixels long even there) and the warp takes its
pixels from the full-size frame, so the index keeps all its detail.
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

import cv2
import numpy as np

from shoe_reader.camera import kernels

CARD_W = 200
CARD_H = 280
"""Size of the straightened face the index is read from (portrait, 5:7)."""

MIN_SUPPORT = 0.3
"""Share of a side's samples that must find an edge for a quad to be a card's outline."""

MIN_FILL = 0.3
"""Share of its bounding box a group of paper regions must cover to be a card's paper."""

FAINT = 0.5
"""Share of the colour difference from the table that a card's silhouette may fall to where
it is joined to a part that differs fully (see :meth:`Locator._silhouettes`)."""

SKIN_WARMTH = 0.18
"""Red less blue, as a share of brightness, above which a region is skin, not paper (card
papers, white to cream, measured 0 to 0.11 on the published decks; skin from 0.25)."""

RESHAPED = 0.05
"""Slack on the aspect tolerance for an outline put on the card's edges (see
:meth:`Locator._reshaped`)."""
COMPLETE = 0.45
"""Share of a card's width (or length) a finger may hide for its paper to be completed."""

SKIN_CUT = True
"""A candidate's paper is taken without the skin in it (see :func:`_without_skin`)."""
SQUARE = True
"""A snapped outline with one side askew of the side across from it is laid again (see
:meth:`Locator._squared`)."""
PAIRS = True
"""A camera frame's side is also fitted through the pair of its steps with the most on their
line (see :func:`kernels.side_fits`)."""
FAINT_CUT = True
"""The outlines a hand cuts a corner out of are also looked for round a card's faint paper (see
:meth:`Locator._silhouettes`): a light card on a light table, a finger over it."""
FAINT_PRESENT = True
"""A card is in view, with no outline found, where pieces of its faint silhouette that a hand
joins (see :meth:`Locator._joined`) are a card's size, not only where its silhouette is: a
light card on a light table with a finger from its edge down its middle (svg-jolly-royal's
jack of spades, ``--seed 5``, pass 98) differs from the table by less than the limit but
along its printed frame, and the finger parts that faint silhouette in two, neither piece a
card's shape; the frames with the card whole in view said "no card in view", and the pass
ended after two frames. In view, the reader looks again and finds the card round the two
pieces (its other outlines, see :meth:`outlines`). Only pieces a hand's skin joins count: a
glare spot on an empty table is no card (300 empty tables with one or two glare spots, as
the studio level draws them: as many present with this as without, 155)."""
RESHAPE_CUT = True
"""An outline a hand cuts out of a card's paper that has not the card's shape is put on the
card's edges and completed to it, as a whole outline is (see :meth:`Locator._cornered`)."""
HIDDEN_END = True
"""An outline whose snap is not borne out, with a side under a hand from end to end, has that
side laid where the card's shape puts it (see :meth:`Locator._hidden_end`)."""
SNAP_ONCE = True
"""A quad is snapped once per frame and locator settings (see :meth:`Locator._snapped`): a
search's sets of outlines share contours and reshape them to the same quads. Off, each is
snapped again, to the same result (the tests compare the two)."""
SKEW = 14.0
"""Degrees between opposite sides of an outline from which one of them is not the card's.
Measured on the drawn cards of the development decks' studio passes (4,000 pairs): median
1.8, 99th percentile 7.9, at most 11.3."""
_NOTHING = "no card in view"
_ASPECT = "outline aspect"
AT_EDGE = "card touches the edge of the region"

_DST = np.array([(0, 0), (CARD_W - 1, 0), (CARD_W - 1, CARD_H - 1), (0, CARD_H - 1)], np.float32)


def percentile(values: np.ndarray, q: float | tuple[float, ...]) -> np.ndarray:
    """``np.percentile(values, q, axis=0)`` (linear method), to the last bit, for less.

    ``np.percentile`` spends far more in Python than in its one partition on
    the few thousand values a paper or table level is taken from, several
    times a frame; here the same order statistics are interpolated the same
    way (``values`` float, one partition along contiguous rows). Several
    levels at once keep the values' type, where NumPy would give float64:
    the same only for float64 values (the table's residuals).
    """
    n = len(values)
    levels = (q,) if isinstance(q, int | float) else q
    picks = []
    for level in levels:
        virtual = (n - 1) * (level / 100)
        below = min(int(virtual), n - 1)
        picks.append((below, min(below + 1, n - 1), virtual - below))
    rows = np.ascontiguousarray(values.T)
    rows.partition(sorted({k for lo, hi, _t in picks for k in (lo, hi)}), axis=-1)
    out = []
    for below, above, t in picks:
        a, b = rows[..., below], rows[..., above]
        diff = b - a
        out.append(b - diff * (1 - t) if t >= 0.5 else a + diff * t)
    return out[0] if len(levels) == 1 and levels is not q else np.stack(out)


def _area_reduce(image: np.ndarray, scale: float) -> np.ndarray:
    """``image`` reduced to ``scale`` by area averaging, a quarter as two halvings.

    OpenCV averages 4x4 blocks in plain C but 2x2 blocks with vector
    instructions: two halvings give each 4x4 block's mean (each rounded to the
    nearest level, so within a level of the direct mean) in under a third
    of the time, which on a colour frame is less than converting the whole
    frame to grey. (A compiled kernel doing both halvings in one pass over the
    frame, e36553c, was faster on the machine it was written on, 0.43 against
    0.67 ms; on this one, an AMD EPYC, it took 1.05-1.20 ms a 1280x720 frame where
    OpenCV's two halvings take 0.48-0.71, warm and fresh from the decoder alike,
    the same pixels to the bit.)
    """
    h, w = image.shape[:2]
    if scale != 0.25 or image.dtype != np.uint8 or h % 4 or w % 4:
        return cv2.resize(image, None, fx=scale, fy=scale, interpolation=cv2.INTER_AREA)
    half = cv2.resize(image, (w // 2, h // 2), interpolation=cv2.INTER_AREA)
    return cv2.resize(half, (w // 4, h // 4), interpolation=cv2.INTER_AREA)


@dataclass(frozen=True)
class Outline:
    """What the locator found in the region of interest.

    ``quad`` (TL, TR, BR, BL in frame pixels, short edge first) is set only for a
    whole card; ``present`` is true whenever something card-sized is in view,
    including a card still half under the shoe, so the voting knows a pass is on.
    """

    present: bool
    quad: np.ndarray | None = None
    why: str = ""
    # What the search worked out on the way, for a second, more thorough look
    # at the same frame (see :meth:`Locator.find`'s ``prior``).
    work: _Work | None = field(default=None, compare=False, repr=False)


_Found = tuple[float, float, np.ndarray]
"""An outline borne out by the card's edges: its support, its area, its full-scale quad."""


@dataclass
class _Work:
    """One frame's search, kept so that a thorough look after a quick one redoes none of it:
    the reduced frame, its paper regions, and each set of outlines once snapped."""

    image: np.ndarray
    settings: tuple[float, ...]
    small: np.ndarray
    present: bool
    why: str
    candidates: list[np.ndarray]
    outlines: dict[str, tuple[list[_Found], str]] = field(default_factory=dict)
    contours: dict[str, list[np.ndarray]] = field(default_factory=dict)
    difference: tuple[np.ndarray, float] | None = None
    skin: np.ndarray | None = None
    snaps: dict[tuple[tuple[float, ...], bytes], _Found | None] = field(default_factory=dict)
    """Each full-scale quad snapped in this frame (see :meth:`Locator._snapped`), by the
    settings of the locator that snapped it and the quad's bytes."""


_NEXT = np.array([1, 2, 3, 0])
_PREV = np.array([3, 0, 1, 2])
_OPPOSITE = np.array([2, 3, 0, 1])
"""Of each corner (side) of a quad, the next one, the previous one and the opposite one."""


def _order(quad: np.ndarray) -> np.ndarray:
    """Corners clockwise (in image coordinates), starting so the first edge is a short one."""
    c = quad.mean(axis=0)
    ang = np.arctan2(quad[:, 1] - c[1], quad[:, 0] - c[0])
    q = quad[np.argsort(ang)]  # clockwise on screen because y points down
    sides = side_lengths(q)
    if sides[0] + sides[2] > sides[1] + sides[3]:
        q = q[_NEXT]
    # Of the two starting corners that make a short first edge, take the upper-left one
    # so the same card gives the same warp from frame to frame (the index is read at
    # both ends anyway).
    if q[0].sum() > q[2].sum():
        q = q[_OPPOSITE]
    ordered: np.ndarray = q.astype(np.float32)
    return ordered


def side_lengths(quad: np.ndarray) -> np.ndarray:
    """Length of each side ``k`` (corner ``k`` to corner ``k + 1``) of a quad."""
    d = quad[_NEXT] - quad
    lengths: np.ndarray = np.sqrt((d * d).sum(axis=1))
    return lengths


_QUADS: dict[int, np.ndarray] = {}
"""Every choice of four of ``n`` corners, in order, per ``n`` (made once)."""


def _largest_quad(hull: np.ndarray) -> np.ndarray | None:
    """The largest quadrilateral with its corners on ``hull``'s vertices (a convex polygon).

    A chip or fingertip over a card's edge bulges out of its silhouette, and
    the smallest rectangle round the silhouette takes the bulge in; the card's
    own corners are still corners of the silhouette's hull, and the largest
    quad among the hull's corners is the card's while the bulge reaches out
    less than about a quarter of the card's width (further, a point of the
    chip can make a larger quad: the card's edges then do not bear it out, or
    its read is weak). The hull is first reduced to its main corners (a
    rounded card corner or a round chip is an arc of many).
    """
    poly = cv2.approxPolyDP(hull.reshape(-1, 1, 2), 1.5, True).reshape(-1, 2).astype(np.float64)
    n = len(poly)
    if n < 4 or n > 16:
        return None
    combos = _QUADS.get(n)
    if combos is None:
        combos = _QUADS[n] = np.array(list(itertools.combinations(range(n), 4)), np.intp)
    q = poly[combos]  # (m, 4, 2), in the hull's order: each a convex quad
    x, y = q[..., 0], q[..., 1]
    area = np.abs((x * np.roll(y, -1, axis=1) - np.roll(x, -1, axis=1) * y).sum(axis=1)) / 2
    largest: np.ndarray = q[int(np.argmax(area))].astype(np.float32)
    return largest


def _refine(quad: np.ndarray, points: np.ndarray, offset: float) -> np.ndarray:
    """Fit a straight line to the middle of each side and intersect neighbours (see
    ``Locator(refine=True)``).

    Polygon approximation puts a rounded card corner somewhere on its arc; the
    sides themselves are straight, so their intersections are the true corners.
    A side hidden in part (a finger) keeps its polygon edge. Each side is then
    moved ``offset`` pixels outwards: the region found lies inside the edge.
    """
    quad = quad.astype(np.float32, copy=False)
    centre = quad.mean(axis=0)
    d = quad[_NEXT] - quad
    lengths = side_lengths(quad)
    if float(lengths.min()) < 4:
        return quad
    starts = quad.copy()
    dirs = d / lengths[:, None]
    # Every point against all four sides at once: along each (t) and off it
    # (dist), (4, n) each.
    px, py = points[:, 0], points[:, 1]
    rx = px[None, :] - quad[:, 0, None]
    ry = py[None, :] - quad[:, 1, None]
    ux, uy = dirs[:, 0, None], dirs[:, 1, None]
    t = rx * ux + ry * uy
    dist = np.abs(rx * uy - ry * ux)
    near = (t > 0.2 * lengths[:, None]) & (t < 0.8 * lengths[:, None]) & (dist < 3.0)
    for k in np.flatnonzero(np.count_nonzero(near, axis=1) >= 8):
        vx, vy, x0, y0 = cv2.fitLine(points[near[k]], cv2.DIST_HUBER, 0, 0.01, 0.01).ravel()
        starts[k], dirs[k] = (x0, y0), (vx, vy)
    normal = np.stack([dirs[:, 1], -dirs[:, 0]], axis=1)
    normal[((starts - centre) * normal).sum(axis=1) < 0] *= -1
    starts = starts + normal * offset
    out = _meet(starts, starts + dirs * lengths[:, None])
    if out is None:
        return quad
    moved = np.sqrt(((out - quad) ** 2).sum(axis=1))
    if bool((moved > 0.2 * lengths[_PREV]).any()):
        return quad
    return out.astype(np.float32)


def _meet(starts: np.ndarray, ends: np.ndarray) -> np.ndarray | None:
    """Corner ``k`` where line ``k - 1`` meets line ``k`` (each through ``starts`` and ``ends``).

    ``None`` if two neighbouring sides are parallel.
    """
    p1, p2 = starts[_PREV], ends[_PREV]
    d1, d2 = p2 - p1, ends - starts
    den = d1[:, 0] * d2[:, 1] - d1[:, 1] * d2[:, 0]
    if bool((np.abs(den) < 1e-6).any()):
        return None
    t = ((starts[:, 0] - p1[:, 0]) * d2[:, 1] - (starts[:, 1] - p1[:, 1]) * d2[:, 0]) / den
    corners: np.ndarray = p1 + t[:, None] * d1
    return corners


SIDE_TOLERANCE = 1.5
"""Pixels off a side's straight line within which a step found across it is on the edge."""
SNAP_SETTLED = 0.5
"""Pixels within which a side snapped from the rough outline is already where a second
snap would put it (the samples across it lie where they would lie again)."""
_SNAP_T = np.linspace(0.18, 0.82, 24, dtype=np.float32)
_SNAP_D = np.arange(-12.0, 12.01, 0.75, dtype=np.float32)
_ON_SIDE = np.abs(_SNAP_D) <= 4.5
"""The samples across a side near enough its line for skin there to hide its edge."""
HIDDEN_SIDE = 0.4
"""Share of a side's samples on skin from which a side whose edge is not found is taken as
hidden under the dealer's hand (see :func:`_beside_skin`)."""
HIDDEN_WHOLE = 0.75
"""Share of a side's samples with skin over them for the side to lie under a hand from end to
end (see :meth:`Locator._hidden_end`)."""
HIDDEN_STEPS = 5
"""Steps beside the hand that must agree on where a hidden side's edge is."""
HIDDEN_SPAN = 0.25
"""Share of a hidden side's length those steps must span (its direction is fitted to them)."""


def _snap(gray: np.ndarray, quad: np.ndarray, own: bool = True) -> tuple[np.ndarray, float]:
    """Move each side of ``quad`` onto the strongest edge across it, at full resolution.

    The blob a card was found from is only roughly its outline (rounded corners,
    a printed frame, grouping); the card's sides are straight edges, so each is
    found again by sampling across it and fitting a line to the steepest step.
    A side whose edge cannot be found keeps its first estimate. Also returns
    the support: the share of the samples, on the worst side, that found the
    side's straight edge (a quad drawn round a card and a fingertip has a side
    over bare table). With ``own``, a side whose edge the card's own steps put
    further in (a shadow or the table's grain stepped beyond it) is moved there
    (see :func:`_card_steps`), and a side whose steps do not all lie on the first
    line fitted is also fitted through the pair of its steps with the most on their line
    (a finger over part of the edge, see :func:`kernels.side_fits`).

    The four sides are sampled in one ``remap``; the sampling maps and the
    search across the samples are compiled (:mod:`shoe_reader.camera.kernels`):
    called twice per candidate on every frame, the per-sample Python and NumPy
    calls were most of its time.
    """
    quad = np.ascontiguousarray(quad, np.float32)
    g = gray if gray.dtype == np.float32 else gray.astype(np.float32)
    # Each side's outward normal and the maps across it (compiled, see
    # :func:`kernels.snap_start`).
    ok, normal, lengths, map_x, map_y = kernels.snap_start(quad, _SNAP_T, _SNAP_D)
    if not ok:
        return quad, 0.0
    prof = cv2.remap(g, map_x, map_y, cv2.INTER_LINEAR, borderMode=cv2.BORDER_REPLICATE)
    # Across each side at each sample, the card's edge is the outermost
    # strong step: pips, a printed frame or a court figure just inside may
    # step harder, the table outside (texture, the card's soft shadow) steps
    # less. A straight line is fitted through those steps, robustly (see
    # :func:`kernels.side_fits`), and neighbouring sides are intersected.
    ok, out, support = kernels.snap_finish(
        prof, quad, normal, lengths, _SNAP_T, _SNAP_D, SIDE_TOLERANCE, own and PAIRS
    )
    if not ok:
        return quad, 0.0
    # A shadow's or the table's step beyond the card's edge, if it is strong enough,
    # is the outermost: with ``own``, the sides are found again from the card's own
    # steps alone (see :func:`_card_steps`).
    kept = _card_steps(prof) if own else prof
    if kept is not prof:
        ok, inner, _support = kernels.snap_finish(
            kept, quad, normal, lengths, _SNAP_T, _SNAP_D, SIDE_TOLERANCE, own and PAIRS
        )
        if ok:
            out = _sides_within(out, inner, prof, quad, normal)
    return out, support


ONE_WAY = 10.0
"""Grey levels by which the inside of a side (its median over the side) must be brighter than
the table beyond it for only the steps down (outwards) to be the card's edge."""
_ENDS = 8
"""Samples (6 px) at either end of a profile across a side: the card inside, the table beyond
(:func:`kernels.card_steps` sums eight)."""
RIM = 2.5
"""Pixels inside the side found from every step from which the side found from the card's own
steps alone is taken (nearer, it is a printed outline's inner edge: see :func:`_sides_within`)."""
INK = 0.6
"""Share of the table's brightness below which the band between a card's paper and the table is
a printed outline's ink (a card's shadow darkens the table by a third at most)."""


def _card_steps(prof: np.ndarray, n_t: int = len(_SNAP_T)) -> np.ndarray:
    """The profiles across each side (see :func:`_snap`) with only the steps the card's edge
    can make left in them (``prof`` itself if no side shows which way round that is).

    The edge is the outermost strong step across a side; beyond it, the card's
    own soft shadow rises back to the table's brightness and wood grain or a
    cloth's weave steps both ways, and where the card's edge is faint (a white
    paper on a light table, smeared by the card's travel) such a step is
    strong enough to be the outermost, and the side is laid on it, several
    pixels out. Where the card is brighter than the table beyond it (the
    median over a side), its edge steps down going outwards: the steps up are
    taken out of the profile (its rises flattened, its falls kept). Not the
    other way round: a card darker inside than the table (svg-oxygen's dark
    red faces) has been seen printed with a light border, whose edge steps
    down all the same.
    """
    # One compiled pass (:func:`kernels.card_steps`, the NumPy arithmetic it replaced to the
    # bit): twice per candidate's snap, its dozen NumPy calls were a tenth of the snap.
    flattened, out = kernels.card_steps(prof, n_t, ONE_WAY)
    return out if flattened else prof


def _sides_within(
    found: np.ndarray, inner: np.ndarray, prof: np.ndarray, quad: np.ndarray, normal: np.ndarray
) -> np.ndarray:
    """``found`` with each side of ``inner`` (the same card's quad from its own steps, see
    :func:`_card_steps`) that lies ``RIM`` or more inside it put in its place, unless ink
    lies between the two.

    ``prof``: the profiles across the sides of ``quad`` both were snapped from
    (``normal``: its sides' outward normals). A side found from the card's own
    steps inside the one found from every step, with a band darker than ``INK``
    of the table beyond between them, is a printed outline's inner edge (the
    table beyond the outline brighter than its ink): the outline is the card's
    (calibration measures it on that outer edge, see :func:`snap_to_outline`),
    and the side stays. A shadow is never that dark, nor is the table between
    its grain's steps.
    """
    # One compiled pass (:func:`kernels.sides_within`, the NumPy arithmetic it replaced to
    # the bit): on most snaps of a camera's frame the card's own steps lie inside, and the
    # few dozen NumPy calls on four sides were a tenth of the snap.
    return kernels.sides_within(found, inner, prof, quad, normal, _SNAP_D, len(_SNAP_T), RIM, INK)


def _beside_skin(
    colour: np.ndarray,
    gray: np.ndarray,
    quad: np.ndarray,
    laid: int | None = None,
    whole: bool = False,
) -> tuple[float, np.ndarray]:
    """The support of ``quad`` (see :func:`_snap`) where a dealer's hand lies across the
    card, and the quad with a side hidden under the hand put on what shows of its edge.

    A finger or a hand reaching over the card's edge hides that stretch of it:
    the edge's samples on skin say nothing, and are left out of its side's
    support (but at most half of them). A side with no edge found and skin
    over ``HIDDEN_SIDE`` of its samples is hidden: it has no say, if it is the
    only one (the other three must bear the card out), and is laid on the
    steps found on what shows of it beside the hand (see :func:`_hidden_side`).
    Asked only of an outline the edges alone do not bear out (skin is not looked
    for on every frame).
    """
    quad = np.ascontiguousarray(quad, np.float32)
    ok, normal, _lengths, map_x, map_y = kernels.snap_start(quad, _SNAP_T, _SNAP_D)
    if not ok:
        return 0.0, quad
    prof = cv2.remap(gray, map_x, map_y, cv2.INTER_LINEAR, borderMode=cv2.BORDER_REPLICATE)
    fitted, _a0, _a1, on_edge, tried = kernels.side_fits(
        prof, _SNAP_T, _SNAP_D, SIDE_TOLERANCE, PAIRS
    )
    on_skin = _skin_at(colour, map_x[:, _ON_SIDE], map_y[:, _ON_SIDE])
    n_t = len(_SNAP_T)
    covered = on_skin.reshape(4, n_t, -1).any(axis=2).sum(axis=1)
    hidden = ~fitted & (covered >= HIDDEN_SIDE * n_t)
    if laid is not None:
        # The side laid where the card's shape puts it (see Locator._squared): under the
        # hand, or on an edge; the other three bear the card out.
        if whole and covered[laid] < HIDDEN_WHOLE * n_t:
            return 0.0, quad  # (see Locator._hidden_end: a side under the hand end to end)
        if not (fitted[laid] or covered[laid] >= HIDDEN_SIDE * n_t):
            return 0.0, quad
        hidden = np.arange(4) == laid
    if int(hidden.sum()) > 1:
        return 0.0, quad
    seen = np.maximum(n_t - covered, n_t / 2)
    shares = np.where(fitted, on_edge / seen, tried / seen / 2)
    support = float(shares[~hidden].min())
    if support < MIN_SUPPORT or not hidden.any() or laid is not None:
        return support, quad
    placed = _hidden_side(gray, colour, quad, normal, int(np.argmax(hidden)))
    return (support, placed) if placed is not None else (0.0, quad)


_HIDDEN_T = np.linspace(0.03, 0.97, 48, dtype=np.float32)
"""Where along a hidden side its edge is looked for beside the hand (see :func:`_hidden_side`)."""


def _hidden_side(
    gray: np.ndarray, colour: np.ndarray, quad: np.ndarray, normal: np.ndarray, k: int
) -> np.ndarray | None:
    """``quad`` with side ``k`` (hidden under a hand) on the line through the outermost
    strong steps across it where no skin lies (``None``: fewer than ``HIDDEN_STEPS``
    steps lie on one line, or they span less than ``HIDDEN_SPAN`` of the side); ``gray``
    and ``colour`` the same crop, its skin looked for where it is sampled (see
    :func:`_skin_at`)."""
    a, b = quad[k], quad[(k + 1) % 4]
    base = a[None, :] + _HIDDEN_T[:, None] * (b - a)[None, :]
    pts = base[:, None, :] + _SNAP_D[None, :, None] * normal[k][None, None, :]
    map_x = np.ascontiguousarray(pts[..., 0], np.float32)
    map_y = np.ascontiguousarray(pts[..., 1], np.float32)
    prof = cv2.remap(gray, map_x, map_y, cv2.INTER_LINEAR, borderMode=cv2.BORDER_REPLICATE)
    bare = ~_skin_at(colour, map_x[:, _ON_SIDE], map_y[:, _ON_SIDE]).any(axis=1)
    steps = np.abs(prof[:, 2:] - prof[:, :-2])
    limit = np.maximum(0.45 * steps.max(axis=1), 8.0)
    strong = steps >= limit[:, None]
    # The outermost strong step across each sample (as the side snap takes it).
    last = steps.shape[1] - 1 - np.argmax(strong[:, ::-1], axis=1)
    rows = np.arange(len(_HIDDEN_T))
    strength = steps[rows, last]
    keep = bare & strong.any(axis=1)
    if int(keep.sum()) < HIDDEN_STEPS:
        return None
    keep &= strength >= max(8.0, 0.4 * float(np.median(strength[keep])))
    found = np.ascontiguousarray(pts[rows[keep], last[keep] + 1], np.float32)
    if len(found) < HIDDEN_STEPS:
        return None
    # A robust line through them, held to those on it: enough of them, over enough of
    # the side for its direction to hold to the far corner.
    vx, vy, x0, y0 = cv2.fitLine(found, cv2.DIST_HUBER, 0, 0.01, 0.01).ravel()
    across = np.array([-vy, vx], np.float32)
    at = float(across @ np.array([x0, y0], np.float32))
    on = np.abs(found @ across - at) <= SIDE_TOLERANCE
    along = found[on] @ np.array([vx, vy], np.float32)
    if int(on.sum()) < HIDDEN_STEPS or float(np.ptp(along)) < HIDDEN_SPAN * float(
        np.linalg.norm(b - a)
    ):
        return None
    vx, vy, x0, y0 = cv2.fitLine(found[on], cv2.DIST_L2, 0, 0.01, 0.01).ravel()
    across = np.array([-vy, vx], np.float32)
    at = float(across @ np.array([x0, y0], np.float32))
    out = quad.copy()
    for corner, other in ((k, (k + 3) % 4), ((k + 1) % 4, (k + 2) % 4)):
        # Where the side next to this corner (through it and ``other``) meets the new line.
        d = quad[corner] - quad[other]
        den = float(d @ across)
        if abs(den) < 1e-6:
            return None
        t = (at - float(quad[other] @ across)) / den
        out[corner] = quad[other] + t * d
    moved = np.linalg.norm(out - quad, axis=1).max()
    if moved > 0.15 * float(np.linalg.norm(quad[(k + 2) % 4] - quad[(k + 3) % 4])):
        return None
    return out.astype(np.float32)


BESIDE = True
"""A rough outline a hand lies over, that the side snap does not bear out, has its sides
found beside the hand (see :func:`_snap_beside`) before it is judged by what shows."""
ALL_FOUND = True
"""Only an outline whose four sides :func:`_snap_beside` found (in some round, or beside the
hand, see :func:`_hidden_side`) is taken from it: a side hidden from end to end is left to
:func:`_beside_skin` and :meth:`Locator._squared`."""
BESIDE_ROUNDS = 4
"""Rounds of :func:`_snap_beside` (each samples the sides again where the last put them)."""
BESIDE_MARGIN = 48
"""Pixels of the frame kept round a quad for :func:`_snap_beside`: more than its search
reaches beyond the first estimate (``_WIDE_D``)."""
BESIDE_SUPPORT = 0.5
"""Share of a side's samples clear of skin that must lie on its straight edge for
:func:`_snap_beside` to take the side as found."""
BARE_SPAN = 0.2
"""Least share of a side between the two steps a line is tried through in
:func:`kernels.bare_fits`."""
_WIDE_D = np.arange(-30.0, 30.01, 0.75, dtype=np.float32)
"""Offsets across a side at which :func:`_snap_beside` samples it: the rough outline of a
card a hand lies over can be turned off its edges by 25-30 px at one end."""


def _angle(u: np.ndarray, v: np.ndarray) -> float:
    """Degrees between the directions ``u`` and ``v`` (0 to 180)."""
    cos = float(u @ v) / max(float(np.linalg.norm(u) * np.linalg.norm(v)), 1e-9)
    return float(np.degrees(np.arccos(min(max(cos, -1.0), 1.0))))


def _snap_beside(colour: np.ndarray, quad: np.ndarray) -> tuple[float, np.ndarray] | None:
    """``quad`` (full-scale, the rough outline of a card a dealer's hand lies over) put on
    the card's edges where they show beside the hand, and the least share of a found side's
    bare samples on its edge (``None``: not borne out).

    A hand over a corner or a side of the card hides part of its outline: the paper
    that shows, cut by the hand (and on a court card by its figure), gives a rough
    outline turned off the card by several degrees, its sides 20-30 px off at one end,
    beyond the side snap's search (12 px, see :func:`_snap`); and :func:`_beside_skin`
    judged that outline where it lay. Here every side is sampled along its whole length
    and 30 px either way; the samples on skin are left out (their rows flattened, no
    step there); the card's own steps are kept (see :func:`_card_steps`), and a line is
    fitted through the outermost strong steps of the rest, which may lie along one part
    of the side alone (see :func:`kernels.bare_fits`). The sides found are moved onto
    their lines and sampled again where they now lie, until they settle, so that a side
    hidden at one end is found from the other once its neighbours are in place. A side
    found askew of the side across from it (``SKEW`` / 2 degrees or more) with skin over
    it is the hand's edge: it is taken as hidden. A hidden side is left between the others
    where it lay, then laid on the steps beside the hand if they show it (see
    :func:`_hidden_side`). Three sides at least must be found, and one hidden must have
    skin over it.
    """
    h, w = colour.shape[:2]
    x0, y0 = np.maximum(np.floor(quad.min(axis=0)).astype(int) - BESIDE_MARGIN, 0)
    x1, y1 = np.ceil(quad.max(axis=0)).astype(int) + BESIDE_MARGIN
    x1, y1 = min(int(x1), w), min(int(y1), h)
    crop = colour[int(y0) : y1, int(x0) : x1]
    gray = cv2.cvtColor(crop, cv2.COLOR_BGR2GRAY).astype(np.float32)
    origin = np.array([x0, y0], np.float32)
    q = np.ascontiguousarray(quad - origin, np.float32)
    n_t = len(_HIDDEN_T)
    support = 0.0
    hidden_last = False
    seen = np.zeros(4, bool)  # (the sides found in some round: a hidden one stays there)
    for turn in range(BESIDE_ROUNDS):
        across = _WIDE_D
        on_side = np.abs(across) <= 4.5
        ok, normal, lengths, map_x, map_y = kernels.snap_start(q, _HIDDEN_T, across)
        if not ok:
            return None
        prof = cv2.remap(gray, map_x, map_y, cv2.INTER_LINEAR, borderMode=cv2.BORDER_REPLICATE)
        # Skin is looked for at the samples within a few pixels of each side alone.
        on_skin = _skin_at(crop, map_x[:, on_side], map_y[:, on_side]).mean(axis=1) > 0.5
        if turn == 0 and not on_skin.any():
            return None  # (no hand over the card's edge: the snap's answer stands)
        prof = _card_steps(prof, n_t)
        fitted, a0, a1, on_edge = kernels.bare_fits(
            prof, _HIDDEN_T, across, on_skin, SIDE_TOLERANCE, BARE_SPAN, HIDDEN_STEPS, HIDDEN_SPAN
        )
        bare = n_t - on_skin.reshape(4, n_t).sum(axis=1)
        shares = on_edge / np.maximum(bare, 1)
        good = fitted & (bare >= n_t / 4) & (shares >= BESIDE_SUPPORT)
        if int(good.sum()) < 2:
            return None
        starts, ends = q.copy(), q[_NEXT].copy()
        starts[good] += a0[good, None].astype(np.float32) * normal[good]
        ends[good] += a1[good, None].astype(np.float32) * normal[good]
        covered = on_skin.reshape(4, n_t).any(axis=1)
        for k in (0, 1):
            # Opposite sides of a card lie within a few degrees of parallel: of two found
            # askew, the one under the hand is the hand's edge, not the card's.
            j = k + 2
            if good[k] and good[j] and _angle(ends[k] - starts[k], starts[j] - ends[j]) >= SKEW / 2:
                bad = [m for m in (k, j) if covered[m]]
                if len(bad) != 1:
                    return None
                good[bad[0]] = False
                starts[bad[0]], ends[bad[0]] = q[bad[0]], q[(bad[0] + 1) % 4]
        if int(good.sum()) < 3 and turn == BESIDE_ROUNDS - 1:
            return None
        seen |= good
        if int(good.sum()) == 2:
            # Two sides found: they are moved, and the other two looked for again there.
            moved = _meet(starts, ends)
            if moved is None:
                return None
            support = 0.0
        elif not good.all():
            # A side the hand hides (too little of it bare, or its bare steps on a line
            # askew of the side across from it): left where it was, between the others,
            # then laid on the steps beside the hand if they show it (see _hidden_side).
            hidden = int(np.argmin(good))
            if not on_skin.reshape(4, n_t)[hidden].any():
                return None  # (a side not found where no hand lies over it)
            moved = _meet(starts, ends)
            if moved is None:
                return None
            moved = np.ascontiguousarray(moved, np.float32)
            laid = None
            ok, normal2, _lengths, _mx, _my = kernels.snap_start(moved, _HIDDEN_T, across)
            if ok:
                laid = _hidden_side(gray, crop, moved, normal2, hidden)
                if laid is not None:
                    moved = laid
            support = float(shares[good].min())
            hidden_last = laid is None and not seen[hidden]
        else:
            moved = _meet(starts, ends)
            if moved is None:
                return None
            support = float(shares.min())
            hidden_last = False
        moved = moved.astype(np.float32)
        shift = float(np.abs(moved - q).max())
        if shift > 0.3 * float(lengths.min()):
            return None
        q = np.ascontiguousarray(moved)
        if shift <= SNAP_SETTLED and support > 0:
            break
    if support <= 0 or (ALL_FOUND and hidden_last):
        return None
    return support, q + origin


@functools.lru_cache(maxsize=64)
def _border_fit(h: int, w: int) -> tuple[np.ndarray, np.ndarray]:
    """The plane fit's design over a region's border, and its pseudo-inverse (per region size).

    The region is the same size on every frame: solving the least squares
    once per size leaves a matrix product per frame. A followed card's window has a size of
    its own (see ``recognize.TRACK_SIZE``): a pass's sizes and the next passes' are kept,
    as many as the reader keeps windows' locators (eight were solved again 30 times in
    320 frames, each a pseudo-inverse).
    """
    xs = np.concatenate([np.arange(w), np.arange(w), np.zeros(h), np.full(h, w - 1)])
    ys = np.concatenate([np.zeros(w), np.full(w, h - 1), np.arange(h), np.arange(h)])
    design = np.stack([np.ones_like(xs), xs, ys], axis=1)
    solve = np.linalg.pinv(design)
    design.flags.writeable = solve.flags.writeable = False
    return design, solve


def border(image: np.ndarray) -> np.ndarray:
    """The region's border pixels, in the order :func:`_border_fit` expects."""
    return np.concatenate([image[0], image[-1], image[:, 0], image[:, -1]])


def _table_light(gray: np.ndarray) -> tuple[np.ndarray, np.ndarray, float]:
    """The table's brightness over the region, a plane fitted to its border: its value
    at row ``y`` and column ``x`` is ``rows[y] + columns[x]``; and its spread.

    Light falls off across a table; a card on its dim side can be darker than
    the table's bright side, but never than the table right around it. The
    plane is kept as its rows and columns (the region's statistics add the two
    per pixel, :func:`kernels.regions`): made whole, it cost as much as
    everything else asked of it.
    """
    h, w = gray.shape[:2]
    design, solve = _border_fit(h, w)
    values = border(gray).astype(np.float64)
    coef = solve @ values
    residual = values - design @ coef
    p50, p90 = percentile(residual, (50, 90))
    xs = np.arange(w, dtype=np.float64) * coef[1]
    ys = np.arange(h, dtype=np.float64) * coef[2] + (coef[0] + p50)
    return ys, xs, float(p90 - p50)


def _table_difference(colour: np.ndarray) -> tuple[np.ndarray, float]:
    """How far each pixel's colour is from the table's there (summed over the channels), and
    the limit beyond which it is not table.

    The table's colour across the region is a plane per channel fitted to its
    border (light falls off across a table); the limit is well above the
    border's own spread about it.
    """
    h, w = colour.shape[:2]
    design, solve = _border_fit(h, w)
    edge = border(colour).astype(np.float32)
    coef = (solve @ edge).astype(np.float32)  # (3, channels)
    spread = np.abs(edge - design.astype(np.float32) @ coef).sum(axis=1)
    # (``percentile``: np.percentile's own value, to the bit, without its Python-level
    # setup: some 0.08 ms of each search that looks for the silhouettes)
    limit = max(40.0, 2.5 * float(percentile(spread, 90)))
    if colour.dtype == np.uint8 and colour.ndim == 3 and colour.flags.c_contiguous:
        return kernels.table_difference(colour, coef), limit  # the same, in one pass
    gx = np.arange(w, dtype=np.float32)[None, :, None]
    gy = np.arange(h, dtype=np.float32)[:, None, None]
    table = coef[0][None, None, :] + coef[1][None, None, :] * gx + coef[2][None, None, :] * gy
    return np.abs(colour.astype(np.float32) - table).sum(axis=2), limit


_NO_COLOUR = np.zeros((0, 0, 3), np.uint8)
"""No colour frame for :func:`kernels.regions` (a grey region: no skin looked for)."""


def skin_pixels(colour: np.ndarray) -> np.ndarray:
    """1 where a pixel of ``colour`` (BGR) has a skin's hue, else 0 (uint8).

    Skin is red above green above blue, warm (red less blue a good share of
    its brightness: card papers are white to cream) and orange rather than
    red or yellow: green sits between blue and red, a sixth to a half of the
    way (red ink, and red ink blurred into white paper, has green as low as
    blue; gold print has green near red).
    """
    # One compiled pass (the same integer arithmetic as int16 arrays, compared with the
    # same double): a face, a candidate's surroundings, the reduced frame, up to three
    # times a frame.
    return kernels.skin(colour, 100 * SKIN_WARMTH)


def _skin_at(colour: np.ndarray, map_x: np.ndarray, map_y: np.ndarray) -> np.ndarray:
    """:func:`skin_pixels` of ``colour`` sampled at the maps' points (nearest pixel, the border
    replicated), as ``cv2.remap`` of the whole crop's skin with ``INTER_NEAREST`` gives it.

    A pixel's skin depends on that pixel alone, so the nearest pixels are picked first and
    only they are looked at: the snap beside a hand samples a few hundred points of a crop
    of 60,000-120,000 pixels, whose skin was a twentieth of a frame's time (the same
    samples to the bit: a nearest remap picks the same pixel whatever its channels)."""
    picked = cv2.remap(colour, map_x, map_y, cv2.INTER_NEAREST, borderMode=cv2.BORDER_REPLICATE)
    return skin_pixels(picked)


def _shrunk(cut: np.ndarray, crop: np.ndarray) -> bool:
    """Whether the paper ``cut`` (``crop`` less its skin) reaches less far than ``crop`` on
    some side, by two pixels or more: the skin reached out of it (skin inside the paper,
    print of a skin's hue or a finger on the card, leaves its outline as it was)."""
    if not cv2.countNonZero(cut.view(np.uint8)):
        return False
    x, y, w, h = cv2.boundingRect(cut.view(np.uint8))
    return x >= 2 or y >= 2 or x + w <= crop.shape[1] - 2 or y + h <= crop.shape[0] - 2


AROUND = 16
"""Pixels of the frame kept round a full-scale quad when its sides are snapped: more than
the edge search reaches beyond the first estimate (``_SNAP_D``, 12 px, see :func:`_snap`)."""


def _laid_support(image: np.ndarray, quad: np.ndarray, side: int, whole: bool = False) -> float:
    """The support beside a hand (see :func:`_beside_skin`) of ``quad`` (full-scale) laid with
    its ``side`` where the card's shape puts it, read in the colour crop round it: what
    :meth:`Locator._hidden_laid` and :meth:`Locator._hidden_end` (``whole``) both ask."""
    x0, y0, x1, y1 = _around(image, quad)
    colour = image[y0:y1, x0:x1]
    g = cv2.cvtColor(colour, cv2.COLOR_BGR2GRAY).astype(np.float32)
    origin = np.array([x0, y0], np.float32)
    support, _quad = _beside_skin(colour, g, quad - origin, laid=side, whole=whole)
    return support


def _around(image: np.ndarray, quad: np.ndarray) -> tuple[int, int, int, int]:
    """The box (``x0, y0, x1, y1``) of ``image`` round ``quad`` (full-scale), ``AROUND``
    pixels wider on every side, within the image."""
    h, w = image.shape[:2]
    x0, y0 = np.maximum(np.floor(quad.min(axis=0)).astype(int) - AROUND, 0)
    x1, y1 = np.ceil(quad.max(axis=0)).astype(int) + AROUND
    return int(x0), int(y0), min(int(x1), w), min(int(y1), h)


def _skews(quad: np.ndarray) -> tuple[float, float]:
    """Degrees between sides 0 and 2 of ``quad``, and between sides 1 and 3 (0: parallel)."""
    d = quad[_NEXT] - quad
    angle = np.degrees(np.arctan2(d[:, 1], d[:, 0]))
    first, second = (abs((float(angle[k] - angle[k + 2]) % 360.0) - 180.0) for k in (0, 1))
    return first, second


def _without_skin(
    crop: np.ndarray, colour: np.ndarray, y: int, x: int, kernel: np.ndarray
) -> np.ndarray:
    """``crop`` (a candidate's paper, its top-left at ``y, x`` of the reduced ``colour``
    frame) less the skin in it and a pixel round it (see :func:`skin_pixels`)."""
    h, w = crop.shape
    y0, x0 = max(y - 1, 0), max(x - 1, 0)
    window = colour[y0 : y + h + 1, x0 : x + w + 1]
    skin = skin_pixels(window)
    if not skin.any():
        return crop
    skin = cv2.dilate(skin, kernel)[y - y0 : y - y0 + h, x - x0 : x - x0 + w]
    kept: np.ndarray = crop & (skin == 0)
    return kept


class Locator:
    """Finds one whole card in a region of interest of a frame.

    ``aspect`` is the card's width/height as measured on the studio's own deck
    during calibration; a quad too far from it is not a whole card (a card half
    under the shoe, a stack of chips) and gives ``present`` without a quad.

    ``own_steps``: each side is also found from the steps that go the card's way
    alone (see :func:`_card_steps`), for a camera's frames, where the card's
    travel smears its edge and its shadow or the table steps beyond it. A
    calibration photograph is sharp, on a plain mat: there the outermost step is
    the card's edge (its printed outline's outer edge too, however wide), as
    calibration has always measured it.

    ``hands``: a dealer's hand may lie over the card (a camera's frames): the paper
    is also tried without the skin in it, and a side laid along the hand's edge is
    laid again (see :func:`_without_skin`, :meth:`_squared`). A calibration photograph
    has no hand, and is located as before.
    """

    def __init__(
        self,
        aspect: float = CARD_W / CARD_H,
        aspect_tolerance: float = 0.09,
        min_card_fraction: float = 0.01,
        scale: float = 0.25,
        edge_low: int = 15,
        edge_high: int = 45,
        min_contrast: float = 15.0,
        thorough: bool = False,
        refine: bool = False,
        grow: float = 1.1,
        own_steps: bool = True,
        hands: bool = True,
    ) -> None:
        self.thorough = thorough
        self.own_steps = own_steps
        self.hands = hands
        self.refine = refine
        self.grow = grow
        self.edge_low = edge_low
        self.edge_high = edge_high
        self.min_contrast = min_contrast
        self._kernel = np.ones((3, 3), np.uint8)
        # Edges are thickened a little so a faint outline has no gaps the
        # table could leak through (more would close a card's thin margins).
        self._edge_kernel = np.ones((2, 2), np.uint8)
        # Pieces of one card up to a fiftieth of the frame's width apart are grouped.
        self._group_radius = max(2, round(20 * scale))
        self._group_kernel = np.ones((2 * self._group_radius + 1,) * 2, np.uint8)
        self.aspect = aspect
        self.aspect_tolerance = aspect_tolerance
        self.min_card_fraction = min_card_fraction
        self.scale = scale
        # A search another locator made of a frame serves this one if these agree.
        self._settings = (
            aspect,
            aspect_tolerance,
            min_card_fraction,
            scale,
            edge_low,
            edge_high,
            min_contrast,
            own_steps,
            hands,
        )

    def within(self, larger: float) -> Locator:
        """This locator for a window of the region ``larger`` times smaller: the same
        settings, a card's least size the same in pixels (see ``min_card_fraction``)."""
        return Locator(
            aspect=self.aspect,
            aspect_tolerance=self.aspect_tolerance,
            min_card_fraction=self.min_card_fraction * larger,
            scale=self.scale,
            edge_low=self.edge_low,
            edge_high=self.edge_high,
            min_contrast=self.min_contrast,
            thorough=self.thorough,
            refine=self.refine,
            grow=self.grow,
            own_steps=self.own_steps,
            hands=self.hands,
        )

    def follow(self, image: np.ndarray, estimate: np.ndarray) -> tuple[float, np.ndarray] | None:
        """The card's outline snapped onto its edges in ``image`` from ``estimate`` (a
        full-scale quad where the card is expected, from the frames before), as a
        candidate's is (see :meth:`_snapped_full`): its support and its quad; ``None`` if
        its edges do not bear it out or it has not the card's shape."""
        found = self._snapped_full(image, np.ascontiguousarray(estimate, np.float32))
        if found is None or not self._shaped(found[2], 0.0):
            return None
        return found[0], found[2]

    def find(self, image: np.ndarray, prior: Outline | None = None) -> Outline:
        """Look for a card in ``image`` (already cut to the region of interest).

        The card is what its outline encloses. Edges are found at a quarter
        of the frame's scale (a card's outline is still tens of pixels long)
        with low thresholds (a white card on a light table has a faint
        outline); everything the region's border can reach without crossing
        an edge is table, and the rest is a candidate. Whatever a card's face
        holds (court figures, a printed frame, pips touching the frame) lies
        inside its outline and fills the blob rather than cutting it up, and
        table texture only leaves thin edge lines that an opening removes.
        Each candidate's sides are then found again at full resolution, and
        the candidate whose four sides are best borne out by real edges wins.

        ``prior``: what another locator found in this same ``image`` (a quick
        look before this thorough one): its reduction, edges, regions and the
        outlines it snapped are reused, where both locators' settings agree.
        """
        work = prior.work if prior is not None else None
        if work is None or work.image is not image or work.settings != self._settings:
            work = self._work(image)
        paper, reason = self._outlines(work, "paper", lambda: work.candidates)
        found = self._choose(paper)
        if found is None or self.thorough:
            # A court figure, or a textured paper, can cut the paper into
            # pieces no grouping joins: the card's silhouette against the
            # table's colour is tried then (and always when time does not
            # matter: a calibration photograph).
            more, reason2 = self._outlines(work, "silhouette", lambda: self._silhouettes(work))
            found = self._choose(paper + more if self.thorough else more)
            reason = reason2 or reason
            if found is None:
                # Then a card printed fading into the table's colour towards one end.
                faint, reason2 = self._outlines(
                    work, "faint", lambda: self._silhouettes(work, FAINT)
                )
                found = self._choose(faint)
                reason = reason2 or reason
                if found is None:
                    # Last, a chip or fingertip over the card's edge, bulging out of its
                    # silhouette (tried only when nothing else is found: the largest quad
                    # inside an outline can be a printed frame's as well).
                    bulged, reason2 = self._outlines(
                        work,
                        "bulge",
                        lambda: work.contours["silhouette"] + work.contours["faint"],
                        cut_bulge=True,
                    )
                    found = self._choose(bulged)
                    reason = reason2 or reason
                    if found is None:
                        # Last of all, a hand over a corner of the card: its paper
                        # fills less of its rectangle than any card's does (its faint
                        # paper too: a light card on a light table under a finger, whose
                        # silhouette the finger notches below a card's fill).
                        cornered, reason2 = self._outlines(
                            work,
                            "cut",
                            lambda: (
                                work.candidates
                                + work.contours["silhouette"]
                                + (work.contours["faint"] if FAINT_CUT else [])
                            ),
                            cut=True,
                        )
                        found = self._choose(cornered)
                        reason = reason2 or reason
        present, why = work.present, work.why
        if found is None and not present:
            # A card whose paper the table's texture and a hand cut up (a small,
            # blurred card on felt) still stands out from the table's colour: it is
            # in view (the pass goes on), however it is not whole.
            small = work.small
            min_area = self.min_card_fraction * small.shape[0] * small.shape[1]
            present = _card_sized(work.contours.get("silhouette", []), min_area)
            if not present and FAINT_PRESENT and self.hands:
                joined = work.contours.get("joined faint")
                if joined is None:
                    work.contours["joined faint"] = joined = self._joined(work, FAINT)
                present = _card_sized(joined, min_area)
        if found is None:
            return Outline(present=present, why=(reason or why) if present else why, work=work)
        return Outline(present=True, quad=found, work=work)

    def outlines(self, found: Outline) -> list[np.ndarray]:
        """Every outline the search of ``found``'s frame (this locator's, or one with the
        same settings) saw borne out by the card's edges, the one a hand cut a corner out
        of too (see :meth:`_cornered`): the best borne out first, then the largest; and
        before them all, the outlines round the pieces of the card a hand cuts apart
        (see :meth:`_joined`), then the same with its faint parts.

        The one :meth:`find` chose is among them: a piece of a court card, or a quad
        turned across the card beside a hand, can be borne out as well as the card."""
        work = found.work
        if work is None:
            return []
        self._outlines(
            work,
            "cut",
            lambda: (
                work.candidates
                + work.contours.get("silhouette", [])
                + (work.contours.get("faint", []) if FAINT_CUT else [])
            ),
            cut=True,
        )
        self._outlines(work, "skinless", lambda: [])
        joined, _why = self._outlines(work, "joined", lambda: self._joined(work), cut=True)
        faint, _why = self._outlines(
            work, "joined faint", lambda: self._joined(work, FAINT), cut=True
        )
        every = [
            f
            for done, _why in work.outlines.values()
            if done is not joined and done is not faint
            for f in done
        ]
        every.sort(key=lambda f: (-f[0], -f[1]))
        # A hand across the card cuts its silhouette in pieces, each of them borne out by
        # edges as well as the card (the hand's own edge taken for a side): the outline
        # round the pieces the hand joins is the whole card, and comes first (then the
        # same with the card's faint parts, see :meth:`_joined`).
        first = sorted(joined, key=lambda f: (-f[0], -f[1]))
        first += sorted(faint, key=lambda f: (-f[0], -f[1]))
        return [f[2] for f in first + every]

    def beside(self, image: np.ndarray, quad: np.ndarray) -> np.ndarray | None:
        """``quad`` (an outline found in ``image``, full-scale) with its sides found beside a
        hand that lies over one of them (see :func:`_snap_beside`), if they are found and
        have the card's shape; ``None`` otherwise (no skin over a side among them).

        The snap takes an outline whose edges bear it out, however a hand's edge or a glare
        spot beside the hand pulled one of its sides 8-30 px off the card: the reader looks
        again this way at an outline it could not read (see
        :meth:`~shoe_reader.camera.recognize.Recognizer.read_frame`)."""
        if image.ndim != 3 or not (self.hands and BESIDE):
            return None
        found = _snap_beside(image, quad.astype(np.float32))
        if found is None or not self._shaped(found[1], RESHAPED):
            return None
        return found[1]

    def _joined(self, work: _Work, faint: float = 1.0) -> list[np.ndarray]:
        """The pieces of the card's silhouette a dealer's hand cuts apart, joined through the
        skin: per hand, the outline of every piece it touches (two pieces at least).

        With ``faint`` below 1, what differs from the table by that share of the limit
        (see :meth:`_silhouettes`) counts too: a card's paper fading into a light table
        (jolly-royal's, konqi-modern's) leaves only its print beside the hand otherwise.

        A finger along a card's side leaves a strip of paper beyond it, a hand over one
        end leaves the card's far corners beside it: the silhouette's largest piece
        alone has the hand's edge for one of its sides. The pieces a hand's skin joins
        (with the table around them, nothing else of the card is in view) are one card
        under it; their outline is then the card's, less what the hand hides.
        """
        if work.small.ndim != 3:
            return []
        if work.difference is None:
            work.difference = _table_difference(work.small)
        total, limit = work.difference
        if work.skin is None:
            work.skin = cv2.dilate(skin_pixels(work.small), self._kernel)
        skin = work.skin
        h, w = total.shape
        fg: np.ndarray = (total > faint * limit).view(np.uint8)
        fg = cv2.morphologyEx(cv2.bitwise_and(fg, 1 - skin), cv2.MORPH_OPEN, self._kernel)
        n, labels = cv2.connectedComponents(cv2.bitwise_or(fg, skin), connectivity=8)
        if n <= 2:
            return []
        handed = np.zeros(n, bool)
        handed[labels[skin > 0]] = True
        handed[0] = False
        min_area = self.min_card_fraction * h * w
        out = []
        for i in np.flatnonzero(handed):
            piece = ((labels == i) & (fg > 0)).view(np.uint8)
            contours, _ = cv2.findContours(piece, cv2.RETR_EXTERNAL, cv2.CHAIN_APPROX_NONE)
            contours = [c for c in contours if cv2.contourArea(c) >= 4]
            if len(contours) < 2:
                continue
            c = np.concatenate(contours).reshape(-1, 2)
            x, y, bw, bh = cv2.boundingRect(c)
            if bw * bh < min_area or x <= 1 or y <= 1 or x + bw >= w - 1 or y + bh >= h - 1:
                continue
            out.append(c)
        return out

    def _work(self, image: np.ndarray) -> _Work:
        """The frame reduced, its edges, and its paper regions grouped into candidates."""
        # Reduced first, then grey: the frame is never converted whole (the
        # side snapping converts only what lies around each candidate), and
        # the reduced colour serves the silhouettes.
        small = _area_reduce(image, self.scale)
        gray = cv2.cvtColor(small, cv2.COLOR_BGR2GRAY) if small.ndim == 3 else small
        gray = cv2.GaussianBlur(gray, (3, 3), 0)
        edges = cv2.Canny(gray, self.edge_low, self.edge_high)
        edges = cv2.dilate(edges, self._edge_kernel)
        present, why, candidates, skinless = self._search(
            gray, edges, small if small.ndim == 3 else None
        )
        work = _Work(image, self._settings, small, present, why, candidates)
        work.contours["skinless"] = skinless
        return work

    def _outlines(
        self,
        work: _Work,
        name: str,
        contours: Callable[[], list[np.ndarray]],
        cut_bulge: bool = False,
        cut: bool = False,
    ) -> tuple[list[_Found], str]:
        """The outlines among one set of ``contours`` (small-scale) borne out by the card's
        edges, and why the last one refused was (made once per frame and set).

        ``cut_bulge``: each contour's quad is the largest inside its hull
        (:func:`_largest_quad`), not the smallest rectangle round it.
        """
        key = f"{name}, refined" if self.refine else name
        done = work.outlines.get(key)
        if done is not None:
            return done
        found: list[_Found] = []
        why = ""
        listed = work.contours.get(name)
        if listed is None:
            work.contours[name] = listed = contours()
        for contour in listed:
            if cut:
                found += self._cornered(work, contour)
                continue
            quad = self._card_quad(contour, cut_bulge)
            if isinstance(quad, str):
                why = quad
                if not cut_bulge and quad.startswith(_ASPECT):
                    found += self._reshaped(work, contour)
                continue
            snapped = self._snapped(work, quad)
            if snapped is None:
                why = "outline not borne out by the card's edges"
                continue
            found.append(snapped)
        work.outlines[key] = found, why
        return found, why

    def _choose(self, found: list[_Found]) -> np.ndarray | None:
        """The card's quad among the outlines borne out by its edges."""
        if not found:
            return None
        if not self.thorough:
            return max(found, key=lambda f: (f[0], f[1]))[2]
        # A whole card encloses any piece of it that looks like a card (half a
        # court figure, whose middle line is an edge too): of the outlines
        # nearly as well borne out by edges as the best, the largest. (An
        # outline that took in a patch of table has a side over bare table.)
        top = max(f[0] for f in found)
        return max((f for f in found if f[0] >= 0.8 * top), key=lambda f: f[1])[2]

    def _silhouettes(self, work: _Work, faint: float = 1.0) -> list[np.ndarray]:
        """Outlines of whatever differs in colour from the table, holes filled.

        The difference is the region's :func:`_table_difference` (worked out
        once per frame). With ``faint`` below 1, what differs from the table
        by that share of the limit is taken in too where it is joined to what
        differs fully: a card printed fading towards one end (jolly-royal's
        paper and frame, from white to the grey of a light table) loses that
        end otherwise.

        A court figure can cut a card's paper into pieces too far apart to
        group; the card as a whole still stands out from the table's colour
        (its paper, its printed frame, its figure), so its silhouette is the
        outside of everything that is not table.
        """
        if work.difference is None:
            work.difference = _table_difference(work.small)
        total, limit = work.difference
        h, w = total.shape
        min_area = self.min_card_fraction * h * w
        fg: np.ndarray = (total > faint * limit).view(np.uint8)
        if work.skin is None:
            # (and its rim, where skin blends into the table)
            work.skin = (
                cv2.dilate(skin_pixels(work.small), self._kernel)
                if work.small.ndim == 3
                else np.zeros(fg.shape, np.uint8)
            )
        fg = cv2.bitwise_and(fg, 1 - work.skin)  # a finger over the card's edge is not the card
        fg = cv2.morphologyEx(fg.astype(np.uint8), cv2.MORPH_OPEN, self._kernel)
        if faint < 1.0:
            # Whole pieces of the opened mask are kept (every 3x3 block of it
            # lies in one piece, so what is kept stays opened).
            n, pieces = cv2.connectedComponents(fg, connectivity=8)
            joined = np.zeros(n, bool)
            joined[pieces[total > limit]] = True
            joined[0] = False
            fg = joined[pieces].view(np.uint8)
        contours, _ = cv2.findContours(fg, cv2.RETR_EXTERNAL, cv2.CHAIN_APPROX_NONE)
        out = []
        for c in contours:
            x, y, bw, bh = cv2.boundingRect(c)
            if bw * bh < min_area or x <= 1 or y <= 1 or x + bw >= w - 1 or y + bh >= h - 1:
                continue
            out.append(c.reshape(-1, 2))
        return out

    def _snapped(self, work: _Work, quad: np.ndarray) -> _Found | None:
        """``quad`` (small-scale) snapped onto the card's edges in ``work``'s image (full-size):
        its support, its area and the full-scale quad; ``None`` if edges do not bear it out.

        Snapped once per frame and quad (see ``_Work.snaps``): the sets of outlines a search
        tries (the paper's, the silhouette's, those a hand cuts) share contours, and a
        contour of the wrong shape is reshaped to the same quads in each; snapping them
        again was a tenth of a searched frame."""
        s = self.scale
        full = ((quad + 0.5) / s - 0.5).astype(np.float32)
        if not SNAP_ONCE:
            return self._snapped_full(work.image, full)
        key = (self._settings, full.tobytes())
        if key not in work.snaps:
            work.snaps[key] = self._snapped_full(work.image, full)
        return work.snaps[key]

    def _snapped_full(
        self, image: np.ndarray, full: np.ndarray, square: bool = True
    ) -> _Found | None:
        """:meth:`_snapped` of a full-scale ``quad``; with ``square``, a side that lies
        askew of the one across from it is laid again (see :meth:`_squared`)."""
        x0, y0, x1, y1 = _around(image, full)
        if x1 - x0 < 8 or y1 - y0 < 8:
            return None
        crop = image[y0:y1, x0:x1]
        if crop.ndim == 3:
            crop = cv2.cvtColor(crop, cv2.COLOR_BGR2GRAY)
        g = crop.astype(np.float32)
        origin = np.array([x0, y0], np.float32)
        first = full - origin
        local, support = _snap(g, first, self.own_steps)
        if float(np.abs(local - first).max()) > SNAP_SETTLED:
            local, support = _snap(g, local, self.own_steps)  # again from the better estimate
        if support < MIN_SUPPORT and image.ndim == 3:
            # Borne out only beside a hand: it passes, but ranks below any outline
            # its edges bear out all round.
            snapped = _snap_beside(image, local + origin) if BESIDE and self.hands else None
            if snapped is not None and self._shaped(snapped[1], RESHAPED):
                local, support = snapped[1] - origin, MIN_SUPPORT
            else:
                beside, placed = _beside_skin(image[y0:y1, x0:x1], g, local)
                if beside >= MIN_SUPPORT:
                    local, support = placed, MIN_SUPPORT
                elif square and HIDDEN_END and self.hands:
                    return self._hidden_end(image, local + origin)
        if support < MIN_SUPPORT:
            return None
        if square and SQUARE and self.hands:
            squared = self._squared(image, local + origin)
            if squared is not None:
                return squared
        return support, float(cv2.contourArea(local)), local + origin

    def _squared(self, image: np.ndarray, quad: np.ndarray) -> _Found | None:
        """``quad`` (full-scale, snapped) with a side that lies askew of the side across
        from it (``SKEW`` degrees or more, where the other two lie as a card's do) laid
        again parallel to that side, the card's length (or width) from it, and snapped;
        ``None`` if no side is askew or the side laid again is not borne out.

        A hand over one end of the card hides that side's edge; the hand's own edge
        beside it, slanting across the card, can then be taken for it (it steps as
        strongly). A card's opposite sides lie within a few degrees of parallel
        under any camera over a table; its far side, hidden, lies across from the
        one that shows, at the distance the card's shape says.
        """
        quad = quad.astype(np.float32)
        skew = _skews(quad)
        askew = [k for k in (0, 1) if skew[k] >= SKEW]
        if len(askew) != 1 or skew[1 - askew[0]] >= SKEW / 2:
            return None
        pair = askew[0]
        best: _Found | None = None
        for bad in (pair, pair + 2):
            laid = self._laid(image, quad, bad)
            if laid is None:
                continue
            found = self._snapped_full(image, laid, square=False)
            if found is None and image.ndim == 3:
                found = self._hidden_laid(image, laid, bad)
            if found is None or not self._shaped(found[2], RESHAPED):
                continue
            if max(_skews(found[2])) >= SKEW:
                continue
            if best is None or found[0] > best[0]:
                best = found
        return best

    def _laid(self, image: np.ndarray, quad: np.ndarray, bad: int) -> np.ndarray | None:
        """``quad`` (full-scale) with its side ``bad`` laid again parallel to the side across
        from it, the card's length (or width) from it (``None``: the sides do not meet, or
        the card would reach out of the region, where it is not read whole)."""
        lengths = side_lengths(quad)
        short_pair = 0 if lengths[0] + lengths[2] <= lengths[1] + lengths[3] else 1
        keep = (bad + 2) % 4
        a, b = quad[keep], quad[(keep + 1) % 4]
        along = (b - a) / max(float(lengths[keep]), 1e-6)
        inward = np.array([along[1], -along[0]], np.float32)
        if float((quad.mean(axis=0) - a) @ inward) < 0:
            inward = -inward
        # The card's length across from a short side, its width across from a long one.
        reach = (
            lengths[keep] / self.aspect if bad % 2 == short_pair else lengths[keep] * self.aspect
        )
        starts, ends = quad.copy(), quad[_NEXT].copy()
        starts[bad] = b + inward * reach
        ends[bad] = a + inward * reach
        laid = _meet(starts, ends)
        if laid is None:
            return None
        laid = laid.astype(np.float32)
        h, w = image.shape[:2]
        if laid.min() < 1 or float(laid[:, 0].max()) > w - 2 or float(laid[:, 1].max()) > h - 2:
            return None
        return laid

    def _hidden_end(self, image: np.ndarray, quad: np.ndarray) -> _Found | None:
        """``quad`` (full-scale, its snap not borne out) with a side that lies under a hand from
        end to end laid where the card's shape puts it (see :meth:`_laid`), if the other
        three sides bear it out beside the hand (the best borne out of the four tried).

        A hand over one end of the card hides that side whole: :func:`_hidden_side` finds no
        step of it beside the hand, and the outline was refused, however well its three
        other sides showed (svg-jolly-royal's six of spades on a wood table, studio pass 72:
        three sides on their edges within 4 px, the fourth under the hand)."""
        best: tuple[float, np.ndarray] | None = None
        for bad in range(4):
            laid = self._laid(image, quad, bad)
            if laid is None:
                continue
            support = _laid_support(image, laid, bad, whole=True)
            if support >= MIN_SUPPORT and (best is None or support > best[0]):
                best = support, laid
        if best is None:
            return None
        return MIN_SUPPORT, float(cv2.contourArea(best[1])), best[1]

    def _hidden_laid(self, image: np.ndarray, quad: np.ndarray, side: int) -> _Found | None:
        """``quad`` (full-scale) as it was laid, its ``side`` under the hand (see
        :meth:`_squared`), if the other three sides bear it out beside the hand."""
        if _laid_support(image, quad, side) < MIN_SUPPORT:
            return None
        return MIN_SUPPORT, float(cv2.contourArea(quad)), quad

    def _card_quad(
        self, contour: np.ndarray, cut_bulge: bool = False, fill: float = 0.8
    ) -> np.ndarray | str:
        """The card quadrilateral an outline traces, or why it is not a card's.

        The smallest rectangle round the outline; with ``cut_bulge``, the
        largest quad with its corners on the outline's hull instead (a chip or
        fingertip over the card's edge bulges out of the outline, and makes
        that rectangle too long or lays one of its sides over bare table).
        Either is only the sides' first estimate, at a quarter of the scale:
        :func:`_snap` finds each side again at full resolution. With
        ``refine``, lines are first fitted to the outline's points along each
        side (:func:`_refine`): a quarter of a millisecond a frame, for about
        one frame in a hundred more read (all 14 development decks at
        "moderate"), so only the second look at a frame the quick one could
        not read does it.
        """
        hull = cv2.convexHull(contour.reshape(-1, 1, 2).astype(np.int32))
        if cut_bulge:
            inner = _largest_quad(hull)
            if inner is None:
                return "outline has no card's corners"
            quad = _order(inner)
        else:
            quad = _order(cv2.boxPoints(cv2.minAreaRect(hull)).astype(np.float32))
        why = self._not_a_card(quad, cv2.contourArea(hull), fill)
        if why or not self.refine:
            return why or quad
        return _refine(quad, contour.reshape(-1, 2).astype(np.float32), self.grow)

    def _reshaped(self, work: _Work, contour: np.ndarray) -> list[_Found]:
        """Outlines of the wrong shape that are a card's all the same, borne out by its edges.

        A small card under a strong perspective: the paper found lies a pixel
        or two inside its edges all round, and its rectangle is off the card's
        shape by more than the tolerance, until its sides are put on the
        card's edges. A finger across a card: its larger piece keeps three of
        the card's sides whole and one short, and is completed to the card's
        shape on one side or the other (which, the card's edges tell).
        """
        hull = cv2.convexHull(contour.reshape(-1, 1, 2).astype(np.int32))
        rough = _order(cv2.boxPoints(cv2.minAreaRect(hull)).astype(np.float32))
        s = self.scale
        snapped = self._snapped(work, rough)
        if snapped is not None:
            if self._shaped(snapped[2], RESHAPED):
                return [snapped]
            rough = _order((snapped[2] + 0.5) * s - 0.5)
        out = []
        for q in self._completed(rough):
            again = self._snapped(work, q)
            if again is not None and self._shaped(again[2], RESHAPED):
                out.append(again)
        return out

    def _cornered(self, work: _Work, contour: np.ndarray) -> list[_Found]:
        """The outline round a card's paper that a hand cuts a corner out of, borne out by
        the card's edges (see :meth:`find`).

        With ``RESHAPE_CUT``, an outline that has not the card's shape is put on the card's
        edges and completed to it (see :meth:`_reshaped`), as a whole one is: a hand over
        one end of a card on a light table leaves its paper beside the hand, the hand's edge
        for one of its sides, too short for a card's rectangle (ancient_french's queen of
        hearts and svg-jolly-royal's, studio passes 122 and 53)."""
        quad = self._card_quad(contour, fill=1.0 - COMPLETE)
        if isinstance(quad, str):
            if RESHAPE_CUT and quad.startswith(_ASPECT):
                return self._reshaped(work, contour)
            return []
        found = self._snapped(work, quad)
        if found is None or not self._shaped(found[2], RESHAPED):
            return []
        return [found]

    def _shaped(self, quad: np.ndarray, slack: float) -> bool:
        """Whether ``quad`` has the card's shape, within ``slack`` more than the tolerance."""
        sides = side_lengths(_order(quad))
        short, long_ = (sides[0] + sides[2]) / 2, (sides[3] + sides[1]) / 2
        return bool(long_ > 0 and abs(short / long_ - self.aspect) <= self.aspect_tolerance + slack)

    def _completed(self, q: np.ndarray) -> list[np.ndarray]:
        """``q`` (ordered) made the card's shape by lengthening it at one end or the other
        (or widening it on one side or the other)."""
        sides = side_lengths(q)
        short, long_ = (sides[0] + sides[2]) / 2, (sides[3] + sides[1]) / 2
        if short < 4 or long_ < 4:
            return []
        if short / long_ < self.aspect:  # too narrow: widen it across
            missing, way, ends = self.aspect * long_ - short, q[1] - q[0], ((1, 2), (0, 3))
            target = self.aspect * long_
        else:  # too short: lengthen it
            missing, way, ends = short / self.aspect - long_, q[2] - q[1], ((2, 3), (0, 1))
            target = short / self.aspect
        if missing > COMPLETE * target:
            return []
        step = way / max(float(np.linalg.norm(way)), 1e-6) * missing
        out = []
        for sign, moved in ((1.0, ends[0]), (-1.0, ends[1])):
            c = q.copy()
            c[list(moved)] += sign * step
            out.append(c)
        return out

    def _not_a_card(self, quad: np.ndarray, hull_area: float, fill: float = 0.8) -> str:
        """Why ``quad``, round an outline or inside it, is not a card's (or ``""``).

        ``hull_area``: the outline's hull's. The quad is round the outline, or
        inside it (a bulge cut off): either way the two differ by at most a fifth.
        """
        sides = side_lengths(quad)
        short, long_ = (sides[0] + sides[2]) / 2, (sides[3] + sides[1]) / 2
        if long_ <= 0 or abs(short / long_ - self.aspect) > self.aspect_tolerance:
            return f"{_ASPECT} {short / max(long_, 1e-6):.2f} is not a card's"
        area = cv2.contourArea(quad)
        if min(hull_area, area) / max(hull_area, area, 1e-6) < fill:
            return "outline does not fill its quadrilateral"
        return ""

    def _search(
        self, gray: np.ndarray, edges: np.ndarray, colour: np.ndarray | None = None
    ) -> tuple[bool, str, list[np.ndarray], list[np.ndarray]]:
        """Card-sized groups of paper regions: whether a card is in view, the groups' outlines,
        and the outlines of those with skin reaching out of them, without it.

        The regions between edges that are brighter than the table are paper.
        A plain card is one such region; a court card, or a card with a printed
        frame, is several, cut apart by the figure's lines where they meet the
        frame: a dilation joins pieces separated by thin lines into one card,
        whose outline is then the outside of the group.
        """
        h, w = gray.shape
        free = cv2.bitwise_not(edges)  # (edges are 0 or 255: the free pixels are not 0)
        # Labels only: the statistics OpenCV would add (a box and a centre per
        # region) cost as much again as the labelling, and what is asked of
        # them below is had from the labels for less.
        n, labels = cv2.connectedComponents(free, connectivity=4)
        # Paper must be brighter than the table around it: the table is what
        # the region's border shows (a region is drawn around the place cards
        # pass, not on them), lit more on one side than the other. The table's
        # light is a plane, so its mean over a region is its light at the
        # region's centre: a region's mean brightness above the table is the
        # mean of its pixels' brightness above the table under each. Areas,
        # that brightness, and which regions come within a pixel of each side
        # of the region (as a bounding box starting at 0 or 1, or ending at the
        # last or the one before) are one pass over the labels.
        rows, columns, spread = _table_light(gray)
        areas, above, warm, left, right, top, bottom, boxes = kernels.regions(
            labels, gray, rows, columns, _NO_COLOUR if colour is None else colour, n
        )
        min_area = self.min_card_fraction * h * w
        paper = (above / np.maximum(areas, 1) >= max(self.min_contrast, 1.6 * spread)) & (
            areas >= max(6, min_area / 50)
        )
        paper[0] = False
        touches = left | right | top | bottom
        skin = np.zeros_like(paper)
        if colour is not None:
            # A dealer's finger on the card is brighter than a dark table, and cuts
            # the card's paper in two on any table: skin is no paper, but a
            # card's pieces either side of a finger are one card.
            # (the plane's mean over the region: its mean row plus its mean column)
            level = above / np.maximum(areas, 1) + (float(rows.mean()) + float(columns.mean()))
            warmth = warm / np.maximum(areas, 1)
            skin = (warmth > SKIN_WARMTH * np.maximum(level, 1.0)) & (areas >= 4) & ~touches
            skin[0] = False
            paper &= ~skin
        # A bright band right across the region (wood grain, a lit stripe of
        # cloth) is table; a card still under the shoe touches one side.
        across = (left & right) | (top & bottom)
        present = bool((paper & touches & ~across & (areas >= min_area)).any())
        why = AT_EDGE if present else _NOTHING
        inside = paper & ~touches
        if not inside.any():
            return present, why, [], []
        r = self._group_radius
        # The grouping is done only over the paper's bounding box (grown by the
        # dilation's reach): outside it there is nothing to group, and the
        # labelling costs by the pixel. The box is its regions' boxes together,
        # and the paper (with the skin joining its pieces, if any) is picked out
        # of the labels only inside it.
        apart = bool(skin.any())
        chosen = inside | skin if apart else inside
        box = boxes[chosen]
        bx, bx1 = int(box[:, 0].min()), int(box[:, 1].max())
        by, by1 = int(box[:, 2].min()), int(box[:, 3].max())
        gx0, gx1 = max(bx - r, 0), min(bx1 + 1 + r, w)
        gy0, gy1 = max(by - r, 0), min(by1 + 1 + r, h)
        mask, joined = kernels.select_two(labels, inside, chosen, gy0, gy1, gx0, gx1)
        grouped = cv2.dilate(joined, self._group_kernel)
        # Labels, then their boxes (compiled): OpenCV's statistics cost twice the labelling.
        m, groups = cv2.connectedComponents(grouped, connectivity=4)
        gstats = kernels.label_boxes(groups, m)
        candidates: list[np.ndarray] = []
        skinless: list[np.ndarray] = []
        for i in range(1, m):
            gx, gy, bw, bh = (int(v) for v in gstats[i])
            if bw * bh < min_area:
                continue
            crop = mask[gy : gy + bh, gx : gx + bw] & (groups[gy : gy + bh, gx : gx + bw] == i)
            if apart:  # the paper's own box, without the finger
                px, py, bw, bh = cv2.boundingRect(crop)
                if bw * bh < min_area:
                    continue
                gx, gy = gx + px, gy + py
                crop = crop[py : py + bh, px : px + bw]
            x, y = gx + gx0, gy + gy0
            # Scattered bright specks (wood grain, glare) are no sign of a card;
            # they are still tried (a card's paper may be cut up as finely).
            present = present or cv2.countNonZero(crop) / crop.size >= MIN_FILL
            if (x + r <= 1 or y + r <= 1 or x + bw - r >= w - 1 or y + bh - r >= h - 1) and (
                x <= 1 or y <= 1 or x + bw >= w - 1 or y + bh >= h - 1
            ):
                why = AT_EDGE
                continue
            contours, _ = cv2.findContours(
                crop.view(np.uint8), cv2.RETR_EXTERNAL, cv2.CHAIN_APPROX_NONE
            )
            if contours:
                candidates.append(np.concatenate(contours) + np.array([x, y]))
            if colour is not None and SKIN_CUT and self.hands:
                # A finger lying on the card from beyond it can be one region with the
                # paper (where its tip meets the card, washed out): the paper without the
                # skin in it is kept for the other outlines (see :meth:`outlines`).
                cut = _without_skin(crop, colour, y, x, self._kernel)
                if cut is not crop and _shrunk(cut, crop):
                    contours, _ = cv2.findContours(
                        cut.view(np.uint8), cv2.RETR_EXTERNAL, cv2.CHAIN_APPROX_NONE
                    )
                    skinless.append(np.concatenate(contours) + np.array([x, y]))
        return present, why, candidates, skinless


CORNER_W = round(0.40 * CARD_W)
CORNER_H = round(0.34 * CARD_H)
"""The part of a straightened card that holds a corner index (and a margin)."""


def straighten_corner(
    image: np.ndarray, quad: np.ndarray, turned: bool, mirrored: bool = False
) -> np.ndarray:
    """Only the index corner of the straightened card (``turned``: the opposite one, upright).

    ``mirrored``: the deck prints its index in the top-right corner (and the
    bottom-left), which is then flipped left to right into the window, as
    :func:`~shoe_reader.camera.index.corners_of` does. Warping the two
    corners alone is a fifth of the work of the whole face, and the face
    between them is never read.
    """
    src = quad[_OPPOSITE] if turned else quad  # (np.roll by two corners, for less)
    if mirrored:
        src = src[[1, 0, 3, 2]]
    m = cv2.getPerspectiveTransform(src.astype(np.float32), _DST)
    return cv2.warpPerspective(image, m, (CORNER_W, CORNER_H), flags=cv2.INTER_LINEAR)


def straighten_small(image: np.ndarray, quad: np.ndarray, width: int, height: int) -> np.ndarray:
    """The whole card at ``quad``, warped straight to ``width x height`` (a reduced face)."""
    # The same card geometry as :func:`straighten`, scaled: pixel centres line up.
    sx, sy = width / CARD_W, height / CARD_H
    dst = (_DST + 0.5) * np.array([sx, sy], np.float32) - 0.5
    m = cv2.getPerspectiveTransform(quad.astype(np.float32), dst.astype(np.float32))
    return cv2.warpPerspective(image, m, (width, height), flags=cv2.INTER_LINEAR)


def _sides_moved(m: np.ndarray, top: float, right: float, bottom: float, left: float) -> np.ndarray:
    """The quad whose sides lie the given straightened pixels outwards of the card that the
    card-to-image transform ``m`` maps."""
    w, h = CARD_W - 1, CARD_H - 1
    out = np.array(
        [(-left, -top), (w + right, -top), (w + right, h + bottom), (-left, h + bottom)], np.float32
    )
    moved: np.ndarray = cv2.perspectiveTransform(out[None], m)[0]
    return moved


def grown(quad: np.ndarray, pixels: float) -> np.ndarray:
    """``quad`` with each side moved ``pixels`` (of the straightened card) outwards."""
    m = cv2.getPerspectiveTransform(_DST, quad.astype(np.float32))
    return _sides_moved(m, pixels, pixels, pixels, pixels)


def straighten(image: np.ndarray, quad: np.ndarray) -> np.ndarray:
    """Warp the card at ``quad`` to a ``CARD_H x CARD_W`` portrait face."""
    m = cv2.getPerspectiveTransform(quad.astype(np.float32), _DST)
    return cv2.warpPerspective(image, m, (CARD_W, CARD_H), flags=cv2.INTER_LINEAR)


_RIM_ALONG = np.linspace(0.2, 0.8, 24, dtype=np.float32)
_RIM_STEP = 0.25
_RIM_REACH = 6.0
_RIM_T = np.arange(-_RIM_REACH, _RIM_REACH + _RIM_STEP / 2, _RIM_STEP, dtype=np.float32)


def _rim_grid() -> np.ndarray:
    """Card coordinates sampled across each side: (4, len(_RIM_ALONG), len(_RIM_T), 2)."""
    w, h = CARD_W - 1, CARD_H - 1
    u, t = np.meshgrid(_RIM_ALONG, _RIM_T, indexing="ij")
    return np.stack(
        [
            np.stack([u * w, -t], axis=-1),  # top: outwards is up
            np.stack([w + t, u * h], axis=-1),  # right
            np.stack([u * w, h + t], axis=-1),  # bottom
            np.stack([-t, u * h], axis=-1),  # left
        ]
    ).astype(np.float32)


_RIM_GRID = _rim_grid()


def _card_sized(contours: Iterable[np.ndarray], min_area: float) -> bool:
    """Whether any of ``contours`` has a convex hull of at least ``min_area`` (a card in view,
    however a hand or the table's texture cut its outline up)."""
    return any(
        cv2.contourArea(cv2.convexHull(c.reshape(-1, 1, 2).astype(np.int32))) >= min_area
        for c in contours
    )


OUTLINE_STEP = 0.3
"""Share of the paper's brightness by which a printed outline must be darker, and the table
beyond it brighter than the outline, for a side to be moved onto the outline's outer edge."""


@functools.lru_cache(maxsize=4)
def _mean_of(channels: int) -> np.ndarray:
    """The weights of the mean of ``channels`` colours, float32 (made once)."""
    mean = np.full(channels, 1 / channels, np.float32)
    mean.flags.writeable = False
    return mean


def _rim_profiles(image: np.ndarray, quad: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Brightness across the middle of each side, outwards: (4, len(_RIM_T)); and the
    card-to-image transform."""
    m = cv2.getPerspectiveTransform(_DST, quad.astype(np.float32))
    pts = cv2.perspectiveTransform(_RIM_GRID.reshape(1, -1, 2), m)[0]
    shape = (4, len(_RIM_ALONG), len(_RIM_T))
    # Sampled as rows of one side's samples across it: remap works row by row, and a
    # column of single samples cost it a row each (the same samples, six times slower).
    xy = pts.reshape(shape[0] * shape[1], shape[2], 2)
    samples = cv2.remap(image, xy, None, cv2.INTER_LINEAR)  # (x, y) pairs: one map
    if samples.ndim == 3:  # the mean of the colours, as one small product
        channels = samples.shape[-1]
        flat = samples.reshape(-1, channels).astype(np.float32)
        grey = (flat @ _mean_of(channels)).reshape(shape)
    else:
        grey = samples.reshape(shape).astype(np.float32)
    # The median along each side of an even count of samples: the mean of the
    # middle two (np.median's own arithmetic, without its Python overhead).
    mid = len(_RIM_ALONG) // 2
    grey.sort(axis=1)
    return (grey[:, mid - 1] + grey[:, mid]) / 2, m


def _rim_edges(p: np.ndarray, reach: float) -> tuple[float | None, float | None]:
    """Offsets (straightened pixels, outwards from the side) of a printed outline's inner edge
    (paper to ink) and outer edge (ink to a brighter table) across one side, where seen.

    Compiled (:func:`kernels.rim_edges`): the paper's median over the samples inside the
    reach, the darkest sample within it (the ink), the steepest fall before it (the inner
    edge) and, where the table beyond is brighter than the ink by ``OUTLINE_STEP`` of the
    paper, the steepest rise after it (the outer edge); the same double arithmetic, first
    index on ties, as the plain-Python lists it replaced, four times a read outline."""
    inner, at_inner, outer, at_outer = kernels.rim_edges(
        np.ascontiguousarray(p, np.float32),
        round(reach / _RIM_STEP),
        float(_RIM_T[0]),
        _RIM_STEP,
        OUTLINE_STEP,
    )
    return (at_inner if inner else None), (at_outer if outer else None)


def outline_width(image: np.ndarray, quad: np.ndarray) -> float:
    """Width of the dark outline printed at the card's edge (straightened pixels, 0: none),
    from the sides where both its edges show."""
    profiles, _m = _rim_profiles(image, quad)
    widths = []
    for p in profiles:
        inner, outer = _rim_edges(p, _RIM_REACH - 2.0)
        if inner is not None and outer is not None:
            widths.append(outer - inner)
    return float(np.median(widths)) if len(widths) >= 2 else 0.0


def snap_to_outline(image: np.ndarray, quad: np.ndarray, outline: float) -> np.ndarray:
    """``quad`` with each side moved onto the outer edge of the card's printed outline.

    A dark outline printed at the card's edge has two edges: paper to ink, and
    ink to table. Where a shadow or a dark table borders the card the second
    is weak or gone and the locator takes the first, on some sides or all:
    the card straightened from such a quad is squeezed and its print shifted
    by the outline's width. Across the middle of each side the outline shows
    as a dark band with paper inside; the side is put on the band's outer
    edge where the table beyond is brighter, else the deck's ``outline``
    width (straightened pixels) beyond its inner edge. A side where no band
    shows is left.
    """
    if outline < 1.0:
        return quad
    profiles, m = _rim_profiles(image, quad)
    shifts = [0.0] * 4
    for side, p in enumerate(profiles):
        inner, outer = _rim_edges(p, outline + 2.0)
        if outer is not None:
            shifts[side] = outer
        elif inner is not None:
            shifts[side] = inner + outline
    if not any(shifts):
        return quad
    return _sides_moved(m, *shifts)
