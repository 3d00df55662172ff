"""Finding the card in a frame and straightening it.

The card is found from its outline, not from its colour, so a white card on a
light table top or under a lighting gradient is found as well as one on dark
felt: edges are local, brightness is not. The search runs on a half-size copy
(the outline of a card is tens of pixels long even there) and the warp takes its
pixels from the full-size frame, so the index keeps all its detail.
"""

from __future__ import annotations

from dataclasses import dataclass

import cv2
import numpy as np

CARD_W = 200
CARD_H = 280
"""Size of the straightened face the index is read from (portrait, 5:7)."""

_NOTHING = "no card in view"
_AT_EDGE = "card touches the edge of the region"

_DST = np.array([(0, 0), (CARD_W - 1, 0), (CARD_W - 1, CARD_H - 1), (0, CARD_H - 1)], np.float32)


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


def _order(quad: np.ndarray) -> np.ndarray:
    """Corners clockwise (in image coordinates), starting so the first edge is a short one."""
    c = quad.mean(axis=0)
    ang = np.arctan2(quad[:, 1] - c[1], quad[:, 0] - c[0])
    q = quad[np.argsort(ang)]  # clockwise on screen because y points down
    e0 = np.linalg.norm(q[1] - q[0]) + np.linalg.norm(q[3] - q[2])
    e1 = np.linalg.norm(q[2] - q[1]) + np.linalg.norm(q[0] - q[3])
    if e0 > e1:
        q = np.roll(q, -1, axis=0)
    # Of the two starting corners that make a short first edge, take the upper-left one
    # so the same card gives the same warp from frame to frame (the index is read at
    # both ends anyway).
    if q[0].sum() > q[2].sum():
        q = np.roll(q, 2, axis=0)
    return q.astype(np.float32)


def _intersect(p1: np.ndarray, p2: np.ndarray, p3: np.ndarray, p4: np.ndarray) -> np.ndarray | None:
    d1, d2 = p2 - p1, p4 - p3
    den = d1[0] * d2[1] - d1[1] * d2[0]
    if abs(den) < 1e-6:
        return None
    t = ((p3[0] - p1[0]) * d2[1] - (p3[1] - p1[1]) * d2[0]) / den
    return p1 + t * d1


def _to_quad(poly: np.ndarray) -> np.ndarray | None:
    """Reduce a polygon to four corners by dropping its shortest edges.

    A corner hidden by a finger, or a rounded corner approximated by two
    vertices, shows up as a short extra edge; extending its neighbours until
    they meet recovers the card's real corner.
    """
    pts = poly.reshape(-1, 2).astype(np.float64)
    while len(pts) > 4:
        n = len(pts)
        lengths = np.linalg.norm(np.roll(pts, -1, axis=0) - pts, axis=1)
        i = int(np.argmin(lengths))
        a, b = pts[(i - 1) % n], pts[i]
        c, d = pts[(i + 1) % n], pts[(i + 2) % n]
        x = _intersect(a, b, c, d)
        if x is None:
            return None
        pts[i] = x
        pts = np.delete(pts, (i + 1) % n, axis=0)
    return pts if len(pts) == 4 else None


def _refine(quad: np.ndarray, points: np.ndarray, offset: float) -> np.ndarray:
    """Fit a straight line to the middle of each side and intersect neighbours.

    Polygon approximation puts a rounded card corner somewhere on its arc; the
    sides themselves are straight, so their intersections are the true corners.
    A side hidden in part (a finger) keeps its polygon edge. Each side is then
    moved ``offset`` pixels outwards: the region found lies inside the edge.
    """
    centre = quad.mean(axis=0)
    lines: list[tuple[np.ndarray, np.ndarray]] = []
    for k in range(4):
        a, b = quad[k], quad[(k + 1) % 4]
        d = b - a
        length = float(np.linalg.norm(d))
        if length < 4:
            return quad
        u = d / length
        rel = points - a
        t = rel @ u
        dist = np.abs(rel[:, 0] * u[1] - rel[:, 1] * u[0])
        sel = points[(t > 0.2 * length) & (t < 0.8 * length) & (dist < 3.0)]
        if len(sel) < 8:
            p0, v = a, u
        else:
            vx, vy, x0, y0 = cv2.fitLine(sel, cv2.DIST_HUBER, 0, 0.01, 0.01).ravel()
            p0, v = np.array([x0, y0]), np.array([vx, vy])
        normal = np.array([v[1], -v[0]])
        if normal @ (p0 - centre) < 0:
            normal = -normal
        p0 = p0 + normal * offset
        lines.append((p0, p0 + v * length))
    out = np.empty((4, 2), np.float32)
    for k in range(4):
        x = _intersect(*lines[k - 1], *lines[k])
        if x is None or np.linalg.norm(x - quad[k]) > 0.2 * np.linalg.norm(quad[k] - quad[k - 1]):
            return quad
        out[k] = x
    return out


class Locator:
    """Finds one whole card in a region of interest of a frame.

    ``aspect`` is the card's width/height as measured on the studio's own deck
    during calibration; a quad too far from it is not a whole card (a card half
    under the shoe, a stack of chips) and gives ``present`` without a quad.
    """

    def __init__(
        self,
        aspect: float = CARD_W / CARD_H,
        aspect_tolerance: float = 0.09,
        min_card_fraction: float = 0.01,
        scale: float = 0.5,
        edge_low: int = 15,
        edge_high: int = 45,
        min_contrast: float = 15.0,
        grow: float = 2.2,
    ) -> None:
        self.edge_low = edge_low
        self.edge_high = edge_high
        self.min_contrast = min_contrast
        self.grow = grow
        self._kernel = np.ones((3, 3), np.uint8)
        self.aspect = aspect
        self.aspect_tolerance = aspect_tolerance
        self.min_card_fraction = min_card_fraction
        self.scale = scale

    def find(self, image: np.ndarray) -> Outline:
        """Look for a card in ``image`` (already cut to the region of interest).

        The card is the inside of a closed edge loop: the regions between edges
        are labelled and a card is a bright region bounded by four straight
        sides. Texture outside the card (felt, wood grain) only cuts up the
        background, never the card, so the edge thresholds can stay low enough
        for a white card on a light table.
        """
        s = self.scale
        small = cv2.resize(image, None, fx=s, fy=s, interpolation=cv2.INTER_AREA)
        gray = cv2.cvtColor(small, cv2.COLOR_BGR2GRAY) if small.ndim == 3 else small
        gray = cv2.GaussianBlur(gray, (3, 3), 0)
        edges = cv2.Canny(gray, self.edge_low, self.edge_high)
        edges = cv2.dilate(edges, self._kernel)
        outline = self._search(gray, edges, coarse=True)
        if outline.quad is None and outline.why != _AT_EDGE:
            # Something card-like but not a card: look again region by region at
            # full detail before giving up (blurred frames can merge blocks).
            outline = self._search(gray, edges, coarse=False)
        if outline.quad is None:
            return outline
        quad = (outline.quad + 0.5) / s - 0.5  # pixel centres at the small scale to full scale
        return Outline(present=True, quad=quad.astype(np.float32))

    def _search(self, gray: np.ndarray, edges: np.ndarray, coarse: bool) -> Outline:
        """The largest card-shaped bright region between edges (quad at the edge map's scale)."""
        h, w = gray.shape
        f = 2 if coarse else 1
        if coarse:
            # Regions are labelled at half scale, which halves the cost: a 2x2
            # block is closed when two or more of its pixels are edge (the dilated
            # edges are three pixels thick, so no outline gets a hole), and open
            # otherwise, so narrow strips of paper beside the index stay connected.
            # Each candidate's outline is then traced back at full scale.
            free = cv2.resize(edges, (w // 2, h // 2), interpolation=cv2.INTER_AREA) < 100
        else:
            free = edges == 0
        _n, labels, stats, _ = cv2.connectedComponentsWithStats(free.view(np.uint8), connectivity=4)
        qh, qw = free.shape
        min_area = self.min_card_fraction * qh * qw
        # Paper must be brighter than the table: the table is what the region's
        # border shows (a region is drawn around the place cards pass, not on them).
        border = np.concatenate([gray[0], gray[-1], gray[:, 0], gray[:, -1]])
        floor = float(np.median(border)) + self.min_contrast
        present = False
        why = _NOTHING
        best: tuple[float, np.ndarray] | None = None
        big = np.flatnonzero(stats[:, cv2.CC_STAT_AREA] >= min_area)
        big = big[big != 0]
        x0, y0 = stats[big, cv2.CC_STAT_LEFT], stats[big, cv2.CC_STAT_TOP]
        x1 = x0 + stats[big, cv2.CC_STAT_WIDTH]
        y1 = y0 + stats[big, cv2.CC_STAT_HEIGHT]
        inner = (x0 > 1) & (y0 > 1) & (x1 < qw - 1) & (y1 < qh - 1)
        # Regions inside the view first: a whole card is one of them, and the
        # large regions of table reaching the edges need not be looked at.
        for i in np.concatenate([big[inner], big[~inner]]):
            x, y, bw, bh, _area = (int(v) for v in stats[i])
            touches = not (x > 1 and y > 1 and x + bw < qw - 1 and y + bh < qh - 1)
            if touches and (present or best is not None):
                continue  # only needed to tell "a card is coming" from "nothing"
            region = (labels[y : y + bh, x : x + bw] == i).view(np.uint8)
            tone = cv2.mean(gray[f * y : f * (y + bh) : f, f * x : f * (x + bw) : f], region)[0]
            if tone < floor:
                continue  # a patch of table between texture edges, not paper
            present = True
            if touches:
                why = _AT_EDGE
                continue
            if coarse:
                # Back to full scale: label the exact regions in this block's box
                # (a little larger) and keep the one that covers most of the block
                # region, so blocks merged across a blurred edge come apart again.
                X, Y = max(2 * x - 4, 0), max(2 * y - 4, 0)
                X1, Y1 = min(2 * (x + bw) + 4, w), min(2 * (y + bh) + 4, h)
                exact = (edges[Y:Y1, X:X1] == 0).view(np.uint8)
                _m, sub, sub_stats, _ = cv2.connectedComponentsWithStats(exact, connectivity=4)
                hint = np.zeros_like(exact)
                hint[2 * y - Y : 2 * (y + bh) - Y, 2 * x - X : 2 * (x + bw) - X] = cv2.resize(
                    region, (2 * bw, 2 * bh), interpolation=cv2.INTER_NEAREST
                )
                votes = np.bincount(sub[hint > 0], minlength=_m)
                votes[0] = 0
                j = int(np.argmax(votes))
                sx, sy, sw, sh = (int(v) for v in sub_stats[j, :4])
                if sx == 0 or sy == 0 or sx + sw >= X1 - X or sy + sh >= Y1 - Y:
                    why = "region spills out of its box"
                    continue  # the exact region is larger: let the exact search decide
                crop = (sub == j).view(np.uint8)
            else:
                X, Y, crop = x, y, region
            contours, _ = cv2.findContours(crop, cv2.RETR_EXTERNAL, cv2.CHAIN_APPROX_NONE)
            if not contours:
                continue
            contour = max(contours, key=cv2.contourArea) + np.array([X, Y])
            hull = cv2.convexHull(contour)
            peri = cv2.arcLength(hull, True)
            poly = cv2.approxPolyDP(hull, 0.02 * peri, True)
            quad = _to_quad(poly)
            if quad is None:
                why = "outline is not a quadrilateral"
                continue
            quad = _order(quad)
            short = (np.linalg.norm(quad[1] - quad[0]) + np.linalg.norm(quad[2] - quad[3])) / 2
            long_ = (np.linalg.norm(quad[3] - quad[0]) + np.linalg.norm(quad[2] - quad[1])) / 2
            if long_ <= 0 or abs(short / long_ - self.aspect) > self.aspect_tolerance:
                why = f"outline aspect {short / max(long_, 1e-6):.2f} is not a card's"
                continue
            fill = cv2.contourArea(hull) / max(cv2.contourArea(quad.astype(np.float32)), 1e-6)
            if fill < 0.8:
                why = "outline does not fill its quadrilateral"
                continue
            qarea = short * long_
            if best is None or qarea > best[0]:
                best = (qarea, _refine(quad, contour.reshape(-1, 2).astype(np.float32), self.grow))
        if best is None:
            return Outline(present=present, why=why)
        return Outline(present=True, quad=best[1])


CORNER_W = round(0.27 * CARD_W)
CORNER_H = round(0.36 * CARD_H)
"""The part of a straightened card that holds a corner index (and a margin)."""


def straighten_corner(image: np.ndarray, quad: np.ndarray, turned: bool) -> np.ndarray:
    """Only the index corner of the straightened card (``turned``: the opposite one, upright).

    Warping the two corners alone is a fifth of the work of the whole face,
    and the face between them is never read.
    """
    src = np.roll(quad, 2, axis=0) if turned else quad
    m = cv2.getPerspectiveTransform(src.astype(np.float32), _DST)
    return cv2.warpPerspective(image, m, (CORNER_W, CORNER_H), flags=cv2.INTER_LINEAR)


def straighten(image: np.ndarray, quad: np.ndarray) -> np.ndarray:
    """Warp the card at ``quad`` to a ``CARD_H x CARD_W`` portrait face."""
    m = cv2.getPerspectiveTransform(quad.astype(np.float32), _DST)
    return cv2.warpPerspective(image, m, (CARD_W, CARD_H), flags=cv2.INTER_LINEAR)
