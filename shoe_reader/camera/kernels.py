"""The locator's per-pixel and per-sample loops, compiled (Numba).

Each kernel here is the exact arithmetic of the NumPy or plain-Python code it
replaced, in the same order and the same precision (float32 where NumPy
worked in float32, double where Python floats or NumPy's float64 did), so a
frame is read bit for bit as before; ``tests/camera/test_camera_kernels.py``
checks each against a NumPy statement of it. What they save is not
arithmetic but calls: the side snap ran some sixty NumPy and list operations
on a few hundred samples, twice per candidate on every frame, and the region
statistics four passes over the labels; compiled, each is one call.
One search was added since, compiled from the start: the side fit's line
through pairs of steps (``side_fits``' ``pairs``), off for the old path.

The kernels are compiled when this module is imported (explicit signatures)
and cached next to it, so the first frame at a table waits for nothing.
"""

from __future__ import annotations

import numpy as np
from numba import njit

_F4 = np.float32
SPAN = 0.25
"""Least share of a side between two steps a line through them is tried through (see
:func:`side_fits`): nearer, a pixel's error tilts the line too far."""


@njit("UniTuple(f4[:, ::1], 2)(f4[:, ::1], f4[:, ::1], f4[::1], f4[::1])", cache=True)
def snap_maps(
    quad: np.ndarray, normal: np.ndarray, along: np.ndarray, across: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Where to sample across each side of ``quad``: x and y maps, (4 * len(along), len(across)).

    Sample ``j`` across side ``k`` at ``along[i]`` of its length lies at
    ``quad[k] + along[i] * (quad[k + 1] - quad[k]) + across[j] * normal[k]``
    (float32, each product rounded before its sum, as NumPy's broadcasting did).
    """
    n_t, n_d = along.shape[0], across.shape[0]
    map_x = np.empty((4 * n_t, n_d), np.float32)
    map_y = np.empty((4 * n_t, n_d), np.float32)
    for k in range(4):
        nxt = (k + 1) % 4
        dx = quad[nxt, 0] - quad[k, 0]
        dy = quad[nxt, 1] - quad[k, 1]
        for i in range(n_t):
            bx = quad[k, 0] + along[i] * dx
            by = quad[k, 1] + along[i] * dy
            row = k * n_t + i
            for j in range(n_d):
                map_x[row, j] = bx + across[j] * normal[k, 0]
                map_y[row, j] = by + across[j] * normal[k, 1]
    return map_x, map_y


@njit("f8(f8[::1])", cache=True)
def _median(values: np.ndarray) -> float:
    ordered = np.sort(values)
    n = ordered.shape[0]
    mid = n // 2
    if n % 2:
        return float(ordered[mid])
    return float((ordered[mid - 1] + ordered[mid]) / 2)


@njit("Tuple((b1, f4[:, ::1]))(f4[:, ::1], f4[:, ::1])", cache=True)
def _corners_met(starts: np.ndarray, ends: np.ndarray) -> tuple[bool, np.ndarray]:
    """Each corner ``k`` where side ``k - 1`` (``starts[k - 1]`` to ``ends[k - 1]``) meets
    side ``k`` (float32, as the snap met them); False where two sides are parallel. One
    meeting for both the snap (:func:`snap_finish`) and the sides within (:func:`sides_within`)."""
    out = np.empty((4, 2), np.float32)
    for k in range(4):
        prev = (k + 3) % 4
        p1x, p1y = starts[prev, 0], starts[prev, 1]
        d1x, d1y = ends[prev, 0] - p1x, ends[prev, 1] - p1y
        d2x, d2y = ends[k, 0] - starts[k, 0], ends[k, 1] - starts[k, 1]
        den = d1x * d2y - d1y * d2x
        if abs(den) < _F4(1e-6):
            return False, out
        t = ((starts[k, 0] - p1x) * d2y - (starts[k, 1] - p1y) * d2x) / den
        out[k, 0] = p1x + t * d1x
        out[k, 1] = p1y + t * d1y
    return True, out


@njit("Tuple((i8, f8, f8, f8))(f8[::1], f8[::1], i8, f8, f8, i8, f8, f8, f8)", cache=True)
def _pair_line(
    ts: np.ndarray,
    os_: np.ndarray,
    n: int,
    span: float,
    tolerance: float,
    count: int,
    t1: float,
    o1: float,
    slope: float,
) -> tuple[int, float, float, float]:
    """The line through two of a side's first ``n`` steps (``ts`` along it, ``os_`` across,
    at least ``span`` apart along it) with the most steps within ``tolerance`` of it, as
    (steps on it, a step's ``t``, its ``o``, the slope), if it has more than ``count``;
    else ``count``, ``t1``, ``o1`` and ``slope`` as given. One search for both fits (a
    side's median line's rival, :func:`side_fits`; a side beside a hand, :func:`bare_fits`)."""
    for a in range(n):
        for b in range(a + 1, n):
            if ts[b] - ts[a] < span:
                continue
            s = (os_[b] - os_[a]) / (ts[b] - ts[a])
            c = 0
            for i in range(n):
                if abs(os_[i] - (os_[a] + s * (ts[i] - ts[a]))) <= tolerance:
                    c += 1
            if c > count:
                count, t1, o1, slope = c, ts[a], os_[a], s
    return count, t1, o1, slope


@njit(
    "Tuple((b1[::1], f8[::1], f8[::1], i8[::1], i8[::1]))(f4[:, ::1], f4[::1], f4[::1], f8, b1)",
    cache=True,
)
def side_fits(
    prof: np.ndarray, along: np.ndarray, across: np.ndarray, tolerance: float, pairs: bool
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Each side's straight edge through the outermost strong steps of its profiles.

    ``prof``: brightness across each side at each sample along it (rows
    ``k * len(along) + i``), at the offsets ``across``. Per side: whether a
    line was fitted, its offsets at the side's start and end, how many steps
    lie on it, and how many steps were strong enough to be tried. See
    ``locate._snap`` for why each step is taken.

    The line is drawn through the median step of each half of the side, and
    held to the steps within ``tolerance`` of it. With ``pairs`` (a camera's
    frames, where a finger or a glare spot may lie over the card's edge), when
    some steps lie off that line, the line through two steps (``SPAN`` apart or
    more) with the most steps on it is taken instead if it has more: a finger
    over the middle of a side puts its own steps on one half, and that half's
    median off the edge, so the line through the halves' medians pivots on the
    other half's and tilts (tango's jack of spades, 11-15 px off in six frames,
    read as the jack of clubs in three).
    """
    n_t = along.shape[0]
    n_s = prof.shape[1] - 2
    fitted = np.zeros(4, np.bool_)
    at_start = np.zeros(4)
    at_end = np.zeros(4)
    on_edge = np.zeros(4, np.int64)
    tried = np.zeros(4, np.int64)
    strength = np.empty(n_t, np.float32)
    offs = np.empty(n_t)
    for k in range(4):
        for i in range(n_t):
            row = k * n_t + i
            peak = _F4(0.0)
            first = True
            for j in range(n_s):
                s = abs(prof[row, j + 2] - prof[row, j])
                if first or s > peak:
                    peak, first = s, False
            limit = max(_F4(0.45) * peak, _F4(8.0))
            # The outermost strong step (the last index), else the last one.
            best = n_s - 1
            for j in range(n_s - 1, -1, -1):
                if abs(prof[row, j + 2] - prof[row, j]) >= limit:
                    best = j
                    break
            strength[i] = abs(prof[row, best + 2] - prof[row, best])
            offs[i] = float(across[best + 1])
        ordered = np.sort(strength)
        median = (ordered[n_t // 2 - 1] + ordered[n_t // 2]) / _F4(2.0)
        good = _F4(max(8.0, 0.4 * float(median)))
        ts = np.empty(n_t)
        os_ = np.empty(n_t)
        n = 0
        for i in range(n_t):
            if strength[i] >= good:
                ts[n] = float(along[i])
                os_[n] = offs[i]
                n += 1
        tried[k] = n
        if n < 8:
            continue
        half = 0
        while half < n and ts[half] < 0.5:
            half += 1
        if half < 3 or n - half < 3:
            continue
        m1 = half // 2
        t1 = ts[m1] if half % 2 else (ts[m1 - 1] + ts[m1]) / 2
        m2 = half + (n - half) // 2
        t2 = ts[m2] if (n - half) % 2 else (ts[m2 - 1] + ts[m2]) / 2
        o1 = _median(os_[:half].copy())
        o2 = _median(os_[half:n].copy())
        slope = (o2 - o1) / max(t2 - t1, 1e-6)
        m = n
        if pairs:
            m = 0
            for i in range(n):
                if abs(os_[i] - (o1 + slope * (ts[i] - t1))) <= tolerance:
                    m += 1
        if m < n:
            # Steps off the line through the halves' medians: a finger or a glare spot
            # over part of the side (its steps all on one half) can pull that half's
            # median off the edge. The line through two steps that has the most steps
            # on it is taken instead, if it has more.
            _better, t1, o1, slope = _pair_line(ts, os_, n, SPAN, tolerance, m, t1, o1, slope)
        on_t = np.empty(n)
        on_o = np.empty(n)
        m = 0
        for i in range(n):
            if abs(os_[i] - (o1 + slope * (ts[i] - t1))) <= tolerance:
                on_t[m] = ts[i]
                on_o[m] = os_[i]
                m += 1
        if m < 8:
            continue
        st = 0.0
        so = 0.0
        for i in range(m):
            st += on_t[i]
            so += on_o[i]
        mt = st / m
        mo = so / m
        var = 0.0
        cov = 0.0
        for i in range(m):
            dx = on_t[i] - mt
            var += dx * dx
            cov += dx * (on_o[i] - mo)
        slope = cov / var if var > 1e-12 else 0.0
        at0 = mo - slope * mt
        fitted[k] = True
        at_start[k] = at0
        at_end[k] = at0 + slope
        on_edge[k] = m
    return fitted, at_start, at_end, on_edge, tried


@njit(
    "Tuple((b1[::1], f8[::1], f8[::1], i8[::1]))"
    "(f4[:, ::1], f4[::1], f4[::1], b1[::1], f8, f8, i8, f8)",
    cache=True,
)
def bare_fits(
    prof: np.ndarray,
    along: np.ndarray,
    across: np.ndarray,
    covered: np.ndarray,
    tolerance: float,
    span: float,
    least: int,
    reach: float,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Each side's straight edge through the outermost strong steps of its profiles, on the
    samples not ``covered`` (by a hand) alone: per side, whether a line was found, its
    offsets at the side's start and end, and how many steps lie on it (see
    ``locate._snap_beside``).

    The steps are taken as :func:`side_fits` takes them. Unlike it, the line may lie
    along one part of the side alone (a hand over the rest): it is the line through the
    two steps ``span`` or more apart with the most steps within ``tolerance`` of it, fitted
    again (least squares) over those, if there are ``least`` of them spanning ``reach`` of
    the side.
    """
    n_t = along.shape[0]
    n_s = prof.shape[1] - 2
    fitted = np.zeros(4, np.bool_)
    at_start = np.zeros(4)
    at_end = np.zeros(4)
    on_edge = np.zeros(4, np.int64)
    strength = np.empty(n_t)
    offs = np.empty(n_t)
    ts = np.empty(n_t)
    os_ = np.empty(n_t)
    for k in range(4):
        m = 0
        for i in range(n_t):
            row = k * n_t + i
            if covered[row]:
                continue
            peak = _F4(0.0)
            for j in range(n_s):
                peak = max(peak, abs(prof[row, j + 2] - prof[row, j]))
            limit = max(_F4(0.45) * peak, _F4(8.0))
            best = -1
            for j in range(n_s - 1, -1, -1):
                if abs(prof[row, j + 2] - prof[row, j]) >= limit:
                    best = j
                    break
            if best < 0:
                continue
            strength[m] = float(abs(prof[row, best + 2] - prof[row, best]))
            offs[m] = float(across[best + 1])
            ts[m] = float(along[i])
            m += 1
        if m < least:
            continue
        good = max(8.0, 0.4 * _median(strength[:m].copy()))
        n = 0
        for i in range(m):
            if strength[i] >= good:
                ts[n] = ts[i]
                os_[n] = offs[i]
                n += 1
        if n < least:
            continue
        count, t1, o1, slope = _pair_line(ts, os_, n, span, tolerance, 0, 0.0, 0.0, 0.0)
        if count < least:
            continue
        st = 0.0
        so = 0.0
        lo = 2.0
        hi = -1.0
        for i in range(n):
            if abs(os_[i] - (o1 + slope * (ts[i] - t1))) <= tolerance:
                st += ts[i]
                so += os_[i]
                lo = min(lo, ts[i])
                hi = max(hi, ts[i])
        if hi - lo < reach:
            continue
        mt = st / count
        mo = so / count
        var = 0.0
        cov = 0.0
        for i in range(n):
            if abs(os_[i] - (o1 + slope * (ts[i] - t1))) <= tolerance:
                dx = ts[i] - mt
                var += dx * dx
                cov += dx * (os_[i] - mo)
        fit = cov / var if var > 1e-12 else 0.0
        fitted[k] = True
        at_start[k] = mo - fit * mt
        at_end[k] = at_start[k] + fit
        on_edge[k] = count
    return fitted, at_start, at_end, on_edge


@njit("f4(i8[::1], i8, f8)", cache=True)
def _order_statistic(counts: np.ndarray, n: int, q: float) -> np.float32:
    """``np.percentile`` (linear) of ``n`` byte values counted in ``counts``, in float32 as
    ``locate.percentile`` interpolates float32 values."""
    virtual = (n - 1) * (q / 100)
    below = min(int(virtual), n - 1)
    above = min(below + 1, n - 1)
    t = virtual - below
    a = _F4(-1.0)
    b = _F4(-1.0)
    seen = 0
    for v in range(256):
        seen += counts[v]
        if a < 0 and seen > below:
            a = _F4(v)
        if seen > above:
            b = _F4(v)
            break
    diff = b - a
    if t >= 0.5:
        return b - diff * _F4(1 - t)
    return a + diff * _F4(t)


@njit("Tuple((f4[:, :, ::1], f4[::1]))(u1[:, :, ::1], f8)", cache=True)
def ink_maps(small: np.ndarray, q: float) -> tuple[np.ndarray, np.ndarray]:
    """Ink and chroma of a BGR patch relative to its paper (each channel's ``q``-th
    percentile), and the paper: ``index.ink_and_chroma`` of the patch over
    ``np.maximum(paper, 1)``, in float32."""
    h, w, c = small.shape
    counts = np.zeros((c, 256), np.int64)
    for y in range(h):
        for x in range(w):
            for ch in range(c):
                counts[ch, small[y, x, ch]] += 1
    paper = np.empty(c, np.float32)
    for ch in range(c):
        paper[ch] = _order_statistic(counts[ch], h * w, q)
    scale = np.maximum(paper, _F4(1.0))
    out = np.empty((h, w, 3), np.float32)
    for y in range(h):
        for x in range(w):
            b = _F4(small[y, x, 0]) / scale[0]
            g = _F4(small[y, x, 1]) / scale[1]
            r = _F4(small[y, x, 2]) / scale[2]
            out[y, x, 0] = _F4(1.0) - min(min(b, g), r)
            out[y, x, 1] = r - g
            out[y, x, 2] = b - g
    return out, paper


@njit(
    "Tuple((b1, f4[:, ::1], f4[::1], f4[:, ::1], f4[:, ::1]))(f4[:, ::1], f4[::1], f4[::1])",
    cache=True,
)
def snap_start(
    quad: np.ndarray, along: np.ndarray, across: np.ndarray
) -> tuple[bool, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """What ``locate._snap`` needs before sampling: whether every side is long enough (8
    pixels), each side's outward unit normal and length, and the sampling maps
    (:func:`snap_maps`). Float32 throughout, each operation rounded as NumPy rounds it:
    the centre is the corners summed in order over four, a length the root of
    ``dx * dx + dy * dy``."""
    cx = ((quad[0, 0] + quad[1, 0]) + quad[2, 0]) + quad[3, 0]
    cy = ((quad[0, 1] + quad[1, 1]) + quad[2, 1]) + quad[3, 1]
    cx = cx / _F4(4.0)
    cy = cy / _F4(4.0)
    normal = np.empty((4, 2), np.float32)
    lengths = np.empty(4, np.float32)
    for k in range(4):
        dx = quad[(k + 1) % 4, 0] - quad[k, 0]
        dy = quad[(k + 1) % 4, 1] - quad[k, 1]
        lengths[k] = np.sqrt(dx * dx + dy * dy)
    if lengths.min() < _F4(8.0):
        empty = np.empty((0, 0), np.float32)
        return False, normal, lengths, empty, empty
    for k in range(4):
        dx = quad[(k + 1) % 4, 0] - quad[k, 0]
        dy = quad[(k + 1) % 4, 1] - quad[k, 1]
        ux, uy = dx / lengths[k], dy / lengths[k]
        nx, ny = uy * _F4(1.0), ux * _F4(-1.0)
        if (quad[k, 0] - cx) * nx + (quad[k, 1] - cy) * ny < _F4(0.0):
            nx, ny = nx * _F4(-1.0), ny * _F4(-1.0)
        normal[k, 0], normal[k, 1] = nx, ny
    map_x, map_y = snap_maps(quad, normal, along, across)
    return True, normal, lengths, map_x, map_y


_QUAD = "f4[:, ::1]"


@njit(
    f"Tuple((b1, {_QUAD}, f8))(f4[:, ::1], {_QUAD}, {_QUAD}, f4[::1], f4[::1], f4[::1], f8, b1)",
    cache=True,
)
def snap_finish(
    prof: np.ndarray,
    quad: np.ndarray,
    normal: np.ndarray,
    lengths: np.ndarray,
    along: np.ndarray,
    across: np.ndarray,
    tolerance: float,
    pairs: bool,
) -> tuple[bool, np.ndarray, float]:
    """``locate._snap`` after sampling: each side moved onto the straight edge its
    profiles show (:func:`side_fits`), neighbouring sides intersected, and the
    support; ``False`` when two sides are parallel or a corner moved more than 0.15 of
    the side it ends. Float32 for the corners, double for the support, as before.
    ``pairs``: see :func:`side_fits`."""
    n_t = along.shape[0]
    fitted, at_start, at_end, on_edge, tried = side_fits(prof, along, across, tolerance, pairs)
    starts = quad.copy()
    stops = np.empty((4, 2), np.float32)
    for k in range(4):
        stops[k, 0], stops[k, 1] = quad[(k + 1) % 4, 0], quad[(k + 1) % 4, 1]
    support = 1.0
    for k in range(4):
        if not fitted[k]:
            support = min(support, tried[k] / n_t / 2)
            continue
        support = min(support, on_edge[k] / n_t)
        a0, a1 = _F4(at_start[k]), _F4(at_end[k])
        for c in range(2):
            starts[k, c] = quad[k, c] + a0 * normal[k, c]
            stops[k, c] = quad[(k + 1) % 4, c] + a1 * normal[k, c]
    met, out = _corners_met(starts, stops)
    if not met:
        return False, quad, 0.0
    for k in range(4):
        mx, my = out[k, 0] - quad[k, 0], out[k, 1] - quad[k, 1]
        if np.sqrt(mx * mx + my * my) > _F4(0.15) * lengths[(k + 3) % 4]:
            return False, quad, 0.0
    return True, out, support


@njit("f4[:, ::1](u1[:, :, ::1], f4[:, ::1])", cache=True)
def table_difference(colour: np.ndarray, coef: np.ndarray) -> np.ndarray:
    """How far each pixel's colour is from the table's plane there, summed over the
    channels in order: ``np.abs(colour - table).sum(axis=2)`` with ``table = coef[0] +
    coef[1] * x + coef[2] * y`` per channel, in float32."""
    h, w, c = colour.shape
    out = np.empty((h, w), np.float32)
    for y in range(h):
        fy = _F4(y)
        for x in range(w):
            fx = _F4(x)
            total = _F4(0.0)
            for ch in range(c):
                plane = (coef[0, ch] + coef[1, ch] * fx) + coef[2, ch] * fy
                total += abs(_F4(colour[y, x, ch]) - plane)
            out[y, x] = total
    return out


@njit("u1[:, ::1](u1[:, :, :], f8)", cache=True)
def skin(colour: np.ndarray, warmth: float) -> np.ndarray:
    """``locate.skin_pixels``: 1 where a BGR pixel is skin, in one pass (``warmth``: 100 times
    the share of brightness that red must exceed blue by), the same integer arithmetic
    and the same comparison with a double as NumPy's int16 and float64 arrays did."""
    h, w = colour.shape[0], colour.shape[1]
    out = np.empty((h, w), np.uint8)
    for y in range(h):
        for x in range(w):
            b = np.int64(colour[y, x, 0])
            g = np.int64(colour[y, x, 1])
            r = np.int64(colour[y, x, 2])
            warm = r - b
            lum = (r + g + b) // 3
            up = g - b
            hot = float(100 * warm) > warmth * float(lum if lum > 1 else 1)
            out[y, x] = 1 if hot and 6 * up > warm and 2 * up < warm else 0
    return out


_REGIONS = "Tuple((i8[::1], f8[::1], i8[::1], b1[::1], b1[::1], b1[::1], b1[::1], i8[:, ::1]))"


@njit(_REGIONS + "(i4[:, ::1], u1[:, ::1], f8[::1], f8[::1], u1[:, :, ::1], i8)", cache=True)
def regions(
    labels: np.ndarray,
    gray: np.ndarray,
    ys: np.ndarray,
    xs: np.ndarray,
    colour: np.ndarray,
    n: int,
) -> tuple[
    np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray
]:
    """Per region of ``labels`` (``n`` of them), in one pass: its area; the sum of its
    pixels' brightness above the table (in row-major order, as ``np.bincount`` adds its
    weights), the table's light a plane given by its rows and columns (``table[y, x] =
    ys[y] + xs[x]``, as NumPy's broadcast sum made it); the sum of its red less blue from
    ``colour`` (BGR; an empty array: none, all zero); whether it reaches within a pixel
    of the left, right, top and bottom side; and its bounding box (first and last
    column, first and last row; a region with no pixel: ``w, -1, h, -1``).

    A row is taken a run of one region at a time, its sums kept in registers until
    the run ends: the same additions in the same order as adding each pixel into the
    region's total, without waiting on the total's store from one pixel to the next.
    Each row's red less blue is taken first, in one loop over the row (integers: the
    same sums in any order), so the run's loop has no test of whether there is colour
    (308 -> 247 us a reduced studio frame, the same figures to the bit).
    """
    h, w = labels.shape
    areas = np.zeros(n, np.int64)
    above = np.zeros(n)
    warm = np.zeros(n, np.int64)
    left = np.zeros(n, np.bool_)
    right = np.zeros(n, np.bool_)
    top = np.zeros(n, np.bool_)
    bottom = np.zeros(n, np.bool_)
    boxes = np.empty((n, 4), np.int64)
    for i in range(n):
        boxes[i, 0], boxes[i, 1], boxes[i, 2], boxes[i, 3] = w, -1, h, -1
    coloured = colour.shape[0] == h and colour.shape[1] == w and colour.shape[2] >= 3
    red_less_blue = np.zeros(w, np.int64)  # (no colour: 0 everywhere)
    for y in range(h):
        row = ys[y]
        line = labels[y]
        grey = gray[y]
        if coloured:
            for x in range(w):
                red_less_blue[x] = np.int64(colour[y, x, 2]) - np.int64(colour[y, x, 0])
        x = 0
        while x < w:
            label = line[x]
            first = x
            total = above[label]
            red = warm[label]
            while x < w and line[x] == label:
                total += float(grey[x]) - (row + xs[x])
                red += red_less_blue[x]
                x += 1
            above[label] = total
            warm[label] = red
            areas[label] += x - first
            boxes[label, 0] = min(boxes[label, 0], first)
            boxes[label, 1] = max(boxes[label, 1], x - 1)
            boxes[label, 2] = min(boxes[label, 2], y)
            boxes[label, 3] = y
        left[line[0]] = True
        left[line[min(1, w - 1)]] = True
        right[line[w - 1]] = True
        right[line[max(w - 2, 0)]] = True
    for x in range(w):
        top[labels[0, x]] = True
        top[labels[min(1, h - 1), x]] = True
        bottom[labels[h - 1, x]] = True
        bottom[labels[max(h - 2, 0), x]] = True
    return areas, above, warm, left, right, top, bottom, boxes


@njit("i8[:, ::1](i4[:, ::1], i8)", cache=True)
def label_boxes(labels: np.ndarray, n: int) -> np.ndarray:
    """Each of the ``n`` labels' bounding box as OpenCV's component statistics give it: left
    column, top row, width and height (a label with no pixel, the background of a frame
    all foreground: ``w, h, 1 - w, 1 - h``; OpenCV's is half made, and neither is asked)."""
    h, w = labels.shape
    boxes = np.empty((n, 4), np.int64)
    for i in range(n):
        boxes[i, 0], boxes[i, 1], boxes[i, 2], boxes[i, 3] = w, h, -1, -1
    for y in range(h):
        for x in range(w):
            label = labels[y, x]
            boxes[label, 0] = min(boxes[label, 0], x)
            boxes[label, 1] = min(boxes[label, 1], y)
            boxes[label, 2] = max(boxes[label, 2], x)
            boxes[label, 3] = max(boxes[label, 3], y)
    for i in range(n):
        boxes[i, 2] -= boxes[i, 0] - 1
        boxes[i, 3] -= boxes[i, 1] - 1
    return boxes


@njit("UniTuple(u1[:, ::1], 2)(i4[:, ::1], b1[::1], b1[::1], i8, i8, i8, i8)", cache=True)
def select_two(
    labels: np.ndarray, one: np.ndarray, other: np.ndarray, y0: int, y1: int, x0: int, x1: int
) -> tuple[np.ndarray, np.ndarray]:
    """:func:`select` of two choices of regions at once, only over rows ``y0:y1`` and
    columns ``x0:x1``."""
    out_one = np.empty((y1 - y0, x1 - x0), np.uint8)
    out_other = np.empty((y1 - y0, x1 - x0), np.uint8)
    for y in range(y0, y1):
        for x in range(x0, x1):
            label = labels[y, x]
            out_one[y - y0, x - x0] = 1 if one[label] else 0
            out_other[y - y0, x - x0] = 1 if other[label] else 0
    return out_one, out_other


@njit("f4[::1](f4[:, ::1], f4[::1], f4[::1])", fastmath=True, cache=True)
def masked_cosines(templates: np.ndarray, x: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """Each template's cosine with ``x`` over the features ``mask`` keeps: ``templates @ x``
    over each template's length there (``sqrt((templates * templates) @ mask)``), in one
    pass over the templates (``x`` is already zero where the mask is).

    The face's templates are some 5 MB, read twice a frame by the two products on a
    frame with a hand over the face: once is half the time where memory is the limit.
    Float32 as the two products, summed in another order: the same to a few units in
    the last place (``tests/camera/test_camera_kernels.py``).
    """
    n, d = templates.shape
    out = np.empty(n, np.float32)
    for i in range(n):
        dot = _F4(0.0)
        square = _F4(0.0)
        for j in range(d):
            v = templates[i, j]
            dot += v * x[j]
            square += v * v * mask[j]
        out[i] = dot / np.sqrt(max(square, _F4(1e-12)))
    return out


@njit("f4(f4[:, ::1], i8, i8)", cache=True)
def _sum8(prof: np.ndarray, row: int, start: int) -> np.float32:
    """``prof[row, start:start + 8].sum()``: NumPy's pairwise sum of eight float32 values
    (eight partial sums, added as a tree)."""
    a = prof[row, start : start + 8]
    total: np.float32 = ((a[0] + a[1]) + (a[2] + a[3])) + ((a[4] + a[5]) + (a[6] + a[7]))
    return total


@njit("Tuple((b1, f4[:, ::1]))(f4[:, ::1], i8, f8)", cache=True)
def card_steps(prof: np.ndarray, n_t: int, one_way: float) -> tuple[bool, np.ndarray]:
    """``locate._card_steps`` of profiles whose ends are 8 samples: whether any side's inside
    is brighter than the table beyond it by ``one_way`` (else ``prof`` is kept as it is),
    and the profiles with their rises flattened on those sides. Float32 as NumPy did it:
    each end's pairwise sum, the sides' medians, the steps, and their running sums
    (each added in order) before the first sample is added to them."""
    rows, n = prof.shape
    down = np.zeros(4, np.bool_)
    ends = np.empty(n_t, np.float32)
    for k in range(4):
        for i in range(n_t):
            ends[i] = _sum8(prof, k * n_t + i, 0) - _sum8(prof, k * n_t + i, n - 8)
        ordered = np.sort(ends)
        contrast = ordered[n_t // 2 - 1] + ordered[n_t // 2]
        down[k] = contrast > 2 * 8 * one_way
    if not down.any():
        return False, prof
    out = np.empty((rows, n), np.float32)
    for r in range(rows):
        flatten = down[r // n_t]
        first = prof[r, 0]
        out[r, 0] = first
        total = _F4(0.0)
        for j in range(1, n):
            step = prof[r, j] - prof[r, j - 1]
            if flatten and step > 0:
                step = _F4(0.0)
            total = step if j == 1 else total + step
            out[r, j] = total + first
    return True, out


@njit(
    f"{_QUAD}({_QUAD}, {_QUAD}, f4[:, ::1], {_QUAD}, {_QUAD}, f4[::1], i8, f8, f8)",
    cache=True,
)
def sides_within(
    found: np.ndarray,
    inner: np.ndarray,
    prof: np.ndarray,
    quad: np.ndarray,
    normal: np.ndarray,
    across: np.ndarray,
    n_t: int,
    rim: float,
    ink: float,
) -> np.ndarray:
    """``locate._sides_within`` (``across``: the profiles' offsets, ``n_t`` profiles a
    side): ``found`` with the sides of ``inner`` lying ``rim`` or more inside it put in
    its place, unless a band darker than ``ink`` of the table beyond lies between the two.
    Float32 throughout as NumPy did it (each product rounded before its sum; the medians
    the mean of the middle two; ``ink`` times a median in double, compared in float32)."""
    moved = _F4(0.0)
    for k in range(4):
        for c in range(2):
            moved = max(moved, abs(inner[k, c] - found[k, c]))
    if moved < rim:
        return found.copy()
    cx = (((found[0, 0] + found[1, 0]) + found[2, 0]) + found[3, 0]) / _F4(4.0)
    cy = (((found[0, 1] + found[1, 1]) + found[2, 1]) + found[3, 1]) / _F4(4.0)
    take = np.zeros(4, np.bool_)
    for k in range(4):
        nxt = (k + 1) % 4
        dx = found[nxt, 0] - found[k, 0]
        dy = found[nxt, 1] - found[k, 1]
        length = max(np.sqrt(dx * dx + dy * dy), _F4(1e-6))
        nx, ny = dy / length, -dx / length
        if (found[k, 0] - cx) * nx + (found[k, 1] - cy) * ny < _F4(0.0):
            nx, ny = -nx, -ny
        mx = (inner[k, 0] + inner[nxt, 0]) / _F4(2.0) - found[k, 0]
        my = (inner[k, 1] + inner[nxt, 1]) / _F4(2.0) - found[k, 1]
        take[k] = -(mx * nx + my * ny) >= rim
    if not take.any():
        return found.copy()
    n_d = prof.shape[1]
    column = np.empty(n_t, np.float32)
    level = np.empty(n_d, np.float32)
    picked = np.empty(n_d, np.float32)
    for k in range(4):
        if not take[k]:
            continue
        nxt = (k + 1) % 4
        midx = (quad[k, 0] + quad[nxt, 0]) / _F4(2.0)
        midy = (quad[k, 1] + quad[nxt, 1]) / _F4(2.0)
        ox = (found[k, 0] + found[nxt, 0]) / _F4(2.0) - midx
        oy = (found[k, 1] + found[nxt, 1]) / _F4(2.0) - midy
        outer_at = ox * normal[k, 0] + oy * normal[k, 1]
        ix = (inner[k, 0] + inner[nxt, 0]) / _F4(2.0) - midx
        iy = (inner[k, 1] + inner[nxt, 1]) / _F4(2.0) - midy
        inner_at = ix * normal[k, 0] + iy * normal[k, 1]
        for j in range(n_d):
            for i in range(n_t):
                column[i] = prof[k * n_t + i, j]
            ordered = np.sort(column)
            level[j] = (ordered[n_t // 2 - 1] + ordered[n_t // 2]) / _F4(2.0)
        width = outer_at - inner_at
        reach = width + _F4(1.5)
        band = np.inf
        n_band = 0
        n = 0
        for j in range(n_d):
            a = across[j] - inner_at
            if a > _F4(0.0) and a < width:
                band = min(band, float(level[j]))
                n_band += 1
            if a > reach:
                picked[n] = level[j]
                n += 1
        if n_band and n:
            beyond = np.sort(picked[:n])
            if n % 2:
                median = float(beyond[n // 2])
            else:
                median = float((beyond[n // 2 - 1] + beyond[n // 2]) / _F4(2.0))
            if band < np.float32(ink * median):  # (NumPy compares with a float in float32)
                take[k] = False
    if not take.any():
        return found.copy()
    starts = np.empty((4, 2), np.float32)
    ends = np.empty((4, 2), np.float32)
    for k in range(4):
        nxt = (k + 1) % 4
        for c in range(2):
            starts[k, c] = inner[k, c] if take[k] else found[k, c]
            ends[k, c] = inner[nxt, c] if take[k] else found[nxt, c]
    met, out = _corners_met(starts, ends)
    if not met:
        return found.copy()
    return out


@njit("f4(f4[::1], i8, i8)", cache=True)
def _pairwise_sum(a: np.ndarray, start: int, n: int) -> np.float32:
    """``a[start:start + n].sum()`` as NumPy adds float32 along a row: eight running sums
    added as a tree (then the rest, in order) in blocks of up to 128, and halves (cut at a
    multiple of eight) added, each summed so, beyond."""
    if n < 8:
        res = _F4(0.0)
        for i in range(n):
            res += a[start + i]
        return res
    if n <= 128:
        # The eight running sums in registers (an array of eight was allocated per block).
        r0, r1, r2, r3 = a[start], a[start + 1], a[start + 2], a[start + 3]
        r4, r5, r6, r7 = a[start + 4], a[start + 5], a[start + 6], a[start + 7]
        i = 8
        while i < n - (n % 8):
            at = start + i
            r0 += a[at]
            r1 += a[at + 1]
            r2 += a[at + 2]
            r3 += a[at + 3]
            r4 += a[at + 4]
            r5 += a[at + 5]
            r6 += a[at + 6]
            r7 += a[at + 7]
            i += 8
        res = ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))
        while i < n:
            res += a[start + i]
            i += 1
        return np.float32(res)
    n2 = n // 2
    n2 -= n2 % 8
    total: np.float32 = _pairwise_sum(a, start, n2) + _pairwise_sum(a, start + n2, n - n2)
    return total


@njit("f4[:, ::1](f4[::1], i8[:, ::1], f4[::1])", cache=True)
def unit_gathered(flat: np.ndarray, gather: np.ndarray, root: np.ndarray) -> np.ndarray:
    """``index.unit_shifted`` of a raveled feature map: each shift's weighted features
    (``flat[gather[s]] * root``) made unit length, in float32 as NumPy did it (the squares
    rounded, then summed pairwise, see :func:`_pairwise_sum`; the length at least 1e-6)."""
    k, d = gather.shape
    out = np.empty((k, d), np.float32)
    squares = np.empty(d, np.float32)
    for s in range(k):
        for j in range(d):
            v = flat[gather[s, j]] * root[j]
            out[s, j] = v
            squares[j] = v * v
        length = max(np.sqrt(_pairwise_sum(squares, 0, d)), _F4(1e-6))
        for j in range(d):
            out[s, j] = out[s, j] / length
    return out


@njit("f8(u1[:, ::1], i8, f8)", cache=True)
def byte_percentile(grey: np.ndarray, lo: int, at: float) -> float:
    """``recognize._percentile``: the linear percentile of 8-bit pixels at ``at`` (``lo`` its
    whole part), from their counts, as its ``np.cumsum(np.bincount(...))`` and two
    ``np.searchsorted(..., side="right")`` had it (each the first level whose running count
    passes ``lo``, ``lo + 1``), and the same double interpolation."""
    counts = np.zeros(256, np.int64)
    h, w = grey.shape
    for y in range(h):
        for x in range(w):
            counts[grey[y, x]] += 1
    a = -1
    b = -1
    seen = 0
    for v in range(256):
        seen += counts[v]
        if a < 0 and seen > lo:
            a = v
        if seen > lo + 1:
            b = v
            break
    if a < 0:
        a = 256
    if b < 0:
        b = 256
    fa = float(a)
    return fa + (float(b) - fa) * (at - lo)


@njit("Tuple((b1, f8, b1, f8))(f4[::1], i8, f8, f8, f8)", cache=True)
def rim_edges(
    p: np.ndarray, steps: int, start: float, step: float, outline_step: float
) -> tuple[bool, float, bool, float]:
    """``locate._rim_edges`` on one side's profile ``p`` (``steps``: the reach in samples):
    whether the inner edge was seen and where, whether the outer edge was and where. The
    same double arithmetic as its plain-Python lists (float32 samples made doubles; medians,
    differences, the first least and greatest), in one call instead of a few dozen list
    operations, four times a read outline."""
    n = p.shape[0]
    v = np.empty(n, np.float64)
    for i in range(n):
        v[i] = np.float64(p[i])
    centre = n // 2
    head = min(max(centre - steps - 2, 2), n)
    paper = _median(v[:head].copy())
    lo = max(centre - steps, 2)
    hi = min(centre + steps, n)
    if lo >= hi:
        raise ValueError("min() arg is an empty sequence")  # (as the lists' min() did)
    darkest = lo
    for i in range(lo + 1, hi):
        if v[i] < v[darkest]:
            darkest = i
    ink = v[darkest]
    if paper - ink < outline_step * paper:
        return False, 0.0, False, 0.0
    fall_at = 0
    fall = np.inf
    for i in range(max(lo - 2, 0), darkest):
        d = v[i + 1] - v[i]
        if d < fall:
            fall, fall_at = d, i - (lo - 2)
    inner = start + (lo - 2 + fall_at + 0.5) * step
    end = min(darkest + steps + 4, n)
    if end - darkest < 4:
        return True, inner, False, 0.0
    top = v[darkest]
    for i in range(darkest, end):
        top = max(top, v[i])
    if top - ink < outline_step * paper:
        return True, inner, False, 0.0
    rise_at = 0
    rise = -np.inf
    for i in range(darkest, end - 1):
        d = v[i + 1] - v[i]
        if d > rise:
            rise, rise_at = d, i - darkest
    return True, inner, True, start + (darkest + rise_at + 0.5) * step
