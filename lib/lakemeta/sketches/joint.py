"""Φ(X, Y) from the joint distribution of two register rows, for pairs of large columns (beyond the paper).

BML's look-up (``bml``) uses one bit of each bucket pair, whether V^X_i <= V^Y_i. Where both columns are
large, nearly every bucket of both is filled and that bit says little: on TPC-H SF1 the exact marginal's
mean error on pairs of two columns above 16,384 values is 0.014, three times bottom-k's at equal memory.
The pair of register values says more. With A = X \\ Y, B = Y \\ X and T = X ∩ Y (disjoint, so their
registers are independent) V^X = max(V^A, V^T) and V^Y = max(V^B, V^T), so with G_S(k) = pr(V^S <= k) =
(1 - 2^-(p+k))^|S| (the exact marginal at m = p, ``bml``)

    pr(V^X <= x, V^Y <= y) = G_A(x) G_B(y) G_T(min(x, y)),

and each bucket pair's probability follows by differences. The buckets' values, tallied into a histogram
of (V^X, V^Y), give the log-likelihood of |T| with |X| and |Y| fixed at their HLL estimates (Ertl 2017,
"New cardinality estimation algorithms for HyperLogLog sketches", §4, estimates all three jointly; on
TPC-H the three-parameter maximum is no more accurate, 0.0043 against 0.0044). Its maximum over
|T| in [0, min(|X|, |Y|)] is found on a grid and refined by Brent's method; the bound is
z / sqrt(observed information) on |T|, over |X|, with |X|'s own relative standard error added in
quadrature (Φ = |T| / |X| and |X| is an estimate). Where the maximum lies at an end of the range (Φ̂ = 0,
or a column inside the other) the curvature says nothing of the one side there is, and the bound is the
likelihood-ratio interval's: where the log-likelihood has fallen by z² / 2 (on TPC-H SF1 this takes the
pairs of two large columns within their bound from 88 % to 93 %). What misses it there is mostly an HLL
error of two standard errors in the larger column's size, which the likelihood takes as given; bounds from
the full 3 x 3 observed information of (|A|, |B|, |T|) were tried and caught no more of them (90 %) at
twice the cost.

Cost: one pass over the 2^p bucket pairs, then some 30 likelihood evaluations over the histogram's filled
cells (a few hundred), each tabulating the three CDFs once and then four products per cell (the time a
pair takes: docs/performance.md, "Measurements behind the code").
"""

from __future__ import annotations

import math
from statistics import NormalDist

import numpy as np
from numba import njit, prange

from lakemeta.sketches.hll import relative_standard_error

_VALUES = 64  # register values 0 .. 64 - p + 1 fit below
_GRID = 16
_GOLDEN_STEP = (3.0 - math.sqrt(5.0)) / 2.0  # the golden section's smaller part
_TOLERANCE = 1e-5  # of min(|X|, |Y|), where the search stops: far below the bound
_BOUND_TOLERANCE = 1e-3  # of min(|X|, |Y|), where the search for a likelihood-ratio bound stops


@njit(cache=True, nogil=True)
def _cdf(n: float, log_miss: np.ndarray, top: int, out: np.ndarray) -> None:
    """G_n(k) = exp(n · log(1 - 2^-(p+k))) for k = -1 .. top at out[k + 1] (G(-1) = 0); the cells of a
    histogram whose values are at most ``top`` need no more."""
    out[0] = 0.0
    for k in range(top + 1):
        out[k + 1] = math.exp(n * log_miss[k])


@njit(cache=True, nogil=True)
def _log_likelihood(
    cells: np.ndarray,
    counts: np.ndarray,
    n_x: float,
    n_y: float,
    n_t: float,
    log_miss: np.ndarray,
    work: np.ndarray,
) -> float:
    """Σ over the filled cells (x, y) of count · log pr(V^X = x, V^Y = y); the three CDFs are tabulated
    once per call up to the largest value seen, so a cell costs four products, not four exponentials."""
    g_a, g_b, g_t = work[0], work[1], work[2]
    top = max(cells[:, 0].max(), cells[:, 1].max())
    _cdf(max(n_x - n_t, 0.0), log_miss, top, g_a)
    _cdf(max(n_y - n_t, 0.0), log_miss, top, g_b)
    _cdf(n_t, log_miss, top, g_t)
    total = 0.0
    for c in range(cells.shape[0]):
        x, y = cells[c, 0] + 1, cells[c, 1] + 1  # shifted: index 0 is k = -1
        mass = (
            g_a[x] * g_b[y] * g_t[min(x, y)]
            - g_a[x - 1] * g_b[y] * g_t[min(x - 1, y)]
            - g_a[x] * g_b[y - 1] * g_t[min(x, y - 1)]
            + g_a[x - 1] * g_b[y - 1] * g_t[min(x - 1, y - 1)]
        )
        total += counts[c] * math.log(max(mass, 1e-300))
    return total


@njit(cache=True, nogil=True)
def _histogram(x_row: np.ndarray, y_row: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The filled cells (V^X, V^Y) of a pair of register rows and the buckets in each."""
    tally = np.zeros((_VALUES, _VALUES), np.int64)
    for i in range(x_row.shape[0]):
        tally[x_row[i], y_row[i]] += 1
    filled = np.count_nonzero(tally)
    cells = np.empty((filled, 2), np.int64)
    counts = np.empty(filled, np.float64)
    c = 0
    for a in range(_VALUES):
        for b in range(_VALUES):
            if tally[a, b]:
                cells[c, 0], cells[c, 1], counts[c] = a, b, tally[a, b]
                c += 1
    return cells, counts


@njit(cache=True, nogil=True)
def _brent(
    cells: np.ndarray,
    counts: np.ndarray,
    n_x: float,
    n_y: float,
    log_miss: np.ndarray,
    work: np.ndarray,
    low: float,
    high: float,
    tolerance: float,
) -> float:
    """The |T| in [low, high] maximising the likelihood, by Brent's method (parabolic steps through the
    last three points, golden-section steps where a parabola would not shrink the bracket; Brent 1973,
    ch. 5): about ten evaluations on this smooth likelihood, against some twenty for golden section."""
    x = w = v = low + _GOLDEN_STEP * (high - low)
    f_x = f_w = f_v = -_log_likelihood(cells, counts, n_x, n_y, x, log_miss, work)
    d = e = 0.0
    for _ in range(100):
        middle = 0.5 * (low + high)
        if abs(x - middle) <= 2.0 * tolerance - 0.5 * (high - low):
            break
        golden = True
        if abs(e) > tolerance:
            r = (x - w) * (f_x - f_v)
            q = (x - v) * (f_x - f_w)
            p = (x - v) * q - (x - w) * r
            q = 2.0 * (q - r)
            if q > 0.0:
                p = -p
            q = abs(q)
            if abs(p) < abs(0.5 * q * e) and q * (low - x) < p < q * (high - x):
                e, d = d, p / q
                golden = False
                if (x + d) - low < 2.0 * tolerance or high - (x + d) < 2.0 * tolerance:
                    d = tolerance if middle >= x else -tolerance
        if golden:
            e = (low - x) if x >= middle else (high - x)
            d = _GOLDEN_STEP * e
        u = x + (d if abs(d) >= tolerance else (tolerance if d > 0 else -tolerance))
        f_u = -_log_likelihood(cells, counts, n_x, n_y, u, log_miss, work)
        if f_u <= f_x:
            if u >= x:
                low = x
            else:
                high = x
            v, w, x = w, x, u
            f_v, f_w, f_x = f_w, f_x, f_u
        else:
            if u < x:
                low = u
            else:
                high = u
            if f_u <= f_w or w == x:
                v, w, f_v, f_w = w, u, f_w, f_u
            elif f_u <= f_v or v in (x, w):
                v, f_v = u, f_u
    return x


@njit(cache=True, nogil=True)
def _estimate_one(
    x_row: np.ndarray, y_row: np.ndarray, n_x: float, n_y: float, p: int, drop: float
) -> tuple[float, float]:
    """(|T| maximising the likelihood, the half-width of its interval in |T|, or -1 where the likelihood
    is flat). Inside the range the half-width is z / sqrt(curvature); at an end of it (Φ̂ = 0, or a
    column inside the other) the curvature says nothing of the one side there is, and the interval is
    the likelihood-ratio one: up to where the log-likelihood has fallen by ``drop`` = z² / 2."""
    cells, counts = _histogram(x_row, y_row)
    work = np.empty((3, _VALUES + 1))
    log_miss = np.empty(_VALUES)  # log(1 - 2^-(p+k)): the chance that one value leaves a bucket below k
    for k in range(_VALUES):
        log_miss[k] = math.log1p(-math.ldexp(1.0, -(p + k)))
    top = min(n_x, n_y)
    grid = np.empty(_GRID + 1)
    for g in range(_GRID + 1):
        grid[g] = _log_likelihood(cells, counts, n_x, n_y, top * g / _GRID, log_miss, work)
    best = int(np.argmax(grid))
    tolerance = _TOLERANCE * max(top, 1.0)
    n_t = top * best / _GRID
    inward = 1 if best == 0 else -1
    at_end = (best == 0 or best == _GRID) and grid[best] >= _log_likelihood(
        cells, counts, n_x, n_y, n_t + inward * tolerance, log_miss, work
    )
    if at_end:
        # the first grid node inward below the level, then bisection between it and the one before
        level = grid[best] - drop
        g = best + inward
        while 0 <= g <= _GRID and grid[g] >= level:
            g += inward
        if not 0 <= g <= _GRID:
            return n_t, -1.0
        inside, outside = top * (g - inward) / _GRID, top * g / _GRID
        while abs(outside - inside) > _BOUND_TOLERANCE * max(top, 1.0):
            middle = 0.5 * (inside + outside)
            if _log_likelihood(cells, counts, n_x, n_y, middle, log_miss, work) >= level:
                inside = middle
            else:
                outside = middle
        return n_t, abs(outside - n_t)
    low, high = top * max(best - 1, 0) / _GRID, top * min(best + 1, _GRID) / _GRID
    n_t = _brent(cells, counts, n_x, n_y, log_miss, work, low, high, tolerance)
    step = max(n_x * 1e-3, 1.0)
    below, above = max(n_t - step, 0.0), min(n_t + step, top)
    f_below = _log_likelihood(cells, counts, n_x, n_y, below, log_miss, work)
    f_at = _log_likelihood(cells, counts, n_x, n_y, n_t, log_miss, work)
    f_above = _log_likelihood(cells, counts, n_x, n_y, above, log_miss, work)
    width = (above - below) / 2.0
    curvature = -(f_below - 2.0 * f_at + f_above) / (width * width) if width > 0 else 0.0
    if curvature <= 0.0:
        return n_t, -1.0
    return n_t, math.sqrt(2.0 * drop / curvature)


@njit(cache=True, parallel=True)
def _estimate_all(
    regs: np.ndarray,
    x: np.ndarray,
    y: np.ndarray,
    n: np.ndarray,
    p: int,
    drop: float,
    n_t: np.ndarray,
    half_width: np.ndarray,
) -> None:
    for j in prange(x.shape[0]):
        n_t[j], half_width[j] = _estimate_one(regs[x[j]], regs[y[j]], n[x[j]], n[y[j]], p, drop)


def joint_inclusion(
    regs: np.ndarray, x: np.ndarray, y: np.ndarray, cardinalities: np.ndarray, confidence: float
) -> tuple[np.ndarray, np.ndarray]:
    """(Φ̂, error bound at ``confidence``) of the pairs (x[j], y[j]) of rows of a (columns x 2^p) register
    matrix, by the joint likelihood of their register pairs (module docstring)."""
    regs = np.ascontiguousarray(regs, dtype=np.uint8)
    p = regs.shape[1].bit_length() - 1
    x, y = np.asarray(x, np.int64), np.asarray(y, np.int64)
    n = np.asarray(cardinalities, np.float64)
    n_t, half_width = np.zeros(x.shape[0]), np.zeros(x.shape[0])
    z = NormalDist().inv_cdf(0.5 + confidence / 2.0)
    if x.shape[0]:
        _estimate_all(regs, x, y, n, p, z * z / 2.0, n_t, half_width)
    n_x = np.maximum(n[x], 1.0)
    phi = np.clip(n_t / n_x, 0.0, 1.0)
    # |X| is an estimate too: its relative error, in quadrature
    bound = np.sqrt((half_width / n_x) ** 2 + (z * relative_standard_error(p) * phi) ** 2)
    return phi, np.where(half_width >= 0.0, np.minimum(bound, 1.0), 1.0)
