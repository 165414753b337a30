"""Throughput of the BML estimator (BML §3, Alg. 1-2, Eq. 12) beside Zhang et al.'s bottom-k estimator.

Columns: a few hundred, with distinct counts log-uniform in [10, 10^6], each a window of one pool of random
64-bit hashes, so that pairs overlap by every amount from none to full containment. Each column gets HLL
registers at p = 14 (from its counters, ``lakemeta.sketches.hll``) and a bottom-k sketch at the equal-memory
k = equal_memory_k(14) = 1536 (BML §5.1). Timed over all ordered pairs (x != y), after a warm-up call that
compiles the numba kernels:

* ``bml``: ``estimate_inclusion`` as the paper specifies it (average load, Eq. 9; folding to each pair's m
  by Eq. 12, z counting, look-up, error bound) with the cardinalities given;
* ``bml_with_cardinalities``: the same call left to estimate the cardinalities from the registers itself;
* ``exact_marginal``: ``estimate_inclusion`` with every bucket's exact marginal at m = p, on every pair;
* ``exact_marginal_lake``: what the inclusion step runs: ``dominance.RegisterIndex`` (the pairs with a
  dominated register, each column its own table) and ``estimate_from_dominated``, per ordered pair;
* ``bottom_k``: ``bottomk.inclusion_estimates`` on the same pairs (the baseline, same run).

Each figure is the median of several runs; wall time gives pairs per second on this machine, process CPU
time (both threads) shows how much of the wall time other processes took. The window arithmetic gives the
exact Φ of every pair, so the mean absolute error of both estimators is reported as a sanity check.
Issue target: 10^6 pairs per second; the paper reports 0.03 ms per pair (§5.2.1, Real-3, 6 cores).

    .venv/bin/python bench/bml_estimation.py [--quick] [--columns N] [--runs R]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import time
from collections.abc import Callable
from pathlib import Path

import numba
import numpy as np

from lakemeta.reference import bottomk
from lakemeta.sketches.bml import AVERAGE_LOAD, EXACT_MARGINAL, estimate_from_dominated, estimate_inclusion
from lakemeta.sketches.dominance import RegisterIndex
from lakemeta.sketches.hll import DEFAULT_PRECISION, counter_delta, estimate_cardinality, registers

RESULTS = Path(__file__).resolve().parent / "results"
TARGET_PAIRS_PER_SECOND = 1e6
PAPER_MS_PER_PAIR = 0.03


def make_columns(n_columns: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(pool of hashes, window starts, window sizes): column i is pool[start_i : start_i + size_i]."""
    rng = np.random.default_rng(seed)
    sizes = np.rint(10 ** rng.uniform(1.0, 6.0, n_columns)).astype(np.int64)
    pool = rng.integers(0, 2**64, 3 * 10**6, dtype=np.uint64)  # windows of 10^6 overlap often in 3 * 10^6
    starts = rng.integers(0, pool.size - sizes)
    return pool, starts, sizes


def exact_inclusion(starts: np.ndarray, sizes: np.ndarray, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Φ(X, Y) = |X ∩ Y| / |X| of windows of a pool of distinct hashes: the overlap of the windows."""
    ends = starts + sizes
    overlap = np.maximum(0, np.minimum(ends[x], ends[y]) - np.maximum(starts[x], starts[y]))
    return overlap / sizes[x]


def timed(run: Callable[[], object], runs: int) -> dict[str, object]:
    wall, cpu = [], []
    for _ in range(runs):
        wall_start, cpu_start = time.perf_counter(), time.process_time()
        run()
        wall.append(time.perf_counter() - wall_start)
        cpu.append(time.process_time() - cpu_start)
    return {"wall_seconds": wall, "cpu_seconds": cpu, "median_wall": statistics.median(wall)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="100 columns, 3 runs, result in scratch/")
    parser.add_argument("--columns", type=int, default=None, help="number of columns (default 400)")
    parser.add_argument("--runs", type=int, default=None, help="timed runs per estimator (default 7)")
    parser.add_argument("--seed", type=int, default=14)
    args = parser.parse_args()
    n_columns = args.columns or (100 if args.quick else 400)
    runs = args.runs or (3 if args.quick else 7)
    p, k = DEFAULT_PRECISION, bottomk.equal_memory_k(DEFAULT_PRECISION)

    pool, starts, sizes = make_columns(n_columns, args.seed)
    regs = np.stack(
        [registers(counter_delta(pool[s : s + n], p=p)) for s, n in zip(starts, sizes, strict=True)]
    )
    sketches = [bottomk.bottom_k(pool[s : s + n], k) for s, n in zip(starts, sizes, strict=True)]
    values, offsets = bottomk.pack(sketches)
    cardinalities = estimate_cardinality(regs)
    x, y = (a.ravel() for a in np.meshgrid(np.arange(n_columns), np.arange(n_columns), indexing="ij"))
    x, y = x[x != y], y[x != y]
    n_pairs = int(x.size)
    print(
        f"{n_columns} columns (distinct {sizes.min()}..{sizes.max()}), {n_pairs} ordered pairs, p={p}, k={k}"
    )

    def paper() -> object:
        return estimate_inclusion(regs, x, y, cardinalities=cardinalities, model=AVERAGE_LOAD)

    def exact() -> object:
        return estimate_inclusion(regs, x, y, cardinalities=cardinalities, model=EXACT_MARGINAL)

    def lake() -> object:
        everything = np.ones((1, 1), bool)
        columns = np.arange(n_columns)
        index = RegisterIndex(regs, columns, 0 * columns, everything, cardinalities, 0 * cardinalities, 0.0)
        found = index.pairs(0, n_columns, index.counts())
        return estimate_from_dominated(found.z, found.x, found.y, cardinalities, p)

    # warm-up: numba compiles (or loads from its cache) every kernel the estimators use
    for run in (paper, exact, lake):
        run()
    bottomk.inclusion_estimates(values, offsets, x, y, k)

    load_before = os.getloadavg()
    results = {
        "bml": timed(paper, runs),
        "bml_with_cardinalities": timed(lambda: estimate_inclusion(regs, x, y, model=AVERAGE_LOAD), runs),
        "exact_marginal": timed(exact, runs),
        "exact_marginal_lake": timed(lake, runs),
        "bottom_k": timed(lambda: bottomk.inclusion_estimates(values, offsets, x, y, k), runs),
    }
    load_after = os.getloadavg()

    truth = exact_inclusion(starts, sizes, x, y)
    bml_estimate = paper().estimate
    exact_estimate = exact().estimate
    bottom_k_estimate = bottomk.inclusion_estimates(values, offsets, x, y, k)
    for name, figures in results.items():
        figures["pairs_per_second"] = n_pairs / figures["median_wall"]
        figures["pairs_per_cpu_second"] = n_pairs / statistics.median(figures["cpu_seconds"])
        figures["ms_per_pair"] = 1e3 * figures["median_wall"] / n_pairs
        print(
            f"{name:>24}: {figures['pairs_per_second']:>12,.0f} pairs/s "
            f"({figures['ms_per_pair']:.6f} ms/pair, {figures['pairs_per_cpu_second']:,.0f} pairs per CPU-s)"
        )
    ratio = results["bml"]["pairs_per_second"] / results["bottom_k"]["pairs_per_second"]
    lake_rate = results["exact_marginal_lake"]["pairs_per_second"]
    verdict = "met" if lake_rate >= TARGET_PAIRS_PER_SECOND else "MISSED"
    print(f"BML / bottom-k throughput: {ratio:.2f}; target 10^6 pairs/s for the inclusion step {verdict}")
    print(f"load average before / after the timed runs: {load_before[0]:.2f} / {load_after[0]:.2f}")

    report = {
        "benchmark": "bml_estimation",
        "command": "python bench/bml_estimation.py" + (" --quick" if args.quick else ""),
        "machine": {
            "cpus": os.cpu_count(),
            "numba_threads": numba.config.NUMBA_NUM_THREADS,
            "processor": platform.processor() or platform.machine(),
            "load_average_before": load_before,
            "load_average_after": load_after,
        },
        "columns": n_columns,
        "distinct_per_column": {
            "min": int(sizes.min()),
            "median": float(np.median(sizes)),
            "max": int(sizes.max()),
        },
        "pairs": n_pairs,
        "precision": p,
        "bottom_k_k": k,
        "runs": runs,
        "results": results,
        "bml_over_bottom_k_throughput": ratio,
        "target_pairs_per_second": TARGET_PAIRS_PER_SECOND,
        "target_met": bool(lake_rate >= TARGET_PAIRS_PER_SECOND),
        "paper_ms_per_pair": PAPER_MS_PER_PAIR,
        "mean_abs_error": {
            "bml": float(np.abs(bml_estimate - truth).mean()),
            "exact_marginal": float(np.abs(exact_estimate - truth).mean()),
            "bottom_k": float(np.abs(np.nan_to_num(bottom_k_estimate, nan=0.0) - truth).mean()),
        },
    }
    out = RESULTS / "scratch" / "bml_estimation.quick.json" if args.quick else RESULTS / "bml_estimation.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2) + "\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
