"""A dense lake (small statistics datasets whose ids, years, counts and codes overlap across most columns)
through the whole pipeline three times: with every step placed in the executors (no driver bytes), with
the default placement, which runs a lake this small on the driver, and with the driver's pairs bounded,
where the steps decide by their counts (Many's batch too, by the INDs it would keep). The catalogs are
equal, and the exact results equal brute force over the tables: every exact inclusion coefficient, the
pairs reaching the floor, and Many's INDs; the FK step's candidates, outcomes and overlaps, in the
executors a Spark job per stage; again after a batch that changes ten tables (the executors' incremental
write replaces only their pairs)."""

from __future__ import annotations

import dataclasses
import logging
from itertools import product
from pathlib import Path

import pyarrow.compute as pc
import pytest
from deltalake import DeltaTable

from lakemeta.config import Config, ScanConfig, SketchConfig
from lakemeta.demo.dense import change_dense_tables, write_dense_lake
from lakemeta.hashing import canonical
from lakemeta.lake.tables import spark_schema
from lakemeta.orchestration.pipeline import Pipeline
from lakemeta.sketches.discover import type_family

from .inds.test_discover import brute_force

pytestmark = [pytest.mark.spark, pytest.mark.slow]

N_TABLES = 60
# The results both placements must agree on, with the columns that identify a row.
RESULTS = {
    "inclusion_estimates": ["dep_table", "dep_column", "ref_table", "ref_column"],
    "inclusion_dependencies": ["dep_table", "dep_column", "ref_table", "ref_column"],
    "unique_column_combinations": ["table_name", "columns"],
    "fk_candidates": ["fk_table", "fk_columns", "pk_table", "pk_columns"],
    "table_overlaps": ["left_table", "right_table"],
    "state/fk_scored": ["pk_table", "pk_columns", "fk_table", "fk_columns"],
    "relationship_changes": ["run_id", "relationship", "change", "dep_table", "dep_columns"],
}


def _rows(pipeline: Pipeline, name: str) -> list[tuple]:
    table = pipeline.catalog.read_small(name)
    # the times of the discoveries differ between the two catalogs, not the runs
    columns = [c for c in table.column_names if c != "previous_discovery_at"]
    return sorted(tuple(str(row[c]) for c in columns) for row in table.select(columns).to_pylist())


def _value_sets(lake: Path, names: list[str]) -> dict[tuple[str, str], tuple[set[str], str | None]]:
    """Each column's distinct canonical non-null values and its type family."""
    sets = {}
    for name in names:
        delta = DeltaTable(str(lake / name))
        table = delta.to_pyarrow_table()
        for field in spark_schema(delta).fields:
            values = canonical(table[field.name].combine_chunks()).to_pylist()
            family = type_family(field.dataType.simpleString())
            sets[(name, field.name)] = ({v for v in values if v is not None}, family)
    return sets


def _check_estimates_against_brute_force(pipeline: Pipeline, lake: Path, names: list[str]) -> None:
    """Every exact row's Φ is |X ∩ Y| / |X|; every pair of columns of compatible types in two tables whose
    Φ reaches the floor is there, exact (every column of this lake is small)."""
    floor = pipeline.config.sketches.inclusion_floor
    sets = _value_sets(lake, names)
    stored = pipeline.catalog.read_small("inclusion_estimates").to_pylist()
    found = {(r["dep_table"], r["dep_column"], r["ref_table"], r["ref_column"]): r for r in stored}
    assert {r["status"] for r in stored} == {"exact"}
    expected = set()
    for (x, (x_values, x_family)), (y, (y_values, y_family)) in product(sets.items(), repeat=2):
        if x[0] == y[0] or not x_values or not y_values or None in (x_family, y_family):
            continue
        if x_family != y_family and "string" not in (x_family, y_family):
            continue
        phi = len(x_values & y_values) / len(x_values)
        if phi >= floor:
            expected.add((*x, *y))
        row = found.get((*x, *y))
        if row is not None:
            assert row["estimate"] == pytest.approx(phi, abs=1e-12), (x, y)
    assert set(found) == expected


def test_a_dense_lake_gives_the_same_catalog_in_the_executors_and_on_the_driver(
    spark, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="lakemeta.inds")
    lake = tmp_path / "lake"
    names = write_dense_lake(lake, N_TABLES, seed=7)
    # tiles of a few columns each: many tiles, the changed columns' blocks apart
    sketches = SketchConfig(tile_bytes=200_000)
    in_executors = Config(
        lake=lake, catalog=tmp_path / "executors", sketches=sketches, scan=ScanConfig(driver_state_bytes=0)
    )
    on_driver = dataclasses.replace(in_executors, catalog=tmp_path / "driver", scan=ScanConfig())
    # the driver's bytes allowed and its pairs bounded: the pair steps (and Many's batch, whose stored
    # INDs the driver path would hold) go to the executors by their counts, the rest stays on the driver
    bounded = dataclasses.replace(
        in_executors, catalog=tmp_path / "bounded", scan=ScanConfig(driver_max_pairs=1_000)
    )
    pipelines = [Pipeline(spark, in_executors), Pipeline(spark, on_driver), Pipeline(spark, bounded)]
    for round_ in ("first run", "ten tables changed"):
        if round_ != "first run":
            assert len(change_dense_tables(lake, 10, seed=3)) == 10
        for pipeline in pipelines:
            assert pipeline.run() is not None, round_
        for name in RESULTS:
            expected = _rows(pipelines[1], name)
            assert _rows(pipelines[0], name) == expected and _rows(pipelines[2], name) == expected, (
                round_,
                name,
            )
        many = [r.getMessage() for r in caplog.records if "inclusion dependencies (Many" in r.getMessage()]
        assert "in the executors" in many[-1] and "on the driver" in many[-2], round_  # bounded, driver
        caplog.clear()
        executors = pipelines[0]
        _check_estimates_against_brute_force(executors, lake, names)
        stored = executors.catalog.read_small("inclusion_dependencies").to_pylist()
        pair = ["dep_table", "dep_column", "ref_table", "ref_column", "dep_distinct", "ref_distinct"]
        assert {tuple(r[c] for c in pair) for r in stored} == brute_force(lake, names, "relational")
        # dense: far more pairs reach the floor than there are columns
        assert len(executors.catalog.read_small("inclusion_estimates")) > 10 * len(_value_sets(lake, names))
        # the FK step's candidates, some of them accepted, some ruled out (``_rows`` compared them all)
        candidates = executors.catalog.read_small("fk_candidates")
        assert 0 < pc.sum(candidates["accepted"]).as_py() < len(candidates)
        assert candidates["rank"].to_pylist() != [] and sorted(candidates["rank"].to_pylist()) == list(
            range(1, len(candidates) + 1)
        )
