"""FK candidates on TPC-H: precision, recall and F1 against the declared foreign keys, with and without the
name check (Zhang et al. §5.4), the time of the FK step once the state exists, and the EMD on coarser
grids against l = 1024 (Zhang's Table 1).

For each scale the TPC-H tables (tpchgen-cli) are written as Delta tables, the state is built and the
inclusion estimates refreshed (the pipeline's own steps, default configuration); then the FK step is timed
alone. Ground truth: the foreign keys of ../shared/data/README.md (TPC-H's declared ones, lineitem -> part
and lineitem -> supplier). Precision and recall count the accepted candidates; "with names" keeps the
accepted candidates whose names match once the table prefixes are deleted. For the grid comparison every
single-column candidate's EMD_n is recomputed in this process at l = 16, 64, 256 and 1024 quantiles.

Run: ``.venv/bin/python bench/fk_candidates.py`` (scales 0.1 and 1; ``--scales 0.01`` for a smoke run).
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
from deltalake import DeltaTable, write_deltalake

from lakemeta.config import Config, FkConfig
from lakemeta.demo import TPCH_FOREIGN_KEYS, generate_tpch
from lakemeta.fks.discover import refresh_fk_candidates
from lakemeta.fks.randomness import distinct_tuples, emd_n
from lakemeta.hashing import canonical
from lakemeta.lake.snapshots import read_columns
from lakemeta.lake.tables import table_path
from lakemeta.pipeline import Pipeline

BENCH = Path(__file__).resolve().parent
RESULT = BENCH / "results" / "fk_candidates.json"
SCRATCH = BENCH / "results" / "scratch" / "fk_candidates"
GRIDS = (16, 64, 256, 1024)


def scores(found: set) -> dict:
    hits = len(found & TPCH_FOREIGN_KEYS)
    precision = hits / len(found) if found else 0.0
    recall = hits / len(TPCH_FOREIGN_KEYS)
    f1 = 2 * precision * recall / (precision + recall) if hits else 0.0
    return {
        "precision": precision,
        "recall": recall,
        "f1": f1,
        "missed": sorted(map(str, TPCH_FOREIGN_KEYS - found)),
        "wrong": sorted(map(str, found - TPCH_FOREIGN_KEYS)),
    }


def grid_differences(pipeline: Pipeline, rows: list[dict]) -> dict:
    """Mean |EMD_n at l - EMD_n at 1024| over the single-column candidates (Zhang's Table 1), in this
    process. Multi-column keys are left out: at 1024 quantiles per dimension their grids have up to 10^6
    cells, and the transportation problem grows with the square of the cells holding mass."""
    rows = [row for row in rows if len(row["pk_columns"]) == 1]
    lake, cache = pipeline.lake, {}

    def tuples(table: str, columns: list[str]) -> list:
        if (table, tuple(columns)) not in cache:
            path = str(table_path(lake, table))
            version = DeltaTable(path).version()
            strings = [canonical(column) for column in read_columns(path, version, columns)]
            cache[(table, tuple(columns))] = distinct_tuples(strings)
        return cache[(table, tuple(columns))]

    emd = {grid: [] for grid in GRIDS}
    for row in rows:
        key, candidate = (
            tuples(row["pk_table"], row["pk_columns"]),
            tuples(row["fk_table"], row["fk_columns"]),
        )
        for grid in GRIDS:
            emd[grid].append(emd_n(key, candidate, grid))
    reference = np.array(emd[GRIDS[-1]])
    return {
        f"l={grid}": float(np.mean(np.abs(np.array(emd[grid]) - reference))) if rows else 0.0
        for grid in GRIDS[:-1]
    }


def run_scale(scale: str) -> dict:
    from lakemeta.spark import get_session

    root = SCRATCH / f"sf{scale}"
    lake = root / "lake"
    if not lake.is_dir():
        generate_tpch(root / "sources", scale=scale)
        for path in sorted((root / "sources").glob("*.parquet")):
            write_deltalake(str(lake / path.stem), pq.read_table(path))
    spark = get_session("local[2]", f"bench fk candidates sf{scale}", catalog=root / "spark")
    pipeline = Pipeline(spark, Config(lake=lake, catalog=root / "catalog"))
    started = time.perf_counter()
    plan = pipeline.detect()
    for component in ("column_profile", "hll_counters", "agree_sets"):
        pipeline.update_state(plan, component)
    pipeline.commit(plan)
    pipeline.discover("inclusion_estimates")
    state_s = time.perf_counter() - started
    started = time.perf_counter()
    config = pipeline.config
    accepted_count = refresh_fk_candidates(
        pipeline.catalog, lake, FkConfig(), config.sketches, config.scan.max_task_rows
    )
    fk_s = time.perf_counter() - started
    rows = pipeline.catalog.read_small("fk_candidates").sort_by("rank").to_pylist()

    def pairs(kept: list[dict]) -> set:
        return {(r["fk_table"], tuple(r["fk_columns"]), r["pk_table"], tuple(r["pk_columns"])) for r in kept}

    figures = {
        "scale": scale,
        "state_and_estimates_s": state_s,
        "fk_step_s": fk_s,
        "candidates": len(rows),
        "accepted": accepted_count,
        "without_names": scores(pairs([r for r in rows if r["accepted"]])),
        "with_names": scores(pairs([r for r in rows if r["accepted"] and r["name_match"]])),
        "mean_emd_difference_to_l1024": grid_differences(pipeline, rows),
    }
    spark.stop()
    print(json.dumps(figures, indent=2), flush=True)
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scales", default="0.1,1", help="comma-separated TPC-H scale factors")
    args = parser.parse_args()
    results = {"load_average_before": os.getloadavg()}
    results["scales"] = [run_scale(scale) for scale in args.scales.split(",")]
    results["load_average_after"] = os.getloadavg()
    if args.scales == "0.1,1":
        RESULT.write_text(json.dumps(results, indent=2) + "\n")
        print(f"results in {RESULT}")


if __name__ == "__main__":
    main()
