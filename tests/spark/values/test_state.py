"""Column value sets as Delta state: after random insert / delete / update batches (duplicates, nulls,
empty batches, emptied tables, a table written without the change feed) equal to the library's tally of
the final snapshot and to a rebuild, with each column's exact distinct count in ``columns``."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pyspark.sql.functions as F
import pytest

from lakemeta.config import Config, ScanConfig
from lakemeta.hashing import canonical, hash_strings
from lakemeta.lake.snapshots import read_table
from lakemeta.orchestration.pipeline import Pipeline
from lakemeta.values.hashes import tally
from lakemeta.values.state import ColumnValues

from ..lake_changes import (
    create_foreign_table,
    create_spark_table,
    process,
    random_change,
    random_rows,
    state_rows,
)

pytestmark = pytest.mark.spark

COMPONENTS = ("column_profile", "column_values")
TABLES = {"t": False, "foreign": True}  # name: written by another engine (no change feed)


def stored_values(pipeline: Pipeline, table: str) -> dict[str, set[tuple[int, int, bool]]]:
    rows = pipeline.catalog.read(ColumnValues.state_table()).where(F.col("table_name") == table).collect()
    out: dict[str, set[tuple[int, int, bool]]] = {}
    for row in rows:
        out.setdefault(row.column_name, set()).add((row.hash, row["count"], row.integer))
    return out


def library_values(path: Path) -> dict[str, set[tuple[int, int, bool]]]:
    """Brute force from the snapshot: each column's non-null values tallied by the library, each marked
    by whether its canonical string is an integer literal."""
    snapshot = read_table(str(path))
    out = {}
    for name in snapshot.column_names:
        hashes, valid = hash_strings(snapshot[name])
        distinct, counts, _ = tally(hashes[valid], np.ones(int(valid.sum()), np.int64))
        literal = {}
        for h, text in zip(
            hashes[valid].tolist(),
            canonical(snapshot[name].combine_chunks()).drop_null().to_pylist(),
            strict=True,
        ):
            literal[h] = re.fullmatch(r"[+-]?[0-9]+", text) is not None
        if len(distinct):
            out[name] = {
                (h, c, literal[u])
                for h, c, u in zip(
                    distinct.view(np.int64).tolist(), counts.tolist(), distinct.tolist(), strict=True
                )
            }
    return out


def test_value_sets_equal_the_snapshot_and_a_rebuild_after_random_batches(spark, tmp_path: Path) -> None:
    rng = np.random.default_rng(5)
    lake = tmp_path / "lake"
    create_spark_table(spark, lake / "t", random_rows(rng, 12))
    create_foreign_table(lake / "foreign", random_rows(rng, 12))
    pipeline = Pipeline(spark, Config(lake=lake, catalog=tmp_path / "catalog"))
    process(pipeline, *COMPONENTS)
    for round_ in range(3):
        for table, foreign in TABLES.items():
            for _ in range(2):
                random_change(spark, rng, lake / table, foreign=foreign)
        process(pipeline, *COMPONENTS)
        for table in TABLES:
            assert stored_values(pipeline, table) == library_values(lake / table), (round_, table)
    columns = pipeline.catalog.read_small("columns").to_pylist()
    for row in columns:
        expected = library_values(lake / row["table_name"]).get(row["column_name"], set())
        assert row["n_distinct"] == len(expected)
    # rebuilt through Spark alone (appended, n_distinct counted by a Spark job), where the batches above
    # were merged and counted on the driver (``scan.driver_state_bytes``)
    through_spark = Config(lake=lake, catalog=tmp_path / "rebuilt", scan=ScanConfig(driver_state_bytes=0))
    rebuilt = Pipeline(spark, through_spark)
    process(rebuilt, *COMPONENTS)
    assert state_rows(pipeline, ColumnValues.state_table()) == state_rows(rebuilt, ColumnValues.state_table())
    rebuilt_columns = rebuilt.catalog.read_small("columns").select(
        ["table_name", "column_name", "n_distinct"]
    )
    assert sorted(rebuilt_columns.to_pylist(), key=str) == sorted(
        pipeline.catalog.read_small("columns").select(rebuilt_columns.column_names).to_pylist(), key=str
    )
    # emptied: nothing left, and every column counts zero values
    spark.sql(f"DELETE FROM delta.`{lake / 't'}`")
    process(pipeline, *COMPONENTS)
    assert stored_values(pipeline, "t") == {}
    columns = pipeline.catalog.read_small("columns").to_pylist()
    assert {r["n_distinct"] for r in columns if r["table_name"] == "t"} == {0}
