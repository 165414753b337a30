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

Interpretations. (1) Alg. 2 as printed recurses on [n_T, maxInc] when Prob > P̂; P increases with Φ
(Theorem 2), so that branch must search [minInc, n_T] (and vice versa): implemented the monotone way.
(2) When P̂ lies outside [P(0), P(min(n_X, n_Y))], no n_T reaches it; the MLE is then the nearer end of
the range, returned directly. The bisection also stops once the Φ interval is narrower than ε
(§3.2.2: -ln ε / ln 2 iterations). (3) n_X, n_Y (Alg. 1 lines 8-9) are estimated from the precision-p
registers, the most accurate estimate the sketch holds. (4) Eq. 12 is rounded to the nearest integer and
clamped to [0, p]. (5) Theorem 4 solved for e_p at confidence 1 - δ gives e_p = sqrt(ln(2/δ) / 2^(m+1))
(the paper's example "m = 7, e_p = 0.014" is this e_p squared); Eq. 11 at alpha = Φ̂ with the analytic slope
P'(Φ̂) = (n_X / 2^m) Σ_k -ln(1 - 2^-k) G_Xo(k) [G_Y(k) - G_Y(k-1)] gives e_Φ = e_p / P'(Φ̂), capped at 1.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numba import njit, prange

from lakemeta.sketches.hll import HASH_BITS, estimate_cardinality, fold_registers

DEFAULT_CONFIDENCE = 0.95
DEFAULT_TOLERANCE = 1e-5  # ε of Alg. 2; §3.2.2: 17 iterations for ε = 1e-5
_CHUNK = 256  # pairs per parallel work item
_PARALLEL_MIN_PAIRS = 8 * _CHUNK  # below this, starting the thread pool costs more than it saves
_TRUNCATION_LOG2 = 32.0  # terms dropped from the sum over k weigh at most 2^-32 each side

# ln(1 - 2^-k) for k = 0 .. l + 1 (k = 0 is -inf: (1 - 1)^a = 0 for a > 0, and 1 for a = 0)
_LOG_1M2K = np.array([-np.inf] + [math.log1p(-(2.0**-k)) for k in range(1, HASH_BITS + 2)])


@njit(cache=True, inline="always")
def _g(a: float, k: int) -> float:
    """G(k) = pr(V <= k) = (1 - 2^-k)^a for one bucket with average load a (Eq. 9); G(-1) = 0."""
    if k < 0:
        return 0.0
    if k == 0:
        return 1.0 if a == 0.0 else 0.0
    return math.exp(a * _LOG_1M2K[k])


@njit(cache=True)
def _first_k(a: float) -> int:
    """Smallest k whose G(k) = (1 - 2^-k)^a may exceed 2^-32: G(k - 1) <= exp(-a 2^-(k-1)) <= 2^-32."""
    if a <= 0.0:
        return 0
    return max(0, math.floor(math.log2(a / (_TRUNCATION_LOG2 * math.log(2.0)))) + 1)


@njit(cache=True)
def _k_range(a_x: float, a_y: float, k_max: int) -> tuple[int, int]:
    """[k_lo, k_hi] of the terms that matter (module docstring, truncation)."""
    k_lo = _first_k(a_y)
    spread = math.log2(max(a_x, 1.0)) + math.log2(max(a_y, 1.0))
    k_hi = math.ceil((spread + _TRUNCATION_LOG2) / 2.0)
    return k_lo, max(min(k_hi, k_max), k_lo)


@njit(cache=True)
def _y_weights(a_x: float, a_y: float, m: int, buffer: np.ndarray) -> tuple[np.ndarray, float, int]:
    """pr(V^Y = k) = G_Y(k) - G_Y(k-1) for k in [k_lo, k_hi] (a view of ``buffer``), fixed for a pair;
    also G_Y(k_hi) and k_lo."""
    k_lo, k_hi = _k_range(a_x, a_y, HASH_BITS - m + 1)
    weights = buffer[: k_hi - k_lo + 1]
    previous = _g(a_y, k_lo - 1)
    for j in range(weights.shape[0]):
        current = _g(a_y, k_lo + j)
        weights[j] = current - previous
        previous = current
    return weights, previous, k_lo


@njit(cache=True)
def _prob_and_slope(
    a_xonly: float, weights: np.ndarray, g_y_top: float, k_lo: int, n_x_over_buckets: float
) -> tuple[float, float]:
    """P(n_T) = pr(V^X <= V^Y) (Eqs. 6-10) and dP/dΦ, for G_Xo with load a_xonly; weights[j] holds
    G_Y(k_lo + j) - G_Y(k_lo + j - 1)."""
    prob = 1.0 - g_y_top  # mass above k_hi, where G_Xo ~ 1
    slope = 0.0
    # below _first_k(a_xonly) every G_Xo(k) <= 2^-32: those terms are skipped
    start = max(k_lo, _first_k(a_xonly))
    if start == 0:  # G_Xo(0) = [a_xonly == 0]; its slope term is 0
        if a_xonly == 0.0:
            prob += weights[0]
        start = 1
    for k in range(start, k_lo + weights.shape[0]):
        term = math.exp(a_xonly * _LOG_1M2K[k]) * weights[k - k_lo]
        prob += term
        slope -= _LOG_1M2K[k] * term
    return prob, slope * n_x_over_buckets


@njit(cache=True)
def _lookup_one(
    p_hat: float, n_x: float, n_y: float, m: int, eps: float, buffer: np.ndarray
) -> tuple[float, float]:
    """Alg. 2 for one pair: (Φ̂, P'(Φ̂))."""
    if n_x <= 0.0 or n_y <= 0.0:
        return 0.0, 0.0
    buckets = float(1 << m)
    a_x = n_x / buckets
    weights, g_y_top, k_lo = _y_weights(a_x, n_y / buckets, m, buffer)
    max_inc = min(n_x, n_y)
    # P(0): disjoint columns (Eq. 6); P̂ at or below it means Φ̂ = 0
    prob, slope = _prob_and_slope(a_x, weights, g_y_top, k_lo, a_x)
    if p_hat <= prob + eps:
        return 0.0, slope
    prob, slope = _prob_and_slope((n_x - max_inc) / buckets, weights, g_y_top, k_lo, a_x)
    if p_hat >= prob - eps:
        return max_inc / n_x, slope
    lo, hi = 0.0, max_inc
    while True:
        n_t = 0.5 * (lo + hi)
        prob, slope = _prob_and_slope((n_x - n_t) / buckets, weights, g_y_top, k_lo, a_x)
        if abs(prob - p_hat) <= eps or (hi - lo) <= eps * n_x:
            return n_t / n_x, slope
        if prob > p_hat:
            hi = n_t
        else:
            lo = n_t


@njit(cache=True, nogil=True)
def _lookup_range(
    p_hat: np.ndarray,
    n_x: np.ndarray,
    n_y: np.ndarray,
    m: np.ndarray,
    eps: float,
    phi: np.ndarray,
    slope: np.ndarray,
    start: int,
    stop: int,
) -> None:
    buffer = np.empty(HASH_BITS + 2)  # one weights buffer per range of pairs, not per pair
    for i in range(start, stop):
        phi[i], slope[i] = _lookup_one(p_hat[i], n_x[i], n_y[i], m[i], eps, buffer)


@njit(cache=True, parallel=True)
def _lookup_parallel(
    p_hat: np.ndarray,
    n_x: np.ndarray,
    n_y: np.ndarray,
    m: np.ndarray,
    eps: float,
    phi: np.ndarray,
    slope: np.ndarray,
) -> None:
    n = p_hat.shape[0]
    for chunk in prange((n + _CHUNK - 1) // _CHUNK):
        _lookup_range(p_hat, n_x, n_y, m, eps, phi, slope, chunk * _CHUNK, min(n, (chunk + 1) * _CHUNK))


@njit(cache=True, nogil=True)
def _prob_many(n_t: np.ndarray, n_x: np.ndarray, n_y: np.ndarray, m: np.ndarray) -> np.ndarray:
    out = np.empty(n_t.shape[0])
    buffer = np.empty(HASH_BITS + 2)
    for i in range(n_t.shape[0]):
        buckets = float(1 << m[i])
        a_x = n_x[i] / buckets
        weights, g_y_top, k_lo = _y_weights(a_x, n_y[i] / buckets, m[i], buffer)
        out[i] = _prob_and_slope((n_x[i] - n_t[i]) / buckets, weights, g_y_top, k_lo, a_x)[0]
    return out


def _as_pair_arrays(*arrays: np.ndarray | float) -> list[np.ndarray]:
    # np.array(copy) rather than np.ascontiguousarray, which would turn 0-d inputs into 1-d
    return [np.array(a, np.float64, order="C") for a in np.broadcast_arrays(*[np.asarray(a) for a in arrays])]


def prob_x_le_y(
    n_t: np.ndarray | float, n_x: np.ndarray | float, n_y: np.ndarray | float, m: np.ndarray | int
) -> np.ndarray:
    """pr(V^X <= V^Y) (Eqs. 6-10) for intersection size n_t, cardinalities n_x, n_y and 2^m buckets."""
    n_t, n_x, n_y, m_f = _as_pair_arrays(n_t, n_x, n_y, m)
    return _prob_many(n_t.ravel(), n_x.ravel(), n_y.ravel(), m_f.ravel().astype(np.int64)).reshape(n_t.shape)


def lookup(
    p_hat: np.ndarray | float,
    n_x: np.ndarray | float,
    n_y: np.ndarray | float,
    m: np.ndarray | int,
    eps: float = DEFAULT_TOLERANCE,
) -> tuple[np.ndarray, np.ndarray]:
    """Alg. 2 (Lookup) for many pairs: (Φ̂, P'(Φ̂)), where P'(Φ̂) is the slope dP/dΦ used by Eq. 11."""
    if not eps > 0.0:
        raise ValueError(f"the tolerance ε must be positive, got {eps}")
    p_hat, n_x, n_y, m_f = _as_pair_arrays(p_hat, n_x, n_y, m)
    args = (p_hat.ravel(), n_x.ravel(), n_y.ravel(), m_f.ravel().astype(np.int64), eps)
    phi, slope = np.empty(p_hat.size), np.empty(p_hat.size)
    if p_hat.size >= _PARALLEL_MIN_PAIRS:
        _lookup_parallel(*args, phi, slope)
    else:
        _lookup_range(*args, phi, slope, 0, p_hat.size)
    return phi.reshape(p_hat.shape), slope.reshape(p_hat.shape)


def choose_buckets_log2(n_x: np.ndarray | float, n_y: np.ndarray | float, p: int) -> np.ndarray:
    """Eq. 12: m = log2(max(n_X, n_Y)) / 2, rounded to the nearest integer and clamped to [0, p]."""
    larger = np.maximum(np.maximum(n_x, n_y), 1.0)
    return np.clip(np.rint(np.log2(larger) / 2.0), 0, p).astype(np.int64)


def probability_error(m: np.ndarray | int, confidence: float = DEFAULT_CONFIDENCE) -> np.ndarray:
    """Theorem 4 solved for e_p: pr(|P̂ - P| <= e_p) >= confidence when e_p = sqrt(ln(2/δ) / 2^(m+1))."""
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    return np.sqrt(np.log(2.0 / (1.0 - confidence)) / np.ldexp(1.0, np.asarray(m) + 1))


def inclusion_error_bound(
    slope: np.ndarray, m: np.ndarray | int, confidence: float = DEFAULT_CONFIDENCE
) -> np.ndarray:
    """Eq. 11: e_Φ = e_p / P'(Φ̂), capped at 1 (Φ lies in [0, 1]); a flat P gives the trivial bound 1."""
    e_p = probability_error(m, confidence)
    with np.errstate(divide="ignore", invalid="ignore"):
        bound = np.where(slope > 0, e_p / slope, 1.0)
    return np.minimum(bound, 1.0)


@njit(cache=True, nogil=True)
def _count_dominated_range(
    regs: np.ndarray, x_idx: np.ndarray, y_idx: np.ndarray, z: np.ndarray, start: int, stop: int
) -> None:
    n_buckets = regs.shape[1]
    for i in range(start, stop):
        rx = regs[x_idx[i]]
        ry = regs[y_idx[i]]
        count = 0
        for b in range(n_buckets):
            count += rx[b] <= ry[b]
        z[i] = count


@njit(cache=True, parallel=True)
def _count_dominated_parallel(regs: np.ndarray, x_idx: np.ndarray, y_idx: np.ndarray, z: np.ndarray) -> None:
    n = x_idx.shape[0]
    for chunk in prange((n + _CHUNK - 1) // _CHUNK):
        _count_dominated_range(regs, x_idx, y_idx, z, chunk * _CHUNK, min(n, (chunk + 1) * _CHUNK))


def count_dominated_buckets(regs: np.ndarray, x_idx: np.ndarray, y_idx: np.ndarray) -> np.ndarray:
    """Alg. 1 lines 3-6 for many pairs: z = |{i : V^X_i <= V^Y_i}| for rows x_idx[j], y_idx[j] of ``regs``."""
    regs = np.ascontiguousarray(regs, dtype=np.uint8)
    x_idx, y_idx = np.asarray(x_idx, np.int64), np.asarray(y_idx, np.int64)
    z = np.empty(x_idx.shape[0], dtype=np.int64)
    if x_idx.shape[0] >= _PARALLEL_MIN_PAIRS:
        _count_dominated_parallel(regs, x_idx, y_idx, z)
    else:
        _count_dominated_range(regs, x_idx, y_idx, z, 0, x_idx.shape[0])
    return z


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
) -> InclusionEstimates:
    """BML (Alg. 1) for the pairs (x_idx[j], y_idx[j]) of rows of a (columns x 2^p) register matrix.

    ``cardinalities`` default to the HLL estimates of the rows at precision p. Each pair uses 2^m buckets
    with m from Eq. 12; the matrix is folded once per distinct m.
    """
    regs = np.ascontiguousarray(regs, dtype=np.uint8)
    p = regs.shape[1].bit_length() - 1
    x_idx = np.asarray(x_idx, np.int64)
    y_idx = np.asarray(y_idx, np.int64)
    n = estimate_cardinality(regs) if cardinalities is None else np.asarray(cardinalities, np.float64)
    n_x, n_y = n[x_idx], n[y_idx]
    m = choose_buckets_log2(n_x, n_y, p)
    z = np.zeros(x_idx.shape[0], dtype=np.int64)
    for m_value in np.unique(m):
        pairs = np.flatnonzero(m == m_value)
        columns, local = np.unique(np.concatenate((x_idx[pairs], y_idx[pairs])), return_inverse=True)
        folded = fold_registers(regs[columns], p, int(m_value))
        z[pairs] = count_dominated_buckets(folded, local[: pairs.size], local[pairs.size :])
    p_hat = z / np.ldexp(1.0, m)
    phi, slope = lookup(p_hat, n_x, n_y, m, eps)
    return InclusionEstimates(phi, inclusion_error_bound(slope, m, confidence), m, p_hat, confidence)
