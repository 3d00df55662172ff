"""The corner of a straightened card as features, and where in it this deck's index lies.

Nothing about the index is assumed: not where it sits, not whether the suit
is below or beside the rank, not its font, size or colour, not whether court
figures reach into the corner. The corner window of a straightened face is
turned into ink and chroma maps (relative to the paper, so white balance and
light cancel); the calibration then *learns*, pixel by pixel, which parts of
the window tell ranks apart and which tell suits apart (a Fisher ratio:
spread between classes over spread within a class, measured on the studio's
own photographs). Those weighted regions are this deck's rank and suit index.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import cv2
import numpy as np
from numpy.lib.stride_tricks import as_strided

from shoe_reader.camera import kernels
from shoe_reader.camera.locate import CORNER_H, CORNER_W

SCALE = 0.5
"""Features are taken at half the straightened card's resolution (blur and noise average out)."""
FEAT_W = round(CORNER_W * SCALE)
FEAT_H = round(CORNER_H * SCALE)
SHIFT = 1
"""Feature pixels the index may sit off its calibrated place (outline found a little off)."""
NOISE = 0.01
"""Variance a feature takes from blur, noise and compression in a real frame (ink units squared)."""
_MIN_RATIO = 0.3
_MIN_BETWEEN = 0.002


class NoIndex(Exception):
    """No readable index in this corner; ``reason`` says what was missing."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class Uncovered(np.ndarray):
    """A corner's feature map (see :func:`features`) with the pixels a finger lies over left
    out of every comparison: ``keep`` (``FEAT_H x FEAT_W``, 1 where compared, else 0).

    A finger beside a corner's index, not over it, still lies over features the
    calibration weighs (a higher card's pips or a court figure reach into the
    window): compared there, skin reads as ink and has made a two of diamonds a
    three of hearts. Left out, the index is compared where it shows, both the
    frame and each template, so the cosine is over the features seen on both.
    """

    keep: np.ndarray

    def __array_finalize__(self, obj: object) -> None:
        self.keep = getattr(obj, "keep", None)  # type: ignore[assignment]


def uncovered(fmap: np.ndarray, keep: np.ndarray) -> np.ndarray:
    """``fmap`` compared only where ``keep`` (see :class:`Uncovered`)."""
    out = np.ascontiguousarray(fmap).view(Uncovered)
    out.keep = np.ascontiguousarray(keep, dtype=np.float32)
    return out


class _Seen(np.ndarray):
    """A window's shifted rows (see :func:`unit_shifted`) with ``seen``: 1 where a feature
    was compared, per shift (k, D), for the templates' lengths over those features."""

    seen: np.ndarray

    def __array_finalize__(self, obj: object) -> None:
        self.seen = getattr(obj, "seen", None)  # type: ignore[assignment]


def features(corner: np.ndarray) -> np.ndarray:
    """Ink and chroma maps of a corner window (``CORNER_H x CORNER_W`` BGR), float32 (h, w, 3)."""
    small = cv2.resize(corner, (FEAT_W, FEAT_H), interpolation=cv2.INTER_AREA)
    maps, paper = kernels.ink_maps(small, 90.0)  # ink_and_chroma against the paper
    if float(paper.min()) < 40:
        raise NoIndex("corner too dark to read")
    return maps


@dataclass(frozen=True)
class Part:
    """What the calibration learned about one part of the index (the rank, or the suit).

    ``weights`` are the inverse of the spread within a class plus sensor noise,
    kept only where the classes differ: a distance in these units is about 1
    for the right class and far larger for any other.
    """

    box: tuple[int, int, int, int]  # y0, y1, x0, x1 in feature pixels (before shifting)
    root_weights: np.ndarray  # (y1-y0, x1-x0, 3): square root of the weights
    templates: np.ndarray  # (n, D) weighted samples (times root_weights), unit length
    """Over the D features of the box that carry weight only (see ``gather``)."""
    template_norms: np.ndarray  # (n,) lengths of the weighted samples
    labels: np.ndarray  # (n,) the rank (or suit) of each sample
    features: float  # how many features carry weight
    pairs: np.ndarray | None  # (n, n) pair_similarities of the samples
    gather: np.ndarray  # (shifts, D) where each weighted feature lies in a raveled feature map
    root_kept: np.ndarray  # (D,) the square roots of the weights that are not 0
    map_shape: tuple[int, ...]  # the shape of the feature maps ``gather`` is for


def _spreads(maps: np.ndarray, labels: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per feature: spread of the class means, and mean spread within a class."""
    mean = maps.mean(axis=0)
    between = np.zeros_like(mean)
    within = np.zeros_like(mean)
    for label in np.unique(labels):
        group = maps[labels == label]
        mu = group.mean(axis=0)
        between += len(group) * (mu - mean) ** 2
        within += ((group - mu) ** 2).sum(axis=0)
    return between / len(maps), within / len(maps)


def learn_part(maps: np.ndarray, labels: np.ndarray) -> Part:
    """Where in the corner ``labels`` can be told apart, and each sample's template there."""
    between, within = _spreads(maps, labels)
    noise = within + NOISE
    ratio = cv2.GaussianBlur(between / noise, (0, 0), 0.7)
    # A feature is kept where the classes' means differ by more than a faint
    # stroke would and by a fair part of the spread within a class; absolute
    # units (ink relative to paper), so a deck whose court figures differ
    # hugely does not drown its small index digits.
    useful = (cv2.GaussianBlur(between, (0, 0), 0.7) >= _MIN_BETWEEN) & (ratio >= _MIN_RATIO)
    strong = useful.any(axis=-1)
    if not strong.any():
        raise NoIndex("no part of the corner differs between the classes")
    ys, xs = np.nonzero(strong)
    h, w = strong.shape
    y0, y1 = max(int(ys.min()), SHIFT), min(int(ys.max()) + 1, h - SHIFT)
    x0, x1 = max(int(xs.min()), SHIFT), min(int(xs.max()) + 1, w - SHIFT)
    weights = np.where(useful[y0:y1, x0:x1], 1.0 / noise[y0:y1, x0:x1], 0.0)
    root = np.sqrt(weights).astype(np.float32)
    # Only the features that carry weight are compared: the rest add 0 to every product
    # (three quarters of a rank's or suit's box, nearly all of a pair's).
    kept = np.flatnonzero(root)
    templates = (maps[:, y0:y1, x0:x1] * root).reshape(len(maps), -1)[:, kept].astype(np.float32)
    norms = np.sqrt((templates**2).sum(axis=1))
    templates = templates / np.maximum(norms, 1e-6)[:, None]
    gather = _gather((y0, y1, x0, x1), root.shape, maps.shape[1:], kept)
    part = Part(
        (y0, y1, x0, x1),
        root,
        templates,
        norms,
        labels,
        float((weights > 0).sum()),
        None,
        gather,
        np.ascontiguousarray(root.ravel()[kept]),
        tuple(maps.shape[1:]),
    )
    # How alike two samples are, each shifted as a frame would be against the other.
    pairs = np.stack([similarities(part, m) for m in maps])
    return replace(part, pairs=np.maximum(pairs, pairs.T))


def _gather(
    box: tuple[int, int, int, int],
    window: tuple[int, ...],
    shape: tuple[int, ...],
    kept: np.ndarray,
) -> np.ndarray:
    """Where each ``kept`` feature of the ``box`` (its ``window``: height, width, channels)
    lies in a raveled feature map of ``shape``, at every shift (row-major over the shifts, as
    a loop over ``dy`` then ``dx`` would give), (shifts, len(kept))."""
    y0, _y1, x0, _x1 = box
    h, w, c = window
    rows, cols, chans = np.unravel_index(kept, (h, w, c))
    k = 2 * SHIFT + 1
    dy, dx = np.divmod(np.arange(k * k), k)
    y = y0 - SHIFT + dy[:, None] + rows[None, :]
    x = x0 - SHIFT + dx[:, None] + cols[None, :]
    if kept.size and (y.min() < 0 or x.min() < 0 or y.max() >= shape[0] or x.max() >= shape[1]):
        return np.zeros((0, len(kept)), np.intp)  # maps too small: shifted() says so
    return np.asarray(np.ravel_multi_index((y, x, np.broadcast_to(chans, y.shape)), shape[:3]))


def shifted(part: Part, fmap: np.ndarray) -> np.ndarray:
    """The part's window in ``fmap`` at every allowed shift, weighted, as rows (k, D): the
    features that carry weight only, as the part's templates.

    Gathered from the raveled map where it has the shape the part was learned
    on (it runs several times a frame); else from strided views of one slice
    of ``fmap``, weighted in one product.
    """
    keep = getattr(fmap, "keep", None)
    if keep is not None:
        # The window and where it was seen, gathered alike (a plain map for each).
        plain = np.asarray(fmap)
        seen = np.repeat(keep[..., None], plain.shape[-1], axis=-1)
        where = shifted(part, seen) / part.root_kept  # 1 or 0 (the kept weights are not 0)
        out = (shifted(part, plain) * where).view(_Seen)
        out.seen = where
        rows: np.ndarray = out
        return rows
    if fmap.shape == part.map_shape and len(part.gather) and fmap.flags.c_contiguous:
        picked: np.ndarray = fmap.ravel()[part.gather] * part.root_kept
        return picked
    y0, y1, x0, x1 = part.box
    around = fmap[y0 - SHIFT : y1 + SHIFT, x0 - SHIFT : x1 + SHIFT]
    k = 2 * SHIFT + 1
    h, w, c = part.root_weights.shape
    if around.shape != (h + k - 1, w + k - 1, c):  # strided views check no bounds
        raise ValueError(f"feature map {fmap.shape} too small for the part's box {part.box}")
    sy, sx, sc = around.strides
    shape, strides = (k, k, h, w, c), (sy, sx, sy, sx, sc)
    if fmap.flags.c_contiguous:
        # The same view as ``as_strided`` makes, without its Python-level setup.
        start = (y0 - SHIFT) * fmap.strides[0] + (x0 - SHIFT) * fmap.strides[1]
        windows = np.ndarray(shape, fmap.dtype, fmap, start, strides)
    else:
        windows = as_strided(around, shape, strides, writeable=False)
    weighted = (windows * part.root_weights).reshape(k * k, -1)
    shifted_windows: np.ndarray = weighted[:, np.flatnonzero(part.root_weights)]
    return shifted_windows


def similarities(part: Part, fmap: np.ndarray, only: np.ndarray | None = None) -> np.ndarray:
    """Weighted cosine of ``fmap``'s part with each sample, each at its best shift.

    A cosine, not a distance: blur and a dim frame thin the ink out evenly,
    which changes its strength but not its direction. Every sample, of the
    right face or a wrong one, gets its best shift: the reader is judged
    against each wrong face at its most alike (and so are the samples among
    themselves, in :func:`learn_part`).
    """
    templates = part.templates if only is None else part.templates[only]
    return best_cosines(templates, unit_shifted(part, fmap))


def unit_shifted(part: Part, fmap: np.ndarray) -> np.ndarray:
    """:func:`shifted`, each row made unit length: what a part's templates are compared
    with (worked out once where one window is compared with several sets of templates)."""
    if (
        fmap.shape == part.map_shape
        and len(part.gather)
        and fmap.flags.c_contiguous
        and fmap.dtype == np.float32
        and getattr(fmap, "keep", None) is None  # skin left out: see shifted
    ):
        # Gathered, weighted and made unit length in one compiled pass (the same bits as
        # below): it runs a dozen times a frame, each some ten NumPy calls.
        return kernels.unit_gathered(fmap.ravel(), part.gather, part.root_kept)
    x = shifted(part, fmap)
    # np.linalg.norm(x, axis=1, keepdims=True), as it computes it, without its dispatch.
    unit: np.ndarray = x / np.maximum(np.sqrt(np.add.reduce(x * x, axis=1, keepdims=True)), 1e-6)
    return unit  # a window with skin left out keeps where it was seen (see _Seen)


def best_cosines(templates: np.ndarray, unit: np.ndarray) -> np.ndarray:
    """Each template's cosine with the window (:func:`unit_shifted`) at its best shift."""
    seen = getattr(unit, "seen", None)
    if seen is not None:
        # Each template's length over the features seen at each shift (see Uncovered).
        lengths = np.sqrt(np.maximum((templates * templates) @ seen.T, 0.0))
        cos = (templates @ np.asarray(unit).T) / np.maximum(lengths, 1e-6)
        masked: np.ndarray = cos.max(axis=1)
        return masked
    best: np.ndarray = (templates @ unit.T).max(axis=1)
    return best


def similarities_with(part: Part, fmap: np.ndarray, templates: np.ndarray) -> np.ndarray:
    """:func:`similarities` of ``fmap``'s part with the given ``templates`` (weighted as the
    part's, unit length; see :func:`blurred_templates`)."""
    return best_cosines(templates, unit_shifted(part, fmap))


SMEARS = (3, 6)
"""Lengths (feature pixels) of the smears a moving card's index is also learned with."""


def blurred_templates(part: Part, maps: np.ndarray) -> np.ndarray:
    """Templates of the part for corner feature maps ``maps`` smeared as a card moving
    across or along itself shows them, (len(maps) * 2 * len(SMEARS), D), unit length.

    The camera's exposure smears a card dealt out of the shoe by up to a tenth
    of its width, far more than the softer lens a calibration corner is also
    learned with: the index of a card moving along itself fits no photograph
    of it well. Ink and chroma are (near enough) linear in the light, so a
    smeared frame's features are the photograph's features smeared.
    """
    y0, y1, x0, x1 = part.box
    kept = np.flatnonzero(part.root_weights)
    out = []
    for fmap in maps:
        for length in SMEARS:
            for kernel in (np.full((1, length), 1 / length, np.float32),
                           np.full((length, 1), 1 / length, np.float32)):  # fmt: skip
                smeared = cv2.filter2D(fmap, -1, kernel, borderType=cv2.BORDER_REPLICATE)
                out.append((smeared[y0:y1, x0:x1] * part.root_weights).ravel()[kept])
    t = np.array(out, np.float32)
    unit: np.ndarray = t / np.maximum(np.linalg.norm(t, axis=1, keepdims=True), 1e-6)
    return unit


def pair_similarities(part: Part) -> np.ndarray:
    """Weighted cosines between the calibration samples (how alike faces are)."""
    assert part.pairs is not None
    return part.pairs


HALF_STEPS = ((1, 0), (0, 1), (1, 1))
"""Shifts (straightened pixels, x and y) of half a feature pixel, see :func:`nudged`."""


def nudged(corner: np.ndarray) -> list[np.ndarray]:
    """Feature maps of a corner window moved by half a feature pixel across and down.

    A part is compared at every whole feature-pixel shift (two pixels of the
    straightened card); an index lying half-way between two of them (the side
    found on the outer edge of a thin printed rim where the calibration took
    its inner edge) matches its own face less well than a frame a whole pixel
    off. Moved by one straightened pixel, the window's features fall on the
    half steps in between.
    """
    h, w = corner.shape[:2]
    maps = []
    for dx, dy in HALF_STEPS:
        move = np.array([[1, 0, dx], [0, 1, dy]], np.float32)
        maps.append(features(cv2.warpAffine(corner, move, (w, h), borderMode=cv2.BORDER_REPLICATE)))
    return maps


def corners_of(card: np.ndarray, mirrored: bool = False) -> list[np.ndarray]:
    """Both index corner windows of a straightened card, each turned upright.

    ``mirrored``: the top-right and bottom-left corners, flipped left to right
    (a deck that prints its index there, as left-handed decks do).
    """
    if mirrored:
        card = np.ascontiguousarray(card[:, ::-1])
    turned = np.ascontiguousarray(card[::-1, ::-1])
    return [card[:CORNER_H, :CORNER_W], turned[:CORNER_H, :CORNER_W]]
