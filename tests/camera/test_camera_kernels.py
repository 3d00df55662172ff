"""The locator's compiled kernels against the NumPy and plain-Python code they replaced.

Each kernel must give the very same bits (a frame read differently after the
change would be a change of the reader, not of its speed), so each is checked
with ``array_equal`` against a statement of the old arithmetic, on generated
inputs that reach every branch: sides whose steps fit a line, sides with too
few strong steps or too many outliers, regions touching each side.
"""

from __future__ import annotations

import bisect
import itertools

import cv2
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from shoe_reader.camera import kernels
from shoe_reader.camera.index import (
    SHIFT,
    learn_part,
    shifted,
    similarities,
    uncovered,
    unit_shifted,
)
from shoe_reader.camera.locate import (
    _ENDS,
    _NEXT,
    _OPPOSITE,
    _PREV,
    _RIM_STEP,
    _RIM_T,
    _SNAP_D,
    _SNAP_T,
    INK,
    ONE_WAY,
    OUTLINE_STEP,
    RIM,
    SIDE_TOLERANCE,
    SKIN_WARMTH,
    _card_steps,
    _meet,
    _rim_edges,
    _sides_within,
    _skin_at,
    _snap,
    percentile,
    side_lengths,
    skin_pixels,
)
from shoe_reader.camera.recognize import _percentile

N_T, N_D = len(_SNAP_T), len(_SNAP_D)
_FLIP = np.array([1.0, -1.0], np.float32)  # (u_y, -u_x) from a side's direction


# -- the old code, as it was in locate.py and index.py ---------------------------------------
def _median(values: list[float]) -> float:
    ordered = sorted(values)
    mid = len(ordered) // 2
    return ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2


def _sorted_median(ordered: list[float], start: int, stop: int) -> float:
    mid = start + (stop - start) // 2
    return ordered[mid] if (stop - start) % 2 else (ordered[mid - 1] + ordered[mid]) / 2


def _side_offsets(ts: list[float], os_: list[float]) -> tuple[tuple[float, float], int] | None:
    n = len(ts)
    if n < 8:
        return None
    half = bisect.bisect_left(ts, 0.5)
    if half < 3 or n - half < 3:
        return None
    t1, t2 = _sorted_median(ts, 0, half), _sorted_median(ts, half, n)
    o1, o2 = _median(os_[:half]), _median(os_[half:])
    slope = (o2 - o1) / max(t2 - t1, 1e-6)
    on = [abs(o - (o1 + slope * (x - t1))) <= SIDE_TOLERANCE for x, o in zip(ts, os_, strict=True)]
    on_t = list(itertools.compress(ts, on))
    on_o = list(itertools.compress(os_, on))
    n = len(on_t)
    if n < 8:
        return None
    mt = sum(on_t) / n
    mo = sum(on_o) / n
    var = cov = 0.0
    for x, o in zip(on_t, on_o, strict=True):
        dx = x - mt
        var += dx * dx
        cov += dx * (o - mo)
    slope = cov / var if var > 1e-12 else 0.0
    at0 = mo - slope * mt
    return (at0, at0 + slope), n


def reference_side_fits(prof: np.ndarray) -> list[tuple[tuple[float, float] | None, int, int]]:
    """Per side: the fitted offsets (or None), the steps on the line, the steps tried."""
    step = np.abs(prof[:, 2:] - prof[:, :-2])
    peak = step.max(axis=1)
    strong = step >= np.maximum(0.45 * peak, 8.0)[:, None]
    best = step.shape[1] - 1 - np.argmax(strong[:, ::-1], axis=1)
    strength = step[np.arange(4 * N_T), best].reshape(4, N_T)
    middle = np.sort(strength, axis=1)[:, N_T // 2 - 1 : N_T // 2 + 1]
    median = (middle[:, 0] + middle[:, 1]) / 2
    limit = np.maximum(8.0, 0.4 * median.astype(np.float64))
    good = strength >= limit.astype(np.float32)[:, None]
    offs = _SNAP_D[best + 1].reshape(4, N_T)
    out: list[tuple[tuple[float, float] | None, int, int]] = []
    for ok, side_offs in zip(good.tolist(), offs.tolist(), strict=True):
        fit = _side_offsets(
            list(itertools.compress(_SNAP_T.tolist(), ok)), list(itertools.compress(side_offs, ok))
        )
        if fit is None:
            out.append((None, 0, sum(ok)))
        else:
            out.append((fit[0], fit[1], sum(ok)))
    return out


def reference_maps(quad: np.ndarray, normal: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    d = quad[_NEXT] - quad
    base = quad[:, None, :] + _SNAP_T[None, :, None] * d[:, None, :]
    across = _SNAP_D[None, None, :]
    map_x = (base[:, :, 0, None] + across * normal[:, 0, None, None]).reshape(4 * N_T, N_D)
    map_y = (base[:, :, 1, None] + across * normal[:, 1, None, None]).reshape(4 * N_T, N_D)
    return map_x, map_y


def reference_snap(gray: np.ndarray, quad: np.ndarray) -> tuple[np.ndarray, float]:
    """``locate._snap`` as it was in NumPy and Python."""
    quad = quad.astype(np.float32, copy=False)
    g = gray.astype(np.float32)
    centre = quad.mean(axis=0)
    ends = quad[_NEXT]
    lengths = side_lengths(quad)
    if float(lengths.min()) < 8:
        return quad, 0.0
    u = (ends - quad) / lengths[:, None]
    normal = u[:, ::-1] * _FLIP
    normal[((quad - centre) * normal).sum(axis=1) < 0] *= -1
    map_x, map_y = reference_maps(quad, normal)
    prof = cv2.remap(g, map_x, map_y, cv2.INTER_LINEAR, borderMode=cv2.BORDER_REPLICATE)
    starts, stops = quad.copy(), ends.copy()
    support = 1.0
    for k, (fit, on, n) in enumerate(reference_side_fits(prof)):
        if fit is None:
            support = min(support, n / N_T / 2)
            continue
        support = min(support, on / N_T)
        starts[k] = quad[k] + fit[0] * normal[k]
        stops[k] = ends[k] + fit[1] * normal[k]
    out = _meet(starts, stops)
    if out is None:
        return quad, 0.0
    moved = np.sqrt(((out - quad) ** 2).sum(axis=1))
    if bool((moved > 0.15 * lengths[_PREV]).any()):
        return quad, 0.0
    return out.astype(np.float32), support


def reference_ink(small: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    f = small.astype(np.float32)
    paper = percentile(f.reshape(-1, 3), 90)
    norm = f / np.maximum(paper, 1.0)
    b, g, r = norm[..., 0], norm[..., 1], norm[..., 2]
    ink = 1.0 - np.minimum(np.minimum(b, g), r)
    return np.stack([ink, r - g, b - g], axis=-1), paper


# -- generated inputs -------------------------------------------------------------------------
def _profiles(seed: int, outliers: float, contrast: float) -> np.ndarray:
    """Brightness across four sides: a straight (tilted) edge per side, texture, and steps
    off the edge (pips, a figure, table grain) on a share of the samples."""
    rng = np.random.default_rng(seed)
    prof = np.empty((4 * N_T, N_D), np.float32)
    for k in range(4):
        at0, at1 = rng.uniform(-9, 9, 2)
        for i, t in enumerate(_SNAP_T):
            edge = at0 + (at1 - at0) * float(t)
            if rng.random() < outliers:
                edge = rng.uniform(-12, 12)
            inside = rng.uniform(120, 240)
            outside = inside - contrast * rng.uniform(0.2, 1.0)
            row = np.where(edge > _SNAP_D, inside, outside) + rng.normal(0, 3, N_D)
            prof[k * N_T + i] = np.round(row, 2)
    return prof


@settings(max_examples=300, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    outliers=st.sampled_from([0.0, 0.1, 0.3, 0.6, 0.9]),
    contrast=st.sampled_from([0.0, 6.0, 20.0, 80.0]),
)
def test_side_fits_are_the_old_search_and_line_fit_to_the_bit(
    seed: int, outliers: float, contrast: float
) -> None:
    prof = _profiles(seed, outliers, contrast)
    fitted, at_start, at_end, on_edge, tried = kernels.side_fits(
        prof, _SNAP_T, _SNAP_D, SIDE_TOLERANCE, False
    )
    for k, (fit, on, n) in enumerate(reference_side_fits(prof)):
        assert int(tried[k]) == n
        assert bool(fitted[k]) == (fit is not None)
        if fit is not None:
            assert (float(at_start[k]), float(at_end[k])) == fit
            assert int(on_edge[k]) == on


def test_side_fits_reach_both_outcomes() -> None:
    """The generated profiles do exercise fitted and refused sides (else the test above
    could pass on one branch only)."""
    outcomes: set[bool] = set()
    for seed in range(40):
        for outliers, contrast in ((0.0, 80.0), (0.9, 80.0), (0.0, 0.0)):
            fitted = kernels.side_fits(
                _profiles(seed, outliers, contrast), _SNAP_T, _SNAP_D, SIDE_TOLERANCE, False
            )[0]
            outcomes.update(bool(f) for f in fitted)
    assert outcomes == {True, False}


@settings(max_examples=100, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), contrast=st.sampled_from([20.0, 80.0]))
def test_side_fits_with_pairs_are_the_same_where_every_step_is_on_the_line(
    seed: int, contrast: float
) -> None:
    """Tried through pairs of steps only where steps lie off the first line: a clean side
    is fitted as before, to the bit."""
    prof = _profiles(seed, 0.0, contrast)
    before = kernels.side_fits(prof, _SNAP_T, _SNAP_D, SIDE_TOLERANCE, False)
    after = kernels.side_fits(prof, _SNAP_T, _SNAP_D, SIDE_TOLERANCE, True)
    clean = before[0] & (before[3] == before[4])
    assert int(clean.sum()) >= 1 or contrast < 80.0
    for a, b in zip(before, after, strict=True):
        assert np.array_equal(a[clean], b[clean])
    # elsewhere a line with as many steps on it or more
    assert bool((after[3] >= before[3]).all())


def test_a_finger_over_part_of_a_side_does_not_tilt_its_line() -> None:
    """A side whose steps, over the middle of its second half and beyond (a finger across
    the card's edge, its own steps 9 px out), lie off the edge: the line through the
    halves' medians pivots on the finger's steps and leaves most of the edge; the line
    through the pair of steps with the most steps on it is the edge."""
    rng = np.random.default_rng(5)
    prof = np.empty((4 * N_T, N_D), np.float32)
    at0, at1 = -3.0, 4.0
    finger = (_SNAP_T > 0.45) & (_SNAP_T < 0.75)
    for k in range(4):
        for i, t in enumerate(_SNAP_T):
            edge = at0 + (at1 - at0) * float(t)
            if k == 0 and finger[i]:
                edge = 9.0
            row = np.where(edge > _SNAP_D, 200.0, 90.0) + rng.normal(0, 2, N_D)
            prof[k * N_T + i] = np.round(row, 2)
    old = kernels.side_fits(prof, _SNAP_T, _SNAP_D, SIDE_TOLERANCE, False)
    new = kernels.side_fits(prof, _SNAP_T, _SNAP_D, SIDE_TOLERANCE, True)
    edge_steps = int((~finger).sum())
    assert new[0][0] and int(new[3][0]) == edge_steps
    assert abs(float(new[1][0]) - at0) < 1.0 and abs(float(new[2][0]) - at1) < 1.0
    # the first line misses (else the test would show nothing)
    assert not old[0][0] or int(old[3][0]) < edge_steps
    for side in range(1, 4):  # the other sides as before
        assert all(np.array_equal(a[side], b[side]) for a, b in zip(old, new, strict=True))


@settings(max_examples=200, deadline=None)
@given(
    corners=st.lists(st.floats(-50, 1400, width=32), min_size=8, max_size=8),
    normals=st.lists(st.floats(-1, 1, width=32), min_size=8, max_size=8),
)
def test_snap_maps_are_the_old_broadcasting_to_the_bit(
    corners: list[float], normals: list[float]
) -> None:
    quad = np.array(corners, np.float32).reshape(4, 2)
    normal = np.array(normals, np.float32).reshape(4, 2)
    map_x, map_y = kernels.snap_maps(quad, normal, _SNAP_T, _SNAP_D)
    ref_x, ref_y = reference_maps(quad, normal)
    assert np.array_equal(map_x, ref_x)
    assert np.array_equal(map_y, ref_y)


@settings(max_examples=200, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    h=st.integers(1, 40),
    w=st.integers(1, 40),
    n=st.integers(1, 12),
)
def test_region_stats_are_the_old_bincounts_and_bands(seed: int, h: int, w: int, n: int) -> None:
    """Areas, brightness above a table plane, red less blue, and the bands touched: the old
    bincounts over the whole plane and the old int16 difference of the colours; each
    region's box; regions picked out of the labels within a box."""
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, n, (h, w)).astype(np.int32)
    gray = rng.integers(0, 256, (h, w)).astype(np.uint8)
    rows = rng.uniform(0, 200, h)
    columns = rng.uniform(-20, 55, w)
    table = rows[:, None] + columns[None, :]
    colour = rng.integers(0, 256, (h, w, 3)).astype(np.uint8)
    areas, above, warm, left, right, top, bottom, boxes = kernels.regions(
        labels, gray, rows, columns, colour, n
    )
    flat = labels.ravel().astype(np.intp)
    assert np.array_equal(areas, np.bincount(flat, minlength=n))
    assert np.array_equal(above, np.bincount(flat, weights=(gray - table).ravel(), minlength=n))
    red_less_blue = cv2.subtract(colour[..., 2], colour[..., 0], dtype=cv2.CV_16S)
    sums = np.bincount(flat, weights=red_less_blue.ravel().astype(np.float64), minlength=n)
    assert np.array_equal(warm, sums.astype(np.int64))
    for got, band in zip(
        (left, right, top, bottom),
        (labels[:, :2], labels[:, -2:], labels[:2], labels[-2:]),
        strict=True,
    ):
        seen = np.zeros(n, bool)
        seen[band] = True
        assert np.array_equal(got, seen)
    grey_only = kernels.regions(labels, gray, rows, columns, np.zeros((0, 0, 3), np.uint8), n)
    assert not grey_only[2].any()
    assert np.array_equal(grey_only[1], above)
    for label in range(n):
        ys, xs = np.nonzero(labels == label)
        box = (xs.min(), xs.max(), ys.min(), ys.max()) if len(xs) else (w, -1, h, -1)
        assert tuple(boxes[label]) == box
    chosen, other = rng.random(n) < 0.5, rng.random(n) < 0.5
    y0, x0 = int(rng.integers(0, h)), int(rng.integers(0, w))
    y1, x1 = int(rng.integers(y0, h + 1)), int(rng.integers(x0, w + 1))
    one, two = kernels.select_two(labels, chosen, other, y0, y1, x0, x1)
    for got, picked in ((one, chosen), (two, other)):
        whole = np.take(picked.view(np.uint8), flat).reshape(h, w)
        assert np.array_equal(got, whole[y0:y1, x0:x1])


@settings(max_examples=200, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), h=st.integers(1, 40), w=st.integers(1, 40))
def test_skin_is_the_old_int16_arithmetic_to_the_bit(seed: int, h: int, w: int) -> None:
    """Skin-like colours (red over green over blue) near every limit, and a strided view
    (the crop round a candidate) as well as a whole array."""
    rng = np.random.default_rng(seed)
    r = rng.integers(0, 256, (h, w))
    b = (r * rng.uniform(0, 1.2, (h, w))).clip(0, 255).astype(int)
    g = (b + (r - b) * rng.uniform(-0.2, 0.8, (h, w))).clip(0, 255).astype(int)
    colour = np.stack([b, g, r], axis=-1).astype(np.uint8)
    big = np.zeros((h + 4, w + 6, 3), np.uint8)
    big[2 : h + 2, 3 : w + 3] = colour
    for image in (colour, big[2 : h + 2, 3 : w + 3]):
        b16, g16, r16 = (image[..., k].astype(np.int16) for k in range(3))
        warm = r16 - b16
        lum = (r16 + g16 + b16) // 3
        up = g16 - b16
        want = (
            (100 * warm > 100 * SKIN_WARMTH * np.maximum(lum, 1))
            & (6 * up > warm)
            & (2 * up < warm)
        )
        assert np.array_equal(skin_pixels(image), want.view(np.uint8))


@settings(max_examples=200, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    h=st.integers(1, 60),
    w=st.integers(1, 60),
    n=st.integers(1, 40),
    m=st.integers(1, 13),
)
def test_skin_at_samples_is_the_whole_crops_skin_remapped_to_the_bit(
    seed: int, h: int, w: int, n: int, m: int
) -> None:
    """The snap beside a hand looks for skin at its samples only (``_skin_at``): the same
    bits as the whole crop's skin remapped to them, nearest pixel, border replicated, for
    samples inside and beyond the crop, on pixel centres, half-way between two and either
    side of half-way, in a strided crop as in a whole one."""
    rng = np.random.default_rng(seed)
    r = rng.integers(0, 256, (h, w))
    b = (r * rng.uniform(0, 1.2, (h, w))).clip(0, 255).astype(int)
    g = (b + (r - b) * rng.uniform(-0.2, 0.8, (h, w))).clip(0, 255).astype(int)
    big = np.zeros((h + 4, w + 6, 3), np.uint8)
    big[2 : h + 2, 3 : w + 3] = np.stack([b, g, r], axis=-1)
    offsets = np.array([0.0, 0.5, -0.5, 0.49999, 0.50001, 0.25], np.float32)
    for colour in (big[2 : h + 2, 3 : w + 3], np.ascontiguousarray(big[2 : h + 2, 3 : w + 3])):
        for whole in (True, False):
            if whole:
                mx = rng.integers(-3, w + 3, (n, m)) + rng.choice(offsets, (n, m))
                my = rng.integers(-3, h + 3, (n, m)) + rng.choice(offsets, (n, m))
            else:
                mx = rng.uniform(-20, w + 20, (n, m))
                my = rng.uniform(-20, h + 20, (n, m))
            map_x, map_y = mx.astype(np.float32), my.astype(np.float32)
            want = cv2.remap(
                skin_pixels(colour), map_x, map_y, cv2.INTER_NEAREST,
                borderMode=cv2.BORDER_REPLICATE,
            )  # fmt: skip
            assert np.array_equal(_skin_at(colour, map_x, map_y), want)


@settings(max_examples=300, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    h=st.integers(1, 60),
    w=st.integers(1, 60),
    levels=st.sampled_from([256, 7, 2]),
)
def test_ink_maps_are_the_old_paper_percentile_and_ink_to_the_bit(
    seed: int, h: int, w: int, levels: int
) -> None:
    """Few levels make ties, where an order statistic taken from counts could go wrong."""
    rng = np.random.default_rng(seed)
    small = (rng.integers(0, levels, (h, w, 3)) * (255 // max(levels - 1, 1))).astype(np.uint8)
    maps, paper = kernels.ink_maps(small, 90.0)
    ref_maps, ref_paper = reference_ink(small)
    assert np.array_equal(paper, ref_paper)
    assert np.array_equal(maps, ref_maps)


@settings(max_examples=150, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    angle=st.floats(-40, 40),
    off=st.floats(0, 9),
    small=st.booleans(),
)
def test_snap_is_the_old_snap_to_the_bit(seed: int, angle: float, off: float, small: bool) -> None:
    """A card (a bright rotated rectangle with print on it) on a textured table, its
    outline guessed a few pixels off: the compiled snap moves it exactly as the old one."""
    rng = np.random.default_rng(seed)
    image = rng.normal(60, 12, (240, 320)).astype(np.float32)
    w, h = (7.0, 10.0) if small else (110.0, 150.0)
    box = cv2.boxPoints(((160.0, 120.0), (w, h), angle)).astype(np.float32)
    cv2.fillConvexPoly(image, box.astype(np.int32), 210.0)
    for _ in range(6):  # pips and figure lines just inside the edge
        x, y = rng.uniform(110, 210), rng.uniform(60, 180)
        cv2.circle(image, (int(x), int(y)), int(rng.integers(2, 8)), 30.0, -1)
    gray = np.clip(cv2.GaussianBlur(image, (0, 0), 1.0), 0, 255).astype(np.uint8)
    guess = (box + rng.uniform(-off, off, box.shape)).astype(np.float32)
    got, support = _snap(gray.astype(np.float32), guess, own=False)
    want, want_support = reference_snap(gray, guess)
    assert np.array_equal(got, want)
    assert support == want_support


@settings(max_examples=100, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), h=st.integers(1, 120), w=st.integers(1, 120))
def test_table_difference_is_the_old_plane_and_sum_to_the_bit(seed: int, h: int, w: int) -> None:
    rng = np.random.default_rng(seed)
    colour = rng.integers(0, 256, (h, w, 3)).astype(np.uint8)
    coef = rng.normal(0, [[100.0], [1.0], [1.0]], (3, 3)).astype(np.float32)
    gx = np.arange(w, dtype=np.float32)[None, :, None]
    gy = np.arange(h, dtype=np.float32)[:, None, None]
    table = coef[0][None, None, :] + coef[1][None, None, :] * gx + coef[2][None, None, :] * gy
    want = np.abs(colour.astype(np.float32) - table).sum(axis=2)
    assert np.array_equal(kernels.table_difference(colour, coef), want)


@settings(max_examples=100, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(1, 30), d=st.integers(1, 600))
def test_masked_cosines_are_the_two_products_to_float32_rounding(seed: int, n: int, d: int) -> None:
    """The face's cosines over the uncovered features: the old two matrix products (each
    template's dot with the masked frame, over its length where the mask keeps) within
    float32's rounding; a template with nothing left under the mask divides by the floor."""
    rng = np.random.default_rng(seed)
    templates = rng.normal(0, 1, (n, d)).astype(np.float32)
    templates /= np.linalg.norm(templates, axis=1, keepdims=True)
    templates[0, : d // 2] = 0.0
    mask = (rng.random(d) < 0.7).astype(np.float32)
    mask[d // 2 :] = 0.0 if n > 1 and seed % 3 == 0 else mask[d // 2 :]
    x = rng.normal(0, 1, d).astype(np.float32) * mask
    x /= max(float(np.linalg.norm(x)), 1e-6)
    want = (templates @ x) / np.sqrt(np.maximum((templates * templates) @ mask, 1e-12))
    got = kernels.masked_cosines(templates, x, mask)
    assert got.dtype == np.float32
    assert np.allclose(got, want, rtol=1e-5, atol=1e-5)


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), classes=st.integers(2, 5), strided=st.booleans())
def test_a_parts_cosines_over_its_weighted_features_are_the_whole_boxs(
    seed: int, classes: int, strided: bool
) -> None:
    """A part compares only the features of its box that carry weight: each sample's cosine
    with a window, at its best shift, is the old product over the whole box (the features
    weighted 0 adding nothing) within float32's rounding, gathered from a map of the shape
    learned or cut from one of another layout."""
    rng = np.random.default_rng(seed)
    labels = np.repeat(np.arange(classes), 3).astype(str)
    maps = rng.normal(0, 0.02, (len(labels), 20, 16, 3)).astype(np.float32)
    for i, label in enumerate(labels):  # each class inks its own patch
        c = int(label)
        maps[i, 4 + 2 * c : 8 + 2 * c, 3 + c : 9 + c] += 0.5
    part = learn_part(maps, labels)
    assert 0 < part.templates.shape[1] < part.root_weights.size
    fmap = maps[int(rng.integers(len(maps)))] + rng.normal(0, 0.05, (20, 16, 3)).astype(np.float32)
    if strided:
        fmap = np.asfortranarray(fmap)
    y0, y1, x0, x1 = part.box
    k = 2 * SHIFT + 1
    rows = np.stack([
        (fmap[y0 - SHIFT + dy : y1 - SHIFT + dy, x0 - SHIFT + dx : x1 - SHIFT + dx]
         * part.root_weights).ravel()
        for dy in range(k) for dx in range(k)
    ])  # fmt: skip
    unit = rows / np.maximum(np.linalg.norm(rows, axis=1, keepdims=True), 1e-6)
    whole = (maps[:, y0:y1, x0:x1] * part.root_weights).reshape(len(maps), -1)
    whole /= np.maximum(np.linalg.norm(whole, axis=1, keepdims=True), 1e-6)
    want = (whole @ unit.T).max(axis=1)
    assert np.allclose(similarities(part, fmap), want, rtol=1e-5, atol=1e-5)
    kept = part.root_weights.ravel() > 0
    assert np.allclose(shifted(part, fmap), rows[:, kept], rtol=1e-6, atol=1e-7)


def reference_card_steps(prof: np.ndarray) -> np.ndarray:
    """``locate._card_steps`` as it was, in NumPy (``prof`` itself where no side steps down)."""
    n_t = len(_SNAP_T)
    ends = (prof[:, :_ENDS].sum(axis=1) - prof[:, -_ENDS:].sum(axis=1)).reshape(4, n_t)
    ends.sort(axis=1)
    contrast = ends[:, n_t // 2 - 1] + ends[:, n_t // 2]  # the median, times 2 * _ENDS
    down = contrast > 2 * _ENDS * ONE_WAY
    if not down.any():
        return prof
    steps = prof[:, 1:] - prof[:, :-1]
    if down.all():
        np.minimum(steps, 0, out=steps)
    else:
        steps[np.repeat(down, n_t)[:, None] & (steps > 0)] = 0
    out = np.empty_like(prof)
    out[:, 0] = prof[:, 0]
    np.cumsum(steps, axis=1, out=out[:, 1:])
    out[:, 1:] += prof[:, :1]
    return out


@settings(max_examples=300, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), sides=st.lists(st.floats(-80, 80), min_size=4, max_size=4))
def test_card_steps_are_the_old_cumulative_steps_to_the_bit(seed: int, sides: list[float]) -> None:
    rng = np.random.default_rng(seed)
    prof = rng.uniform(0, 255, (4 * N_T, N_D)).astype(np.float32)
    for k, lift in enumerate(sides):  # the inside brighter (or darker) than the table
        prof[k * N_T : (k + 1) * N_T, : N_D // 2] += np.float32(lift)
    ref = reference_card_steps(prof)
    out = _card_steps(prof)
    assert (out is prof) == (ref is prof)
    assert np.array_equal(out, ref)


def test_card_steps_flatten_some_sides_all_sides_or_none() -> None:
    rng = np.random.default_rng(3)
    prof = rng.uniform(100, 110, (4 * N_T, N_D)).astype(np.float32)
    assert _card_steps(prof) is prof  # no side brighter inside
    for lift in ((60, 0, 60, 0), (60, 60, 60, 60)):
        lifted = prof.copy()
        for k, v in enumerate(lift):
            lifted[k * N_T : (k + 1) * N_T, : N_D // 2] += np.float32(v)
        out = _card_steps(lifted)
        assert out is not lifted
        assert np.array_equal(out, reference_card_steps(lifted))
        rises = np.diff(out, axis=1) > 0
        for k, v in enumerate(lift):  # a side brighter inside keeps no rise outwards
            assert rises[k * N_T : (k + 1) * N_T].any() == (v == 0)


def reference_sides_within(
    found: np.ndarray, inner: np.ndarray, prof: np.ndarray, quad: np.ndarray, normal: np.ndarray
) -> np.ndarray:
    """``locate._sides_within`` as it was, in NumPy."""
    if float(np.abs(inner - found).max()) < RIM:
        return found
    centre = found.mean(axis=0)
    d = found[_NEXT] - found
    normals = np.stack([d[:, 1], -d[:, 0]], axis=1)
    normals /= np.maximum(side_lengths(found), 1e-6)[:, None]
    normals[((found - centre) * normals).sum(axis=1) < 0] *= -1
    depth = -(((inner + inner[_NEXT]) / 2 - found) * normals).sum(axis=1)
    take = depth >= RIM
    if not take.any():
        return found
    middle = (quad + quad[_NEXT]) / 2
    outer_at = (((found + found[_NEXT]) / 2 - middle) * normal).sum(axis=1)
    inner_at = (((inner + inner[_NEXT]) / 2 - middle) * normal).sum(axis=1)
    levels = np.median(prof.reshape(4, N_T, -1), axis=1)
    for k in np.flatnonzero(take):
        across, width = _SNAP_D - inner_at[k], outer_at[k] - inner_at[k]
        band = levels[k][(across > 0) & (across < width)]
        beyond = levels[k][across > width + 1.5]
        if len(band) and len(beyond) and band.min() < INK * float(np.median(beyond)):
            take[k] = False
    if not take.any():
        return found
    met = _meet(
        np.where(take[:, None], inner, found), np.where(take[:, None], inner[_NEXT], found[_NEXT])
    )
    return found if met is None else met.astype(np.float32)


@settings(max_examples=400, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    inside=st.lists(st.booleans(), min_size=4, max_size=4),
    ink=st.booleans(),
)
def test_sides_within_are_the_old_medians_and_meeting_to_the_bit(
    seed: int, inside: list[bool], ink: bool
) -> None:
    rng = np.random.default_rng(seed)
    quad = np.array([(20, 20), (80, 20), (80, 104), (20, 104)], np.float32)
    quad += rng.uniform(-3, 3, (4, 2)).astype(np.float32)
    _ok, normal, _lengths, _mx, _my = kernels.snap_start(quad, _SNAP_T, _SNAP_D)
    found = quad + rng.uniform(-3, 3, (4, 2)).astype(np.float32)
    # Some sides of the card's own quad well inside (a side's corners moved in together).
    inner = found.copy()
    for k in np.flatnonzero(inside):
        inner[[k, (k + 1) % 4]] -= np.float32(rng.uniform(0, 6)) * normal[k]
    prof = rng.uniform(0, 255, (4 * N_T, N_D)).astype(np.float32)
    if ink:  # a dark band across the sides (a printed outline)
        prof[:, N_D // 2 : N_D // 2 + 6] *= np.float32(0.3)
    ref = reference_sides_within(found, inner, prof, quad, normal)
    assert np.array_equal(_sides_within(found, inner, prof, quad, normal), ref)


def test_sides_within_keep_a_printed_outline_and_move_onto_a_shadows_inside() -> None:
    quad = np.array([(20, 20), (80, 20), (80, 104), (20, 104)], np.float32)
    _ok, normal, _lengths, _mx, _my = kernels.snap_start(quad, _SNAP_T, _SNAP_D)
    inner = quad.copy()
    inner[[0, 1]] -= np.float32(4) * normal[0]  # the top side 4 px inside
    table = np.full((4 * N_T, N_D), 200, np.float32)
    table[:, : N_D // 2] = 230  # the card brighter inside
    moved = _sides_within(quad, inner, table, quad, normal)
    assert np.allclose(moved, inner, atol=1e-3)  # a shadow's step beyond: moved in
    inked = table.copy()
    band = (_SNAP_D > -4) & (_SNAP_D < 0)
    inked[:, band] = 60  # ink between the two: a printed outline, kept
    assert np.array_equal(_sides_within(quad, inner, inked, quad, normal), quad)
    for got in (moved, reference_sides_within(quad, inner, table, quad, normal)):
        assert np.array_equal(got, moved)


def test_a_turned_corner_is_the_quad_rolled_by_two() -> None:
    quad = np.arange(8, dtype=np.float32).reshape(4, 2)
    assert np.array_equal(quad[_OPPOSITE], np.roll(quad, 2, axis=0))


@settings(max_examples=100, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), classes=st.integers(2, 12), noise=st.floats(0.0, 0.3))
def test_unit_shifted_windows_are_numpys_rows_to_the_bit(
    seed: int, classes: int, noise: float
) -> None:
    rng = np.random.default_rng(seed)
    labels = np.repeat(np.arange(classes).astype(str), 3)
    maps = rng.normal(0, 0.02, (len(labels), 24, 20, 3)).astype(np.float32)
    for i, label in enumerate(labels):  # each class inks its own patch
        c = int(label)
        maps[i, 2 + c : 8 + c, 3 + c // 2 : 9 + c] += 0.5
    part = learn_part(maps, labels)
    fmap = maps[int(rng.integers(len(maps)))] + rng.normal(0, noise, (24, 20, 3)).astype(np.float32)
    x = shifted(part, fmap)
    want = x / np.maximum(np.sqrt(np.add.reduce(x * x, axis=1, keepdims=True)), 1e-6)
    got = unit_shifted(part, fmap)  # compiled (kernels.unit_gathered)
    assert np.array_equal(got, want)
    assert np.allclose(unit_shifted(part, np.asfortranarray(fmap)), want, atol=1e-6)  # (NumPy)


def test_a_side_seen_at_one_end_alone_is_fitted_from_its_bare_samples() -> None:
    """``bare_fits`` (the sides of a card a hand lies over): a side whose edge shows over
    its first third alone, the rest under a hand whose own rim steps 8 px out, is fitted
    through the edge's steps when the rows on skin are left out (which the side fit, asking
    for steps on both halves, does not fit at all); with the hand's rows counted, the
    hand's steps, more of them and on one line, win. A side under the hand from end to
    end is not fitted."""
    from shoe_reader.camera.locate import _HIDDEN_T, _WIDE_D, BARE_SPAN, HIDDEN_SPAN

    n_t, n_d = len(_HIDDEN_T), len(_WIDE_D)
    rng = np.random.default_rng(3)
    prof = np.empty((4 * n_t, n_d), np.float32)
    covered = np.zeros(4 * n_t, bool)
    at0, at1 = 2.0, 26.0  # a side turned 24 px across its length
    for k in range(4):
        for i, t in enumerate(_HIDDEN_T):
            edge = at0 + (at1 - at0) * float(t)
            hand = (k == 0 and t > 0.36) or k == 3
            if hand:
                edge = 8.0
            covered[k * n_t + i] = hand
            row = np.where(edge > _WIDE_D, 200.0, 90.0) + rng.normal(0, 2, n_d)
            prof[k * n_t + i] = np.round(row, 2)
    fits = kernels.bare_fits(
        prof, _HIDDEN_T, _WIDE_D, covered, SIDE_TOLERANCE, BARE_SPAN, 5, HIDDEN_SPAN
    )
    fitted, start, end, on_edge = fits
    assert fitted[0] and abs(start[0] - at0) < 1.0 and abs(end[0] - at1) < 1.5
    assert int(on_edge[0]) <= int((~covered[:n_t]).sum())
    assert fitted[1] and fitted[2] and not fitted[3]
    blind = kernels.bare_fits(
        prof, _HIDDEN_T, _WIDE_D, np.zeros_like(covered), SIDE_TOLERANCE, BARE_SPAN, 5, HIDDEN_SPAN
    )
    assert blind[0][0] and abs(blind[1][0] - 8.0) < 2.0 and abs(blind[2][0] - 8.0) < 2.0
    steps = kernels.side_fits(
        prof[:, 15:-15].copy(), _HIDDEN_T, _WIDE_D[15:-15].copy(), SIDE_TOLERANCE, True
    )
    assert not steps[0][0] or abs(float(steps[2][0]) - at1) > 3


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), classes=st.integers(2, 5), strided=st.booleans())
def test_a_window_with_a_finger_in_it_is_compared_where_it_shows(
    seed: int, classes: int, strided: bool
) -> None:
    """A corner window with skin in it (see ``index.Uncovered``) is compared with each sample
    over the features it shows only: at each shift, the cosine of the window's and the
    sample's weighted features where the window is uncovered, each made unit length there;
    the best shift's. Where nothing is covered it is the plain comparison."""
    rng = np.random.default_rng(seed)
    labels = np.repeat(np.arange(classes), 3).astype(str)
    maps = rng.normal(0, 0.02, (len(labels), 20, 16, 3)).astype(np.float32)
    for i, label in enumerate(labels):
        c = int(label)
        maps[i, 4 + 2 * c : 8 + 2 * c, 3 + c : 9 + c] += 0.5
    part = learn_part(maps, labels)
    fmap = maps[int(rng.integers(len(maps)))] + rng.normal(0, 0.05, (20, 16, 3)).astype(np.float32)
    keep = np.ones((20, 16), np.float32)
    y, x = int(rng.integers(0, 16)), int(rng.integers(0, 12))
    keep[y : y + 6, x : x + 5] = 0  # a fingertip
    if strided:
        fmap = np.asfortranarray(fmap)
    y0, y1, x0, x1 = part.box
    k = 2 * SHIFT + 1
    want = np.full(len(maps), -np.inf)
    whole = (maps[:, y0:y1, x0:x1] * part.root_weights).reshape(len(maps), -1)
    for dy in range(k):
        for dx in range(k):
            ys, xs = (
                slice(y0 - SHIFT + dy, y1 - SHIFT + dy),
                slice(x0 - SHIFT + dx, x1 - SHIFT + dx),
            )
            seen = np.repeat(keep[ys, xs][..., None], 3, axis=-1).ravel()
            row = (fmap[ys, xs] * part.root_weights).ravel() * seen
            row /= max(float(np.linalg.norm(row)), 1e-6)
            t = whole * seen
            t /= np.maximum(np.linalg.norm(t, axis=1, keepdims=True), 1e-6)
            want = np.maximum(want, t @ row)
    assert np.allclose(similarities(part, uncovered(fmap, keep)), want, rtol=1e-4, atol=1e-4)
    plain = similarities(part, fmap)
    assert np.allclose(similarities(part, uncovered(fmap, np.ones_like(keep))), plain, atol=1e-5)


@settings(max_examples=100, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    h=st.integers(1, 80),
    w=st.integers(1, 80),
    fill=st.floats(0.05, 0.95),
)
def test_label_boxes_are_opencvs_component_statistics(
    seed: int, h: int, w: int, fill: float
) -> None:
    rng = np.random.default_rng(seed)
    image = (rng.random((h, w)) < fill).astype(np.uint8)
    n, labels = cv2.connectedComponents(image, connectivity=4)
    m, same, stats, _centres = cv2.connectedComponentsWithStats(image, connectivity=4)
    assert m == n and np.array_equal(same, labels)
    # (the background's, label 0, where it has no pixel, OpenCV leaves half made: never asked)
    assert np.array_equal(kernels.label_boxes(labels, n)[1:], stats[1:, :4])
    if (image == 0).any():
        assert np.array_equal(kernels.label_boxes(labels, n)[0], stats[0, :4])


def _old_rim_edges(p: np.ndarray, reach: float) -> tuple[float | None, float | None]:
    """``locate._rim_edges`` as it was, on plain-Python lists."""
    v = p.tolist()
    start = float(_RIM_T[0])
    centre = len(v) // 2
    steps = round(reach / _RIM_STEP)
    paper = _median(v[: max(centre - steps - 2, 2)])
    lo = max(centre - steps, 2)
    window = v[lo : centre + steps]
    darkest = lo + window.index(min(window))
    ink = v[darkest]
    if paper - ink < OUTLINE_STEP * paper:
        return None, None
    run = v[lo - 2 : darkest + 1]
    fall = [b - a for a, b in itertools.pairwise(run)]
    inner = start + (lo - 2 + fall.index(min(fall)) + 0.5) * _RIM_STEP
    beyond = v[darkest : darkest + steps + 4]
    if len(beyond) < 4 or max(beyond) - ink < OUTLINE_STEP * paper:
        return inner, None
    rise = [b - a for a, b in itertools.pairwise(beyond)]
    return inner, start + (darkest + rise.index(max(rise)) + 0.5) * _RIM_STEP


@settings(max_examples=400, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    reach=st.floats(1.0, 12.0),
    levels=st.sampled_from([256, 9, 3]),
    band=st.booleans(),
    table=st.floats(0.0, 1.5),
)
def test_rim_edges_are_the_old_lists_to_the_bit(
    seed: int, reach: float, levels: int, band: bool, table: float
) -> None:
    """A side's profile across a printed outline (paper, a dark band of ink, a table darker or
    brighter than the ink beyond it) or none, with few grey levels (ties for the least and
    the greatest step), at reaches from inside the samples to past their ends."""
    rng = np.random.default_rng(seed)
    n = len(_RIM_T)
    paper = rng.uniform(60, 250)
    p = np.full(n, paper)
    if band:
        at = int(rng.integers(n // 2 - 8, n // 2 + 8))
        width = int(rng.integers(1, 10))
        p[at : at + width] = paper * rng.uniform(0.0, 0.8)
        p[at + width :] = paper * table
    p = p + rng.normal(0, rng.uniform(0, 20), n)
    p = np.round(p.clip(0, 255) * (levels - 1) / 255) * 255 / (levels - 1)
    profile = p.astype(np.float32)
    assert _rim_edges(profile, reach) == _old_rim_edges(profile, reach)


@settings(max_examples=300, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    h=st.integers(1, 60),
    w=st.integers(1, 60),
    levels=st.sampled_from([256, 5, 1]),
    q=st.sampled_from([0.0, 50.0, 90.0, 99.9, 100.0]),
)
def test_byte_percentile_is_the_old_counts_and_searches_to_the_bit(
    seed: int, h: int, w: int, levels: int, q: float
) -> None:
    """The face's bright level (``recognize._percentile``) against the counts, their running
    sum and the two searches it was, with few levels (many pixels of each) and one."""
    rng = np.random.default_rng(seed)
    grey = (rng.integers(0, levels, (h, w)) * (255 // max(levels - 1, 1))).astype(np.uint8)
    cum = np.cumsum(np.bincount(grey.ravel(), minlength=256))
    at = q / 100 * (grey.size - 1)
    lo = int(at)
    a, b = (float(np.searchsorted(cum, k, side="right")) for k in (lo, lo + 1))
    assert _percentile(grey, q) == a + (b - a) * (at - lo)
