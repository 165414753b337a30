import math

import numpy as np
import pyarrow as pa
import pytest

from lakemeta.hashing import hash_strings
from lakemeta.reference.bottomk import (
    bottom_k,
    equal_memory_k,
    from_bytes,
    inclusion_estimates,
    merge,
    pack,
    to_bytes,
    update,
)


def brute_estimate(f: np.ndarray, p: np.ndarray, k: int) -> float:
    """Zhang et al. §2 written plainly: U = k smallest of the union of the samples, |U&F&P| / |U&F|."""
    sf, sp = set(f.tolist()), set(p.tolist())
    union = sorted(sf | sp)[:k]
    in_f = [h for h in union if h in sf]
    return sum(h in sp for h in in_f) / len(in_f) if in_f else math.nan


def test_equal_memory_k_matches_the_paper() -> None:
    assert equal_memory_k(14) == 1536  # BML §5.1 / Fig. 16 caption
    assert equal_memory_k(9) == 48


def test_bottom_k_update_and_merge_equal_brute_force() -> None:
    rng = np.random.default_rng(1)
    a = rng.integers(0, 2**64, 3000, dtype=np.uint64)
    b = np.concatenate([rng.integers(0, 2**64, 2000, dtype=np.uint64), a[:500]])
    k = 256
    assert bottom_k(a, k).tolist() == sorted(set(a.tolist()))[:k]
    incremental = bottom_k(a[:100], k)
    for batch in np.array_split(np.concatenate([a[100:], a[:50]]), 7):
        incremental = update(incremental, batch, k)
    assert np.array_equal(incremental, bottom_k(a, k))
    union = sorted(set(a.tolist()) | set(b.tolist()))[:k]
    assert merge(bottom_k(a, k), bottom_k(b, k), k).tolist() == union
    with pytest.raises(ValueError):
        bottom_k(a, 0)


def test_estimator_kernel_equals_plain_formula() -> None:
    rng = np.random.default_rng(2)
    pool = rng.integers(0, 2**64, 400, dtype=np.uint64)
    k = 40
    sketches = [bottom_k(rng.choice(pool, int(rng.integers(1, 300))), k) for _ in range(25)]
    values, offsets = pack(sketches)
    f, p = rng.integers(0, 25, 300), rng.integers(0, 25, 300)
    got = inclusion_estimates(values, offsets, f, p, k)
    expected = [brute_estimate(sketches[i], sketches[j], k) for i, j in zip(f, p, strict=True)]
    assert np.allclose(got, expected, equal_nan=True)


def test_exact_when_sets_fit_in_the_sketch() -> None:
    values = [f"id-{i}" for i in range(600)]
    f_vals, p_vals = values[:400], values[250:]
    hf, _ = hash_strings(pa.array(f_vals))
    hp, _ = hash_strings(pa.array(p_vals))
    k = equal_memory_k(14)
    est = inclusion_estimates(*pack([bottom_k(hf, k), bottom_k(hp, k)]), [0, 1], [1, 0], k)
    assert est.tolist() == pytest.approx([150 / 400, 150 / 350])


@pytest.mark.parametrize("n_f, n_p, sigma", [(20_000, 20_000, 0.5), (5000, 50_000, 0.9), (30_000, 3000, 0.1)])
def test_estimate_close_to_exact_on_known_overlaps(n_f: int, n_p: int, sigma: float) -> None:
    rng = np.random.default_rng(n_f + n_p)
    k = 1536
    n_shared = round(sigma * n_f)
    errors = []
    for _ in range(5):
        shared = rng.integers(0, 2**64, n_shared, dtype=np.uint64)
        f = np.concatenate([shared, rng.integers(0, 2**64, n_f - n_shared, dtype=np.uint64)])
        p = np.concatenate([shared, rng.integers(0, 2**64, n_p - n_shared, dtype=np.uint64)])
        est = inclusion_estimates(*pack([bottom_k(f, k), bottom_k(p, k)]), [0], [1], k)[0]
        errors.append(est - sigma)
    # sigma_hat is a proportion over the ~k |F| / |F | P| sampled values of F
    sampled_f = k * n_f / (n_f + n_p - n_shared)
    sd = math.sqrt(sigma * (1 - sigma) / sampled_f)
    assert np.all(np.abs(errors) <= 4 * sd)


def test_undefined_estimate_is_nan_and_many_pairs_run_in_parallel() -> None:
    k = 4
    f = np.array([2**63 + 1, 2**63 + 2], np.uint64)
    p = np.array([1, 2, 3, 4], np.uint64)
    values, offsets = pack([f, p])
    assert math.isnan(inclusion_estimates(values, offsets, [0], [1], k)[0])
    many = inclusion_estimates(values, offsets, np.ones(5000, np.int64), np.zeros(5000, np.int64), k)
    assert np.all(many == 0.0)  # U = P's 4 hashes, all of P, none in F


def test_serialisation_round_trip() -> None:
    sketch = bottom_k(np.random.default_rng(3).integers(0, 2**64, 5000, dtype=np.uint64), 1536)
    restored, k = from_bytes(to_bytes(sketch, 1536))
    assert k == 1536 and np.array_equal(restored, sketch)
    with pytest.raises(ValueError):
        from_bytes(b"XXXX" + to_bytes(sketch, 1536)[4:])
