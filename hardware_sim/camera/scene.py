"""Camera frames: a card face placed on a table and photographed badly.

A scene is a table background, a card warped into it under perspective and
rotation, a drop shadow, then what a real camera adds: uneven light, blur,
sensor noise, JPEG compression, and sometimes a hand or chip in the way. The
degradation *levels* are named so benchmarks and tests report per level.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache

import cv2
import numpy as np

from hardware_sim.camera import hands
from hardware_sim.camera.faces import FACE_H, FACE_W

FRAME_W = 1280
FRAME_H = 720

BACKGROUNDS = ("felt", "dark", "wood", "light", "grey")


@dataclass(frozen=True)
class Degradation:
    """How badly one frame is taken; every field is an upper bound sampled per frame."""

    name: str
    rotation_deg: float
    perspective: float
    blur_sigma: float
    noise_sigma: float
    jpeg_quality: int
    gradient: float
    occlusion: float
    card_width: tuple[int, int]
    # A camera over a real table (the "studio" level, see :func:`card_pass`); all off
    # elsewhere, so the other levels' frames stay what they were.
    motion_blur: float = 0.0  # longest smear, frame pixels, along the card's travel
    glare: float = 0.0  # share of passes with a glare spot from the table lights
    hand: float = 0.0  # share of passes with a finger, thumb or hand over the card
    jpeg_low: int = 0  # JPEG quality drawn from jpeg_low..jpeg_quality (0: fixed)
    cut: float = 0.0  # share of passes whose first frames show the card partly out of view
    tilt: float = 0.0  # the camera's tilt off straight down, degrees (a true perspective)


LEVELS: dict[str, Degradation] = {
    "flat": Degradation("flat", 3, 0.01, 0.0, 1.5, 95, 0.05, 0.0, (300, 340)),
    "clean": Degradation("clean", 5, 0.02, 0.3, 2.0, 92, 0.1, 0.0, (230, 300)),
    "mild": Degradation("mild", 10, 0.04, 0.7, 4.0, 80, 0.2, 0.0, (200, 280)),
    "moderate": Degradation("moderate", 15, 0.06, 1.0, 6.0, 65, 0.35, 0.3, (180, 260)),
    "harsh": Degradation("harsh", 15, 0.08, 1.5, 9.0, 45, 0.5, 0.5, (160, 220)),
    "studio": Degradation(
        "studio", 25, 0.03, 1.2, 7.0, 75, 0.4, 0.0, (140, 200),
        motion_blur=9.0, glare=0.6, hand=0.85, jpeg_low=55, cut=0.5, tilt=25.0,
    ),
}  # fmt: skip
"""``flat`` is how a studio photographs its deck for calibration (one flat photograph per
face); ``studio`` is what the camera over a real table sees (see :func:`card_pass`)."""


def background(
    kind: str, rng: np.random.Generator, size: tuple[int, int] = (FRAME_W, FRAME_H)
) -> np.ndarray:
    """A table surface: green felt, dark cloth, light wood, or a light grey/beige top."""
    w, h = size
    base = {
        "felt": (40, 110, 30),
        "dark": (40, 30, 25),
        "wood": (110, 160, 200),
        "light": (190, 205, 215),
        "grey": (175, 175, 170),
    }[kind]
    img = np.empty((h, w, 3), np.float32)
    img[:] = base
    # Low-frequency texture (cloth weave / wood grain) plus fine grain.
    coarse: np.ndarray = rng.normal(0, 1, (h // 16 + 1, w // 16 + 1)).astype(np.float32)
    coarse = cv2.resize(coarse, (w, h), interpolation=cv2.INTER_CUBIC)
    img += coarse[..., None] * (6 if kind != "dark" else 3)
    if kind == "wood":
        grain = np.sin(np.linspace(0, 60, h, dtype=np.float32) + coarse[:, :1].ravel() * 2)
        img += (grain[:, None, None] * 12).astype(np.float32)
    img += rng.standard_normal((h, w, 1), dtype=np.float32) * 3
    return np.clip(img, 0, 255).astype(np.uint8)


@lru_cache(maxsize=32)
def _table(kind: str, variant: int) -> np.ndarray:
    """A few fixed table surfaces per kind, so data sets need not redraw the cloth each frame."""
    frame = background(kind, np.random.default_rng(1000 + variant))
    frame.flags.writeable = False
    return frame


@lru_cache(maxsize=1)
def _noise_fields() -> tuple[np.ndarray, ...]:
    """Unit Gaussian sensor-noise fields, drawn once (drawing them per frame dominates the cost)."""
    rng = np.random.default_rng(99)
    return tuple(rng.standard_normal((FRAME_H, FRAME_W, 3), dtype=np.float32) for _ in range(4))


def _face_alpha(radius_frac: float) -> np.ndarray:
    """The card outline with rounded corners, as a 0..255 mask the size of a drawn face."""
    alpha = np.zeros((FACE_H, FACE_W), np.uint8)
    r = round(radius_frac * FACE_W)
    cv2.rectangle(alpha, (r, 0), (FACE_W - 1 - r, FACE_H - 1), 255, -1)
    cv2.rectangle(alpha, (0, r), (FACE_W - 1, FACE_H - 1 - r), 255, -1)
    for cx, cy in (
        (r, r),
        (FACE_W - 1 - r, r),
        (r, FACE_H - 1 - r),
        (FACE_W - 1 - r, FACE_H - 1 - r),
    ):
        cv2.circle(alpha, (cx, cy), r, 255, -1, cv2.LINE_AA)
    return alpha


_ALPHA = _face_alpha(0.06)


@lru_cache(maxsize=8)
def _face_alpha_for(w: int, h: int) -> np.ndarray:
    return cv2.resize(_ALPHA, (w, h), interpolation=cv2.INTER_LINEAR)


def card_quad(
    rng: np.random.Generator,
    level: Degradation,
    centre: tuple[float, float] | None = None,
    angle_deg: float | None = None,
    width: float | None = None,
    aspect: float = FACE_W / FACE_H,
) -> np.ndarray:
    """Where the four face corners land in the frame (TL, TR, BR, BL), float32 4x2.

    ``aspect`` is the face's width over its height (published decks differ).
    """
    w = width if width is not None else rng.uniform(*level.card_width)
    h = w / aspect
    if angle_deg is None:
        angle_deg = rng.uniform(-level.rotation_deg, level.rotation_deg)
    if centre is None:
        margin = h / 2 + 20
        centre = (rng.uniform(margin, FRAME_W - margin), rng.uniform(margin, FRAME_H - margin))
    a = np.deg2rad(angle_deg)
    rot = np.array([[np.cos(a), -np.sin(a)], [np.sin(a), np.cos(a)]])
    corners = np.array([(-w / 2, -h / 2), (w / 2, -h / 2), (w / 2, h / 2), (-w / 2, h / 2)])
    pts = corners @ rot.T + np.asarray(centre)
    pts += rng.uniform(-level.perspective, level.perspective, (4, 2)) * w
    quad: np.ndarray = pts.astype(np.float32)
    return quad


def face_aspect(face: np.ndarray) -> float:
    return float(face.shape[1] / face.shape[0])


def split_face(face: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
    """A four-channel face (a rendered published deck) as its colour and its outline, each
    contiguous, for :func:`place_card` to warp; a three-channel face as it is (no outline).
    Splitting costs about a millisecond a face: a card placed in frame after frame is
    split once."""
    if face.ndim == 3 and face.shape[2] == 4:
        return np.ascontiguousarray(face[..., :3]), np.ascontiguousarray(face[..., 3])
    return face, None


def place_card(
    frame: np.ndarray,
    face: np.ndarray,
    quad: np.ndarray,
    shadow: bool = True,
    outline: np.ndarray | None = None,
) -> tuple[int, int, int, int] | None:
    """Warp ``face`` onto ``frame`` (in place) so its corners land on ``quad``.

    A face with four channels (a rendered published deck) brings its own
    outline in its alpha (or ``outline``, with its colour, from :func:`split_face`); a
    three-channel drawn face gets rounded corners.
    Returns the box (x0, y0, x1, y1) outside which no pixel changed (None: the card is
    out of the frame), so that a camera develops only that part again.
    """
    fh, fw = face.shape[:2]
    src = np.array([(0, 0), (fw, 0), (fw, fh), (0, fh)], np.float32)
    x0, y0 = np.floor(quad.min(axis=0)).astype(int) - 12
    x1, y1 = np.ceil(quad.max(axis=0)).astype(int) + 12
    x0, y0 = max(x0, 0), max(y0, 0)
    x1, y1 = min(x1, frame.shape[1]), min(y1, frame.shape[0])
    if x1 <= x0 or y1 <= y0:
        return None
    local = quad - np.array([x0, y0], np.float32)
    m = cv2.getPerspectiveTransform(src, local)
    size = (x1 - x0, y1 - y0)
    if outline is None:
        face, outline = split_face(face)
    if outline is not None:
        face_alpha = outline
    else:
        face_alpha = _ALPHA if face.shape[:2] == _ALPHA.shape else _face_alpha_for(fw, fh)
    warped = cv2.warpPerspective(face, m, size, flags=cv2.INTER_AREA)
    alpha = cv2.warpPerspective(face_alpha, m, size, flags=cv2.INTER_LINEAR).astype(np.float32)
    alpha /= 255
    roi = frame[y0:y1, x0:x1].astype(np.float32)
    if shadow:
        sh = cv2.GaussianBlur(alpha, (0, 0), 4)
        sh = np.roll(sh, (3, 4), axis=(0, 1))
        roi *= 1 - 0.35 * sh[..., None]
    a = alpha[..., None]
    frame[y0:y1, x0:x1] = (roi * (1 - a) + warped.astype(np.float32) * a).astype(np.uint8)
    return int(x0), int(y0), int(x1), int(y1)


def occlude(frame: np.ndarray, quad: np.ndarray, rng: np.random.Generator, amount: float) -> None:
    """A fingertip or chip over part of the card, never over both corner indices."""
    # Pick a spot on the card: an edge middle or one non-index corner, or one index corner.
    spots = [
        (0.5, 0.0), (1.0, 0.5), (0.5, 1.0), (0.0, 0.5), (1.0, 0.0), (0.0, 1.0), (0.5, 0.5),
        (0.1, 0.12), (0.9, 0.88),
    ]  # fmt: skip
    u, v = spots[rng.integers(len(spots))]
    tl, tr, br, bl = quad
    p = (1 - v) * ((1 - u) * tl + u * tr) + v * ((1 - u) * bl + u * br)
    card_w = float(np.linalg.norm(tr - tl))
    axes = (
        int(card_w * amount * rng.uniform(0.6, 1.0)),
        int(card_w * amount * rng.uniform(0.3, 0.6)),
    )
    colour = [(120, 150, 200), (60, 80, 140), (30, 30, 160), (20, 20, 20)][rng.integers(4)]
    cv2.ellipse(
        frame,
        (int(p[0]), int(p[1])),
        axes,
        float(rng.uniform(0, 180)),
        0,
        360,
        colour,
        -1,
        cv2.LINE_AA,
    )


def degrade(
    frame: np.ndarray,
    level: Degradation,
    rng: np.random.Generator,
    jpegs: list[bytes] | None = None,
) -> np.ndarray:
    """Uneven light, lens blur, sensor noise and JPEG compression, in camera order.

    ``jpegs``, if given, receives the compressed frame (nothing at a level without
    compression): decoded, it is the frame returned, pixel for pixel, so a benchmark can
    keep a frame at a tenth of its size and skip the ~50 ms of CPU drawing it again.
    """
    h, w = frame.shape[:2]
    img = frame
    if level.gradient > 0:
        g = rng.uniform(0, level.gradient)
        ang = rng.uniform(0, 2 * np.pi)
        xs = np.linspace(-1, 1, w, dtype=np.float32)[None, :]
        ys = np.linspace(-1, 1, h, dtype=np.float32)[:, None]
        ramp = 1 - g * 0.5 + g * 0.5 * (np.cos(ang) * xs + np.sin(ang) * ys)
        img = cv2.multiply(img, cv2.merge([ramp, ramp, ramp]), dtype=cv2.CV_8U)
    if level.blur_sigma > 0:
        img = cv2.GaussianBlur(img, (0, 0), rng.uniform(0.3, 1.0) * level.blur_sigma)
    if level.noise_sigma > 0:
        if img.shape == (FRAME_H, FRAME_W, 3):
            field = _noise_fields()[int(rng.integers(4))]
            shift = int(rng.integers(FRAME_H))
            noise = np.concatenate([field[shift:], field[:shift]]) if shift else field
        else:
            noise = rng.standard_normal(img.shape, dtype=np.float32)
        img = cv2.scaleAdd(noise, level.noise_sigma, img.astype(np.float32))
        img = np.clip(img, 0, 255).astype(np.uint8)
    if level.jpeg_quality < 100:
        quality = level.jpeg_quality
        if level.jpeg_low:
            quality = int(rng.integers(level.jpeg_low, level.jpeg_quality + 1))
        _ok, buf = cv2.imencode(".jpg", img, [cv2.IMWRITE_JPEG_QUALITY, quality])
        img = _decoded(buf)
        if jpegs is not None:
            jpegs.append(buf.tobytes())
    return img


def _decoded(jpeg: np.ndarray) -> np.ndarray:
    """A JPEG this module just encoded, decoded (OpenCV returns None only for bad data)."""
    img = cv2.imdecode(jpeg, cv2.IMREAD_COLOR)
    if img is None:
        raise RuntimeError("OpenCV could not decode a JPEG it had just encoded")
    return img


def photograph(
    face: np.ndarray,
    level: Degradation,
    rng: np.random.Generator,
    backdrop: str | None = None,
    jpegs: list[bytes] | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """One camera frame of ``face`` on a table; returns the frame and the card's corner quad
    (``jpegs``: see :func:`degrade`)."""
    if level.hand or level.glare or level.motion_blur:
        ((frame, quad),) = card_pass(face, level, rng, backdrop, frames=1, jpegs=jpegs)
        return frame, quad
    kind = backdrop or BACKGROUNDS[rng.integers(len(BACKGROUNDS))]
    frame = _table(kind, int(rng.integers(3))).copy()
    quad = card_quad(rng, level, aspect=face_aspect(face))
    place_card(frame, face, quad)
    if level.occlusion > 0 and rng.random() < level.occlusion:
        occlude(frame, quad, rng, 0.35)
    return degrade(frame, level, rng, jpegs), quad


def _outside(quad: np.ndarray) -> float:
    """Share of the card at ``quad`` that lies outside the frame."""
    frame = np.array([(0, 0), (FRAME_W, 0), (FRAME_W, FRAME_H), (0, FRAME_H)], np.float32)
    inter, _pts = cv2.intersectConvexConvex(quad.astype(np.float32), frame)
    return 1.0 - float(inter) / max(float(cv2.contourArea(quad)), 1e-6)


FOCAL = 1100.0
"""The table camera's focal length in pixels (a 60 degree field of view across 1280)."""


def _tilted(corners: np.ndarray, tilt: np.ndarray) -> np.ndarray:
    """``corners`` (card-centred, pixels, on the table) as a camera tilted by the rotation
    vector ``tilt`` (radians) sees them: nearer corners larger, farther ones smaller."""
    rot, _jac = cv2.Rodrigues(tilt.astype(np.float64))
    pts = np.concatenate([corners, np.zeros((len(corners), 1))], axis=1) @ rot.T
    return pts[:, :2] * (FOCAL / (FOCAL + pts[:, 2:3]))


def _pose(
    centre: np.ndarray,
    w: float,
    aspect: float,
    angle_deg: float,
    skew: np.ndarray,
    tilt: np.ndarray | None = None,
) -> np.ndarray:
    a = np.deg2rad(angle_deg)
    rot = np.array([[np.cos(a), -np.sin(a)], [np.sin(a), np.cos(a)]])
    h = w / aspect
    corners = np.array([(-w / 2, -h / 2), (w / 2, -h / 2), (w / 2, h / 2), (-w / 2, h / 2)])
    corners = corners @ rot.T
    if tilt is not None:
        corners = _tilted(corners, tilt)
    quad: np.ndarray = (corners + centre + skew * w).astype(np.float32)
    return quad


def _path(
    rng: np.random.Generator, level: Degradation, w: float, aspect: float, frames: int
) -> tuple[list[np.ndarray], float, np.ndarray]:
    """Where the card's centre is in each frame of a pass, its angle, and its direction of
    travel: along its long side (out of the shoe), give or take 20 degrees."""
    h = w / aspect
    angle = rng.uniform(-level.rotation_deg, level.rotation_deg)
    a = np.deg2rad(angle + rng.uniform(-20, 20))
    way = np.array([-np.sin(a), np.cos(a)]) * rng.choice([-1.0, 1.0])
    radius = np.hypot(w, h) / 2 + 12
    step = rng.uniform(0.03, 0.1) * h
    for _attempt in range(20):
        mid = np.array(
            [rng.uniform(radius, FRAME_W - radius), rng.uniform(radius, FRAME_H - radius)]
        )
        start = mid - way * step * (frames - 1) / 2
        end = mid + way * step * (frames - 1) / 2
        if all(radius <= p[0] <= FRAME_W - radius and radius <= p[1] <= FRAME_H - radius
               for p in (start, end)):  # fmt: skip
            break
        step *= 0.8
    return [start + way * step * k for k in range(frames)], angle, way


def _slid_in(
    centres: list[np.ndarray], way: np.ndarray, out: float, pose: Callable[[np.ndarray], np.ndarray]
) -> np.ndarray:
    """The centre, back along the card's way from ``centres[0]``, where ``out`` of the card
    lies outside the frame (it is still sliding into view)."""
    lo, hi = 0.0, 2.0 * FRAME_W
    for _ in range(30):
        mid = (lo + hi) / 2
        if _outside(pose(centres[0] - way * mid)) < out:
            lo = mid
        else:
            hi = mid
    return centres[0] - way * hi


def card_pass(
    face: np.ndarray,
    level: Degradation,
    rng: np.random.Generator,
    backdrop: str | None = None,
    frames: int = 8,
    jpegs: list[bytes] | None = None,
) -> list[tuple[np.ndarray, np.ndarray]]:
    """The frames of one card passing under a camera over a real table, with its quads
    (``jpegs``: see :func:`degrade`).

    The card travels along its long side (slid out of the shoe), turning a
    little, smeared along its travel by the exposure (``motion_blur``); a
    dealer's finger, fingers, thumb or hand may lie on it (``hand``, see
    :mod:`hardware_sim.camera.hands`), moving with it; the table lights may
    put a glare spot on the path it crosses (``glare``, fixed in the frame);
    and the first frames may show it partly out of view, still sliding in
    (``cut``). The table, its light and the lens are one per pass; noise and
    compression change from frame to frame.
    """
    kind = backdrop or BACKGROUNDS[rng.integers(len(BACKGROUNDS))]
    table = _table(kind, int(rng.integers(3)))
    aspect = face_aspect(face)
    w = rng.uniform(*level.card_width)
    centres, angle, way = _path(rng, level, w, aspect, frames)
    skew = rng.uniform(-level.perspective, level.perspective, (4, 2))
    axis = rng.uniform(0, 2 * np.pi)
    tilt = np.deg2rad(rng.uniform(0, level.tilt)) * np.array([np.cos(axis), np.sin(axis), 0.0])
    twist = np.cumsum(rng.uniform(-1.5, 1.5, frames))
    if frames > 2 and rng.random() < level.cut:
        # The path is moved back until its first frame touches the edge of the view;
        # the first one or two frames then show the card sliding in, fast.
        cut = int(rng.integers(1, 3))
        first = angle + twist[0]
        touch = _slid_in(centres[:1], way, 0.01, lambda c: _pose(c, w, aspect, first, skew, tilt))
        centres = [c + (touch - centres[0]) for c in centres]
        for k in range(cut - 1, -1, -1):
            hidden = rng.uniform(0.1, 0.45) * (cut - k) / cut
            turn = float(angle + twist[k])

            def posed(c: np.ndarray, t: float = turn) -> np.ndarray:
                return _pose(c, w, aspect, t, skew, tilt)

            centres[k] = _slid_in(centres[k + 1 :], way, hidden, posed)
    hand = hands.occluder(rng, aspect) if rng.random() < level.hand else None
    shine = None
    if rng.random() < level.glare:
        middle = _pose(centres[frames // 2], w, aspect, angle + twist[frames // 2], skew, tilt)
        u, v = rng.uniform(0.1, 0.9), rng.uniform(0.1, 0.9)
        spot = (1 - v) * ((1 - u) * middle[0] + u * middle[1]) + v * (
            (1 - u) * middle[3] + u * middle[2]
        )
        shine = hands.glare((FRAME_H, FRAME_W), (float(spot[0]), float(spot[1])),
                            rng.uniform(0.12, 0.25) * w, rng)  # fmt: skip
    out = []
    smear_angle = float(np.arctan2(way[1], way[0]))
    for k in range(frames):
        jitter = rng.uniform(-0.01, 0.01, (4, 2))
        quad = _pose(centres[k], w, aspect, angle + twist[k], skew + jitter, tilt)
        smear = rng.uniform(0.3, 1.0) * level.motion_blur
        frame = _moving_card(table, face, quad, hand, hands.motion_kernel(smear, smear_angle))
        if shine is not None:
            frame = _shine(frame, shine, table)
        out.append((degrade(frame, level, rng, jpegs), quad))
    return out


def _moving_card(
    table: np.ndarray,
    face: np.ndarray,
    quad: np.ndarray,
    hand: hands.Occluder | None,
    smear: np.ndarray,
) -> np.ndarray:
    """The table with the card (and the hand on it) composited at ``quad``, both smeared by
    ``smear`` (the table stands still)."""
    frame = table.copy()
    fh, fw = face.shape[:2]
    src = np.array([(0, 0), (fw, 0), (fw, fh), (0, fh)], np.float32)
    to_frame = cv2.getPerspectiveTransform(src, quad)
    if hand is not None:
        to_face = np.diag([fw, fw, 1.0]) @ hands.CANVAS_TO_CARD
        ch, cw = hand.alpha.shape
        canvas = np.array([(0, 0), (cw, 0), (cw, ch), (0, ch)], np.float32)
        reach = cv2.perspectiveTransform(canvas[None], to_frame @ to_face)[0]
        pts = np.concatenate([quad, reach])
    else:
        pts = quad
    pad = smear.shape[0] + 12
    x0, y0 = np.maximum(np.floor(pts.min(axis=0)).astype(int) - pad, 0)
    x1, y1 = np.ceil(pts.max(axis=0)).astype(int) + pad
    x1, y1 = min(int(x1), FRAME_W), min(int(y1), FRAME_H)
    if x1 <= x0 or y1 <= y0:
        return frame
    shift = np.array([[1, 0, -x0], [0, 1, -y0], [0, 0, 1]], np.float64)
    m = shift @ to_frame
    size = (int(x1 - x0), int(y1 - y0))
    if face.ndim == 3 and face.shape[2] == 4:
        face_alpha = np.ascontiguousarray(face[..., 3])
        colour_face = np.ascontiguousarray(face[..., :3])
    else:
        face_alpha = _ALPHA if face.shape[:2] == _ALPHA.shape else _face_alpha_for(fw, fh)
        colour_face = face
    colour: np.ndarray = cv2.warpPerspective(colour_face, m, size, flags=cv2.INTER_AREA).astype(
        np.float32
    )
    alpha: np.ndarray = cv2.warpPerspective(face_alpha, m, size, flags=cv2.INTER_LINEAR).astype(
        np.float32
    )
    alpha /= 255
    if hand is not None:
        mh = m @ to_face
        shadow = cv2.warpPerspective(hand.shadow, mh, size, flags=cv2.INTER_LINEAR)
        colour *= 1 - 0.45 * shadow[..., None]
        colour *= alpha[..., None]
        skin = cv2.warpPerspective(hand.colour, mh, size, flags=cv2.INTER_LINEAR)
        cover = cv2.warpPerspective(hand.alpha, mh, size, flags=cv2.INTER_LINEAR)
        colour = skin * cover[..., None] + colour * (1 - cover[..., None])
        alpha = cover + alpha * (1 - cover)
    else:
        colour *= alpha[..., None]
    if smear.shape[0] > 1:
        colour = cv2.filter2D(colour, -1, smear)
        alpha = cv2.filter2D(alpha, -1, smear)
    roi = frame[y0:y1, x0:x1].astype(np.float32)
    blurred = cv2.GaussianBlur(alpha, (0, 0), 4)
    sh = np.zeros_like(blurred)
    sh[3:, 4:] = blurred[:-3, :-4]  # cast down and right (not wrapped round the box)
    roi *= 1 - 0.35 * sh[..., None]
    frame[y0:y1, x0:x1] = np.clip(roi * (1 - alpha[..., None]) + colour, 0, 255).astype(np.uint8)
    return frame


def _shine(frame: np.ndarray, shine: hands.Glare, table: np.ndarray) -> np.ndarray:
    """``frame`` under a glare spot: a glossy card takes it whole, the matte table a third.

    Only the spot's box changes; the gloss is found on a box wider by the blur's reach,
    so every pixel inside comes out as over the whole frame.
    """
    h, w = shine.added.shape
    if h == 0 or w == 0:
        return frame
    pad = 8  # the reach of the gloss's blur (sigma 1.5: a 13-pixel kernel)
    y0, x0 = shine.y0, shine.x0
    py0, px0 = max(y0 - pad, 0), max(x0 - pad, 0)
    py1, px1 = min(y0 + h + pad, frame.shape[0]), min(x0 + w + pad, frame.shape[1])
    seen, bare = frame[py0:py1, px0:px1], table[py0:py1, px0:px1]
    moved = np.abs(seen.astype(np.int16) - bare.astype(np.int16)).sum(axis=2) > 30
    gloss: np.ndarray = np.where(moved, 1.0, 0.3).astype(np.float32)
    gloss = cv2.GaussianBlur(gloss, (0, 0), 1.5)
    gloss = gloss[y0 - py0 : y0 - py0 + h, x0 - px0 : x0 - px0 + w]
    spot = frame[y0 : y0 + h, x0 : x0 + w].astype(np.float32) + (shine.added * gloss)[..., None]
    out = frame.copy()
    out[y0 : y0 + h, x0 : x0 + w] = np.clip(spot, 0, 255).astype(np.uint8)
    return out
