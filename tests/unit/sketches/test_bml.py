import itertools
import math

import numpy as np
import pytest

from lakemeta.sketches.bml import (
    AVERAGE_LOAD,
    EXACT_MARGINAL,
    MODELS,
    binomial_probability_error,
    choose_buckets_log2,
    estimate_inclusion,
    inclusion_error_bound,
    lookup,
    prob_x_le_y,
    probability_error,
)
from lakemeta.sketches.dominance import dominated_counts
from lakemeta.sketches.hll import counter_delta, estimate_cardinality, fold_registers, registers


def paper_prob(n_x: float, n_y: float, n_t: float, m: int, ell: int = 64) -> float:
    """pr(V^X <= V^Y) exactly as printed: Alg. 2 lines 4-7 choosing Eq. 6, 7 or 8, with Eqs. 9-10."""
    buckets = 2.0**m

    def le(n: float, k: int) -> float:  # Eq. 9
        return 0.0 if k < 0 else (1.0 - 2.0**-k) ** (n / buckets)

    def eq(n: float, k: int) -> float:  # Eq. 10
        return le(n, k) - le(n, k - 1)

    x_only, y_only = n_x - n_t, n_y - n_t
    if n_t == n_x and n_t == n_y:
        return 1.0
    total = 0.0
    for k in range(ell - m + 1):
        if n_t == 0:  # Eq. 6
            total += le(n_x, k) * eq(n_y, k)
        elif n_x > n_y and n_t == n_y:  # Eq. 7
            total += le(x_only, k) * eq(n_t, k)
        else:  # Eq. 8
            total += (
                le(x_only, k) * le(n_t, k - 1) * eq(y_only, k)
                + le(x_only, k) * eq(n_t, k) * le(y_only, k - 1)
                + le(x_only, k) * eq(n_t, k) * eq(y_only, k)
            )
    return total


def test_probability_kernel_equals_equations_6_to_10_as_printed() -> None:
    for n_x, n_y, m in itertools.product([1, 10, 1000, 50_000], [1, 7, 1000, 300_000], [0, 3, 7, 12]):
        for frac in (0.0, 0.25, 0.5, 0.9, 1.0):
            n_t = round(frac * min(n_x, n_y))
            assert prob_x_le_y(n_t, n_x, n_y, m) == pytest.approx(paper_prob(n_x, n_y, n_t, m), abs=1e-8)


def exact_marginal_prob(n_x: float, n_y: float, n_t: float, m: int, ell: int = 64) -> float:
    """pr(V^X <= V^Y) = sum_k pr(V^Xo <= k) pr(V^Y = k) with each bucket's exact marginal
    pr(V^S <= k) = (1 - 2^-(m+k))^|S| (k >= 0), written out directly."""

    def le(n: float, k: int) -> float:
        return 0.0 if k < 0 else (1.0 - 2.0 ** -(m + k)) ** n

    return sum(le(n_x - n_t, k) * (le(n_y, k) - le(n_y, k - 1)) for k in range(ell - m + 2))


def test_exact_marginal_kernel_equals_its_formula() -> None:
    for n_x, n_y, m in itertools.product([1, 12, 1000, 50_000], [1, 7, 1000, 300_000], [0, 3, 7, 14]):
        for frac in (0.0, 0.25, 0.5, 0.9, 1.0):
            n_t = round(frac * min(n_x, n_y))
            kernel = prob_x_le_y(n_t, n_x, n_y, m, EXACT_MARGINAL)
            assert kernel == pytest.approx(exact_marginal_prob(n_x, n_y, n_t, m), abs=1e-8)


def test_exact_marginal_is_the_mean_fraction_of_dominated_buckets() -> None:
    # P̂ = z / 2^m is unbiased for P(n_T) under the exact marginal, whatever the sizes (Eq. 9 is not:
    # it has no empty buckets)
    rng = np.random.default_rng(8)
    for n_x, n_y, n_t in [(12, 12, 6), (3, 40, 3), (12, 5000, 0), (20_000, 20_000, 10_000)]:
        fractions = []
        for _ in range(40):
            shared = rng.integers(0, 2**64, n_t, dtype=np.uint64)
            x = _registers(np.concatenate([shared, rng.integers(0, 2**64, n_x - n_t, dtype=np.uint64)]))
            y = _registers(np.concatenate([shared, rng.integers(0, 2**64, n_y - n_t, dtype=np.uint64)]))
            fractions.append(np.mean(x <= y))
        expected = float(prob_x_le_y(n_t, n_x, n_y, 14, EXACT_MARGINAL))
        spread = np.std(fractions) / np.sqrt(len(fractions))
        assert abs(np.mean(fractions) - expected) <= 4 * spread + 1e-6


def test_exact_marginal_is_accurate_where_eq_9_is_not() -> None:
    # small columns: Eq. 12 folds 12 values into 2 buckets; all 2^14 registers tell them apart
    rng = np.random.default_rng(9)
    regs, truth = [], []
    for n_x, n_y in [(3, 3), (12, 12), (12, 1000), (1000, 1000), (100_000, 100_000)]:
        for phi in (0.0, 0.5, 1.0):
            for _ in range(8):
                n_t = round(phi * n_x)
                values = [rng.integers(0, 2**64, n, dtype=np.uint64) for n in (n_t, n_x - n_t, n_y - n_t)]
                shared = _registers(values[0])
                regs += [np.maximum(shared, _registers(values[1])), np.maximum(shared, _registers(values[2]))]
                truth.append(n_t / n_x)
    pairs = np.arange(len(truth))
    estimates = {
        model: estimate_inclusion(np.stack(regs), 2 * pairs, 2 * pairs + 1, model=model) for model in MODELS
    }
    error = {model: np.abs(estimates[model].estimate - truth) for model in MODELS}
    assert error[EXACT_MARGINAL].mean() < 0.02 < 0.1 < error[AVERAGE_LOAD].mean()
    small = np.arange(len(truth)) < 2 * 3 * 8  # the pairs of 3 and 12 values
    assert error[EXACT_MARGINAL][small].max() < 0.01


def test_probability_matches_the_papers_figure_2() -> None:
    # |X| = |Y| = 10^4, one bucket: P(0) ~ 0.58 (Eq. 6 example), P(1) = 1, P(0.62) ~ 0.8
    p = prob_x_le_y(np.array([0, 6200, 10_000]), 1e4, 1e4, 0)
    assert p[0] == pytest.approx(0.58, abs=0.01)
    assert p[1] == pytest.approx(0.8, abs=0.02)
    assert p[2] == pytest.approx(1.0, abs=1e-9)


def test_probability_increases_with_intersection_theorem_2() -> None:
    for n_x, n_y, m in [(1e4, 1e4, 7), (1e3, 1e4, 7), (1e4, 1e3, 7), (50, 20, 3), (1e5, 1e5, 8)]:
        n_t = np.linspace(0, min(n_x, n_y), 200)
        p = prob_x_le_y(n_t, n_x, n_y, m)
        assert np.all(np.diff(p) > 0)


GRID = [(1e4, 1e4, 7), (1e3, 1e4, 7), (1e4, 1e3, 7), (100, 100, 3), (20, 5000, 6), (3e5, 3e5, 9)]


@pytest.mark.parametrize("n_x, n_y, m", GRID)
def test_lookup_inverts_the_probability_within_tolerance(n_x: float, n_y: float, m: int) -> None:
    phi = np.linspace(0.0, min(n_x, n_y) / n_x, 41)
    p = prob_x_le_y(phi * n_x, n_x, n_y, m)
    eps = 1e-6
    phi_hat, _ = lookup(p, n_x, n_y, m, eps)
    # Alg. 2 stops when |Prob - P̂| <= ε (or the Φ interval is below ε wide)
    reached = np.abs(prob_x_le_y(phi_hat * n_x, n_x, n_y, m) - p) <= eps
    assert np.all(reached | (np.abs(phi_hat - phi) <= 1e-6))
    assert phi_hat[0] == 0.0 and phi_hat[-1] == pytest.approx(phi[-1])


def test_lookup_returns_range_ends_when_p_hat_is_unreachable() -> None:
    p0 = float(prob_x_le_y(0, 1e4, 1e4, 7))
    phi, _ = lookup(np.array([0.0, p0 - 0.1, 1.0]), 1e4, 1e4, 7)
    assert phi.tolist() == [0.0, 0.0, 1.0]
    # X larger than Y: Φ cannot exceed n_Y / n_X
    phi, _ = lookup(1.0, 1e4, 1e3, 7)
    assert phi == pytest.approx(0.1)
    phi, slope = lookup(0.7, 0.0, 1e3, 7)
    assert phi == 0.0 and slope == 0.0
    with pytest.raises(ValueError):
        lookup(0.7, 1e3, 1e3, 7, eps=0.0)


@pytest.mark.parametrize("n_x, n_y, m", GRID)
def test_slope_is_the_derivative_of_the_probability(n_x: float, n_y: float, m: int) -> None:
    phi = np.linspace(0.05, 0.95, 10) * min(n_x, n_y) / n_x
    p = prob_x_le_y(phi * n_x, n_x, n_y, m)
    phi_hat, slope = lookup(p, n_x, n_y, m, 1e-9)
    h = 1e-4
    numeric = (
        prob_x_le_y((phi_hat + h) * n_x, n_x, n_y, m) - prob_x_le_y((phi_hat - h) * n_x, n_x, n_y, m)
    ) / (2 * h)
    assert np.allclose(slope, numeric, rtol=1e-4, atol=1e-7)


def test_dominated_counts_matches_brute_force() -> None:
    rng = np.random.default_rng(2)
    regs = rng.integers(0, 12, (30, 256)).astype(np.uint8)
    x, y = rng.integers(0, 30, 500), rng.integers(0, 30, 500)
    assert np.array_equal(dominated_counts(regs, x, y), (regs[x] <= regs[y]).sum(axis=1))


def test_choose_buckets_log2_is_equation_12() -> None:
    m = choose_buckets_log2(np.array([1e4, 10, 2.0**20, 2.0**40, 0.0]), np.array([10, 1e4, 1, 5, 0.0]), 14)
    assert m.tolist() == [7, 7, 10, 14, 0]


def test_probability_error_solves_theorem_4() -> None:
    for m, confidence in [(7, 0.95), (3, 0.99), (14, 0.9)]:
        e_p = float(probability_error(m, confidence))
        assert 1 - 2 * math.exp(-(2 ** (m + 1)) * e_p**2) == pytest.approx(confidence)
    assert float(probability_error(7)) ** 2 == pytest.approx(0.0144, abs=1e-4)  # the paper's "0.014"
    with pytest.raises(ValueError):
        probability_error(7, 1.0)


def test_the_binomial_error_of_p_hat_covers_its_confidence_and_shrinks_near_one() -> None:
    rng = np.random.default_rng(21)
    m, trials = 10, 4000
    for p in (0.5, 0.9, 0.99, 0.999):
        p_hat = rng.binomial(2**m, p, trials) / 2**m
        covered = np.abs(p_hat - p) <= binomial_probability_error(p_hat, m)
        assert covered.mean() >= 0.93, p  # a Wilson interval at 95 %
    hoeffding = float(probability_error(m))
    errors = binomial_probability_error(np.array([0.5, 0.99, 1.0]), m)
    assert errors[0] <= hoeffding and errors[1] < hoeffding / 3 and 0.0 < errors[2] < errors[1]
    with pytest.raises(ValueError):
        binomial_probability_error(np.array([0.5]), m, 1.0)


def test_error_bound_is_equation_11_capped_at_one() -> None:
    e_p = float(probability_error(7))
    bounds = inclusion_error_bound(np.array([0.7, 0.01, 0.0]), 7)
    assert bounds.tolist() == pytest.approx([e_p / 0.7, 1.0, 1.0])


def _registers(hashes: np.ndarray) -> np.ndarray:
    return registers(counter_delta(hashes))


def _overlap_cases() -> list[tuple[int, int, float]]:
    sizes = [(10, 10), (10, 1000), (1000, 10), (100, 100), (100, 10_000), (1000, 1000), (1000, 100_000)]
    sizes += [(10_000, 10_000), (10_000, 100), (100_000, 100_000), (100_000, 5000)]
    return [(nx, ny, phi) for nx, ny in sizes for phi in (0.0, 0.5, 0.9, 1.0)]


@pytest.mark.parametrize("model", MODELS)
def test_bml_estimate_lies_within_its_error_bound_at_the_stated_confidence(model: str) -> None:
    rng = np.random.default_rng(2024)
    trials = 6
    regs, truth, case_of = [], [], []
    for case, (nx, ny, phi) in enumerate(_overlap_cases()):
        nt = min(round(phi * nx), ny)
        for _ in range(trials):
            shared = _registers(rng.integers(0, 2**64, nt, dtype=np.uint64))
            regs.append(np.maximum(shared, _registers(rng.integers(0, 2**64, nx - nt, dtype=np.uint64))))
            regs.append(np.maximum(shared, _registers(rng.integers(0, 2**64, ny - nt, dtype=np.uint64))))
            truth.append(nt / nx)
            case_of.append(case)
    pairs = np.arange(len(truth))
    for confidence in (0.95, 0.8):
        res = estimate_inclusion(np.stack(regs), 2 * pairs, 2 * pairs + 1, confidence=confidence, model=model)
        truth_a = np.array(truth)
        covered = np.abs(res.estimate - truth_a) <= res.error_bound
        assert covered.mean() >= confidence - 0.02
        assert np.all((res.estimate >= 0) & (res.estimate <= 1))
    # the bound is informative where both columns are large and alike, and the estimate is accurate there
    res = estimate_inclusion(np.stack(regs), 2 * pairs, 2 * pairs + 1, model=model)
    case_of = np.array(case_of)
    large_alike = np.isin(case_of, [i for i, c in enumerate(_overlap_cases()) if c[0] == c[1] >= 10_000])
    assert res.error_bound[large_alike].mean() < 0.3
    assert np.abs(res.estimate - truth_a)[large_alike].mean() < 0.06
    # exact containment: every bucket satisfies V^X <= V^Y, so P̂ = 1 and Φ̂ reaches its maximum
    full = np.array(truth) == 1.0
    assert np.all(res.p_hat[full] == 1.0) and np.all(res.estimate[full] == 1.0)


def _prefix_registers(hashes: np.ndarray, lengths: list[int]) -> dict[int, np.ndarray]:
    """Registers of hashes[:n] for every n in ``lengths``, each value hashed into the counters once."""
    out, regs, done = {}, np.zeros(1 << 14, np.uint8), 0
    for n in sorted(set(lengths)):
        if n > done:
            regs = np.maximum(regs, _registers(hashes[done:n]))
            done = n
        out[n] = regs
    return out


SKEWED_SIZES = [(10**6, 10**6), (10**6, 10**4), (10**4, 10**6), (10, 10**6), (10**6, 10), (10**4, 10**4)]
SKEWED_PHIS = (0.0, 0.5, 0.9, 1.0)


@pytest.mark.parametrize("model", MODELS)
def test_bml_bound_holds_for_cardinalities_from_10_to_a_million_and_skewed_ratios(model: str) -> None:
    # per trial and size pair, one pool each of shared, X-only and Y-only values serves every Φ
    rng = np.random.default_rng(2025)
    trials = 16
    regs, truth, size_of = [], [], []
    for size, (nx, ny) in enumerate(SKEWED_SIZES):
        shared_n = {phi: min(round(phi * nx), ny) for phi in SKEWED_PHIS}
        for _ in range(trials):
            pools = [rng.integers(0, 2**64, n, dtype=np.uint64) for n in (min(nx, ny), nx, ny)]
            shared = _prefix_registers(pools[0], list(shared_n.values()))
            x_only = _prefix_registers(pools[1], [nx - nt for nt in shared_n.values()])
            y_only = _prefix_registers(pools[2], [ny - nt for nt in shared_n.values()])
            for nt in shared_n.values():
                regs += [np.maximum(shared[nt], x_only[nx - nt]), np.maximum(shared[nt], y_only[ny - nt])]
                truth.append(nt / nx)
                size_of.append(size)
    regs_a, truth_a, size_of_a = np.stack(regs), np.array(truth), np.array(size_of)
    pairs = np.arange(truth_a.size)
    for confidence in (0.95, 0.8):
        res = estimate_inclusion(regs_a, 2 * pairs, 2 * pairs + 1, confidence=confidence, model=model)
        error = np.abs(res.estimate - truth_a)
        assert (error <= res.error_bound).mean() >= confidence
        informative = res.error_bound < 1.0
        assert informative.sum() >= 2 * trials * len(SKEWED_PHIS)
        assert (error <= res.error_bound)[informative].mean() >= confidence
    # large and alike: a tight bound; X far smaller than Y: P barely moves with Φ, the estimate cannot tell
    # (e.g. 10 values inside a million read as disjoint) and the bound says so by being trivial
    res = estimate_inclusion(regs_a, 2 * pairs, 2 * pairs + 1, model=model)
    error = np.abs(res.estimate - truth_a)
    large = size_of_a == SKEWED_SIZES.index((10**6, 10**6))
    assert res.error_bound[large].max() < 0.2 and error[large].mean() < 0.03
    tiny_in_huge = size_of_a == SKEWED_SIZES.index((10, 10**6))
    assert error[tiny_in_huge].max() > 0.5 and np.all(res.error_bound[tiny_in_huge] == 1.0)


def test_estimate_inclusion_uses_given_cardinalities_and_handles_empty_columns() -> None:
    rng = np.random.default_rng(6)
    shared = rng.integers(0, 2**64, 4000, dtype=np.uint64)
    x = _registers(shared)
    y = _registers(np.concatenate([shared, rng.integers(0, 2**64, 4000, dtype=np.uint64)]))
    empty = np.zeros_like(x)
    regs = np.stack([x, y, empty])
    res = estimate_inclusion(regs, [0, 1, 2, 0], [1, 0, 0, 2], model=AVERAGE_LOAD)
    assert res.m.tolist() == [6, 6, 6, 6]  # Eq. 12 with max cardinality ~8000 (4000 for the empty pairs)
    assert res.estimate[0] == 1.0
    assert res.estimate[1] == pytest.approx(0.5, abs=0.25)
    assert res.estimate[2] == 0.0 and res.error_bound[2] == 1.0
    assert res.estimate[3] == 0.0
    given = estimate_inclusion(regs, [1], [0], np.array([4000.0, 8000.0, 0.0]), model=AVERAGE_LOAD)
    phi, slope = lookup(res.p_hat[1], 8000.0, 4000.0, 6)
    assert given.estimate[0] == pytest.approx(float(phi))
    assert given.error_bound[0] == pytest.approx(float(inclusion_error_bound(slope, 6)))


def plain_bisection(
    p_hat: np.ndarray, n_x: np.ndarray, n_y: np.ndarray, m: np.ndarray, eps: float, model: str
) -> np.ndarray:
    """Φ̂ of Alg. 2 as the module describes it (ends first, then every midpoint evaluated), for many pairs;
    under the exact marginal ε is relative to the range of P."""
    max_inc, base_eps = np.minimum(n_x, n_y), eps
    phi = np.full(p_hat.shape, np.nan)
    prob_0, prob_max = prob_x_le_y(0.0, n_x, n_y, m, model), prob_x_le_y(max_inc, n_x, n_y, m, model)
    eps = eps * (prob_max - prob_0) if model == EXACT_MARGINAL else np.full(p_hat.shape, eps)
    at_zero = p_hat <= prob_0 + eps
    at_max = ~at_zero & (p_hat >= prob_max - eps)
    phi[at_zero] = 0.0
    phi[at_max] = max_inc[at_max] / n_x[at_max]
    lo, hi = np.zeros(p_hat.shape), max_inc.copy()
    open_ = np.flatnonzero(~at_zero & ~at_max)
    while open_.size:
        n_t = 0.5 * (lo[open_] + hi[open_])
        prob = prob_x_le_y(n_t, n_x[open_], n_y[open_], m[open_], model)
        narrow = (hi[open_] - lo[open_]) <= base_eps * n_x[open_]
        done = (np.abs(prob - p_hat[open_]) <= eps[open_]) | narrow
        phi[open_[done]] = n_t[done] / n_x[open_[done]]
        above = prob > p_hat[open_]
        hi[open_[~done & above]] = n_t[~done & above]
        lo[open_[~done & ~above]] = n_t[~done & ~above]
        open_ = open_[~done]
    return phi


@pytest.mark.parametrize("model", MODELS)
@pytest.mark.parametrize("eps", [1e-5, 1e-3, 1e-9])
def test_lookup_takes_every_step_of_the_plain_bisection(eps: float, model: str) -> None:
    # the certified bisection skips evaluations, never a decision: Φ̂ is bit for bit the plain one
    rng = np.random.default_rng(11)
    k = 20_000
    n_x, n_y = np.rint(10 ** rng.uniform(0, 7, k)), np.rint(10 ** rng.uniform(0, 7, k))
    m = np.where(rng.random(k) < 0.8, choose_buckets_log2(n_x, n_y, 14), rng.integers(0, 15, k))
    phi = np.where(rng.random(k) < 0.2, 0.0, rng.random(k)) * np.minimum(n_x, n_y) / n_x
    p_true = prob_x_le_y(phi * n_x, n_x, n_y, m, model)
    p_hat = rng.binomial(np.left_shift(1, m), np.clip(p_true, 0.0, 1.0)) / np.ldexp(1.0, m)
    p_hat = np.where(rng.random(k) < 0.1, rng.random(k), p_hat)  # P̂ anywhere, the range ends included
    estimate, _ = lookup(p_hat, n_x, n_y, m, eps, model)
    assert np.array_equal(estimate, plain_bisection(p_hat, n_x, n_y, m.astype(np.int64), eps, model))


@pytest.mark.parametrize("model", MODELS)
def test_estimate_inclusion_equals_lookup_on_its_own_p_hat(model: str) -> None:
    # estimate_inclusion shares per-(column, m) load rows between pairs; lookup fills them per pair
    rng = np.random.default_rng(12)
    universe = rng.integers(0, 2**64, 400_000, dtype=np.uint64)
    sizes = np.rint(10 ** rng.uniform(0.5, 5.3, 40)).astype(np.int64)
    starts = rng.integers(0, universe.size - sizes)
    regs = np.stack([_registers(universe[s : s + n]) for s, n in zip(starts, sizes, strict=True)])
    x, y = (a.ravel() for a in np.meshgrid(np.arange(40), np.arange(40), indexing="ij"))
    res = estimate_inclusion(regs, x, y, model=model)
    n = estimate_cardinality(regs)
    phi, slope = lookup(res.p_hat, n[x], n[y], res.m, model=model)
    assert np.array_equal(res.estimate, phi)
    e_p = binomial_probability_error(res.p_hat, res.m) if model == EXACT_MARGINAL else None
    assert np.array_equal(res.error_bound, inclusion_error_bound(slope, res.m, e_p=e_p))
    # z at every m, the precision p itself included (huge given cardinalities), with rows no pair uses
    some = (x < 30) & (y < 30) & (rng.random(x.size) < 0.3)
    huge = np.where(np.arange(40) % 2, 2.0**30, n)
    subset = estimate_inclusion(regs, x[some], y[some], huge, model=model)
    assert 14 in subset.m.tolist()
    for run, x_used, y_used in ((res, x, y), (subset, x[some], y[some])):
        folded = {m_value: fold_registers(regs, 14, m_value) for m_value in np.unique(run.m)}
        pairs = zip(x_used, y_used, run.m, strict=True)
        z = np.array([(folded[m_value][a] <= folded[m_value][b]).sum() for a, b, m_value in pairs])
        assert np.array_equal(run.p_hat, z / np.ldexp(1.0, run.m))


def test_dominated_counts_compares_unsigned_bytes_of_any_row_width() -> None:
    rng = np.random.default_rng(3)
    for width in (1, 4, 8, 13, 64):
        regs = rng.integers(0, 256, (20, width)).astype(np.uint8)
        regs[:, : width // 2] = np.minimum(regs[:, : width // 2], 3)  # ties and near-ties too
        x, y = rng.integers(0, 20, 300), rng.integers(0, 20, 300)
        assert np.array_equal(dominated_counts(regs, x, y), (regs[x] <= regs[y]).sum(axis=1))
