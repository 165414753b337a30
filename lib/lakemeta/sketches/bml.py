"""BML (Binomial Mean Lookup): inclusion coefficient Φ(X, Y) = |X ∩ Y| / |X| from HLL registers (BML §3).

For many column pairs at once: Step 1 (Alg. 1 lines 3-6) counts, per pair, the buckets with V^X_i <= V^Y_i
over a (columns x 2^m) uint8 register matrix; Step 2 (Alg. 2, Lookup) bisects, per pair, the intersection
size n_T until pr(V^X <= V^Y) (Eqs. 6-10) matches P̂ = z / 2^m within ε. The number of buckets per pair
comes from Eq. 12, the error bound from Theorem 4 (Hoeffding) and Eq. 11.

pr(V^X <= V^Y). With Xo = X \\ T, Yo = Y \\ T and T = X ∩ Y, the three scenarios of Case 3 (Eq. 8) are the
events {V^Xo <= k, max(V^T, V^Yo) = k}, and max(V^T, V^Yo) = V^Y. V^T, V^Xo, V^Yo are independent (disjoint
sets of values), so pr(V^Y <= k) = pr(V^T <= k) pr(V^Yo <= k) = (1 - 2^-k)^(a_T + a_Yo), and Eq. 8 becomes
    P(n_T) = Σ_k G_Xo(k) [G_Y(k) - G_Y(k-1)],  G_S(k) = (1 - 2^-k)^(n_S / 2^m)   (Eqs. 9-10, average load),
with G_S(-1) = 0. The same expression is Eq. 6 (n_T = 0), Eq. 7 (n_Yo = 0) and Alg. 2 line 4 (X = Y gives
G_Xo = 1, a telescoping sum equal to 1), so one formula serves all four branches of Alg. 2 and G_Y is fixed
for a pair: only G_Xo changes during the bisection. The test suite checks it against Eqs. 6-8 as printed.

Truncation of the sum over k (the paper sums k = 0 .. l - m): terms below k_lo are bounded by
G_Y(k_lo - 1) <= exp(-a_Y 2^-(k_lo-1)) <= 2^-32, and likewise the terms with G_Xo(k) <= 2^-32 are skipped;
above k_hi, G_Xo lies in [G_Xo(k_hi), 1] and the remaining mass Σ [G_Y(k) - G_Y(k-1)] = 1 - G_Y(k_hi) is
added whole, an error <= (1 - G_Y(k_hi))(1 - G_Xo(k_hi)) <= max(a_Y, 1) max(a_X, 1) 4^-k_hi <= 2^-32. So P
is exact to ~1e-9, far below ε, with some 15-25 terms per evaluation.

The exact marginal (beyond the paper). Eq. 9 replaces a bucket's load by the average n / 2^m: G(k) =
(1 - 2^-k)^(n/2^m) says a bucket is never empty (G(0) = 0), which is far from true when n is not much
larger than 2^m, and is why Eq. 12 keeps m near log2(n) / 2 and throws away all but 2^m of the 2^p registers
the state keeps (2-8 buckets for a column of 3-7 values). Each of the n values falls into a given bucket with
probability 2^-m and has rho > k with probability 2^-k, so a bucket's marginal is exactly
    pr(V <= k) = (1 - 2^-(m+k))^n,
and disjoint sets of values are independent, so P(n_T) keeps Eq. 8's form with this G, and P̂ = z / 2^m is
unbiased for it at any m. Evaluated at m = p it uses every register: mean |Φ̂ - Φ| on TPC-H falls several
fold (``bench/bml_accuracy.py``, which keeps Eq. 9 with Eq. 12 as the paper's baseline). The kernels serve
both models: G(k) = (1 - 2^-(k+o))^a with (a, o) = (n / 2^m, 0) for Eq. 9 and (n, m) for the exact marginal.
Where X is small, P moves little with Φ (only X's own buckets can change), so the look-up's ε is taken
relative to the range [P(0), P(min(n_X, n_Y))] under the exact marginal: Φ̂ is then resolved to ~ε
whatever |X|. The error bound under the exact marginal takes e_p from the binomial variance of P̂
(``binomial_probability_error``) instead of Theorem 4's worst case, which at m = p is several times too
wide wherever P̂ lies near 1 (``bench/bml_accuracy.py`` measures how often the bound holds).

Interpretations. (1) Alg. 2 as printed recurses on [n_T, maxInc] when Prob > P̂; P increases with Φ
(Theorem 2), so that branch must search [minInc, n_T] (and vice versa): implemented the monotone way.
(2) When P̂ lies outside [P(0), P(min(n_X, n_Y))], no n_T reaches it; the MLE is then the nearer end of
the range, returned directly. The bisection also stops once the Φ interval is narrower than ε
(§3.2.2: -ln ε / ln 2 iterations). (3) n_X, n_Y (Alg. 1 lines 8-9) are estimated from the precision-p
registers, the most accurate estimate the sketch holds. (4) Eq. 12 is rounded to the nearest integer and
clamped to [0, p]. (5) Theorem 4 solved for e_p at confidence 1 - δ gives e_p = sqrt(ln(2/δ) / 2^(m+1))
(the paper's example "m = 7, e_p = 0.014" is this e_p squared); Eq. 11 at alpha = Φ̂ with the analytic slope
P'(Φ̂) = (n_X / 2^m) Σ_k -ln(1 - 2^-k) G_Xo(k) [G_Y(k) - G_Y(k-1)] gives e_Φ = e_p / P'(Φ̂), capped at 1.

Speed (all pairs of a lake at once; none of this changes a result). (1) The rows the pairs use are folded
once to every m some pair needs, by halving from p (BML §3.3 keeps the sketch of every m). (2) Step 1
compares eight registers per 64-bit word. (3) A load row per (column, m) holds G(k) for every k, so P(0)
and the weights pr(V^Y = k) take no exp per pair. (4) Certified bisection. As a function of n_T, the
computed P lies within E = 2^-32 + ~1e-13 (skipped terms, rounding) of the same sum taken without skipping
in exact arithmetic, which never decreases (each G_Xo(k) rises with n_T, the weights are >= 0: Theorem 2).
So one evaluation P(a) < P̂ - ε - 2E shows P(n) < P̂ - ε at every n <= a, where Alg. 2 moves its lower end
up without stopping; likewise above the band |P - P̂| <= ε. Safeguarded Newton steps (P' comes with P)
put one such evaluation just below and one just above the band; the bisection then evaluates only the
midpoints between them, as a rule the last one. Every midpoint and decision stays Alg. 2's own, so Φ̂ and
P'(Φ̂) are bit for bit those of the plain bisection (tested), at some 6 evaluations of P instead of ~19.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import NormalDist

import numpy as np
from numba import njit, prange

from lakemeta.sketches.dominance import dominated_counts, dominated_lanes
from lakemeta.sketches.hll import HASH_BITS, estimate_cardinality

AVERAGE_LOAD = "average_load"  # the paper's Eq. 9, with m from Eq. 12: the baseline of bench/bml_accuracy.py
EXACT_MARGINAL = "exact_marginal"  # every bucket's exact marginal at m = p (module docstring)
MODELS = (AVERAGE_LOAD, EXACT_MARGINAL)
DEFAULT_CONFIDENCE = 0.95
DEFAULT_TOLERANCE = 1e-5  # ε of Alg. 2; §3.2.2: 17 iterations for ε = 1e-5
_CHUNK = 256  # pairs per parallel work item
_PARALLEL_MIN_PAIRS = 8 * _CHUNK  # below this, starting the thread pool costs more than it saves
_TRUNCATION_LOG2 = 32.0  # terms dropped from the sum over k weigh at most 2^-32 each side
# 2E of the certified bisection (module docstring, "Speed"), rounded up: P(a) < P̂ - ε - _CERTAIN puts every
# n_T <= a below the band
_CERTAIN = 1e-9
_NEWTON_STEPS = 6  # per certificate; from the nearer end of the range Newton needs some 2-4
# A load row describes one average bucket load a = n / 2^m: G(k) at index k + 1 for k = -1 .. l + 1, then
# _first_k(a) and log2(max(a, 1)), the parts of the term range that depend on a alone
_FIRST_K = HASH_BITS + 3
_LOG2_LOAD = HASH_BITS + 4
_LOAD_ROW = HASH_BITS + 5

# ln(1 - 2^-k) for k = 0 .. l + 1 (k = 0 is -inf: (1 - 1)^a = 0 for a > 0, and 1 for a = 0)
_LOG_1M2K = np.array([-np.inf] + [math.log1p(-(2.0**-k)) for k in range(1, HASH_BITS + 2)])


@njit(cache=True, inline="always")
def _g(a: float, o: int, k: int) -> float:
    """G(k) = pr(V <= k) = (1 - 2^-(k + o))^a for one bucket; G(-1) = 0. Eq. 9 is o = 0 with the average
    load a = n / 2^m; the exact marginal is o = m with a = n (module docstring, "The exact marginal")."""
    if k < 0:
        return 0.0
    if k + o == 0:
        return 1.0 if a == 0.0 else 0.0
    return math.exp(a * _LOG_1M2K[k + o])


@njit(cache=True)
def _first_k(a: float, o: int) -> int:
    """Smallest k whose G(k) = (1 - 2^-(k+o))^a may exceed 2^-32: G(k-1) <= exp(-a 2^-(k+o-1)) <= 2^-32."""
    if a <= 0.0:
        return 0
    return max(0, math.floor(math.log2(a / (_TRUNCATION_LOG2 * math.log(2.0)))) + 1 - o)


@njit(cache=True)
def _describe_load(a: float, o: int, row: np.ndarray) -> None:
    """The entries of the load row of (a, o) that do not depend on k; the log2 entry carries -o so that the
    tail bound of ``_k_range``, 1 - G(k) <= a 2^-(k+o) per side, needs no offset of its own."""
    row[_FIRST_K] = _first_k(a, o)
    row[_LOG2_LOAD] = math.log2(max(a, 1.0)) - o


@njit(cache=True)
def _fill_g(a: float, o: int, k_from: int, k_to: int, row: np.ndarray) -> None:
    """row[k + 1] = G(k) for k_from <= k <= k_to."""
    for k in range(k_from, k_to + 1):
        row[k + 1] = _g(a, o, k)


@njit(cache=True, nogil=True)
def _load_rows(loads: np.ndarray, offsets: np.ndarray, top_k: np.ndarray) -> np.ndarray:
    """Complete load rows (G for every k = -1 .. top_k) of loads with their offsets (a few per column:
    serial)."""
    rows = np.empty((loads.shape[0], _LOAD_ROW))
    for r in range(loads.shape[0]):
        _describe_load(loads[r], offsets[r], rows[r])
        _fill_g(loads[r], offsets[r], -1, top_k[r], rows[r])
    return rows


@njit(cache=True)
def _k_range(x_row: np.ndarray, y_row: np.ndarray, m: int) -> tuple[int, int]:
    """[k_lo, k_hi] of the terms that matter (module docstring, truncation), from the pair's load rows."""
    k_lo = int(y_row[_FIRST_K])
    k_hi = math.ceil((x_row[_LOG2_LOAD] + y_row[_LOG2_LOAD] + _TRUNCATION_LOG2) / 2.0)
    return k_lo, max(min(k_hi, HASH_BITS - m + 1), k_lo)


@njit(cache=True)
def _y_weights(y_row: np.ndarray, k_lo: int, k_hi: int, buffer: np.ndarray) -> tuple[np.ndarray, float]:
    """pr(V^Y = k) = G_Y(k) - G_Y(k-1) for k in [k_lo, k_hi] (a view of ``buffer``), fixed for a pair, from
    the load row of Y (valid over [k_lo - 1, k_hi]); also G_Y(k_hi)."""
    weights = buffer[: k_hi - k_lo + 1]
    for j in range(weights.shape[0]):
        weights[j] = y_row[k_lo + j + 1] - y_row[k_lo + j]
    return weights, y_row[k_hi + 1]


@njit(cache=True)
def _prob_and_slope(
    a_xonly: float,
    o: int,
    weights: np.ndarray,
    g_y_top: float,
    k_lo: int,
    a_x: float,
    xo_row: np.ndarray,
) -> tuple[float, float]:
    """P(n_T) = pr(V^X <= V^Y) (Eqs. 6-10) and dP/dΦ, for G_Xo with load a_xonly and offset o; weights[j]
    holds G_Y(k_lo + j) - G_Y(k_lo + j - 1); a_x is X's load, the rate at which a_xonly falls with Φ.
    ``xo_row`` is the load row of a_xonly, valid over the terms summed, or empty: then G_Xo is computed
    here."""
    prob = 1.0 - g_y_top  # mass above k_hi, where G_Xo ~ 1
    slope = 0.0
    tabled = xo_row.shape[0] > 0
    # below _first_k(a_xonly) every G_Xo(k) <= 2^-32: those terms are skipped
    start = max(k_lo, int(xo_row[_FIRST_K]) if tabled else _first_k(a_xonly, o))
    if start + o == 0:  # G_Xo(0) = [a_xonly == 0] under Eq. 9; its slope term is 0
        if a_xonly == 0.0:
            prob += weights[0]
        start = 1
    for k in range(start, k_lo + weights.shape[0]):
        if tabled:
            g = xo_row[k + 1]
        elif a_xonly == 0.0:  # X inside Y: exp(-0.0) = 1 exactly
            g = 1.0
        else:
            g = math.exp(a_xonly * _LOG_1M2K[k + o])
        term = g * weights[k - k_lo]
        prob += term
        slope -= _LOG_1M2K[k + o] * term
    return prob, slope * a_x


@njit(cache=True)
def _certificates(
    p_hat: float,
    eps: float,
    n_x: float,
    max_inc: float,
    scale: float,
    o: int,
    weights: np.ndarray,
    g_y_top: float,
    k_lo: int,
    ends: tuple[float, float, float, float],
) -> tuple[float, float]:
    """(below, above): intersection sizes with P(below) < P̂ - ε - _CERTAIN and P(above) > P̂ + ε + _CERTAIN
    (-inf / +inf when none is known), found by safeguarded Newton steps aimed just outside the band
    |P - P̂| <= ε. ``ends`` holds P and P' at n_T = 0 and at n_T = max_inc (module docstring, "Speed")."""
    prob_0, slope_0, prob_max, slope_max = ends
    a_x = n_x / scale
    below, above = -math.inf, math.inf
    if prob_0 < p_hat - eps - _CERTAIN:
        below = 0.0
    if prob_max > p_hat + eps + _CERTAIN:
        above = max_inc
    # targets an eighth of ε clear of the band's edges, reached to within a sixteenth of ε
    gap = 0.125 * eps + 2.0 * _CERTAIN
    tolerance = 0.0625 * eps
    n_t, prob, slope = -1.0, 0.0, 0.0  # the last evaluation; n_t < 0 while there is none
    for side in range(2):
        target = p_hat - eps - gap if side == 0 else p_hat + eps + gap
        if not prob_0 < target < prob_max:
            continue
        # Newton's safeguard: P(lo) < target < P(hi)
        lo, prob_lo, hi, prob_hi = 0.0, prob_0, max_inc, prob_max
        if n_t < 0.0:  # start from the end nearer the target
            if target - prob_0 < prob_max - target:
                n_t, prob, slope = 0.0, prob_0, slope_0
            else:
                n_t, prob, slope = max_inc, prob_max, slope_max
        elif prob < target:
            lo, prob_lo = n_t, prob
        elif prob > target:
            hi, prob_hi = n_t, prob
        for _ in range(_NEWTON_STEPS):
            if abs(prob - target) <= tolerance:
                break
            step = n_t + (target - prob) * n_x / slope if slope > 0.0 else lo
            if not lo < step < hi:  # outside the bracket: the secant through its ends
                step = lo + (target - prob_lo) / (prob_hi - prob_lo) * (hi - lo)
                if not lo < step < hi:
                    break
            n_t = step
            prob, slope = _prob_and_slope((n_x - n_t) / scale, o, weights, g_y_top, k_lo, a_x, weights[:0])
            if prob < p_hat - eps - _CERTAIN:
                below = max(below, n_t)
            if prob > p_hat + eps + _CERTAIN:
                above = min(above, n_t)
            if prob < target:
                lo, prob_lo = n_t, prob
            else:
                hi, prob_hi = n_t, prob
    return below, above


@njit(cache=True)
def _lookup_one(
    p_hat: float,
    n_x: float,
    n_y: float,
    m: int,
    exact: bool,
    eps: float,
    x_row: np.ndarray,
    y_row: np.ndarray,
    buffer: np.ndarray,
) -> tuple[float, float]:
    """Alg. 2 for one pair with n_x, n_y > 0: (Φ̂, P'(Φ̂)). ``x_row``, ``y_row`` are the load rows of X and Y
    (``_pair_load``), valid over the terms P(0) and the weights need. Bisection midpoints whose side of the
    band is certified are not evaluated (module docstring, "Speed"): every step, and so the result, is as
    Alg. 2 takes it. Under the exact marginal ε is relative to the range of P (module docstring)."""
    scale, o = _pair_load(m, exact)
    a_x = n_x / scale
    k_lo, k_hi = _k_range(x_row, y_row, m)
    weights, g_y_top = _y_weights(y_row, k_lo, k_hi, buffer)
    max_inc = min(n_x, n_y)
    # P(0): disjoint columns (Eq. 6); P̂ at or below it means Φ̂ = 0
    prob_0, slope_0 = _prob_and_slope(a_x, o, weights, g_y_top, k_lo, a_x, x_row)
    prob_max, slope_max = _prob_and_slope((n_x - max_inc) / scale, o, weights, g_y_top, k_lo, a_x, x_row[:0])
    band = eps * (prob_max - prob_0) if exact else eps  # |P - P̂| <= band ends the look-up
    if p_hat <= prob_0 + band:
        return 0.0, slope_0
    if p_hat >= prob_max - band:
        return max_inc / n_x, slope_max
    below, above = _certificates(
        p_hat, band, n_x, max_inc, scale, o, weights, g_y_top, k_lo, (prob_0, slope_0, prob_max, slope_max)
    )
    lo, hi = 0.0, max_inc
    while True:
        n_t = 0.5 * (lo + hi)
        wide = (hi - lo) > eps * n_x
        if wide and n_t <= below:  # P(n_t) < P̂ - ε: Alg. 2 goes on in [n_t, hi]
            lo = n_t
            continue
        if wide and n_t >= above:  # P(n_t) > P̂ + ε: Alg. 2 goes on in [lo, n_t]
            hi = n_t
            continue
        prob, slope = _prob_and_slope((n_x - n_t) / scale, o, weights, g_y_top, k_lo, a_x, x_row[:0])
        if abs(prob - p_hat) <= band or not wide:
            return n_t / n_x, slope
        if prob > p_hat:
            hi = n_t
        else:
            lo = n_t


@njit(cache=True, inline="always")
def _pair_load(m: int, exact: bool) -> tuple[float, int]:
    """(divisor of n, offset o) of a load row: (2^m, 0) for Eq. 9's average load, (1, m) for the exact
    marginal."""
    if exact:
        return 1.0, m
    return float(1 << m), 0


@njit(cache=True)
def _fill_own_rows(
    n_x: float, n_y: float, m: int, exact: bool, x_row: np.ndarray, y_row: np.ndarray, with_x: bool
) -> None:
    """The load rows of one pair over the terms it needs: Y's over [k_lo - 1, k_hi] (the weights), and X's
    over the terms of P(0) when ``with_x``."""
    scale, o = _pair_load(m, exact)
    a_x, a_y = n_x / scale, n_y / scale
    _describe_load(a_x, o, x_row)
    _describe_load(a_y, o, y_row)
    k_lo, k_hi = _k_range(x_row, y_row, m)
    _fill_g(a_y, o, k_lo - 1, k_hi, y_row)
    if with_x:
        _fill_g(a_x, o, max(k_lo, int(x_row[_FIRST_K])), k_hi, x_row)


@njit(cache=True, nogil=True)
def _lookup_range(
    p_hat: np.ndarray,
    n_x: np.ndarray,
    n_y: np.ndarray,
    m: np.ndarray,
    exact: bool,
    eps: float,
    load_rows: np.ndarray,
    x_load: np.ndarray,
    y_load: np.ndarray,
    phi: np.ndarray,
    slope: np.ndarray,
    start: int,
    stop: int,
) -> None:
    """Alg. 2 for pairs start .. stop - 1. With ``x_load`` and ``y_load`` given, rows x_load[i] and y_load[i]
    of ``load_rows`` are the pair's complete load rows; when they are empty, each pair fills its own."""
    buffer = np.empty(HASH_BITS + 2)  # one weights buffer per range of pairs, not per pair
    own_x, own_y = np.empty(_LOAD_ROW), np.empty(_LOAD_ROW)
    shared = x_load.shape[0] > 0
    for i in range(start, stop):
        if n_x[i] <= 0.0 or n_y[i] <= 0.0:
            phi[i], slope[i] = 0.0, 0.0
            continue
        if shared:
            x_row, y_row = load_rows[x_load[i]], load_rows[y_load[i]]
        else:
            x_row, y_row = own_x, own_y
            _fill_own_rows(n_x[i], n_y[i], m[i], exact, x_row, y_row, True)
        phi[i], slope[i] = _lookup_one(p_hat[i], n_x[i], n_y[i], m[i], exact, eps, x_row, y_row, buffer)


@njit(cache=True, parallel=True)
def _lookup_parallel(
    p_hat: np.ndarray,
    n_x: np.ndarray,
    n_y: np.ndarray,
    m: np.ndarray,
    exact: bool,
    eps: float,
    load_rows: np.ndarray,
    x_load: np.ndarray,
    y_load: np.ndarray,
    phi: np.ndarray,
    slope: np.ndarray,
) -> None:
    n = p_hat.shape[0]
    for chunk in prange((n + _CHUNK - 1) // _CHUNK):
        start, stop = chunk * _CHUNK, min(n, (chunk + 1) * _CHUNK)
        _lookup_range(p_hat, n_x, n_y, m, exact, eps, load_rows, x_load, y_load, phi, slope, start, stop)


@njit(cache=True, nogil=True)
def _prob_many(n_t: np.ndarray, n_x: np.ndarray, n_y: np.ndarray, m: np.ndarray, exact: bool) -> np.ndarray:
    out = np.empty(n_t.shape[0])
    buffer, x_row, y_row = np.empty(HASH_BITS + 2), np.empty(_LOAD_ROW), np.empty(_LOAD_ROW)
    for i in range(n_t.shape[0]):
        scale, o = _pair_load(m[i], exact)
        _fill_own_rows(n_x[i], n_y[i], m[i], exact, x_row, y_row, False)
        k_lo, k_hi = _k_range(x_row, y_row, m[i])
        weights, g_y_top = _y_weights(y_row, k_lo, k_hi, buffer)
        a_x = n_x[i] / scale
        out[i] = _prob_and_slope((n_x[i] - n_t[i]) / scale, o, weights, g_y_top, k_lo, a_x, x_row[:0])[0]
    return out


def _as_pair_arrays(*arrays: np.ndarray | float) -> list[np.ndarray]:
    # np.array(copy) rather than np.ascontiguousarray, which would turn 0-d inputs into 1-d
    return [np.array(a, np.float64, order="C") for a in np.broadcast_arrays(*[np.asarray(a) for a in arrays])]


def _is_exact(model: str) -> bool:
    if model not in MODELS:
        raise ValueError(f"unknown bucket model {model!r}; one of {', '.join(MODELS)}")
    return model == EXACT_MARGINAL


def prob_x_le_y(
    n_t: np.ndarray | float,
    n_x: np.ndarray | float,
    n_y: np.ndarray | float,
    m: np.ndarray | int,
    model: str = AVERAGE_LOAD,
) -> np.ndarray:
    """pr(V^X <= V^Y) (Eqs. 6-10 under ``model``) for intersection size n_t, cardinalities n_x, n_y and 2^m
    buckets."""
    n_t, n_x, n_y, m_f = _as_pair_arrays(n_t, n_x, n_y, m)
    args = (n_t.ravel(), n_x.ravel(), n_y.ravel(), m_f.ravel().astype(np.int64), _is_exact(model))
    return _prob_many(*args).reshape(n_t.shape)


def lookup(
    p_hat: np.ndarray | float,
    n_x: np.ndarray | float,
    n_y: np.ndarray | float,
    m: np.ndarray | int,
    eps: float = DEFAULT_TOLERANCE,
    model: str = AVERAGE_LOAD,
) -> tuple[np.ndarray, np.ndarray]:
    """Alg. 2 (Lookup) for many pairs: (Φ̂, P'(Φ̂)), where P'(Φ̂) is the slope dP/dΦ used by Eq. 11."""
    p_hat, n_x, n_y, m_f = _as_pair_arrays(p_hat, n_x, n_y, m)
    each_its_own = (np.zeros((0, _LOAD_ROW)), np.zeros(0, np.int64), np.zeros(0, np.int64))
    arrays = (p_hat.ravel(), n_x.ravel(), n_y.ravel(), m_f.ravel().astype(np.int64))
    phi, slope = _lookup_pairs(*arrays, _is_exact(model), eps, each_its_own)
    return phi.reshape(p_hat.shape), slope.reshape(p_hat.shape)


def _lookup_pairs(
    p_hat: np.ndarray,
    n_x: np.ndarray,
    n_y: np.ndarray,
    m: np.ndarray,
    exact: bool,
    eps: float,
    load_rows: tuple[np.ndarray, np.ndarray, np.ndarray],
) -> tuple[np.ndarray, np.ndarray]:
    """``lookup`` on 1-D float64 arrays (m int64). ``load_rows`` = (rows, x_load, y_load), as
    ``_lookup_range`` takes them, or empty ones."""
    if not eps > 0.0:
        raise ValueError(f"the tolerance ε must be positive, got {eps}")
    phi, slope = np.empty(p_hat.shape[0]), np.empty(p_hat.shape[0])
    if p_hat.shape[0] >= _PARALLEL_MIN_PAIRS:
        _lookup_parallel(p_hat, n_x, n_y, m, exact, eps, *load_rows, phi, slope)
    else:
        _lookup_range(p_hat, n_x, n_y, m, exact, eps, *load_rows, phi, slope, 0, p_hat.shape[0])
    return phi, slope


def choose_buckets_log2(n_x: np.ndarray | float, n_y: np.ndarray | float, p: int) -> np.ndarray:
    """Eq. 12: m = log2(max(n_X, n_Y)) / 2, rounded to the nearest integer and clamped to [0, p]."""
    larger = np.maximum(np.maximum(n_x, n_y), 1.0)
    return np.clip(np.rint(np.log2(larger) / 2.0), 0, p).astype(np.int64)


def probability_error(m: np.ndarray | int, confidence: float = DEFAULT_CONFIDENCE) -> np.ndarray:
    """Theorem 4 solved for e_p: pr(|P̂ - P| <= e_p) >= confidence when e_p = sqrt(ln(2/δ) / 2^(m+1))."""
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    return np.sqrt(np.log(2.0 / (1.0 - confidence)) / np.ldexp(1.0, np.asarray(m) + 1))


def binomial_probability_error(
    p_hat: np.ndarray, m: np.ndarray | int, confidence: float = DEFAULT_CONFIDENCE
) -> np.ndarray:
    """e_p from the variance of P̂ rather than its range: the farther end of the Wilson score interval of
    P̂ = z / 2^m at ``confidence``. Theorem 4 (Hoeffding) allows each bucket the largest variance, 1/4;
    under the exact marginal at m = p most of a small column's buckets are empty and dominated for sure,
    P̂ lies near 1, and the binomial variance P(1 - P) / 2^m is far smaller: the Hoeffding bound of a
    column of 600 values inside one of 3,000 is 0.29 where its error is 0.01. Buckets share the n values
    (a multinomial), which makes them negatively correlated: the binomial variance is an upper bound."""
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    z = NormalDist().inv_cdf(0.5 + confidence / 2.0)
    n = np.ldexp(1.0, np.asarray(m))
    p_hat = np.asarray(p_hat, np.float64)
    center = (p_hat + z * z / (2.0 * n)) / (1.0 + z * z / n)
    half = z / (1.0 + z * z / n) * np.sqrt(p_hat * (1.0 - p_hat) / n + z * z / (4.0 * n * n))
    return np.maximum(center + half - p_hat, p_hat - (center - half))


def inclusion_error_bound(
    slope: np.ndarray,
    m: np.ndarray | int,
    confidence: float = DEFAULT_CONFIDENCE,
    e_p: np.ndarray | None = None,
) -> np.ndarray:
    """Eq. 11: e_Φ = e_p / P'(Φ̂), capped at 1 (Φ lies in [0, 1]); a flat P gives the trivial bound 1. e_p
    is Theorem 4's unless given (``binomial_probability_error``)."""
    m = np.asarray(m)
    if e_p is None:
        e_p = probability_error(np.arange(int(m.max(initial=0)) + 1), confidence)[m]  # a few distinct m
    with np.errstate(divide="ignore", invalid="ignore"):
        bound = np.where(slope > 0, e_p / slope, 1.0)
    return np.minimum(bound, 1.0)


@njit(cache=True, nogil=True)
def _count_dominated_range(
    words: np.ndarray,
    level_start: np.ndarray,
    level_width: np.ndarray,
    level: np.ndarray,
    x_row: np.ndarray,
    y_row: np.ndarray,
    z: np.ndarray,
    start: int,
    stop: int,
) -> None:
    data = words.view(np.uint8)
    for i in range(start, stop):
        width = level_width[level[i]]
        x0 = level_start[level[i]] + x_row[i] * width
        y0 = level_start[level[i]] + y_row[i] * width
        count = 0
        if width % 8 == 0:  # rows start on word boundaries: eight buckets per step
            x_word, y_word = x0 // 8, y0 // 8
            for j in range(width // 8):
                count += dominated_lanes(words[x_word + j], words[y_word + j])
        else:
            for b in range(width):
                count += data[x0 + b] <= data[y0 + b]
        z[i] = count


@njit(cache=True, parallel=True)
def _count_dominated_parallel(
    words: np.ndarray,
    level_start: np.ndarray,
    level_width: np.ndarray,
    level: np.ndarray,
    x_row: np.ndarray,
    y_row: np.ndarray,
    z: np.ndarray,
) -> None:
    n = level.shape[0]
    for chunk in prange((n + _CHUNK - 1) // _CHUNK):
        _count_dominated_range(
            words,
            level_start,
            level_width,
            level,
            x_row,
            y_row,
            z,
            chunk * _CHUNK,
            min(n, (chunk + 1) * _CHUNK),
        )


def _count_dominated(
    words: np.ndarray,
    level_start: np.ndarray,
    level_width: np.ndarray,
    level: np.ndarray,
    x_row: np.ndarray,
    y_row: np.ndarray,
) -> np.ndarray:
    z = np.empty(level.shape[0], dtype=np.int64)
    args = (words, level_start, level_width, level, x_row, y_row, z)
    if level.shape[0] >= _PARALLEL_MIN_PAIRS:
        _count_dominated_parallel(*args)
    else:
        _count_dominated_range(*args, 0, level.shape[0])
    return z


def _word_aligned(n_bytes: int) -> int:
    return -(-n_bytes // 8) * 8


@njit(cache=True, nogil=True)
def _halve(rows: np.ndarray, out: np.ndarray) -> None:
    """Registers at m - 1 from registers at m: ``hll.fold_registers`` by one bit (its proof with p - m = 1).
    Bucket 2j (low bit 0) carries its rho one further; bucket 2j + 1 (low bit 1) gives rho 1 unless empty."""
    for r in range(rows.shape[0]):
        for j in range(out.shape[1]):
            carried = rows[r, 2 * j] + 1 if rows[r, 2 * j] > 0 else 0
            out[r, j] = max(carried, 1 if rows[r, 2 * j + 1] > 0 else 0)


def _register_levels(regs: np.ndarray, used_levels: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The rows of a (columns x 2^p) register matrix at every m in ``used_levels`` (ascending; BML §3.3 keeps
    the sketch of every m), folded by halving from p down, laid level after level in one buffer of words,
    each level starting on a word. Returns (words, level_start in bytes, level_width), both indexed by m."""
    rows, p = regs.shape[0], regs.shape[1].bit_length() - 1
    level_width = np.left_shift(1, np.arange(p + 1, dtype=np.int64))
    level_start = np.zeros(p + 1, dtype=np.int64)
    end = 0
    for m in used_levels:
        level_start[m] = end
        end += _word_aligned(rows * int(level_width[m]))
    words = np.empty(end // 8, dtype=np.uint64)
    data = words.view(np.uint8)
    used = set(used_levels.tolist())
    current = regs
    for m in range(p, int(used_levels[0]) - 1, -1):
        if m < p:
            halved = np.empty((rows, 1 << m), dtype=np.uint8)
            _halve(current, halved)
            current = halved
        if m in used:
            data[level_start[m] : level_start[m] + current.size] = current.ravel()
    return words, level_start, level_width


@dataclass(frozen=True)
class InclusionEstimates:
    """Per pair: Φ̂(X, Y), its error bound e_Φ at ``confidence``, log2 buckets m used, P̂ = z / 2^m."""

    estimate: np.ndarray
    error_bound: np.ndarray
    m: np.ndarray
    p_hat: np.ndarray
    confidence: float


def estimate_inclusion(
    regs: np.ndarray,
    x_idx: np.ndarray,
    y_idx: np.ndarray,
    cardinalities: np.ndarray | None = None,
    confidence: float = DEFAULT_CONFIDENCE,
    eps: float = DEFAULT_TOLERANCE,
    model: str = EXACT_MARGINAL,
) -> InclusionEstimates:
    """BML (Alg. 1) for the pairs (x_idx[j], y_idx[j]) of rows of a (columns x 2^p) register matrix.

    ``cardinalities`` default to the HLL estimates of the rows at precision p. Under ``AVERAGE_LOAD`` (the
    paper's Eq. 9) each pair uses 2^m buckets with m from Eq. 12, the rows folded once to every m some pair
    needs; under ``EXACT_MARGINAL`` every pair uses all 2^p registers (module docstring).
    """
    exact = _is_exact(model)
    regs = np.ascontiguousarray(regs, dtype=np.uint8)
    p = regs.shape[1].bit_length() - 1
    x_idx = np.asarray(x_idx, np.int64)
    y_idx = np.asarray(y_idx, np.int64)
    n = estimate_cardinality(regs) if cardinalities is None else np.asarray(cardinalities, np.float64)
    m = np.full(x_idx.shape[0], p, np.int64) if exact else choose_buckets_log2(n[x_idx], n[y_idx], p)
    used = np.zeros(regs.shape[0], dtype=bool)
    used[x_idx] = True
    used[y_idx] = True
    row_of = np.cumsum(used) - 1  # row of each used column among the used ones
    x_row, y_row = row_of[x_idx], row_of[y_idx]
    z = np.zeros(x_idx.shape[0], dtype=np.int64)
    if x_idx.shape[0] and exact:
        z = dominated_counts(regs if used.all() else regs[used], x_row, y_row)
    elif x_idx.shape[0]:
        used_levels = np.flatnonzero(np.bincount(m, minlength=p + 1))
        words, level_start, level_width = _register_levels(regs if used.all() else regs[used], used_levels)
        z = _count_dominated(words, level_start, level_width, m, x_row, y_row)
    return _estimates(z, x_idx, y_idx, n, m, exact, confidence, eps)


def estimate_from_dominated(
    z: np.ndarray,
    x_idx: np.ndarray,
    y_idx: np.ndarray,
    cardinalities: np.ndarray,
    p: int,
    confidence: float = DEFAULT_CONFIDENCE,
    eps: float = DEFAULT_TOLERANCE,
) -> InclusionEstimates:
    """Alg. 1 lines 7-10 under the exact marginal at m = p, for pairs whose z (lines 3-6: the buckets with
    V^X_i <= V^Y_i of all 2^p) is counted already, as ``dominance.RegisterIndex`` counts it."""
    x_idx, y_idx = np.asarray(x_idx, np.int64), np.asarray(y_idx, np.int64)
    m = np.full(x_idx.shape[0], p, np.int64)
    n = np.asarray(cardinalities, np.float64)
    return _estimates(np.asarray(z, np.int64), x_idx, y_idx, n, m, True, confidence, eps)


def _estimates(
    z: np.ndarray,
    x_idx: np.ndarray,
    y_idx: np.ndarray,
    n: np.ndarray,
    m: np.ndarray,
    exact: bool,
    confidence: float,
    eps: float,
) -> InclusionEstimates:
    """Alg. 1 lines 7-10 (Alg. 2 and the bound) from the dominated-bucket counts z of the pairs."""
    p_hat = z / np.ldexp(1.0, m)
    top = int(m.max()) + 1 if m.shape[0] else 1
    # one load row per (column, m) that some pair uses: P(0) and the weights then take no exp per pair
    uses = np.zeros((n.shape[0], top), dtype=bool)
    uses[x_idx, m] = True
    uses[y_idx, m] = True
    load_of = (np.cumsum(uses) - 1).reshape(uses.shape)
    columns, levels = np.nonzero(uses)
    offsets = levels if exact else np.zeros_like(levels)
    loads = n[columns] / (1.0 if exact else np.ldexp(1.0, levels))
    load_rows = _load_rows(loads, offsets, HASH_BITS + 1 - levels)
    rows = (load_rows, load_of[x_idx, m], load_of[y_idx, m])
    phi, slope = _lookup_pairs(p_hat, n[x_idx], n[y_idx], m, exact, eps, rows)
    e_p = binomial_probability_error(p_hat, m, confidence) if exact else None
    return InclusionEstimates(phi, inclusion_error_bound(slope, m, confidence, e_p), m, p_hat, confidence)
