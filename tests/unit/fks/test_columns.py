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

    def counted_read(path: str, version: int, wanted: list[str]) -> list[pa.Array]:
        reads.append((version, wanted))
        return read_columns(path, version, wanted)

    def counted_hash(values: pa.Array) -> tuple[np.ndarray, np.ndarray]:
        hashed.append(len(values))
        return hash_strings(values)

    monkeypatch.setattr(columns_module, "read_columns", counted_read)
    monkeypatch.setattr(columns_module, "hash_strings", counted_hash)
    cache = ColumnCache()
    cache.need(path, 0, ["a", "b"])
    cache.need(path, 1, ["a"])
    direct = read_columns(path, 0, ["a", "b"])
    assert cache.column(path, 0, "b").equals(direct[1])
    assert reads == [(0, ["a", "b"])]  # the snapshot's needed columns together
    assert cache.column(path, 0, "c").equals(read_columns(path, 0, ["c"])[0])
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
