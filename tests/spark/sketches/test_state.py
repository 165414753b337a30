"""HLL counters as Delta state: equal to counters built by the library from the final snapshot, registers
lowered exactly by deletions, their sketches the same read on the driver and through Spark, and columns of
different physical types holding the same values related."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyspark.sql.functions as F
import pytest

from lakemeta.config import Config, SketchConfig
from lakemeta.hashing import hash_strings, hash_tuples
from lakemeta.lake.snapshots import read_table
from lakemeta.orchestration.pipeline import Pipeline
from lakemeta.sketches.hll import DEFAULT_PRECISION, counter_delta, registers
from lakemeta.sketches.state import (
    HllCounters,
    column_sketches,
    combination_registers,
    counter_sketches,
    register_matrix,
)

from ..lake_changes import create_spark_table, process, random_change, random_rows

pytestmark = pytest.mark.spark

COMPONENTS = ("column_profile", "hll_counters")  # what the counters and estimates are derived from


def stored_counters(pipeline: Pipeline, table: str) -> dict[str, set[tuple[int, int, int]]]:
    rows = pipeline.catalog.read(HllCounters.state_table()).where(F.col("table_name") == table).collect()
    out: dict[str, set[tuple[int, int, int]]] = {}
    for row in rows:
        out.setdefault(row.column_name, set()).add((row.bucket, row.rho, row["count"]))
    return out


def library_counters(path: Path) -> dict[str, set[tuple[int, int, int]]]:
    """Brute force from the snapshot: the library's counters of every column's non-null values."""
    snapshot = read_table(str(path))
    out = {}
    for name in snapshot.column_names:
        hashes, valid = hash_strings(snapshot[name])
        c = counter_delta(hashes[valid], p=DEFAULT_PRECISION)
        if len(c):
            out[name] = set(zip(c.bucket.tolist(), c.rho.tolist(), c.count.tolist(), strict=True))
    return out


def test_counters_equal_the_library_on_the_final_snapshot_after_random_batches(spark, tmp_path: Path):
    rng = np.random.default_rng(11)
    lake = tmp_path / "lake"
    create_spark_table(spark, lake / "t", random_rows(rng, 10))
    pipeline = Pipeline(spark, Config(lake=lake, catalog=tmp_path / "catalog"))
    for _ in range(2):
        for _ in range(3):
            random_change(spark, rng, lake / "t", foreign=False)
        process(pipeline, *COMPONENTS)
        assert stored_counters(pipeline, "t") == library_counters(lake / "t")
        # the estimates of a few tables' columns, read on the driver, equal the executors'
        counters = pipeline.catalog.read_small(HllCounters.state_table(), ["t"])
        on_driver = counter_sketches(counters, DEFAULT_PRECISION).sort_by("column_name").to_pylist()
        spark_side = (
            column_sketches(pipeline.catalog, DEFAULT_PRECISION, ["t"]).toArrow().sort_by("column_name")
        )
        assert on_driver == spark_side.to_pylist() and len(on_driver) == 3
    # emptied, then refilled
    spark.sql(f"DELETE FROM delta.`{lake / 't'}`")
    process(pipeline, *COMPONENTS)
    assert stored_counters(pipeline, "t") == {}
    spark.createDataFrame(random_rows(rng, 6), "id long, name string, score double").write.format(
        "delta"
    ).mode("append").save(str(lake / "t"))
    process(pipeline, *COMPONENTS)
    assert stored_counters(pipeline, "t") == library_counters(lake / "t")


def _same_bucket_values(p: int) -> tuple[str, str, int, int, int]:
    """Two values in one bucket with different rho: (low, high, bucket, rho_low, rho_high)."""
    values = [f"v{i}" for i in range(5000)]
    hashes, _ = hash_strings(pa.array(values))
    buckets = (hashes >> np.uint64(64 - p)).astype(np.int64)
    tails = hashes << np.uint64(p)
    rho = np.array([64 - int(t).bit_length() + 1 if t else 65 - p for t in tails[:5000]])
    first = {}
    for i in range(5000):
        b = int(buckets[i])
        if b in first and rho[first[b]] != rho[i]:
            lo, hi = sorted((first[b], i), key=lambda j: rho[j])
            return values[lo], values[hi], b, int(rho[lo]), int(rho[hi])
        first.setdefault(b, i)
    raise AssertionError("no bucket collision found")


def _registers(pipeline: Pipeline, p: int) -> np.ndarray:
    """The register rows of every column in the state, computed by the executors."""
    return register_matrix(column_sketches(pipeline.catalog, p).toArrow()["registers"], p)


def test_deleting_the_last_occurrence_of_the_max_rho_lowers_the_register_exactly(spark, tmp_path: Path):
    p = 8  # a low precision makes bucket collisions among a few thousand values certain
    low, high, bucket, rho_low, rho_high = _same_bucket_values(p)
    lake = tmp_path / "lake"
    config = Config(lake=lake, catalog=tmp_path / "catalog", sketches=SketchConfig(precision=p))
    spark.createDataFrame([(low,), (high,), (high,)], "v string").write.format("delta").option(
        "delta.enableChangeDataFeed", "true"
    ).save(str(lake / "t"))
    pipeline = Pipeline(spark, config)
    process(pipeline, *COMPONENTS)
    assert _registers(pipeline, p)[0, bucket] == rho_high
    spark.sql(f"DELETE FROM delta.`{lake / 't'}` WHERE v = '{high}'")
    process(pipeline, *COMPONENTS)
    regs = _registers(pipeline, p)
    assert regs[0, bucket] == rho_low
    hashes, _ = hash_strings(pa.array([low]))
    assert np.array_equal(regs[0], registers(counter_delta(hashes, p=p)))


def test_integers_decimals_doubles_and_strings_with_the_same_values_are_related(spark, tmp_path: Path):
    lake = tmp_path / "lake"
    keys = list(range(1, 3001))
    spark.createDataFrame([(k,) for k in keys], "id bigint").write.format("delta").save(str(lake / "pk"))
    spark.createDataFrame([(Decimal(k),) for k in keys[::3]], "ref decimal(12,2)").write.format("delta").save(
        str(lake / "dec")
    )
    spark.createDataFrame([(float(k),) for k in keys[::2]], "ref double").write.format("delta").save(
        str(lake / "dbl")
    )
    spark.createDataFrame([(str(k),) for k in keys[::5]], "ref string").write.format("delta").save(
        str(lake / "txt")
    )
    pipeline = Pipeline(spark, Config(lake=lake, catalog=tmp_path / "catalog"))
    process(pipeline, *COMPONENTS)
    pipeline.discover("inclusion_estimates")
    estimates = {
        (r.dep_table, r.ref_table): (r.estimate, r.error_bound)
        for r in pipeline.catalog.read("inclusion_estimates").collect()
    }
    for dependent in ("dec", "dbl", "txt"):
        estimate, bound = estimates[(dependent, "pk")]
        assert estimate == pytest.approx(1.0, abs=0.02) and 0.0 <= bound <= 1.0
    # 1000 of the 3000 keys: Φ(pk, dec) = 1/3 lies below the floor and is not written
    assert ("pk", "dec") not in estimates
    columns = {r.table_name: r.n_distinct_estimate for r in pipeline.catalog.read("columns").collect()}
    assert columns["pk"] == pytest.approx(3000, rel=0.03) and columns["txt"] == pytest.approx(600, rel=0.03)
    assert len(_registers(pipeline, DEFAULT_PRECISION)) == 4


def test_combination_registers_equal_the_library_on_tuples(spark):
    rows = [(i % 7, f"k{i % 5}", None if i % 11 == 0 else i % 3) for i in range(400)]
    frame = spark.createDataFrame(rows, "a int, b string, c int").repartition(3)
    combinations = [["a", "b"], ["b", "c", "a"]]
    got = combination_registers(frame, combinations, 10)
    table = pa.table({name: [r[i] for r in rows] for i, name in enumerate("abc")})
    for row, combination in zip(got, combinations, strict=True):
        hashes, valid = hash_tuples([table[c] for c in combination])
        assert np.array_equal(row, registers(counter_delta(hashes[valid], p=10)))
