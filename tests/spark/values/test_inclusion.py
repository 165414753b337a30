"""Inclusion coefficients of small dependents counted exactly from the value sets (``values.inclusion``,
``sketches.discover``): a few values inside, across and outside a large column, where a sketch cannot
tell (BML's Theorem 1), equal brute force; larger dependents stay estimated; a bound too wide to say
leaves a pair undetermined. Counts stay exact after insert and delete batches, and tiles of any size give
the same rows."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from deltalake import DeltaTable, write_deltalake

from lakemeta.config import Config, ScanConfig, SketchConfig
from lakemeta.orchestration.pipeline import Pipeline

from ..lake_changes import process

pytestmark = pytest.mark.spark

COMPONENTS = ("column_profile", "hll_counters", "column_values")


def write_lake(lake: Path) -> dict[str, np.ndarray]:
    """A large column of ids and dependents of a few to a few thousand values."""
    rng = np.random.default_rng(4)
    ids = rng.choice(np.arange(1, 10**7), 60_000, replace=False)
    columns = {
        "inside": rng.choice(ids, 7, replace=False),  # Φ = 1
        "across": np.concatenate([rng.choice(ids, 3, replace=False), np.arange(-6, 0)]),  # Φ = 1/3
        "mostly": np.concatenate([rng.choice(ids, 5, replace=False), [-1]]),  # Φ = 5/6
        "outside": np.arange(-9, 0),  # Φ = 0, every value in a register the ids dominate
        "many": np.concatenate([rng.choice(ids, 2400, replace=False), np.arange(-600, 0)]),  # Φ = 0.8
    }
    write_deltalake(str(lake / "big"), pa.table({"id": ids}))
    for name, values in columns.items():
        write_deltalake(str(lake / name), pa.table({"v": np.repeat(values, 3)}))  # duplicates
    return {"id": ids, **columns}


def estimates_of(pipeline: Pipeline) -> dict[tuple[str, str], dict]:
    rows = pipeline.catalog.read_small("inclusion_estimates").to_pylist()
    return {(r["dep_table"], r["ref_table"]): r for r in rows}


def test_small_dependents_are_counted_exactly_and_larger_ones_estimated(spark, tmp_path: Path) -> None:
    lake = tmp_path / "lake"
    columns = write_lake(lake)
    config = Config(lake=lake, catalog=tmp_path / "catalog", sketches=SketchConfig(exact_max_distinct=100))
    pipeline = Pipeline(spark, config)
    process(pipeline, *COMPONENTS)
    pipeline.discover("inclusion_estimates")
    found = estimates_of(pipeline)
    ids = set(columns["id"].tolist())
    for name in ("inside", "across", "mostly", "outside"):
        values = set(columns[name].tolist())
        phi = len(values & ids) / len(values)
        row = found.get((name, "big"))
        if phi < config.sketches.inclusion_floor:
            assert row is None, name  # counted, and below the floor
        else:
            assert row["status"] == "exact" and row["estimate"] == phi and row["error_bound"] == 0.0
    many = found[("many", "big")]  # 3,000 values: estimated by the sketch, within its bound
    assert many["status"] == "estimated" and abs(many["estimate"] - 0.8) <= many["error_bound"] <= 0.25
    assert ("big", "inside") not in found  # 60,000 ids are not in 7 of them
    counted = {r["table_name"]: r["n_distinct"] for r in pipeline.catalog.read_small("columns").to_pylist()}
    expected = {name: len(set(values.tolist())) for name, values in columns.items() if name != "id"}
    assert counted == {**expected, "big": 60_000}
    # after batches: every copy of one inside value deleted, two outside values inserted; "mostly" loses
    # its one outside value: still exact, from the maintained value sets
    gone = int(columns["inside"][0])
    DeltaTable(str(lake / "inside")).delete(f"v = {gone}")
    write_deltalake(str(lake / "inside"), pa.table({"v": np.array([-1, -2, -2])}), mode="append")
    DeltaTable(str(lake / "mostly")).delete("v = -1")
    process(pipeline, *COMPONENTS)
    pipeline.discover("inclusion_estimates")
    found = estimates_of(pipeline)
    assert found[("inside", "big")]["estimate"] == 6 / 8 and found[("inside", "big")]["status"] == "exact"
    assert found[("mostly", "big")]["estimate"] == 1.0
    # estimated again in tiles of one column each (36 tasks instead of one), and the exact counts made by
    # Spark rather than on the driver (``scan.driver_state_bytes``): the same rows
    one_per_block = SketchConfig(exact_max_distinct=100, tile_bytes=1)
    in_spark = ScanConfig(driver_state_bytes=0)
    tiled = Pipeline(
        spark, Config(lake=lake, catalog=tmp_path / "catalog", sketches=one_per_block, scan=in_spark)
    )
    tiled.discover("inclusion_estimates")
    assert estimates_of(tiled) == found


def test_a_bound_wider_than_the_limit_reports_no_estimate(spark, tmp_path: Path) -> None:
    lake = tmp_path / "lake"
    write_lake(lake)
    sketches = SketchConfig(exact_max_distinct=0, max_error_bound=0.001)  # nothing counted, little known
    pipeline = Pipeline(spark, Config(lake=lake, catalog=tmp_path / "catalog", sketches=sketches))
    process(pipeline, *COMPONENTS)
    pipeline.discover("inclusion_estimates")
    rows = list(estimates_of(pipeline).values())
    assert rows and {r["status"] for r in rows} == {"undetermined"}
    assert all(r["estimate"] is None and r["error_bound"] > 0.001 for r in rows)
    assert ("inside", "big") in estimates_of(pipeline)
