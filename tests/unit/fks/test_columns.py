"""The FK search's column cache (``columns.ColumnCache``): a snapshot's needed columns read together, once,
each hashed once, and the distinct tuples and hashes it derives equal those of the columns read directly."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
from deltalake import write_deltalake

import lakemeta.fks.columns as columns_module
from lakemeta.arrays import sorted_unique
from lakemeta.fks.columns import ColumnCache
from lakemeta.fks.randomness import distinct_tuples
from lakemeta.hashing import hash_strings, hash_tuples
from lakemeta.lake.snapshots import read_columns


def test_columns_are_read_and_hashed_once_and_derive_what_direct_reads_do(tmp_path: Path, monkeypatch):
    path = str(tmp_path / "t")
    table = pa.table({"a": [1, 2, 2, None, 1], "b": list("xyyzw"), "c": [1.5, 2.5, 2.5, 3.5, 4.5]})
    write_deltalake(path, table)
    write_deltalake(path, table.slice(0, 2), mode="append")
    reads, hashed = [], []

    def counted_read(
        path: str, version: int, wanted: list[str], files: list[str] = (), scope: str | None = None
    ) -> list[pa.Array]:
        reads.append((version, wanted))
        return read_columns(path, version, wanted, files, scope)

    def counted_hash(values: pa.Array) -> tuple[np.ndarray, np.ndarray]:
        hashed.append(len(values))
        return hash_strings(values)

    monkeypatch.setattr(columns_module, "read_columns", counted_read)
    monkeypatch.setattr(columns_module, "hash_strings", counted_hash)
    cache = ColumnCache(max_rows=10)
    cache.need(path, 0, ["a", "b"], 5)
    cache.need(path, 1, ["a"], 7)
    direct = read_columns(path, 0, ["a", "b"])
    every_row = np.arange(5)
    assert cache.values(path, 0, ["b"])(every_row)[0].equals(direct[1])
    assert reads == [(0, ["a", "b"])]  # the snapshot's needed columns together
    assert cache.values(path, 0, ["c"])(every_row)[0].equals(read_columns(path, 0, ["c"])[0])
    assert reads[1:] == [(0, ["c"])]  # one not listed: read alone, on its first use
    hashes, valid = cache.tuple_hashes(path, 0, ["a", "b"])
    expected, expected_valid = hash_tuples(direct)
    np.testing.assert_array_equal(valid, expected_valid)
    np.testing.assert_array_equal(hashes[valid], expected[expected_valid])
    distinct = cache.distinct_hashes(path, 0, ["a", "b"])
    np.testing.assert_array_equal(distinct, sorted_unique(expected[expected_valid]))
    tuples = cache.distinct_tuples(path, 0, ["a", "b"])
    assert [c.to_pylist() for c in tuples] == [c.to_pylist() for c in distinct_tuples(direct)]
    assert len(cache.distinct_hashes(path, 1, ["a"])) == 2  # another version: its own columns
    cache.distinct_tuples(path, 0, ["a", "b"])
    cache.tuple_hashes(path, 0, ["a"])
    assert reads == [(0, ["a", "b"]), (0, ["c"]), (1, ["a"])]
    assert hashed == [5, 5, 7]  # a and b of version 0 once each, a of version 1


def test_a_snapshot_above_the_row_budget_is_read_by_groups_of_files_and_derives_the_same(tmp_path: Path):
    path = str(tmp_path / "t")
    rng = np.random.default_rng(3)
    for _ in range(6):  # six files of 40 rows, repeated and null values in both columns
        a = rng.integers(0, 30, 40).astype(float)
        a[rng.random(40) < 0.1] = np.nan
        b = rng.choice(["x", "y", "z", None], 40)
        write_deltalake(path, pa.table({"a": pa.array(a, from_pandas=True), "b": b}), mode="append")
    whole, grouped = ColumnCache(max_rows=1000), ColumnCache(max_rows=100)  # groups of two files
    for cache in (whole, grouped):
        cache.need(path, 5, ["a", "b"], 240)
    rows = np.array([239, 0, 41, 120, 7, 200])
    for columns in (["a"], ["a", "b"]):
        for name in columns:
            np.testing.assert_array_equal(grouped.hashes(path, 5, name)[0], whole.hashes(path, 5, name)[0])
        np.testing.assert_array_equal(
            grouped.distinct_hashes(path, 5, columns), whole.distinct_hashes(path, 5, columns)
        )
        as_sets = [
            set(zip(*(c.to_pylist() for c in cache.distinct_tuples(path, 5, columns)), strict=True))
            for cache in (whole, grouped)
        ]
        assert as_sets[0] == as_sets[1] and len(as_sets[0]) == len(whole.distinct_hashes(path, 5, columns))
        at_rows = [
            set(zip(*(c.to_pylist() for c in cache.values(path, 5, columns)(rows)), strict=True))
            for cache in (whole, grouped)
        ]
        assert at_rows[0] == at_rows[1]
    assert grouped._file_groups(path, 5) is not None and whole._file_groups(path, 5) is None
